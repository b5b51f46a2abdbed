"""test_recommendations.py -- GET /v1/clusters/{id}/recommendations on real
clusters (three agents, real valkey-server), driven as a user would: a
cluster filled past its memory until keys are evicted is told to scale up
or out, with the memory figures as evidence and a target that holds its
data; an idle cluster on a large node type is told to scale down to one
that still holds its data; a cluster with no metrics yet gets
insufficient_data, naming what is missing; unknown clusters and bad `days`
are refused.

The agents sample every second in 2-second periods, so a window of one day
has the few samples a recommendation needs within seconds. Every answer is
checked against its schema in api/openapi.yaml.
"""

import jsonschema
import yaml

import clusters
import harness
import expect
from clusters import nodes, password, wait_available, wait_until
from expect import eq
from test_slot_stats import tags_in

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "recommend", agent_args=["--metrics-interval", "1", "--metrics-period", "2"])

MEMORY_METRICS = {"BytesUsedForCache", "DatabaseMemoryUsagePercentage"}
GIB = 1024 ** 3
_components = yaml.safe_load((harness.REPO / "api" / "openapi.yaml").read_text())["components"]
SCHEMA = jsonschema.Draft202012Validator(
    {"$ref": "#/components/schemas/Recommendation", "components": _components})


def recommendations(stack, cid, days=1):
    """The recommendation, read with a read-scope token, as documented."""
    body = expect.json_ok(stack.inst.read.get(f"/v1/clusters/{cid}/recommendations",
                                              params={"days": days}))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in SCHEMA.iter_errors(body)]
    assert not errors, f"the answer does not match its schema: {errors}\n{body!r}"
    return body


def wait_judged(stack, cid, ok, timeout=40):
    """The recommendation once ok(body) holds (the last one seen on timeout)."""
    seen = []

    def judged():
        seen.append(recommendations(stack, cid))
        return seen[-1] if ok(seen[-1]) else None
    try:
        return wait_until(judged, timeout, f"a recommendation for {cid}", interval=0.5)
    except AssertionError:
        raise AssertionError(f"last recommendation for {cid}: {seen[-1] if seen else None!r}")


def node_type(stack, name):
    return expect.json_ok(stack.api.get(f"/v1/node-types/{name}"))


def assert_target_holds(stack, rec):
    """The target's shards hold the data seen with the reserve and headroom:
    no more than 60% of a node of its type (25% reserved, 15% headroom),
    taking the largest shard's data spread over the new shard count."""
    target, shards = rec["target"], rec["observed"]["shards"]
    most = max(s["data_bytes_peak"] for s in shards)
    per_shard = most * len(shards) / target["num_shards"]
    memory = node_type(stack, target["node_type"])["memory_gib"] * GIB
    assert per_shard <= 0.60 * memory, (per_shard, memory, rec)
    assert per_shard <= target["data_bytes_per_shard"], rec


def test_no_metrics_yet_then_a_full_cluster_scales_up_or_out(stack, cleanup):
    cid = "rs-full"
    cleanup.append(cid)
    # A small node whose engines keep 90% of memory out of maxmemory: about
    # 51 MiB for data, filled in a second. Least recently used keys go.
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(
        cid, num_shards=1, parameters={"reserved-memory-percent": "90",
                                       "maxmemory-policy": "allkeys-lru", "appendonly": "no"})),
        202)

    # Nothing runs yet, so nothing was measured.
    rec = recommendations(stack, cid)
    eq(rec["status"], "insufficient_data", "status before any sample")
    assert rec["target"] is None, rec
    eq({m["metric"] for m in rec["missing"]}, {"BytesUsedForCache", "EngineCPUUtilization"},
       "what is missing")
    eq({m["shard"] for m in rec["missing"]}, {"0001"}, "where")
    assert all(m["samples"] < m["needed"] for m in rec["missing"]), rec["missing"]
    assert "0001" in rec["summary"], rec["summary"]
    eq(rec["window"]["days"], 1, "window")

    body = wait_available(stack.api, cid, timeout=60)
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    value = "x" * 100_000
    with clusters.client(primary["address"], primary["port"], password(stack.api, cid)) as c:
        for batch in range(8):
            p = c.pipeline(transaction=False)
            for i in range(100):
                p.set(f"k{batch}:{i}", value)
            p.execute()
        evicted = c.info("stats")["evicted_keys"]
    with clusters.admin_client(primary) as c:
        maxmemory = c.config_get("maxmemory")["maxmemory"]
    assert evicted > 0, "80 MB into a 51 MiB maxmemory evicts"
    print(f"\nmaxmemory {maxmemory}, evicted {evicted} keys")

    rec = wait_judged(stack, cid, lambda r: r["status"] in ("scale_up", "scale_out"))
    print(rec["summary"])
    evidence = {e["metric"]: e for e in rec["evidence"]}
    assert MEMORY_METRICS <= set(evidence), rec["evidence"]
    for name in MEMORY_METRICS:
        e = evidence[name]
        eq((e["statistic"], e["window"], e["shard"]), ("Maximum", "1d", "0001"), name)
        assert e["value"] > e["threshold"], e
    assert evidence["DatabaseMemoryUsagePercentage"]["value"] > 90, evidence
    assert evidence["Evictions"]["value"] > 0, evidence
    eq(evidence["Evictions"]["statistic"], "Sum", "evictions statistic")
    assert rec["observed"]["evictions"] > 0, rec["observed"]

    target = rec["target"]
    eq(target["replicas_per_shard"], 1, "replicas stay")
    if rec["status"] == "scale_up":
        eq(target["num_shards"], 1, "one change at a time")
        assert node_type(stack, target["node_type"])["memory_gib"] > 0.5, target
        eq(target["change"], {"node_type": target["node_type"]}, "the change")
    else:
        assert target["num_shards"] > 1, target
        eq(target["change"], {"num_shards": target["num_shards"]}, "the change")
    assert_target_holds(stack, rec)

    # A node type change and more shards both run online: the answer says
    # PATCH takes it now.
    apply = rec["apply"]
    eq((apply["request"]["method"], apply["request"]["path"], apply["request"]["body"]),
       ("PATCH", f"/v1/clusters/{cid}", target["change"]), "the request")
    eq(apply["accepted_now"], True, "accepted now")
    assert "refusal" not in apply, apply


def test_idle_large_cluster_scales_down_to_a_node_that_holds_it(stack, cleanup):
    cid = "rs-idle"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", node_type="cache.m5.large",
        replicas_per_shard=1)), 202)
    wait_available(stack.api, cid, timeout=60)

    rec = wait_judged(stack, cid, lambda r: r["status"] != "insufficient_data")
    print(f"\n{rec['summary']}")
    eq(rec["status"], "scale_down", "an idle m5.large")
    current, target = rec["current"], rec["target"]
    eq((current["node_type"], current["num_shards"]), ("cache.m5.large", 1), "current")
    eq(target["num_shards"], 1, "cluster mode disabled keeps one shard")
    assert node_type(stack, target["node_type"])["memory_gib"] < 6.38, target
    assert target["price_usd_per_hour"] < current["price_usd_per_hour"], rec
    assert_target_holds(stack, rec)
    evidence = {e["metric"]: e for e in rec["evidence"]}
    e = evidence["BytesUsedForCache"]
    assert 0 < e["value"] <= e["threshold"] == target["data_bytes_per_shard"], e
    assert evidence["EngineCPUUtilization"]["value"] < 80, evidence
    eq(rec["hot_shards"], [], "one shard is never hot")


def test_refusals(stack):
    expect.problem(stack.inst.read.get("/v1/clusters/nope/recommendations"), "CLUSTER_NOT_FOUND")
    for days in ("0", "15", "-1", "1.5", "seven", ""):
        expect.problem(stack.inst.read.get("/v1/clusters/nope/recommendations",
                                           params={"days": days}),
                       "INVALID_QUERY_PARAMETER", fields={"days"})
    expect.problem(stack.inst.read.get("/v1/clusters/nope/recommendations",
                                       params={"window": "7"}), "INVALID_QUERY_PARAMETER")


def test_a_hot_shard_gets_slot_advice(stack, cleanup):
    cid = "rs-hot"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(
        cid, parameters={"reserved-memory-percent": "90", "maxmemory-policy": "allkeys-lru",
                         "appendonly": "no"})), 202)
    body = wait_available(stack.api, cid, timeout=60)
    first, last = (int(x) for x in body["shards"][0]["slots"][0].split("-"))
    primary = next(n for n in nodes(body) if n["role"] == "primary" and n["shard"] == "0001")
    value = "x" * 100_000
    # Shard 0001 alone fills up, in ten slots; the others stay empty.
    with clusters.client(primary["address"], primary["port"], password(stack.api, cid)) as c:
        for tag, _ in tags_in(first, last, 10):
            p = c.pipeline(transaction=False)
            for i in range(80):
                p.set(f"{{{tag}}}:{i}", value)
            p.execute()
        assert c.info("stats")["evicted_keys"] > 0

    rec = wait_judged(stack, cid, lambda r: r["status"] != "insufficient_data"
                      and r["observed"]["evictions"] > 0)
    print(f"\n{rec['summary']}")
    eq(rec["status"], "scale_out", "the cheapest shape that holds shard 0001's data")
    assert_target_holds(stack, rec)
    eq([h["shard"] for h in rec["hot_shards"]], ["0001"], "the hot shard")
    hot = rec["hot_shards"][0]
    assert "BytesUsedForCache" in {e["metric"] for e in hot["evidence"]}, hot
    assert hot["times_mean_data"] > 1.2, hot
    # The live per-slot advice of GET /v1/clusters/{id}/slot-stats.
    slots = hot["slots"]
    assert slots is not None, hot
    eq((slots["load_measure"], slots["hot"]), ("key-count", True), "slot figures")
    assert slots["advice"]["to_shard"] in ("0002", "0003"), slots
    assert slots["hottest"][0]["slot"] not in slots["advice"]["move_slots"], slots
