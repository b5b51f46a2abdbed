"""test_metrics_first_sample.py -- what a node does before the agent's first
sample of it is counted. A user creates a cluster and loads it the moment
it is available: those commands must show in that period's metrics, though
the agent had no earlier reading of the engines to subtract from (they
count from zero: the agent started them).

The agents here sample every 5 s in 10-second periods (10 s and 60 s by
default): the load fits between the engines' start and their first sample
when the cluster is created just after a period begins, and the period has
a sample after that one too, as a user's minute has.
"""

import time

import clusters
import expect
from clusters import primary_and_replica, wait_until
from expect import eq

INTERVAL_S, PERIOD_S = 5, 10
stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "metrics-first", agent_args=["--metrics-interval", str(INTERVAL_S),
                                 "--metrics-period", str(PERIOD_S)])

SETS, HITS, MISSES = 3000, 5000, 2000


def period_values(api, cid, name, start, node_id=None):
    """The Sum of name over the period starting at start: of node_id, or of
    every node of the cluster; [] before that period has reached cairnd."""
    params = {"names": name, "start": str(start), "end": str(start + PERIOD_S),
              "period": str(PERIOD_S), "stat": "Sum"}
    if node_id is not None:
        params["node_id"] = node_id
    r = api.get(f"/v1/clusters/{cid}/metrics", params=params)
    return [p["value"] for p in expect.json_ok(r)["series"][0]["points"]]


def test_load_before_the_first_sample_is_counted(stack, cleanup):
    cid = "first-period"
    start = (int(time.time()) // PERIOD_S + 1) * PERIOD_S
    time.sleep(start - time.time() + 0.1)
    _, pw, primary, replica = primary_and_replica(stack, cleanup, cid)
    available = time.time()
    with clusters.client(primary["address"], primary["port"], pw) as c:
        p = c.pipeline(transaction=False)
        for i in range(SETS):
            p.set(f"k{i}", i)
        for i in range(HITS):
            p.get(f"k{i % SETS}")
        for i in range(MISSES):
            p.get(f"absent{i}")
        p.execute()
    loaded = time.time()
    print(f"\navailable {available - start:.2f} s into the period, loaded "
          f"{loaded - start:.2f} s into it; first samples at {INTERVAL_S} s")
    # Otherwise the agents read the engines before the load, and the
    # counts below would come from deltas, not from the first samples.
    assert loaded < start + INTERVAL_S - 0.5, "the load ended after the engines' first sample"

    wait_until(lambda: all(period_values(stack.api, cid, "CurrConnections", start, n["id"])
                           for n in (primary, replica)), 2 * PERIOD_S,
               "the first period's samples of both nodes")
    counts = {name: period_values(stack.api, cid, name, start)
              for name in ("CacheHits", "CacheMisses", "GetTypeCmds", "SetTypeCmds")}
    print(f"summed over the nodes, the first period: {counts}")
    eq(counts["CacheHits"], [HITS], "hits")
    eq(counts["CacheMisses"], [MISSES], "misses")
    eq(counts["GetTypeCmds"], [HITS + MISSES], "GETs")
    # The replica applies every SET from the replication stream, and
    # serves no GET.
    eq(counts["SetTypeCmds"], [2 * SETS], "SETs of the primary and the replica")
    eq(period_values(stack.api, cid, "SetTypeCmds", start, replica["id"]), [SETS],
       "SETs the replica applied")
    eq(period_values(stack.api, cid, "GetTypeCmds", start, replica["id"]), [0],
       "GETs on the replica")
