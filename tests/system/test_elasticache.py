"""test_elasticache.py -- cairnd's ElastiCache-compatible endpoint as boto3 and
aws-cli drive it: real signatures (SigV4, verified against a Cairn token's
sealed secret), real clusters on real engines, the same clusters the REST API
shows, ElastiCache's fault codes for every refusal, and hostile requests.

Terraform's AWS provider against the same endpoint: test_terraform.py."""

import datetime
import time

import pytest
import requests

import clusters
import ec_tools
import expect
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("elasticache")

botocore_exceptions = pytest.importorskip("botocore.exceptions",
                                          reason="python3-boto3 is not installed")


@pytest.fixture(scope="module")
def admin(stack):
    return ec_tools.credentials(stack.api, "admin", "aws-admin")


@pytest.fixture(scope="module")
def ec(stack, admin):
    return ec_tools.boto3_client(stack.inst.url, admin)


def fault(call, code, status=None, **kw):
    """Run a boto3 call that must fail with ElastiCache's code; the message."""
    with pytest.raises(botocore_exceptions.ClientError) as e:
        call(**kw)
    err = e.value.response["Error"]
    eq(err["Code"], code, f"error code ({err.get('Message')})")
    if status is not None:
        eq(e.value.response["ResponseMetadata"]["HTTPStatusCode"], status, "HTTP status")
    return err["Message"]


def wait_status(ec, rg, status, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        g = ec.describe_replication_groups(ReplicationGroupId=rg)["ReplicationGroups"][0]
        if g["Status"] == status:
            return g
        assert time.monotonic() < deadline, f"{rg} is {g['Status']}, not {status}"
        time.sleep(0.1)


def wait_gone(ec, rg, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            ec.describe_replication_groups(ReplicationGroupId=rg)
        except botocore_exceptions.ClientError as e:
            eq(e.response["Error"]["Code"], "ReplicationGroupNotFoundFault", "after delete")
            return
        assert time.monotonic() < deadline, f"{rg} still exists"
        time.sleep(0.2)


def test_cluster_mode_group_through_boto3(stack, cleanup, ec):
    """Create, describe, tag, scale replicas, fail over and delete a cluster-mode
    group; every answer agrees with the REST API's view of the same cluster."""
    cleanup.append("ec-shards")
    g = ec.create_replication_group(
        ReplicationGroupId="EC-Shards", ReplicationGroupDescription="sessions",
        Engine="valkey", EngineVersion="8.0", CacheNodeType="cache.t3.micro",
        NumNodeGroups=2, ReplicasPerNodeGroup=1, AutomaticFailoverEnabled=True,
        MultiAZEnabled=True, PreferredMaintenanceWindow="mon:03:00-mon:04:00",
        Tags=[{"Key": "team", "Value": "payments"}])["ReplicationGroup"]
    eq(g["ReplicationGroupId"], "ec-shards", "id, lower-cased as ElastiCache keeps it")
    eq(g["Status"], "creating", "status of a new group")
    g = wait_status(ec, "ec-shards", "available")
    rest = clusters.wait_available(stack.api, "ec-shards")
    eq(rest["engine"], "valkey", "REST engine")
    eq(rest["num_shards"], 2, "REST num_shards")
    eq(rest["multi_az"], True, "REST multi_az")
    eq(rest["maintenance_window"], "mon:03:00-mon:04:00", "REST maintenance_window")
    eq(rest["tags"], {"team": "payments"}, "REST tags")
    eq(g["ClusterEnabled"], True, "ClusterEnabled")
    eq(g["AutomaticFailover"], "enabled", "AutomaticFailover")
    eq(g["MultiAZ"], "enabled", "MultiAZ")
    eq([ng["NodeGroupId"] for ng in g["NodeGroups"]], [s["id"] for s in rest["shards"]],
       "node groups are the shards")
    eq([ng["Slots"] for ng in g["NodeGroups"]], [",".join(s["slots"]) for s in rest["shards"]],
       "slots")
    eq(sorted(g["MemberClusters"]),
       ["ec-shards-0001-001", "ec-shards-0001-002", "ec-shards-0002-001", "ec-shards-0002-002"],
       "member clusters")
    eq(g["ConfigurationEndpoint"]["Address"], "127.0.0.1", "configuration endpoint address")
    assert g["ARN"].endswith(":replicationgroup:ec-shards"), g["ARN"]

    # Each member is one node, with its own endpoint as REST shows it.
    by_member = {}
    for s, shard in enumerate(rest["shards"]):
        for k, n in enumerate(shard["nodes"]):
            by_member[f"ec-shards-{s + 1:04d}-{k + 1:03d}"] = n
    for member, n in by_member.items():
        cc = ec.describe_cache_clusters(CacheClusterId=member,
                                        ShowCacheNodeInfo=True)["CacheClusters"]
        eq(len(cc), 1, f"{member} described")
        node = cc[0]["CacheNodes"][0]
        eq((node["Endpoint"]["Address"], node["Endpoint"]["Port"]), (n["address"], n["port"]),
           f"{member} endpoint")
        eq(cc[0]["EngineVersion"], n["engine_version"], f"{member} engine version")
        eq(cc[0]["CacheParameterGroup"]["CacheParameterGroupName"],
           "default.valkey8.cluster.on", "parameter group")
    fault(ec.describe_cache_clusters, "CacheClusterNotFound", 404,
          CacheClusterId="ec-shards-0009-001")

    # Tags by ARN, the REST spec's tags underneath.
    arn = g["ARN"]
    tags = ec.add_tags_to_resource(ResourceName=arn,
                                   Tags=[{"Key": "env", "Value": "prod"}])["TagList"]
    eq(sorted((t["Key"], t["Value"]) for t in tags), [("env", "prod"), ("team", "payments")],
       "tags after add")
    ec.remove_tags_from_resource(ResourceName=arn, TagKeys=["team"])
    eq(ec.list_tags_for_resource(ResourceName=arn)["TagList"], [{"Key": "env", "Value": "prod"}],
       "tags after remove")
    eq(clusters.get(stack.api, "ec-shards")["tags"], {"env": "prod"}, "REST tags after remove")
    member_arn = arn.replace(":replicationgroup:ec-shards", ":cluster:ec-shards-0001-001")
    eq(ec.list_tags_for_resource(ResourceName=member_arn)["TagList"],
       [{"Key": "env", "Value": "prod"}], "a member's tags are its group's")
    fault(ec.list_tags_for_resource, "InvalidARN", 400, ResourceName="arn:aws:s3:::bucket")

    # Replicas scale through IncreaseReplicaCount as PATCH replicas_per_shard
    # does: out of range is refused the same way, and 2 per shard works.
    fault(ec.increase_replica_count, "InvalidParameterValue", 400,
          ReplicationGroupId="ec-shards", NewReplicaCount=6, ApplyImmediately=True)
    g = ec.increase_replica_count(ReplicationGroupId="ec-shards", NewReplicaCount=2,
                                  ApplyImmediately=True)["ReplicationGroup"]
    eq(g["Status"], "modifying", "status once scaling is accepted")
    fault(ec.decrease_replica_count, "InvalidReplicationGroupState", 400,
          ReplicationGroupId="ec-shards", NewReplicaCount=1, ApplyImmediately=True)
    wait_status(ec, "ec-shards", "available")
    rest = clusters.wait_available(stack.api, "ec-shards")
    eq(rest["replicas_per_shard"], 2, "REST replicas_per_shard")
    eq(len(clusters.nodes(rest)), 6, "three nodes a shard")
    ec.decrease_replica_count(ReplicationGroupId="ec-shards", NewReplicaCount=1,
                              ApplyImmediately=True)
    wait_status(ec, "ec-shards", "available")
    rest = clusters.wait_available(stack.api, "ec-shards")
    eq(len(clusters.nodes(rest)), 4, "two nodes a shard again")

    # A planned failover of shard 0002 through TestFailover.
    before = {n["id"]: n["role"] for n in clusters.nodes(rest) if n["shard"] == "0002"}
    g = ec.test_failover(ReplicationGroupId="ec-shards", NodeGroupId="0002")["ReplicationGroup"]
    eq(g["Status"], "modifying", "status once a failover is accepted")
    wait_status(ec, "ec-shards", "available")
    deadline = time.monotonic() + 20
    while True:
        after = {n["id"]: n["role"]
                 for n in clusters.nodes(clusters.get(stack.api, "ec-shards"))
                 if n["shard"] == "0002"}
        if all(after[i] != r for i, r in before.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert all(after[i] != r for i, r in before.items()), f"roles {before} -> {after}"
    fault(ec.test_failover, "NodeGroupNotFoundFault", 404, ReplicationGroupId="ec-shards",
          NodeGroupId="0007")

    events = ec.describe_events(SourceIdentifier="ec-shards", SourceType="replication-group",
                                Duration=60)["Events"]
    assert events and all(e["SourceIdentifier"] == "ec-shards" for e in events), events
    assert any("failover" in e["Message"].lower() for e in events), \
        [e["Message"] for e in events]

    # Last, as cairnd may move a primary across AZs after it: one more shard,
    # its slots moved to it online.
    ec.modify_replication_group_shard_configuration(
        ReplicationGroupId="ec-shards", NodeGroupCount=3, ApplyImmediately=True)
    wait_status(ec, "ec-shards", "available", timeout=120)
    rest = clusters.wait_available(stack.api, "ec-shards")
    eq((rest["num_shards"], len(rest["shards"])), (3, 3), "REST num_shards")
    assert all(s["slots"] for s in rest["shards"]), rest["shards"]
    # Scaling in removes the highest-numbered shards: a list that names
    # others is refused, not ignored.
    fault(ec.modify_replication_group_shard_configuration, "InvalidParameterValue",
          ReplicationGroupId="ec-shards", NodeGroupCount=2, NodeGroupsToRemove=["0001"],
          ApplyImmediately=True)
    clusters.wait_until(lambda: clusters.get(stack.api, "ec-shards")["current_operation"] is None,
                        30, "no operation running")

    # Once the group has been quiet a few seconds cairnd may move a primary
    # back across AZs by a planned failover; a delete in that window is
    # refused as ElastiCache refuses one while modifying, and goes through
    # once it has ended -- but nothing else may be running.
    deadline = time.monotonic() + 30
    while True:
        try:
            g = ec.delete_replication_group(ReplicationGroupId="ec-shards")["ReplicationGroup"]
            break
        except ec.exceptions.InvalidReplicationGroupStateFault:
            running = [o for o in clusters.operations(stack.api, "ec-shards")
                       if o["status"] in ("pending", "running")]
            assert all(o["kind"] == "failover" for o in running), running
            assert time.monotonic() < deadline, running
            time.sleep(0.2)
    eq(g["Status"], "deleting", "status once deleted")
    wait_gone(ec, "ec-shards")
    eq(stack.api.get("/v1/clusters/ec-shards").status_code, 404, "REST after delete")


def test_primary_replica_group_through_aws_cli(stack, cleanup, admin):
    """aws-cli: create a cluster-mode-disabled group, describe it, fail it over,
    read its events, delete it."""
    url = stack.inst.url
    cleanup.append("ec-cli")
    rc, out, err = ec_tools.aws(url, admin, "create-replication-group",
                                "--replication-group-id", "ec-cli",
                                "--replication-group-description", "catalog",
                                "--engine", "redis", "--engine-version", "7.0",
                                "--cache-node-type", "cache.t3.micro",
                                "--num-cache-clusters", "2", "--automatic-failover-enabled")
    eq(rc, 0, f"create-replication-group ({err})")
    eq(out["ReplicationGroup"]["Status"], "creating", "status")
    rest = clusters.wait_available(stack.api, "ec-cli")
    eq((rest["cluster_mode"], rest["replicas_per_shard"]), ("disabled", 1), "REST shape")
    eq(rest["multi_az"], False, "MultiAZ as ElastiCache defaults it")

    rc, out, err = ec_tools.aws(url, admin, "describe-replication-groups",
                                "--replication-group-id", "ec-cli")
    eq(rc, 0, f"describe-replication-groups ({err})")
    g = out["ReplicationGroups"][0]
    eq(g["ClusterEnabled"], False, "ClusterEnabled")
    ng = g["NodeGroups"][0]
    primary = rest["endpoints"]["primary"]
    eq(ng["PrimaryEndpoint"]["Address"], primary["address"], "primary endpoint")
    roles = {m["CacheClusterId"]: m["CurrentRole"] for m in ng["NodeGroupMembers"]}
    eq(sorted(roles), ["ec-cli-001", "ec-cli-002"], "members")
    eq(sorted(roles.values()), ["primary", "replica"], "roles")
    primary_member = next(m for m in ng["NodeGroupMembers"] if m["CurrentRole"] == "primary")
    eq(primary_member["ReadEndpoint"]["Port"], primary["port"], "the primary's own endpoint")

    rc, out, err = ec_tools.aws(url, admin, "test-failover", "--replication-group-id", "ec-cli",
                                "--node-group-id", "0001")
    eq(rc, 0, f"test-failover ({err})")
    clusters.wait_until(lambda: clusters.get(stack.api, "ec-cli")["endpoints"]["primary"]
                        not in (None, primary), 30, "a new primary")

    rc, out, err = ec_tools.aws(url, admin, "describe-events", "--source-identifier", "ec-cli",
                                "--source-type", "replication-group")
    eq(rc, 0, f"describe-events ({err})")
    assert out["Events"], "events of ec-cli"

    rc, out, err = ec_tools.aws(url, admin, "describe-replication-groups",
                                "--replication-group-id", "missing-group")
    assert rc != 0 and "ReplicationGroupNotFoundFault" in err, (rc, err)

    clusters.wait_available(stack.api, "ec-cli")
    rc, out, err = ec_tools.aws(url, admin, "delete-replication-group",
                                "--replication-group-id", "ec-cli")
    eq(rc, 0, f"delete-replication-group ({err})")
    clusters.wait_gone(stack.api, "ec-cli")


def wait_snapshot(ec, name, status="available", timeout=60):
    """DescribeSnapshots of one name until it is status; the Snapshot."""
    deadline = time.monotonic() + timeout
    while True:
        snap = ec.describe_snapshots(SnapshotName=name)["Snapshots"][0]
        if snap["SnapshotStatus"] == status:
            return snap
        assert snap["SnapshotStatus"] in ("creating", "available"), snap
        assert time.monotonic() < deadline, f"snapshot {name} is {snap['SnapshotStatus']}"
        time.sleep(0.1)


def snapshot_window(hours_from_now):
    """A daily window opening that many hours from now (UTC), so no automatic
    snapshot fires while the test runs."""
    h = (time.gmtime().tm_hour + hours_from_now) % 24
    return f"{h:02d}:00-{(h + 1) % 24:02d}:00"


def test_snapshots_through_boto3_and_aws_cli(stack, cleanup, ec, admin):
    """ElastiCache's snapshot API on Cairn's backups: automatic snapshot
    settings on a group (create, modify, describe, the REST spec beneath);
    CreateSnapshot, DescribeSnapshots until available; a group restored from
    it by SnapshotName, its shape and data the snapshot's; a final snapshot
    on DeleteReplicationGroup that outlives the group; DeleteSnapshot; and
    the faults of names missing, taken or busy."""
    api = stack.api
    window, later = snapshot_window(6), snapshot_window(9)
    cleanup += ["ec-snap", "ec-snap-copy"]
    g = ec.create_replication_group(
        ReplicationGroupId="ec-snap", ReplicationGroupDescription="orders", Engine="valkey",
        EngineVersion="8.0", CacheNodeType="cache.t3.micro", NumCacheClusters=2,
        AutomaticFailoverEnabled=True, SnapshotRetentionLimit=3,
        SnapshotWindow=window)["ReplicationGroup"]
    eq((g["SnapshotRetentionLimit"], g["SnapshotWindow"]), (3, window), "snapshot settings")
    rest = clusters.wait_available(api, "ec-snap")
    eq((rest["snapshot_retention_days"], rest["snapshot_window"]), (3, window), "REST spec")
    msg = fault(ec.modify_replication_group, "InvalidParameterValue", 400,
                ReplicationGroupId="ec-snap", SnapshotWindow="25:00-26:00")
    assert "SnapshotWindow" in msg, msg
    fault(ec.modify_replication_group, "InvalidParameterValue", 400,
          ReplicationGroupId="ec-snap", SnapshotRetentionLimit=36)
    fault(ec.modify_replication_group, "InvalidParameterValue", 400,
          ReplicationGroupId="ec-snap", SnapshotRetentionLimit=5,
          SnapshottingClusterId="other-001")
    # As the AWS provider turns automatic snapshots on: with the group's
    # first member as SnapshottingClusterId.
    g = ec.modify_replication_group(ReplicationGroupId="ec-snap", SnapshotRetentionLimit=5,
                                    SnapshotWindow=later, SnapshottingClusterId="ec-snap-001",
                                    ApplyImmediately=True)["ReplicationGroup"]
    eq((g["SnapshotRetentionLimit"], g["SnapshotWindow"]), (5, later), "after modify")
    rest = clusters.get(api, "ec-snap")
    eq((rest["snapshot_retention_days"], rest["snapshot_window"]), (5, later), "REST after")
    member = ec.describe_cache_clusters(CacheClusterId="ec-snap-001")["CacheClusters"][0]
    eq((member["SnapshotRetentionLimit"], member["SnapshotWindow"]), (5, later), "a member's")

    pw = clusters.password(api, "ec-snap")
    primary = rest["endpoints"]["primary"]
    with clusters.client(primary["address"], primary["port"], pw) as c:
        for i in range(200):
            c.set(f"order:{i}", f"v{i}")
        eq(c.execute_command("WAIT", 1, 5000), 1, "the replica has the keys")  # it is saved

    snap = ec.create_snapshot(ReplicationGroupId="EC-Snap",
                              SnapshotName="ec-snap-one")["Snapshot"]
    eq((snap["SnapshotName"], snap["ReplicationGroupId"], snap["SnapshotStatus"],
        snap["SnapshotSource"]), ("ec-snap-one", "ec-snap", "creating", "manual"), "created")
    fault(ec.delete_snapshot, "InvalidSnapshotState", 400, SnapshotName="ec-snap-one")
    fault(ec.create_snapshot, "InvalidReplicationGroupState", 400, ReplicationGroupId="ec-snap",
          SnapshotName="ec-snap-two")   # one operation at a time
    snap = wait_snapshot(ec, "ec-snap-one")
    eq((snap["Engine"], snap["EngineVersion"], snap["CacheNodeType"], snap["NumNodeGroups"],
        snap["AutomaticFailover"], snap["SnapshotRetentionLimit"], snap["SnapshotWindow"],
        snap["ReplicationGroupDescription"]),
       ("valkey", "8.0", "cache.t3.micro", 1, "enabled", 5, later, "orders"), "the snapshot")
    eq([n["NodeGroupId"] for n in snap["NodeSnapshots"]], ["0001"], "node snapshots")
    assert snap["NodeSnapshots"][0]["CacheSize"].endswith(" MB"), snap["NodeSnapshots"]
    assert snap["ARN"].endswith(":snapshot:ec-snap-one"), snap["ARN"]
    eq(expect.json_ok(api.get("/v1/snapshots/ec-snap-one"))["keys"], 200, "REST keys")
    clusters.wait_until(lambda: ec.describe_replication_groups(
        ReplicationGroupId="ec-snap")["ReplicationGroups"][0]["Status"] == "available",
        30, "the group available after its snapshot")

    fault(ec.create_snapshot, "SnapshotAlreadyExistsFault", 400, ReplicationGroupId="ec-snap",
          SnapshotName="ec-snap-one")
    fault(ec.create_snapshot, "ReplicationGroupNotFoundFault", 404,
          ReplicationGroupId="nothing-here", SnapshotName="ec-snap-two")
    msg = fault(ec.create_snapshot, "InvalidParameterValue", 400, ReplicationGroupId="ec-snap",
                SnapshotName="Not_A_Name")
    assert "SnapshotName" in msg, msg
    fault(ec.describe_snapshots, "SnapshotNotFoundFault", 404, SnapshotName="no-such-snapshot")
    fault(ec.describe_snapshots, "InvalidParameterValue", 400, MaxRecords=51)
    listed = ec.describe_snapshots(ReplicationGroupId="ec-snap",
                                   ShowNodeGroupConfig=True)["Snapshots"]
    eq([s["SnapshotName"] for s in listed], ["ec-snap-one"], "the group's snapshots")
    eq(listed[0]["NodeSnapshots"][0]["NodeGroupConfiguration"]["ReplicaCount"], 1,
       "node group configuration")
    eq(ec.describe_snapshots(ReplicationGroupId="ec-snap", SnapshotSource="system")["Snapshots"],
       [], "no automatic snapshot")
    eq(len(ec.describe_snapshots(ReplicationGroupId="ec-snap",
                                 SnapshotSource="user")["Snapshots"]), 1, "one manual")

    # A group restored from the snapshot by name: everything the request
    # leaves out of its shape is the snapshot's.
    fault(ec.create_replication_group, "SnapshotNotFoundFault", 404,
          ReplicationGroupId="ec-snap-copy", ReplicationGroupDescription="copy",
          SnapshotName="no-such-snapshot")
    fault(ec.create_replication_group, "InvalidParameterValue", 400,
          ReplicationGroupId="ec-snap-copy", ReplicationGroupDescription="copy",
          SnapshotArns=["arn:aws:s3:::bucket/dump.rdb"])
    g = ec.create_replication_group(ReplicationGroupId="ec-snap-copy",
                                    ReplicationGroupDescription="copy",
                                    SnapshotName="ec-snap-one")["ReplicationGroup"]
    eq(g["Status"], "creating", "a restore's status")
    copy = clusters.wait_available(api, "ec-snap-copy", timeout=60)
    eq((copy["engine"], copy["engine_version"], copy["node_type"], copy["cluster_mode"],
        copy["replicas_per_shard"], copy["restore_from"]),
       ("valkey", "8.0", "cache.t3.micro", "disabled", 1, {"snapshot_id": "ec-snap-one"}),
       "the restored group's spec")
    primary = copy["endpoints"]["primary"]
    with clusters.client(primary["address"], primary["port"],
                         clusters.password(api, "ec-snap-copy")) as c:
        eq((c.dbsize(), c.get("order:7")), (200, "v7"), "the restored data")

    # DeleteReplicationGroup with a final snapshot, through aws-cli.
    url = stack.inst.url
    rc, out, err = ec_tools.aws(url, admin, "delete-replication-group",
                                "--replication-group-id", "ec-snap",
                                "--final-snapshot-identifier", "ec-snap-one")
    assert rc != 0 and "SnapshotAlreadyExistsFault" in err, (rc, err)
    eq(clusters.get(api, "ec-snap")["status"], "available", "the group after the refusal")
    rc, out, err = ec_tools.aws(url, admin, "delete-replication-group",
                                "--replication-group-id", "ec-snap",
                                "--final-snapshot-identifier", "ec-snap-final")
    eq(rc, 0, f"delete-replication-group ({err})")
    eq(out["ReplicationGroup"]["Status"], "deleting", "status")
    wait_gone(ec, "ec-snap")
    final = wait_snapshot(ec, "ec-snap-final")
    eq((final["ReplicationGroupId"], final["SnapshotSource"]), ("ec-snap", "manual"),
       "the final snapshot")
    assert "SnapshotWindow" not in final, final  # its group is gone
    rc, out, err = ec_tools.aws(url, admin, "describe-snapshots",
                                "--replication-group-id", "ec-snap")
    eq(rc, 0, f"describe-snapshots ({err})")
    eq(sorted(s["SnapshotName"] for s in out["Snapshots"]), ["ec-snap-final", "ec-snap-one"],
       "the snapshots of the deleted group")

    snap = ec.delete_snapshot(SnapshotName="ec-snap-final")["Snapshot"]
    eq(snap["SnapshotStatus"], "deleting", "DeleteSnapshot's answer")
    clusters.wait_until(lambda: api.get("/v1/snapshots/ec-snap-final").status_code == 404,
                        30, "the final snapshot gone")
    fault(ec.delete_snapshot, "SnapshotNotFoundFault", 404, SnapshotName="ec-snap-final")
    ec.delete_replication_group(ReplicationGroupId="ec-snap-copy")
    wait_gone(ec, "ec-snap-copy")
    ec.delete_snapshot(SnapshotName="ec-snap-one")
    clusters.wait_until(lambda: api.get("/v1/snapshots/ec-snap-one").status_code == 404,
                        30, "the snapshot gone")


def test_refusals_carry_elasticache_fault_codes(stack, cleanup, ec):
    fault(ec.describe_replication_groups, "ReplicationGroupNotFoundFault", 404,
          ReplicationGroupId="nothing-here")
    base = dict(ReplicationGroupDescription="x", Engine="valkey", EngineVersion="8.0",
                CacheNodeType="cache.t3.micro", NumCacheClusters=1)
    msg = fault(ec.create_replication_group, "InvalidParameterValue", 400,
                ReplicationGroupId="ec-bad", **dict(base, CacheNodeType="cache.x9.huge"))
    assert "CacheNodeType" in msg, msg
    msg = fault(ec.create_replication_group, "InvalidParameterValue", 400,
                ReplicationGroupId="ec-bad", **dict(base, PreferredMaintenanceWindow="noon"))
    assert "PreferredMaintenanceWindow" in msg, msg
    fault(ec.create_replication_group, "InvalidParameterValue", 400, ReplicationGroupId="ec-bad",
          AtRestEncryptionEnabled=True, **base)
    fault(ec.create_replication_group, "InvalidParameterValue", 400, ReplicationGroupId="ec-bad",
          Port=6379, **base)
    fault(ec.create_replication_group, "CacheParameterGroupNotFound", 404,
          ReplicationGroupId="ec-bad", CacheParameterGroupName="my-params", **base)
    fault(ec.create_replication_group, "InsufficientCacheClusterCapacity", 400,
          ReplicationGroupId="ec-bad", **dict(base, CacheNodeType="cache.r7g.16xlarge"))
    eq(stack.api.get("/v1/clusters/ec-bad").status_code, 404, "nothing stored by a refusal")

    cleanup.append("ec-twice")
    ec.create_replication_group(ReplicationGroupId="ec-twice", **base)
    fault(ec.create_replication_group, "ReplicationGroupAlreadyExists", 400,
          ReplicationGroupId="ec-twice", **base)
    fault(ec.delete_replication_group, "InvalidReplicationGroupState", 400,
          ReplicationGroupId="ec-twice")  # the create still runs
    clusters.wait_available(stack.api, "ec-twice")
    ec.delete_replication_group(ReplicationGroupId="ec-twice")
    wait_gone(ec, "ec-twice")
    fault(ec.delete_replication_group, "ReplicationGroupNotFoundFault", 404,
          ReplicationGroupId="ec-twice")


def test_engine_versions_match_the_catalog(stack, ec):
    versions = ec.describe_cache_engine_versions()["CacheEngineVersions"]
    catalog = stack.api.get("/v1/engine-versions").json()["engine_versions"]
    eq([(v["Engine"], v["EngineVersion"]) for v in versions],
       [(v["engine"], v["version"]) for v in catalog], "engine versions")
    eq({v["CacheParameterGroupFamily"] for v in versions if v["Engine"] == "redis"}, {"redis7"},
       "families")
    default = ec.describe_cache_engine_versions(Engine="valkey",
                                                DefaultOnly=True)["CacheEngineVersions"]
    eq([v["EngineVersion"] for v in default], [catalog[-1]["version"]], "the default valkey")


def test_signatures_and_scopes(stack, admin):
    """What AWS refuses, refused the same way: another secret, another key, a
    request signed over 15 minutes ago, a read token changing something, no
    signature at all; a bearer-only token cannot sign."""
    url = stack.inst.url
    wrong = ec_tools.boto3_client(url, (admin[0], admin[1][:-1] + ("A" if admin[1][-1] != "A"
                                                                   else "B")))
    fault(wrong.describe_replication_groups, "SignatureDoesNotMatch", 403)
    unknown = ec_tools.boto3_client(url, ("0123456789ab", admin[1]))
    fault(unknown.describe_replication_groups, "InvalidClientTokenId", 403)
    legacy = stack.inst.admin_token  # made by `cairnd token create` without the key
    msg = fault(ec_tools.boto3_client(url, (legacy[6:18], legacy[19:])).describe_replication_groups,
                "InvalidClientTokenId", 403)
    assert "cannot sign" in msg, msg

    reader = ec_tools.boto3_client(url, ec_tools.credentials(stack.api, "read", "aws-read"))
    reader.describe_replication_groups()
    fault(reader.create_replication_group, "AccessDenied", 403, ReplicationGroupId="ec-ro",
          ReplicationGroupDescription="x", CacheNodeType="cache.t3.micro")

    # Signed twenty minutes ago: the clock of botocore's signer moved back.
    import botocore.auth
    real = botocore.auth.datetime.datetime
    class Past(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() - datetime.timedelta(minutes=20)
    botocore.auth.datetime.datetime = Past
    try:
        msg = fault(ec_tools.boto3_client(url, admin).describe_replication_groups,
                    "SignatureDoesNotMatch", 403)
    finally:
        botocore.auth.datetime.datetime = real
    assert msg.startswith("Signature expired"), msg

    r = requests.post(url + "/", data={"Action": "DescribeReplicationGroups",
                                       "Version": "2015-02-02"}, timeout=10)
    eq(r.status_code, 403, "unsigned")
    assert "<Code>MissingAuthenticationToken</Code>" in r.text, r.text
    eq(r.headers["Content-Type"], "text/xml", "errors are XML")


def test_hostile_requests(stack, ec, admin):
    """Bodies an attacker or a broken tool sends get an XML refusal, never a crash."""
    def raw(body, **headers):
        # Signed like any request, so the refusal is about the body itself.
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method="POST", url=stack.inst.url + "/", data=body,
                         headers=dict({"Content-Type": "application/x-www-form-urlencoded"},
                                      **headers))
        SigV4Auth(Credentials(*admin), "elasticache", "us-east-1").add_auth(req)
        p = req.prepare()
        return requests.post(p.url, data=p.body, headers=dict(p.headers), timeout=10)

    cases = [
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&Marker=%ff", "MalformedQueryString"),
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&X=%00", "MalformedQueryString"),
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&Action=Delete",
         "MalformedQueryString"),
        (b"Action=NukeEverything&Version=2015-02-02", "InvalidAction"),
        (b"Action=DescribeReplicationGroups&Version=2011-01-01", "InvalidParameterValue"),
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&Bogus=1", "InvalidParameterValue"),
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&MaxRecords=99999999999999999999",
         "InvalidParameterValue"),
        (b"Action=DescribeReplicationGroups&Version=2015-02-02&Marker=bm90LWEtdG9rZW4",
         "InvalidParameterValue"),
        (b"Action=CreateReplicationGroup&Version=2015-02-02&ReplicationGroupId=" + b"a" * 300,
         "InvalidParameterValue"),
        (b"Action=AddTagsToResource&Version=2015-02-02&ResourceName=arn%3Aaws%3Aelasticache%3A"
         b"x%3A0%3Areplicationgroup%3Anope&Tags.Tag.1.Key=k", "ReplicationGroupNotFoundFault"),
        (b"&".join(b"F%d=1" % i for i in range(1200)), "MalformedQueryString"),
    ]
    for body, code in cases:
        r = raw(body)
        assert f"<Code>{code}</Code>" in r.text, (body[:80], r.status_code, r.text)
    r = raw(b"Action=DescribeReplicationGroups&Version=2015-02-02",
            **{"Content-Type": "application/json"})
    assert "<Code>InvalidParameterValue</Code>" in r.text, r.text
    # The endpoint still answers, and the console still has GET /.
    ec.describe_replication_groups()
    r = requests.get(stack.inst.url + "/", timeout=10)
    assert r.status_code != 405, "GET / stays the console's, not the endpoint's"


def test_fuzzed_requests_get_an_answer(stack, admin):
    """A few hundred signed requests of random actions, names and bytes: each
    gets a well-formed XML answer (a result or a fault), and cairnd stays up.
    Nothing is created: the groups named do not exist."""
    import random
    import xml.etree.ElementTree as ET
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    rnd = random.Random(15)
    actions = ["DescribeReplicationGroups", "DescribeCacheClusters", "ModifyReplicationGroup",
               "DeleteReplicationGroup", "TestFailover", "DescribeEvents",
               "DescribeCacheEngineVersions", "ListTagsForResource", "AddTagsToResource",
               "RemoveTagsFromResource", "IncreaseReplicaCount", "CreateSnapshot",
               "DescribeSnapshots", "DeleteSnapshot", "Nope", ""]
    names = ["ReplicationGroupId", "CacheClusterId", "NodeGroupId", "MaxRecords", "Marker",
             "Engine", "EngineVersion", "ApplyImmediately", "StartTime", "Duration",
             "ResourceName", "Tags.Tag.1.Key", "Tags.Tag.1.Value", "TagKeys.member.1",
             "ShowCacheNodeInfo", "NewReplicaCount", "AutomaticFailoverEnabled", "Version",
             "SnapshotName", "SnapshotSource", "FinalSnapshotIdentifier"]
    values = [b"zz-fuzz-" + bytes(rnd.randrange(97, 123) for _ in range(5)), b"", b"0", b"-1",
              b"99999999999999999999", b"true", b"TRUE", b"%ff%fe", b"%00", b"%e2%82",
              b"\xf0\x9f\x92\xa9", b"a" * 5000, b"arn:aws:elasticache:x:0:cluster:zz-fuzz-0001-001",
              b"2026-13-45T99:99:99Z", b"<x>&amp;", b"7.x", b"%2B%20"]
    auth = SigV4Auth(Credentials(*admin), "elasticache", "us-east-1")
    for i in range(300):
        fields = [b"Action=" + rnd.choice(actions).encode(), b"Version=2015-02-02"]
        for _ in range(rnd.randrange(0, 6)):
            fields.append(rnd.choice(names).encode() + b"=" + rnd.choice(values))
        if rnd.random() < 0.2:
            fields.append(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40))))
        rnd.shuffle(fields)
        body = b"&".join(fields)
        req = AWSRequest(method="POST", url=stack.inst.url + "/", data=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        auth.add_auth(req)
        p = req.prepare()
        r = requests.post(p.url, data=p.body, headers=dict(p.headers), timeout=10)
        assert r.status_code in (200, 400, 403, 404), (body[:200], r.status_code, r.text[:300])
        root = ET.fromstring(r.content)  # well-formed, whatever the input was
        if r.status_code != 200:
            assert root.find(".//{*}Code") is not None, (body[:200], r.text[:300])
    eq(requests.get(stack.inst.url + "/healthz", timeout=10).status_code, 200, "cairnd is up")
    eq(stack.api.get("/v1/clusters").json()["clusters"], [], "nothing was created")
