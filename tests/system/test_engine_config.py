"""Engine configuration files (engine/engine_config.c), proven on the real engines.

Each test renders a config with tests/tools/render_config (build/tests/tools/
render_config, or $RENDER_CONFIG), starts the real /usr/bin/redis-server or
/usr/bin/valkey-server with it on a free 127.0.0.1 port in a temp dir, checks
over RESP that the engine runs with what the spec asked for, and shuts it
down. Every engine started is stopped at teardown, also when a test fails; a
failed test prints the rendered config and the engine's log.

The sizing formulas are restated here on purpose: the test checks the C code
against the documented rule, not against itself.
"""

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

import harness
from expect import eq

RENDER_CONFIG = Path(os.environ.get("RENDER_CONFIG",
                                    str(harness.REPO / "build" / "tests" / "tools" / "render_config")))

# engine -> (catalog line, binary, how its --version line starts)
ENGINES = {
    "redis": ("7.0", "/usr/bin/redis-server", "Redis server v=7.0."),
    "valkey": ("8.0", "/usr/bin/valkey-server", "Valkey server v=8.0."),
}

_spec_seq = itertools.count(1)

MIB = 1 << 20
GIB = 1 << 30


def clamp(v, lo, hi):
    return max(lo, min(hi, v))


def sizes(memory_mib, reserved=25):
    """maxmemory, repl-backlog-size and the replica buffer hard limit, in bytes."""
    memory = memory_mib * MIB
    maxmemory = memory * (100 - reserved) // 100
    backlog = clamp(maxmemory // 100, 16 * MIB, GIB)
    replica = clamp((memory - maxmemory) // 2, 64 * MIB, 16 * GIB)
    return maxmemory, backlog, replica


# --------------------------------------------------------------------------
# Rendering and running


@pytest.fixture(scope="session")
def render_tool():
    if not (RENDER_CONFIG.is_file() and os.access(RENDER_CONFIG, os.X_OK)):
        pytest.fail(f"render_config not found at {RENDER_CONFIG} (build it with "
                    f"`make build/tests/tools/render_config`, or set RENDER_CONFIG)",
                    pytrace=False)
    return RENDER_CONFIG


def require_engine(engine):
    line, binary, banner = ENGINES[engine]
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is not installed (see scripts/install-deps)", pytrace=False)
    return line, binary


def render(tool, spec, workdir):
    """Run render_config on spec; return the CompletedProcess (text)."""
    path = Path(workdir) / f"spec-{next(_spec_seq)}.json"
    path.write_text(json.dumps(spec))
    return subprocess.run([str(tool), str(path)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30)


def free_cluster_port():
    """A free port whose cluster bus port (port + 10000) is free as well."""
    for _ in range(200):
        port = harness.free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise harness.HarnessError("no free port with a free cluster bus port")


class Node:
    """One engine process started from a rendered config."""

    def __init__(self, engine, spec, workdir, config, proc):
        self.engine = engine
        self.spec = spec
        self.dir = workdir
        self.config = config
        self.proc = proc
        self.client = None

    def connect(self, password=None, username=None):
        return redis.Redis(host="127.0.0.1", port=self.spec["port"], username=username,
                           password=password, socket_timeout=5, decode_responses=True)

    def config_get(self, name):
        got = self.client.config_get(name)
        assert name in got, f"CONFIG GET {name} on {self.engine}: not known ({got!r})"
        return got[name]

    def dump(self):
        out = sys.stderr
        out.write(f"\n===== {self.engine} config ({self.dir / 'engine.conf'}) =====\n")
        out.write(self.config)
        for name in ("engine.log", "stdout.log"):
            harness.LogSource(f"{self.engine} {name}", self.dir / name).dump(out=out)


@pytest.fixture
def launch(request, render_tool):
    """launch(engine, **spec_fields) -> a running, reachable Node."""
    started = []

    def start(engine, **fields):
        line, binary = require_engine(engine)
        workdir = harness.make_temp_dir(f"engine-{engine}")
        data = workdir / "data"
        data.mkdir()
        cluster = fields.get("cluster_enabled", False)
        port = free_cluster_port() if cluster else harness.free_port()
        spec = {"engine": engine, "line": line, "node_id": f"{engine}-{port}", "port": port,
                "bind": "127.0.0.1", "data_dir": str(data), "pidfile": str(workdir / "engine.pid"),
                "logfile": str(workdir / "engine.log"), "memory_mib": 256}
        spec.update(fields)
        r = render(render_tool, spec, workdir)
        assert r.returncode == 0, f"render_config refused {spec}: {r.stderr}"
        (workdir / "engine.conf").write_text(r.stdout)
        proc = harness.ManagedProcess(f"{engine}:{port}", [binary, workdir / "engine.conf"],
                                      workdir / "stdout.log", env=harness.clean_env(),
                                      cwd=workdir)
        node = Node(engine, spec, workdir, r.stdout, proc)
        started.append(node)
        client = (node.connect(spec["admin_password"], "cairn") if spec.get("admin_password")
                  else node.connect(spec.get("password")))

        def ready():
            if not proc.alive():
                raise harness.HarnessError(f"{engine} exited with {proc.popen.returncode}")
            try:
                return client.ping()
            except redis.exceptions.ConnectionError:
                return False
            except redis.exceptions.BusyLoadingError:
                return False

        harness.wait_until(ready, 20, interval=0.05, what=f"{engine} on port {port}")
        node.client = client
        return node

    try:
        yield start
    finally:
        failed = getattr(getattr(request.node, "rep_call", None), "failed", False)
        for node in started:
            node.proc.stop(signal.SIGTERM, timeout=10)
            if failed:
                node.dump()
            harness.remove_temp_dir(node.dir)


def shutdown(node):
    """SHUTDOWN NOSAVE, and the process must exit cleanly."""
    node.client.shutdown(nosave=True)
    rc = node.proc.wait(15)
    eq(rc, 0, f"exit code of {node.engine} after SHUTDOWN")


def check_basics(node, memory_mib=256, reserved=25, policy="volatile-lru", appendonly=True,
                 cluster=False):
    """What every rendered config must have made true in the engine."""
    maxmemory, backlog, replica = sizes(memory_mib, reserved)
    c = node.client
    assert c.ping() is True
    info = c.info("server")
    if node.engine == "valkey":
        eq(info.get("server_name"), "valkey", "INFO server_name")
        assert str(info.get("valkey_version", "")).startswith("8.0."), info
    else:
        assert "server_name" not in info, f"redis-server is not Redis: {info}"
        assert str(info["redis_version"]).startswith("7.0."), info
    eq(int(node.config_get("maxmemory")), maxmemory, "CONFIG GET maxmemory")
    eq(node.config_get("maxmemory-policy"), policy, "CONFIG GET maxmemory-policy")
    eq(node.config_get("appendonly"), "yes" if appendonly else "no", "CONFIG GET appendonly")
    eq(node.config_get("appendfsync"), "everysec", "CONFIG GET appendfsync")
    eq(node.config_get("save"), "", "CONFIG GET save")
    eq(node.config_get("repl-diskless-sync"), "yes", "CONFIG GET repl-diskless-sync")
    eq(int(node.config_get("repl-backlog-size")), backlog, "CONFIG GET repl-backlog-size")
    limits = node.config_get("client-output-buffer-limit")
    assert f"slave {replica} 0 0" in limits or f"replica {replica} 0 0" in limits, \
        f"client-output-buffer-limit {limits!r} lacks the replica class {replica} 0 0"
    eq(node.config_get("protected-mode"), "yes", "CONFIG GET protected-mode (loopback)")
    eq(node.config_get("daemonize"), "no", "CONFIG GET daemonize")
    eq(os.path.realpath(node.config_get("dir")), os.path.realpath(node.spec["data_dir"]),
       "CONFIG GET dir")
    eq(node.config_get("logfile"), node.spec["logfile"], "CONFIG GET logfile")
    eq((node.dir / "engine.pid").read_text().strip(), str(node.proc.pid), "pid in the pidfile")
    eq(c.info("cluster").get("cluster_enabled"), 1 if cluster else 0, "INFO cluster_enabled")
    eq(c.info("persistence").get("aof_enabled"), 1 if appendonly else 0, "INFO aof_enabled")
    eq(c.info("replication").get("role"), "master", "INFO role")


# --------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_binary_is_the_expected_engine(engine):
    line, binary = require_engine(engine)
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    assert out.stdout.startswith(ENGINES[engine][2]), \
        f"{binary} --version: expected {ENGINES[engine][2]}..., got {out.stdout!r}"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_defaults(launch, engine):
    node = launch(engine)
    check_basics(node)
    shutdown(node)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_cluster_mode(launch, engine):
    node = launch(engine, cluster_enabled=True, availability_zone="az-b", memory_mib=1024)
    check_basics(node, memory_mib=1024, cluster=True)
    eq(node.config_get("cluster-node-timeout"), "5000", "CONFIG GET cluster-node-timeout")
    eq(os.path.basename(node.config_get("cluster-config-file")), "nodes.conf",
       "CONFIG GET cluster-config-file")
    assert len(node.client.execute_command("CLUSTER", "MYID")) == 40
    assert (Path(node.spec["data_dir"]) / "nodes.conf").is_file(), "nodes.conf in the data dir"
    if engine == "valkey":
        eq(node.config_get("cluster-announce-human-nodename"), node.spec["node_id"],
           "CONFIG GET cluster-announce-human-nodename")
        # Off by default on 8.0 (slot stats there crash a new primary).
        eq(node.config_get("cluster-slot-stats-enabled"), "no",
           "CONFIG GET cluster-slot-stats-enabled")
        eq(node.config_get("availability-zone"), "az-b", "CONFIG GET availability-zone")
    shutdown(node)


# Quotes, backslashes, a space, non-ASCII and an attempt to smuggle in a
# directive on a new line: it must all end up in the password, verbatim.
NASTY_PASSWORD = 'p"a\\ss w\'rd\nslaveof 127.0.0.1 1\r\x01 \u00fc#end'


@pytest.mark.parametrize("cluster", [False, True], ids=["standalone", "cluster"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_password(launch, engine, cluster):
    node = launch(engine, password=NASTY_PASSWORD, cluster_enabled=cluster)
    check_basics(node, cluster=cluster)
    eq(node.config_get("requirepass"), NASTY_PASSWORD, "CONFIG GET requirepass")
    eq(node.config_get("masterauth"), NASTY_PASSWORD, "CONFIG GET masterauth")
    expect_refused(node.connect(), "NOAUTH")
    expect_refused(node.connect("p"), "WRONGPASS")
    shutdown(node)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_users(launch, engine):
    """Cairn's users: the tenant's password (the default user) runs data
    commands and not CONFIG; Cairn's runs everything; a replica rendered
    with the same users syncs from the primary as the replication user,
    which can do nothing else."""
    users = {"admin_password": "admin-" + "a" * 58, "replication_password": "repl-" + "r" * 59}
    primary = launch(engine, password=NASTY_PASSWORD, **users)
    replica = launch(engine, password=NASTY_PASSWORD, replicaof={
        "address": "127.0.0.1", "port": primary.spec["port"]}, **users)
    tenant = primary.connect(NASTY_PASSWORD)
    tenant.set("k", "v")
    expect_refused(tenant, "NOPERM", "CONFIG", "GET", "maxmemory")
    eq(replica.client.execute_command("ACL", "WHOAMI"), "cairn", "Cairn's login")
    harness.wait_until(lambda: replica.client.info("replication")["master_link_status"] == "up",
                       10, what="the replica linked as cairn-repl")
    # Linked, the write may still be on its way down the stream.
    reader = replica.connect(NASTY_PASSWORD)
    harness.wait_until(lambda: reader.get("k") == "v", 5, what="the replica has the write")
    repl = primary.connect(users["replication_password"], "cairn-repl")
    expect_refused(repl, "NOPERM", "GET", "k")
    expect_refused(primary.connect(NASTY_PASSWORD, "cairn"), "WRONGPASS")


def expect_refused(client, code, *command):
    """command (PING by default: without the right password) must fail with
    code."""
    # redis-py 4.3 raises AuthenticationError for NOAUTH, ResponseError for WRONGPASS.
    with pytest.raises((redis.exceptions.AuthenticationError,
                        redis.exceptions.ResponseError)) as e:
        client.execute_command(*(command or ("PING",)))
    if code == "NOPERM":  # redis-py drops the code from the message
        assert isinstance(e.value, redis.exceptions.NoPermissionError), repr(e.value)
        return
    assert code in str(e.value) or "Authentication required" in str(e.value), \
        f"expected {code}, got {e.value!r}"


COMMON_PARAMETERS = {
    "timeout": "300",
    "tcp-keepalive": 60,
    "maxclients": "500",
    "notify-keyspace-events": "Ex",
    "maxmemory-samples": "7",
    "lua-time-limit": "6000",
    "hash-max-ziplist-entries": "64",
    "zset-max-listpack-value": "32",
    "latency-tracking": "no",
    "slowlog-log-slower-than": "-1",
    "slowlog-max-len": "256",
    "loglevel": "warning",
    "lazyfree-lazy-eviction": "yes",
    "cluster-allow-reads-when-down": "yes",
    "cluster-require-full-coverage": "no",
}

# What CONFIG GET answers for them (aliases answer under the directive's name).
COMMON_EXPECTED = {
    "timeout": "300", "tcp-keepalive": "60", "maxclients": "500", "maxmemory-samples": "7",
    "busy-reply-threshold": "6000", "hash-max-listpack-entries": "64",
    "zset-max-listpack-value": "32", "latency-tracking": "no", "slowlog-log-slower-than": "-1",
    "slowlog-max-len": "256", "loglevel": "warning", "lazyfree-lazy-eviction": "yes",
    "cluster-allow-reads-when-down": "yes", "cluster-require-full-coverage": "no",
}

VALKEY_PARAMETERS = {"dual-channel-replication-enabled": "yes", "set-max-listpack-entries": "64"}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_parameters(launch, engine):
    params = dict(COMMON_PARAMETERS)
    expected = dict(COMMON_EXPECTED)
    if engine == "valkey":
        params.update(VALKEY_PARAMETERS)
        expected.update(VALKEY_PARAMETERS)
    node = launch(engine, parameters=params, memory_mib=300, reserved_memory_percent=30,
                  maxmemory_policy="allkeys-lfu", appendonly=False)
    check_basics(node, memory_mib=300, reserved=30, policy="allkeys-lfu", appendonly=False)
    for name, want in expected.items():
        eq(node.config_get(name), want, f"CONFIG GET {name}")
    eq(set(node.config_get("notify-keyspace-events")), set("Ex"),
       "CONFIG GET notify-keyspace-events (as a set of classes)")
    shutdown(node)


def allowlist(tool, engine):
    """The parameters users may set on this engine's line, as render_config lists them."""
    r = subprocess.run([str(tool), "--parameters", engine, ENGINES[engine][0]],
                       capture_output=True, text=True, timeout=30)
    eq(r.returncode, 0, f"exit code of render_config --parameters (stderr {r.stderr!r})")
    return json.loads(r.stdout)


def limit_value(entry, end):
    """The entry's lowest or highest value, as text."""
    low = end == "low"
    kind = entry["type"]
    if kind == "integer":
        return str(entry["min"] if low else entry["max"])
    if kind == "boolean":
        return "no" if low else "yes"
    if kind == "enum":
        return entry["values"][0 if low else -1]
    assert kind == "keyspace-events", entry
    return "" if low else entry["values"]


@pytest.mark.parametrize("end", ["low", "high"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_parameter_at_its_limits(launch, render_tool, engine, end):
    """Whatever the allowlist lets through, the real engine must start with."""
    entries = allowlist(render_tool, engine)
    assert len(entries) >= 30, f"suspiciously short allowlist: {entries}"
    params = {e["name"]: limit_value(e, end) for e in entries}
    node = launch(engine, parameters=params)
    for e in entries:
        name, want = e["name"], params[e["name"]]
        got = node.config_get(name)
        if name == "maxclients":
            # The engine lowers it to what its open-file limit allows.
            assert 0 < int(got) <= int(want), f"CONFIG GET maxclients: {got}, asked {want}"
        elif e["type"] == "keyspace-events":
            # Answered in a canonical form ("AKEm"), so compare the meaning.
            assert set(got) <= set(e["values"]) and bool(got) == bool(want), \
                f"CONFIG GET {name}: {got!r}, asked {want!r}"
        else:
            eq(got, want, f"CONFIG GET {name}")
    shutdown(node)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_refusals_name_the_problem(render_tool, engine, tmp_path):
    line, _ = ENGINES[engine][:2]
    base = {"engine": engine, "line": line, "node_id": "n1", "port": 7000, "bind": "127.0.0.1",
            "data_dir": str(tmp_path), "memory_mib": 256}
    cases = [
        ({"parameters": {"rename-command": "CONFIG x"}},
         'parameter "rename-command" is not one users may set'),
        ({"parameters": {"maxmemory": "1"}}, 'parameter "maxmemory" is managed by Cairn'),
        ({"parameters": {"timeout": "1\nslaveof 127.0.0.1 1"}},
         'parameter "timeout": value "1\\x0aslaveof 127.0.0.1 1" must be an integer'),
        ({"parameters": {"notify-keyspace-events": 'Ex"'}},
         'parameter "notify-keyspace-events"'),
        ({"parameters": {"latency-tracking": "true"}},
         'parameter "latency-tracking": value "true" must be yes or no'),
        ({"bind": "0.0.0.0"}, "needs a password"),
        ({"maxmemory_policy": "lru"}, 'maxmemory_policy "lru" must be one of'),
        ({"reserved_memory_percent": 95}, "reserved_memory_percent must be from 0 to 90"),
    ]
    if engine == "redis":
        cases.append(({"parameters": {"dual-channel-replication-enabled": "yes"}},
                      "is not available on redis 7.0 (valkey 8.0 and later)"))
    for fields, want in cases:
        spec = dict(base, **fields)
        r = render(render_tool, spec, tmp_path)
        eq(r.returncode, 2, f"exit code of render_config for {fields} (stderr {r.stderr!r})")
        eq(r.stdout, "", f"output of a refused render for {fields}")
        assert want in r.stderr, f"render_config for {fields}: {r.stderr!r} lacks {want!r}"
