"""test_ha.py -- high availability end to end: real cairnd, PostgreSQL,
three cairn-agents in three AZs and the engines they run, driven through
the REST API, redis-py's Sentinel client (pointed at cairnd's
Sentinel-compatible listener) and redis-py's cluster client.

Faults are real: kill -9 of an engine, SIGSTOP of an agent and its engines
(a frozen VM), SIGCONT. cairnd runs with a 3 s heartbeat timeout so a
frozen host is declared lost quickly, and replaces nodes 4 s after that
(--replace-after); cluster-mode clusters use a 2 s cluster-node-timeout for
the same reason. Everything else is at its default.

A writer thread plays the application: one SET every 10 ms through the
client, each acknowledged key recorded with the time of its
acknowledgement, so a test can say when writes resumed and check that the
data is where it should be.
"""

import contextlib
import os
import signal
import threading
import time

import redis
from redis.sentinel import Sentinel

import agents
import clusters
import expect
from clusters import engine_role, events, nodes, password, wait_available, wait_until
from expect import eq

HEARTBEAT_S = 3
REPLACE_AFTER_S = 4
stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "ha", cairnd_args=["--heartbeat-timeout", str(HEARTBEAT_S),
                       "--replace-after", str(REPLACE_AFTER_S)])


class Writer:
    """SET k<i> every 10 ms through get_client(); on an error, ask
    get_client() again (a Sentinel-aware client rediscovers by itself)."""

    def __init__(self, get_client, prefix="k"):
        self.get_client = get_client
        self.prefix = prefix
        self.acked = []     # (key, monotonic time of the acknowledgement)
        self.errors = []    # monotonic times of failed writes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        c = self.get_client()
        i = 0
        while not self._stop.is_set():
            key = f"{self.prefix}{i}"
            try:
                c.set(key, str(i))
                self.acked.append((key, time.monotonic()))
            except (redis.RedisError, OSError):
                self.errors.append(time.monotonic())
                c = self.get_client()
            i += 1
            time.sleep(0.01)

    def start(self):
        self._thread.start()
        time.sleep(0.3)
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def first_ack_after(self, t):
        return next((at for _, at in self.acked if at > t), None)


def sentinel_master(stack, cid, pw):
    sentinel = Sentinel([("127.0.0.1", stack.sentinel_port)], socket_timeout=0.5,
                        sentinel_kwargs={"password": pw}, password=pw)
    return sentinel, sentinel.master_for(cid, socket_timeout=0.5, socket_connect_timeout=0.5)


def primary_node(body):
    ps = [n for n in nodes(body) if n["role"] == "primary"]
    eq(len(ps), 1, f"one primary in {nodes(body)}")
    return ps[0]


def automatic_failovers(api, cid):
    return [e for e in events(api, cid)
            if e["type"] == "FailoverComplete" and e["detail"].get("automatic")]


# Errors a cluster client raises while the cluster heals. Debian's redis-py
# 4.3 can also fail inside its own retry (RedisClusterException, "cannot
# pickle '_thread.lock' object") and lose its default node, so the tests
# make a fresh client after any of these.
HEALING = (redis.RedisError, redis.exceptions.RedisClusterException)


class ClusterClient:
    """A cluster client that starts over from the resource's configuration
    endpoint after an error, as an application with a retry would."""

    def __init__(self, stack, cid, pw, timeout=5):
        self.stack, self.cid, self.pw, self.timeout = stack, cid, pw, timeout
        self.rc = None

    def _client(self):
        if self.rc is None:
            self.rc = clusters.cluster_client(clusters.get(self.stack.api, self.cid), self.pw,
                                              self.timeout)
        return self.rc

    def reset(self):
        if self.rc is not None:
            try:
                self.rc.close()
            except HEALING:
                pass
        self.rc = None

    def all(self, fn):
        """fn(client) -> bool, False (and a fresh client) on an error."""
        try:
            return fn(self._client())
        except HEALING:
            self.reset()
            return False

    def get(self, key):
        return self._client().get(key)

    def set(self, key, value):
        return self._client().set(key, value)


def create(stack, cleanup, body):
    """POST a cluster (deleted after the test); return it once available,
    and its password."""
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"]), password(stack.api, body["id"])


def wait_promoted(stack, cid, pw, old, seen, timeout):
    """The cluster once a node other than old is its one published primary,
    checking on the way that two are never published."""
    def promoted():
        b = check_one_primary(stack, cid, pw, seen)
        p = [n for n in nodes(b) if n["role"] == "primary"]
        return b if p and p[0]["id"] != old["id"] else None
    return wait_until(promoted, timeout, "a replica promoted", interval=0.05)


def count_keys(address, port, pw):
    with clusters.client(address, port, pw) as c:
        return c.dbsize()


def check_one_primary(stack, cid, pw, seen):
    """The resource and the Sentinel listener never name two primaries."""
    body = clusters.get(stack.api, cid)
    ps = [n["id"] for n in nodes(body) if n["role"] == "primary"]
    assert len(ps) <= 1, f"two primaries published: {nodes(body)}"
    with redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=pw,
                     socket_timeout=2) as s:
        masters = s.execute_command("SENTINEL", "masters")
    assert len(masters) <= 1, masters
    seen.update(ps)
    return body


def test_kill9_primary_promotes_a_replica_and_the_old_one_rejoins(stack, cleanup):
    """Disabled mode: kill -9 of the primary's engine. The agent does not
    restart it; cairnd promotes the replica holding the most data, the
    Sentinel client's writes resume on it, and the old node comes back as a
    replica of the new primary with the data."""
    cid = "ha-kill"
    before, pw = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0"))
    old = primary_node(before)
    agent = stack.agent_of(old["host_id"])
    pid = agent.pidfile(old["id"])
    assert pid, "the primary's engine pid"

    _, master = sentinel_master(stack, cid, pw)
    w = Writer(lambda: master).start()
    time.sleep(0.5)
    keys_before = len(w.acked)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)

    after = wait_until(lambda: (lambda b: b if b["endpoints"]["primary"] not in
                                (None, before["endpoints"]["primary"]) else None)(
        clusters.get(stack.api, cid)), 15, "a new primary endpoint", interval=0.02)
    wait_until(lambda: w.first_ack_after(killed_at + 0.05), 10, "writes to resume")
    time.sleep(0.5)
    w.stop()
    resumed = w.first_ack_after(killed_at + 0.05) - killed_at
    print(f"\nkill -9 of the primary: writes resumed after {resumed * 1000:.0f} ms "
          f"({len(w.errors)} failed writes)")

    new = primary_node(after)
    assert new["id"] != old["id"]
    evs = automatic_failovers(stack.api, cid)
    eq(len(evs), 1, f"one automatic FailoverComplete: {evs}")
    d = evs[0]["detail"]
    eq((d["from"], d["to"], d["reason"]), (old["id"], new["id"], "engine crashed"), "event detail")
    assert 0 <= d["duration_ms"] < 5000, d

    # The old node was held down, then started again as a replica.
    msgs = [m["msg"] for m in agent.messages()]
    assert "primary engine exited; held down until cairnd fails over" in msgs, msgs[-20:]
    back = wait_until(lambda: (lambda b: b if next(n for n in nodes(b) if n["id"] == old["id"])
                               ["status"] == "running" else None)(clusters.get(stack.api, cid)),
                      20, "the old primary running again")
    o = next(n for n in nodes(back) if n["id"] == old["id"])
    eq(o["role"], "replica", "the old primary is a replica now")
    eq(engine_role(o["address"], o["port"], pw), "replica", "its engine says so")
    with clusters.client(o["address"], o["port"], pw) as c:
        wait_until(lambda: c.info("replication")["master_link_status"] == "up", 20,
                   "the old primary linked to the new one")
        wait_until(lambda: c.get(w.acked[-1][0]) is not None, 10, "the newest write replicated")

    # No acknowledged write before the kill is lost, and none after it.
    np = after["endpoints"]["primary"]
    with clusters.client(np["address"], np["port"], pw) as c:
        lost = [k for k, at in w.acked if c.get(k) is None]
    assert len(lost) <= 2, f"{len(lost)} acknowledged writes lost: {lost[:10]}"
    assert keys_before > 20
    for n in nodes(back):
        assert count_keys(n["address"], n["port"], pw) >= len(w.acked) - len(lost), n
    eq(sorted(n["role"] for n in nodes(back)), ["primary", "replica", "replica"], "roles")


def test_frozen_primary_host_fails_over_and_is_fenced_on_return(stack, cleanup):
    """Disabled mode: SIGSTOP the primary's agent and engine (a frozen VM).
    After the heartbeat timeout cairnd promotes a replica; on SIGCONT the old
    primary, which still believes it is one, is made a replica of the new
    primary. At no moment do the API or the Sentinel listener name two."""
    cid = "ha-freeze"
    before, pw = create(stack, cleanup, clusters.redis_group(cid))
    old = primary_node(before)
    agent = stack.agent_of(old["host_id"])
    pid = agent.pidfile(old["id"])
    _, master = sentinel_master(stack, cid, pw)
    w = Writer(lambda: master).start()

    seen = set()
    agent.signal(signal.SIGSTOP)
    os.kill(pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        after = wait_promoted(stack, cid, pw, old, seen, HEARTBEAT_S + 15)
        took = time.monotonic() - frozen_at
        wait_until(lambda: w.first_ack_after(frozen_at + took), 10, "writes to resume")
    finally:
        os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    thawed_at = time.monotonic()
    print(f"\nfrozen primary host: promoted after {took:.2f} s "
          f"(heartbeat timeout {HEARTBEAT_S} s)")
    d = automatic_failovers(stack.api, cid)[0]["detail"]
    eq(d["reason"], "host was lost", "why")

    # The old primary is demoted, and stays one primary all along.
    def demoted():
        check_one_primary(stack, cid, pw, seen)
        return engine_role(old["address"], old["port"], pw) == "replica"
    wait_until(demoted, 15, "the old primary demoted", interval=0.05)
    print(f"old primary demoted {(time.monotonic() - thawed_at) * 1000:.0f} ms after SIGCONT")
    for _ in range(20):
        check_one_primary(stack, cid, pw, seen)
        time.sleep(0.05)
    w.stop()
    new = primary_node(after)
    with clusters.client(old["address"], old["port"], pw) as c:
        wait_until(lambda: c.info("replication")["master_link_status"] == "up", 20,
                   "the old primary follows the new one")
        eq(c.info("replication")["master_port"], new["port"], "it follows the new primary")
        wait_until(lambda: c.get(w.acked[-1][0]) is not None, 10, "it has the newest write")
    types = [e["type"] for e in events(stack.api, cid)]
    assert "PrimaryDemoted" in types or engine_role(old["address"], old["port"], pw) == "replica", \
        types


def test_a_replicas_stale_claim_to_be_primary_demotes_no_one(stack, cleanup):
    """Cluster mode: a replica's report read before cairnd last read the
    shard itself -- a sync held up, or a create resumed after a restart of
    cairnd, when the replica's agent still saw it as the empty primary it
    was before it was told to replicate, with a newer epoch -- neither
    demotes the primary nor promotes the replica."""
    cid = "ha-stale-claim"
    body, _ = create(stack, cleanup, clusters.valkey_cluster(cid))
    shard = body["shards"][0]
    primary = next(n for n in shard["nodes"] if n["role"] == "primary")
    replica = next(n for n in shard["nodes"] if n["role"] == "replica")
    agent = stack.agent_of(replica["host_id"])
    credential = agent.identity()["credential"]
    claim = {"node_id": replica["id"], "pid": agent.pidfile(replica["id"]), "status": "running",
             "port": replica["port"], "role": "primary", "engine": "valkey",
             "config_epoch": 1 << 40, "observed_ms_ago": 60000}
    engines = [{"engine": e, "version": agents.engine_full_version(b), "line": line, "path": b}
               for e, line, b in (("redis", "7.0", "/usr/bin/redis-server"),
                                  ("valkey", "8.0", "/usr/bin/valkey-server"))]
    agent.signal(signal.SIGSTOP)  # its own reports would put things right at once
    try:
        r = stack.api.post("/v1/agent/sync",
                                headers={"Authorization": f"Bearer {credential}"},
                                json={"generation": 0, "wait_ms": 0, "engines": engines,
                                      "nodes": [claim]})
        expect.json_ok(r)
        after = clusters.get(stack.api, cid)["shards"][0]["nodes"]
    finally:
        agent.signal(signal.SIGCONT)
    eq({n["id"]: n["role"] for n in after}, {primary["id"]: "primary", replica["id"]: "replica"},
       "roles after a stale claim")
    assert not any(e["detail"].get("elected") for e in events(stack.api, cid)), \
        "an election recorded from a stale claim"


def test_cluster_mode_kill9_primary_serves_all_slots_again(stack, cleanup):
    """Cluster mode, default node timeout (5 s): kill -9 of one shard's
    primary. The agent holds it down and cairnd, told at once, has its
    replica take over (CLUSTER FAILOVER FORCE) without waiting for the
    engines to notice; every slot is served again, the old node rejoins as
    a replica, and a planned failover later restores one primary per AZ."""
    cid = "ha-cm"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(cid))
    shard = body["shards"][1]
    old = next(n for n in shard["nodes"] if n["role"] == "primary")
    pid = stack.agent_of(old["host_id"]).pidfile(old["id"])
    rc = ClusterClient(stack, cid, pw)
    for i in range(300):
        rc.set(f"s{i}", i)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)

    def write_all(c):
        for i in range(0, 300, 7):
            c.set(f"s{i}", i)
        return True
    wait_until(lambda: rc.all(write_all), 30, "every slot served again", interval=0.1)
    print(f"\ncluster mode kill -9: all slots served after "
          f"{(time.monotonic() - killed_at) * 1000:.0f} ms (node timeout 5000 ms)")
    after = wait_until(lambda: (lambda b: b if [n["role"] for n in b["shards"][1]["nodes"]
                                                if n["id"] == old["id"]] == ["replica"]
                                and all(n["status"] == "running" for n in nodes(b))
                                else None)(clusters.get(stack.api, cid)),
                       30, "the old primary back as a replica")
    # The restarted engine calls itself primary until the cluster's gossip
    # tells it who took its slots, a moment later.
    o = next(n for n in nodes(after) if n["id"] == old["id"])
    wait_until(lambda: engine_role(o["address"], o["port"], pw) == "replica", 10,
               "its engine a replica too")
    wait_until(lambda: rc.all(lambda c: all(c.get(f"s{i}") == str(i) for i in range(300))), 10,
               "every key readable")
    # cairnd's takeover, not the engines' election (which would come only
    # after the 5 s node timeout).
    evs = automatic_failovers(stack.api, cid)
    eq([(e["detail"]["from"], e["detail"]["reason"]) for e in evs],
       [(old["id"], "engine exited")], "one takeover by cairnd")
    # Two primaries of three can vote: FORCE (TAKEOVER only should the
    # vote not be over within 0.5 s, as on a machine too busy to hold it).
    assert evs[0]["detail"]["mode"] in ("FORCE", "TAKEOVER"), evs
    assert not any(e["detail"].get("elected") for e in evs), evs
    # Honest status: degraded while the old node was down, available again
    # (within a monitor tick of the node's report that it runs).
    def health():
        h = [(e["type"], e["detail"]["nodes_down"]) for e in events(stack.api, cid)
             if e["type"] in ("ClusterDegraded", "ClusterRecovered")]
        return h if h[-1:] == [("ClusterRecovered", 0)] else None
    eq(wait_until(health, 5, "ClusterRecovered")[-2:],
       [("ClusterDegraded", 1), ("ClusterRecovered", 0)], "status events")
    eq(clusters.get(stack.api, cid)["status"], "available", "status once whole")

    # The election left two primaries in one AZ; once the cluster has
    # settled, a planned failover puts one primary back in each AZ.
    def balanced():
        b = clusters.get(stack.api, cid)
        azs = [n["az"] for n in nodes(b) if n["role"] == "primary"]
        return b if len(azs) == 3 and len(set(azs)) == 3 and b["current_operation"] is None \
            else None
    wait_until(balanced, 40, "one primary per AZ again", interval=0.2)
    reqs = [e for e in events(stack.api, cid) if e["type"] == "FailoverRequested"]
    eq(len(reqs), 1, f"one rebalancing failover: {reqs}")
    assert reqs[0]["detail"]["rebalance"] is True, reqs
    op = expect.json_ok(stack.api.get(f"/v1/operations/{reqs[0]['operation_id']}"))
    eq((op["kind"], op["status"]), ("failover", "succeeded"), "the rebalancing operation")
    wait_until(lambda: rc.all(lambda c: all(c.get(f"s{i}") == str(i) for i in range(300))), 10,
               "every key readable after the rebalance")
    rc.reset()


def test_whole_az_loss_in_cluster_mode_is_repaired_and_cleaned_up(stack, cleanup):
    """Cluster mode, 3 shards x (1+1) over three AZs: freeze every agent and
    engine of one AZ. The engines elect replicas for the lost primaries,
    cairnd replaces each lost node in the surviving AZs (one shard's nodes
    never share an AZ), the cluster serves every slot; on SIGCONT the stale
    nodes are stopped and their data removed, not re-admitted."""
    cid = "ha-az"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        cid, parameters={"cluster-node-timeout": "2000"}))
    lost_host = stack.host_ids[0]
    agent = stack.agent_of(lost_host)
    lost = [n for n in nodes(body) if n["host_id"] == lost_host]
    assert lost, "the AZ holds nodes of the cluster"
    pids = [agent.pidfile(n["id"]) for n in lost]
    rc = clusters.cluster_client(body, pw)
    for i in range(300):
        rc.set(f"z{i}", i)

    agent.signal(signal.SIGSTOP)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        def repaired():
            b = clusters.get(stack.api, cid)
            ns = nodes(b)
            if any(n["host_id"] == lost_host for n in ns) or len(ns) != 6 or \
                    any(n["status"] != "running" for n in ns):
                return None
            if b["current_operation"] is not None:
                return None
            return b
        after = wait_until(repaired, 90, "every lost node replaced", interval=0.2)
        took = time.monotonic() - frozen_at
        rc.close()
        fresh = ClusterClient(stack, cid, pw)
        wait_until(lambda: fresh.all(lambda c: all(c.get(f"z{i}") == str(i) for i in range(300))),
                   10, "every key readable after the AZ loss")
        for shard in after["shards"]:
            azs = [n["az"] for n in shard["nodes"]]
            eq(len(set(azs)), len(azs), f"shard {shard['id']} spread over AZs: {azs}")
            assert "az-a" not in azs, azs
            eq(sorted(n["role"] for n in shard["nodes"]), ["primary", "replica"], shard["id"])
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    print(f"\nwhole-AZ loss: {len(lost)} nodes replaced, cluster whole after {took:.1f} s")
    evs = events(stack.api, cid)
    types = [e["type"] for e in evs]
    eq(types.count("NodeReplaced"), len(lost),
       f"NodeReplaced events in {[(e['type'], e['message']) for e in evs]}")

    # The stale nodes go away once their agent hears of it: engines stopped,
    # data removed; the cluster does not take them back.
    def cleaned():
        return all(not agent.node_dir(n["id"]).exists() for n in lost) and \
            not any(clusters.agents.alive(pid) for pid in pids)
    wait_until(cleaned, 30, "the stale nodes stopped and removed")
    time.sleep(1)
    final = clusters.get(stack.api, cid)
    eq(len(nodes(final)), 6, "six nodes")
    live = nodes(final)[0]
    with clusters.client(live["address"], live["port"], pw) as c:
        view = c.execute_command("CLUSTER", "NODES")
    view = view.decode() if isinstance(view, bytes) else view
    for n in lost:
        assert f":{n['port']}@" not in view, f"stale node {n['id']} still known:\n{view}"
    eq(len(view.strip().splitlines()), 6, f"the engines know six nodes:\n{view}")
    wait_until(lambda: fresh.all(lambda c: all(c.set(f"z{i}", "after") for i in range(0, 300, 11))),
               10, "writes after the cleanup")
    fresh.reset()


def test_cluster_deleted_while_a_host_is_lost_is_removed_there_on_its_return(stack, cleanup):
    """A 1 + 1 group deleted while its replica's host is frozen: the delete
    does not wait for a lost host, and the node's row goes with the
    cluster; when the host returns, its agent stops the engine and removes
    its data (a tombstone in its desired set), so nothing is left of the
    cluster anywhere."""
    cid = "ha-tomb"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=1))
    rep = next(n for n in nodes(body) if n["role"] == "replica")
    agent = stack.agent_of(rep["host_id"])
    pid = agent.pidfile(rep["id"])
    agent.signal(signal.SIGSTOP)
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: stack.host(rep["host_id"])["status"] == "lost", 15, "the host lost")
        expect.json_ok(stack.api.delete(f"/v1/clusters/{cid}"), 202)
        clusters.wait_gone(stack.api, cid, 60)
        assert agent.node_dir(rep["id"]).exists(), "the lost host kept the node meanwhile"
    finally:
        os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    wait_until(lambda: not agent.node_dir(rep["id"]).exists() and
               not clusters.agents.alive(pid), 30, "the node stopped and removed on return")
    wait_until(lambda: all(n["id"] != rep["id"] for n in stack.host(rep["host_id"])["nodes"]), 10,
               "the host lists no node of the cluster")


def role_once_up(address, port, pw):
    """engine_role, or None while the engine does not accept connections yet
    (restarted: its pid file comes before its listening socket)."""
    try:
        return engine_role(address, port, pw)
    except redis.exceptions.ConnectionError:
        return None


def test_patch_of_automatic_failover_and_multi_az(stack, cleanup):
    """automatic_failover and multi_az change with the rules of a create;
    with automatic failover off a crashed primary is simply restarted, with
    it on again the group fails over."""
    cid = "ha-patch"
    body, pw = create(stack, cleanup, clusters.redis_group(cid))
    eq((body["automatic_failover"], body["multi_az"]), (True, True), "defaults with replicas")
    url = f"/v1/clusters/{cid}"
    expect.problem(stack.api.request("PATCH", url, json={"automatic_failover": False}),
                   "VALIDATION_FAILED", fields=["multi_az"])
    off = expect.json_ok(stack.api.request("PATCH", url, json={"automatic_failover": False,
                                                               "multi_az": False}))
    eq((off["automatic_failover"], off["multi_az"]), (False, False), "both off")
    expect.problem(stack.api.request("PATCH", url, json={"multi_az": True}),
                   "VALIDATION_FAILED", fields=["multi_az"])

    # Off: the agent restarts a crashed primary itself; nothing fails over.
    old = primary_node(off)
    agent = stack.agent_of(old["host_id"])
    time.sleep(0.5)  # the agent has the new desired state (no hold)
    pid = agent.pidfile(old["id"])
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: agent.pidfile(old["id"]) not in (None, pid)
               and role_once_up(old["address"], old["port"], pw) == "primary", 15,
               "the primary restarted in place")
    eq(automatic_failovers(stack.api, cid), [], "no failover with automatic_failover off")
    eq(primary_node(clusters.get(stack.api, cid))["id"], old["id"], "the same primary")

    on = expect.json_ok(stack.api.request("PATCH", url, json={"automatic_failover": True,
                                                              "multi_az": True}))
    eq((on["automatic_failover"], on["multi_az"]), (True, True), "both on again")
    wait_until(lambda: all(n["status"] == "running" for n in nodes(clusters.get(stack.api, cid)))
               and len(clusters.get(stack.api, cid)["endpoints"]["readers"]) == 2, 20,
               "the replicas in sync again")
    time.sleep(0.5)
    os.kill(agent.pidfile(old["id"]), signal.SIGKILL)
    wait_until(lambda: automatic_failovers(stack.api, cid), 15, "an automatic failover")

    # Cluster mode keeps automatic failover on.
    cm = "ha-patch-cm"
    cleanup.append(cm)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(
        cm, num_shards=1)), 202)
    wait_available(stack.api, cm)
    expect.problem(stack.api.request("PATCH", f"/v1/clusters/{cm}",
                                     json={"automatic_failover": False, "multi_az": False}),
                   "VALIDATION_FAILED", fields=["automatic_failover"])



def test_lost_replica_is_replaced_in_disabled_mode(stack, cleanup):
    """Cluster mode disabled: a replica's host freezes. After the heartbeat
    timeout and --replace-after, a new replica is placed on a healthy host,
    follows the primary from its config and syncs; on SIGCONT the stale
    replica is stopped and removed. The primary never changes."""
    cid = "ha-replace"
    body, pw = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1))
    primary = primary_node(body)
    dead = next(n for n in nodes(body) if n["role"] == "replica")
    agent = stack.agent_of(dead["host_id"])
    pid = agent.pidfile(dead["id"])
    with clusters.client(primary["address"], primary["port"], pw) as c:
        for i in range(200):
            c.set(f"r{i}", i)

    agent.signal(signal.SIGSTOP)
    os.kill(pid, signal.SIGSTOP)
    try:
        def replaced():
            b = clusters.get(stack.api, cid)
            ns = nodes(b)
            ok = len(ns) == 2 and dead["id"] not in [n["id"] for n in ns] and \
                all(n["status"] == "running" for n in ns) and len(b["endpoints"]["readers"]) == 1
            return b if ok else None
        after = wait_until(replaced, HEARTBEAT_S + REPLACE_AFTER_S + 30, "the replica replaced",
                           interval=0.2)
    finally:
        os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    eq(primary_node(after)["id"], primary["id"], "the primary did not change")
    new = next(n for n in nodes(after) if n["role"] == "replica")
    assert new["host_id"] != dead["host_id"] and new["host_id"] != primary["host_id"], new
    with clusters.client(new["address"], new["port"], pw) as c:
        eq(c.info("replication")["master_port"], primary["port"], "it follows the primary")
        eq(c.get("r199"), "199", "it has the data")
    types = [e["type"] for e in events(stack.api, cid)]
    assert "NodeReplacing" in types and "NodeReplaced" in types, types
    wait_until(lambda: not agent.node_dir(dead["id"]).exists()
               and not clusters.agents.alive(pid), 30, "the stale replica stopped and removed")
    eq(automatic_failovers(stack.api, cid), [], "no failover")


def kill_with_an_unreadable_aof(agent, node_id):
    """kill -9 the node's engine and make its AOF unreadable before its
    agent restarts it (the agent is stopped meanwhile): every restart exits
    at once, as after a write that hit a full disk."""
    manifests = list(agent.node_dir(node_id).rglob("*.manifest"))
    assert manifests, f"no AOF manifest under {agent.node_dir(node_id)}"
    agent.signal(signal.SIGSTOP)
    try:
        os.kill(agent.pidfile(node_id), signal.SIGKILL)
        for m in manifests:
            m.write_text("this is not an AOF manifest\n")
    finally:
        agent.signal(signal.SIGCONT)


def test_replacement_without_room_waits_and_ends_when_the_node_returns(stack, cleanup):
    """A 1 + 2 group fills all three hosts, so a replica whose host freezes
    has nowhere to be replaced: the replacement waits for room rather than
    failing, and once the host returns, ends cancelled
    (NodeReplacementCancelled) without touching the cluster."""
    cid = "ha-room"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=2))
    rep = next(n for n in nodes(body) if n["role"] == "replica")
    agent = stack.agent_of(rep["host_id"])
    pid = agent.pidfile(rep["id"])

    def replacement():
        ops = [o for o in clusters.operations(stack.api, cid) if o["kind"] == "replace_node"]
        return ops[0] if ops else None
    agent.signal(signal.SIGSTOP)
    os.kill(pid, signal.SIGSTOP)
    try:
        op = wait_until(replacement, HEARTBEAT_S + REPLACE_AFTER_S + 20, "a replacement queued",
                        interval=0.2)
        time.sleep(4)
        op = expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))
        eq((op["status"], op["step_name"]), ("running", "place"), "waiting for room")
    finally:
        os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    op = wait_until(lambda: (o := expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}")))
                    ["status"] != "running" and o, 30, "the replacement to end")
    eq(op["status"], "cancelled", f"the replacement ended: {op}")
    after = wait_available(stack.api, cid)
    eq(sorted(n["id"] for n in nodes(after)), sorted(n["id"] for n in nodes(body)), "the same nodes")
    types = [e["type"] for e in events(stack.api, cid)]
    assert "NodeReplacementCancelled" in types, types
    assert "OperationFailed" not in types and "NodeReplacing" not in types, types


def test_delete_goes_before_a_replacement_waiting_for_room(stack, cleanup):
    """The same full group, a replica's host frozen and its replacement
    waiting for room: a DELETE is not refused as busy -- the replacement
    gives way (cancelled, NodeReplacementCancelled) and the cluster goes."""
    cid = "ha-room-del"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=2))
    rep = next(n for n in nodes(body) if n["role"] == "replica")
    agent = stack.agent_of(rep["host_id"])
    pid = agent.pidfile(rep["id"])

    def waiting():
        ops = [o for o in clusters.operations(stack.api, cid)
               if o["kind"] == "replace_node" and o["status"] == "running"]
        return ops[0] if ops else None
    agent.signal(signal.SIGSTOP)
    os.kill(pid, signal.SIGSTOP)
    try:
        op = wait_until(waiting, HEARTBEAT_S + REPLACE_AFTER_S + 20, "a replacement waiting",
                        interval=0.2)
        r = stack.api.delete(f"/v1/clusters/{cid}")
        if r.status_code == 409:  # asked in the instant it was trying again
            time.sleep(0.5)
            r = stack.api.delete(f"/v1/clusters/{cid}")
        eq(r.status_code, 202, f"DELETE while the replacement waits: {r.text}")
        eq(expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"], "cancelled",
           "the replacement gave way")
        clusters.wait_gone(stack.api, cid, 30)
    finally:
        os.kill(pid, signal.SIGCONT)
        agent.signal(signal.SIGCONT)
    wait_until(lambda: not agent.node_dir(rep["id"]).exists(), 30, "the node removed on return")


def test_replica_that_never_comes_up_again_is_replaced(stack, cleanup):
    """A replica's AOF made unreadable while its engine is down: its agent
    restarts it again and again and it exits at once each time. It never
    served since it went down, so after --replace-after a new replica
    takes its place (the restarts do not reset that clock), and the
    primary never changes."""
    cid = "ha-crashloop"
    body, pw = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1))
    primary = primary_node(body)
    dead = next(n for n in nodes(body) if n["role"] == "replica")
    agent = stack.agent_of(dead["host_id"])
    with clusters.client(primary["address"], primary["port"], pw) as c:
        for i in range(200):
            c.set(f"c{i}", i)
    time.sleep(1.5)  # on the replica's disk too
    kill_with_an_unreadable_aof(agent, dead["id"])
    went_down = time.monotonic()

    def replaced():
        b = clusters.get(stack.api, cid)
        ns = nodes(b)
        ok = len(ns) == 2 and dead["id"] not in [n["id"] for n in ns] and \
            all(n["status"] == "running" for n in ns) and len(b["endpoints"]["readers"]) == 1
        return b if ok else None
    after = wait_until(replaced, REPLACE_AFTER_S + 40, "the crash-looping replica replaced",
                       interval=0.2)
    print(f"\ncrash-looping replica replaced {time.monotonic() - went_down:.1f} s after it went "
          f"down (--replace-after {REPLACE_AFTER_S} s)")
    eq(primary_node(after)["id"], primary["id"], "the primary did not change")
    new = next(n for n in nodes(after) if n["role"] == "replica")
    with clusters.client(new["address"], new["port"], pw) as c:
        wait_until(lambda: c.get("c199") == "199", 20, "the new replica has the data")
    eq(automatic_failovers(stack.api, cid), [], "no failover")


def test_replica_in_full_sync_is_not_offered(stack, cleanup):
    """A replica that restarts needs a full sync; while it runs (made slow
    here with the engines' rdb-key-save-delay) the replica is offered
    neither in endpoints.readers nor by the Sentinel listener, and it is
    offered again once it has the data."""
    cid = "ha-sync"
    body, pw = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0"))
    primary = primary_node(body)
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    with clusters.client(primary["address"], primary["port"], pw) as c:
        pipe = c.pipeline(transaction=False)
        for i in range(5000):
            pipe.set(f"f{i}", i)
        pipe.execute()
    with clusters.admin_client(primary) as c:
        # 1 ms per key: the snapshot for a full sync takes about 5 s.
        c.config_set("rdb-key-save-delay", 1000)
    agent = stack.agent_of(replica["host_id"])
    os.kill(agent.pidfile(replica["id"]), signal.SIGKILL)

    me = (replica["address"], replica["port"])
    sentinel = redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=pw,
                           socket_timeout=2, decode_responses=True)

    def syncing():
        try:
            with clusters.client(*me, pw) as c:
                return c.info("replication").get("master_sync_in_progress") == 1
        except redis.RedisError:
            return False
    wait_until(syncing, 20, "the restarted replica in a full sync")
    time.sleep(2.5)  # its agent's report has caught up
    checked = 0
    while syncing():
        readers = [(r["address"], r["port"]) for r in
                   clusters.get(stack.api, cid)["endpoints"]["readers"]]
        assert me not in readers, f"a syncing replica is offered as a reader: {readers}"
        offered = [(r[r.index("ip") + 1], int(r[r.index("port") + 1])) for r in
                   [list(x) for x in sentinel.execute_command("SENTINEL", "replicas", cid)]]
        assert me not in offered, f"a syncing replica is offered by discovery: {offered}"
        checked += 1
        time.sleep(0.1)
    assert checked >= 5, f"the full sync ended too soon to check ({checked} checks)"
    with clusters.admin_client(primary) as c:
        c.config_set("rdb-key-save-delay", 0)
    wait_until(lambda: me in [(r["address"], r["port"]) for r in
                              clusters.get(stack.api, cid)["endpoints"]["readers"]], 20,
               "the replica offered again once synced")
    with clusters.client(*me, pw) as c:
        eq(c.get("f4999"), "4999", "it has the data")
    sentinel.close()


def test_replica_following_another_node_is_repointed_by_its_agent(stack, cleanup):
    """Disabled mode: a replica's engine told to follow the other replica
    (as a failover whose cairnd died before repointing it would leave it,
    following the old primary) follows the designated primary again within
    seconds, repointed by its own agent (ReplicaRepointed), and has the
    writes made since."""
    cid = "ha-astray"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=2))
    primary = primary_node(body)
    stray, other = [n for n in nodes(body) if n["role"] == "replica"]
    with clusters.admin_client(stray) as c:
        c.execute_command("REPLICAOF", other["address"], other["port"])

    def follows_primary():
        try:
            with clusters.client(stray["address"], stray["port"], pw) as c:
                info = c.info("replication")
        except redis.RedisError:
            return False
        return info.get("master_port") == primary["port"] and \
            info.get("master_link_status") == "up"
    t0 = time.monotonic()
    wait_until(lambda: not follows_primary(), 5, "the replica following the other one")
    wait_until(follows_primary, 25, "the replica following the designated primary again")
    print(f"\nreplica following another node repointed {time.monotonic() - t0:.1f} s later")
    with clusters.client(primary["address"], primary["port"], pw) as c:
        c.set("astray", "back")
    with clusters.client(stray["address"], stray["port"], pw) as c:
        wait_until(lambda: c.get("astray") == "back", 5, "the write replicated to it")
    eq(primary_node(clusters.get(stack.api, cid))["id"], primary["id"], "the same primary")
    repointed = wait_until(lambda: [e for e in events(stack.api, cid)
                                    if e["type"] == "ReplicaRepointed"], 5, "ReplicaRepointed")
    eq((repointed[-1]["detail"]["node"], repointed[-1]["detail"]["repairs"]), (stray["id"], 1),
       "the event's node and count")


@contextlib.contextmanager
def replicas_restarted_while_the_primary_hangs(stack, body, pw, prefix):
    """200 keys prefix<i> written and on every disk; the primary's engine
    stopped (SIGSTOP) and every replica killed, restarted by its agent from
    its own disk and unable to sync from the hung primary. Yields the
    primary's pid, still stopped; SIGCONT after the block (a no-op if the
    block killed it)."""
    old = primary_node(body)
    with clusters.client(old["address"], old["port"], pw) as c:
        for i in range(200):
            c.set(f"{prefix}{i}", i)
    time.sleep(1.5)  # appendfsync everysec: on the disks by now
    pids = {n["id"]: stack.agent_of(n["host_id"]).pidfile(n["id"]) for n in nodes(body)}
    primary_pid = pids.pop(old["id"])
    os.kill(primary_pid, signal.SIGSTOP)
    try:
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
        time.sleep(2.5)  # the replicas restart, and cannot sync from a hung primary
        yield primary_pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(primary_pid, signal.SIGCONT)


def test_whole_group_down_with_no_replica_synced_restarts_the_primary(stack, cleanup):
    """Disabled mode, 1 + 2: every engine of the group killed, the replicas
    first, while the primary hangs (as when its host froze): the replicas
    restart from their own disks and never complete a sync, so none may be
    promoted, and the primary's agent holds its crashed engine down for a
    replica that never comes. cairnd lets it go (PrimaryRestarted): the
    same primary serves again with the data it had, and the replicas sync
    from it."""
    cid = "ha-all-down"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=2))
    old = primary_node(body)
    with replicas_restarted_while_the_primary_hangs(stack, body, pw, "d") as primary_pid:
        os.kill(primary_pid, signal.SIGKILL)
    killed = time.monotonic()

    def serving():
        try:
            with clusters.client(old["address"], old["port"], pw) as c:
                return c.info("replication")["role"] == "master" and c.get("d199") == "199"
        except redis.RedisError:
            return False
    wait_until(serving, 30, "the old primary serving again with its data")
    print(f"\nwhole group down, no replica synced: the primary serves again "
          f"{time.monotonic() - killed:.1f} s after its engine was killed")
    restarted = [e for e in events(stack.api, cid) if e["type"] == "PrimaryRestarted"]
    eq(len(restarted), 1, "PrimaryRestarted events")
    eq(restarted[0]["detail"]["node"], old["id"], "the node restarted")
    eq(automatic_failovers(stack.api, cid), [], "no failover")
    wait_available(stack.api, cid)
    for n in nodes(body):
        if n["id"] == old["id"]:
            continue
        with clusters.client(n["address"], n["port"], pw) as c:
            wait_until(lambda: c.info("replication").get("master_link_status") == "up"
                       and c.get("d199") == "199", 30, f"replica {n['id']} synced")


def test_cluster_mode_primary_that_never_comes_back_is_not_kept_as_a_primary(stack, cleanup):
    """Cluster mode, cairnd down: a primary's engine killed with its AOF
    made unreadable (as a full disk leaves it), so the engines elect its
    replica. When cairnd is back, the shard has one primary in the API --
    the elected one -- and the old node, restarted again and again and
    never coming up, is replaced after --replace-after."""
    cid = "ha-cm-gone"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(cid))
    shard = body["shards"][0]
    old = next(n for n in shard["nodes"] if n["role"] == "primary")
    agent = stack.agent_of(old["host_id"])
    rc = ClusterClient(stack, cid, pw)
    for i in range(300):
        rc.set(f"g{i}", i)
    time.sleep(1.5)  # appendfsync everysec
    stack.kill9_cairnd()
    try:
        kill_with_an_unreadable_aof(agent, old["id"])
        # The engines notice after the node timeout (5 s) and elect.
        time.sleep(8)
    finally:
        stack.restart_cairnd()

    def one_primary_elected():
        b = clusters.get(stack.api, cid)
        ps = [n["id"] for n in b["shards"][0]["nodes"] if n["role"] == "primary"]
        return b if len(ps) == 1 and ps[0] != old["id"] else None
    wait_until(one_primary_elected, 20, "one primary, the elected one, in the API")

    def replaced():
        b = clusters.get(stack.api, cid)
        ns = b["shards"][0]["nodes"]
        ok = len(ns) == 2 and old["id"] not in [n["id"] for n in ns] and \
            all(n["status"] == "running" for n in ns)
        return b if ok else None
    wait_until(replaced, REPLACE_AFTER_S + 60, "the old primary replaced", interval=0.2)
    wait_until(lambda: rc.all(lambda c: all(c.get(f"g{i}") == str(i) for i in range(300))), 20,
               "every key readable")


def test_whole_group_down_and_the_primary_unable_to_restart_promotes_a_replica(stack, cleanup):
    """As above, but the primary's own AOF is unreadable too: released, it
    crashes again at once. Its disk being no better than the replicas', the
    replica with the most of what it loaded from its own is promoted (the
    failover's reason says why), the writes every disk held are served, and
    the broken node is replaced."""
    cid = "ha-all-broken"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, replicas_per_shard=2))
    old = primary_node(body)
    # Killed while it hangs, its AOF broken before its agent may restart it:
    # released first, it could serve the replicas' waiting syncs for a moment
    # and give them the data a promotion needs.
    with replicas_restarted_while_the_primary_hangs(stack, body, pw, "b"):
        kill_with_an_unreadable_aof(stack.agent_of(old["host_id"]), old["id"])
    killed = time.monotonic()

    def promoted():
        b = clusters.get(stack.api, cid)
        p = [n for n in nodes(b) if n["role"] == "primary"]
        return p[0] if p and p[0]["id"] != old["id"] else None
    new = wait_until(promoted, 30, "a replica promoted once the primary cannot restart")
    print(f"\nwhole group down, the primary's AOF broken: a replica promoted "
          f"{time.monotonic() - killed:.1f} s after the primary was killed")
    fo = automatic_failovers(stack.api, cid)
    eq([e["detail"]["reason"] for e in fo], ["engine crashed, and again when restarted"],
       "the failover's reason")
    eq([e["type"] for e in events(stack.api, cid)].count("PrimaryRestarted"), 1,
       "PrimaryRestarted events")
    with clusters.client(new["address"], new["port"], pw) as c:
        wait_until(lambda: c.get("b199") == "199", 10, "the new primary serves the data")

    def replaced():
        b = clusters.get(stack.api, cid)
        ns = nodes(b)
        return b if len(ns) == 3 and old["id"] not in [n["id"] for n in ns] and \
            all(n["status"] == "running" for n in ns) else None
    wait_until(replaced, REPLACE_AFTER_S + 60, "the broken node replaced", interval=0.2)


def test_cluster_mode_without_a_majority_is_forced_to_take_over(stack, cleanup):
    """Cluster mode, 3 shards: freeze two of the three primaries' engines.
    One primary alone cannot vote a replica in, so the engines elect
    nobody; after twice the node timeout cairnd forces the replicas to take
    over (CLUSTER FAILOVER FORCE, then TAKEOVER) and says why. Thawed, the
    old primaries rejoin as replicas."""
    cid = "ha-force"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        cid, parameters={"cluster-node-timeout": "2000"}))
    frozen = [next(n for n in s["nodes"] if n["role"] == "primary") for s in body["shards"][:2]]
    pids = [stack.agent_of(n["host_id"]).pidfile(n["id"]) for n in frozen]
    rc = clusters.cluster_client(body, pw)
    for i in range(300):
        rc.set(f"m{i}", i)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        def forced():
            evs = [e for e in events(stack.api, cid) if e["type"] == "FailoverForced"]
            b = clusters.get(stack.api, cid)
            serving = all(any(n["role"] == "primary" and n["status"] == "running"
                              and n["id"] not in [f["id"] for f in frozen] for n in s["nodes"])
                          for s in b["shards"])
            return evs if len(evs) >= 2 and serving else None
        evs = wait_until(forced, 40, "both shards taken over", interval=0.2)
        took = time.monotonic() - frozen_at
        shards = sorted(e["detail"]["shard"] for e in evs)
        eq(shards[:2], ["0001", "0002"], "the two shards without a primary")
        for e in evs:
            assert e["detail"]["sent"] is True and e["detail"]["down_ms"] >= 4000, e
            assert "twice the 2000 ms node timeout" in e["message"], e["message"]
        rc.close()
        rc = ClusterClient(stack, cid, pw)
        wait_until(lambda: rc.all(lambda c: all(c.get(f"m{i}") == str(i)
                                                for i in range(0, 300, 3))),
                   20, "every slot served with its data", interval=0.1)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    print(f"\nmajority lost: both shards served again after {took:.1f} s "
          f"({', '.join(e['detail']['mode'] for e in evs)})")
    wait_until(lambda: all(engine_role(n["address"], n["port"], pw) == "replica"
                           for n in frozen), 30, "the thawed primaries rejoin as replicas")
    wait_until(lambda: rc.all(lambda c: c.set("after", "thaw")), 10, "a write after the thaw")
    rc.reset()


def test_planned_failover_whose_primary_dies_is_called_off_for_the_automatic_one(stack,
                                                                                 cleanup):
    """Cluster mode, 3 shards: a planned failover of shard 0001 that cannot
    win its vote (the other two primaries frozen) holds the automatic
    failover off the cluster while it runs. Its primary killed meanwhile,
    it is called off at once (NODE_UNREACHABLE) rather than after its
    minute, and the automatic failover serves every shard again."""
    cid = "ha-called-off"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        cid, parameters={"cluster-node-timeout": "2000"}))
    primaries = [next(n for n in s["nodes"] if n["role"] == "primary") for s in body["shards"]]
    rc = clusters.cluster_client(body, pw)
    for i in range(300):
        rc.set(f"c{i}", i)
    rc.close()
    frozen = [stack.agent_of(n["host_id"]).pidfile(n["id"]) for n in primaries[1:]]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        op = expect.json_ok(stack.api.post(f"/v1/clusters/{cid}/failover",
                                           json={"shard_id": "0001"}), 202)

        def switching():
            o = expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))
            assert o["status"] in ("pending", "running"), \
                f"the planned failover ended before its primary was killed: {o}"
            return o if o["status"] == "running" and o["step_name"] == "wait_switch" else None
        wait_until(switching, 10, "the planned failover waiting for its switch", interval=0.1)
        time.sleep(1)  # the vote it cannot win is under way
        os.kill(stack.agent_of(primaries[0]["host_id"]).pidfile(primaries[0]["id"]),
                signal.SIGKILL)
        killed = time.monotonic()

        def ended():
            o = expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))
            return o if o["status"] not in ("pending", "running") else None
        o = wait_until(ended, 15, "the planned failover called off", interval=0.1)
        called_off = time.monotonic() - killed
        eq((o["status"], o["step_name"], o["error"]["code"]),
           ("failed", "wait_switch", "NODE_UNREACHABLE"), "the planned failover")
        assert f"node {primaries[0]['id']} (the primary) crashed" in o["error"]["message"], o

        def serving():
            b = clusters.get(stack.api, cid)
            return all(any(n["role"] == "primary" and n["status"] == "running"
                           and n["id"] not in [p["id"] for p in primaries] for n in s["nodes"])
                       for s in b["shards"])
        wait_until(serving, 30, "every shard served by a former replica", interval=0.2)
        served = time.monotonic() - killed
        rc = ClusterClient(stack, cid, pw)
        wait_until(lambda: rc.all(lambda c: all(c.get(f"c{i}") == str(i)
                                                for i in range(0, 300, 3))),
                   20, "every slot served with its data", interval=0.1)
        rc.reset()
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    print(f"\nplanned failover called off {called_off:.1f} s after its primary died; "
          f"every shard served {served:.1f} s after")


def test_cluster_mode_replica_holding_only_its_own_empty_disk_is_not_forced_in(stack, cleanup):
    """Cluster mode, node timeout 2 s: shard 0001's primary freezes, and
    its replica restarts on an AOF from before its sync (here: none, as
    after a disk that filled once the sync was done) and cannot sync from
    the frozen primary. Past twice the node timeout the shard has no
    primary, but its only replica holds nothing a primary gave it: cairnd
    does not force it in (that would serve the shard empty) and the shard
    waits for its primary, which serves every key once thawed."""
    cid = "ha-unsynced"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        cid, parameters={"cluster-node-timeout": "2000"}))
    shard = body["shards"][0]
    primary = next(n for n in shard["nodes"] if n["role"] == "primary")
    replica = next(n for n in shard["nodes"] if n["role"] == "replica")
    rc = clusters.cluster_client(body, pw)
    for i in range(300):
        rc.set(f"u{i}", i)
    rc.close()
    time.sleep(1.5)  # appendfsync everysec: on the disks by now
    primary_pid = stack.agent_of(primary["host_id"]).pidfile(primary["id"])
    agent = stack.agent_of(replica["host_id"])
    os.kill(primary_pid, signal.SIGSTOP)
    try:
        agent.signal(signal.SIGSTOP)
        try:
            os.kill(agent.pidfile(replica["id"]), signal.SIGKILL)
            aof = [f for f in agent.node_dir(replica["id"]).rglob("*") if f.is_file() and
                   f.parent.name == "appendonlydir"]
            assert aof, f"no AOF under {agent.node_dir(replica['id'])}"
            for f in aof:
                f.unlink()
        finally:
            agent.signal(signal.SIGCONT)

        def restarted_empty():
            try:
                with clusters.admin_client(replica) as c:
                    return c.dbsize() == 0 and c.info("replication")["role"] == "slave"
            except redis.RedisError:
                return False
        wait_until(restarted_empty, 15, "the replica restarted with nothing of its own")
        time.sleep(8)  # four times the node timeout: the shard had long been forced before
        forced = [e for e in events(stack.api, cid) if e["type"] == "FailoverForced"]
        eq(forced, [], "forced failovers while the only replica holds nothing")
        eq(engine_role(replica["address"], replica["port"], pw), "replica", "the empty replica")
    finally:
        os.kill(primary_pid, signal.SIGCONT)
    rc = ClusterClient(stack, cid, pw)
    wait_until(lambda: rc.all(lambda c: all(c.get(f"u{i}") == str(i) for i in range(300))),
               20, "every key served by the thawed primary", interval=0.2)
    rc.reset()
    eq(engine_role(primary["address"], primary["port"], pw), "primary", "the thawed primary")


def test_hung_primary_engine_fails_over_and_is_demoted(stack, cleanup):
    """Disabled mode: the primary's engine hangs (SIGSTOP of the engine
    alone; its agent and host stay healthy). The agent reports it
    unresponsive after a second without PONG, cairnd fails over a second
    later, and when the engine answers again it is demoted at once."""
    cid = "ha-hang"
    before, pw = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0"))
    old = primary_node(before)
    pid = stack.agent_of(old["host_id"]).pidfile(old["id"])
    _, master = sentinel_master(stack, cid, pw)
    w = Writer(lambda: master).start()
    seen = set()
    os.kill(pid, signal.SIGSTOP)
    hung_at = time.monotonic()
    try:
        wait_promoted(stack, cid, pw, old, seen, 15)
        took = time.monotonic() - hung_at
        wait_until(lambda: w.first_ack_after(hung_at + took), 10, "writes to resume")
    finally:
        os.kill(pid, signal.SIGCONT)
    print(f"\nhung primary engine: promoted after {took:.2f} s")
    eq(automatic_failovers(stack.api, cid)[0]["detail"]["reason"], "engine stopped answering",
       "why")

    def demoted():
        check_one_primary(stack, cid, pw, seen)
        return engine_role(old["address"], old["port"], pw) == "replica"
    wait_until(demoted, 15, "the hung primary demoted", interval=0.05)
    w.stop()
    with clusters.client(old["address"], old["port"], pw) as c:
        wait_until(lambda: c.info("replication")["master_link_status"] == "up", 20,
                   "the old primary follows the new one")
        wait_until(lambda: c.get(w.acked[-1][0]) is not None, 10, "it has the newest write")
