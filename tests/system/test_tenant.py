"""test_tenant.py -- what a tenant can do with the password it gets (the
cluster's AUTH token, the engines' default user): use the cache, and not
reconfigure it or take it away from Cairn. Real cairnd, agents and engines
-- a Valkey 8.0 cluster in cluster mode and a Redis 7.0 group, since the
two engines name and group their commands apart.

Cairn itself talks to the engines as a user of its own (clusters.admin_client
reads its login off the agent's files, as root on the host could); the
tenant's attempts below must not disturb the cluster: it stays available,
replicating, and Cairn keeps driving it.
"""

import json
import time

import redis
from redis.crc import key_slot

import agents
import clusters
from clusters import nodes, wait_available
from expect import eq
from test_ha import create

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("tenant")

# What would reconfigure a node, reach elsewhere from it, or take it away
# from Cairn: each refused on both engines.
FORBIDDEN = [
    ("CONFIG", "SET", "maxmemory", "0"),
    ("CONFIG", "SET", "protected-mode", "no"),
    ("CONFIG", "SET", "appendonly", "no"),
    ("CONFIG", "SET", "requirepass", "mine-now"),
    ("CONFIG", "GET", "*"),
    ("CONFIG", "REWRITE"),
    ("CONFIG", "RESETSTAT"),
    ("ACL", "SETUSER", "backdoor", "on", ">secret", "~*", "+@all"),
    ("ACL", "LIST"),
    ("ACL", "DELUSER", "cairn"),
    ("ACL", "SAVE"),
    ("REPLICAOF", "203.0.113.7", "6379"),
    ("SLAVEOF", "203.0.113.7", "6379"),
    ("REPLICAOF", "NO", "ONE"),
    ("CLUSTER", "FAILOVER", "FORCE"),
    ("CLUSTER", "RESET", "HARD"),
    ("CLUSTER", "FORGET", "0" * 40),
    ("CLUSTER", "MEET", "203.0.113.7", "6379"),
    ("CLUSTER", "REPLICATE", "0" * 40),
    ("CLUSTER", "SETSLOT", "0", "STABLE"),
    ("CLUSTER", "ADDSLOTS", "0"),
    ("CLUSTER", "DELSLOTS", "0"),
    ("CLUSTER", "BUMPEPOCH"),
    ("CLUSTER", "SET-CONFIG-EPOCH", "9"),
    ("CLUSTER", "SAVECONFIG"),
    ("SHUTDOWN", "NOSAVE"),
    ("DEBUG", "SLEEP", "1"),
    ("DEBUG", "SEGFAULT"),
    ("MODULE", "LIST"),
    ("MODULE", "LOAD", "/tmp/evil.so"),
    ("CLIENT", "PAUSE", "1000"),
    ("CLIENT", "UNPAUSE"),
    ("CLIENT", "KILL", "TYPE", "normal"),
    ("CLIENT", "NO-EVICT", "on"),
    ("FAILOVER",),
    ("SAVE",),
    ("BGSAVE",),
    ("BGREWRITEAOF",),
    ("MONITOR",),
    ("SYNC",),
    ("PSYNC", "?", "-1"),
    ("REPLCONF", "listening-port", "1"),
    ("MIGRATE", "203.0.113.7", "6379", "k", "0", "100"),
    ("SLOWLOG", "RESET"),
    ("LATENCY", "RESET"),
]


def tenant(node, pw):
    return clusters.client(node["address"], node["port"], pw)


def refused(c, command):
    """The engine's answer to command: 'refused' when the user's rights
    forbid it (NOPERM), or the engine runs it for no one over the network
    (DEBUG and MODULE are off in every engine Cairn renders); else what it
    said (a reply or another error)."""
    try:
        return f"ran: {c.execute_command(*command)!r}"
    except redis.exceptions.NoPermissionError:
        return "refused"
    except redis.ResponseError as e:
        text = str(e)
        off = text.startswith(("DEBUG command not allowed", "MODULE command not allowed"))
        return "refused" if text.startswith("NOPERM") or off else f"error: {e}"


def check_forbidden(node, pw):
    with tenant(node, pw) as c:
        answers = {" ".join(cmd): refused(c, cmd) for cmd in FORBIDDEN}
    eq({k: v for k, v in answers.items() if v != "refused"}, {},
       f"commands the tenant could run on {node['engine']} {node['engine_version']}")


def login_refused(node, user, pw):
    try:
        with redis.Redis(host=node["address"], port=node["port"], username=user, password=pw,
                         socket_timeout=3) as c:
            c.ping()
    except redis.RedisError as e:
        return "WRONGPASS" in str(e) or isinstance(e, redis.AuthenticationError)
    return False


def check_logins(node, pw):
    """The tenant's password opens only the default user; Cairn's users
    refuse it, and Cairn's password is not the default user's."""
    for user in ("cairn", "cairn-repl"):
        assert login_refused(node, user, pw), f"user {user} with the tenant's password"
    user, admin = agents.engine_login(node["id"])
    eq(user, "cairn", "the agent's login")
    assert login_refused(node, None, admin), "the default user with Cairn's password"


def check_files(stack, node, pw):
    """Neither the tenant's nor Cairn's password is in the engine's config
    file: the users are there as hashes."""
    agent = stack.agent_of(node["host_id"])
    conf = (agent.node_dir(node["id"]) / "engine.conf").read_text()
    _, admin = agents.engine_login(node["id"])
    assert pw not in conf and admin not in conf, "a password in engine.conf"
    assert "user default reset on #" in conf, conf


def test_tenant_uses_a_cluster_mode_cluster_but_cannot_reconfigure_it(stack, cleanup):
    body, pw = create(stack, cleanup, clusters.valkey_cluster("tenant-cm", num_shards=1))
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    rc = clusters.cluster_client(body, pw)
    try:
        rc.set("k", "v")
        eq(rc.get("k"), "v", "a write and a read")
        eq(rc.wait(1, 2000), 1, "WAIT")
    finally:
        rc.close()
    with tenant(primary, pw) as c:
        # What applications and their tools use.
        assert c.cluster("info")["cluster_state"] == "ok"
        assert c.execute_command("CLUSTER", "SLOTS")
        assert c.execute_command("CLUSTER", "SHARDS")
        assert c.execute_command("CLUSTER", "NODES")
        eq(c.execute_command("CLUSTER", "KEYSLOT", "k"), key_slot(b"k"), "CLUSTER KEYSLOT")
        assert c.info("replication")["role"] == "master"
        eq(c.execute_command("ROLE")[0], "master", "ROLE")
        c.client_setname("app")
        assert any(x["name"] == "app" for x in c.client_list())
        eq(c.keys("k"), ["k"], "KEYS")
        eq(c.eval("return redis.call('GET', KEYS[1])", 1, "k"), "v", "EVAL")
        assert isinstance(c.slowlog_get(), list)
        assert c.publish("news", "x") == 0
    with tenant(replica, pw) as c:
        c.execute_command("READONLY")
        clusters.wait_until(lambda: c.get("k") == "v", 5, "a read from the replica")
    check_forbidden(primary, pw)
    check_forbidden(replica, pw)
    check_logins(primary, pw)
    check_files(stack, primary, pw)
    # None of it touched the cluster: still available, still replicating,
    # and Cairn still drives its engines.
    after = wait_available(stack.api, "tenant-cm")
    eq([n["role"] for n in nodes(after)], [n["role"] for n in nodes(body)], "roles")
    with clusters.admin_client(primary) as c:
        eq(c.config_get("maxmemory-policy")["maxmemory-policy"], "volatile-lru",
           "Cairn's own user reads the config")


def test_tenant_uses_a_redis_group_but_cannot_reconfigure_it(stack, cleanup):
    body, pw = create(stack, cleanup, clusters.redis_group(
        "tenant-group", engine="redis", engine_version="7.0", replicas_per_shard=1))
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    with tenant(primary, pw) as c:
        c.set("k", "v")
        eq(c.wait(1, 2000), 1, "WAIT")
        c.select(1)
        c.set("other-db", "x")
        c.flushdb()
        eq(c.execute_command("ROLE")[0], "master", "ROLE")
    with tenant(replica, pw) as c:
        eq(c.get("k"), "v", "the replica has the write")
    check_forbidden(primary, pw)
    check_forbidden(replica, pw)
    check_logins(replica, pw)
    check_files(stack, replica, pw)
    with tenant(replica, pw) as c:
        eq(c.info("replication")["master_link_status"], "up", "the replica's link")
    wait_available(stack.api, "tenant-group")


def test_users_changed_behind_cairns_back_are_put_back(stack, cleanup):
    """Someone holding Cairn's own engine password (a tenant cannot) adds a
    user and opens the default user up: within seconds the node's agent
    puts the users back as the desired config has them, and the cluster
    records EngineUsersRepaired."""
    body, pw = create(stack, cleanup, clusters.redis_group("tenant-drift", replicas_per_shard=0))
    node = nodes(body)[0]
    with clusters.admin_client(node) as c:
        c.execute_command("ACL", "SETUSER", "backdoor", "on", ">secret", "~*", "+@all")
        c.execute_command("ACL", "SETUSER", "default", "+@all")
        changed_at = time.monotonic()

        def put_back():
            with tenant(node, pw) as t:
                confined = refused(t, ("CONFIG", "GET", "x")) == "refused"
            return "backdoor" not in c.execute_command("ACL", "USERS") and confined
        clusters.wait_until(lambda: put_back() and [
            e for e in clusters.events(stack.api, "tenant-drift")
            if e["type"] == "EngineUsersRepaired"], 10, "the users put back, and the event")
        print(f"\nusers put back {time.monotonic() - changed_at:.1f} s after the change")
        eq(sorted(c.execute_command("ACL", "USERS")), ["cairn", "cairn-repl", "default"],
           "the engine's users")
    ev = [e for e in clusters.events(stack.api, "tenant-drift")
          if e["type"] == "EngineUsersRepaired"][-1]
    eq(ev["detail"]["node"], node["id"], "the event's node")
    assert login_refused(node, "backdoor", "secret")
    with tenant(node, pw) as c:
        eq(c.get("nothing"), None, "the tenant still works")


def test_an_engine_from_before_cairns_users_gets_them_live(stack, cleanup):
    """An engine started before Cairn had users of its own -- one password,
    the default user's, for everyone -- under an agent restarted on this
    version: the agent gives it Cairn's users without a restart, logs in as
    Cairn's user from then on, and the tenant is confined; its data and
    process stay."""
    body, pw = create(stack, cleanup, clusters.redis_group("tenant-old", replicas_per_shard=0))
    node = nodes(body)[0]
    agent = stack.agent_of(node["host_id"])
    with tenant(node, pw) as c:
        c.set("kept", "yes")
    agent.kill9()
    # The engine as an older cairnd rendered it: the tenant's password on
    # the default user with every command, no users of Cairn's, and the
    # agent's node.json holding that one password.
    admin = clusters.admin_client(node)
    run_path = agent.node_dir(node["id"]) / "node.json"
    run = json.loads(run_path.read_text())
    run.pop("user")
    run["password"] = pw
    run_path.write_text(json.dumps(run))
    with admin as c:
        pid = c.info("server")["process_id"]
        c.execute_command("ACL", "SETUSER", "default", "reset", "on", f">{pw}", "~*", "&*",
                          "+@all")
        c.execute_command("ACL", "DELUSER", "cairn-repl")
        c.execute_command("CONFIG", "SET", "masteruser", "")
    with tenant(node, pw) as c:
        c.execute_command("ACL", "DELUSER", "cairn")
        eq(c.config_get("maxmemory-policy")["maxmemory-policy"], "volatile-lru",
           "the old tenant could run CONFIG")
    agent.start()

    def confined():
        with tenant(node, pw) as c:
            return refused(c, ("CONFIG", "GET", "x")) == "refused"
    clusters.wait_until(confined, 15, "the tenant confined")
    clusters.wait_until(lambda: agents.engine_login(node["id"])[0] == "cairn", 5,
                        "the agent's login is Cairn's user")
    with clusters.admin_client(node) as c:
        eq(c.info("server")["process_id"], pid, "the same engine process")
        eq(sorted(c.execute_command("ACL", "USERS")), ["cairn", "cairn-repl", "default"], "users")
    with tenant(node, pw) as c:
        eq(c.get("kept"), "yes", "the data")
    wait_available(stack.api, "tenant-old")


GUARDED = {"maxmemory": "0", "maxmemory-policy": "allkeys-random", "appendonly": "no",
           "appendfsync": "always", "save": "900 1", "protected-mode": "no",
           "repl-diskless-sync": "no", "repl-backlog-size": "1048576", "masterauth": "not-it"}


def test_settings_changed_behind_cairns_back_are_put_back(stack, cleanup):
    """Someone holding Cairn's own engine password CONFIG SETs what Cairn
    manages: within seconds the agent sets it back and the cluster records
    EngineConfigRepaired. A change cairnd makes itself (a parameter) is not
    fought, nor one that waits for the node's restart."""
    body, pw = create(stack, cleanup, clusters.redis_group(
        "tenant-settings", engine="valkey", engine_version="8.0", replicas_per_shard=1))
    primary = next(n for n in nodes(body) if n["role"] == "primary")
    with clusters.admin_client(primary) as c:
        before = {k: c.config_get(k)[k] for k in GUARDED}
        assert all(before[k] != v for k, v in GUARDED.items()), before
        for k, v in GUARDED.items():
            c.config_set(k, v)
        changed_at = time.monotonic()
        clusters.wait_until(lambda: {k: c.config_get(k)[k] for k in GUARDED} == before, 10,
                            "the settings put back")
        took = time.monotonic() - changed_at
    print(f"\nsettings put back {took:.1f} s after the change")
    clusters.wait_until(lambda: [e for e in clusters.events(stack.api, "tenant-settings")
                                 if e["type"] == "EngineConfigRepaired"], 5, "the event")
    ev = [e for e in clusters.events(stack.api, "tenant-settings")
          if e["type"] == "EngineConfigRepaired"]
    eq([e["detail"]["node"] for e in ev], [primary["id"]], "the event's node")
    replica = next(n for n in nodes(body) if n["role"] == "replica")
    with tenant(replica, pw) as c:
        c.execute_command("READONLY")
    wait_available(stack.api, "tenant-settings")

    # cairnd's own changes stay: a live one, and one for the next restart.
    r = stack.api.patch("/v1/clusters/tenant-settings", json={
        "parameters": {"maxmemory-policy": "allkeys-lru", "appendonly": "no"}})
    assert r.status_code in (200, 202), r.text
    wait_available(stack.api, "tenant-settings")
    clusters.wait_until(lambda: all(
        clusters.admin_client(n).config_get("maxmemory-policy")["maxmemory-policy"] ==
        "allkeys-lru" for n in nodes(body)), 10, "the new policy on every node")
    time.sleep(5)  # two INFO rounds and more
    for n in nodes(body):
        with clusters.admin_client(n) as c:
            eq((c.config_get("maxmemory-policy")["maxmemory-policy"],
                c.config_get("appendonly")["appendonly"]), ("allkeys-lru", "yes"),
               f"{n['id']}: the policy changed, appendonly waiting for a restart")
    eq(len([e for e in clusters.events(stack.api, "tenant-settings")
            if e["type"] == "EngineConfigRepaired"]), 1, "no repair of cairnd's own change")


def test_an_engine_refusing_cairns_login_is_restarted_with_its_users(stack, cleanup):
    """Cairn's own engine user's password changed behind its back: no ACL
    command can undo that from a connection that cannot log in, so the
    agent restarts the engine, whose freshly rendered config has Cairn's
    users; its data stays (AOF) and the cluster records
    EngineLoginRepaired."""
    body, pw = create(stack, cleanup, clusters.redis_group("tenant-login", replicas_per_shard=0))
    node = nodes(body)[0]
    with tenant(node, pw) as c:
        c.set("kept", "yes")
    with clusters.admin_client(node) as c:
        pid = c.info("server")["process_id"]
        c.execute_command("ACL", "SETUSER", "cairn", "resetpass", ">locked-out-0123456789")
        changed_at = time.monotonic()

    def back():
        try:
            with clusters.admin_client(node) as c:
                return c.info("server")["process_id"] != pid
        except redis.RedisError:
            return False
    clusters.wait_until(back, 15, "Cairn's login back, on a new engine process")
    print(f"\nCairn's login back {time.monotonic() - changed_at:.1f} s after the change")
    clusters.wait_until(lambda: [e for e in clusters.events(stack.api, "tenant-login")
                                 if e["type"] == "EngineLoginRepaired"], 5, "the event")
    with tenant(node, pw) as c:
        eq(c.get("kept"), "yes", "the data")
    wait_available(stack.api, "tenant-login")
