"""test_snapshots.py -- snapshots and restores end to end: real cairnd,
PostgreSQL, three cairn-agents and the Valkey/Redis engines they start.

A snapshot is taken shard by shard from an in-sync replica (BGSAVE there:
the primary is not forked) and kept by cairnd in its snapshot store, here
a directory of the test's own (--snapshot-store), where each shard is
<snapshot id>/shard-NNNN.rdb.gz. The tests act as a user would over HTTP
and RESP, and look into the store only to check what it holds and to
corrupt it:

- 100,000 keys of every type, some with TTLs, snapshotted under a writer
  and restored into another shape (one shard with cluster mode disabled,
  four shards with it enabled), key for key (make system-full);
- the primary is not forked when a replica is in sync;
- a corrupted file is refused by the restore, naming the shard;
- a restore onto an older engine, or a target too small for the data, is
  refused (the second needs half a GiB of data: make system-full);
- a final snapshot on DELETE outlives its cluster and restores;
- automatic snapshots fire in their window (cairnd's clock moved with
  --test-clock-offset, as test_upgrade.py does for maintenance windows)
  and retention removes the old automatic ones, never the manual ones;
- cairnd killed with SIGKILL mid-upload is resumed by the next one;
- hostile input is refused with the field or code that says why.
"""

import base64
import gzip
import hashlib
import random
import re
import time

import pytest

import clusters
import expect
import harness
from clusters import nodes, password, wait_available, wait_until
from expect import eq
from test_ha import Writer
from test_upgrade import restart_cairnd

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("snapshots")

# The stack's snapshot store, a directory: where the tests look at and
# damage what cairnd keeps.
STORE = None


@pytest.fixture(autouse=True)
def _store(stack):
    global STORE
    STORE = stack.snapshot_dir

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
SHAPE = ("engine", "engine_version", "node_type", "cluster_mode", "num_shards",
         "replicas_per_shard")
# A cluster of one node: no replica, so no failover.
ALONE = {"replicas_per_shard": 0, "automatic_failover": False, "multi_az": False}
SNAPSHOT_TIMEOUT = 120
RESTORE_TIMEOUT = 180


@pytest.fixture
def dropped(stack):
    """Ids of the snapshots a test makes that hold much data: deleted after it
    (what is left of the store goes with the module's temp dir)."""
    ids = []
    yield ids
    for sid in ids:
        try:
            r = stack.api.delete(f"/v1/snapshots/{sid}")
            if r.status_code not in (202, 404):
                print(f"\nsnapshot {sid} left behind: {expect.describe(r)}")
                continue
            wait_until(lambda: snapshot(stack.api, sid) is None, 60, f"snapshot {sid} gone")
        except Exception as e:  # noqa: BLE001 -- best effort; report and go on
            print(f"\ncleanup of snapshot {sid} failed: {e}")


# --------------------------------------------------------------------------
# The API

def create(stack, cleanup, body, timeout=60):
    """POST a cluster (deleted after the test); return it once available, and
    its password."""
    cleanup.append(body["id"])
    expect.json_ok(stack.api.post("/v1/clusters", json=body), 202)
    return wait_available(stack.api, body["id"], timeout=timeout), password(stack.api, body["id"])


def take(api, cid, name=None):
    """POST /v1/clusters/{cid}/snapshots (with no body when name is None);
    the snapshot of the 202."""
    r = api.post(f"/v1/clusters/{cid}/snapshots", json={"name": name} if name else None)
    snap = expect.json_ok(r, 202)
    eq(r.headers.get("Location"), f"/v1/snapshots/{snap['id']}", "Location")
    assert expect.UUID_RE.match(snap["id"]), snap
    eq((snap["cluster_id"], snap["source"], snap["status"], snap["completed_at"]),
       (cid, "manual", "creating", None), "the 202's snapshot")
    if name is not None:
        eq(snap["name"], name, "name")
    eq(operation(api, snap["operation_id"])["kind"], "snapshot", "the snapshot's operation")
    return snap


def snapshot(api, sid):
    """GET /v1/snapshots/{sid} (an id or a name): the body, None on 404."""
    r = api.get(f"/v1/snapshots/{sid}")
    if r.status_code == 404:
        expect.problem(r, "SNAPSHOT_NOT_FOUND")
        return None
    return expect.json_ok(r)


def listed(api, cid):
    """The snapshots of cluster cid, newest first (one page holds them all)."""
    body = expect.json_ok(api.get("/v1/snapshots", params={"cluster_id": cid, "page_size": 100}))
    assert "next_page_token" not in body, body
    return body["snapshots"]


def wait_snapshot(api, sid, timeout=SNAPSHOT_TIMEOUT):
    """The snapshot once it is no longer creating."""
    def done():
        s = snapshot(api, sid)
        return s if s is not None and s["status"] != "creating" else None
    return wait_until(done, timeout, f"snapshot {sid} done", interval=0.1)


def wait_snapshot_available(api, sid, timeout=SNAPSHOT_TIMEOUT):
    snap = wait_snapshot(api, sid, timeout)
    eq((snap["status"], snap["error"]), ("available", None), f"snapshot {sid}: {snap}")
    return snap


def operation(api, op_id):
    return expect.json_ok(api.get(f"/v1/operations/{op_id}"))


def restore_body(cid, snapshot_id, **over):
    return dict({"id": cid, "restore_from": {"snapshot_id": snapshot_id}}, **over)


def restore(stack, cleanup, cid, snapshot_id, timeout=RESTORE_TIMEOUT, **over):
    """A cluster restored from snapshot_id (an id or a name), once available,
    and its password."""
    return create(stack, cleanup, restore_body(cid, snapshot_id, **over), timeout)


def shape(body):
    return {k: body[k] for k in SHAPE}


def created_events(api, snap):
    return [e for e in clusters.events(api, snap["cluster_id"])
            if e["type"] == "SnapshotCreated" and e["operation_id"] == snap["operation_id"]]


def conflict(resp, what):
    """A 409 problem; its code (the spec says 409 for a busy cluster or a
    creating snapshot, not which code)."""
    assert resp.status_code == 409, f"{what}: expected 409, got {expect.describe(resp)}"
    eq(expect.media_type(resp), "application/problem+json", f"{what}: Content-Type")
    return resp.json()["code"]


# --------------------------------------------------------------------------
# What a snapshot says and what the store holds

def slot_ranges(shard):
    """A cluster resource shard's slots ("0-5460") as the snapshot gives them."""
    return [[int(x) for x in r.split("-")] for r in shard["slots"]]


def check_snapshot(snap, source):
    """An available snapshot of the cluster resource source: its shape, one
    entry per shard with its slots (cluster mode), and totals that add up."""
    eq(shape(snap), shape(source), "the snapshot's shape is its cluster's")
    expect.timestamp(snap["created_at"], "created_at")
    expect.timestamp(snap["completed_at"], "completed_at")
    assert snap["completed_at"] >= snap["created_at"], snap
    shards = snap["shards"]
    eq([s["index"] for s in shards], list(range(source["num_shards"])), "shard indexes")
    for s in shards:
        assert SHA256_RE.match(s["sha256"] or ""), f"sha256 of shard {s['index']}: {s}"
        assert s["keys"] >= 0 and s["size_bytes"] > 0 and s["stored_bytes"] > 0, s
    for total in ("keys", "size_bytes", "stored_bytes"):
        eq(snap[total], sum(s[total] for s in shards), f"{total}: the sum of the shards'")
    if source["cluster_mode"] == "enabled":
        by_id = sorted(source["shards"], key=lambda s: s["id"])
        eq([s["slots"] for s in shards], [slot_ranges(s) for s in by_id],
           "each shard's slots, as its cluster served them")
        covered = sorted(slot for s in shards for a, b in s["slots"] for slot in range(a, b + 1))
        eq(covered, list(range(16384)), "the slots of the shards cover 0-16383 once")
    else:
        eq([s["slots"] for s in shards], [None] * len(shards), "no slots in disabled mode")


def shard_file(snap, index):
    return STORE / snap["id"] / f"shard-{index:04d}.rdb.gz"


def check_stored(snap):
    """Each shard's object in the store is the gzip of an RDB file of the
    size and SHA-256 the snapshot gives."""
    for s in snap["shards"]:
        path = shard_file(snap, s["index"])
        packed = path.read_bytes()
        eq(len(packed), s["stored_bytes"], f"{path}: size against stored_bytes")
        rdb = gzip.decompress(packed)
        eq(len(rdb), s["size_bytes"], f"{path}: RDB size against size_bytes")
        eq(hashlib.sha256(rdb).hexdigest(), s["sha256"], f"{path}: SHA-256 of the RDB")
        assert rdb.startswith(b"REDIS"), f"{path} holds no RDB file: {rdb[:16]!r}"


# --------------------------------------------------------------------------
# Data: clients, a data set of every type, blobs

def primary_nodes(body):
    return [n for n in nodes(body) if n["role"] == "primary"]


def data_client(body, pw, timeout=10):
    """What an application would use: the cluster client in cluster mode,
    else a connection to the primary endpoint."""
    if body["cluster_mode"] == "enabled":
        return clusters.cluster_client(body, pw, timeout)
    ep = body["endpoints"]["primary"]
    return clusters.client(ep["address"], ep["port"], pw, timeout)


def total_keys(body, pw):
    """DBSIZE summed over the primaries."""
    total = 0
    for n in primary_nodes(body):
        with clusters.client(n["address"], n["port"], pw) as c:
            total += c.dbsize()
    return total


def scan_keys(body, pw, match):
    """Every key matching match, from every primary."""
    found = []
    for n in primary_nodes(body):
        with clusters.client(n["address"], n["port"], pw, timeout=10) as c:
            found += c.scan_iter(match=match, count=1000)
    return found


def check_replicas_hold_the_data(body, pw, timeout=60):
    """Every replica of a restored cluster holds as many keys as its primary."""
    for s in body["shards"]:
        primary = next(n for n in s["nodes"] if n["role"] == "primary")
        with clusters.client(primary["address"], primary["port"], pw) as c:
            want = c.dbsize()
        for r in (n for n in s["nodes"] if n["role"] == "replica"):
            with clusters.client(r["address"], r["port"], pw) as c:
                wait_until(lambda: c.dbsize() == want, timeout,
                           f"replica {r['id']} of shard {s['id']} holding {want} keys")


# Mostly strings; every fifth key of the other types, each small (listpack
# or intset encoded); every seventh key expires in one to two hours.
KINDS = ("string",) * 16 + ("hash", "list", "set", "zset")


def kind_of(i):
    return KINDS[i % len(KINDS)]


def key_of(i):
    return f"{kind_of(i)}:{i}"


def value_of(i):
    """Key i's value as redis-py reads it back."""
    return {"string": lambda: f"value-{i}-" + "x" * (i % 50),
            "hash": lambda: {"n": str(i), "name": f"item-{i}", "flag": "on"},
            "list": lambda: [str(i), "b", "c", str(2 * i)],
            "set": lambda: {str(i), "red", "green"},
            "zset": lambda: [("low", 0.5), (f"m{i}", float(i))]}[kind_of(i)]()


def ttl_of(i):
    return 3600 + i % 3600 if i % 7 == 0 else None


# How each type is written and read back, in a pipeline.
WRITE = {"string": lambda p, k, v: p.set(k, v), "hash": lambda p, k, v: p.hset(k, mapping=v),
         "list": lambda p, k, v: p.rpush(k, *v), "set": lambda p, k, v: p.sadd(k, *v),
         "zset": lambda p, k, v: p.zadd(k, dict(v))}
READ = {"string": lambda p, k: p.get(k), "hash": lambda p, k: p.hgetall(k),
        "list": lambda p, k: p.lrange(k, 0, -1), "set": lambda p, k: p.smembers(k),
        "zset": lambda p, k: p.zrange(k, 0, -1, withscores=True)}


def load(c, n):
    """Keys 0..n-1 of the data set, in pipelines (the cluster client's splits
    them by slot)."""
    for start in range(0, n, 5000):
        p = c.pipeline(transaction=False)
        for i in range(start, min(n, start + 5000)):
            WRITE[kind_of(i)](p, key_of(i), value_of(i))
            if ttl_of(i):
                p.expire(key_of(i), ttl_of(i))
        p.execute()


def read_all(c, n):
    """[(value, PEXPIRETIME)] of keys 0..n-1, read by type."""
    out = []
    for start in range(0, n, 2000):
        p = c.pipeline(transaction=False)
        for i in range(start, min(n, start + 2000)):
            READ[kind_of(i)](p, key_of(i))
            p.pexpiretime(key_of(i))
        got = p.execute()
        out += [(got[j], got[j + 1]) for j in range(0, len(got), 2)]
    return out


def check_data_set(c, n, expiries):
    """Keys 0..n-1 hold their values, and expire when they did in the source
    (expiries: PEXPIRETIME read there; -1: never) give or take 2 s."""
    wrong = []
    for i, (value, expires) in enumerate(read_all(c, n)):
        if kind_of(i) == "zset":
            value = [tuple(x) for x in value]
        if value != value_of(i) or (expires == -1) != (expiries[i] == -1) \
                or abs(expires - expiries[i]) > 2000:
            wrong.append((key_of(i), value, expires, expiries[i]))
    eq(wrong[:5], [], f"{len(wrong)} of {n} keys wrong or missing (key, value, expires at, "
                      "expired at in the source)")


def blob_of(i):
    """Key blob:i's value: 1 MiB of base64 of random bytes, the same each
    time (incompressible enough that the RDB file and its gzip stay large)."""
    return base64.b64encode(random.Random(i).randbytes(3 << 18)).decode()


def load_blobs(c, n):
    for start in range(0, n, 16):
        p = c.pipeline(transaction=False)
        for i in range(start, min(n, start + 16)):
            p.set(f"blob:{i}", blob_of(i))
        p.execute()


def check_blobs(c, n):
    wrong = [i for i in range(n) if c.get(f"blob:{i}") != blob_of(i)]
    eq(wrong[:10], [], f"{len(wrong)} of {n} blobs wrong or missing")


# --------------------------------------------------------------------------
# The tests

@pytest.mark.full
def test_100k_keys_restore_key_for_key_into_other_shapes(stack, cleanup, dropped):
    """3 shards x (1 + 1), 100,000 keys of every type, a snapshot under a
    writer; restored into 1 shard with cluster mode disabled and into 4
    shards with it enabled, every key equal, TTLs kept."""
    n = 100_000
    source, pw = create(stack, cleanup, clusters.valkey_cluster("snap-big"))
    rc = clusters.cluster_client(source, pw, timeout=10)
    try:
        load(rc, n)
        expiries = [e for _, e in read_all(rc, n)]
        check_data_set(rc, n, expiries)
        eq(sum(e != -1 for e in expiries), sum(1 for i in range(n) if ttl_of(i)), "keys with TTLs")
        clusters.wait_replicas_linked(stack.api, "snap-big", timeout=60)

        w = Writer(lambda: clusters.cluster_client(source, pw), prefix="w:").start()
        try:
            time.sleep(2)
            posted = time.monotonic()
            snap = take(stack.api, "snap-big", "big-nightly")
            dropped.append(snap["id"])
            snap = wait_snapshot_available(stack.api, snap["id"], 300)
            time.sleep(0.3)
        finally:
            w.stop()
        eq(len(w.errors), 0, "writes that failed while the snapshot ran")
        assert len(w.acked) > 50, f"the writer wrote: {len(w.acked)}"
        check_snapshot(snap, source)
        assert snap["keys"] >= n, snap
        check_stored(snap)
        eq(len(created_events(stack.api, snap)), 1, "SnapshotCreated events")
        eq(operation(stack.api, snap["operation_id"])["status"], "succeeded", "the operation")
        sample = random.Random(1).sample(range(n), 2000)
        dumped = [rc.dump(key_of(i)) for i in sample]
    finally:
        rc.close()

    # Acknowledged well before the snapshot was asked for: in it.
    before = {k for k, at in w.acked if at < posted - 1}
    targets = [("snap-big-one", snap["name"], {"cluster_mode": "disabled", "num_shards": 1}),
               ("snap-big-four", snap["id"], {"num_shards": 4})]
    for cid, by, over in targets:
        body, pw2 = restore(stack, cleanup, cid, by, **over)
        eq(shape(body), dict(shape(source), **over), f"{cid}: the snapshot's shape, as changed")
        if body["cluster_mode"] == "enabled":
            eq(sum(b - a + 1 for s in body["shards"] for a, b in slot_ranges(s)), 16384,
               f"{cid}: every slot served")
        c = data_client(body, pw2)
        try:
            check_data_set(c, n, expiries)
            eq([c.dump(key_of(i)) for i in sample], dumped,
               f"{cid}: DUMP of 2,000 keys against the source's")
        finally:
            c.close()
        written = scan_keys(body, pw2, "w:*")
        eq(total_keys(body, pw2) - len(written), n, f"{cid}: the source's keys, no more")
        # The snapshot counts its keys as the engine did when the save
        # ended: the writes made while it saved are counted but not in it.
        assert 0 <= snap["keys"] - total_keys(body, pw2) <= len(w.acked), \
            f"{cid}: {total_keys(body, pw2)} keys restored, the snapshot counted {snap['keys']}"
        c = data_client(body, pw2)
        try:
            wrong = [k for k in written if c.get(k) != k[2:]]
        finally:
            c.close()
        eq(wrong[:5], [], f"{cid}: writer keys with another value")
        eq(sorted(before - set(written))[:5], [], f"{cid}: writes acknowledged a second "
                                                  "before the snapshot, missing")
        check_replicas_hold_the_data(body, pw2)


def test_snapshot_forks_the_replica_not_the_primary(stack, cleanup):
    """Valkey 8.0, a primary and an in-sync replica: the snapshot is the
    replica's BGSAVE; the primary neither forks nor saves."""
    cid = "snap-fork"
    body, pw, primary, replica = clusters.primary_and_replica(stack, cleanup, cid)
    with clusters.client(primary["address"], primary["port"], pw) as c:
        with c.pipeline(transaction=False) as p:
            for i in range(5000):
                p.set(f"k{i}", i)
            p.execute()
    clusters.wait_replicas_linked(stack.api, cid)
    with clusters.client(replica["address"], replica["port"], pw) as c:
        wait_until(lambda: c.dbsize() == 5000, 10, "the replica holding the 5,000 keys")

    def info(node):
        with clusters.admin_client(node) as c:
            return c.info("stats")["total_forks"], \
                c.info("persistence")["rdb_changes_since_last_save"]

    primary_forks, primary_changes = info(primary)
    replica_forks, _ = info(replica)
    snap = take(stack.api, cid)
    assert re.match(rf"^{cid}-\d{{8}}-\d{{6}}$", snap["name"]), \
        f"default name <cluster id>-<yyyymmdd-hhmmss>: {snap['name']!r}"
    snap = wait_snapshot_available(stack.api, snap["id"])
    check_snapshot(snap, clusters.get(stack.api, cid))
    eq((snap["keys"], snap["shards"][0]["keys"]), (5000, 5000), "keys")
    check_stored(snap)

    forks, changes = info(primary)
    eq(forks, primary_forks, "the primary's total_forks")
    assert changes >= primary_changes, \
        f"the primary saved: rdb_changes_since_last_save {primary_changes} -> {changes}"
    assert info(replica)[0] > replica_forks, "the replica did not fork for the snapshot"
    eq(len(created_events(stack.api, snap)), 1, "SnapshotCreated events")
    eq([s["id"] for s in listed(stack.api, cid)], [snap["id"]], "the cluster's snapshots")


def corrupt_gzip(path):
    """Bytes in the middle of the gzip stream flipped."""
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 2, len(data) // 2 + 8):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def corrupt_rdb(path):
    """A valid gzip of an RDB file with a byte in its middle changed."""
    rdb = bytearray(gzip.decompress(path.read_bytes()))
    rdb[len(rdb) // 2] ^= 0xFF
    path.write_bytes(gzip.compress(bytes(rdb)))


def test_corrupted_file_is_refused_by_the_restore(stack, cleanup):
    """Shard 2's object damaged in the store -- its gzip broken, or a valid
    gzip of a changed RDB file -- makes a restore fail with SNAPSHOT_CORRUPT
    naming that shard, and leaves no node behind."""
    source, pw = create(stack, cleanup, clusters.valkey_cluster("snap-rot"))
    rc = clusters.cluster_client(source, pw)
    try:
        load(rc, 3000)
    finally:
        rc.close()
    baseline = stack.allocations()
    for name, damage in (("rot-gzip", corrupt_gzip), ("rot-rdb", corrupt_rdb)):
        snap = wait_snapshot_available(stack.api, take(stack.api, "snap-rot", name)["id"])
        check_stored(snap)
        damage(shard_file(snap, 2))
        cid = f"snap-{name}"
        cleanup.append(cid)
        r = stack.api.post("/v1/clusters", json=restore_body(cid, name))
        if r.status_code == 202:
            # Found while restoring: the create fails and says why.
            clusters.wait_cluster(stack.api, cid, lambda b: b["status"] == "create-failed",
                                  RESTORE_TIMEOUT, f"{cid} create-failed", interval=0.2)
            op = next(o for o in clusters.operations(stack.api, cid) if o["kind"] == "create")
            eq(op["status"], "failed", f"{cid}: the create operation")
            code, message = op["error"]["code"], op["error"]["message"]
            expect.json_ok(stack.api.delete(f"/v1/clusters/{cid}"), 202)
            clusters.wait_gone(stack.api, cid, 60)
        else:
            # Found before anything was placed: the create is refused.
            assert 400 <= r.status_code < 500, expect.describe(r)
            code, message = r.json()["code"], r.json()["detail"]
            expect.problem(stack.api.get(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")
        eq(code, "SNAPSHOT_CORRUPT", f"{name}: the error code ({message})")
        # "shard 2", "shard-0002.rdb.gz", "shard index 2": the snapshot's numbering.
        assert re.search(r"shard\D{0,8}?0*2\b", message), \
            f"{name}: the message names shard 2: {message!r}"
        eq(stack.allocations(), baseline, f"{name}: host allocations after the failed restore")


def test_restore_onto_an_older_engine_is_refused_and_onto_a_newer_one_works(stack, cleanup):
    """A valkey 8.0 snapshot does not restore as redis 7.0 or valkey 7.2
    (nothing is created); a redis 7.0 snapshot restores as valkey 8.0."""
    api = stack.api
    create(stack, cleanup, clusters.redis_group("snap-v8", engine="valkey",
                                                engine_version="8.0", **ALONE))
    v8 = wait_snapshot_available(api, take(api, "snap-v8", "v8-base")["id"])
    eq((v8["engine"], v8["engine_version"]), ("valkey", "8.0"), "the snapshot's engine")
    cleanup.append("snap-older")  # should a refusal fail to refuse
    for older in ({"engine": "redis", "engine_version": "7.0"}, {"engine_version": "7.2"}):
        r = api.post("/v1/clusters", json=restore_body("snap-older", "v8-base", **older, **ALONE))
        expect.problem(r, "VALIDATION_FAILED", fields=["engine_version"])
        expect.problem(api.get("/v1/clusters/snap-older"), "CLUSTER_NOT_FOUND")

    body, pw = create(stack, cleanup, clusters.redis_group("snap-r7", **ALONE))
    with clusters.client(body["endpoints"]["primary"]["address"],
                         body["endpoints"]["primary"]["port"], pw) as c:
        load(c, 2000)
        expiries = [e for _, e in read_all(c, 2000)]
    r7 = wait_snapshot_available(api, take(api, "snap-r7", "r7-base")["id"])
    eq((r7["engine"], r7["engine_version"]), ("redis", "7.0"), "the snapshot's engine")
    body, pw = restore(stack, cleanup, "snap-newer", r7["id"], engine="valkey",
                       engine_version="8.0", **ALONE)
    eq((body["engine"], body["engine_version"]), ("valkey", "8.0"), "the restored engine")
    with data_client(body, pw) as c:
        check_data_set(c, 2000, expiries)
        eq(c.dbsize(), 2000, "keys")


@pytest.mark.full
def test_restore_into_a_target_too_small_is_refused(stack, cleanup, dropped):
    """600 MiB on a cache.t3.small: a cache.t3.micro (0.5 GiB) cannot hold
    it, in either cluster mode; nothing is created."""
    body, pw = create(stack, cleanup, clusters.redis_group(
        "snap-fat", engine="valkey", engine_version="8.0", node_type="cache.t3.small", **ALONE))
    with data_client(body, pw, timeout=30) as c:
        load_blobs(c, 600)
    snap = take(stack.api, "snap-fat", "fat-base")
    dropped.append(snap["id"])
    snap = wait_snapshot_available(stack.api, snap["id"], 300)
    assert snap["size_bytes"] > 540 << 20, snap
    cleanup.append("snap-thin")  # should a refusal fail to refuse
    for over in ({"node_type": "cache.t3.micro"},
                 {"node_type": "cache.t3.micro", "cluster_mode": "enabled", "num_shards": 1,
                  "replicas_per_shard": 1, "automatic_failover": True}):
        r = stack.api.post("/v1/clusters", json=restore_body(
            "snap-thin", "fat-base", **dict(ALONE, **over)))
        expect.problem(r, "INSUFFICIENT_MEMORY")
        expect.problem(stack.api.get("/v1/clusters/snap-thin"), "CLUSTER_NOT_FOUND")


LIBRARY = ("#!lua name=snaplib\n"
           "redis.register_function('snapshot_hello', function() return 'restored' end)")


def test_final_snapshot_on_delete_outlives_the_cluster_and_restores(stack, cleanup):
    """DELETE with {"final_snapshot": name}: refused while the name is taken;
    then the cluster goes, its final snapshot stays, and a cluster of the
    same id restored from it (cluster mode disabled now) holds the data."""
    cid = "snap-last"
    source, pw = create(stack, cleanup, clusters.valkey_cluster(cid, num_shards=2))
    rc = clusters.cluster_client(source, pw)
    try:
        load(rc, 3000)
        expiries = [e for _, e in read_all(rc, 3000)]
    finally:
        rc.close()
    # A library of functions, loaded on every primary as cluster mode asks:
    # no key, yet part of the data.
    for node in primary_nodes(source):
        with clusters.client(node["address"], node["port"], pw) as c:
            c.execute_command("FUNCTION", "LOAD", LIBRARY)
    wait_snapshot_available(stack.api, take(stack.api, cid, "last-manual")["id"])
    r = stack.api.delete(f"/v1/clusters/{cid}", json={"final_snapshot": "last-manual"})
    expect.problem(r, "SNAPSHOT_NAME_TAKEN")
    eq(clusters.get(stack.api, cid)["status"], "available", "the cluster after the refusal")

    deleting = expect.json_ok(stack.api.delete(f"/v1/clusters/{cid}",
                                               json={"final_snapshot": "last-final"}), 202)
    eq(deleting["status"], "deleting", "status in the answer to DELETE")
    clusters.wait_gone(stack.api, cid, SNAPSHOT_TIMEOUT)
    final = wait_snapshot_available(stack.api, "last-final")
    eq((final["source"], final["cluster_id"], final["keys"]), ("final", cid, 3000),
       "the final snapshot")
    check_snapshot(final, source)
    check_stored(final)
    eq(len(created_events(stack.api, final)), 1, "SnapshotCreated events")
    eq(sorted(s["name"] for s in listed(stack.api, cid)), ["last-final", "last-manual"],
       "the snapshots of the deleted cluster")

    body, pw = restore(stack, cleanup, cid, "last-final", cluster_mode="disabled", num_shards=1)
    with data_client(body, pw) as c:
        check_data_set(c, 3000, expiries)
        eq(c.dbsize(), 3000, "keys")
        eq(c.execute_command("FCALL", "snapshot_hello", 0), "restored", "the library's function")


def test_final_snapshot_named_in_the_query(stack, cleanup):
    cid = "snap-last-q"
    body, pw = create(stack, cleanup, clusters.redis_group(cid, engine="valkey",
                                                           engine_version="8.0", **ALONE))
    with data_client(body, pw) as c:
        load(c, 100)
    expect.json_ok(stack.api.delete(f"/v1/clusters/{cid}?final_snapshot=last-q"), 202)
    clusters.wait_gone(stack.api, cid, SNAPSHOT_TIMEOUT)
    final = wait_snapshot_available(stack.api, "last-q")
    eq((final["source"], final["cluster_id"], final["keys"]), ("final", cid, 100),
       "the final snapshot")


def window_hour(now):
    """An hour h whose window h:00-h+1:00 opens 3 to 11 hours from now,
    neither touching the default maintenance window (sun:05:00-sun:06:00)
    nor crossing midnight."""
    return next(h for h in ((now.tm_hour + d) % 24 for d in range(3, 12)) if h not in (4, 5, 23))


def test_automatic_snapshots_fire_in_their_window_and_expire(stack, cleanup):
    """snapshot_window and snapshot_retention_days PATCHed onto a cluster;
    cairnd's clock moved to 6 s before the window: nothing yet, then one
    automatic snapshot. Two days on, in the window again: a new one, the
    first gone (retention 1 day), the manual one kept."""
    cid = "snap-sched"
    api = stack.api
    body, pw = create(stack, cleanup, clusters.redis_group(cid, engine="valkey",
                                                           engine_version="8.0",
                                                           replicas_per_shard=1))
    eq((body["snapshot_window"], body["snapshot_retention_days"]), ("03:00-04:00", 0),
       "the defaults: no automatic snapshots")
    with data_client(body, pw) as c:
        load(c, 500)
    now = time.time()
    h = window_hour(time.gmtime(now))
    window = f"{h:02d}:00-{h + 1:02d}:00"
    patched = expect.json_ok(api.patch(f"/v1/clusters/{cid}", json={
        "snapshot_window": window, "snapshot_retention_days": 1}))
    eq((patched["snapshot_window"], patched["snapshot_retention_days"]), (window, 1),
       "the PATCHed schedule")
    opens = int(now - now % 86400 + h * 3600)
    if opens <= now:
        opens += 86400
    manual = wait_snapshot_available(api, take(api, cid, "sched-manual")["id"])

    def automatic():
        return [s for s in listed(api, cid) if s["source"] == "automatic"]

    try:
        restart_cairnd(stack, int(opens - time.time()) - 6)
        time.sleep(2.5)
        eq(automatic(), [], "no automatic snapshot before the window")
        first = wait_until(lambda: automatic(), 30, "an automatic snapshot in the window",
                           interval=0.5)
        first = wait_snapshot_available(api, first[0]["id"])
        eq((first["cluster_id"], first["keys"]), (cid, 500), "the automatic snapshot")
        time.sleep(3)
        eq([s["id"] for s in automatic()], [first["id"]], "one automatic snapshot a window")

        restart_cairnd(stack, int(opens + 2 * 86400 - time.time()) + 5)
        wait_until(lambda: [s for s in automatic() if s["id"] != first["id"]], 30,
                   "an automatic snapshot in the window two days on", interval=0.5)
        wait_until(lambda: snapshot(api, first["id"]) is None, 60,
                   "the automatic snapshot older than the retention gone", interval=0.5)
    finally:
        restart_cairnd(stack, 0)
    eq(snapshot(api, manual["id"])["status"], "available", "the manual snapshot is kept")
    kinds = sorted(s["source"] for s in listed(api, cid))
    eq(kinds, ["automatic", "manual"], "the cluster's snapshots")
    second = next(s for s in listed(api, cid) if s["source"] == "automatic")
    eq(wait_snapshot_available(api, second["id"])["keys"], 500, "the second automatic snapshot")


def test_snapshot_survives_cairnd_kill9_mid_upload(stack, cleanup, dropped):
    """3 shards x (1 + 1) and 120 MiB: cairnd killed with SIGKILL once part
    of the snapshot is in the store; the next cairnd takes the operation on,
    the snapshot ends available, its files whole, and it restores."""
    cid = "snap-kill"
    api = stack.api
    source, pw = create(stack, cleanup, clusters.valkey_cluster(cid))
    rc = clusters.cluster_client(source, pw, timeout=30)
    try:
        load_blobs(rc, 120)
    finally:
        rc.close()
    clusters.wait_replicas_linked(api, cid, timeout=60)

    snap = take(api, cid, "kill-me")
    dropped.append(snap["id"])

    def under_way():
        s = snapshot(api, snap["id"])
        assert s["status"] == "creating", f"the snapshot ended before cairnd was killed: {s}"
        return s["stored_bytes"] > 0
    wait_until(under_way, 60, "part of the snapshot in the store", interval=0.02)
    busy = conflict(api.post(f"/v1/clusters/{cid}/snapshots", json={"name": "kill-twice"}),
                    "a second snapshot while one runs")
    conflict(api.delete(f"/v1/snapshots/{snap['id']}"), "DELETE of a creating snapshot")
    stack.kill9_cairnd()
    eq(stack.db.psql(f"SELECT status FROM operations WHERE id = '{snap['operation_id']}'")
       .strip(), "running", "the snapshot was under way when cairnd died")
    stack.restart_cairnd()

    snap = wait_snapshot_available(api, snap["id"], 180)
    op = operation(api, snap["operation_id"])
    eq((op["kind"], op["status"]), ("snapshot", "succeeded"), f"the operation: {op}")
    check_snapshot(snap, source)
    check_stored(snap)
    eq(len(created_events(api, snap)), 1, "SnapshotCreated events after the resumed run")
    eq(snapshot(api, "kill-twice"), None, f"the refused second snapshot ({busy})")

    body, pw = restore(stack, cleanup, "snap-kill-back", "kill-me")
    eq(shape(body), shape(source), "the restored cluster's shape")
    rc = clusters.cluster_client(body, pw, timeout=30)
    try:
        check_blobs(rc, 120)
    finally:
        rc.close()
    eq(total_keys(body, pw), 120, "keys")


BAD_NAMES = ["", "1nightly", "-nightly", "Nightly", "night_ly", "night.ly", "night ly",
             "a" * 65, "caf\u00e9", "x\n", "../x", 5, True, ["a"], {"a": 1}]
BAD_WINDOWS = ["03:00-03:30", "03:00-03:59", "3:00-4:00", "24:00-01:00", "03:60-05:00",
               "03:00", "03:00-04:00x", "", 300]
BAD_RETENTIONS = [-1, 36, "7", 1.5, True]


def test_hostile_input_is_refused(stack, cleanup):
    """Bad names and fields, unknown clusters and snapshots, ids that are no
    UUID, bytes no path may hold, the wrong token, a second DELETE: each
    refused with the code (and field) that says why, nothing made."""
    api = stack.api
    cid = "snap-hostile"
    cleanup.append(cid)
    expect.json_ok(api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", **ALONE)), 202)
    conflict(api.post(f"/v1/clusters/{cid}/snapshots"), "a snapshot of a cluster being created")
    body = wait_available(api, cid)
    eq((body["snapshot_window"], body["snapshot_retention_days"]), ("03:00-04:00", 0),
       "the schedule's defaults")

    # Names, unknown fields, bodies that are not an object.
    for name in BAD_NAMES:
        expect.problem(api.post(f"/v1/clusters/{cid}/snapshots", json={"name": name}),
                       "VALIDATION_FAILED", fields=["name"])
    for doc, fields in (({"name": "ok-name", "bogus": 1}, ["bogus"]),
                        ({"source": "automatic"}, ["source"]),
                        ({"cluster_id": "other"}, ["cluster_id"])):
        expect.problem(api.post(f"/v1/clusters/{cid}/snapshots", json=doc),
                       "VALIDATION_FAILED", fields=fields)
    for raw, code in ((b"[]", "VALIDATION_FAILED"), (b'"a"', "VALIDATION_FAILED"),
                      (b"{", "MALFORMED_JSON")):
        expect.problem(api.post(f"/v1/clusters/{cid}/snapshots", data=raw,
                                headers={"Content-Type": "application/json"}), code)
    eq(listed(api, cid), [], "nothing refused was made")

    # Unknown clusters and snapshots, ids that are no UUID, bytes no path holds.
    expect.problem(api.post("/v1/clusters/nope/snapshots", json={"name": "nope-1"}),
                   "CLUSTER_NOT_FOUND")
    for sid in ("no-such-snapshot", "00000000-0000-4000-8000-000000000000", "NOT-A-NAME",
                "0000000-0000-4000-8000-0000000000000", "x" * 300):
        expect.problem(api.get(f"/v1/snapshots/{sid}"), "SNAPSHOT_NOT_FOUND")
        expect.problem(api.delete(f"/v1/snapshots/{sid}"), "SNAPSHOT_NOT_FOUND")
    for path in ("/v1/snapshots/%ff", "/v1/snapshots/a%00b", "/v1/snapshots?cluster_id=%ff"):
        expect.problem(api.get(path), "MALFORMED_REQUEST")
    expect.problem(api.delete("/v1/snapshots/%ff"), "MALFORMED_REQUEST")
    expect.problem(api.get("/v1/snapshots?page_size=0"), "INVALID_QUERY_PARAMETER",
                   fields=["page_size"])
    expect.problem(api.get("/v1/snapshots?page_token=garbage"), "INVALID_PAGE_TOKEN")

    # Restores from nothing, or named wrongly (the rest of the body is a
    # whole spec, so that only restore_from is at fault): nothing is created.
    ghost = clusters.redis_group("snap-ghost", engine="valkey", engine_version="8.0", **ALONE)
    cleanup.append("snap-ghost")  # should a refusal fail to refuse
    for doc, fields in (({"snapshot_id": "no-such-snapshot"}, ["restore_from.snapshot_id"]),
                        ("a", ["restore_from"]), ({}, ["restore_from.snapshot_id"]),
                        ({"snapshot_id": 7}, ["restore_from.snapshot_id"]),
                        ({"snapshot_id": "a", "at": 1},
                         ["restore_from.at", "restore_from.snapshot_id"])):
        r = api.post("/v1/clusters", json=dict(ghost, restore_from=doc))
        expect.problem(r, "VALIDATION_FAILED", fields=fields)
        expect.problem(api.get("/v1/clusters/snap-ghost"), "CLUSTER_NOT_FOUND")

    # The schedule's fields.
    for window in BAD_WINDOWS:
        expect.problem(api.patch(f"/v1/clusters/{cid}", json={"snapshot_window": window}),
                       "VALIDATION_FAILED", fields=["snapshot_window"])
    for days in BAD_RETENTIONS:
        expect.problem(api.patch(f"/v1/clusters/{cid}", json={"snapshot_retention_days": days}),
                       "VALIDATION_FAILED", fields=["snapshot_retention_days"])
    for days in (35, 0):
        eq(expect.json_ok(api.patch(f"/v1/clusters/{cid}", json={
            "snapshot_retention_days": days}))["snapshot_retention_days"], days, "retention")

    # A final snapshot with a bad name: the cluster stays.
    expect.problem(api.delete(f"/v1/clusters/{cid}", json={"final_snapshot": "Bad Name"}),
                   "VALIDATION_FAILED", fields=["final_snapshot"])
    expect.problem(api.delete(f"/v1/clusters/{cid}", json={"final": "x"}),
                   "VALIDATION_FAILED", fields=["final"])
    expect.problem(api.delete(f"/v1/clusters/{cid}?final_snapshot=Bad"),
                   "INVALID_QUERY_PARAMETER", fields=["final_snapshot"])
    eq(clusters.get(api, cid)["status"], "available", "the cluster after the refusals")

    # Who may do what.
    expect.json_ok(stack.inst.read.get("/v1/snapshots"))
    expect.problem(stack.inst.read.post(f"/v1/clusters/{cid}/snapshots"), "FORBIDDEN")
    expect.problem(stack.inst.read.delete("/v1/snapshots/a"), "FORBIDDEN")
    expect.problem(stack.inst.anon.get("/v1/snapshots"), "UNAUTHENTICATED")

    # Names at the edges pass; a name is taken once.
    edge = "a" + "0-" * 31 + "z"
    eq(len(edge), 64, "the longest name")
    for name in ("a", edge):
        wait_snapshot_available(api, take(api, cid, name)["id"])
    expect.problem(api.post(f"/v1/clusters/{cid}/snapshots", json={"name": "a"}),
                   "SNAPSHOT_NAME_TAKEN")
    eq(expect.json_ok(stack.inst.read.get("/v1/snapshots/a"))["name"], "a", "read by name")

    # Listing: the cluster's only, newest first, one a page.
    pages = expect.walk(api, "/v1/snapshots", "snapshots", 1, params={"cluster_id": cid})
    eq([s["name"] for p in pages for s in p["snapshots"]], [edge, "a"], "walked by one")

    # DELETE twice: deleting, then deleting or gone; once gone, 404.
    deleting = expect.json_ok(api.delete("/v1/snapshots/a"), 202)
    eq((deleting["name"], deleting["status"]), ("a", "deleting"), "the answer to DELETE")
    again = api.delete("/v1/snapshots/a")
    if again.status_code == 404:
        expect.problem(again, "SNAPSHOT_NOT_FOUND")
    else:
        eq(expect.json_ok(again, 202)["status"], "deleting", "a second DELETE")
    wait_until(lambda: snapshot(api, "a") is None, 30, "snapshot a gone")
    expect.problem(api.delete("/v1/snapshots/a"), "SNAPSHOT_NOT_FOUND")
    eq(list((STORE / deleting["id"]).glob("*")), [], "the deleted snapshot's files")
    eq([s["name"] for s in listed(api, cid)], [edge], "the cluster's snapshots after the DELETE")


def test_hostile_uploads_are_refused(stack):
    """An agent's upload parts are checked before anything is stored: what
    does not expand to the bytes and checksum its headers name, a gzip bomb,
    bytes that are no gzip, a file that is no RDB, a part too large, and
    parts of an upload nobody asked of the host."""
    agent = stack.agents[0]
    api = stack.api.with_token(agent.identity()["credential"])
    sid = "7d0c9a8e-7b1f-4e2a-8c3d-6f4e2a1b0c90"
    base = f"/v1/agent/snapshots/{sid}/shards/0"

    def put(part, body, raw=None, sha=None, extra=None):
        headers = {"Content-Type": "application/octet-stream"}
        if raw is not None:
            headers["Cairn-Raw-Bytes"] = str(raw)
        if sha is not None:
            headers["Cairn-Raw-Sha256"] = sha
        headers.update(extra or {})
        return api.request("PUT", f"{base}/parts/{part}", data=body, headers=headers)

    rdb = b"REDIS0011" + bytes(range(256)) * 40
    good = gzip.compress(rdb, 1)
    digest = hashlib.sha256(rdb).hexdigest()

    # Headers missing or malformed, or not what the data expands to.
    for raw, sha in ((None, digest), (len(rdb), None), ("-1", digest), ("1e3", digest),
                     (2 ** 31, digest), (len(rdb), digest[:63]), (len(rdb), "z" * 64),
                     (len(rdb) + 1, digest), (len(rdb) - 1, digest),
                     (len(rdb), hashlib.sha256(b"other").hexdigest())):
        expect.problem(put(1, good, raw, sha), "VALIDATION_FAILED")
    # Not gzip; cut short; trailing bytes; a bomb past what it declares; no RDB.
    bomb = gzip.compress(b"\0" * (64 << 20), 9)
    for body, raw, sha in ((rdb, len(rdb), digest), (good[:-9], len(rdb), digest),
                           (good + b"junk", len(rdb), digest),
                           (bomb, 1000, hashlib.sha256(b"\0" * 1000).hexdigest()),
                           (gzip.compress(b"NOTRDB" * 100), 600,
                            hashlib.sha256(b"NOTRDB" * 100).hexdigest())):
        expect.problem(put(1, body, raw, sha), "VALIDATION_FAILED")
    expect.problem(put(1, b"", 0, hashlib.sha256(b"").hexdigest()), "VALIDATION_FAILED")
    # Too large a part: refused before it is read.
    expect.problem(put(1, b"x" * (17 << 20), 1, digest), "PAYLOAD_TOO_LARGE")
    # Well-formed, but no such upload is asked of this host.
    expect.problem(put(1, good, len(rdb), digest), "SNAPSHOT_NOT_FOUND")
    expect.problem(api.post(f"{base}/complete", json={"parts": 1, "size_bytes": len(rdb),
                                                       "sha256": digest}), "SNAPSHOT_NOT_FOUND")
    # Paths that name no upload.
    for path in (f"/v1/agent/snapshots/not-a-uuid/shards/0/parts/1",
                 f"/v1/agent/snapshots/{sid}/shards/-1/parts/1",
                 f"/v1/agent/snapshots/{sid}/shards/0/parts/0",
                 f"/v1/agent/snapshots/{sid}/shards/0/parts/99999999999999999999",
                 f"/v1/agent/snapshots/{sid}/shards/1x/parts/1"):
        expect.problem(api.request("PUT", path, data=good, headers={
            "Cairn-Raw-Bytes": str(len(rdb)), "Cairn-Raw-Sha256": digest}),
            "SNAPSHOT_NOT_FOUND")
    # Only agents upload.
    expect.problem(stack.api.request("PUT", f"{base}/parts/1", data=good, headers={
        "Cairn-Raw-Bytes": str(len(rdb)), "Cairn-Raw-Sha256": digest}), "FORBIDDEN")
