"""test_auth_token.py -- changing a cluster's AUTH token without refusing a
client: PATCH auth_token with auth_token_update_strategy "rotate" keeps the
token in use valid beside the new one on every engine, "set" ends the
rotation (or replaces the token at once). Real cairnd, agents and engines:
a Valkey 8.0 group of a primary and a replica, and a Redis 7.0 cluster in
cluster mode."""

import time

import pytest
import redis

import clusters
import expect
from clusters import nodes, wait_until
from expect import eq
from test_ha import create

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("auth_token")

NEW = "the-new-token-0123456789"
NEWER = "and-a-newer-one-9876543210"


def opens(node, pw):
    """Whether pw opens node's default user; None when the engine does not
    answer at all."""
    try:
        with clusters.client(node["address"], node["port"], pw) as c:
            return c.ping() is True
    except (redis.ConnectionError, redis.TimeoutError):
        return None
    except redis.AuthenticationError:
        return False
    except redis.ResponseError as e:
        if "WRONGPASS" in str(e) or "invalid username-password" in str(e):
            return False
        raise


def wait_tokens(body, valid, invalid, timeout=10):
    """Every node of the cluster opens to each token of valid and to none of
    invalid: the agents give the engines a change within a sync or two."""
    def settled():
        seen = {(n["id"], pw): opens(n, pw) for n in nodes(body) for pw in valid + invalid}
        return all(seen[(n["id"], pw)] is True for n in nodes(body) for pw in valid) and \
            all(seen[(n["id"], pw)] is False for n in nodes(body) for pw in invalid)
    started = time.monotonic()
    wait_until(settled, timeout, f"tokens {valid} valid, {invalid} refused")
    return time.monotonic() - started


def patch_token(api, cid, token, strategy=None):
    body = {"auth_token": token}
    if strategy is not None:
        body["auth_token_update_strategy"] = strategy
    return expect.json_ok(api.patch(f"/v1/clusters/{cid}", json=body))


def auth(api, cid):
    return expect.json_ok(api.get(f"/v1/clusters/{cid}/auth"))


def test_rotate_then_set_on_a_group(stack, cleanup):
    body, old = create(stack, cleanup, clusters.redis_group(
        "rot-group", engine="valkey", engine_version="8.0", replicas_per_shard=1))
    first = auth(stack.api, "rot-group")
    eq((first["auth_token_status"], first["auth_token_last_modified_at"]), ("set", None),
       "a new cluster's token")
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")

    # Rotate: both tokens open every node; a client on the old one is never refused.
    patch_token(stack.api, "rot-group", NEW)  # rotate is the default
    a = auth(stack.api, "rot-group")
    eq((a["auth_token"], a["auth_token_status"]), (NEW, "rotating"), "during the rotation")
    expect.timestamp(a["auth_token_last_modified_at"], "auth_token_last_modified_at")
    took = wait_tokens(body, [old, NEW], [])
    print(f"\nrotation reached both engines in {took * 1000:.0f} ms")
    # Asking again changes nothing: the old token stays valid (a retried request).
    patch_token(stack.api, "rot-group", NEW, "rotate")
    eq(auth(stack.api, "rot-group")["auth_token_status"], "rotating", "after a retried rotate")
    wait_tokens(body, [old, NEW], [])
    # Replication is Cairn's own business: it goes on, whatever the tenant's token.
    with clusters.client(primary["address"], primary["port"], NEW) as c:
        c.set("after-rotate", "1")
    with clusters.client(replica["address"], replica["port"], old) as c:
        wait_until(lambda: c.get("after-rotate") == "1", 10, "the write replicated")

    # Set: the rotation ends, only the new token opens.
    patch_token(stack.api, "rot-group", NEW, "set")
    eq(auth(stack.api, "rot-group")["auth_token_status"], "set", "after the set")
    wait_tokens(body, [NEW], [old])

    # A set of another token replaces it at once, with no rotation.
    patch_token(stack.api, "rot-group", NEWER, "set")
    eq(auth(stack.api, "rot-group")["auth_token"], NEWER, "the token set")
    wait_tokens(body, [NEWER], [old, NEW])
    types = [e["type"] for e in clusters.events(stack.api, "rot-group")]
    eq(types.count("AuthTokenUpdated"), 3, f"AuthTokenUpdated events in {types}")

    # An engine restarted from its file gets the tokens of the moment.
    with clusters.admin_client(replica) as c:
        try:
            c.execute_command("SHUTDOWN", "NOSAVE")
        except redis.ConnectionError:
            pass
    wait_until(lambda: opens(replica, NEWER) is True, 20, "the replica back, on the token set")
    eq(opens(replica, old), False, "the old token on the restarted replica")


def test_rotate_on_a_cluster_mode_cluster(stack, cleanup):
    body, old = create(stack, cleanup, clusters.valkey_cluster(
        "rot-cm", engine="redis", engine_version="7.0", num_shards=2))
    patch_token(stack.api, "rot-cm", NEW, "rotate")
    wait_tokens(body, [old, NEW], [])
    rc = clusters.cluster_client(body, NEW)
    try:
        for i in range(20):
            rc.set(f"k{i}", i)
    finally:
        rc.close()
    patch_token(stack.api, "rot-cm", NEW, "set")
    wait_tokens(body, [NEW], [old])
    # Cairn still drives it: a failover works on its own users.
    r = stack.api.post("/v1/clusters/rot-cm/failover", json={"shard_id": "0001"})
    op = expect.json_ok(r, 202)
    done = clusters.wait_cluster(stack.api, "rot-cm", lambda b: b["current_operation"] is None,
                                 30, "failover finished")
    eq(done["status"], "available", "after the failover")
    eq(expect.json_ok(stack.api.get(f"/v1/operations/{op['id']}"))["status"], "succeeded",
       "the failover")


@pytest.mark.parametrize("patch,field", [
    ({"auth_token": "short"}, "auth_token"),
    ({"auth_token": "x" * 129}, "auth_token"),
    ({"auth_token": "has a space in it 123"}, "auth_token"),
    ({"auth_token": "tab\there-0123456789"}, "auth_token"),
    ({"auth_token": "caf\u00e9-not-ascii-012345"}, "auth_token"),
    ({"auth_token": 1234567890123456789}, "auth_token"),
    ({"auth_token": None}, "auth_token"),
    ({"auth_token": NEW, "auth_token_update_strategy": "delete"}, "auth_token_update_strategy"),
    ({"auth_token": NEW, "auth_token_update_strategy": "ROTATE"}, "auth_token_update_strategy"),
    ({"auth_token": NEW, "auth_token_update_strategy": True}, "auth_token_update_strategy"),
    ({"auth_token_update_strategy": "set"}, "auth_token_update_strategy"),
])
def test_bad_token_changes_are_refused(stack, cleanup, patch, field):
    if stack.api.get("/v1/clusters/rot-bad").status_code == 404:
        create(stack, cleanup, clusters.redis_group("rot-bad", replicas_per_shard=0))
    before = auth(stack.api, "rot-bad")
    expect.problem(stack.api.patch("/v1/clusters/rot-bad", json=patch), "VALIDATION_FAILED",
                   [field])
    eq(auth(stack.api, "rot-bad"), before, "the token after a refused change")


def test_hostile_token_bodies(stack, cleanup):
    """A NUL in the token is refused as the JSON it is (cairnd takes no
    string with NUL), as are bytes that are not UTF-8."""
    if stack.api.get("/v1/clusters/rot-bad").status_code == 404:
        create(stack, cleanup, clusters.redis_group("rot-bad", replicas_per_shard=0))
    before = auth(stack.api, "rot-bad")
    headers = {"Content-Type": "application/json"}
    for raw in (b'{"auth_token": "nul\\u0000here-0123456789"}',
                b'{"auth_token": "\xff\xfe-not-utf8-0123456789"}',
                b'{"auth_token": "' + b"a" * (1 << 20) + b'"}'):
        r = stack.api.patch("/v1/clusters/rot-bad", data=raw, headers=headers)
        assert r.status_code in (400, 413), f"{raw[:40]!r}: {r.status_code} {r.text[:200]}"
    eq(auth(stack.api, "rot-bad"), before, "the token after hostile bodies")


def test_dry_run_and_read_tokens_change_nothing(stack, cleanup):
    body, old = create(stack, cleanup, clusters.redis_group("rot-dry", replicas_per_shard=0))
    r = expect.json_ok(stack.api.patch("/v1/clusters/rot-dry",
                                       json={"auth_token": NEW, "dry_run": True}))
    eq((r["dry_run"], r["changes"]), (True, ["auth_token"]), "the dry run")
    assert NEW not in str(r), f"the dry run shows the token: {r}"
    expect.problem(stack.inst.read.patch("/v1/clusters/rot-dry", json={"auth_token": NEW}),
                   "FORBIDDEN")
    expect.problem(stack.inst.read.get("/v1/clusters/rot-dry/auth"), "FORBIDDEN")
    eq(auth(stack.api, "rot-dry")["auth_token"], old, "the token")
    wait_tokens(body, [old], [NEW], timeout=3)


def sentinel_opens(stack, cid, pw):
    """Whether cairnd's Sentinel listener takes pw (AUTH) and then names
    cluster cid's primary; False when it refuses the password."""
    with redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=pw,
                     socket_timeout=5) as s:
        try:
            return s.execute_command("SENTINEL", "get-master-addr-by-name", cid) is not None
        except redis.AuthenticationError:
            return False
        except redis.ResponseError as e:
            if "WRONGPASS" in str(e):
                return False
            raise


def test_sentinel_listener_finds_the_cluster_by_its_tokens(stack, cleanup):
    """The Sentinel-compatible listener finds the cluster an AUTH opens by
    a keyed hash of its tokens, kept beside the sealed ones: both tokens of
    a rotation open it, a set ends the old one, and a cluster whose hashes
    are not kept (sealed before they were) still opens, and has them
    recorded by that first AUTH."""
    cid = "lookup-group"
    _, old = create(stack, cleanup, clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1))
    eq(sentinel_opens(stack, cid, old), True, "the create's token")
    eq(sentinel_opens(stack, cid, NEW), False, "a token the cluster does not have")
    patch_token(stack.api, cid, NEW, "rotate")
    eq((sentinel_opens(stack, cid, old), sentinel_opens(stack, cid, NEW)), (True, True),
       "both tokens of a rotation")
    patch_token(stack.api, cid, NEW, "set")
    eq((sentinel_opens(stack, cid, old), sentinel_opens(stack, cid, NEW)), (False, True),
       "after the set")
    kept = stack.db.psql("SELECT auth_lookup IS NOT NULL, auth_lookup_previous IS NULL"
                         f" FROM clusters WHERE id = '{cid}'").strip()
    eq(kept, "t|t", "hashes kept for the token in use only")
    lookup = stack.db.psql(
        f"SELECT encode(auth_lookup, 'hex') FROM clusters WHERE id = '{cid}'").strip()
    assert NEW.encode().hex() not in lookup and len(lookup) == 64, lookup

    # As a cairnd before the hashes were kept left it, mid-rotation.
    patch_token(stack.api, cid, NEWER, "rotate")
    stack.db.psql("UPDATE clusters SET auth_lookup = NULL, auth_lookup_previous = NULL"
                  f" WHERE id = '{cid}'")
    eq(sentinel_opens(stack, cid, "not-a-token-of-any-cluster"), False, "a stranger's token")
    eq(stack.db.psql(f"SELECT encode(auth_lookup_previous, 'hex') = '{lookup}'"
                     f" AND auth_lookup IS NOT NULL FROM clusters WHERE id = '{cid}'").strip(), "t",
       "both hashes recorded by the first AUTH, whatever it offered")
    eq((sentinel_opens(stack, cid, NEW), sentinel_opens(stack, cid, NEWER)), (True, True),
       "both tokens, found by the hashes recorded")
