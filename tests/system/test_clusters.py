"""test_clusters.py -- /v1/clusters end to end, through the API only: real
cairnd, PostgreSQL, three cairn-agents (vm-a, vm-b, vm-c in az-a, az-b,
az-c; 16 vCPUs, 8 GiB and 24 ports each) and the Valkey/Redis engines they
start, all on 127.0.0.1.

One stack serves the whole module (starting three agents costs a second;
each test leaves the hosts as it found them). The tests act as a user
would: POST a cluster, poll GET until it is available, read the placement
and the endpoints from the resource, talk to the engines with redis-py
(cluster client included) using the password from /auth, then DELETE it
and check that its engines, ports and allocations are gone. The resume
test kills cairnd with SIGKILL in the middle of a create and starts a new
one on the same database, port and secret key file.

At teardown the agents are stopped and every engine they started is
killed; a failed test prints cairnd's log, the agents' logs and the end of
each engine's log.
"""

import signal
import time

import pytest
import redis

import agents
import clusters
import expect
import harness
from clusters import client, nodes, operations, password, wait_available, wait_cluster, wait_gone
from clusters import AZS
from expect import eq

VALKEY_FULL = agents.engine_full_version(agents.VALKEY_SERVER)
REDIS_FULL = agents.engine_full_version(agents.REDIS_SERVER)
CREATE_TIMEOUT = 40   # s to available: engines start in < 1 s, formation in seconds
DELETE_TIMEOUT = 30   # s to 404: the agent gives an engine 10 s to stop
KEYS = 10_000


# --------------------------------------------------------------------------
# The stack (clusters.ClusterStack)

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("clusters")


# --------------------------------------------------------------------------
# Checks shared by the tests

def post(api, body):
    return api.post("/v1/clusters", json=body)


def check_spec(resource, sent, defaults):
    """GET returns every spec field, as sent or defaulted, with its type."""
    want = dict(defaults, **sent)
    got = {k: resource.get(k) for k in clusters.SPEC_FIELDS}
    eq(got, {k: want[k] for k in clusters.SPEC_FIELDS}, "spec fields of the resource")
    for k in clusters.SPEC_FIELDS:
        eq(type(got[k]), type(want[k]), f"type of {k}")


SPEC_DEFAULTS = {"description": "", "cluster_mode": "enabled", "num_shards": 1,
                 "replicas_per_shard": 1, "automatic_failover": True, "multi_az": True,
                 "maintenance_window": "sun:05:00-sun:06:00", "parameters": {}, "tags": {}}


def check_etag(api, cid, resource):
    r = api.get(f"/v1/clusters/{cid}")
    body = expect.json_ok(r)
    etag = r.headers.get("ETag")
    eq(etag, f'"{body["generation"]}"', "ETag of GET")
    again = api.get(f"/v1/clusters/{cid}")
    eq(again.headers.get("ETag"), etag, "ETag of a second GET with nothing changed")
    assert isinstance(resource["generation"], int) and resource["generation"] >= 1, resource


def check_placement(stack, body, shards, replicas, engine_full, pw):
    """Placement rules, read from the resource, and roles checked against
    what each engine says."""
    hosts = stack.hosts()
    eq(len(body["shards"]), shards, "number of shards")
    eq([s["id"] for s in body["shards"]], [f"{i + 1:04d}" for i in range(shards)], "shard ids")
    primary_azs = []
    for s in body["shards"]:
        ns = s["nodes"]
        what = f"shard {s['id']}"
        eq(len(ns), 1 + replicas, f"nodes of {what}")
        eq(len({n["host_id"] for n in ns}), len(ns), f"distinct hosts in {what}: {ns}")
        eq(len({n["az"] for n in ns}), len(ns), f"distinct AZs in {what}: {ns}")
        eq(sorted(n["role"] for n in ns), ["primary"] + ["replica"] * replicas, f"roles in {what}")
        for n in ns:
            h = hosts[n["host_id"]]
            eq((n["az"], n["address"], n["status"], n["engine_version"]),
               (h["az"], h["address"], "running", engine_full), f"node {n['id']} of {what}")
            assert h["ports"]["min"] <= n["port"] <= h["ports"]["max"], (n, h["ports"])
            assert expect.UUID_RE.match(n["id"]), n
            eq(clusters.engine_role(n["address"], n["port"], pw), n["role"],
               f"role of node {n['id']} as its engine reports it")
            on_host = [x for x in h["nodes"] if x["id"] == n["id"]]
            eq(len(on_host), 1, f"node {n['id']} on its host's list")
            eq((on_host[0]["cluster_id"], on_host[0]["port"]), (body["id"], n["port"]),
               f"node {n['id']} as its host shows it")
        primary_azs += [n["az"] for n in ns if n["role"] == "primary"]
    # No AZ holds more than ceil(primaries / AZs) primaries.
    cap = -(-shards // len(AZS))
    for az in set(primary_azs):
        assert primary_azs.count(az) <= cap, f"primaries per AZ over {cap}: {primary_azs}"
    ids = [n["id"] for n in nodes(body)]
    eq(len(set(ids)), len(ids), "node ids are unique")
    ports = [(n["host_id"], n["port"]) for n in nodes(body)]
    eq(len(set(ports)), len(ports), "(host, port) pairs are unique")


def check_auth(stack, cid, body, pw):
    """The password: admin only, never in the resource, the list or the
    logs; the engines refuse clients without it."""
    expect.problem(stack.inst.read.get(f"/v1/clusters/{cid}/auth"), "FORBIDDEN")
    expect.problem(stack.inst.anon.get(f"/v1/clusters/{cid}/auth"), "UNAUTHENTICATED")
    assert pw not in stack.api.get(f"/v1/clusters/{cid}").text, "password in the resource"
    assert pw not in stack.api.get("/v1/clusters").text, "password in the list"
    assert "auth_token" not in body, body
    for log in stack.logs():
        assert pw not in log.text(), f"password in {log.name}'s log"
    n = nodes(body)[0]
    with pytest.raises(redis.AuthenticationError):
        clusters.client(n["address"], n["port"], None).ping()
    with pytest.raises((redis.AuthenticationError, redis.ResponseError),
                       match="WRONGPASS|invalid"):
        clusters.client(n["address"], n["port"], "not-the-password-0123").ping()
    with clusters.client(n["address"], n["port"], pw) as c:
        assert c.ping()


def check_idempotent(stack, cid, body, first):
    """The same body again: 200 with the same resource, nothing duplicated."""
    before = stack.allocations()
    r = post(stack.api, body)
    again = expect.json_ok(r, 200)
    eq((again["id"], again["created_at"], sorted(n["id"] for n in nodes(again))),
       (first["id"], first["created_at"], sorted(n["id"] for n in nodes(first))),
       "resource returned by a repeated POST")
    assert r.headers.get("ETag"), "ETag on the 200 of a repeated POST"
    eq(stack.allocations(), before, "host allocations after a repeated POST")
    eq(len([o for o in clusters.operations(stack.api, cid) if o["kind"] == "create"]), 1,
       "create operations after a repeated POST")


def check_conflict(stack, cid, body):
    before = clusters.get(stack.api, cid)
    for change in ({"replicas_per_shard": body["replicas_per_shard"] + 1},
                   {"description": "something else"},
                   {"engine": "valkey" if body["engine"] == "redis" else "redis",
                    "engine_version": "8.0" if body["engine"] == "redis" else "7.0"}):
        problem = expect.problem(post(stack.api, dict(body, **change)), "CLUSTER_ALREADY_EXISTS")
        assert cid in problem["detail"], problem
    after = clusters.get(stack.api, cid)
    eq({k: after[k] for k in clusters.SPEC_FIELDS + ("generation", "created_at")},
       {k: before[k] for k in clusters.SPEC_FIELDS + ("generation", "created_at")},
       "resource after conflicting POSTs")


def node_pids(stack, body):
    """{node id: engine pid} as the hosts report them."""
    pids = {}
    for n in nodes(body):
        entry = next(x for x in stack.host(n["host_id"])["nodes"] if x["id"] == n["id"])
        assert entry["pid"], f"node {n['id']} has no pid: {entry}"
        eq(stack.agent_of(n["host_id"]).pidfile(n["id"]), entry["pid"],
           f"engine.pid of node {n['id']}")
        pids[n["id"]] = entry["pid"]
    return pids


def delete_and_check(stack, cid, allocations_before):
    """DELETE -> 202 deleting, then 404; engines, data, ports and
    allocations gone."""
    body = clusters.get(stack.api, cid)
    pids = node_pids(stack, body)
    placed = nodes(body)
    r = stack.api.delete(f"/v1/clusters/{cid}")
    deleting = expect.json_ok(r, 202)
    eq(deleting["status"], "deleting", "status in the answer to DELETE")
    again = stack.api.delete(f"/v1/clusters/{cid}")
    if again.status_code == 409:
        expect.problem(again, "OPERATION_IN_PROGRESS")
    else:
        expect.problem(again, "CLUSTER_NOT_FOUND")   # already gone
    wait_gone(stack.api, cid, DELETE_TIMEOUT)
    expect.problem(stack.api.get(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")
    expect.problem(stack.api.get(f"/v1/clusters/{cid}/auth"), "CLUSTER_NOT_FOUND")
    expect.problem(stack.api.delete(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")
    listed = expect.json_ok(stack.api.get("/v1/clusters"))["clusters"]
    assert cid not in [c["id"] for c in listed], listed
    for n in placed:
        agent = stack.agent_of(n["host_id"])
        clusters.wait_until(lambda: not agents.alive(pids[n["id"]]), 5,
                            f"engine {pids[n['id']]} of node {n['id']} to exit")
        assert not clusters.listening(n["port"]), f"port {n['port']} still accepts connections"
        assert clusters.port_free(n["port"]), f"port {n['port']} cannot be bound"
        clusters.wait_until(lambda: not agent.node_dir(n["id"]).exists(), 5,
                            f"the data dir of node {n['id']} removed")
    eq(stack.allocations(), allocations_before, "host allocations after the delete")
    types = [e["type"] for e in clusters.events(stack.api, cid)]
    for t in ("ClusterCreating", "ClusterAvailable", "ClusterDeleting", "ClusterDeleted"):
        eq(types.count(t), 1, f"{t} events of {cid} (all: {types})")
    ops = clusters.operations(stack.api, cid)
    eq(sorted((o["kind"], o["status"]) for o in ops),
       [("create", "succeeded"), ("delete", "succeeded")], "operations of the cluster")


# --------------------------------------------------------------------------
# Cluster mode: valkey 8.0, 3 shards x (1 + 1)

def test_valkey_cluster_mode_create_use_and_delete(stack, cleanup):
    api = stack.api
    cleanup.append("orders")
    baseline = stack.allocations()
    body = clusters.valkey_cluster("orders")
    r = post(api, body)
    created = expect.json_ok(r, 202)
    eq(r.headers.get("Location"), "/v1/clusters/orders", "Location")
    eq(r.headers.get("ETag"), f'"{created["generation"]}"', "ETag of the 202")
    eq(created["status"], "creating", "status in the 202")
    eq((created["current_operation"] or {}).get("kind"), "create", "current_operation of the 202")
    check_spec(created, body, SPEC_DEFAULTS)
    eq(len(nodes(created)), 6, "nodes placed by the 202")
    # Usable by GET at once, and a retried POST during the create is a no-op.
    eq(clusters.get(api, "orders")["id"], "orders", "GET right after the POST")
    check_idempotent(stack, "orders", body, created)

    t0 = time.monotonic()
    ready = wait_available(api, "orders", CREATE_TIMEOUT)
    took = time.monotonic() - t0
    check_spec(ready, body, SPEC_DEFAULTS)
    eq(ready["engine_version_actual"], VALKEY_FULL, "engine_version_actual")
    eq(ready["current_operation"], None, "current_operation once available")
    eq(sorted(n["id"] for n in nodes(ready)), sorted(n["id"] for n in nodes(created)),
       "nodes once available are the nodes placed")
    eq([s["slots"] for s in ready["shards"]], [["0-5460"], ["5461-10922"], ["10923-16383"]],
       "slots of the shards")
    eq(sorted((e["address"], e["port"]) for e in ready["endpoints"]["configuration"]),
       sorted((n["address"], n["port"]) for n in nodes(ready)), "endpoints.configuration")
    eq(set(ready["endpoints"]), {"configuration"}, "endpoint kinds in cluster mode")
    check_etag(api, "orders", ready)

    pw = clusters.password(api, "orders")
    check_placement(stack, ready, 3, 1, VALKEY_FULL, pw)
    check_auth(stack, "orders", ready, pw)

    # The engines' own view: every node knows all six, each placed primary
    # serves its shard's slots, each replica follows its shard's primary.
    by_port = {n["port"]: n for n in nodes(ready)}
    for n in nodes(ready):
        with clusters.client(n["address"], n["port"], pw) as c:
            info = c.cluster("info")
            eq(info["cluster_state"], "ok", f"cluster_state on node {n['id']}")
            eq(int(info["cluster_known_nodes"]), 6, f"cluster_known_nodes on node {n['id']}")
            eq(int(info["cluster_slots_assigned"]), 16384, "cluster_slots_assigned")
    # 10,000 keys through the cluster client seeded with the endpoints.
    rc = clusters.cluster_client(ready, pw)
    try:
        t0 = time.monotonic()
        for start in range(0, KEYS, 1000):
            pipe = rc.pipeline()
            for i in range(start, start + 1000):
                pipe.set(f"order:{i}", f"value-{i}")
            assert all(pipe.execute()), "SET through the cluster pipeline"
        values = []
        for start in range(0, KEYS, 1000):
            pipe = rc.pipeline()
            for i in range(start, start + 1000):
                pipe.get(f"order:{i}")
            values += pipe.execute()
        eq(values, [f"value-{i}" for i in range(KEYS)], "values read back")
        eq(rc.get("order:4242"), "value-4242", "a single GET through the cluster client")
        io_s = time.monotonic() - t0
    finally:
        rc.close()
    sizes = {}
    for n in nodes(ready):
        with clusters.client(n["address"], n["port"], pw) as c:
            sizes[n["id"]] = c.dbsize()
    primaries = [n for n in nodes(ready) if n["role"] == "primary"]
    eq(sum(sizes[n["id"]] for n in primaries), KEYS, "keys over the primaries")
    assert all(sizes[n["id"]] > KEYS // 5 for n in primaries), sizes
    for n in nodes(ready):
        if n["role"] == "replica":
            p = next(x for x in primaries if x["shard"] == n["shard"])

            def caught_up(n=n, p=p):
                with clusters.client(n["address"], n["port"], pw) as c:
                    return c.dbsize() == sizes[p["id"]]
            clusters.wait_until(caught_up, 10, f"replica {n['id']} to hold its primary's keys")

    # CLUSTER SLOTS: each range served by its shard's placed primary, with its
    # shard's replica (engines hide a replica whose offset is still 0, so
    # this is read once there is data and the offsets have been gossiped).
    def slot_map():
        with clusters.client(nodes(ready)[0]["address"], nodes(ready)[0]["port"], pw) as c:
            slots = c.execute_command("CLUSTER SLOTS")
        seen = {}
        for first, last, primary, *replicas in slots:
            seen[f"{first}-{last}"] = (by_port[int(primary[1])]["shard"],
                                       by_port[int(primary[1])]["role"],
                                       sorted(by_port[int(r[1])]["shard"] for r in replicas))
        return seen
    want = {s["slots"][0]: (s["id"], "primary", [s["id"]]) for s in ready["shards"]}
    try:
        clusters.wait_until(lambda: slot_map() == want, 10, "CLUSTER SLOTS with the replicas")
    except harness.HarnessError:
        eq(slot_map(), want, "CLUSTER SLOTS (range -> primary's shard, role, replicas' shards)")

    listed = expect.json_ok(api.get("/v1/clusters", params={"engine": "valkey"}))["clusters"]
    assert "orders" in [c["id"] for c in listed], listed
    listed = expect.json_ok(api.get("/v1/clusters", params={"status": "available"}))["clusters"]
    assert "orders" in [c["id"] for c in listed], listed
    listed = expect.json_ok(api.get("/v1/clusters", params={"engine": "redis"}))["clusters"]
    assert "orders" not in [c["id"] for c in listed], listed

    check_idempotent(stack, "orders", body, ready)
    check_conflict(stack, "orders", body)
    print(f"\norders: available {took:.2f} s after the POST returned; "
          f"{KEYS} SET + {KEYS} GET in {io_s:.2f} s")
    delete_and_check(stack, "orders", baseline)


# --------------------------------------------------------------------------
# Cluster mode disabled: redis 7.0, 1 primary + 2 replicas

def test_redis_group_create_use_and_delete(stack, cleanup):
    api = stack.api
    cleanup.append("sessions")
    baseline = stack.allocations()
    body = clusters.redis_group("sessions", tags={"team": "checkout"},
                                description="session store")
    created = expect.json_ok(post(api, body), 202)
    check_spec(created, body, SPEC_DEFAULTS)
    eq(len(nodes(created)), 3, "nodes placed")

    ready = wait_available(api, "sessions", CREATE_TIMEOUT)
    eq(ready["engine_version_actual"], REDIS_FULL, "engine_version_actual")
    eq(ready["shards"][0]["slots"], [], "slots of a shard in disabled mode")
    eq(set(ready["endpoints"]), {"primary", "readers"}, "endpoint kinds in disabled mode")
    pw = clusters.password(api, "sessions")
    check_placement(stack, ready, 1, 2, REDIS_FULL, pw)
    check_auth(stack, "sessions", ready, pw)
    check_etag(api, "sessions", ready)
    primary = next(n for n in nodes(ready) if n["role"] == "primary")
    eq(ready["endpoints"]["primary"], {"address": primary["address"], "port": primary["port"]},
       "endpoints.primary")

    # readers lists the replicas once their agents report the links up.
    ready = clusters.wait_cluster(api, "sessions",
                                  lambda b: len(b["endpoints"]["readers"]) == 2, 15,
                                  "two readers")
    replicas = [n for n in nodes(ready) if n["role"] == "replica"]
    eq(sorted((e["address"], e["port"]) for e in ready["endpoints"]["readers"]),
       sorted((n["address"], n["port"]) for n in replicas), "endpoints.readers")

    ep = ready["endpoints"]["primary"]
    with clusters.client(ep["address"], ep["port"], pw) as c:
        pipe = c.pipeline(transaction=False)
        for i in range(1000):
            pipe.set(f"session:{i}", f"user-{i}")
        assert all(pipe.execute())
    for reader in ready["endpoints"]["readers"]:
        with clusters.client(reader["address"], reader["port"], pw) as c:
            clusters.wait_until(lambda: c.dbsize() == 1000, 10,
                                f"reader {reader['port']} to hold the 1000 keys")
            eq(c.mget([f"session:{i}" for i in range(1000)]),
               [f"user-{i}" for i in range(1000)], f"values on reader {reader['port']}")
            with pytest.raises(redis.ReadOnlyError):
                c.set("session:x", "y")

    # Each replica shows its link up and, once the agents report the
    # offsets after the writes, no lag; the primary has no replication.
    def caught_up(b):
        reps = [n["replication"] for n in nodes(b) if n["role"] == "replica"]
        return all(r["link_status"] == "up" and r["lag_bytes"] == 0 for r in reps)
    ready = clusters.wait_cluster(api, "sessions", caught_up, 15, "replicas caught up")
    for n in nodes(ready):
        if n["role"] == "primary":
            eq(n["replication"], None, "a primary's replication")
        else:
            eq((n["replication"]["sync_in_progress"], n["replication"]["loading"]),
               (False, False), f"replica {n['id']} settled")
        assert n["host_name"].startswith("vm-"), f"host_name of {n['id']}: {n['host_name']!r}"

    # The normalized spec as GET shows it is the same spec: a Terraform-like
    # client posting back what it read gets 200, not a conflict.
    check_idempotent(stack, "sessions", body, ready)
    check_idempotent(stack, "sessions", {k: ready[k] for k in clusters.SPEC_FIELDS}, ready)
    check_conflict(stack, "sessions", body)
    listed = expect.json_ok(api.get("/v1/clusters", params={"tag": "team:checkout"}))["clusters"]
    eq([c["id"] for c in listed], ["sessions"], "clusters tagged team:checkout")
    listed = expect.json_ok(api.get("/v1/clusters", params={"tag": "team:other"}))["clusters"]
    eq(listed, [], "clusters tagged team:other")
    delete_and_check(stack, "sessions", baseline)


def test_a_reused_id_starts_a_history_of_its_own(stack, cleanup):
    """Events and operations filtered by cluster id used to list an earlier,
    deleted cluster of the same id too: each cluster now has its own uid."""
    api = stack.api
    cleanup.append("again")
    body = clusters.redis_group("again", replicas_per_shard=0)
    first = expect.json_ok(post(api, body), 202)["uid"]
    wait_available(api, "again", CREATE_TIMEOUT)
    expect.json_ok(api.delete("/v1/clusters/again"), 202)
    wait_gone(api, "again", DELETE_TIMEOUT)
    second = expect.json_ok(post(api, body), 202)["uid"]
    assert second != first, "a new cluster of the same id has a new uid"
    wait_available(api, "again", CREATE_TIMEOUT)

    evs = clusters.events(api, "again")
    eq({e["cluster_uid"] for e in evs}, {second}, "the uid of every event by cluster id")
    eq([e["type"] for e in evs if e["type"].startswith("Cluster")],
       ["ClusterCreating", "ClusterAvailable"], "cluster events by cluster id")
    eq([(o["kind"], o["cluster_uid"]) for o in clusters.operations(api, "again")],
       [("create", second)], "operations by cluster id")
    old = expect.json_ok(api.get("/v1/events", params={"cluster_uid": first}))["events"]
    eq([e["type"] for e in old if e["type"].startswith("Cluster")],
       ["ClusterCreating", "ClusterAvailable", "ClusterDeleting", "ClusterDeleted"],
       "the first cluster's events, by its uid")
    old = expect.json_ok(api.get("/v1/operations", params={"cluster_uid": first}))["operations"]
    eq(sorted(o["kind"] for o in old), ["create", "delete"], "the first cluster's operations")


# --------------------------------------------------------------------------
# Refused creates leave nothing behind

def _nothing_of(stack, cid, snapshot):
    eq(stack.allocations(), snapshot, "host allocations after a refused create")
    expect.problem(stack.api.get(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")
    eq(clusters.operations(stack.api, cid), [], "operations of a refused create")
    eq(clusters.events(stack.api, cid), [], "events of a refused create")


VALID = clusters.valkey_cluster("valid-name")


@pytest.mark.parametrize("change,fields", [
    ({"id": "Orders"}, ["id"]),
    ({"id": "1orders"}, ["id"]),
    ({"id": "a--b"}, ["id"]),
    ({"id": "orders-"}, ["id"]),
    ({"id": "a" * 41}, ["id"]),
    ({"id": ""}, ["id"]),
    ({"id": "ord_ers"}, ["id"]),
    ({"engine": "memcached"}, ["engine"]),
    ({"node_type": "cache.t9.huge"}, ["node_type"]),
    ({"engine_version": "9.9"}, ["engine_version"]),
    ({"engine": "redis", "engine_version": "8.0"}, ["engine_version"]),
    ({"engine_version": "7.0"}, ["engine_version"]),
    ({"cluster_mode": "disabled", "num_shards": 2}, ["num_shards"]),
    ({"num_shards": 0}, ["num_shards"]),
    ({"replicas_per_shard": 6}, ["replicas_per_shard"]),
    ({"node_type": "cache.t9.huge", "engine_version": "9.9"}, ["engine_version", "node_type"]),
    ({"id": "Bad", "num_shards": 1001}, ["id", "num_shards"]),
], ids=lambda v: repr(v) if isinstance(v, dict) else None)
def test_validation_names_the_field(stack, change, fields):
    snapshot = stack.allocations()
    listed = expect.json_ok(stack.api.get("/v1/clusters"))["clusters"]
    body = dict(VALID, **change)
    problem = expect.problem(post(stack.api, body), "VALIDATION_FAILED", fields=fields)
    assert problem["detail"], problem
    if "id" not in fields:
        _nothing_of(stack, body["id"], snapshot)
    else:
        eq(stack.allocations(), snapshot, "host allocations after a refused create")
        eq(expect.json_ok(stack.api.get("/v1/clusters"))["clusters"], listed, "clusters")


def test_validation_reports_catalog_and_spec_errors_together(stack):
    """A body with a rule error and an unknown node type names both fields
    (a client fixes everything in one round trip)."""
    body = dict(VALID, id="Bad", node_type="cache.t9.huge")
    expect.problem(post(stack.api, body), "VALIDATION_FAILED", fields=["id", "node_type"])


def test_unknown_cluster_and_scopes(stack):
    for method, path in (("GET", "/v1/clusters/nope"), ("DELETE", "/v1/clusters/nope"),
                         ("GET", "/v1/clusters/nope/auth")):
        expect.problem(stack.api.request(method, path), "CLUSTER_NOT_FOUND")
    expect.problem(stack.inst.read.post("/v1/clusters", json=VALID), "FORBIDDEN")
    expect.problem(stack.inst.anon.get("/v1/clusters"), "UNAUTHENTICATED")
    expect.problem(stack.api.get(f"/v1/clusters/{VALID['id']}"), "CLUSTER_NOT_FOUND")


def _too_many_shards(stack):
    """Enough micro shards (2 nodes of 2 vCPUs, 512 MiB) to need one more
    node than the hosts have room for: most would fit, so a scheduler that
    wrote as it went would leave some behind."""
    room = 0
    for h in stack.hosts().values():
        free_cpu = h["capacity"]["vcpus"] - h["allocated"]["vcpus"]
        free_mem = h["capacity"]["memory_mib"] - h["allocated"]["memory_mib"]
        room += min(free_cpu // 2, free_mem // 512)
    return clusters.valkey_cluster("too-big", num_shards=room // 2 + 1)


@pytest.mark.parametrize("make", [
    _too_many_shards,
    lambda s: clusters.redis_group("too-many-replicas", replicas_per_shard=5),
    lambda s: clusters.valkey_cluster("huge-nodes", node_type="cache.r7g.16xlarge"),
    lambda s: clusters.valkey_cluster("not-installed", engine_version="8.1"),
], ids=["too-many-shards", "replicas-exceed-hosts", "node-type-too-big", "version-not-on-hosts"])
def test_insufficient_capacity_leaks_nothing(stack, cleanup, make):
    body = make(stack)
    cleanup.append(body["id"])
    snapshot = stack.allocations()
    problem = expect.problem(post(stack.api, body), "INSUFFICIENT_CAPACITY")
    assert any(ch.isdigit() for ch in problem["detail"]), \
        f"the detail should give the numbers: {problem['detail']!r}"
    _nothing_of(stack, body["id"], snapshot)
    # Refused again the same way: nothing of the first attempt is in the way.
    expect.problem(post(stack.api, body), "INSUFFICIENT_CAPACITY")
    _nothing_of(stack, body["id"], snapshot)


# --------------------------------------------------------------------------
# A create survives cairnd's death

FORMING = ("meet", "assign_slots", "replicate")


@pytest.mark.parametrize("when", ["during-formation", "right-after-post"])
def test_create_completes_after_cairnd_is_killed(stack, cleanup, when):
    """kill -9 cairnd mid-create; a new cairnd on the same database and key
    file resumes the operation once its 5 s lease has run out, with no
    duplicate nodes."""
    api = stack.api
    baseline = stack.allocations()
    if when == "during-formation":
        cid, body, count = "resume-cluster", clusters.valkey_cluster("resume-cluster"), 6
    else:
        cid, body, count = "resume-group", clusters.redis_group("resume-group"), 3
    cleanup.append(cid)
    created = expect.json_ok(post(api, body), 202)
    placed = sorted(n["id"] for n in nodes(created))
    eq(len(placed), count, "nodes placed")
    step = None
    if when == "during-formation":
        seen = clusters.wait_cluster(
            api, cid, lambda b: (b["current_operation"] or {}).get("step_name") in FORMING
            or b["status"] != "creating", 30, "the create to reach meet/replicate", interval=0.003)
        eq(seen["status"], "creating", "status when the formation steps are seen")
        step = seen["current_operation"]["step_name"]
    stack.kill9_cairnd()
    killed = time.monotonic()
    stack.restart_cairnd()

    ready = wait_available(api, cid, CREATE_TIMEOUT)
    resumed_s = time.monotonic() - killed
    eq(sorted(n["id"] for n in nodes(ready)), placed, "nodes once available (no duplicates)")
    pw = clusters.password(api, cid)
    check_placement(stack, ready, body["num_shards"], body["replicas_per_shard"],
                    VALKEY_FULL if body["engine"] == "valkey" else REDIS_FULL, pw)
    listed = [x for h in stack.hosts().values() for x in h["nodes"]]
    eq(sorted(x["id"] for x in listed if x["cluster_id"] == cid), placed,
       "nodes of the cluster on the hosts' lists")
    others = [x for x in listed if x["cluster_id"] != cid]
    node_dirs = sorted(p.name for a in stack.agents for p in a.data_dir.glob("nodes/*"))
    eq(node_dirs, sorted(placed + [x["id"] for x in others]),
       "node data dirs on the agents (this cluster's and those of others)")
    pids = node_pids(stack, ready)
    live = agents.engine_pids_under([a.data_dir for a in stack.agents])
    eq(sorted(live), sorted(list(pids.values()) + [x["pid"] for x in others]),
       "engine processes on the agents")
    ops = clusters.operations(api, cid)
    eq([(o["kind"], o["status"]) for o in ops], [("create", "succeeded")], "operations")
    types = [e["type"] for e in clusters.events(api, cid)]
    eq((types.count("ClusterCreating"), types.count("NodePlaced"), types.count("ClusterAvailable")),
       (1, count, 1), f"milestone events ({types})")

    if body.get("cluster_mode", "enabled") == "enabled":
        for n in nodes(ready):
            with clusters.client(n["address"], n["port"], pw) as c:
                info = c.cluster("info")
                eq((info["cluster_state"], int(info["cluster_known_nodes"])), ("ok", count),
                   f"cluster state and known nodes on node {n['id']}")
        rc = clusters.cluster_client(ready, pw)
        try:
            for i in range(200):
                rc.set(f"k{i}", i)
            eq([rc.get(f"k{i}") for i in range(200)], [str(i) for i in range(200)], "values")
        finally:
            rc.close()
    else:
        ep = ready["endpoints"]["primary"]
        with clusters.client(ep["address"], ep["port"], pw) as c:
            c.set("k", "v")
            eq(c.get("k"), "v", "value on the primary")
    print(f"\n{cid}: killed at step {step or 'right after the POST'}; available "
          f"{resumed_s:.2f} s after the kill")
    delete_and_check(stack, cid, baseline)


def test_modify_applies_live_and_guards_with_etags(stack, cleanup):
    """PATCH (JSON merge patch) and PUT change what this version applies,
    guarded by If-Match; parameters reach the engines live with CONFIG SET,
    and what only a restart can apply stays in pending_changes."""
    cid = "modify-me"
    cleanup.append(cid)
    body = clusters.redis_group(cid, replicas_per_shard=1)
    expect.json_ok(post(stack.api, body), 202)
    created = wait_available(stack.api, cid)
    etag = stack.api.get(f"/v1/clusters/{cid}").headers["ETag"]
    eq(etag, f'"{created["generation"]}"', "ETag is the generation")
    pw = password(stack.api, cid)

    patch = {"description": "carts", "tags": {"team": "web"},
             "parameters": {"maxmemory-policy": "allkeys-lru", "timeout": "300",
                            "reserved-memory-percent": "30"}}
    r = stack.api.request("PATCH", f"/v1/clusters/{cid}", json=patch,
                          headers={"If-Match": etag,
                                   "Content-Type": "application/merge-patch+json"})
    changed = expect.json_ok(r)
    eq((changed["description"], changed["tags"], changed["generation"]),
       ("carts", {"team": "web"}, created["generation"] + 1), "patched fields")
    eq(r.headers["ETag"], f'"{created["generation"] + 1}"', "a new ETag")

    # The same If-Match again is stale now.
    r = stack.api.request("PATCH", f"/v1/clusters/{cid}", json={"description": "x"},
                          headers={"If-Match": etag})
    expect.problem(r, "PRECONDITION_FAILED")

    done = wait_cluster(stack.api, cid, lambda b: b["status"] == "available"
                        and b["current_operation"] is None, 30, "parameters applied")
    eq(done["pending_changes"].get("parameters", {}).get("restart_needed"),
       ["reserved-memory-percent"], "only the managed setting waits for a restart")
    for node in nodes(done):
        with clusters.admin_client(node) as c:
            eq((c.config_get("maxmemory-policy")["maxmemory-policy"],
                c.config_get("timeout")["timeout"]), ("allkeys-lru", "300"),
               f"live parameters on port {node['port']}")
    kinds = [o["kind"] for o in operations(stack.api, cid)]
    assert "apply_parameters" in kinds, kinds

    # Immutable fields are 400.
    expect.problem(stack.api.request("PATCH", f"/v1/clusters/{cid}",
                                     json={"cluster_mode": "enabled"}),
                   "VALIDATION_FAILED", fields=["cluster_mode"])

    # PUT replaces the spec: sending back what GET shows with a new
    # description changes only that.
    current = clusters.get(stack.api, cid)
    spec = {k: current[k] for k in clusters.SPEC_FIELDS}
    spec["description"] = "replaced"
    replaced = expect.json_ok(stack.api.request("PUT", f"/v1/clusters/{cid}", json=spec))
    eq(replaced["description"], "replaced", "PUT replaced the description")
    expect.problem(stack.api.request("PUT", f"/v1/clusters/{cid}", json=dict(spec, id="other")),
                   "VALIDATION_FAILED", fields=["id"])


def test_create_fails_when_a_host_is_lost_and_delete_cleans_up(stack, cleanup):
    """An agent frozen before it starts its engine: its host is lost, the
    create ends create-failed with the cause, and deleting the cluster
    cleans up once the agent is back."""
    cid = "doomed"
    cleanup.append(cid)
    frozen = stack.agents[0]
    frozen.signal(signal.SIGSTOP)
    try:
        expect.json_ok(post(stack.api, clusters.redis_group(cid)), 202)
        failed = wait_cluster(stack.api, cid, lambda b: b["status"] == "create-failed", 30,
                              "create-failed", interval=0.1)
    finally:
        frozen.signal(signal.SIGCONT)
    eq(failed["current_operation"], None, "no operation left running")
    op = next(o for o in operations(stack.api, cid) if o["kind"] == "create")
    eq((op["status"], op["error"]["code"], op["step_name"]), ("failed", "HOST_LOST", "wait_engines"),
       "the create operation says why")
    types = [e["type"] for e in clusters.events(stack.api, cid)]
    assert "OperationFailed" in types, types
    expect.json_ok(stack.api.delete(f"/v1/clusters/{cid}"), 202)
    wait_gone(stack.api, cid, DELETE_TIMEOUT)


def _write_through_failover(stack, cid, write, follow):
    """Write keys in a loop while a planned failover runs; return the keys
    whose writes were acknowledged and the failover's event detail."""
    import threading
    acked, stop = [], threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            try:
                write(f"k{i}", str(i))
                acked.append(f"k{i}")
            except redis.RedisError:
                follow()
            i += 1
            time.sleep(0.005)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    time.sleep(0.3)
    shard = {} if clusters.get(stack.api, cid)["cluster_mode"] == "disabled" else {"shard_id": "0001"}
    r = stack.api.post(f"/v1/clusters/{cid}/failover", json=shard)
    op = expect.json_ok(r, 202)
    eq(r.headers["Location"], f"/v1/operations/{op['id']}", "Location names the operation")
    done = wait_cluster(stack.api, cid, lambda b: b["current_operation"] is None, 30,
                        "failover finished")
    time.sleep(0.3)
    stop.set()
    t.join(5)
    op = expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))
    eq((op["kind"], op["status"], [s["name"] for s in op["steps"]]),
       ("failover", "succeeded", ["start_failover", "wait_switch", "record", "repoint_replicas"]), "the operation")
    complete = [e for e in clusters.events(stack.api, cid) if e["type"] == "FailoverComplete"]
    eq(len(complete), 1, "one FailoverComplete event")
    return acked, complete[0]["detail"], done


def test_planned_failover_loses_no_acknowledged_write(stack, cleanup):
    """Disabled mode: FAILOVER TO the in-sync replica; a client that follows
    endpoints.primary loses none of the writes it was told succeeded."""
    cid = "planned"
    cleanup.append(cid)
    expect.json_ok(post(stack.api, clusters.redis_group(cid, engine="valkey",
                                                        engine_version="8.0")), 202)
    before = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
    conn = {}

    def follow():
        ep = clusters.get(stack.api, cid)["endpoints"]["primary"]
        if ep:
            conn["c"] = client(ep["address"], ep["port"], pw)

    follow()
    acked, detail, after = _write_through_failover(stack, cid, lambda k, v: conn["c"].set(k, v),
                                                   follow)
    assert len(acked) > 50, f"the writer made too few writes: {len(acked)}"
    assert after["endpoints"]["primary"] != before["endpoints"]["primary"], \
        f"the primary did not change: {after['endpoints']}"
    ep = after["endpoints"]["primary"]
    with client(ep["address"], ep["port"], pw) as c:
        missing = [k for k in acked if c.get(k) is None]
    eq(missing, [], "acknowledged writes missing after the failover")
    assert detail["planned"] is True and detail["write_pause_ms"] >= 0, detail
    print(f"\nplanned failover (disabled mode): write pause {detail['write_pause_ms']} ms")
    roles = sorted(n["role"] for n in nodes(after))
    eq(roles, ["primary", "replica", "replica"], "one primary, the others follow")
    for n in nodes(after):
        if n["role"] == "replica":
            with client(n["address"], n["port"], pw) as c:
                eq(c.info("replication")["master_port"], ep["port"],
                   f"replica {n['id']} follows the new primary, not the old one")


def test_planned_failover_cluster_mode_and_refusals(stack, cleanup):
    cid = "planned-cm"
    cleanup.append(cid)
    expect.json_ok(post(stack.api, clusters.valkey_cluster(cid, num_shards=1)), 202)
    available = wait_available(stack.api, cid)
    expect.problem(stack.api.post(f"/v1/clusters/{cid}/failover", json={}),
                   "VALIDATION_FAILED", fields=["shard_id"])
    expect.problem(stack.api.post(f"/v1/clusters/{cid}/failover", json={"shard_id": "0009"}),
                   "VALIDATION_FAILED", fields=["shard_id"])
    pw = password(stack.api, cid)
    rc = clusters.cluster_client(available, pw)
    acked, detail, after = _write_through_failover(stack, cid, rc.set, lambda: None)
    missing = [k for k in acked if rc.get(k) is None]
    eq(missing, [], "acknowledged writes missing after the failover")
    print(f"\nplanned failover (cluster mode): write pause {detail['write_pause_ms']} ms")
    rc.close()
    expect.problem(stack.api.post("/v1/clusters/nope/failover", json={}), "CLUSTER_NOT_FOUND")


def test_sentinel_discovery_follows_a_failover(stack, cleanup):
    """Sentinel-aware clients find the primary through cairnd: redis-py's
    Sentinel with the cluster's auth token as its password, a SUBSCRIBEr
    told +switch-master, and nothing for clients without AUTH."""
    from redis.sentinel import Sentinel
    cid = "discover"
    cleanup.append(cid)
    expect.json_ok(post(stack.api, clusters.redis_group(cid)), 202)
    body = wait_available(stack.api, cid)
    pw = password(stack.api, cid)
    sentinel = Sentinel([("127.0.0.1", stack.sentinel_port)], socket_timeout=2,
                        sentinel_kwargs={"password": pw}, password=pw)
    primary = body["endpoints"]["primary"]
    eq(sentinel.discover_master(cid), (primary["address"], primary["port"]), "discovered primary")
    eq(sorted(sentinel.discover_slaves(cid)),
       sorted((r["address"], r["port"]) for r in body["endpoints"]["readers"]), "replicas")
    master = sentinel.master_for(cid, socket_timeout=2)
    master.set("through", "sentinel")

    # Without AUTH only PING; another cluster's name gives nothing.
    anon = redis.Redis(host="127.0.0.1", port=stack.sentinel_port, socket_timeout=2)
    assert anon.ping()
    try:
        anon.execute_command("SENTINEL", "get-master-addr-by-name", cid)
        raise AssertionError("SENTINEL answered a client without AUTH")
    except redis.AuthenticationError:
        pass
    except redis.ResponseError as e:
        assert "NOAUTH" in str(e), e
    # HELLO: RESP2 only (NOPROTO for 3, so clients fall back), AUTH inside it.
    hello = redis.Redis(host="127.0.0.1", port=stack.sentinel_port, socket_timeout=2)
    try:
        hello.execute_command("HELLO", "3")
        raise AssertionError("HELLO 3 was accepted")
    except redis.ResponseError as e:
        assert str(e).startswith("NOPROTO"), e
    try:
        hello.execute_command("HELLO", "2", "AUTH", "default", "wrong-token")
        raise AssertionError("HELLO with a wrong token was accepted")
    except redis.ResponseError as e:
        assert "WRONGPASS" in str(e), e
    fields = hello.execute_command("HELLO", "2", "AUTH", "default", pw, "SETNAME", "app")
    info = dict(zip(fields[::2], fields[1::2]))
    eq((info[b"proto"], info[b"mode"]), (2, b"sentinel"), "HELLO's answer")
    eq(hello.execute_command("SENTINEL", "get-master-addr-by-name", cid),
       [primary["address"].encode(), str(primary["port"]).encode()], "after HELLO ... AUTH")
    hello.close()
    watcher = redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=pw,
                          socket_timeout=10)
    eq(watcher.execute_command("SENTINEL", "get-master-addr-by-name", "someone-else"), None,
       "another cluster is not visible")
    pubsub = watcher.pubsub()
    pubsub.subscribe("+switch-master")
    pubsub.get_message(timeout=2)  # the subscribe confirmation
    time.sleep(0.3)  # the listener learns the current primary

    expect.json_ok(stack.api.post(f"/v1/clusters/{cid}/failover", json={}), 202)
    after = wait_cluster(stack.api, cid, lambda b: b["current_operation"] is None
                         and b["endpoints"]["primary"] not in (None, primary), 30, "failover")
    new = after["endpoints"]["primary"]
    msg = None
    deadline = time.monotonic() + 10
    while msg is None and time.monotonic() < deadline:
        m = pubsub.get_message(timeout=1)
        if m and m["type"] == "message":
            msg = m["data"].decode()
    eq(msg, f"{cid} {primary['address']} {primary['port']} {new['address']} {new['port']}",
       "+switch-master message")
    eq(sentinel.discover_master(cid), (new["address"], new["port"]), "discovered after failover")
    eq(sentinel.master_for(cid, socket_timeout=2).get("through"), b"sentinel",
       "the data on the new primary")
    pubsub.close()
