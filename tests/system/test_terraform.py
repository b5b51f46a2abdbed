"""test_terraform.py -- real Terraform with the official AWS provider (5.100,
from the local mirror) manages Cairn through the ElastiCache-compatible
endpoint, with docs/terraform/aws as its configuration: apply a cluster-mode
and a primary/replica group, plan right after (no changes), change engine and
version from redis 7.0 to valkey 8.0 (an in-place upgrade: no replacement,
endpoints and data kept), add a shard (slots moved online), import a cluster
the REST API made, destroy. That whole lifecycle runs in `make system-full`;
`make check` runs its first part (apply, then plan with no change).

Skips, saying why, without terraform or the mirror. The provider waits 30 s
before it first polls a new or deleted group, so this takes a few minutes."""

import re

import pytest

import clusters
import ec_tools
import tf_tools
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("terraform")

VALKEY = ["-var", "engine=valkey", "-var", "engine_version=8.0"]
SHARDS = ["-var", "shards=4"]

IMPORTED = '''
resource "aws_elasticache_replication_group" "imported" {
  replication_group_id       = "imported"
  description                = "made by the REST API"
  engine                     = "valkey"
  engine_version             = "8.0"
  node_type                  = "cache.t3.micro"
  num_cache_clusters         = 2
  automatic_failover_enabled = true
  multi_az_enabled           = true
}
'''

# Arguments of the provider's own that no API returns: after an import the
# provider plans to record them (it does so against AWS too) and nothing else.
PROVIDER_ONLY = {"apply_immediately", "auth_token_update_strategy"}


def requests_to_endpoint(log, offset):
    """How many requests the ElastiCache endpoint answered since offset of the log."""
    return len(re.findall(r'msg="request" [^\n]*method="POST" path="/" ', log.text(offset)))


def endpoints(body):
    return sorted((n["address"], n["port"]) for n in clusters.nodes(body))


# 4 minutes on an idle machine (7.5 under load), most of it the provider's
# 30 s waits: longer than the rest of make system's budget allows. Terraform
# stays in make check through tests/terraform (the examples against the
# routes and spec) and test_elasticache.py (the same endpoint through boto3
# and aws-cli); make system-full runs this.
def test_terraform_apply_and_plan(stack, cleanup, tmp_path):
    """The slice make check runs: the example applied and planned again with
    no change (the clusters go by the REST API after)."""
    tf_tools.require()
    cleanup.extend(["sessions", "catalog"])
    work = tf_tools.Workdir(tmp_path, stack.inst.url, ec_tools.credentials(stack.api))
    work.ok("init", "-input=false")
    out, secs = work.ok("apply", "-auto-approve", "-input=false")
    print(f"\napply of two groups: {secs:.1f} s")
    eq({cid: clusters.get(stack.api, cid)["status"] for cid in ("sessions", "catalog")},
       {"sessions": "available", "catalog": "available"}, "after apply")
    rc, out, err, _ = work.run("plan", "-detailed-exitcode", "-input=false")
    eq(rc, 0, f"plan right after apply shows no changes:\n{out[-3000:]}\n{err[-2000:]}")


@pytest.mark.full
def test_terraform_lifecycle(stack, cleanup, tmp_path):
    tf_tools.require()
    cleanup.extend(["sessions", "catalog", "imported"])
    work = tf_tools.Workdir(tmp_path, stack.inst.url, ec_tools.credentials(stack.api))
    log = stack.cairnd.log
    work.ok("init", "-input=false")

    at = log.size()
    out, secs = work.ok("apply", "-auto-approve", "-input=false")
    print(f"\napply of two groups: {secs:.1f} s, {requests_to_endpoint(log, at)} requests")
    sessions = clusters.get(stack.api, "sessions")
    catalog = clusters.get(stack.api, "catalog")
    eq((sessions["status"], catalog["status"]), ("available", "available"), "after apply")
    eq((sessions["cluster_mode"], sessions["num_shards"], sessions["replicas_per_shard"]),
       ("enabled", 3, 1), "sessions' shape")
    eq((catalog["cluster_mode"], catalog["replicas_per_shard"]), ("disabled", 2),
       "catalog's shape")
    eq(sessions["tags"], {"team": "payments"}, "tags")
    eq((sessions["engine"], sessions["engine_version"]), ("redis", "7.0"), "engine")

    rc, out, err, _ = work.run("plan", "-detailed-exitcode", "-input=false")
    eq(rc, 0, f"plan right after apply shows no changes:\n{out[-3000:]}\n{err[-2000:]}")

    # Data in the primary/replica group, which the upgrade must keep.
    pw = clusters.password(stack.api, "catalog")
    primary = catalog["endpoints"]["primary"]
    with clusters.client(primary["address"], primary["port"], pw) as c:
        c.set("sku:42", "kept")
    before = {cid: endpoints(clusters.get(stack.api, cid)) for cid in ("sessions", "catalog")}

    rc, out, err, _ = work.run("plan", "-input=false", *VALKEY)
    assert "must be replaced" not in out and "0 to add, 2 to change, 0 to destroy" in out, out
    out, secs = work.ok("apply", "-auto-approve", "-input=false", *VALKEY)
    print(f"upgrade of both groups to valkey 8.0: {secs:.1f} s")
    for cid in ("sessions", "catalog"):
        body = clusters.get(stack.api, cid)
        eq((body["engine"], body["engine_version"], body["status"]), ("valkey", "8.0", "available"),
           f"{cid} after the upgrade")
        assert all(n["engine_version"].startswith("8.0") for n in clusters.nodes(body)), body
        eq(endpoints(body), before[cid], f"{cid}'s endpoints, unchanged")
    primary = clusters.get(stack.api, "catalog")["endpoints"]["primary"]
    with clusters.client(primary["address"], primary["port"], pw) as c:
        eq(c.get("sku:42"), "kept", "data after the upgrade")
    rc, out, err, _ = work.run("plan", "-detailed-exitcode", "-input=false", *VALKEY)
    eq(rc, 0, f"plan after the upgrade shows no changes:\n{out[-3000:]}\n{err[-2000:]}")

    # One more shard: the slots move online, the data stays.
    clusters.wait_until(lambda: clusters.get(stack.api, "sessions")["current_operation"] is None,
                        30, "sessions idle")
    rc, out, err, _ = work.run("plan", "-input=false", *VALKEY, *SHARDS)
    assert "must be replaced" not in out and "0 to add, 1 to change, 0 to destroy" in out, out
    out, secs = work.ok("apply", "-auto-approve", "-input=false", *VALKEY, *SHARDS)
    print(f"sessions from 3 to 4 shards: {secs:.1f} s")
    body = clusters.get(stack.api, "sessions")
    eq((body["num_shards"], len(body["shards"]), body["status"]), (4, 4, "available"),
       "sessions after the scale")
    assert all(s["slots"] for s in body["shards"]), body["shards"]
    rc, out, err, _ = work.run("plan", "-detailed-exitcode", "-input=false", *VALKEY, *SHARDS)
    eq(rc, 0, f"plan after the scale shows no changes:\n{out[-3000:]}\n{err[-2000:]}")

    # A cluster the REST API made, imported and then managed.
    r = stack.api.post("/v1/clusters", json=clusters.redis_group(
        "imported", engine="valkey", engine_version="8.0", replicas_per_shard=1,
        description="made by the REST API"))
    assert r.status_code == 202, r.text
    clusters.wait_available(stack.api, "imported")
    with open(work.path / "main.tf", "a") as f:
        f.write(IMPORTED)
    work.ok("import", "-input=false", *VALKEY, *SHARDS,
            "aws_elasticache_replication_group.imported", "imported")
    rc, out, err, _ = work.run("plan", "-detailed-exitcode", "-input=false", *VALKEY, *SHARDS)
    changed = set(re.findall(r"^\s+[-+~] (\w+)\s+=", out, re.M))
    assert rc in (0, 2) and "must be replaced" not in out and changed <= PROVIDER_ONLY, \
        f"plan after import changes more than the provider's own arguments:\n{out[-3000:]}"

    at = log.size()
    out, secs = work.ok("destroy", "-auto-approve", "-input=false", *VALKEY, *SHARDS)
    print(f"destroy of three groups: {secs:.1f} s, {requests_to_endpoint(log, at)} requests")
    eq(stack.api.get("/v1/clusters").json()["clusters"], [], "clusters left after destroy")
