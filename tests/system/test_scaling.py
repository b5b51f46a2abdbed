"""test_scaling.py -- online shard scaling and rebalancing on real
cluster-mode Valkey clusters (three agents in three AZs).

PATCH of num_shards adds shards and moves slots to them, or drains the
highest-numbered shards and removes them, while a writer and a reader
(redis-py's cluster client, following MOVED and ASK) run: no acknowledged
write is lost and every key reads back. A cairnd killed with SIGKILL in the
middle of the moves is resumed by the next one, and no slot is left
MIGRATING or IMPORTING. POST /v1/clusters/{id}/rebalance previews and moves;
POST /v1/operations/{id}/cancel stops at a slot boundary with every slot
served. Refusals: no room, data that would not fit, cluster mode disabled,
an operation already running.
"""

import random
import threading
import time

import pytest
import redis

import clusters
import expect
from clusters import password, wait_available
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("scaling")

# make check moves 40,000 keys; make system-full also the 200,000 of the
# issue's scenario (the same moves, kill and resume, two minutes longer).
KEYS = 40_000


# --------------------------------------------------------------------------
# helpers

def slot_counts(body):
    """{shard id: slots it serves} from the cluster resource."""
    out = {}
    for s in body["shards"]:
        n = 0
        for r in s["slots"]:
            a, b = (int(x) for x in r.split("-"))
            n += b - a + 1
        out[s["id"]] = n
    return out


def operation(api, op_id):
    return expect.json_ok(api.get(f"/v1/operations/{op_id}"))


def wait_op(api, op_id, timeout=180):
    def ended():
        op = operation(api, op_id)
        return op if op["status"] in ("succeeded", "failed", "cancelled") else None
    return clusters.wait_until(ended, timeout, f"operation {op_id} ended", interval=0.2)


def change(api, cid, body, timeout=30):
    """PATCH once the cluster is idle (the failover authority may move a
    primary to another AZ right after a scale); the operation's id."""
    def sent():
        r = api.patch(f"/v1/clusters/{cid}", json=body)
        if r.status_code == 409 and r.json()["code"] == "OPERATION_IN_PROGRESS":
            return None
        eq(r.status_code, 202, r.text)
        return r.headers["Location"].rsplit("/", 1)[1]
    return clusters.wait_until(sent, timeout, f"PATCH {body} accepted", interval=0.2)


def create(stack, cleanup, cid, **over):
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(cid, **over)), 202)
    return wait_available(stack.api, cid, timeout=60)


def primaries(body, pw):
    """Plain connections to each shard's primary, by shard id."""
    out = {}
    for s in body["shards"]:
        for n in s["nodes"]:
            if n["role"] == "primary":
                out[s["id"]] = clusters.client(n["address"], n["port"], pw)
    return out


def open_moves(body, pw):
    """Slots some primary shows MIGRATING or IMPORTING (CLUSTER NODES)."""
    found = []
    for sid, c in primaries(body, pw).items():
        for addr, node in c.execute_command("CLUSTER NODES").items():
            if "myself" in node["flags"] and node["migrations"]:
                found.append((sid, addr, node["migrations"][:3]))
        c.close()
    return found


def load(rc, n):
    """n keys k:{i} = i, in pipelines (the cluster client splits them by slot)."""
    for start in range(0, n, 5000):
        p = rc.pipeline()
        for i in range(start, min(n, start + 5000)):
            p.set(f"k:{i}", i)
        p.execute()


class Traffic:
    """A writer (new keys w:{i}, each acknowledged one recorded) and a reader
    (random loaded keys) through the cluster client until stopped."""

    def __init__(self, body, pw, loaded):
        self.body, self.pw, self.loaded = body, pw, loaded
        self.acked, self.write_errors, self.read_errors, self.wrong = [], [], [], []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, daemon=True),
                        threading.Thread(target=self._read, daemon=True)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(15)

    def _write(self):
        rc = clusters.cluster_client(self.body, self.pw)
        i = 0
        while not self.stop.is_set():
            try:
                rc.set(f"w:{i}", i)
                self.acked.append(i)
            except redis.RedisError as e:
                self.write_errors.append(repr(e))
            i += 1
        rc.close()

    def _read(self):
        rc = clusters.cluster_client(self.body, self.pw)
        rnd = random.Random(7)
        while not self.stop.is_set():
            k = rnd.randrange(self.loaded)
            try:
                v = rc.get(f"k:{k}")
                if v != str(k):
                    self.wrong.append((k, v))
            except redis.RedisError as e:
                self.read_errors.append(repr(e))
        rc.close()


def check_all(body, pw, loaded, traffic=None):
    """Every loaded key and every acknowledged write reads back."""
    rc = clusters.cluster_client(body, pw)
    missing = []
    names = [f"k:{i}" for i in range(loaded)]
    for start in range(0, len(names), 5000):
        chunk = names[start:start + 5000]
        for name, v in zip(chunk, rc.mget_nonatomic(chunk)):
            if v != name.split(":")[1]:
                missing.append(name)
    if traffic is not None:
        w = [f"w:{i}" for i in traffic.acked]
        for start in range(0, len(w), 5000):
            chunk = w[start:start + 5000]
            for name, v in zip(chunk, rc.mget_nonatomic(chunk)):
                if v != name.split(":")[1]:
                    missing.append(name)
    rc.close()
    eq(missing[:10], [], f"{len(missing)} keys lost or wrong")


def balanced(body, shards):
    counts = slot_counts(body)
    eq(sorted(counts), [f"{i:04d}" for i in range(1, shards + 1)], "shards after the change")
    eq(sum(counts.values()), 16384, f"every slot served: {counts}")
    fair = 16384 / shards
    for sid, n in counts.items():
        assert abs(n - fair) <= 0.1 * fair, f"shard {sid} serves {n} slots, fair is {fair:.0f}"


def event_types(api, cid):
    return [e["type"] for e in clusters.events(api, cid)]


# --------------------------------------------------------------------------
# the tests

@pytest.mark.parametrize("keys", [KEYS, pytest.param(200_000, marks=pytest.mark.full)])
def test_two_to_four_to_three_under_traffic_with_a_cairnd_killed(stack, cleanup, keys):
    """2 -> 4 -> 3 shards with 60,000 (or 200,000) keys, a writer and a
    reader; cairnd SIGKILLed while slots move on the way out, and resumed by
    a new one."""
    cid = "scale-main"
    body = create(stack, cleanup, cid, num_shards=2)
    pw = password(stack.api, cid)
    rc = clusters.cluster_client(body, pw)
    load(rc, keys)
    rc.close()

    with Traffic(body, pw, keys) as traffic:
        op_id = change(stack.api, cid, {"num_shards": 4})
        # Kill cairnd once slots are moving, and start another.
        clusters.wait_until(
            lambda: (operation(stack.api, op_id).get("slot_migration") or {}).get(
                "slots_moved", 0) > 200, 120, "slots moving")
        stack.kill9_cairnd()
        stack.restart_cairnd()
        op = wait_op(stack.api, op_id)
        eq(op["status"], "succeeded", op)
        sm = op["slot_migration"]
        eq(sm["slots_moved"], sm["slots_total"], f"every planned slot moved: {sm}")
        assert sm["keys_moved"] > keys * 0.4, f"about half the keys moved: {sm}"
        body = wait_available(stack.api, cid)
        balanced(body, 4)
        eq(open_moves(body, pw), [], "no slot left half moved after the resumed run")

        op_id = change(stack.api, cid, {"num_shards": 3})
        op = wait_op(stack.api, op_id)
        eq(op["status"], "succeeded", op)
        body = wait_available(stack.api, cid)
        balanced(body, 3)
        eq(open_moves(body, pw), [], "no slot left half moved")
        time.sleep(0.5)  # a last round of writes on the final layout

    eq(traffic.write_errors[:5], [], "writes that failed")
    eq(traffic.wrong[:5], [], "reads that returned another value")
    eq(traffic.read_errors[:5], [], "reads that failed")
    assert len(traffic.acked) > 100, f"the writer wrote: {len(traffic.acked)}"
    check_all(body, pw, keys, traffic)
    eq(body["num_shards"], 3, "the spec")
    types = event_types(stack.api, cid)
    for t in ("ShardAdded", "SlotsMigrated", "ShardRemoved", "ClusterScaled"):
        assert t in types, f"{t} in {types}"
    # The removed shard's nodes are stopped and gone from every view.
    rcn = primaries(body, pw)
    for c in rcn.values():
        eq(len(c.execute_command("CLUSTER NODES")), 6, "nodes each primary knows")
        c.close()


def test_cancel_then_rebalance(stack, cleanup):
    """A cancelled scale-out keeps its new shard with what it got and every
    slot served; the rebalance preview lists what is left to move, and the
    rebalance moves it."""
    cid = "scale-cancel"
    body = create(stack, cleanup, cid, num_shards=2)
    pw = password(stack.api, cid)
    rc = clusters.cluster_client(body, pw)
    load(rc, 20_000)
    rc.close()

    op_id = change(stack.api, cid, {"num_shards": 3})
    clusters.wait_until(
        lambda: (operation(stack.api, op_id).get("slot_migration") or {}).get(
            "slots_moved", 0) > 100, 120, "slots moving")
    r = stack.api.post(f"/v1/operations/{op_id}/cancel")
    eq(r.status_code, 202, r.text)
    assert r.json()["cancel_requested_at"] is not None, r.json()
    op = wait_op(stack.api, op_id)
    eq(op["status"], "cancelled", op)
    sm = op["slot_migration"]
    assert 0 < sm["slots_moved"] < sm["slots_total"], f"stopped part way: {sm}"
    body = wait_available(stack.api, cid)
    counts = slot_counts(body)
    eq(sum(counts.values()), 16384, f"every slot served after the cancel: {counts}")
    eq(open_moves(body, pw), [], "stopped at a slot boundary")
    eq(body["num_shards"], 3, "scaling out keeps the shard it placed")
    check_all(body, pw, 20_000)
    r = stack.api.post(f"/v1/operations/{op_id}/cancel")
    eq((r.status_code, r.json()["code"]), (409, "OPERATION_NOT_CANCELLABLE"), r.text)

    preview = expect.json_ok(stack.api.post(f"/v1/clusters/{cid}/rebalance?dry_run=true"))
    eq(preview["dry_run"], True, preview)
    eq(preview["load_measure"], "key-count", preview)
    assert preview["slots"] > 1000 and preview["keys"] > 0, preview
    assert all(m["to_shard"] == "0003" for m in preview["moves"]), preview["moves"][:3]
    eq(sum(m["slot_count"] for m in preview["moves"]), preview["slots"], "runs add up")
    eq(operation_count(stack.api, cid, "rebalance"), 0, "a preview starts nothing")

    r = stack.api.post(f"/v1/clusters/{cid}/rebalance")
    eq(r.status_code, 202, r.text)
    op = wait_op(stack.api, r.headers["Location"].rsplit("/", 1)[1])
    eq((op["kind"], op["status"]), ("rebalance", "succeeded"), op)
    body = wait_available(stack.api, cid)
    counts = slot_counts(body)
    keys = {sid: c.dbsize() for sid, c in primaries(body, pw).items()}
    fair = 20_000 / 3
    for sid, n in keys.items():
        assert abs(n - fair) <= 0.1 * fair, f"shard {sid} holds {n} keys, fair is {fair:.0f}"
    check_all(body, pw, 20_000)
    assert "ClusterRebalanced" in event_types(stack.api, cid)

    r = stack.api.post("/v1/operations/00000000-0000-0000-0000-000000000000/cancel")
    eq(r.status_code, 404, r.text)


def operation_count(api, cid, kind):
    r = api.get("/v1/operations", params={"cluster_id": cid, "kind": kind})
    return len(expect.json_ok(r)["operations"])


def test_refusals(stack, cleanup):
    # Cluster mode disabled has one shard and no slots.
    cid = "scale-group"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1)), 202)
    wait_available(stack.api, cid)
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"num_shards": 2})
    eq((r.status_code, r.json()["code"]), (400, "VALIDATION_FAILED"), r.text)
    r = stack.api.post(f"/v1/clusters/{cid}/rebalance?dry_run=true")
    eq((r.status_code, r.json()["code"]), (409, "NOT_SUPPORTED_BY_ENGINE"), r.text)

    cid = "scale-refuse"
    body = create(stack, cleanup, cid, num_shards=2, node_type="cache.t3.micro")
    # No room: 3 hosts of 16 vCPUs take far fewer than 40 more shards.
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"num_shards": 42})
    eq((r.status_code, r.json()["code"]), (409, "INSUFFICIENT_CAPACITY"), r.text)
    eq(clusters.get(stack.api, cid)["num_shards"], 2, "nothing stored")
    r = stack.api.post(f"/v1/clusters/{cid}/rebalance?tolerance_percent=abc")
    eq(r.status_code, 400, r.text)
    r = stack.api.post(f"/v1/clusters/{cid}/rebalance?dry_run=maybe")
    eq(r.status_code, 400, r.text)

    # Data the shards that stay cannot hold with the 25% reserve.
    pw = password(stack.api, cid)
    rc = clusters.cluster_client(body, pw)
    blob = "x" * (1 << 20)
    p = rc.pipeline()
    for i in range(420):                      # 420 MiB over two 0.5 GiB shards
        p.set(f"big:{i}", blob)
    p.execute()
    rc.close()
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"num_shards": 1})
    eq((r.status_code, r.json()["code"]), (409, "INSUFFICIENT_MEMORY"), r.text)
    assert "MiB" in r.json()["detail"] and "reserve" in r.json()["detail"], r.text
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"num_shards": 1, "dry_run": True})
    eq((r.status_code, r.json()["code"]), (409, "INSUFFICIENT_MEMORY"), r.text)

    # One operation at a time (and a cancel stops this one at once).
    op_id = change(stack.api, cid, {"num_shards": 3})
    r = stack.api.post(f"/v1/clusters/{cid}/rebalance")
    eq((r.status_code, r.json()["code"]), (409, "OPERATION_IN_PROGRESS"), r.text)
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"num_shards": 2})
    eq((r.status_code, r.json()["code"]), (409, "OPERATION_IN_PROGRESS"), r.text)
    eq(stack.api.post(f"/v1/operations/{op_id}/cancel").status_code, 202, "cancel")
    eq(wait_op(stack.api, op_id)["status"], "cancelled")
