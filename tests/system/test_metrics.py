"""test_metrics.py -- metrics end to end: real cairn-agents collect from
real engines under a known load, push to cairnd, and the API answers with
what was done. The agents sample every second in 2-second periods
(--metrics-interval 1 --metrics-period 2, the settings tests use so the
suite stays fast; the defaults are 10 s and 60 s).

The load goes to the primary of a valkey group (1 + 1): SETs, GETs of keys
that exist (hits) and of keys that do not (misses). The primary's stored
counts for the window must match it; the replica shows the SETs it
applied from the replication stream but no GETs. An engine restart gives
no negative counts, a failover flips IsPrimary, and the Prometheus scrape
shows the newest values.
"""

import os
import signal
import time

import clusters
import expect
from clusters import nodes, password, wait_available, wait_until
from expect import eq

PERIOD_S = 2
stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "metrics", agent_args=["--metrics-interval", "1", "--metrics-period", str(PERIOD_S)])

SETS, HITS, MISSES = 300, 200, 120


def series_sum(api, cid, name, node_id, start, end, stat="Sum"):
    r = api.get(f"/v1/clusters/{cid}/metrics",
                params={"names": name, "node_id": node_id, "start": str(int(start)),
                        "end": str(int(end)), "period": str(int(end - start)), "stat": stat})
    pts = expect.json_ok(r)["series"][0]["points"]
    return sum(p["value"] for p in pts) if stat == "Sum" else [p["value"] for p in pts]


def newest(api, cid, name, node_id):
    now = int(time.time())
    r = api.get(f"/v1/clusters/{cid}/metrics",
                params={"names": name, "node_id": node_id, "start": str(now - 30),
                        "end": str(now + PERIOD_S), "period": str(PERIOD_S)})
    pts = expect.json_ok(r)["series"][0]["points"]
    return pts[-1]["value"] if pts else None


def test_known_load_is_counted(stack, cleanup):
    cid = "metered"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1)), 202)
    body = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    # The agents' first samples carry no counts (nothing to subtract from):
    # start the load once both nodes have reported a full period.
    wait_until(lambda: newest(stack.api, cid, "CurrConnections", primary["id"]) is not None
               and newest(stack.api, cid, "CurrConnections", replica["id"]) is not None,
               30, "the first samples")
    time.sleep(PERIOD_S)
    start = (time.time() // PERIOD_S) * PERIOD_S + PERIOD_S  # the next period's start
    time.sleep(max(0.0, start - time.time()) + 0.2)
    with clusters.client(primary["address"], primary["port"], pw) as c:
        for i in range(SETS):
            c.set(f"m{i}", i)
        for i in range(HITS):
            c.get(f"m{i}")
        for i in range(MISSES):
            c.get(f"absent{i}")
    end = (time.time() // PERIOD_S) * PERIOD_S + PERIOD_S  # the load's last period's end
    wait_until(lambda: newest(stack.api, cid, "CacheHits", primary["id"]) is not None
               and series_sum(stack.api, cid, "CacheHits", primary["id"], end,
                              end + PERIOD_S, "SampleCount") != [], 30,
               "the samples after the load")

    def count(name, node):
        return series_sum(stack.api, cid, name, node["id"], start, end)

    eq(count("SetTypeCmds", primary), SETS, "SETs on the primary")
    eq(count("GetTypeCmds", primary), HITS + MISSES, "GETs on the primary")
    eq(count("CacheHits", primary), HITS, "hits")
    eq(count("CacheMisses", primary), MISSES, "misses")
    eq(count("StringBasedCmds", primary), SETS + HITS + MISSES, "string commands")
    eq(count("SetTypeCmds", replica), SETS, "SETs the replica applied")
    eq(count("GetTypeCmds", replica), 0, "no GETs on the replica")
    conns = series_sum(stack.api, cid, "CurrConnections", primary["id"], start, end, "Maximum")
    assert conns and max(conns) >= 1, conns
    eq(newest(stack.api, cid, "IsPrimary", primary["id"]), 1.0, "IsPrimary of the primary")
    eq(newest(stack.api, cid, "IsPrimary", replica["id"]), 0.0, "IsPrimary of the replica")
    lat = series_sum(stack.api, cid, "GetTypeCmdsLatency", primary["id"], start, end, "Maximum")
    assert lat and 0 < max(lat) < 10000, lat
    # Cluster-wide: both nodes' SETs.
    r = stack.api.get(f"/v1/clusters/{cid}/metrics",
                      params={"names": "SetTypeCmds", "start": str(int(start)),
                              "end": str(int(end)), "period": str(int(end - start)),
                              "stat": "Sum"})
    eq(sum(p["value"] for p in expect.json_ok(r)["series"][0]["points"]), 2 * SETS,
       "the cluster's SETs")

    # An engine restart: no negative count, and the counts go on.
    before = time.time()
    agent = stack.agent_of(replica["host_id"])
    os.kill(agent.pidfile(replica["id"]), signal.SIGKILL)
    wait_until(lambda: agent.pidfile(replica["id"]) is not None and newest(
        stack.api, cid, "CurrConnections", replica["id"]) is not None
        and time.time() > before + 3 * PERIOD_S, 30, "the replica back and sampled")
    for name in ("GetTypeCmds", "SetTypeCmds", "NewConnections", "CacheHits",
                 "NonKeyTypeCmds"):
        mins = series_sum(stack.api, cid, name, replica["id"], before - 2 * PERIOD_S,
                          time.time() + PERIOD_S, "Minimum")
        assert all(v >= 0 for v in mins), (name, mins)

    # A failover flips IsPrimary.
    expect.json_ok(stack.api.post(f"/v1/clusters/{cid}/failover", json={}), 202)
    clusters.wait_cluster(stack.api, cid, lambda b: b["current_operation"] is None, 30,
                          "the failover")
    wait_until(lambda: newest(stack.api, cid, "IsPrimary", replica["id"]) == 1.0
               and newest(stack.api, cid, "IsPrimary", primary["id"]) == 0.0,
               20, "IsPrimary flipped")

    # The Prometheus scrape shows the newest values.
    text = stack.api.get("/metrics").text
    line = next((ln for ln in text.splitlines() if ln.startswith("cairn_cache_is_primary{")
                 and replica["id"] in ln), None)
    assert line is not None and line.endswith(" 1"), line
