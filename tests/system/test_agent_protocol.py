"""test_agent_protocol.py -- cairnd's side of the agent protocol, driven over
HTTP exactly as cairn-agent drives it: registration with the bootstrap token,
the credential kinds kept apart, long-poll syncs woken by desired-state
changes, port assignment, reports, deleted-node purge, and the host monitor.

Until the cluster API exists, desired nodes are written with SQL, as the
scheduler will write them.
"""

import re
import threading
import time

import pytest

import expect
import harness
from agents import add_cluster, add_node
from expect import eq

BOOTSTRAP = "bootstrap-secret-for-tests-0123"
CRED_RE = re.compile(r"^cairn_agent_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")
ENGINES = [
    {"engine": "redis", "version": "7.0.15", "line": "7.0", "path": "/usr/bin/redis-server"},
    {"engine": "valkey", "version": "8.0.1", "line": "8.0", "path": "/usr/bin/valkey-server"},
]


def registration(name="vm-a1", az="az-a", ports=(7000, 7099), engines=ENGINES, **extra):
    body = {"name": name, "az": az, "address": "127.0.0.1", "vcpus": 2, "memory_mib": 8192,
            "ports": {"min": ports[0], "max": ports[1]}, "engines": engines,
            "agent_version": "0.1.0"}
    body.update(extra)
    return body


@pytest.fixture
def agents(pg, fresh_db, cairnd_factory):
    """cairnd with agent registration on and a 3 s heartbeat timeout."""
    c = cairnd_factory(fresh_db.url, ["--agent-bootstrap-token", BOOTSTRAP,
                                      "--approve-bootstrap-hosts", "--heartbeat-timeout", "3"])
    from conftest import make_instance
    return make_instance(pg, fresh_db, c)


def register(inst, **kw):
    r = inst.anon.post("/v1/agent/register", json=registration(**kw),
                       headers={"Authorization": f"Bearer {BOOTSTRAP}"})
    return expect.json_ok(r)


def sync(inst, credential, generation=0, wait_ms=0, nodes=(), engines=ENGINES, timeout=15):
    body = {"generation": generation, "wait_ms": wait_ms, "engines": list(engines),
            "nodes": list(nodes)}
    return inst.anon.post("/v1/agent/sync", json=body, timeout=timeout,
                          headers={"Authorization": f"Bearer {credential}"})


def test_register_needs_the_bootstrap_token(agents):
    for header in ({}, {"Authorization": "Bearer wrong-bootstrap-token-000000"},
                   {"Authorization": f"Bearer {agents.admin_token}"}):
        r = agents.anon.post("/v1/agent/register", json=registration(), headers=header)
        expect.problem(r, "UNAUTHENTICATED")
    reg = register(agents)
    eq(set(reg), {"host_id", "credential", "status", "sync_wait_ms", "heartbeat_timeout_s"},
       "members")
    eq(reg["status"], "healthy", "a host of a cairnd with --approve-bootstrap-hosts")
    assert expect.UUID_RE.match(reg["host_id"]), reg
    assert CRED_RE.match(reg["credential"]), reg["credential"]
    # A 3 s heartbeat timeout halves the default 2 s hold to 1.5 s.
    eq((reg["sync_wait_ms"], reg["heartbeat_timeout_s"]), (1500, 3), "timings")


def test_registration_disabled_without_bootstrap_token(cairn):
    r = cairn.anon.post("/v1/agent/register", json=registration(),
                        headers={"Authorization": f"Bearer {BOOTSTRAP}"})
    body = expect.problem(r, "FORBIDDEN")
    assert "--agent-bootstrap-token" in body["detail"], body


def test_credential_kinds_never_mix(agents):
    reg = register(agents)
    r = agents.api.post("/v1/agent/sync", json={"generation": 0, "engines": [], "nodes": []})
    body = expect.problem(r, "FORBIDDEN")
    assert "agent credential" in body["detail"], body
    for path in ("/v1/node-types", "/v1/hosts", f"/v1/hosts/{reg['host_id']}"):
        r = agents.anon.get(path, headers={"Authorization": f"Bearer {reg['credential']}"})
        expect.problem(r, "FORBIDDEN")
    expect.problem(agents.read.get("/v1/hosts"), "FORBIDDEN")


@pytest.mark.parametrize("body,fields", [
    (registration(ports=(7100, 7000)), {"ports"}),
    (registration(colour="blue"), {"colour"}),
    (registration(name="has space", vcpus=0), {"name", "vcpus"}),
    (registration(engines=[{"engine": "memcached", "version": "1", "line": "1", "path": "/x"}]),
     {"engines[0].engine"}),
])
def test_register_validation(agents, body, fields):
    r = agents.anon.post("/v1/agent/register", json=body,
                         headers={"Authorization": f"Bearer {BOOTSTRAP}"})
    expect.problem(r, "VALIDATION_FAILED", fields=fields)


def test_sync_validation(agents):
    reg = register(agents)
    r = sync(agents, reg["credential"], nodes=[{"node_id": "not-a-uuid", "status": "asleep"}])
    expect.problem(r, "VALIDATION_FAILED", fields={"nodes[0].node_id", "nodes[0].status"})


def test_long_poll_holds_then_wakes_on_change(agents):
    reg = register(agents)
    cred, host = reg["credential"], reg["host_id"]
    gen = expect.json_ok(sync(agents, cred))["generation"]

    t0 = time.monotonic()
    held = expect.json_ok(sync(agents, cred, generation=gen, wait_ms=1000))
    waited = time.monotonic() - t0
    assert 0.9 <= waited < 2.0, f"an unchanged long-poll is held for wait_ms: {waited:.3f}s"
    eq(held["generation"], gen, "heartbeat answer keeps the generation")

    cluster = add_cluster(agents)
    gen = expect.json_ok(sync(agents, cred))["generation"]
    result = {}

    def poll():
        start = time.monotonic()
        result["resp"] = sync(agents, cred, generation=gen, wait_ms=8000)
        result["at"] = time.monotonic()
        result["start"] = start

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.4)  # the poll is parked by now
    changed = time.monotonic()
    nid = add_node(agents, host, cluster)
    t.join(10)
    body = expect.json_ok(result["resp"])
    latency = result["at"] - changed
    assert latency < 0.5, f"desired change reached the long-poll after {latency:.3f}s"
    assert body["generation"] > gen, body
    eq([n["node_id"] for n in body["nodes"]], [nid], "the new node is in the desired set")
    node = body["nodes"][0]
    eq((node["engine"], node["version"], node["port"], node["run"], node["deleted"],
        node["restart_policy"]), ("valkey", "8.0", 7000, True, False, "always"), "desired node")
    # Cairn's own engine users' passwords: derived per cluster, never the
    # tenant's (which this cluster, made in SQL, has none of).
    config = dict(node["config"])
    admin, repl = config.pop("admin_password"), config.pop("replication_password")
    assert re.fullmatch(r"[0-9a-f]{64}", admin) and re.fullmatch(r"[0-9a-f]{64}", repl), config
    assert admin != repl
    eq(config, {"memory_mib": 512, "reserved_memory_percent": 25,
                        "maxmemory_policy": "volatile-lru", "appendonly": True,
                        "cluster_enabled": False, "cluster_node_timeout_ms": 5000,
                        "tls": None, "users": [], "replicaof": None, "hold_after_crash": False,
                        "password": None, "parameters": {}}, "engine config")


def test_ports_are_the_lowest_free_in_range(agents):
    reg = register(agents, ports=(7200, 7202))
    cluster = add_cluster(agents)
    fixed = add_node(agents, reg["host_id"], cluster, port=7201)
    a = add_node(agents, reg["host_id"], cluster)
    b = add_node(agents, reg["host_id"], cluster)
    c = add_node(agents, reg["host_id"], cluster)  # the range is full: no port yet
    desired = expect.json_ok(sync(agents, reg["credential"]))
    eq({n["node_id"]: n["port"] for n in desired["nodes"]},
       {a: 7200, fixed: 7201, b: 7202}, "ports")
    agents.psql(f"DELETE FROM nodes WHERE id = '{fixed}'")
    desired = expect.json_ok(sync(agents, reg["credential"]))
    eq({n["node_id"]: n["port"] for n in desired["nodes"]}, {a: 7200, c: 7201, b: 7202},
       "a freed port goes to the waiting node")


def test_report_is_recorded_and_deleted_nodes_purged(agents):
    reg = register(agents)
    cred, host = reg["credential"], reg["host_id"]
    cluster = add_cluster(agents)
    nid = add_node(agents, host, cluster)
    desired = expect.json_ok(sync(agents, cred))
    report = {"node_id": nid, "pid": 4242, "status": "running", "port": 7000, "role": "primary",
              "engine": "valkey", "version": "8.0.1", "replication_offset": 99,
              "master_link_status": None, "sync_in_progress": False, "loading": False,
              "restarts": 2}
    expect.json_ok(sync(agents, cred, generation=desired["generation"], nodes=[report]))
    node = expect.json_ok(agents.api.get(f"/v1/hosts/{host}"))["nodes"][0]
    eq((node["id"], node["status"], node["pid"], node["role"], node["running_version"],
        node["replication_offset"], node["restarts"]),
       (nid, "running", 4242, "primary", "8.0.1", 99, 2), "recorded report")

    agents.psql(f"UPDATE nodes SET desired_state = 'deleted' WHERE id = '{nid}'")
    desired = expect.json_ok(sync(agents, cred, generation=desired["generation"], nodes=[report]))
    eq([(n["node_id"], n["deleted"], n["run"]) for n in desired["nodes"]], [(nid, True, False)],
       "a deleted node is announced while the agent still reports it")
    desired = expect.json_ok(sync(agents, cred, generation=desired["generation"], nodes=[]))
    eq(desired["nodes"], [], "gone once the agent stops reporting it")
    eq(agents.psql(f"SELECT count(*) FROM nodes WHERE id = '{nid}'").strip(), "0", "row purged")


def test_silent_host_is_lost_then_recovers(agents):
    reg = register(agents)
    host = reg["host_id"]
    t0 = time.monotonic()
    harness.wait_until(
        lambda: expect.json_ok(agents.api.get(f"/v1/hosts/{host}"))["status"] == "lost",
        timeout=8, what="host marked lost")
    elapsed = time.monotonic() - t0
    assert 2.5 <= elapsed <= 5.5, f"lost after {elapsed:.1f}s with a 3 s heartbeat timeout"
    lost = expect.json_ok(agents.api.get("/v1/hosts?status=lost"))["hosts"]
    eq([h["id"] for h in lost], [host], "status filter")
    ev = expect.json_ok(agents.api.get("/v1/engine-versions?engine=valkey"))["engine_versions"]
    eq({e["version"]: e["hosts_available"] for e in ev}["8.0"], 0, "a lost host offers nothing")

    expect.json_ok(sync(agents, reg["credential"]))
    eq(expect.json_ok(agents.api.get(f"/v1/hosts/{host}"))["status"], "healthy", "recovered")
    types = [e["type"] for e in expect.json_ok(
        agents.api.get(f"/v1/events?host_id={host}"))["events"]]
    eq(types, ["HostRegistered", "HostLost", "HostRecovered"], "events")


def test_hosts_listing_and_engine_availability(agents):
    regs = [register(agents, name=f"vm-{az}", az=az) for az in ("az-a", "az-b", "az-c")]
    register(agents, name="vm-old", az="az-a", engines=ENGINES[:1])
    body = expect.json_ok(agents.api.get("/v1/hosts?page_size=2"))
    eq([h["name"] for h in body["hosts"]], ["vm-az-a", "vm-az-b"], "first page, by name")
    rest = expect.json_ok(agents.api.get(f"/v1/hosts?page_token={body['next_page_token']}"))
    eq([h["name"] for h in rest["hosts"]], ["vm-az-c", "vm-old"], "second page")
    in_a = expect.json_ok(agents.api.get("/v1/hosts?az=az-a"))["hosts"]
    eq(sorted(h["name"] for h in in_a), ["vm-az-a", "vm-old"], "az filter")
    h = expect.json_ok(agents.api.get(f"/v1/hosts/{regs[0]['host_id']}"))
    eq((h["capacity"], h["allocated"], h["ports"], h["status"]),
       ({"vcpus": 2, "memory_mib": 8192}, {"vcpus": 0, "memory_mib": 0, "nodes": 0},
        {"min": 7000, "max": 7099}, "healthy"), "host resource")
    eq([(e["engine"], e["version"], e["full_version"]) for e in h["engines"]],
       [("redis", "7.0", "7.0.15"), ("valkey", "8.0", "8.0.1")], "engines")
    ev = expect.json_ok(agents.api.get("/v1/engine-versions"))["engine_versions"]
    avail = {(e["engine"], e["version"]): (e["hosts_available"], e["schedulable"]) for e in ev}
    eq(avail[("redis", "7.0")], (4, True), "redis 7.0 on all four")
    eq(avail[("valkey", "8.0")], (3, True), "valkey 8.0 on three")
    eq(avail[("valkey", "9.0")], (0, False), "valkey 9.0 nowhere")
    expect.problem(agents.api.get("/v1/hosts/00000000-0000-4000-8000-000000000000"),
                   "HOST_NOT_FOUND")
    expect.problem(agents.api.get("/v1/hosts/nope"), "HOST_NOT_FOUND")


def test_an_urgent_sync_is_heard_before_routine_ones(pg, fresh_db, cairnd_factory):
    """cairnd with one worker for the agents' requests, kept busy by a sync
    stuck on its host's row: a routine sync that arrives next waits behind
    it, and an urgent one (`Priority: u=0`, RFC 9218: its agent reports an
    engine in trouble) arriving after that is heard before the routine
    one. A urgency that is not below the default is routine."""
    c = cairnd_factory(fresh_db.url, ["--agent-bootstrap-token", BOOTSTRAP,
                                      "--approve-bootstrap-hosts", "--http-threads", "1"])
    from conftest import make_instance
    inst = make_instance(pg, fresh_db, c)
    stuck, routine, urgent, lazy = (register(inst, name=f"vm-{n}", ports=(7000 + 100 * i,
                                                                     7099 + 100 * i))
                                    for i, n in enumerate(("stuck", "routine", "urgent", "lazy")))
    for h in (stuck, routine, urgent, lazy):
        expect.json_ok(sync(inst, h["credential"]))

    def send(h, priority=None):
        headers = {"Authorization": f"Bearer {h['credential']}"}
        if priority is not None:
            headers["Priority"] = priority
        return inst.anon.post("/v1/agent/sync", headers=headers, timeout=20, json={
            "generation": 0, "wait_ms": 0, "engines": ENGINES, "nodes": []})

    locker = threading.Thread(target=fresh_db.psql, args=(
        "BEGIN; SELECT 1 FROM hosts WHERE id = '%s' FOR UPDATE; SELECT pg_sleep(2); COMMIT"
        % stuck["host_id"],))
    locker.start()
    time.sleep(0.3)
    threads = []
    for h, priority in ((stuck, None), (routine, None), (lazy, "u=5, i"), (urgent, "u=0")):
        t = threading.Thread(target=lambda h=h, p=priority: expect.json_ok(send(h, p)))
        t.start()
        threads.append(t)
        time.sleep(0.2)
    for t in threads + [locker]:
        t.join(20)
    seen = dict(line.split("|") for line in fresh_db.psql(
        "SELECT name, (extract(epoch FROM last_seen_at) * 1e6)::bigint FROM hosts").split())
    order = sorted(("vm-routine", "vm-urgent", "vm-lazy"), key=lambda n: int(seen[n]))
    eq(order, ["vm-urgent", "vm-routine", "vm-lazy"], "the order the syncs were heard in")
