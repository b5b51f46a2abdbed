"""test_scale_replicas.py -- PATCH replicas_per_shard on real engines: up and
down while a writer keeps writing through a Sentinel-aware client (no
acknowledged write lost, every key readable after), in cluster mode with
cairnd killed with -9 halfway, and the refusals (out of range, no room,
busy).

Five hosts in three AZs: four nodes of a shard need four hosts.
"""

import time

import pytest

import clusters
import expect
from clusters import events, nodes, password, wait_available, wait_until
from expect import eq
from test_ha import ClusterClient, Writer, sentinel_master
from test_upgrade import wait_operation

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "replicas", agent_args=["--metrics-interval", "1", "--metrics-period", "2"])


@pytest.fixture(scope="module", autouse=True)
def five_hosts(stack):
    stack.add_host("vm-d", "az-a")
    stack.add_host("vm-e", "az-b")


def create(stack, cleanup, body):
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"], timeout=60), password(stack.api, body["id"])


def scale(stack, cid, n, **extra):
    """PATCH replicas_per_shard; returns the operation's id."""
    r = stack.api.patch(f"/v1/clusters/{cid}", json=dict(replicas_per_shard=n, **extra))
    body = expect.json_ok(r, 202)
    eq(body["replicas_per_shard"], n, "the spec shows the target")
    op_id = r.headers["Location"].rsplit("/", 1)[1]
    # pending_changes says what comes -- unless the operation (removing a
    # replica takes milliseconds) has ended before the answer was written.
    pending = body["pending_changes"].get("replicas_per_shard")
    if pending is None:
        op = expect.json_ok(stack.api.get(f"/v1/operations/{op_id}"))
        eq(op["status"], "succeeded", f"no pending change, and the operation: {op}")
    else:
        eq(pending["to"], n, "pending_changes")
    return op_id


def scaled(stack, cid, op_id, per_shard):
    op = wait_operation(stack, op_id, timeout=90)
    eq(op["status"], "succeeded", f"the scaling: {op}")
    body = wait_available(stack.api, cid)
    for s in body["shards"]:
        roles = sorted(n["role"] for n in s["nodes"])
        eq(roles, ["primary"] + ["replica"] * per_shard, f"shard {s['id']} roles")
    assert "replicas_per_shard" not in body["pending_changes"], body["pending_changes"]
    return body


def typed(stack, cid, op_id, kind):
    return [e for e in events(stack.api, cid) if e["type"] == kind and e["operation_id"] == op_id]


def test_replicas_up_and_down_under_a_writer(stack, cleanup):
    """1 -> 3 -> 1 replicas of a primary/replica group with a writer on: the
    new replicas are readers only once in sync, the most lagging go, and
    nothing acknowledged is lost. Refusals on the way."""
    body, pw = create(stack, cleanup, clusters.redis_group(
        "rp-group", engine="valkey", engine_version="8.0", replicas_per_shard=1))
    _, master = sentinel_master(stack, "rp-group", pw)
    with master.pipeline(transaction=False) as p:
        for i in range(5000):
            p.set(f"pre{i}", i)
        p.execute()

    # Refusals: out of range, and more nodes a shard than there are hosts.
    expect.problem(stack.api.patch("/v1/clusters/rp-group", json={"replicas_per_shard": 6}),
                   "VALIDATION_FAILED", fields=["replicas_per_shard"])
    r = stack.api.patch("/v1/clusters/rp-group", json={"replicas_per_shard": 5})
    expect.problem(r, "INSUFFICIENT_CAPACITY")
    assert "shard 0001 has 1 replica(s)" in r.json()["detail"], r.json()
    eq(clusters.get(stack.api, "rp-group")["replicas_per_shard"], 1, "nothing stored")
    eq(len(nodes(clusters.get(stack.api, "rp-group"))), 2, "nothing placed")

    w = Writer(lambda: sentinel_master(stack, "rp-group", pw)[1]).start()
    try:
        op_id = scale(stack, "rp-group", 3)
        # Busy: one operation at a time.
        expect.problem(stack.api.patch("/v1/clusters/rp-group", json={"replicas_per_shard": 2}),
                       "OPERATION_IN_PROGRESS")
        # A reader is never one that is not in sync.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            b = clusters.get(stack.api, "rp-group")
            readers = {(x["address"], x["port"]) for x in b["endpoints"]["readers"]}
            for n in nodes(b):
                if (n["address"], n["port"]) in readers:
                    eq(n["replication"]["link_status"], "up", f"reader {n['id']} linked")
            if b["status"] == "available":
                break
            time.sleep(0.05)
        up = scaled(stack, "rp-group", op_id, 3)
        eq(len(up["endpoints"]["readers"]), 3, "three readers")
        added = typed(stack, "rp-group", op_id, "ReplicaAdded")
        eq(len(added), 2, "ReplicaAdded per new node")
        for e in added:
            eq(sorted(e["detail"]), ["az", "host_id", "node", "shard"], "ReplicaAdded detail")
        hosts = [n["host_id"] for n in nodes(up)]
        eq(len(set(hosts)), 4, "no two nodes of the shard on one host")

        op_id = scale(stack, "rp-group", 1)
        down = scaled(stack, "rp-group", op_id, 1)
        eq(len(typed(stack, "rp-group", op_id, "ReplicaRemoved")), 2, "ReplicaRemoved per node")
        eq(len(down["endpoints"]["readers"]), 1, "one reader")
    finally:
        w.stop()
    eq(w.errors, [], "no write failed")
    _, master = sentinel_master(stack, "rp-group", pw)
    missing = [k for k, _ in w.acked if master.get(k) is None]
    eq(missing, [], f"acknowledged writes lost (of {len(w.acked)})")
    eq(sum(1 for i in range(5000) if master.get(f"pre{i}") is not None), 5000,
       "every key from before")
    replica = next(n for n in nodes(down) if n["role"] == "replica")
    with clusters.client(replica["address"], replica["port"], pw) as c:
        wait_until(lambda: c.get(w.acked[-1][0]) is not None, 5, "the replica has the last write")


def cluster_view(node, pw):
    """The addresses ("ip:port") a node's CLUSTER NODES lists."""
    with clusters.client(node["address"], node["port"], pw) as c:
        raw = c.execute_command("CLUSTER", "NODES")
    lines = raw.keys() if isinstance(raw, dict) else [x.split()[1] for x in raw.splitlines()]
    return {x.split("@")[0] for x in lines}


def test_cluster_mode_scaling_resumes_after_kill9(stack, cleanup):
    """Cluster mode, 2 shards: 1 -> 2 replicas with cairnd killed with -9
    while the new nodes join, then 2 -> 1: the rest of the cluster forgets
    the removed nodes."""
    body, pw = create(stack, cleanup, clusters.valkey_cluster("rp-shards", num_shards=2))
    cc = ClusterClient(stack, "rp-shards", pw)
    w = Writer(lambda: cc).start()
    try:
        op_id = scale(stack, "rp-shards", 2)
        stack.kill9_cairnd()
        stack.restart_cairnd()
        up = scaled(stack, "rp-shards", op_id, 2)
        op_id = scale(stack, "rp-shards", 1)
        down = scaled(stack, "rp-shards", op_id, 1)
    finally:
        w.stop()
    eq(len(typed(stack, "rp-shards", op_id, "ReplicaRemoved")), 2, "one removed a shard")
    kept = {(n["address"], n["port"]) for n in nodes(down)}
    for n in nodes(down):
        eq(cluster_view(n, pw), {f"{a}:{p}" for a, p in kept}, f"node {n['port']} knows only the nodes kept")
    cc.reset()
    lost = [k for k, _ in w.acked if cc.all(lambda c, k=k: c.get(k) is None)]
    eq(lost, [], f"acknowledged writes lost (of {len(w.acked)})")
    assert len(nodes(up)) == 6, nodes(up)
