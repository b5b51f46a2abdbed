"""test_ha.py -- high availability end to end: real cairnd, PostgreSQL,
three cairn-agents in three AZs and the engines they run, driven through
the REST API, redis-py's Sentinel client (pointed at cairnd's
Sentinel-compatible listener) and redis-py's cluster client.

Faults are real: kill -9 of an engine, SIGSTOP of an agent and its engines
(a frozen VM), SIGCONT. cairnd runs with a 3 s heartbeat timeout so a
frozen host is declared lost quickly; cluster-mode clusters use a 2 s
cluster-node-timeout for the same reason. Everything else is at its
default.

A writer thread plays the application: one SET every 10 ms through the
client, each acknowledged key recorded with the time of its
acknowledgement, so a test can say when writes resumed and check that the
data is where it should be.
"""

import os
import signal
import threading
import time

import redis
from redis.sentinel import Sentinel

import clusters
import expect
from clusters import engine_role, events, nodes, password, wait_available, wait_until
from expect import eq

HEARTBEAT_S = 3
stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "ha", cairnd_args=["--heartbeat-timeout", str(HEARTBEAT_S)])


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
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0")), 202)
    before = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
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
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(cid)), 202)
    before = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
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
        def promoted():
            b = check_one_primary(stack, cid, pw, seen)
            p = [n for n in nodes(b) if n["role"] == "primary"]
            return b if p and p[0]["id"] != old["id"] else None
        after = wait_until(promoted, HEARTBEAT_S + 15, "a replica promoted", interval=0.05)
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


def test_cluster_mode_kill9_primary_serves_all_slots_again(stack, cleanup):
    """Cluster mode: kill -9 of one shard's primary. The agent holds it down,
    the engines elect its replica, every slot is served again, and the old
    node rejoins as a replica once cairnd has seen the election."""
    cid = "ha-cm"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(
        cid, parameters={"cluster-node-timeout": "2000"})), 202)
    body = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
    shard = body["shards"][1]
    old = next(n for n in shard["nodes"] if n["role"] == "primary")
    pid = stack.agent_of(old["host_id"]).pidfile(old["id"])
    rc = clusters.cluster_client(body, pw)
    for i in range(300):
        rc.set(f"s{i}", i)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)

    def all_slots_served():
        try:
            for i in range(0, 300, 7):
                rc.set(f"s{i}", i)
            return True
        except redis.RedisError:
            return False
    wait_until(all_slots_served, 30, "every slot served again", interval=0.1)
    print(f"\ncluster mode kill -9: all slots served after "
          f"{(time.monotonic() - killed_at) * 1000:.0f} ms (node timeout 2000 ms)")
    after = wait_until(lambda: (lambda b: b if [n["role"] for n in b["shards"][1]["nodes"]
                                                if n["id"] == old["id"]] == ["replica"]
                                and all(n["status"] == "running" for n in nodes(b))
                                else None)(clusters.get(stack.api, cid)),
                       30, "the old primary back as a replica")
    o = next(n for n in nodes(after) if n["id"] == old["id"])
    eq(engine_role(o["address"], o["port"], pw), "replica", "its engine says so")
    for i in range(300):
        assert rc.get(f"s{i}") == str(i), i
    rc.close()
    evs = automatic_failovers(stack.api, cid)
    assert any(e["detail"].get("elected") for e in evs), evs
