"""test_users.py -- a cluster's tenant users beside the default one
(/v1/clusters/{id}/users), as ElastiCache's RBAC users are: an access
string, one or two passwords. Real cairnd, agents and engines: a Valkey 8.0
group of a primary and a replica, and a Redis 7.0 cluster in cluster mode,
since the two engines group their commands apart and the cap on a user is
computed on each engine from its own categories.

What a user can do is what its access string says, never more than the
cluster's AUTH token can: CONFIG, ACL, REPLICAOF and the rest stay refused
whatever the string asks for.
"""

import os
import signal
import time
from urllib.parse import unquote

import pytest
import redis

import agents
import clusters
import expect
from clusters import nodes, wait_until
from expect import eq
from test_ha import create
from test_tenant import FORBIDDEN, refused

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("users")

PW = "app-password-0123456789"
PW2 = "app-password-rotated-9876"


def login(node, user, pw):
    """A connection to node as user, or the reason it was refused: 'refused'
    (wrong user or password, or a user that is off)."""
    c = redis.Redis(host=node["address"], port=node["port"], username=user, password=pw,
                    socket_timeout=3, socket_connect_timeout=3, decode_responses=True)
    try:
        c.ping()
    except redis.AuthenticationError:
        c.close()
        return "refused"
    except redis.ResponseError as e:
        c.close()
        if "WRONGPASS" in str(e) or "invalid username-password" in str(e):
            return "refused"
        raise
    return c


def opens(node, user, pw):
    """Whether user logs in to node with pw (False too while the engine is
    down)."""
    try:
        c = login(node, user, pw)
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    if c == "refused":
        return False
    c.close()
    return True


def wait_logins(body, user, valid, invalid, timeout=10):
    """Every node opens to user with each password of valid, and to none of
    invalid: the agents give the engines a change within a sync."""
    started = time.monotonic()
    wait_until(lambda: all(opens(n, user, pw) for n in nodes(body) for pw in valid) and
               not any(opens(n, user, pw) for n in nodes(body) for pw in invalid),
               timeout, f"{user}: {valid} open every node, {invalid} none")
    return time.monotonic() - started


def post_user(api, cid, name, access, passwords, status=201):
    r = api.post(f"/v1/clusters/{cid}/users",
                 json={"user_name": name, "access_string": access, "passwords": passwords})
    return expect.json_ok(r, status)


def patch_user(api, cid, name, body):
    return expect.json_ok(api.patch(f"/v1/clusters/{cid}/users/{name}", json=body))


def check_no_secret(text, *secrets):
    for s in secrets:
        assert s not in text, f"a password in {text!r}"
    assert "password_hashes" not in text


def test_a_user_of_a_group_has_its_access_and_never_more(stack, cleanup):
    body, token = create(stack, cleanup, clusters.redis_group(
        "users-group", engine="valkey", engine_version="8.0", replicas_per_shard=1))
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    api = stack.api

    user = post_user(api, "users-group", "app", "on ~app:* &* +@all", [PW])
    eq({k: user[k] for k in ("user_name", "cluster_id", "access_string", "authentication")},
       {"user_name": "app", "cluster_id": "users-group", "access_string": "on ~app:* &* +@all",
        "authentication": {"type": "password", "password_count": 1}}, "the user")
    expect.timestamp(user["created_at"], "created_at")
    took = wait_logins(body, "app", [PW], [])
    print(f"\na new user opens both engines {took * 1000:.0f} ms after the POST")

    # Its keys, not others'; its rights, capped by the AUTH token's.
    with login(primary, "app", PW) as c:
        c.set("app:1", "v")
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.set("other:1", "v")
        eq(c.wait(1, 2000), 1, "WAIT")
        answers = {" ".join(cmd): refused(c, cmd) for cmd in FORBIDDEN}
        eq({k: v for k, v in answers.items() if v != "refused"}, {},
           "commands a user with +@all could run")
    with login(replica, "app", PW) as c:
        wait_until(lambda: c.get("app:1") == "v", 5, "the write on the replica")

    # Asking for the forbidden by name changes nothing.
    patch_user(api, "users-group", "app", {
        "access_string": "on ~* +@all +config|set +acl|setuser +replicaof +client|kill +debug"})
    time.sleep(0.5)
    wait_until(lambda: login(primary, "app", PW).get("other:1") is None, 5, "the new keys")
    with login(primary, "app", PW) as c:
        for cmd in (("CONFIG", "SET", "maxmemory", "0"), ("REPLICAOF", "203.0.113.7", "1"),
                    ("ACL", "SETUSER", "x", "on", ">y", "+@all"), ("CLIENT", "KILL", "TYPE",
                                                                  "normal")):
            eq(refused(c, cmd), "refused", " ".join(cmd))

    # A narrower string: reads only.
    patch_user(api, "users-group", "app", {"access_string": "on ~app:* +get +ping"})

    def read_only():
        with login(primary, "app", PW) as c:
            return refused(c, ("SET", "app:2", "w")) == "refused" and c.get("app:1") == "v"
    wait_until(read_only, 5, "the user reads only")

    # Passwords: [old, new] keeps both valid, [new] ends the old.
    patch_user(api, "users-group", "app", {"passwords": [PW, PW2]})
    wait_logins(body, "app", [PW, PW2], [])
    again = patch_user(api, "users-group", "app", {"passwords": [PW, PW2]})
    eq(again["authentication"]["password_count"], 2, "asking again")
    patch_user(api, "users-group", "app", {"passwords": [PW2]})
    took = wait_logins(body, "app", [PW2], [PW])
    print(f"the old password refused everywhere {took * 1000:.0f} ms after the PATCH")

    # Off: no login at all.
    patch_user(api, "users-group", "app", {"access_string": "off ~app:* +get +ping"})
    wait_logins(body, "app", [], [PW2])
    patch_user(api, "users-group", "app", {"access_string": "on ~app:* +get +ping"})
    wait_logins(body, "app", [PW2], [])

    # The default user (the AUTH token) is untouched by all of it.
    with clusters.client(primary["address"], primary["port"], token) as c:
        c.set("other:2", "v")

    # Reads show no secret; events record each change.
    listed = api.get("/v1/clusters/users-group/users")
    eq([u["user_name"] for u in expect.json_ok(listed)["users"]], ["app"], "the users")
    check_no_secret(listed.text, PW, PW2)
    check_no_secret(api.get("/v1/clusters/users-group/users/app").text, PW, PW2)
    types = [e["type"] for e in clusters.events(api, "users-group") if e["type"].startswith("User")]
    eq(types[0], "UserCreated", "the first event")
    assert types.count("UserModified") == 6, types  # the repeated PATCH made none
    check_no_secret(str(clusters.events(api, "users-group")), PW, PW2)

    # Users survive an engine's restart: the agent gives them again.
    agent = stack.agent_of(replica["host_id"])
    [pid] = agents.engine_pids_under([agent.node_dir(replica["id"])])
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: opens(replica, "app", PW2), 20, "the user on the restarted replica")

    # Deleted behind Cairn's back by someone holding Cairn's password: put back.
    with clusters.admin_client(primary) as c:
        c.execute_command("ACL", "DELUSER", "app")
    wait_until(lambda: opens(primary, "app", PW2), 10, "the user put back")

    # Deleted: refused everywhere, then 404.
    r = api.delete("/v1/clusters/users-group/users/app")
    assert r.status_code == 204, expect.describe(r)
    wait_logins(body, "app", [], [PW2])
    expect.problem(api.get("/v1/clusters/users-group/users/app"), "USER_NOT_FOUND")
    expect.problem(api.delete("/v1/clusters/users-group/users/app"), "USER_NOT_FOUND")
    eq(expect.json_ok(api.get("/v1/clusters/users-group/users"))["users"], [], "no users")
    with clusters.admin_client(primary) as c:
        eq(sorted(c.execute_command("ACL", "USERS")), ["cairn", "cairn-repl", "default"],
           "the engine's users")


BAD = [
    ({"access_string": "on ~* +@all", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "default", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "cairn", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "CairnX", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "-x", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "a b", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "a" * 65, "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "x\u00e9", "access_string": "on", "passwords": [PW]}, ["user_name"]),
    ({"user_name": "x", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on >secret +@all", "passwords": [PW]},
     ["access_string"]),
    ({"user_name": "x", "access_string": "on nopass", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "reset on", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on #" + "0" * 64, "passwords": [PW]},
     ["access_string"]),
    ({"user_name": "x", "access_string": "on (~x +get)", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on +@", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on +get|", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on\t+get", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on %X~a", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on ~", "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on +a" * 300, "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": 7, "passwords": [PW]}, ["access_string"]),
    ({"user_name": "x", "access_string": "on"}, ["passwords"]),
    ({"user_name": "x", "access_string": "on", "passwords": []}, ["passwords"]),
    ({"user_name": "x", "access_string": "on", "passwords": [PW, PW2, PW + "x"]},
     ["passwords"]),
    ({"user_name": "x", "access_string": "on", "passwords": [PW, PW]}, ["passwords"]),
    ({"user_name": "x", "access_string": "on", "passwords": ["short"]}, ["passwords[0]"]),
    ({"user_name": "x", "access_string": "on", "passwords": [PW], "extra": 1}, ["extra"]),
]


def test_invalid_users_are_refused_with_reasons(stack, cleanup):
    body, _ = create(stack, cleanup, clusters.redis_group(
        "users-bad", engine="valkey", engine_version="8.0", replicas_per_shard=0))
    api = stack.api
    for bad, fields in BAD:
        expect.problem(api.post("/v1/clusters/users-bad/users", json=bad), "VALIDATION_FAILED",
                       fields)
    # Names the engine does not have: refused by the engine's own lists.
    for access, word in (("on +nosuchcommand", "command"), ("on +@nosuchcategory", "category"),
                         ("on +config|nosuch", "subcommand")):
        r = api.post("/v1/clusters/users-bad/users",
                     json={"user_name": "x", "access_string": access, "passwords": [PW]})
        expect.problem(r, "VALIDATION_FAILED", ["access_string"])
        assert f"no {word}" in r.text, r.text
    # Hostile bytes in the body (NUL is no JSON cairnd reads) and the path.
    r = api.post("/v1/clusters/users-bad/users", data=b'{"user_name": "x\\u0000y", '
                 b'"access_string": "on", "passwords": ["' + PW.encode() + b'"]}',
                 headers={"Content-Type": "application/json"})
    expect.problem(r, "MALFORMED_JSON")
    r = api.post("/v1/clusters/users-bad/users", data=b'{"user_name": "x", '
                 b'"access_string": "on ~a\\u0000b", "passwords": ["' + PW.encode() + b'"]}',
                 headers={"Content-Type": "application/json"})
    expect.problem(r, "MALFORMED_JSON")
    for path in ("%ff", "a%00b"):
        expect.problem(api.get(f"/v1/clusters/users-bad/users/{path}"), "MALFORMED_REQUEST")
    for path in ("a%20b", "default", "cairn", "x" * 300):
        at = f"/v1/clusters/users-bad/users/{unquote(path)}"
        expect.problem(api.get(f"/v1/clusters/users-bad/users/{path}"), "USER_NOT_FOUND",
                       instance=at)
        expect.problem(api.delete(f"/v1/clusters/users-bad/users/{path}"), "USER_NOT_FOUND",
                       instance=at)
    expect.problem(api.get("/v1/clusters/nope/users"), "CLUSTER_NOT_FOUND")
    expect.problem(api.post("/v1/clusters/nope/users", json={
        "user_name": "x", "access_string": "on", "passwords": [PW]}), "CLUSTER_NOT_FOUND")
    # A PATCH must change something; one of a user that is not there is 404.
    post_user(api, "users-bad", "x", "on ~x:* +get", [PW])
    expect.problem(api.patch("/v1/clusters/users-bad/users/x", json={}), "VALIDATION_FAILED",
                   ["access_string"])
    expect.problem(api.patch("/v1/clusters/users-bad/users/x", json={"user_name": "y"}),
                   "VALIDATION_FAILED", ["user_name"])
    expect.problem(api.patch("/v1/clusters/users-bad/users/y", json={"passwords": [PW]}),
                   "USER_NOT_FOUND")
    expect.problem(api.post("/v1/clusters/users-bad/users", json={
        "user_name": "x", "access_string": "on", "passwords": [PW]}), "USER_ALREADY_EXISTS")
    # A read token reads users, and changes none.
    read = stack.api.with_token(expect.json_ok(stack.api.post(
        "/v1/tokens", json={"name": "users-read", "scope": "read"}), 201)["token"])
    eq([u["user_name"] for u in expect.json_ok(read.get("/v1/clusters/users-bad/users"))["users"]],
       ["x"], "a read token's list")
    expect.problem(read.post("/v1/clusters/users-bad/users", json={
        "user_name": "z", "access_string": "on", "passwords": [PW]}), "FORBIDDEN")
    expect.problem(read.delete("/v1/clusters/users-bad/users/x"), "FORBIDDEN")
    # At most 100 users a cluster.
    for i in range(99):
        post_user(api, "users-bad", f"u{i}", "on ~* +get +ping", [PW])
    expect.problem(api.post("/v1/clusters/users-bad/users", json={
        "user_name": "one-more", "access_string": "on", "passwords": [PW]}),
        "USER_QUOTA_EXCEEDED")
    node = nodes(body)[0]
    wait_until(lambda: opens(node, "u98", PW), 10, "the hundredth user on the engine")


def test_a_user_of_a_redis_cluster_in_cluster_mode(stack, cleanup):
    body, _ = create(stack, cleanup, clusters.valkey_cluster(
        "users-cm", engine="redis", engine_version="7.0", num_shards=2, replicas_per_shard=1))
    post_user(stack.api, "users-cm", "svc", "on ~svc:* +@read +@write +@connection "
              "+cluster|slots +cluster|shards +cluster|nodes +info", [PW])
    wait_logins(body, "svc", [PW], [])
    seeds = [redis.cluster.ClusterNode(e["address"], e["port"])
             for e in body["endpoints"]["configuration"]]
    rc = redis.cluster.RedisCluster(startup_nodes=seeds, username="svc", password=PW,
                                    decode_responses=True, socket_timeout=5)
    try:
        for i in range(50):
            rc.set(f"svc:{i}", i)
        eq([rc.get(f"svc:{i}") for i in range(50)], [str(i) for i in range(50)], "reads")
        with pytest.raises(redis.exceptions.NoPermissionError):
            rc.set("other", 1)
    finally:
        rc.close()
    for n in nodes(body):
        with login(n, "svc", PW) as c:
            eq(refused(c, ("CLUSTER", "FAILOVER")), "refused", "CLUSTER FAILOVER")
            eq(refused(c, ("PUBLISH", "news", "x")), "refused", "PUBLISH (not in its string)")
