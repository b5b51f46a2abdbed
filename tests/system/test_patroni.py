"""test_patroni.py -- PostgreSQL as the system of record beyond one machine:
Patroni (with its consensus in etcd) runs a primary and a synchronous
streaming replica; cairnd reaches them through a multi-host connection
string that accepts only the writable one (target_session_attrs=read-write).

Under a stream of API writes and with a cluster create in flight, the
primary's "machine" dies (Patroni and every PostgreSQL process on it,
kill -9): Patroni promotes the replica, cairnd follows it, no acknowledged
write is lost, the create finishes and ran once, and no host was lost. The
API outage is printed.

Needs Debian's patroni and etcd-server (scripts/install-deps installs them);
skipped with a message where they are absent. Everything it starts is
stopped at the end of the module, however it ends.
"""

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

import clusters
import expect
import harness
from clusters import nodes, wait_available, wait_until
from conftest import Database
from expect import eq

PATRONI = shutil.which("patroni")
ETCD = shutil.which("etcd")
if PATRONI is None or ETCD is None:
    pytest.skip("Patroni and etcd are not installed (Debian packages patroni, etcd-server: "
                "scripts/install-deps installs them)", allow_module_level=True)

# The leader key lives this long without its holder renewing it: the
# primary's loss is noticed within it. Patroni wants loop_wait +
# 2 * retry_timeout <= ttl.
TTL_S, LOOP_WAIT_S, RETRY_TIMEOUT_S = 6, 1, 2
HEARTBEAT_S = 6  # cairnd's default


class Etcd:
    """A single-member etcd (v3 API) in a temp dir."""

    def __init__(self):
        self.dir = harness.make_temp_dir("etcd")
        self.client_port, peer_port = harness.free_port(), harness.free_port()
        client, peer = f"http://127.0.0.1:{self.client_port}", f"http://127.0.0.1:{peer_port}"
        self.proc = harness.ManagedProcess("etcd", [
            ETCD, "--name", "e1", "--data-dir", self.dir / "data",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"e1={peer}", "--log-level", "warn"],
            self.dir / "etcd.log", env=harness.clean_env(), cwd=self.dir)
        wait_until(self._healthy, 20, "etcd healthy")

    def _healthy(self):
        if not self.proc.alive():
            raise harness.HarnessError(f"etcd exited:\n{harness.tail(self.dir / 'etcd.log')}")
        try:
            return requests.get(f"http://127.0.0.1:{self.client_port}/health", timeout=1).ok
        except requests.RequestException:
            return False

    def close(self):
        self.proc.stop(timeout=5)
        harness.remove_temp_dir(self.dir)


class PatroniNode:
    """One PostgreSQL 15 managed by Patroni: its own data dir, port and
    REST API, in the scope `cairn`."""

    def __init__(self, name, etcd, scope):
        self.name = name
        self.dir = harness.make_temp_dir(f"patroni-{name}")
        self.port, self.api_port = harness.free_port(), harness.free_port()
        self.data = self.dir / "data"
        config = self.dir / "patroni.yml"
        config.write_text(f"""\
scope: {scope}
name: {name}
log: {{level: WARNING}}
restapi:
  listen: 127.0.0.1:{self.api_port}
  connect_address: 127.0.0.1:{self.api_port}
etcd3:
  hosts: 127.0.0.1:{etcd.client_port}
bootstrap:
  dcs:
    ttl: {TTL_S}
    loop_wait: {LOOP_WAIT_S}
    retry_timeout: {RETRY_TIMEOUT_S}
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        max_connections: 200
        fsync: "off"
        full_page_writes: "off"
  initdb:
    - encoding: UTF8
    - locale: C
    - auth: trust
  pg_hba:
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
    - local all all trust
postgresql:
  listen: 127.0.0.1:{self.port}
  connect_address: 127.0.0.1:{self.port}
  data_dir: {self.data}
  bin_dir: {harness.PG_BIN}
  pgpass: {self.dir}/pgpass
  authentication:
    superuser: {{username: cairn, password: cairn}}
    replication: {{username: replicator, password: replicator}}
  parameters:
    unix_socket_directories: {self.dir}
""")
        self.dir.chmod(0o755)
        for path in (self.dir, config):
            harness._chown_to_postgres(path)
        self.log_path = self.dir / "patroni.log"
        # Started in its own directory: the postgres user may not enter the
        # checkout's (Patroni's helper processes start where it was started).
        self.proc = harness.ManagedProcess(f"patroni[{name}]", harness._as_postgres([PATRONI, config]),
                                           self.log_path, env=harness.clean_env(), cwd=self.dir)

    def role(self):
        """'primary', 'sync' (a synchronous replica), 'replica', or None."""
        for path, role in (("/primary", "primary"), ("/sync", "sync"), ("/replica", "replica")):
            try:
                if requests.get(f"http://127.0.0.1:{self.api_port}{path}", timeout=1).ok:
                    return role
            except requests.RequestException:
                return None
        return None

    def postmaster_pid(self):
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def kill9(self):
        """The machine dies: Patroni and every PostgreSQL process, kill -9
        (Patroni runs the postmaster in a session of its own)."""
        pm = self.postmaster_pid()
        self.proc.kill()
        if pm is not None:
            children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                        and _ppid(p) == pm]
            for pid in [pm, *children]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def close(self):
        self.kill9()
        harness.remove_temp_dir(self.dir)


def _ppid(proc_dir):
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class PatroniPostgres:
    """The pair as the tests' PostgreSQL (what ClusterStack takes): URLs
    name both servers and accept only the writable one."""

    def __init__(self, pair):
        self.pair = pair
        self._seq = 0

    def url(self, dbname):
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.pair)
        return (f"postgresql://cairn@{hosts}/{dbname}"
                "?target_session_attrs=read-write&connect_timeout=2")

    def psql(self, sql, dbname="postgres", timeout=30):
        r = subprocess.run([harness.PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-d", self.url(dbname), "-c", sql], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=harness.clean_env(),
                           timeout=timeout)
        if r.returncode != 0:
            raise harness.HarnessError(f"psql failed: {r.stderr}")
        return r.stdout

    def create_database(self, hint="t"):
        self._seq += 1
        name = f"d{self._seq}_{hint.replace('-', '_')}"
        self.psql(f'CREATE DATABASE "{name}"')
        return name


@pytest.fixture(scope="module")
def pair():
    """etcd, then two Patroni nodes: the first bootstraps the primary, the
    second clones it and becomes its synchronous replica."""
    etcd = Etcd()
    made = []
    try:
        made.append(PatroniNode("pg1", etcd, "cairn"))
        wait_until(lambda: made[0].role() == "primary", 60, "pg1 primary")
        made.append(PatroniNode("pg2", etcd, "cairn"))
        wait_until(lambda: made[1].role() == "sync", 60, "pg2 a synchronous replica")
        yield made
    except BaseException:
        for n in made:
            harness.LogSource(f"patroni[{n.name}]", n.log_path).dump()
        raise
    finally:
        for n in made:
            n.close()
        etcd.close()


@pytest.fixture(scope="module")
def pg(pair):
    """Stands in for the session's PostgreSQL in the stack fixture."""
    return PatroniPostgres(pair)


stack, _dump_on_failure, cleanup = clusters.stack_fixtures("patroni")


class TokenWriter:
    """A client creating API tokens one after another (each an
    acknowledged write when it answers 201), noting when each answered."""

    def __init__(self, api):
        self.api = api
        self.acked = []   # (name, time.monotonic())
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self._stop.is_set():
            name = f"w{i}"
            try:
                r = self.api.post("/v1/tokens", json={"name": name, "scope": "read"}, timeout=5)
            except requests.RequestException:
                r = None
            if r is not None and r.status_code == 201:
                self.acked.append((name, time.monotonic()))
                i += 1
            else:
                self.failed += 1
                time.sleep(0.05)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)


def token_names(api):
    return {t["name"] for page in expect.walk(api, "/v1/tokens", "tokens", 500)
            for t in page["tokens"]}


def test_primary_loss_is_followed_and_loses_no_acknowledged_write(pair, stack, cleanup):
    primary = next(n for n in pair if n.role() == "primary")
    eq(primary.name, "pg1", "the first node leads")
    writer = TokenWriter(stack.api).start()
    wait_until(lambda: len(writer.acked) >= 20, 15, "writes flowing")

    cid = "patroni-create"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(cid)), 202)
    killed = time.monotonic()
    primary.kill9()
    wait_until(lambda: pair[1].role() == "primary", 60, "pg2 promoted", interval=0.2)
    promoted = time.monotonic() - killed
    wait_until(lambda: writer.acked[-1][1] > killed + promoted, 60, "writes acknowledged again")
    time.sleep(1)
    writer.stop()
    times = [t for _, t in writer.acked]
    outage = max(b - a for a, b in zip(times, times[1:]))  # the longest without a write
    print(f"\nPostgreSQL primary killed: Patroni promoted the replica after {promoted:.1f} s; "
          f"API writes resumed after an outage of {outage:.1f} s "
          f"({len(writer.acked)} acknowledged, {writer.failed} refused meanwhile)")

    missing = [n for n, _ in writer.acked if n not in token_names(stack.api)]
    eq(missing, [], "acknowledged writes missing after the failover")

    ready = wait_available(stack.api, cid, 90)
    eq(len(nodes(ready)), 3, "nodes")
    eq([(o["kind"], o["status"]) for o in clusters.operations(stack.api, cid)],
       [("create", "succeeded")], "operations")
    available = [e for e in clusters.events(stack.api, cid) if e["type"] == "ClusterAvailable"]
    eq(len(available), 1, f"the create ran once: {available}")
    lost = [e for hid in stack.host_ids
            for e in expect.json_ok(stack.api.get("/v1/events", params={
                "host_id": hid, "page_size": 500}))["events"] if e["type"] == "HostLost"]
    eq(lost, [], "hosts lost over the database failover")
