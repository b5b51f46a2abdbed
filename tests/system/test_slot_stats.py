"""test_slot_stats.py -- GET /v1/clusters/{id}/slot-stats on a real
cluster-mode Valkey cluster (three agents, three shards): per-shard and
per-slot key counts read live with CLUSTER SLOT-STATS, and hot-slot advice
that leaves the hottest slot where it is and moves the next ones to the
coolest shard. Redis and cluster-mode-disabled clusters are refused.
"""

from redis.crc import key_slot

import clusters
import expect
from clusters import password, wait_available
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("slots")


def tags_in(first, last, count):
    """count hash tags whose slots are distinct and in [first, last]."""
    out, seen, i = [], set(), 0
    while len(out) < count:
        tag = f"t{i}"
        slot = key_slot(f"{{{tag}}}".encode())
        if first <= slot <= last and slot not in seen:
            out.append((tag, slot))
            seen.add(slot)
        i += 1
    return out


def test_hot_shard_advice(stack, cleanup):
    cid = "slots-hot"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(cid)), 202)
    body = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
    ranges = {s["id"]: tuple(int(x) for x in s["slots"][0].split("-")) for s in body["shards"]}
    rc = clusters.cluster_client(body, pw)
    hot_tags = tags_in(*ranges["0001"], 11)
    hot_slot = hot_tags[0][1]
    for i in range(400):                      # one very hot slot (a hot key's neighbours)
        rc.set(f"{{{hot_tags[0][0]}}}:{i}", i)
    for tag, _ in hot_tags[1:]:               # ten warm slots on the same shard
        for i in range(30):
            rc.set(f"{{{tag}}}:{i}", i)
    for shard in ("0002", "0003"):            # a little everywhere else
        for tag, _ in tags_in(*ranges[shard], 3):
            for i in range(10):
                rc.set(f"{{{tag}}}:{i}", i)
    rc.close()

    stats = expect.json_ok(stack.api.get(f"/v1/clusters/{cid}/slot-stats"))
    eq(stats["load_measure"], "key-count", "Valkey 8.0 measures no CPU per slot by default")
    by_id = {s["id"]: s for s in stats["shards"]}
    eq(sorted(by_id), ["0001", "0002", "0003"], "one entry per shard")
    hot = by_id["0001"]
    eq((hot["key_count"], hot["hot"]), (700, True), "the hot shard")
    eq(hot["slots"], ranges["0001"][1] - ranges["0001"][0] + 1, "slots it serves")
    eq(hot["hottest"][0], {"slot": hot_slot, "key_count": 400}, "its hottest slot")
    eq((by_id["0002"]["key_count"], by_id["0002"]["hot"], by_id["0002"]["advice"]),
       (30, False, None), "a cool shard")
    advice = hot["advice"]
    assert advice is not None, hot
    assert hot_slot not in advice["move_slots"], "the hottest slot stays"
    eq(sorted(advice["move_slots"]), sorted(s for _, s in hot_tags[1:]), "the warm slots move")
    assert advice["to_shard"] in ("0002", "0003"), advice
    eq(advice["load_after"], 400.0, "what is left on the shard")

    # Engines and modes without slot statistics.
    other = "slots-redis"
    cleanup.append(other)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(other)), 202)
    expect.problem(stack.api.get(f"/v1/clusters/{other}/slot-stats"), "NOT_SUPPORTED_BY_ENGINE")
    expect.problem(stack.api.get("/v1/clusters/nope/slot-stats"), "CLUSTER_NOT_FOUND")
