"""agents.py -- real cairn-agent processes and the engines they start, for the
system tests (test_agent.py) and the benchmarks (tests/bench/agent-footprint,
tests/bench/propagation).

An Agent is one bin/cairn-agent on a data dir of its own in a temp dir, with
its output in a log file beside it. Engines outlive their agent by design (a
new agent on the same data dir re-adopts them), so stopping the agents is not
enough: kill_engines_under() finds every engine started under some data dirs,
from the pidfiles DATA_DIR/nodes/<id>/engine.pid and from /proc (an engine
whose pidfile is gone or not yet written), checks each pid really is an
engine there (its executable, command line and working directory), and
SIGKILLs its process group. An atexit handler does the same for every agent
this process started, before harness.py removes the temp dirs.

Until the cluster API exists, desired nodes are written with SQL, as the
scheduler will write them: add_cluster() and add_node().
"""

import atexit
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import expect
import harness

AGENT = Path(os.environ.get("CAIRN_AGENT", str(harness.REPO / "bin" / "cairn-agent")))
BOOTSTRAP = "bootstrap-secret-for-agent-tests-0123"
REDIS_SERVER = "/usr/bin/redis-server"
VALKEY_SERVER = "/usr/bin/valkey-server"
ENGINE_NAMES = ("redis-server", "valkey-server")
IP = shutil.which("ip") or "/usr/sbin/ip"  # iproute2, for agents in a network namespace

_agents = []           # every Agent created in this process
_data_dirs = set()     # every data dir an agent was given
_ranges = []           # port ranges handed out: (min, max)


# --------------------------------------------------------------------------
# Engine binaries and processes

def engine_full_version(binary):
    """"7.0.15" from `BINARY --version` ("Redis server v=7.0.15 sha=...")."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                         timeout=10).stdout
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    raise harness.HarnessError(f"{binary} --version printed {out!r}")


def _engine_exes():
    return {os.path.realpath(b) for b in (REDIS_SERVER, VALKEY_SERVER)}


def proc_state(pid):
    """The one-letter state of /proc/PID/stat ('R', 'S', 'Z', ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    """True when pid exists and is not a zombie (an orphaned engine killed
    after its agent died may stay a zombie until init reaps it)."""
    return proc_state(pid) not in (None, "Z", "X")


def proc_exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return None


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def proc_cwd(pid):
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def proc_cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def proc_rss_kib(pid):
    """VmRSS of a process in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise harness.HarnessError(f"no VmRSS for pid {pid}")


def is_engine_under(pid, directory):
    """Whether pid is a live redis/valkey server working somewhere below
    directory: its executable is one of the engine binaries, its command
    line names the engine, and its working directory is under directory."""
    if not alive(pid):
        return False
    exe, cwd = proc_exe(pid), proc_cwd(pid)
    if exe is None or exe not in _engine_exes() or cwd is None:
        return False
    if not any(name in proc_cmdline(pid) for name in ENGINE_NAMES):
        return False
    root = os.path.realpath(directory)
    return cwd == root or cwd.startswith(root + os.sep)


def engine_pids_under(data_dirs):
    """Live engine pids started under any of data_dirs: from the pidfiles,
    then from a scan of /proc."""
    found = set()
    for d in data_dirs:
        for pidfile in Path(d).glob("nodes/*/engine.pid"):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            if is_engine_under(pid, pidfile.parent):
                found.add(pid)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in found:
            pid = int(entry)
            if any(is_engine_under(pid, d) for d in data_dirs):
                found.add(pid)
    return found


def kill_engines_under(data_dirs, timeout=10.0):
    """SIGKILL every engine started under data_dirs (its whole process group
    when it leads one, as the agent starts it) and wait for them to go.
    Returns the pids killed. Stop the agents first, or they restart them."""
    pids = engine_pids_under([d for d in data_dirs if Path(d).exists()])
    for pid in pids:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return pids


def shut_down(agent_list, failed=False):
    """Stop the agents (they would restart killed engines), kill every
    engine they started, and remove their data; a failed test's agent logs
    are printed first."""
    for a in agent_list:
        a.stop()
    kill_engines_under([a.data_dir for a in agent_list])
    for a in agent_list:
        if failed:
            a.dump()
        a.cleanup()


# --------------------------------------------------------------------------
# Ports

def _bindable(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def port_band():
    """(low, high): where agents' port ranges are drawn, 12000-21999 unless
    CAIRN_TEST_PORTS says (lanes.py gives each lane a band of its own)."""
    text = os.environ.get("CAIRN_TEST_PORTS", "12000-21999")
    low, high = (int(x) for x in text.split("-"))
    assert 1024 <= low < high <= 22767, f"CAIRN_TEST_PORTS={text}"
    return low, high


def free_port_range(size):
    """(min, max): `size` consecutive ports on 127.0.0.1, all free now, not
    overlapping any range handed out before in this process, within
    port_band(). Drawn so that both the ports and their cluster bus ports
    (port + 10000, which engines in cluster mode also bind) stay below the
    kernel's ephemeral range: the free ports harness.free_port() picks for
    PostgreSQL and cairnd, and the source ports of outgoing connections,
    never collide with them."""
    band = port_band()
    for _ in range(200):
        lo = random.randrange(band[0], band[1] + 1 - size)
        hi = lo + size - 1
        if any(lo <= b and a <= hi for a, b in _ranges):
            continue
        if all(_bindable(p) and _bindable(p + 10000) for p in range(lo, hi + 1)):
            _ranges.append((lo, hi))
            return lo, hi
    raise harness.HarnessError(f"no {size} free consecutive ports found")


# --------------------------------------------------------------------------
# cairn-agent

def require_agent():
    if not (AGENT.is_file() and os.access(AGENT, os.X_OK)):
        raise harness.HarnessError(f"cairn-agent not found at {AGENT} (run `make` or set CAIRN_AGENT)")


class Agent:
    """One cairn-agent, acting as a VM of its own: name, AZ, port range,
    small capacity, and a data dir in a temp dir that outlives restarts.

    It announces `address` (its engines bind it). With netns, it runs in
    that network namespace (`ip netns exec`, which execs the agent: the pid
    is the agent's, and so are the signals sent to it), and so do the
    engines it starts; address must then be one of that namespace's."""

    def __init__(self, control_plane, name, az, ports=None, memory_mib=1024, vcpus=1,
                 port_count=10, extra_args=(), address="127.0.0.1", netns=None):
        require_agent()
        self.control_plane = control_plane
        self.name = name
        self.az = az
        self.ports = ports or free_port_range(port_count)
        self.memory_mib = memory_mib
        self.vcpus = vcpus
        self.extra_args = list(extra_args)
        self.address = address
        self.netns = netns
        self.dir = harness.make_temp_dir(f"agent-{name}")
        self.dir.chmod(0o711)  # an agent running as root starts engines as cairn-engine
        self.data_dir = self.dir / "data"
        self.log_path = self.dir / "agent.log"
        self.log = harness.LogSource(f"cairn-agent[{name}]", self.log_path)
        self.proc = None
        self.start_offset = 0  # where the log of the current run begins
        self.env = {}          # variables the next start adds to the environment
        _agents.append(self)
        _data_dirs.add(str(self.data_dir))

    def argv(self):
        netns = [IP, "netns", "exec", self.netns] if self.netns else []
        return [*netns, AGENT, "--control-plane", self.control_plane,
                "--bootstrap-token", BOOTSTRAP, "--az", self.az, "--data-dir", self.data_dir,
                "--ports", f"{self.ports[0]}-{self.ports[1]}", "--address", self.address,
                "--vcpus", self.vcpus, "--memory-mib", self.memory_mib, "--name", self.name,
                *self.extra_args]

    def start(self):
        """Start (or start again, on the same data dir) without waiting."""
        assert self.proc is None or not self.proc.alive(), f"{self.name} is already running"
        self.start_offset = self.log.size()
        self.proc = harness.ManagedProcess(self.log.name, self.argv(), self.log_path,
                                           env=harness.clean_env(**self.env))
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill9(self):
        """SIGKILL the agent alone (not its engines) and reap it."""
        self.proc.send_signal(signal.SIGKILL)
        rc = self.proc.wait(10)
        assert rc == -signal.SIGKILL, f"{self.name} after SIGKILL: expected exit -9, got {rc}"

    def stop(self, timeout=10.0):
        """SIGCONT (in case it was stopped), then SIGTERM; SIGKILL after
        timeout. The engines keep running. Returns the exit code."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGCONT)
        return self.proc.stop(signal.SIGTERM, timeout=timeout)

    def identity(self):
        """identity.json of the data dir, or None before registration."""
        try:
            return json.loads((self.data_dir / "identity.json").read_text())
        except (OSError, ValueError):
            return None

    def wait_registered(self, timeout=15):
        """Wait until the agent has registered (identity.json written);
        return its host id. Fails at once if the agent exits."""
        def registered():
            if not self.alive():
                raise harness.HarnessError(
                    f"{self.name} exited with {self.proc.popen.returncode}:\n{self.log.text()}")
            ident = self.identity()
            return ident and ident["host_id"]
        return harness.wait_until(registered, timeout, interval=0.05,
                                  what=f"{self.name} to register")

    def node_dir(self, node_id):
        return self.data_dir / "nodes" / node_id


    def pidfile(self, node_id):
        """The pid in the node's engine.pid, or None."""
        try:
            return int((self.node_dir(node_id) / "engine.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def messages(self, since=None):
        """The logfmt records the agent wrote since `since` (default: the
        start of its current run), as dicts."""
        text = self.log.text(self.start_offset if since is None else since)
        return [r for r in (expect.logfmt(ln) for ln in text.splitlines()) if r]

    def dump(self, out=None):
        """Print the agent's log and the end of each of its engines' logs."""
        self.log.dump(out=out)
        for log in sorted(self.data_dir.glob("nodes/*/engine.log")):
            harness.LogSource(f"engine {log.parent.name} of {self.name}", log).dump(out=out)

    def cleanup(self):
        self.stop()
        kill_engines_under([self.data_dir])
        _data_dirs.discard(str(self.data_dir))
        harness.remove_temp_dir(self.dir)


def _reap_agents_and_engines():
    """atexit: agents first (or they would restart what is killed), then engines."""
    for a in _agents:
        if a.proc is not None:
            a.proc.kill()
    kill_engines_under(list(_data_dirs))


atexit.register(_reap_agents_and_engines)


# --------------------------------------------------------------------------
# Desired state, written with SQL until the cluster API exists

def write(inst, sql, attempts=5):
    """Run a write with inst.psql, again when PostgreSQL aborts it as a
    deadlock victim. A node write takes the node's row and then, through the
    desired-generation trigger, its host's; an agent's sync takes the host's
    row and then its nodes': the two can deadlock (a known gap of cairnd),
    and PostgreSQL aborts one of them after deadlock_timeout (1 s)."""
    for attempt in range(attempts):
        try:
            return inst.psql(sql)
        except harness.HarnessError as e:
            if "deadlock detected" not in str(e) or attempt == attempts - 1:
                raise


def add_cluster(inst, mode="disabled"):
    """A cluster and its shard 0; returns (cluster_id, shard_id)."""
    cid, sid = "c-" + uuid.uuid4().hex[:12], str(uuid.uuid4())
    write(inst, f"INSERT INTO clusters (id, spec) VALUES ('{cid}',"
              f" '{{\"cluster_mode\": \"{mode}\"}}');"
              f"INSERT INTO shards (id, cluster_id, index, name) VALUES ('{sid}', '{cid}', 0,"
              f" '0001')")
    return cid, sid


def add_node(inst, host_id, cluster, engine="valkey", version="8.0", port=None,
             restart_policy="always", desired_state="running", node_type="cache.t3.micro"):
    """A node placed on host_id (cache.t3.micro: 512 MiB); returns its id.
    Without a port, cairnd gives it the lowest free one of the host."""
    nid = str(uuid.uuid4())
    write(inst, f"INSERT INTO nodes (id, cluster_id, shard_id, host_id, engine, engine_version,"
              f" node_type, port, restart_policy, desired_state) VALUES ('{nid}', '{cluster[0]}',"
              f" '{cluster[1]}', '{host_id}', '{engine}', '{version}', '{node_type}',"
              f" {port if port else 'NULL'}, '{restart_policy}', '{desired_state}')")
    return nid


def engine_login(node_id):
    """(user, password) the agent running node_id logs in to its engine
    with -- Cairn's own engine user, which a tenant never gets -- read from
    the node's node.json, as an operator with root on the host could."""
    for d in list(_data_dirs):
        path = Path(d) / "nodes" / node_id / "node.json"
        if path.is_file():
            run = json.loads(path.read_text())
            return run.get("user"), run.get("password")
    raise harness.HarnessError(f"no agent runs node {node_id}")
