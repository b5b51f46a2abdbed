"""test_transit_encryption.py -- clusters created with "transit_encryption":
true serve TLS only: clients, replication and the cluster bus, with a
certificate per host issued by Cairn's certificate authority (the one
GET /v1/ca-certificate gives), renewed before it ends. Real cairnd, agents
and engines, driven as a user would: redis-py over TLS trusting Cairn's
authority, through a planned failover (cairnd's own connections are TLS too)
and the loss of a primary."""

import hashlib
import os
import signal
import socket
import ssl
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

import agents
import clusters
import expect
from clusters import nodes, wait_available, wait_until
from expect import eq
from test_ha import create

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("transit")


@pytest.fixture(scope="module")
def ca_file(stack):
    r = stack.inst.anon.get("/v1/ca-certificate")
    eq(r.status_code, 200, "GET /v1/ca-certificate")
    path = stack.cairnd.dir / "cairn-ca.pem"
    path.write_text(r.text)
    return str(path)


def tls_client(node, pw, ca, user=None):
    return redis.Redis(host=node["address"], port=node["port"], username=user, password=pw,
                       ssl=True, ssl_ca_certs=ca, ssl_cert_reqs="required",
                       ssl_check_hostname=True, socket_timeout=3, socket_connect_timeout=3,
                       decode_responses=True)


def admin_tls(node, ca):
    user, pw = agents.engine_login(node["id"])
    return tls_client(node, pw, ca, user)


def peer_certificate(node, ca):
    """The SHA-256 of the certificate node's engine presents."""
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection((node["address"], node["port"]), timeout=3) as raw:
        with ctx.wrap_socket(raw, server_hostname=node["address"]) as s:
            return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def plain_refused(node, pw):
    try:
        with clusters.client(node["address"], node["port"], pw, timeout=2) as c:
            c.ping()
    except redis.RedisError:
        return True
    return False


def test_a_cluster_mode_cluster_serves_tls_only(stack, cleanup, ca_file):
    body, pw = create(stack, cleanup, clusters.valkey_cluster(
        "transit-cm", num_shards=3, replicas_per_shard=1, transit_encryption=True))
    eq(body["transit_encryption"], True, "the spec")
    for n in nodes(body):
        assert plain_refused(n, pw), f"{n['id']} answered plain TCP"
        with admin_tls(n, ca_file) as c:
            got = c.config_get("tls-*")
            eq((c.config_get("port")["port"], got["tls-port"], got["tls-replication"],
                got["tls-cluster"], got["tls-auth-clients"]),
               ("0", str(n["port"]), "yes", "yes", "no"), f"{n['id']}'s TLS settings")
            if n["role"] == "replica":
                eq(c.info("replication")["master_link_status"], "up",
                   f"{n['id']} replicates over TLS")
    seeds = [ClusterNode(e["address"], e["port"]) for e in body["endpoints"]["configuration"]]
    rc = RedisCluster(startup_nodes=seeds, password=pw, ssl=True, ssl_ca_certs=ca_file,
                      ssl_cert_reqs="required", decode_responses=True, socket_timeout=5)
    try:
        for i in range(200):
            rc.set(f"k{i}", i)
        eq([rc.get(f"k{i}") for i in range(200)], [str(i) for i in range(200)], "reads")
        # A planned failover: cairnd's own connections to the engines are TLS too.
        r = stack.api.post("/v1/clusters/transit-cm/failover", json={"shard_id": "0001"})
        op = expect.json_ok(r, 202)
        wait_until(lambda: expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"]
                   in ("succeeded", "failed"), 30, "the failover")
        eq(expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"], "succeeded",
           "the planned failover")
        # The loss of a primary: the engines elect its replica over the TLS bus
        # (three shards: the other two primaries are the majority that votes).
        after = wait_available(stack.api, "transit-cm")
        primary = next(n for n in nodes(after) if n["role"] == "primary")
        agent = stack.agent_of(primary["host_id"])
        [pid] = agents.engine_pids_under([agent.node_dir(primary["id"])])
        os.kill(pid, signal.SIGKILL)

        def writes():
            try:
                for i in range(200):
                    rc.set(f"k{i}", f"after-{i}")
                return True
            except redis.RedisError:
                return False
        wait_until(writes, 45, "every slot written after the primary's loss", interval=0.2)
        eq(rc.get("k199"), "after-199", "a read")
    finally:
        rc.close()
    wait_available(stack.api, "transit-cm", timeout=60)


def test_a_group_replicates_and_fails_over_over_tls(stack, cleanup, ca_file):
    body, pw = create(stack, cleanup, clusters.redis_group(
        "transit-group", engine="redis", engine_version="7.0", replicas_per_shard=1,
        transit_encryption=True))
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    with tls_client(primary, pw, ca_file) as c:
        c.set("k", "v")
        eq(c.wait(1, 2000), 1, "WAIT: the replica has it, over TLS")
    with tls_client(replica, pw, ca_file) as c:
        eq(c.get("k"), "v", "the replica's copy")
    assert plain_refused(primary, pw)
    r = stack.api.post("/v1/clusters/transit-group/failover", json={})
    op = expect.json_ok(r, 202)
    wait_until(lambda: expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"]
               in ("succeeded", "failed"), 30, "the failover")
    eq(expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"], "succeeded",
       "the planned failover")
    after = wait_available(stack.api, "transit-group")
    new = next(n for n in nodes(after) if n["role"] == "primary")
    eq(new["id"], replica["id"], "the replica is the primary")
    with tls_client(new, pw, ca_file) as c:
        eq(c.get("k"), "v", "the data")
        c.set("k2", "v2")
    wait_until(lambda: tls_client(primary, pw, ca_file).get("k2") == "v2", 10,
               "the old primary follows the new one over TLS")


def test_the_host_certificate_is_renewed_before_it_ends(stack, cleanup, ca_file):
    body, pw = create(stack, cleanup, clusters.redis_group(
        "transit-renew", engine="valkey", engine_version="8.0", replicas_per_shard=0,
        transit_encryption=True))
    node = nodes(body)[0]
    before = peer_certificate(node, ca_file)
    # As if it ended within the month: the next read of the host's desired
    # set issues a new one, which the running engine loads.
    stack.inst.psql(f"UPDATE hosts SET tls_not_after = now() + interval '1 day' "
                    f"WHERE id = '{node['host_id']}'; SELECT hosts_bump_desired('{node['host_id']}')")
    wait_until(lambda: peer_certificate(node, ca_file) != before, 10,
               "the engine presenting a new certificate")
    with tls_client(node, pw, ca_file) as c:
        c.set("still", "here")
    with admin_tls(node, ca_file) as c:
        pid = c.info("server")["process_id"]
    eq({int(pid)}, set(agents.engine_pids_under(
        [stack.agent_of(node["host_id"]).node_dir(node["id"])])), "the same engine process")


def test_a_restarted_agent_adopts_its_tls_engines(stack, cleanup, ca_file):
    """An agent killed and started again finds its TLS-only engines running
    and keeps them -- it reaches them over TLS before cairnd has answered
    its first sync -- with no restart."""
    body, pw = create(stack, cleanup, clusters.redis_group(
        "transit-adopt", engine="valkey", engine_version="8.0", replicas_per_shard=0,
        transit_encryption=True))
    node = nodes(body)[0]
    agent = stack.agent_of(node["host_id"])
    with admin_tls(node, ca_file) as c:
        pid = c.info("server")["process_id"]
    agent.kill9()
    agent.start()
    wait_until(lambda: "adopted" in agent.log.text(agent.start_offset), 10,
               "the agent adopting the engine")
    time.sleep(3)  # a few probes and INFO rounds
    with admin_tls(node, ca_file) as c:
        eq(c.info("server")["process_id"], pid, "the same engine process")
    assert "unresponsive" not in agent.log.text(agent.start_offset), \
        agent.log.text(agent.start_offset)
    with tls_client(node, pw, ca_file) as c:
        assert c.ping()
    wait_available(stack.api, "transit-adopt")


def test_transit_encryption_is_chosen_at_creation(stack, cleanup):
    expect.problem(stack.api.post("/v1/clusters", json=clusters.redis_group(
        "transit-bad", transit_encryption="yes")), "VALIDATION_FAILED", ["transit_encryption"])
    body, _ = create(stack, cleanup, clusters.redis_group("transit-off", replicas_per_shard=0))
    eq(body["transit_encryption"], False, "the default")
    expect.problem(stack.api.patch("/v1/clusters/transit-off",
                                   json={"transit_encryption": True}),
                   "CHANGE_NOT_SUPPORTED_YET")


def test_the_elasticache_endpoint_creates_and_describes_tls_groups(stack, cleanup, ca_file):
    import ec_tools
    ec = ec_tools.boto3_client(stack.inst.url, ec_tools.credentials(stack.api))
    cleanup.append("transit-ec")
    ec.create_replication_group(ReplicationGroupId="transit-ec", ReplicationGroupDescription="x",
                                Engine="valkey", EngineVersion="8.0",
                                CacheNodeType="cache.t3.micro", NumCacheClusters=1,
                                TransitEncryptionEnabled=True)
    body = wait_available(stack.api, "transit-ec")
    eq(body["transit_encryption"], True, "the REST spec")
    [group] = ec.describe_replication_groups(ReplicationGroupId="transit-ec")["ReplicationGroups"]
    eq(group["TransitEncryptionEnabled"], True, "DescribeReplicationGroups")
    pw = clusters.password(stack.api, "transit-ec")
    with tls_client(nodes(body)[0], pw, ca_file) as c:
        assert c.ping()
