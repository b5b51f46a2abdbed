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
import harness
from clusters import events, nodes, password, wait_available, wait_until
from expect import eq
from test_ha import HEALING, ClusterClient, Writer, sentinel_master

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "upgrade",
    cairnd_args=["--upgrade-node-timeout", "10", "--upgrade-parallel-shards", "2"],
    agent_args=["--metrics-interval", "1", "--metrics-period", "2"])

VALKEY_80 = {"engine": "valkey", "engine_version": "8.0"}


def create(stack, cleanup, body):
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"], timeout=60), password(stack.api, body["id"])


def operation(stack, op_id):
    return expect.json_ok(stack.api.get(f"/v1/operations/{op_id}"))


def wait_operation(stack, op_id, timeout=180):
    """The operation once it has ended; fails at once if it failed."""
    op = wait_until(lambda: (lambda o: o if o["status"] in ("succeeded", "failed") else None)(
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
    time.sleep(4)  # two metric periods under the writer, for the report's "before"
    try:
        op_id, _ = upgrade(stack, "up-group")
        op = wait_operation(stack, op_id)
        eq(op["status"], "succeeded", f"the upgrade: {op}")

        # The report: the same metrics before and after, once samples after
        # exist (the writer goes on meanwhile, as traffic would).
        def report_after():
            r = operation(stack, op_id).get("report")
            m = r["metrics"] if r else {}
            return r if m and all(m[k]["after"] is not None for k in (
                "EngineCPUUtilization", "SetTypeCmdsLatency",
                "EngineCPUSecondsPerMillionCommands")) else None
        report = wait_until(report_after, 15, "the report with metrics after the upgrade",
                            interval=0.5)
    finally:
        w.stop()
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
    eq({e["detail"]["running_version"] for e in upgrade_events(stack, "up-group")
        if e["type"] == "NodeUpgraded"}, {"8.0.1"}, "NodeUpgraded says what the engine runs")
    done = next(e for e in upgrade_events(stack, "up-group")
                if e["type"] == "EngineUpgradeComplete")
    pauses = done["detail"]["write_pauses"]
    eq(len(pauses), 1, f"one failover: {pauses}")
    assert 0 <= pauses[0]["write_pause_ms"] < 1000, pauses
    eq((report["from"], report["to"]), ({"engine": "redis", "engine_version": "7.0"}, VALKEY_80),
       "the report's versions")
    eq(report["write_pauses"], pauses, "the report's write pauses")
    eq(report["duration_ms"], done["detail"]["duration_ms"], "the report's duration")
    for name in ("EngineCPUUtilization", "CPUUtilization", "BytesUsedForCache",
                 "MemoryFragmentationRatio", "SetTypeCmdsLatency", "CurrConnections",
                 "EngineCPUSecondsPerMillionCommands"):
        m = report["metrics"][name]
        assert m["before"] is not None and m["after"] is not None, (name, m)
        if m["before"]:
            assert abs(m["change_percent"] - (m["after"] - m["before"]) / abs(m["before"]) * 100) \
                < 1e-6, (name, m)
    assert report["metrics"]["SetTypeCmdsLatency"]["before"] > 0, report["metrics"]
    assert report["before"]["end"] <= report["after"]["start"] <= int(time.time()), report
    print("report:", {k: (v["before"], v["after"], v["change_percent"])
                      for k, v in report["metrics"].items()})
    print(f"group upgrade: {done['detail']['duration_ms']} ms, write pause "
          f"{pauses[0]['write_pause_ms']} ms, {len(w.acked)} writes acknowledged, "
          f"{len(w.errors)} failed and retried")


def test_cluster_mode_upgrades_without_losing_a_write(stack, cleanup):
    """redis 7.0 cluster mode, 3 shards x (1 + 1), 100,000 keys, a writer
    through the cluster client; two shards at a time (--upgrade-parallel-shards
    2), so the third starts when one of them is done."""
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
    clusters.wait_replicas_linked(stack.api, "up-sharded")
    cc = ClusterClient(stack, "up-sharded", pw)
    w = Writer(lambda: cc).start()
    try:
        op_id, _ = upgrade(stack, "up-sharded")
        op = wait_operation(stack, op_id, timeout=300)
    finally:
        w.stop()
    eq(op["status"], "succeeded", f"the upgrade: {op}")
    check_upgraded(stack, "up-sharded", pw, before)
    # Valkey 8 in cluster mode now: per-slot statistics are there.
    stats = expect.json_ok(stack.api.get("/v1/clusters/up-sharded/slot-stats"))
    eq(len(stats["shards"]), 3, "slot-stats shards after the upgrade")
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
    # A dry run makes the same checks and says what would happen, storing nothing.
    r = api.patch("/v1/clusters/up-no", json={"engine_version": "9.0", "dry_run": True})
    expect.problem(r, "ENGINE_NOT_INSTALLED")
    expect.problem(api.patch("/v1/clusters/up-no", json={"engine_version": "8.0",
                                                         "dry_run": "yes"}),
                   "VALIDATION_FAILED", fields=["dry_run"])
    preview = expect.json_ok(api.patch("/v1/clusters/up-no", json={
        "description": "new", "tags": {"team": "x"}, "dry_run": True}))
    eq((preview["dry_run"], sorted(preview["changes"]), preview["operations"]),
       (True, ["description", "tags"], []), "preview of a change made at once")
    eq((preview["spec"]["description"], preview["spec"]["tags"]), ("new", {"team": "x"}),
       "the spec that would be stored")
    after = clusters.get(api, "up-no")
    eq((after["engine_version"], after["generation"]), ("8.0", gen), "nothing changed")

    grp, pw = create(stack, cleanup, clusters.redis_group("up-sick", replicas_per_shard=1))
    # A primary whose host has less memory free than its data takes (its
    # newest sample says so).
    names = [m["name"] for m in expect.json_ok(api.get("/v1/metrics/catalog"))["metrics"]]
    vals = ["NULL"] * len(names)
    vals[names.index("FreeableMemory")] = "1000000"
    vals[names.index("BytesUsedForCache")] = "5000000"
    primary = next(n for n in nodes(grp) if n["role"] == "primary")
    stack.db.psql("INSERT INTO metric_samples (cluster_id, node_id, at, period_s, vals)"
                  f" VALUES ('up-sick', '{primary['id']}', now() + interval '1 hour', 60,"
                  f" ARRAY[{','.join(vals)}]::real[])")
    r = api.patch("/v1/clusters/up-sick", json=VALKEY_80)
    expect.problem(r, "INSUFFICIENT_MEMORY")
    expect.problem(api.patch("/v1/clusters/up-sick", json=dict(VALKEY_80, dry_run=True)),
                   "INSUFFICIENT_MEMORY")
    assert primary["id"] in r.json()["detail"], r.json()
    stack.db.psql(f"DELETE FROM metric_samples WHERE node_id = '{primary['id']}'"
                  " AND at > now() + interval '30 minutes'")
    # An unhealthy cluster: a replica's engine frozen (its agent reports it
    # unresponsive).
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
    # Healthy again: the dry run of the upgrade passes every check and queues nothing.
    wait_until(lambda: all(n["status"] == "running" for n in nodes(clusters.get(api, "up-sick"))),
               15, "the replica running again")
    preview = wait_until(lambda: (lambda r: r.json() if r.status_code == 200 else None)(
        api.patch("/v1/clusters/up-sick", json=dict(VALKEY_80, dry_run=True))), 15,
        "the upgrade's checks pass")
    eq((sorted(preview["changes"]), preview["operations"], preview["downtime"]),
       (["engine", "engine_version"], ["upgrade_engine"], []), "preview of the upgrade")
    after = clusters.get(api, "up-sick")
    eq((after["engine"], after["current_operation"], after["pending_changes"]),
       ("redis", None, {}), "a dry run queues nothing")


def iso_epoch(ts):
    import calendar
    return calendar.timegm(time.strptime(ts.split(".")[0], "%Y-%m-%dT%H:%M:%S"))


def restart_cairnd(stack, offset_s):
    """kill -9 cairnd and start it again with its clock moved offset_s
    seconds on (only maintenance windows read it)."""
    stack.cairnd_args = [a for a in stack.cairnd_args if not a.startswith("--test-clock")]
    if offset_s:
        stack.cairnd_args.append(f"--test-clock-offset={offset_s}")
    stack.kill9_cairnd()
    stack.restart_cairnd()


def test_scheduled_upgrade_starts_in_its_window_and_survives_kill9(stack, cleanup):
    """apply_immediately false: the upgrade waits for the window (cancel
    and ask again on the way); cairnd's clock moved into the window starts
    it; cairnd killed with -9 halfway and restarted finishes it."""
    days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    day = days[(time.gmtime().tm_wday + 2) % 7]  # two days on: never open now
    window = f"{day}:03:00-{day}:04:00"
    body, pw = create(stack, cleanup, clusters.redis_group("up-window",
                                                           maintenance_window=window))
    before = ports(body)
    api = stack.api
    op_id, patched = upgrade(stack, "up-window", apply_immediately=False)
    up = patched["pending_changes"]["engine_upgrade"]
    eq((up["apply"], up["engine"], up["engine_version"]),
       ("maintenance_window", "valkey", "8.0"), "pending_changes")
    opens = iso_epoch(up["starts_at"])
    gm = time.gmtime(opens)
    eq((days[gm.tm_wday], gm.tm_hour, gm.tm_min), (day, 3, 0), "starts_at is the window's start")
    assert 86400 < opens - time.time() < 3 * 86400, up
    eq(operation(stack, op_id)["status"], "scheduled", "waits for the window")

    # Cancelled, the spec is back to what runs; asked again.
    r = api.delete("/v1/clusters/up-window/pending-changes")
    after = expect.json_ok(r)
    eq((after["engine"], after["engine_version"]), ("redis", "7.0"), "the spec reverted")
    assert "engine_upgrade" not in after["pending_changes"], after["pending_changes"]
    eq(operation(stack, op_id)["status"], "cancelled", "the cancelled operation")
    expect.problem(api.delete("/v1/clusters/up-window/pending-changes"), "NO_PENDING_CHANGE")
    op_id, patched = upgrade(stack, "up-window", apply_immediately=False)
    time.sleep(2.5)  # the scheduler looks every second
    eq(operation(stack, op_id)["status"], "scheduled", "still waiting outside the window")
    eq({n["engine_version"][:3] for n in nodes(clusters.get(api, "up-window"))}, {"7.0"},
       "nothing upgraded before the window")

    # cairnd's clock six seconds before the window opens: not yet, then yes.
    restart_cairnd(stack, int(opens - time.time()) - 6)
    try:
        time.sleep(2.5)
        eq(operation(stack, op_id)["status"], "scheduled", "not before the window")
        wait_until(lambda: operation(stack, op_id)["status"] in ("pending", "running"), 20,
                   "the upgrade started in the window")
        wait_until(lambda: any(e["type"] == "NodeUpgraded" and e["operation_id"] == op_id
                               for e in events(api, "up-window")), 60,
                   "the first node upgraded")
        restart_cairnd(stack, int(opens - time.time()) - 6)
        op = wait_operation(stack, op_id)
    finally:
        restart_cairnd(stack, 0)
    eq(op["status"], "succeeded", f"the upgrade after kill -9: {op}")
    check_upgraded(stack, "up-window", pw, before)
    kinds = [e["type"] for e in upgrade_events(stack, "up-window")]
    for k in ("EngineUpgradeScheduled", "EngineUpgradeCancelled", "EngineUpgradeStarted",
              "EngineUpgradeComplete"):
        assert k in kinds, f"{k} in {kinds}"
    upgraded = {e["detail"]["node_id"] for e in upgrade_events(stack, "up-window")
                if e["type"] == "NodeUpgraded"}
    eq(upgraded, set(before), "every node upgraded")


BROKEN_VALKEY = """#!/bin/sh
# Says it is Valkey 8.0.1, and fails to start.
if [ "$1" = "--version" ]; then
    echo "Valkey server v=8.0.1 sha=00000000:0 malloc=libc bits=64 build=0"
    exit 0
fi
echo "this valkey-server cannot start" >&2
exit 1
"""


def test_rollback_when_the_new_engine_does_not_start(stack, cleanup):
    """One host's valkey-server is broken: the first replica to be upgraded
    does not come up on it within --upgrade-node-timeout (10 s here), goes
    back to redis 7.0 on the same data, and the operation fails saying why.
    The cluster is as it was, and served writes throughout."""
    body, pw = create(stack, cleanup, clusters.redis_group("up-back"))
    before = ports(body)
    first = nodes(body)[1]  # ordinal 1: the first replica the upgrade takes
    eq(first["role"], "replica", "the first replica")
    agent = stack.agent_of(first["host_id"])
    # Somewhere the engine user (whom an agent running as root starts
    # engines as) can run them from.
    bin_dir = harness.make_temp_dir("engine-bin")
    bin_dir.chmod(0o755)
    (bin_dir / "valkey-server").write_text(BROKEN_VALKEY)
    (bin_dir / "valkey-server").chmod(0o755)
    (bin_dir / "redis-server").symlink_to("/usr/bin/redis-server")
    agent.stop()
    agent.env = {"PATH": str(bin_dir)}
    agent.start()
    try:
        w = Writer(lambda: sentinel_master(stack, "up-back", pw)[1]).start()
        try:
            op_id, _ = upgrade(stack, "up-back")
            op = wait_operation(stack, op_id, timeout=120)
        finally:
            w.stop()
        eq((op["status"], op["error"]["code"]), ("failed", "ENGINE_UPGRADE_ROLLED_BACK"),
           f"the upgrade: {op}")
        assert first["id"] in op["error"]["message"], op["error"]
        after = wait_available(stack.api, "up-back")
        eq((after["engine"], after["engine_version"]), ("redis", "7.0"), "the spec as it was")
        eq(ports(after), before, "same nodes and ports")
        wait_until(lambda: all(n["status"] == "running" for n in nodes(
            clusters.get(stack.api, "up-back"))), 30, "every node running")
        for n in nodes(clusters.get(stack.api, "up-back")):
            eq(engine_version(n, pw), "redis 7.0.15", f"node {n['id']} on redis 7.0")
        _, master = sentinel_master(stack, "up-back", pw)
        eq([k for k, _ in w.acked if master.get(k) is None], [], "acknowledged writes lost")
        failed = [e for e in upgrade_events(stack, "up-back") if e["type"] == "EngineUpgradeFailed"]
        eq(len(failed), 1, "one EngineUpgradeFailed")
        assert failed[0]["detail"]["rolled_back"], failed[0]
    finally:
        agent.stop()
        agent.env = {}
        agent.start()
        agent.wait_registered(15)


def test_shard_without_replica_is_restarted_from_persistence(stack, cleanup):
    """A single node: its downtime is announced in the answer to the PATCH,
    and its data comes back from its append-only file on valkey 8.0."""
    body, pw = create(stack, cleanup, clusters.redis_group(
        "up-alone", replicas_per_shard=0, automatic_failover=False, multi_az=False))
    node = nodes(body)[0]
    with clusters.client(node["address"], node["port"], pw) as c:
        with c.pipeline(transaction=False) as p:
            for i in range(5000):
                p.set(f"k{i}", i)
            p.execute()
    op_id, patched = upgrade(stack, "up-alone")
    down = patched["pending_changes"]["engine_upgrade"]["downtime"]
    eq([(d["shard_id"], d["node_id"]) for d in down], [("0001", node["id"])],
       "the downtime announced up front")
    op = wait_operation(stack, op_id)
    eq(op["status"], "succeeded", f"the upgrade: {op}")
    check_upgraded(stack, "up-alone", pw, ports(body))
    with clusters.client(node["address"], node["port"], pw) as c:
        eq(c.dbsize(), 5000, "every key, from the append-only file")
    eq(op["report"]["downtime"], down, "the report's downtime")
