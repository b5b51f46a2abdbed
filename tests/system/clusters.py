"""clusters.py -- driving /v1/clusters as a user would, for the system tests
(test_clusters.py) and the benchmark tests/bench/clusters.

Everything here goes through the REST API and the engines' own protocol
(redis-py): bodies of the two shapes the issue names, polling a cluster
until a condition holds (with a deadline, failing fast on create-failed),
the flat list of a resource's nodes, and clients that AUTH with the
password from GET /v1/clusters/{id}/auth.
"""

import signal
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

import agents
import harness
from conftest import Database, _failed, make_instance
import expect
from expect import eq

AZS = ("az-a", "az-b", "az-c")
AGENT_VCPUS = 16
AGENT_MEMORY_MIB = 8192
AGENT_PORTS = 24

# 3 shards x (1 primary + 1 replica), cluster mode, valkey 8.0: 6 nodes.
def valkey_cluster(cid, **over):
    body = {"id": cid, "engine": "valkey", "engine_version": "8.0",
            "node_type": "cache.t3.micro", "num_shards": 3, "replicas_per_shard": 1}
    body.update(over)
    return body


# 1 primary + 2 replicas, cluster mode disabled, redis 7.0: 3 nodes.
def redis_group(cid, **over):
    body = {"id": cid, "engine": "redis", "engine_version": "7.0",
            "node_type": "cache.t3.micro", "cluster_mode": "disabled", "num_shards": 1,
            "replicas_per_shard": 2}
    body.update(over)
    return body


# The fields of the spec as GET returns them (everything else is computed).
SPEC_FIELDS = ("id", "description", "engine", "engine_version", "node_type", "cluster_mode",
               "num_shards", "replicas_per_shard", "automatic_failover", "multi_az",
               "maintenance_window", "parameters", "tags")


class CreateFailed(AssertionError):
    """The cluster ended create-failed while a test waited for something else."""


def get(api, cid):
    """GET /v1/clusters/{cid}: the body on 200, None on 404, else raise."""
    r = api.get(f"/v1/clusters/{cid}")
    if r.status_code == 404:
        return None
    assert r.status_code == 200, f"GET /v1/clusters/{cid} -> {r.status_code} {r.text}"
    return r.json()


def operations(api, cid):
    r = api.get("/v1/operations", params={"cluster_id": cid})
    assert r.status_code == 200, r.text
    return r.json()["operations"]


def events(api, cid):
    r = api.get("/v1/events", params={"cluster_id": cid, "page_size": 500})
    assert r.status_code == 200, r.text
    return r.json()["events"]


def wait_cluster(api, cid, ok, timeout, what, interval=0.02):
    """Poll GET until ok(body) (body may be None after a 404); return the
    body. Raises CreateFailed at once when the cluster is create-failed and
    ok does not accept that, and AssertionError with the last body seen on
    timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = get(api, cid)
        if ok(last):
            return last
        if last is not None and last["status"] == "create-failed":
            ops = operations(api, cid)
            raise CreateFailed(f"cluster {cid} is create-failed while waiting for {what}; "
                               f"operations: {ops!r}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                 f"last seen: {last!r}")
        time.sleep(interval)


def wait_available(api, cid, timeout=30, interval=0.02):
    return wait_cluster(api, cid, lambda b: b is not None and b["status"] == "available",
                        timeout, f"cluster {cid} available", interval)


def wait_replicas_linked(api, cid, timeout=20):
    """Every replica reported linked to its primary and out of its sync --
    what an engine upgrade asks of a cluster -- after a bulk load, say."""
    def linked(b):
        return b is not None and all(
            n["replication"] and n["replication"]["link_status"] == "up"
            and not n["replication"]["sync_in_progress"] and not n["replication"]["loading"]
            for n in nodes(b) if n["role"] == "replica")
    return wait_cluster(api, cid, linked, timeout, f"cluster {cid}'s replicas linked", 0.1)


def wait_gone(api, cid, timeout=30, interval=0.02):
    wait_cluster(api, cid, lambda b: b is None, timeout, f"cluster {cid} gone (404)", interval)


def nodes(body):
    """Every node of a cluster resource, each with its shard's id added."""
    return [dict(n, shard=s["id"]) for s in body["shards"] for n in s["nodes"]]


def password(api, cid):
    r = api.get(f"/v1/clusters/{cid}/auth")
    assert r.status_code == 200, f"GET /v1/clusters/{cid}/auth -> {r.status_code} {r.text}"
    token = r.json()["auth_token"]
    assert isinstance(token, str) and len(token) >= 16, f"auth_token: {token!r}"
    return token


def client(address, port, pw, timeout=3):
    """A plain connection to one engine, AUTHed with pw (None: no AUTH)."""
    return redis.Redis(host=address, port=port, password=pw, socket_timeout=timeout,
                       socket_connect_timeout=timeout, decode_responses=True)


def admin_client(node, timeout=3):
    """A connection to node's engine as Cairn's own engine user, for the
    tests' looks behind the tenant's back (CONFIG, DEBUG, REPLICAOF...)."""
    user, pw = agents.engine_login(node["id"])
    return redis.Redis(host=node["address"], port=node["port"], username=user, password=pw,
                       socket_timeout=timeout, socket_connect_timeout=timeout,
                       decode_responses=True)


def primary_and_replica(stack, cleanup, cid):
    """Create a valkey 8.0 group of a primary and a replica on stack (its id
    added to cleanup) and wait until it is available: (body, password,
    primary, replica)."""
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1)), 202)
    body = wait_available(stack.api, cid)
    ns = nodes(body)
    return (body, password(stack.api, cid), next(n for n in ns if n["role"] == "primary"),
            next(n for n in ns if n["role"] == "replica"))


def cluster_client(body, pw, timeout=5):
    """redis-py's cluster client, seeded with endpoints.configuration; each
    command waits timeout seconds at most (a frozen node answers never)."""
    seeds = [ClusterNode(e["address"], e["port"]) for e in body["endpoints"]["configuration"]]
    assert seeds, f"no configuration endpoint: {body['endpoints']!r}"
    return RedisCluster(startup_nodes=seeds, password=pw, decode_responses=True,
                        socket_timeout=timeout, socket_connect_timeout=min(timeout, 3))


def engine_role(address, port, pw):
    """'primary' or 'replica' as INFO replication says."""
    with client(address, port, pw) as c:
        role = c.info("replication")["role"]
    return {"master": "primary", "slave": "replica"}.get(role, role)


def listening(port):
    """Whether something accepts TCP connections on 127.0.0.1:port now."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def port_free(port):
    """Whether a server could listen on 127.0.0.1:port now (SO_REUSEADDR, as
    the engines bind: connections the engine closed may sit in TIME_WAIT)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
            return True
        except OSError:
            return False


def wait_until(predicate, timeout, what, interval=0.05):
    return harness.wait_until(predicate, timeout, interval=interval, what=what)


# --------------------------------------------------------------------------
# The stack

class ClusterStack:
    """cairnd on a fresh database plus three agents in three AZs; cairnd can
    be killed and replaced by a new one on the same port, database and
    secret key file (the agents keep talking to the same URL). cairnd_args
    are added to cairnd's command line (e.g. a shorter heartbeat timeout);
    cairnd listens on listen_host (agents in network namespaces of their
    own need an address other than 127.0.0.1 to reach it). With peers > 0,
    that many more cairnd share the database and secret key, each with a
    Sentinel port of its own, and the agents are given every cairnd's URL
    (tried in turn); self.cairnd is the first."""

    def __init__(self, pg, name="clusters", cairnd_args=(), agent_args=(),
                 listen_host="127.0.0.1", tls=False, peers=0):
        agents.require_agent()
        self.pg = pg
        self.name = name
        self.tls = tls
        self.listen_host = listen_host
        self.cairnd_args = list(cairnd_args)
        # Every cairnd of the stack keeps snapshots in one directory, as
        # peers on a shared filesystem would.
        self.snapshot_dir = harness.make_temp_dir(f"snapshots-{name}")
        self.db = Database(pg, pg.create_database(name))
        self.cairnds = []
        self.cairnd = self._start_cairnd()
        self.peers = [self._start_peer() for _ in range(peers)]
        self.inst = make_instance(pg, self.db, self.cairnd)
        self.api = self.inst.api
        self.agents = []
        self.host_ids = []
        self.agent_args = list(agent_args)
        if tls:
            self.agent_args += ["--control-plane-ca-file", str(self.cairnd.ca_file)]
        try:
            for az in AZS:
                self._start_agent(f"vm-{az[-1]}", az)
            self.host_ids = [self._host_id(a) for a in self.agents]
        except BaseException:
            self.close(failed=True)
            raise

    def _start_agent(self, name, az, before_start=None, **agent_kw):
        """Start an agent of the stack's shape; before_start(agent), if
        given, runs first (to prepare its data dir). agent_kw go to
        agents.Agent (its address and network namespace)."""
        control_plane = ",".join(c.url for c in [self.cairnd] + self.peers)
        a = agents.Agent(control_plane, name, az, vcpus=AGENT_VCPUS, memory_mib=AGENT_MEMORY_MIB,
                         port_count=AGENT_PORTS, extra_args=self.agent_args, **agent_kw)
        if before_start is not None:
            before_start(a)
        self.agents.append(a.start())
        return a

    def add_host(self, name, az):
        """One more agent (a VM) of the stack's shape, healthy; stopped with
        the stack. Returns its host id."""
        hid = self._host_id(self._start_agent(name, az))
        self.host_ids.append(hid)
        return hid

    def _start_cairnd(self, port=None, workdir=None, sentinel_port=None, extra=()):
        if not hasattr(self, "sentinel_port"):
            self.sentinel_port = harness.free_port()
        self.started_at = time.monotonic()  # the latest cairnd's start
        c = harness.start_cairnd(self.db.url, ["--agent-bootstrap-token", agents.BOOTSTRAP,
                                               "--approve-bootstrap-hosts", "--sentinel-listen",
                                               f"127.0.0.1:{sentinel_port or self.sentinel_port}",
                                               "--snapshot-store", str(self.snapshot_dir)]
                                 + self.cairnd_args + list(extra),
                                 label=f"cairnd-{self.name}-{len(self.cairnds) + 1}",
                                 port=port, workdir=workdir, host=self.listen_host,
                                 tls=self.tls)
        c.sentinel_port = sentinel_port or self.sentinel_port
        c.stack_extra = list(extra)  # what a restart on its port and dir gives again
        self.cairnds.append(c)
        return c

    def _start_peer(self):
        """One more cairnd on the stack's database and secret key."""
        return self._start_cairnd(sentinel_port=harness.free_port(), extra=[
            "--secret-key-file", str(self.cairnd.dir / "secret.key")])

    def api_of(self, cairnd):
        """The stack's API client, talking to cairnd instead."""
        return harness.Api(cairnd.url, self.api.token, self.api.timeout, self.api.verify)

    def kill9_cairnd(self, c=None):
        """SIGKILL cairnd (c: one of the peers or the first; its whole
        process group) and reap it."""
        c = c or self.cairnd
        c.proc.send_signal(signal.SIGKILL)
        rc = c.wait_exit(10)
        eq(rc, -signal.SIGKILL, "cairnd exit after SIGKILL")

    def restart_cairnd(self, old=None):
        """A new cairnd in place of a dead one (default: the first), on its
        port, database and secret key file (harness.Cairnd puts secret.key
        in its dir: reuse the dir)."""
        old = old or self.cairnd
        assert not old.proc.alive(), "the old cairnd is still running"
        new = self._start_cairnd(port=old.port, workdir=old.dir,
                                 sentinel_port=old.sentinel_port, extra=old.stack_extra)
        if old is self.cairnd:
            self.cairnd = new
        else:
            self.peers[self.peers.index(old)] = new
        return new

    def _host_id(self, agent, timeout=15):
        hid = agent.wait_registered(timeout)
        wait_until(lambda: self.host(hid)["status"] == "healthy", timeout,
                   f"host {agent.name} healthy")
        return hid

    def host(self, hid):
        return expect.json_ok(self.api.get(f"/v1/hosts/{hid}"))

    def hosts(self):
        return {hid: self.host(hid) for hid in self.host_ids}

    def agent_of(self, hid):
        return self.agents[self.host_ids.index(hid)]

    def allocations(self):
        """{host id: (allocated, sorted node ids)} -- what a create must not leak."""
        return {hid: (h["allocated"], sorted(n["id"] for n in h["nodes"]))
                for hid, h in self.hosts().items()}

    def logs(self):
        return [c.log for c in self.cairnds] + [a.log for a in self.agents]

    def close(self, failed=False):
        agents.shut_down(self.agents, failed)
        for c in reversed(self.cairnds):
            c.stop(timeout=10)
            if failed:
                c.log.dump()
        for c in reversed(self.cairnds):
            c.cleanup()
        harness.remove_temp_dir(self.snapshot_dir)


def stack_fixtures(name, cairnd_args=(), agent_args=(), tls=False, peers=0):
    """The fixtures a test module of clusters uses, as (stack, dump, cleanup):
    a module-wide ClusterStack, an autouse dump of the logs of a failed
    test, and a list of cluster ids deleted after each test. Assign them to
    module globals of those names."""

    @pytest.fixture(scope="module")
    def stack(pg, cairnd_binary, request):
        try:
            s = ClusterStack(pg, name, cairnd_args, agent_args, tls=tls, peers=peers)
        except harness.HarnessError as e:
            pytest.fail(str(e), pytrace=False)
        try:
            yield s
        finally:
            s.close(failed=False)

    @pytest.fixture(autouse=True)
    def _dump_on_failure(stack, request):
        """On a failed test: what cairnd and the agents logged during it, and the
        end of every engine's log."""
        offsets = {log.name: log.size() for log in stack.logs()}
        yield
        if _failed(request.node):
            for log in stack.logs():
                log.dump(offsets.get(log.name, 0))
            for a in stack.agents:
                for path in sorted(a.data_dir.glob("nodes/*/engine.log")):
                    harness.LogSource(f"engine {path.parent.name} on {a.name}", path).dump()

    @pytest.fixture
    def cleanup(stack):
        """Cluster ids a test creates: whatever is left of them when it ends
        (a failed test) is deleted, so the next test starts on empty hosts."""
        ids = []
        yield ids
        for cid in ids:
            try:
                if stack.api.get(f"/v1/clusters/{cid}").status_code == 404:
                    continue
                deadline = time.monotonic() + 60
                while stack.api.delete(f"/v1/clusters/{cid}").status_code == 409 \
                        and time.monotonic() < deadline:
                    time.sleep(0.2)   # the create still runs: delete once it has ended
                wait_gone(stack.api, cid, 30)
            except Exception as e:  # noqa: BLE001 -- best effort; report and go on
                print(f"\ncleanup of cluster {cid} failed: {e}")

    return stack, _dump_on_failure, cleanup
