"""test_node_type.py -- PATCH node_type on real engines: cache.t3.small to
cache.t3.medium by a surge of new nodes and a planned failover per shard,
with a writer on (no acknowledged write lost, the write pause of each shard
recorded), in both cluster modes; and the refusal of a type too small for
the data.
"""

import pytest

import clusters
import expect
from clusters import events, nodes, password, wait_available
from expect import eq
from test_ha import ClusterClient, Writer, sentinel_master
from test_upgrade import wait_operation

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "nodetype", agent_args=["--metrics-interval", "1", "--metrics-period", "2"])


@pytest.fixture(scope="module", autouse=True)
def four_hosts(stack):
    stack.add_host("vm-d", "az-a")


def create(stack, cleanup, body):
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"], timeout=60), password(stack.api, body["id"])


def change_type(stack, cid, node_type):
    r = stack.api.patch(f"/v1/clusters/{cid}", json={"node_type": node_type})
    body = expect.json_ok(r, 202)
    eq(body["pending_changes"]["node_type"]["to"], node_type, "pending_changes")
    return r.headers["Location"].rsplit("/", 1)[1]


def changed(stack, cid, op_id, before, shards):
    op = wait_operation(stack, op_id, timeout=120)
    eq(op["status"], "succeeded", f"the change: {op}")
    body = wait_available(stack.api, cid)
    eq(body["node_type"], "cache.t3.medium", "the spec")
    assert not {n["id"] for n in nodes(body)} & before, "every old node is gone"
    eq(len(nodes(body)), len(before), "as many nodes as before")
    done = [e for e in events(stack.api, cid)
            if e["type"] == "NodeTypeChanged" and e["operation_id"] == op_id]
    eq(len(done), 1, "NodeTypeChanged")
    pauses = done[0]["detail"]["write_pauses"]
    eq(sorted(p["shard"] for p in pauses), shards, "a write pause per shard")
    assert all(0 <= p["write_pause_ms"] < 5000 for p in pauses), pauses
    print(f"\n{cid}: {done[0]['detail']['duration_ms']} ms, pauses "
          f"{[p['write_pause_ms'] for p in pauses]} ms")
    return body


def test_primary_replica_group_changes_type_under_a_writer(stack, cleanup):
    body, pw = create(stack, cleanup, clusters.redis_group(
        "nt-group", engine="valkey", engine_version="8.0", node_type="cache.t3.small",
        replicas_per_shard=1))
    before = {n["id"] for n in nodes(body)}
    w = Writer(lambda: sentinel_master(stack, "nt-group", pw)[1]).start()
    try:
        op_id = change_type(stack, "nt-group", "cache.t3.medium")
        expect.problem(stack.api.patch("/v1/clusters/nt-group", json={"replicas_per_shard": 2}),
                       "OPERATION_IN_PROGRESS")
        after = changed(stack, "nt-group", op_id, before, ["0001"])
    finally:
        w.stop()
    primary = next(n for n in nodes(after) if n["role"] == "primary")
    eq(after["endpoints"]["primary"], {"address": primary["address"], "port": primary["port"]},
       "the primary endpoint follows the new primary")
    with clusters.admin_client(primary) as c:
        maxmemory = int(c.config_get("maxmemory")["maxmemory"])
        assert maxmemory > 2000 << 20, f"maxmemory {maxmemory}: 75% of cache.t3.medium's"
        missing = [k for k, _ in w.acked if c.get(k) is None]
    eq(missing, [], f"acknowledged writes lost (of {len(w.acked)})")


def test_cluster_mode_changes_type_and_refuses_a_type_too_small(stack, cleanup):
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        "nt-shards", num_shards=2, node_type="cache.t3.small"))
    before = {n["id"] for n in nodes(body)}

    # About 420 MiB in one shard (the slot of {big}), more than the 75% of
    # micro's 0.5 GiB that may hold data; then wait for its agent to report it.
    rc = clusters.cluster_client(body, pw)
    blob = "x" * (1 << 20)
    with rc.pipeline(transaction=False) as p:
        for i in range(420):
            p.set(f"{{big}}{i}", blob)
        p.execute()
    rc.close()

    def refused():  # a dry run checks as the change would, and changes nothing
        r = stack.api.patch("/v1/clusters/nt-shards",
                            json={"node_type": "cache.t3.micro", "dry_run": True})
        return r.status_code == 409
    clusters.wait_until(refused, 20, "the data reported", interval=0.5)
    r = stack.api.patch("/v1/clusters/nt-shards", json={"node_type": "cache.t3.micro"})
    expect.problem(r, "INSUFFICIENT_MEMORY")
    assert "cache.t3.micro keeps" in r.json()["detail"], r.json()
    eq(clusters.get(stack.api, "nt-shards")["node_type"], "cache.t3.small", "nothing stored")

    cc = ClusterClient(stack, "nt-shards", pw)
    w = Writer(lambda: cc).start()
    try:
        op_id = change_type(stack, "nt-shards", "cache.t3.medium")
        changed(stack, "nt-shards", op_id, before, ["0001", "0002"])
    finally:
        w.stop()
    cc.reset()
    lost = [k for k, _ in w.acked if cc.all(lambda c, k=k: c.get(k) is None)]
    eq(lost, [], f"acknowledged writes lost (of {len(w.acked)})")
    eq(cc.all(lambda c: c.strlen("{big}7") == 1 << 20), True, "the data moved with the shard")
