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
shows the newest values. An agent that restarts adopts engines that have
been up for a while: its first sample counts none of their lifetime totals
(what they did while no agent ran is not counted at all).

ReplicationLag is measured against a steady writer on the primary: small
while the replica keeps up, seconds while it is held back (CLIENT PAUSE
WRITE on the replica: it still reads the stream and answers INFO, but
applies nothing), small again once it catches up and after a failover. A
primary that accepts connections and never answers costs the replica's
samples nothing but its ReplicationLag.
"""

import os
import signal
import socket
import threading
import time

import redis

import clusters
import expect
from clusters import primary_and_replica, wait_until
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


def values(api, cid, name, node_id, start, end, stat="Maximum"):
    """The stored values of node_id's metric, one per period in [start, end)."""
    r = api.get(f"/v1/clusters/{cid}/metrics",
                params={"names": name, "node_id": node_id, "start": str(int(start)),
                        "end": str(int(end)), "period": str(PERIOD_S), "stat": stat})
    return [p["value"] for p in expect.json_ok(r)["series"][0]["points"]]


def next_period():
    """The start of the next period (epoch s)."""
    return (time.time() // PERIOD_S) * PERIOD_S + PERIOD_S


def test_known_load_is_counted(stack, cleanup):
    cid = "metered"
    body, pw, primary, replica = primary_and_replica(stack, cleanup, cid)
    # Start the load in a period of its own, once both nodes have reported
    # a full one: the counts of its window are the load's alone.
    wait_until(lambda: newest(stack.api, cid, "CurrConnections", primary["id"]) is not None
               and newest(stack.api, cid, "CurrConnections", replica["id"]) is not None,
               30, "the first samples")
    time.sleep(PERIOD_S)
    start = next_period()
    time.sleep(max(0.0, start - time.time()) + 0.2)
    with clusters.client(primary["address"], primary["port"], pw) as c:
        for i in range(SETS):
            c.set(f"m{i}", i)
        for i in range(HITS):
            c.get(f"m{i}")
        for i in range(MISSES):
            c.get(f"absent{i}")
    end = next_period()  # the load's last period's end
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


def gets(c, hits, misses):
    """Send hits GETs of a key that exists (m0) and misses of keys that do not."""
    p = c.pipeline(transaction=False)
    for _ in range(hits):
        p.get("m0")
    for i in range(misses):
        p.get(f"absent{i}")
    p.execute()


def test_agent_restart_counts_no_lifetime_totals(stack, cleanup):
    cid = "readopted"
    body, pw, primary, replica = primary_and_replica(stack, cleanup, cid)
    created = (time.time() // PERIOD_S) * PERIOD_S
    agent = stack.agent_of(primary["host_id"])
    pid = agent.pidfile(primary["id"])
    with clusters.client(primary["address"], primary["port"], pw) as c:
        c.set("m0", 0)
        # Counted by the agent that started the engine.
        gets(c, HITS, MISSES)
        end = next_period()
        wait_until(lambda: values(stack.api, cid, "CurrConnections", primary["id"], end,
                                  end + PERIOD_S) != [], 30, "the samples after the first load")
        # No agent runs: the engine counts on, nobody reads it.
        agent.stop()
        gets(c, 1000, 500)
        # The agent comes back and adopts the engine, up for seconds now:
        # its totals are its life's, not a count of the interval.
        restarted = (time.time() // PERIOD_S) * PERIOD_S
        agent.start()
        wait_until(lambda: values(stack.api, cid, "CurrConnections", primary["id"], restarted,
                                  time.time() + PERIOD_S) != [], 30,
                   "the restarted agent's first sample")
        gets(c, 70, 30)
        end = next_period()
    wait_until(lambda: values(stack.api, cid, "CurrConnections", primary["id"], end,
                              end + PERIOD_S) != [], 30, "the samples after the last load")
    eq(agent.pidfile(primary["id"]), pid, "the engine's pid (adopted, not restarted)")

    def count(name, start, stop):
        return series_sum(stack.api, cid, name, primary["id"], start, stop)

    before = {n: count(n, created, restarted) for n in ("CacheHits", "CacheMisses")}
    since = {n: count(n, restarted, end) for n in ("CacheHits", "CacheMisses", "GetTypeCmds")}
    print(f"\nbefore the agent's restart: {before}; from its restart on: {since}")
    eq(before, {"CacheHits": HITS, "CacheMisses": MISSES}, "counts of the first agent")
    # What the engine did while no agent ran is not counted (no reading
    # before it to subtract from), nor anything before that.
    eq(since, {"CacheHits": 70, "CacheMisses": 30, "GetTypeCmds": 100},
       "counts from the agent's restart on")


class SteadyWriter:
    """A SET of 100 bytes every 2 ms to the engine at target (address, port),
    which may be changed while it runs; errors (a failover under way) only
    make it wait and connect again."""

    def __init__(self, target, pw):
        self.target, self.pw = target, pw
        self.done = threading.Event()
        self.sets = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            target = self.target
            try:
                with clusters.client(target[0], target[1], self.pw) as c:
                    while not self.done.is_set() and self.target == target:
                        c.set(f"w{self.sets % 1000}", "v" * 100)
                        self.sets += 1
                        time.sleep(0.002)
            except redis.RedisError:
                time.sleep(0.05)

    def stop(self):
        self.done.set()
        self.thread.join(5)


def wait_values(api, cid, node_id, start, end, what):
    """Wait until the periods up to end have reached cairnd; their lags."""
    wait_until(lambda: values(api, cid, "IsPrimary", node_id, end - PERIOD_S, end) != [], 20,
               what)
    return values(api, cid, "ReplicationLag", node_id, start, end)


def test_replication_lag(stack, cleanup):
    cid = "lagging"
    body, pw, primary, replica = primary_and_replica(stack, cleanup, cid)
    writer = SteadyWriter((primary["address"], primary["port"]), pw)
    try:
        # Keeping up: the primary's offset is read before the replica's, so
        # a write in flight is all the lag there is.
        wait_until(lambda: newest(stack.api, cid, "ReplicationLag", replica["id"]) is not None,
                   30, "the replica's first ReplicationLag")
        start = next_period()
        time.sleep(max(0.0, start - time.time()) + 3 * PERIOD_S)
        end = start + 3 * PERIOD_S
        steady = wait_values(stack.api, cid, replica["id"], start, end, "the steady periods")
        print(f"\nReplicationLag keeping up, per period: {steady} ({writer.sets} SETs so far)")
        assert len(steady) >= 2 and all(0 <= v < 1.0 for v in steady), steady
        eq(values(stack.api, cid, "ReplicationLag", primary["id"], start, end), [],
           "no ReplicationLag on the primary")

        # Held back for 4 s: the lag grows with the pause, then falls back.
        with clusters.admin_client(replica) as c:
            paused_at = time.time()
            c.execute_command("CLIENT", "PAUSE", "4000", "WRITE")
        start = (paused_at // PERIOD_S) * PERIOD_S
        end = start + 4 * PERIOD_S
        time.sleep(max(0.0, end - time.time()))
        held = wait_values(stack.api, cid, replica["id"], start, end, "the paused periods")
        print(f"ReplicationLag held back 4 s from {paused_at - start:.2f} s into the first "
              f"period, per period: {held}")
        assert held and 1.0 < max(held) < 4 + PERIOD_S, held
        start = end + PERIOD_S
        end = start + 2 * PERIOD_S
        time.sleep(max(0.0, end - time.time()))
        after = wait_values(stack.api, cid, replica["id"], start, end, "the periods after")
        print(f"ReplicationLag caught up, per period: {after}")
        assert after and all(0 <= v < 1.0 for v in after), after

        # A failover: the old primary's agent reads the new one; no spike,
        # nothing negative, and no lag on the new primary.
        failover_at = (time.time() // PERIOD_S) * PERIOD_S
        expect.json_ok(stack.api.post(f"/v1/clusters/{cid}/failover", json={}), 202)
        clusters.wait_cluster(stack.api, cid, lambda b: b["current_operation"] is None, 30,
                              "the failover")
        writer.target = (replica["address"], replica["port"])
        wait_until(lambda: newest(stack.api, cid, "IsPrimary", replica["id"]) == 1.0, 20,
                   "IsPrimary flipped")
        start = next_period()
        end = start + 2 * PERIOD_S
        time.sleep(max(0.0, end - time.time()))
        settled = wait_values(stack.api, cid, primary["id"], start, end, "the periods after")
        across = values(stack.api, cid, "ReplicationLag", primary["id"], failover_at, end)
        print(f"ReplicationLag of the old primary across the failover: {across}")
        assert settled and all(0 <= v < 1.0 for v in settled), settled
        assert all(0 <= v < 2 * PERIOD_S for v in across), across
        eq(values(stack.api, cid, "ReplicationLag", replica["id"], start, end), [],
           "no ReplicationLag on the new primary")
    finally:
        writer.stop()


def test_hung_primary_delays_no_sample(stack, cleanup):
    cid = "hung"
    body, pw, primary, replica = primary_and_replica(stack, cleanup, cid)
    agent = stack.agent_of(replica["host_id"])
    wait_until(lambda: newest(stack.api, cid, "ReplicationLag", replica["id"]) == 0.0, 30,
               "the replica's ReplicationLag")

    # A listener nobody accepts from: connections complete in its backlog,
    # and nothing ever answers them. (The replica's agent points it back at
    # the designated primary 10 s after it sees it follow another; the
    # periods checked here end before that.)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)
        since = agent.log.size()
        with clusters.admin_client(replica) as c:
            down_at = time.time()
            c.execute_command("REPLICAOF", "127.0.0.1", str(hung.getsockname()[1]))
        start = next_period()
        end = start + 3 * PERIOD_S
        time.sleep(max(0.0, end - time.time()))
        wait_until(lambda: values(stack.api, cid, "CurrConnections", replica["id"],
                                  end - PERIOD_S, end) != [], 20, "the periods with it")
        # Every period has its sample: no tick waited on the hung primary.
        eq(len(values(stack.api, cid, "CurrConnections", replica["id"], start, end)), 3,
           "the replica's periods")
        # The link is down: the lag is the time since, as the replica says
        # (whole seconds), averaged over the samples at 1 and 2 s into each
        # period.
        held = values(stack.api, cid, "ReplicationLag", replica["id"], start, end)
        want = [start + k * PERIOD_S + 1.5 - down_at for k in range(3)]
        print(f"\nReplicationLag following a hung primary, per period: {held} "
              f"(since REPLICAOF: {[round(w, 2) for w in want]})")
        assert len(held) == 3 and all(abs(v - w) <= 1.25 for v, w in zip(held, want)), \
            (held, want)
        warned = [m for m in agent.messages(since) if m.get("node") == replica["id"]
                  and m["msg"].startswith("could not read the primary's replication offset")]
        assert len(warned) == 1 and warned[0]["level"] == "warn", warned
        assert "no answer to INFO replication within 200 ms" in warned[0]["error"], warned
        assert not [m for m in agent.messages(since) if m["msg"] == "engine unresponsive"]

        # Following the real primary again: the agent reads that one, and
        # the lag comes back.
        with clusters.admin_client(replica) as c:
            c.execute_command("REPLICAOF", primary["address"], str(primary["port"]))
        back = next_period() + PERIOD_S
    wait_until(lambda: values(stack.api, cid, "ReplicationLag", replica["id"], back,
                              back + PERIOD_S) == [0.0], 20, "the lag back")
    eq(len([m for m in agent.messages(since) if m["level"] == "warn"]), 1, "warnings")
