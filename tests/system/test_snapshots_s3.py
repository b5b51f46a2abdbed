"""test_snapshots_s3.py -- snapshots kept in an S3-compatible bucket: cairnd
with --snapshot-store s3://... takes a snapshot of a sharded cluster, restores it
into cluster mode disabled, and deletes it, every request to the bucket signed
and checked (s3rver behind test_snapshot_store_s3's StrictFront, which verifies
each signature with botocore's own signer)."""

import os

import pytest

import clusters
import expect
from clusters import password, wait_available, wait_until
from expect import eq
from test_snapshot_store_s3 import ACCESS_KEY, BUCKET, SECRET, StrictFront, s3rver, serve

assert s3rver  # a fixture of this module too

PREFIX = "cairn/eu-west"


@pytest.fixture(scope="module")
def front(s3rver):
    port, _ = s3rver
    server = serve(StrictFront(port))
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def stack(pg, cairnd_binary, front):
    """A stack whose cairnd keeps snapshots in the bucket, its credentials in
    its environment as the AWS tools take them."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    try:
        s = clusters.ClusterStack(pg, "snaps3", cairnd_args=[
            "--snapshot-store", f"s3://{BUCKET}/{PREFIX}", "--snapshot-s3-endpoint", front.url])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield s
    finally:
        s.close(failed=False)


@pytest.fixture
def cleanup(stack):
    ids = []
    yield ids
    for cid in ids:
        if stack.api.get(f"/v1/clusters/{cid}").status_code != 404:
            stack.api.delete(f"/v1/clusters/{cid}")
            clusters.wait_gone(stack.api, cid, 30)


def objects(s3rver):
    """The keys under PREFIX in the bucket, as boto3 lists them."""
    import boto3
    from botocore.config import Config
    port, _ = s3rver
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                      aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET,
                      config=Config(s3={"addressing_style": "path"}))
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_snapshot_and_restore_through_a_bucket(stack, s3rver, cleanup):
    api = stack.api
    cleanup += ["s3-source", "s3-copy"]
    expect.json_ok(api.post("/v1/clusters", json=clusters.valkey_cluster(
        "s3-source", num_shards=2)), 202)
    body = wait_available(api, "s3-source", timeout=60)
    pw = password(api, "s3-source")
    rc = clusters.cluster_client(body, pw)
    try:
        with rc.pipeline(transaction=False) as p:
            for i in range(3000):
                p.set(f"k{i}", f"v{i}")
            p.execute()
    finally:
        rc.close()
    clusters.wait_replicas_linked(api, "s3-source")

    r = api.post("/v1/clusters/s3-source/snapshots", json={"name": "in-a-bucket"})
    snap = expect.json_ok(r, 202)
    wait_until(lambda: expect.json_ok(api.get(f"/v1/snapshots/{snap['id']}"))["status"]
               in ("available", "failed"), 60, "the snapshot to end")
    snap = expect.json_ok(api.get(f"/v1/snapshots/{snap['id']}"))
    eq(snap["status"], "available", f"the snapshot: {snap}")
    eq(snap["keys"], 3000, "its keys")
    listed = objects(s3rver)
    for shard in (0, 1):
        key = f"{PREFIX}/{snap['id']}/shard-{shard:04d}.rdb.gz"
        assert key in listed, f"{key} not in the bucket: {listed}"

    expect.json_ok(api.post("/v1/clusters", json={
        "id": "s3-copy", "cluster_mode": "disabled", "replicas_per_shard": 0,
        "automatic_failover": False, "multi_az": False,
        "restore_from": {"snapshot_id": "in-a-bucket"}}), 202)
    copy = wait_available(api, "s3-copy", timeout=90)
    primary = [n for s in copy["shards"] for n in s["nodes"] if n["role"] == "primary"][0]
    with clusters.client(primary["address"], primary["port"], password(api, "s3-copy")) as c:
        eq(c.dbsize(), 3000, "the keys restored from the bucket")
        eq(c.get("k1234"), "v1234", "a value")

    expect.json_ok(api.delete(f"/v1/snapshots/{snap['id']}"), 202)
    wait_until(lambda: api.get(f"/v1/snapshots/{snap['id']}").status_code == 404, 20,
               "the snapshot gone")
    leftovers = [k for k in objects(s3rver) if snap["id"] in k]
    eq(leftovers, [], "the snapshot's objects in the bucket")
