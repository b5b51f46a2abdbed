"""test_agent.py -- cairn-agent end to end: real cairnd, PostgreSQL, agents and
Valkey/Redis engines on 127.0.0.1.

Each test gets a cairnd on a fresh database with agent registration on, a
3 s heartbeat timeout and syncs held 1.5 s, and starts its own agents, each
acting as a VM: its own name, AZ, data dir and port range, 1 vCPU and 1 GiB
unless a test says otherwise. The tests act as cairnd and a user would: they
change the desired state, then watch GET /v1/hosts, the engines over RESP,
and the processes in /proc.

Until the cluster API exists, desired nodes are written with SQL (agents.py:
add_cluster, add_node), as the scheduler will write them.

At teardown the agents are stopped and then every engine they started is
killed (engines outlive their agent by design); a failed test prints the
agents' logs and their engines' logs.
"""

import os
import pwd
import signal
import subprocess
import stat
import time
from datetime import datetime, timezone

import pytest
import redis

import agents
import expect
import harness
from conftest import _failed, make_instance
from expect import eq

HEARTBEAT_TIMEOUT = 3
SYNC_WAIT_MS = 1500  # cairnd wants at most half the heartbeat timeout
REDIS_FULL = agents.engine_full_version(agents.REDIS_SERVER)    # 7.0.15 on bookworm
VALKEY_FULL = agents.engine_full_version(agents.VALKEY_SERVER)  # 8.0.1 from backports
MIB = 1 << 20


# --------------------------------------------------------------------------
# Fixtures and helpers

class Stack:
    """cairnd (an Instance) plus the agents a test starts on it."""

    def __init__(self, inst):
        self.inst = inst
        self.agents = []
        self._cluster = None

    def agent(self, name="vm-1", az="az-a", start=True, **kw):
        a = agents.Agent(self.inst.url, name, az, **kw)
        self.agents.append(a)
        return a.start() if start else a

    def host(self, host_id):
        return expect.json_ok(self.inst.api.get(f"/v1/hosts/{host_id}"))

    def node(self, host_id, node_id):
        """The node as GET /v1/hosts/{id} shows it, or None."""
        return next((n for n in self.host(host_id)["nodes"] if n["id"] == node_id), None)

    def events(self, host_id):
        body = expect.json_ok(self.inst.api.get(f"/v1/events?host_id={host_id}"))
        return [e["type"] for e in body["events"]]

    def host_id(self, agent, timeout=10):
        """Wait until the agent has registered and its host is healthy."""
        hid = agent.wait_registered(timeout)
        settle(lambda: self.host(hid)["status"], lambda s: s == "healthy", timeout,
               f"host {agent.name} healthy")
        return hid

    def add_node(self, host_id, **kw):
        if self._cluster is None:
            self._cluster = agents.add_cluster(self.inst)
        return agents.add_node(self.inst, host_id, self._cluster, **kw)

    def set_node(self, node_id, assignments):
        agents.write(self.inst, f"UPDATE nodes SET {assignments} WHERE id = '{node_id}'")

    def wait_node(self, host_id, node_id, ok, timeout, what):
        return settle(lambda: self.node(host_id, node_id), lambda n: n is not None and ok(n),
                      timeout, what)

    def wait_serving(self, host_id, node_id, timeout=15, other_than=None, since=None):
        """Wait until cairnd shows the node running with a pid (other than
        `other_than`), reported at or after `since` (epoch seconds) when
        given, and its engine answers PING; return the node. (cairnd keeps
        a node's last report while nobody reports it.)"""
        return self.wait_node(
            host_id, node_id,
            lambda n: n["status"] == "running" and n["pid"] and n["port"]
            and n["pid"] != other_than
            and (since is None or (n["reported_at"] and api_time(n["reported_at"]) >= since))
            and pings(n["port"]),
            timeout, f"node {node_id} running{' with a new pid' if other_than else ''}")

    def teardown(self, failed):
        agents.shut_down(self.agents, failed)


@pytest.fixture
def stack(pg, fresh_db, cairnd_factory, request):
    try:
        agents.require_agent()
    except harness.HarnessError as e:
        pytest.fail(str(e), pytrace=False)
    c = cairnd_factory(fresh_db.url, ["--agent-bootstrap-token", agents.BOOTSTRAP,
                                      "--approve-bootstrap-hosts",
                                      "--heartbeat-timeout", str(HEARTBEAT_TIMEOUT),
                                      "--sync-wait-ms", str(SYNC_WAIT_MS)])
    s = Stack(make_instance(pg, fresh_db, c))
    try:
        yield s
    finally:
        s.teardown(_failed(request.node))


def settle(get, ok, timeout, what, interval=0.02):
    """Poll get() until ok(value); return the value. On timeout the
    assertion shows the last value seen."""
    last = []

    def check():
        last[:] = [get()]
        return ok(last[0])
    try:
        harness.wait_until(check, timeout, interval=interval, what=what)
    except harness.HarnessError as e:
        raise AssertionError(f"{e}; last seen: {last[0] if last else None!r}") from None
    return last[0]


def client(port, node_id=None):
    """A connection to the engine on port: the tenant's (the default user,
    which has no password here), or with node_id, Cairn's own login."""
    user, pw = agents.engine_login(node_id) if node_id else (None, None)
    return redis.Redis(host="127.0.0.1", port=port, username=user, password=pw,
                       socket_timeout=2, socket_connect_timeout=1, decode_responses=True)


def pings(port):
    """Whether an engine answers PING on port right now."""
    try:
        with client(port) as c:
            return c.ping()
    except redis.RedisError:
        return False


def api_time(ts):
    """Seconds since the epoch of an API timestamp (2026-...T...123456Z)."""
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def agent_said(agent, msg, **fields):
    """The records of the agent's current run with this msg and fields."""
    return [r for r in agent.messages() if r.get("msg") == msg
            and all(r.get(k) == str(v) for k, v in fields.items())]


# --------------------------------------------------------------------------
# Registration

def test_registers_once_and_keeps_its_identity_across_restarts(stack):
    a = stack.agent("vm-1", "az-a", memory_mib=1536, vcpus=2)
    hid = stack.host_id(a)
    ident = a.identity()
    mode = stat.S_IMODE(os.stat(a.data_dir / "identity.json").st_mode)
    eq(oct(mode), oct(0o600), "identity.json mode")
    assert ident["credential"].startswith("cairn_agent_"), ident
    host = stack.host(hid)
    eq((host["name"], host["az"], host["address"], host["capacity"], host["ports"],
        host["agent_version"], host["status"]),
       ("vm-1", "az-a", "127.0.0.1", {"vcpus": 2, "memory_mib": 1536},
        {"min": a.ports[0], "max": a.ports[1]}, "0.1.0", "healthy"), "registered host")
    nid = stack.add_node(hid)
    pid = stack.wait_serving(hid, nid)["pid"]

    # SIGTERM: the agent exits at once and leaves its engine serving.
    eq(a.stop(), 0, "agent exit code after SIGTERM")
    assert agents.alive(pid) and pings(stack.node(hid, nid)["port"]), \
        f"engine pid {pid} must outlive its agent (alive={agents.alive(pid)})"
    seen = stack.host(hid)["last_seen_at"]

    # Restarted on the same data dir: same host, same credential, no new
    # registration, the engine adopted rather than restarted.
    restarted = time.time()
    a.start()
    settle(lambda: stack.host(hid), lambda h: h["last_seen_at"] != seen and h["status"] == "healthy",
           10, "the restarted agent to sync")
    eq(a.identity(), ident, "identity.json after a restart")
    eq(agent_said(a, "registered"), [], "registrations logged by the restarted agent")
    eq(stack.events(hid), ["HostRegistered"], "host events")
    node = stack.wait_serving(hid, nid, since=restarted)
    eq((node["pid"], node["restarts"]), (pid, 0), "engine pid and restarts after an agent restart")
    settle(lambda: agent_said(a, "engine adopted", node=nid, pid=pid), bool, 5,
           "the restarted agent to log the adoption")

    # A data dir without identity.json (a rebuilt VM of the same name) is
    # refused the name with the bootstrap token: whoever holds that token
    # cannot take a host, and its passwords, over.
    a.stop()
    (a.data_dir / "identity.json").unlink()
    a.start()
    settle(lambda: agent_said(a, "cairnd refused registration; check the join or bootstrap token",
                              status=409), bool, 10, "the registration refused")
    eq(a.identity(), None, "identity.json after a refused registration")
    eq(stack.events(hid), ["HostRegistered"], "host events after a refused registration")

    # The operator gives the name to the rebuilt VM with a join token: the
    # host is taken over (same id, a new credential) and its engine kept.
    a.stop()
    token = expect.json_ok(stack.inst.api.post("/v1/host-join-tokens",
                                               json={"host_name": "vm-1"}), 201)["token"]
    a.env = {"CAIRN_AGENT_JOIN_TOKEN": token}
    restarted = time.time()
    a.start()
    settle(lambda: a.identity(), lambda i: i is not None and i["credential"] != ident["credential"],
           10, "a new registration")
    eq(a.identity()["host_id"], hid, "host id after registering again")
    settle(lambda: stack.events(hid), lambda ev: ev == ["HostRegistered", "HostReregistered"],
           5, "host events after registering again")
    eq(stack.wait_serving(hid, nid, since=restarted)["pid"], pid,
       "engine pid after registering again")


def test_three_agents_show_up_in_three_azs(stack):
    started = [stack.agent(f"vm-{az[-1]}", az) for az in ("az-a", "az-b", "az-c")]
    hids = [stack.host_id(a) for a in started]
    listed = expect.json_ok(stack.inst.api.get("/v1/hosts"))["hosts"]
    eq([(h["id"], h["name"], h["az"], h["status"]) for h in listed],
       [(hid, a.name, a.az, "healthy") for hid, a in zip(hids, started)], "GET /v1/hosts")
    for h, a in zip(listed, started):
        eq([(e["engine"], e["version"], e["full_version"]) for e in h["engines"]],
           [("redis", "7.0", REDIS_FULL), ("valkey", "8.0", VALKEY_FULL)], f"engines of {a.name}")
        eq([os.path.realpath(e["path"]) for e in h["engines"]],
           [os.path.realpath(agents.REDIS_SERVER), os.path.realpath(agents.VALKEY_SERVER)],
           f"engine paths of {a.name}")
        eq((h["capacity"], h["ports"], h["allocated"]),
           ({"vcpus": 1, "memory_mib": 1024}, {"min": a.ports[0], "max": a.ports[1]},
            {"vcpus": 0, "memory_mib": 0, "nodes": 0}), f"capacity of {a.name}")
    versions = expect.json_ok(stack.inst.api.get("/v1/engine-versions"))["engine_versions"]
    avail = {(v["engine"], v["version"]): v["hosts_available"] for v in versions}
    eq((avail[("redis", "7.0")], avail[("valkey", "8.0")]), (3, 3), "hosts_available")


# --------------------------------------------------------------------------
# Supervision

def test_desired_engine_is_started_and_answers_ping(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    nid = stack.add_node(hid, engine="valkey", version="8.0")
    stack.wait_serving(hid, nid, timeout=10)
    # Its role comes from a reading taken a second into its run (an engine
    # says "master" before its replication is set up).
    node = stack.wait_node(hid, nid, lambda n: n["role"] is not None, 5, "the node's role")
    pid, port = node["pid"], node["port"]
    eq(port, a.ports[0], "the lowest port of the agent's range")
    eq((node["status"], node["running_version"], node["role"], node["restarts"],
        node["desired_status"]), ("running", VALKEY_FULL, "primary", 0, "running"), "reported node")
    with client(port, nid) as c:
        info = c.info("server")
        eq((info["process_id"], info["tcp_port"], info.get("valkey_version")),
           (pid, port, VALKEY_FULL), "INFO server")
        eq(c.config_get("maxmemory")["maxmemory"], str(512 * MIB * 3 // 4),
           "maxmemory of cache.t3.micro less 25 %")
        c.set("hello", "world")
        eq(c.get("hello"), "world", "GET after SET")

    # The data dir layout, and the process is what the pidfile says.
    d = a.node_dir(nid)
    for name in ("engine.conf", "engine.pid", "engine.log", "data"):
        assert (d / name).exists(), f"{d / name} missing; node dir has {sorted(os.listdir(d))}"
    eq(a.pidfile(nid), pid, "engine.pid")
    eq(agents.proc_cwd(pid), os.path.realpath(d / "data"), "engine working directory")
    eq(agents.proc_exe(pid), os.path.realpath(agents.VALKEY_SERVER), "engine executable")
    eq(os.getpgid(pid), pid, "the engine leads its own process group")
    assert f"port {port}" in (d / "engine.conf").read_text(), (d / "engine.conf").read_text()


def test_killed_engines_follow_their_restart_policy(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    always = stack.add_node(hid, restart_policy="always")
    never = stack.add_node(hid, restart_policy="never")
    on_failure = stack.add_node(hid, restart_policy="on-failure")
    clean = stack.add_node(hid, restart_policy="on-failure", engine="redis", version="7.0")
    before = {n: stack.wait_serving(hid, n) for n in (always, never, on_failure, clean)}

    t0 = time.monotonic()
    for n in (always, never, on_failure):
        os.kill(before[n]["pid"], signal.SIGKILL)
    with client(before[clean]["port"], clean) as c:
        c.shutdown(nosave=True)  # exits 0: not a failure

    # Reported at once, not with the next periodic sync (2 s).
    crashed = stack.wait_node(hid, never, lambda n: n["status"] == "crashed", 5,
                              "the never-restarted node reported crashed")
    took = time.monotonic() - t0
    assert took < 1.0, f"crash reported after {took:.3f}s, expected < 1 s"
    for n in (always, on_failure):
        node = stack.wait_serving(hid, n, timeout=5, other_than=before[n]["pid"])
        eq((node["port"], node["restarts"]), (before[n]["port"], 1),
           f"{n} restarted on its port, counted")
        assert agents.alive(node["pid"]) and not agents.alive(before[n]["pid"]), (before[n], node)
    stopped = stack.wait_node(hid, clean, lambda n: n["status"] == "stopped", 5,
                              "a clean exit under on-failure reported stopped")
    # The restarts above came after their 100 ms backoff; the other two
    # would have been restarted by now as well had the policy allowed it.
    for n, node, state in ((never, crashed, "crashed"), (clean, stopped, "stopped")):
        now = stack.node(hid, n)
        eq((now["status"], now["pid"], now["restarts"]), (state, None, 0),
           f"{n} under its policy")
        assert not pings(before[n]["port"]), f"port {before[n]['port']} must stay closed"
    exits = agent_said(a, "engine exited", node=always, pid=before[always]["pid"])
    eq([r.get("how") for r in exits], ["signal 9"], "logged exit of the killed engine")
    # The restarted ones went through crashed too (too briefly to catch in
    # the API): each state change is what triggers an immediate report.
    for n in (always, on_failure):
        assert agent_said(a, "engine state", node=n, to="crashed"), a.log.text(a.start_offset)


def test_killed_agent_leaves_engines_serving_and_the_next_adopts_them(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    nodes = [stack.add_node(hid, engine="redis", version="7.0"), stack.add_node(hid)]
    before = {n: stack.wait_serving(hid, n) for n in nodes}
    for n in nodes:
        with client(before[n]["port"]) as c:
            c.set("owner", n)

    a.kill9()
    # The engines serve all along, while the host goes lost.
    def serving_while_lost():
        for n in nodes:
            with client(before[n]["port"]) as c:
                eq(c.get("owner"), n, f"key on {n} after the agent died")
        return stack.host(hid)["status"] == "lost"
    harness.wait_until(serving_while_lost, HEARTBEAT_TIMEOUT + 4, interval=0.2,
                       what="host lost with its engines serving")
    for n in nodes:
        assert agents.alive(before[n]["pid"]), f"engine {before[n]['pid']} died with its agent"

    restarted = time.time()
    a.start()  # same data dir
    for n in nodes:
        node = stack.wait_serving(hid, n, timeout=10, since=restarted)
        eq((node["pid"], node["restarts"]), (before[n]["pid"], 0), f"{n} adopted, not restarted")
        assert agent_said(a, "engine adopted", node=n, pid=node["pid"]), a.log.text(a.start_offset)
    eq(agent_said(a, "engine started"), [], "engines started by the new agent")
    settle(lambda: stack.host(hid)["status"], lambda s: s == "healthy", 5, "host healthy again")

    # The new agent supervises what it adopted: not its child, still watched.
    adopted = before[nodes[1]]
    os.kill(adopted["pid"], signal.SIGKILL)
    node = stack.wait_serving(hid, nodes[1], timeout=5, other_than=adopted["pid"])
    eq((node["port"], node["restarts"]), (adopted["port"], 1), "adopted engine restarted")
    with client(node["port"]) as c:
        eq(c.get("owner"), nodes[1], "data after the restart")


def test_stopped_agent_makes_its_host_lost_until_it_continues(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    nid = stack.add_node(hid)
    pid = stack.wait_serving(hid, nid)["pid"]

    a.signal(signal.SIGSTOP)
    try:
        lost = settle(lambda: stack.host(hid), lambda h: h["status"] == "lost",
                      HEARTBEAT_TIMEOUT + 4, "host lost", interval=0.05)
        after = time.time() - api_time(lost["last_seen_at"])
        # The monitor runs once a second: lost between timeout and timeout + 1 s
        # after the last heartbeat (plus this test's polling).
        assert HEARTBEAT_TIMEOUT <= after <= HEARTBEAT_TIMEOUT + 1.5, \
            f"host seen lost {after:.2f}s after its last heartbeat, timeout {HEARTBEAT_TIMEOUT}s"
        assert pings(stack.node(hid, nid)["port"]), "the engine serves while its agent is stopped"
    finally:
        a.signal(signal.SIGCONT)
    t0 = time.monotonic()
    settle(lambda: stack.host(hid)["status"], lambda s: s == "healthy", 5, "host healthy again")
    took = time.monotonic() - t0
    assert took < 2.0, f"healthy {took:.2f}s after SIGCONT, expected < 2 s"
    eq(stack.events(hid), ["HostRegistered", "HostLost", "HostRecovered"], "host events")
    eq(stack.wait_serving(hid, nid)["pid"], pid, "engine pid across the pause")


# --------------------------------------------------------------------------
# Desired state: stop, delete, upgrade

def test_stop_keeps_the_data_and_delete_removes_it(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    nid = stack.add_node(hid)
    node = stack.wait_serving(hid, nid)
    port, pid = node["port"], node["pid"]
    with client(port) as c:
        c.set("kept", "yes")

    stack.set_node(nid, "desired_state = 'stopped'")
    stack.wait_node(hid, nid, lambda n: n["status"] == "stopped" and n["pid"] is None, 15,
                    "node stopped")
    harness.wait_until(lambda: not agents.alive(pid), 5, what=f"engine {pid} to exit")
    assert not pings(port), f"port {port} still answers after stop"
    d = a.node_dir(nid)
    assert (d / "data").is_dir() and os.listdir(d / "data"), \
        f"data of a stopped node must stay: {sorted(os.listdir(d)) if d.exists() else 'no dir'}"
    assert not (d / "engine.pid").exists(), "engine.pid of a stopped engine"

    stack.set_node(nid, "desired_state = 'running'")
    node = stack.wait_serving(hid, nid, other_than=pid)
    eq(node["port"], port, "port after starting again")
    with client(port) as c:
        eq(c.get("kept"), "yes", "key written before the stop")

    stack.set_node(nid, "desired_state = 'deleted'")
    settle(lambda: stack.inst.psql(f"SELECT count(*) FROM nodes WHERE id = '{nid}'").strip(),
           lambda count: count == "0", 15, "the deleted node purged from the database")
    assert not d.exists(), f"{d} must be removed: {sorted(os.listdir(d))}"
    assert not agents.alive(node["pid"]) and not pings(port), "engine of a deleted node"
    eq(stack.host(hid)["nodes"], [], "nodes of the host")


def proc_ids(pid):
    """(real uid, real gid) of a process, from /proc/PID/status."""
    ids = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("Uid:", "Gid:")):
                ids[line[:3]] = int(line.split()[1])
    return ids["Uid"], ids["Gid"]


def test_engines_never_run_as_root(stack):
    if os.geteuid() != 0:
        pytest.skip("the agent runs as this user, and so do its engines: nothing to drop")
    engine_user = pwd.getpwnam("cairn-engine")
    a = stack.agent("vm-1", "az-a")
    hid = stack.host_id(a)
    nid = stack.add_node(hid)
    pid = stack.wait_serving(hid, nid)["pid"]
    eq(proc_ids(pid), (engine_user.pw_uid, engine_user.pw_gid), "the engine's uid and gid")
    eq(proc_ids(a.pid)[0], 0, "the agent's uid")
    node_dir = a.node_dir(nid)

    def owner_mode(path):
        st = os.lstat(path)
        return st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode))

    gid = engine_user.pw_gid
    eq(owner_mode(node_dir), (0, gid, "0o750"), "the node's directory")
    eq(owner_mode(node_dir / "engine.conf"), (0, gid, "0o640"), "engine.conf")
    eq(owner_mode(node_dir / "node.json")[::2], (0, "0o600"), "node.json, the agent's login")
    eq(owner_mode(node_dir / "data")[:2], (engine_user.pw_uid, gid), "the data directory")
    # The engine writes where its data is, and nowhere in the agent's files.
    user, password = agents.engine_login(nid)
    r = redis.Redis(port=stack.node(hid, nid)["port"], username=user, password=password,
                    socket_timeout=5)
    r.set("k", "v")
    r.save()
    eq(os.stat(node_dir / "data" / "dump.rdb").st_uid, engine_user.pw_uid, "dump.rdb's owner")
    # An agent will not be told to run them as root.
    out = subprocess.run([str(agents.AGENT), "--control-plane", "http://127.0.0.1:1",
                          "--bootstrap-token", "x" * 20, "--az", "az-a", "--ports", "7000-7001",
                          "--data-dir", str(a.dir / "other"), "--engine-user", "root"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode != 0 and "engines are not run as root" in out.stderr, out


def test_version_change_restarts_on_the_other_binary_with_the_data(stack):
    a = stack.agent()
    hid = stack.host_id(a)
    nid = stack.add_node(hid, engine="redis", version="7.0")
    node = stack.wait_serving(hid, nid)
    port, pid = node["port"], node["pid"]
    eq(node["running_version"], REDIS_FULL, "running version before")
    with client(port) as c:
        info = c.info("server")
        eq((info["redis_version"], "valkey_version" in info), (REDIS_FULL, False), "INFO before")
        with c.pipeline(transaction=False) as p:
            for i in range(500):
                p.set(f"k:{i}", f"v:{i}")
            p.hset("h", mapping={"a": "1", "b": "2"})
            p.rpush("l", "x", "y", "z")
            p.set("ttl", "t", ex=3600)
            p.execute()
        eq(c.dbsize(), 503, "keys written on redis")

    stack.set_node(nid, "engine = 'valkey', engine_version = '8.0'")
    node = stack.wait_serving(hid, nid, timeout=20, other_than=pid)
    eq((node["port"], node["running_version"]), (port, VALKEY_FULL), "same port, valkey now")
    new = node["pid"]
    eq(agents.proc_exe(new), os.path.realpath(agents.VALKEY_SERVER), "engine executable")
    assert not agents.alive(pid), f"the redis process {pid} must be gone"
    with client(port) as c:
        info = c.info("server")
        eq((info.get("server_name"), info.get("valkey_version"), info["process_id"],
            info["tcp_port"]), ("valkey", VALKEY_FULL, new, port), "INFO after")
        eq(c.dbsize(), 503, "keys on valkey")
        eq([c.get(f"k:{i}") for i in (0, 250, 499)], ["v:0", "v:250", "v:499"], "strings")
        eq((c.hgetall("h"), c.lrange("l", 0, -1)), ({"a": "1", "b": "2"}, ["x", "y", "z"]),
           "hash and list")
        assert 0 < c.ttl("ttl") <= 3600, f"ttl: {c.ttl('ttl')}"
    assert agent_said(a, "engine changes version or port; restarting it", node=nid), \
        a.log.text(a.start_offset)
