"""test_upgrade.py -- in-place engine upgrades end to end: redis 7.0 clusters
on real engines, upgraded to valkey 8.0 through the REST API while a writer
keeps writing through the client an application would use (redis-py's
Sentinel client against cairnd's Sentinel listener, or its cluster client),
recording every acknowledged write.

After an upgrade every node runs valkey 8.0.1 on the port it had, every key
written before is there, and every acknowledged write is there. Refusals,
the maintenance window (cairnd's clock moved by --test-clock-offset, the one
test-only setting), a cairnd killed with -9 halfway, and a rollback when the
new engine does not start are covered too.
"""

import time

import redis

import clusters
import expect
from clusters import events, nodes, password, wait_available, wait_until
from expect import eq
from test_ha import HEALING, ClusterClient, Writer, sentinel_master

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "upgrade", cairnd_args=["--upgrade-node-timeout", "20"])

VALKEY_80 = {"engine": "valkey", "engine_version": "8.0"}


def create(stack, cleanup, body):
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"], timeout=60), password(stack.api, body["id"])


def operation(stack, op_id):
    return expect.json_ok(stack.api.get(f"/v1/operations/{op_id}"))


def wait_operation(stack, op_id, timeout=180):
    """The operation once it has ended; fails at once if it failed."""
    op = wait_until(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
        operation(stack, op_id)), timeout, f"operation {op_id} ended", interval=0.2)
    return op


def upgrade(stack, cid, **extra):
    """PATCH to valkey 8.0; returns the operation's id."""
    r = stack.api.patch(f"/v1/clusters/{cid}", json=dict(VALKEY_80, **extra))
    body = expect.json_ok(r, 202)
    eq((body["engine"], body["engine_version"]), ("valkey", "8.0"), "the spec shows the target")
    up = body["pending_changes"]["engine_upgrade"]
    eq(r.headers["Location"], f"/v1/operations/{up['operation_id']}", "Location")
    return up["operation_id"], body


def engine_version(node, pw):
    with clusters.client(node["address"], node["port"], pw) as c:
        info = c.info("server")
    return info.get("valkey_version") or f"redis {info['redis_version']}"


def ports(body):
    return {n["id"]: (n["address"], n["port"]) for n in nodes(body)}


def check_upgraded(stack, cid, pw, before):
    body = clusters.get(stack.api, cid)
    eq(ports(body), before, "every node on the address and port it had")
    for n in nodes(body):
        eq(engine_version(n, pw), "8.0.1", f"node {n['id']} runs valkey 8.0.1")
        eq((n["engine"], n["engine_version"]), ("valkey", "8.0.1"), "the node as shown")
    eq(body["engine_version_actual"], "8.0.1", "engine_version_actual")
    assert "engine_upgrade" not in body["pending_changes"], body["pending_changes"]
    eq(body["status"], "available", "status")
    return body


def upgrade_events(stack, cid):
    return [e for e in events(stack.api, cid) if e["type"] in (
        "EngineUpgradeRequested", "EngineUpgradeScheduled", "EngineUpgradeStarted",
        "NodeUpgraded", "FailoverComplete", "EngineUpgradeComplete", "EngineUpgradeFailed",
        "EngineUpgradeCancelled")]


def test_disabled_mode_group_upgrades_without_losing_a_write(stack, cleanup):
    """redis 7.0, 1 primary + 2 replicas, a writer through the Sentinel
    client: upgraded to valkey 8.0 replica by replica, then a planned
    failover, then the old primary."""
    body, pw = create(stack, cleanup, clusters.redis_group("up-group"))
    before = ports(body)
    _, master = sentinel_master(stack, "up-group", pw)
    with master.pipeline(transaction=False) as p:
        for i in range(10000):
            p.set(f"pre{i}", i)
        p.execute()
    w = Writer(lambda: sentinel_master(stack, "up-group", pw)[1]).start()
    try:
        op_id, _ = upgrade(stack, "up-group")
        op = wait_operation(stack, op_id)
    finally:
        w.stop()
    eq(op["state"], "succeeded", f"the upgrade: {op}")
    check_upgraded(stack, "up-group", pw, before)
    _, master = sentinel_master(stack, "up-group", pw)
    missing = [k for k, _ in w.acked if master.get(k) is None]
    eq(missing, [], f"acknowledged writes lost (of {len(w.acked)})")
    eq(sum(1 for i in range(10000) if master.get(f"pre{i}") is not None), 10000,
       "every key from before")
    kinds = [e["type"] for e in upgrade_events(stack, "up-group")]
    for k in ("EngineUpgradeRequested", "EngineUpgradeStarted", "FailoverComplete",
              "EngineUpgradeComplete"):
        assert k in kinds, f"{k} in {kinds}"
    eq(kinds.count("NodeUpgraded"), 3, f"one NodeUpgraded a node: {kinds}")
    done = next(e for e in upgrade_events(stack, "up-group")
                if e["type"] == "EngineUpgradeComplete")
    pauses = done["detail"]["write_pauses"]
    eq(len(pauses), 1, f"one failover: {pauses}")
    assert 0 <= pauses[0]["write_pause_ms"] < 1000, pauses
    print(f"group upgrade: {done['detail']['duration_ms']} ms, write pause "
          f"{pauses[0]['write_pause_ms']} ms, {len(w.acked)} writes acknowledged, "
          f"{len(w.errors)} failed and retried")


def test_cluster_mode_upgrades_without_losing_a_write(stack, cleanup):
    """redis 7.0 cluster mode, 3 shards x (1 + 1), 100,000 keys, a writer
    through the cluster client."""
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        "up-sharded", engine="redis", engine_version="7.0"))
    before = ports(body)
    rc = clusters.cluster_client(body, pw)
    for start in range(0, 100000, 5000):
        with rc.pipeline() as p:
            for i in range(start, start + 5000):
                p.set(f"pre{i}", i)
            p.execute()
    rc.close()
    cc = ClusterClient(stack, "up-sharded", pw)
    w = Writer(lambda: cc).start()
    try:
        op_id, _ = upgrade(stack, "up-sharded")
        op = wait_operation(stack, op_id, timeout=300)
    finally:
        w.stop()
    eq(op["state"], "succeeded", f"the upgrade: {op}")
    check_upgraded(stack, "up-sharded", pw, before)
    cc.reset()

    def missing_keys(keys):
        out = []
        for k in keys:
            for _ in range(3):
                try:
                    if cc.get(k) is None:
                        out.append(k)
                    break
                except HEALING:
                    cc.reset()
        return out
    eq(missing_keys([k for k, _ in w.acked]), [], f"acknowledged writes lost (of {len(w.acked)})")
    after = clusters.get(stack.api, "up-sharded")
    roles = {n["id"]: (n["role"], clusters.engine_role(n["address"], n["port"], pw))
             for n in nodes(after)}
    eq(sorted(r for r, _ in roles.values()), ["primary"] * 3 + ["replica"] * 3,
       f"three primaries and three replicas shown: {roles}")
    eq([shown for shown, engine in roles.values() if shown != engine], [],
       f"the roles shown are the engines': {roles}")
    total = 0
    for n in nodes(after):
        if n["role"] == "primary":
            with clusters.client(n["address"], n["port"], pw) as c:
                total += c.dbsize()
    eq(total, 100000 + len({k for k, _ in w.acked}), "every key from before, and every one written")
    done = next(e for e in upgrade_events(stack, "up-sharded")
                if e["type"] == "EngineUpgradeComplete")
    pauses = done["detail"]["write_pauses"]
    eq(len(pauses), 3, f"one failover a shard: {pauses}")
    print(f"sharded upgrade: {done['detail']['duration_ms']} ms, write pauses "
          f"{[p['write_pause_ms'] for p in pauses]} ms, {len(w.acked)} writes acknowledged")


def test_refusals(stack, cleanup):
    """Each refusal says why, and changes nothing."""
    body, pw = create(stack, cleanup, clusters.valkey_cluster("up-no", num_shards=1))
    api = stack.api
    gen = body["generation"]
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine": "redis",
                                                         "engine_version": "7.0"}),
                   "VALIDATION_FAILED", fields=["engine_version"])
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine_version": "7.2"}),
                   "VALIDATION_FAILED", fields=["engine_version"])
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine_version": "9.9"}),
                   "VALIDATION_FAILED", fields=["engine_version"])
    r = api.patch("/v1/clusters/up-no", json={"engine_version": "9.0"})
    expect.problem(r, "ENGINE_NOT_INSTALLED")
    assert "9.0 is not installed on host(s) vm-" in r.json()["detail"], r.json()
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine_version": "9.0",
                                                         "node_type": "cache.m5.large"}),
                   "COMBINED_CHANGES")
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine_version": "9.0",
                                                         "apply_immediately": "yes"}),
                   "VALIDATION_FAILED", fields=["apply_immediately"])
    expect.problem(api.delete("/v1/clusters/up-no/pending-changes"), "NO_PENDING_CHANGE")
    after = clusters.get(api, "up-no")
    eq((after["engine_version"], after["generation"]), ("8.0", gen), "nothing changed")

    # An unhealthy cluster: a replica's engine frozen (its agent reports it
    # unresponsive).
    grp, pw = create(stack, cleanup, clusters.redis_group("up-sick", replicas_per_shard=1))
    replica = next(n for n in nodes(grp) if n["role"] == "replica")
    agent = stack.agent_of(replica["host_id"])
    pid = agent.pidfile(replica["id"])
    assert pid, "the replica's engine pid"
    import os
    import signal
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: next(n for n in nodes(clusters.get(api, "up-sick"))
                                if n["id"] == replica["id"])["status"] == "unresponsive", 15,
                   "the replica reported unresponsive")
        r = api.patch("/v1/clusters/up-sick", json=VALKEY_80)
        expect.problem(r, "CLUSTER_UNHEALTHY")
        assert replica["id"] in r.json()["detail"], r.json()
    finally:
        os.kill(pid, signal.SIGCONT)
    eq(clusters.get(api, "up-sick")["engine"], "redis", "the spec unchanged")
