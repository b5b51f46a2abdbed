"""harness.py -- start and stop the real daemons the system tests drive.

A throwaway PostgreSQL 15 (initdb in a temp dir, trust auth, no fsync) and the
real bin/cairnd on free 127.0.0.1 ports, each in its own process group with its
output in a log file. Every process and temp dir is registered here so that an
atexit handler can reap whatever a crash or Ctrl-C left behind.
"""

import atexit
import contextlib
import itertools
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
CAIRND = Path(os.environ.get("CAIRND", str(REPO / "bin" / "cairnd")))
# The console as `make` assembles it (web/ and its vendored uPlot).
WEB_ROOT = REPO / "build" / "web"
PG_BIN = Path(os.environ.get("CAIRN_PG_BIN", "/usr/lib/postgresql/15/bin"))
PSQL = os.environ.get("CAIRN_PSQL", "/usr/bin/psql")
KEEP_TMP = os.environ.get("CAIRN_KEEP_TMP") == "1"

TOKEN_RE = re.compile(r"^cairn_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
LOG_TAIL_LINES = 300

_live_processes = set()
_temp_dirs = set()
_seq = itertools.count(1)


class HarnessError(Exception):
    """A daemon could not be started or stopped as the test expected."""


def _reap_everything():
    """Kill every process group still alive and remove every temp dir (atexit)."""
    for proc in list(_live_processes):
        proc.kill()
    if not KEEP_TMP:
        for d in list(_temp_dirs):
            shutil.rmtree(d, ignore_errors=True)


atexit.register(_reap_everything)


def make_temp_dir(prefix):
    """A fresh temp dir, removed at exit unless CAIRN_KEEP_TMP=1."""
    d = tempfile.mkdtemp(prefix=f"cairn-sys-{prefix}-")
    _temp_dirs.add(d)
    return Path(d)


def remove_temp_dir(path):
    _temp_dirs.discard(str(path))
    if not KEEP_TMP:
        shutil.rmtree(path, ignore_errors=True)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout, interval=0.02, what="condition"):
    """Poll predicate() until it returns a truthy value; return that value.

    Raises HarnessError naming `what` when `timeout` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise HarnessError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def tail(path, lines=LOG_TAIL_LINES, offset=0):
    """The last `lines` lines of a log file from byte `offset` on, as text."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    text = data.decode("utf-8", "replace").splitlines()
    cut = len(text) - lines
    head = [f"... ({cut} earlier lines cut)"] if cut > 0 else []
    return "\n".join(head + text[-lines:])


def clean_env(**extra):
    """The test runner's environment without any CAIRN_* or PG* settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CAIRN_") and not k.startswith("PG")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class LogSource:
    """A daemon's log file, for printing the part a failed test produced."""

    def __init__(self, name, path):
        self.name = name
        self.path = Path(path)

    def size(self):
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def text(self, offset=0):
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def dump(self, offset=0, out=None):
        import sys
        out = out or sys.stderr
        out.write(f"\n===== {self.name} log ({self.path}) =====\n")
        text = tail(self.path, offset=offset)
        out.write((text if text.strip() else "(nothing logged during this test)") + "\n")
        out.write(f"===== end of {self.name} log =====\n")
        out.flush()


def _die_with_parent():
    """preexec_fn: have the kernel SIGTERM the child if the test runner dies
    without cleaning up (SIGKILL, crash), so no daemon outlives the run.

    The kernel sends it when the *thread* that started the child ends, not
    only the process: start daemons from a thread that lives as long as they
    should (the main thread, or one like tests/chaos/chaos_stack.py's
    spawner), never from a short-lived worker."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class ManagedProcess:
    """A child in its own session/process group whose output goes to a log file."""

    def __init__(self, name, argv, log_path, env=None, cwd=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log = LogSource(name, log_path)
        self._logf = open(log_path, "ab")
        self.popen = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._logf,
            stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True,
            preexec_fn=_die_with_parent)
        _live_processes.add(self)

    @property
    def pid(self):
        return self.popen.pid

    def poll(self):
        rc = self.popen.poll()
        if rc is not None:
            self._forget()
        return rc

    def alive(self):
        return self.poll() is None

    def wait(self, timeout):
        """Wait up to `timeout` s for exit; return the exit code or None."""
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._forget()
        return rc

    def send_signal(self, sig, pid=None):
        try:
            os.kill(pid or self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self):
        """SIGKILL the whole process group and reap the leader."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._forget()

    def stop(self, sig=signal.SIGTERM, timeout=15.0, pid=None):
        """Send `sig` (to `pid` or the leader), wait `timeout` s, then SIGKILL.

        Returns the exit code, or None when the process had to be killed.
        """
        if self.popen.poll() is None:
            self.send_signal(sig, pid)
            rc = self.wait(timeout)
            if rc is not None:
                self._kill_group_leftovers()
                return rc
            self.kill()
            return None
        self._kill_group_leftovers()
        self._forget()
        return self.popen.returncode

    def _kill_group_leftovers(self):
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _forget(self):
        _live_processes.discard(self)
        if not self._logf.closed:
            self._logf.close()


# --------------------------------------------------------------------------
# PostgreSQL

def _as_postgres(argv):
    """Prefix argv with runuser when running as root (postgres refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + [str(a) for a in argv]
    return [str(a) for a in argv]


def _chown_to_postgres(path):
    if os.geteuid() != 0:
        return
    pw = pwd.getpwnam("postgres")
    os.chown(path, pw.pw_uid, pw.pw_gid)


class PostgresServer:
    """A throwaway PostgreSQL 15 cluster in a temp dir, user `cairn`, trust auth."""

    def __init__(self, label="pg"):
        self.label = label
        self.dir = make_temp_dir(label)
        os.chmod(self.dir, 0o755)
        _chown_to_postgres(self.dir)
        self.data = self.dir / "data"
        self.port = free_port()
        self.log_path = self.dir / "postgres.log"
        self.log = LogSource(f"postgres[{label}]", self.log_path)
        self.proc = None
        self._db_seq = itertools.count(1)
        self._initdb()

    def _initdb(self):
        argv = _as_postgres([PG_BIN / "initdb", "-D", self.data, "-A", "trust",
                             "-U", "cairn", "--no-sync", "-E", "UTF8",
                             "--locale", "C"])
        with open(self.log_path, "ab") as logf:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=logf,
                               stderr=subprocess.STDOUT, env=clean_env(), timeout=120)
        if r.returncode != 0:
            raise HarnessError(f"initdb failed (exit {r.returncode}):\n{tail(self.log_path)}")

    def start(self, timeout=30.0):
        """Start the postmaster on self.port and wait until it accepts connections."""
        # fsync and full-page writes are off (an OS crash is not a test case);
        # synchronous_commit stays on, or an immediate shutdown would lose
        # commits cairnd was told had happened.
        argv = _as_postgres([
            PG_BIN / "postgres", "-D", self.data, "-p", self.port, "-k", self.data,
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
            "-c", "full_page_writes=off",
            "-c", "max_connections=200", "-c", "shared_buffers=32MB"])
        self.proc = ManagedProcess(f"postgres[{self.label}]", argv, self.log_path,
                                   env=clean_env())

        def ready():
            if not self.proc.alive():
                raise HarnessError(
                    f"postgres exited with {self.proc.popen.returncode}:\n{tail(self.log_path)}")
            r = subprocess.run([PG_BIN / "pg_isready", "-q", "-h", "127.0.0.1",
                                "-p", str(self.port), "-U", "cairn", "-d", "postgres"],
                               env=clean_env(), timeout=10)
            return r.returncode == 0

        wait_until(ready, timeout, interval=0.05, what=f"postgres on port {self.port}")
        return self

    def postmaster_pid(self):
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def stop(self, mode="fast", timeout=30.0):
        """Shut the postmaster down (smart/fast/immediate); SIGKILL on timeout."""
        if self.proc is None:
            return
        sig = {"smart": signal.SIGTERM, "fast": signal.SIGINT,
               "immediate": signal.SIGQUIT}[mode]
        # Signal the postmaster itself: runuser would turn a signal into
        # SIGTERM-then-SIGKILL of its child, which is not a clean shutdown.
        pid = self.postmaster_pid() if self.proc.alive() else None
        self.proc.stop(sig, timeout=timeout, pid=pid)
        self.proc = None

    def destroy(self):
        """Stop the server (if running) and remove its directory."""
        try:
            self.stop("immediate", timeout=10)
        finally:
            remove_temp_dir(self.dir)

    def url(self, dbname):
        return f"postgresql://cairn@127.0.0.1:{self.port}/{dbname}"

    def psql(self, sql, dbname="postgres", timeout=30):
        """Run SQL with psql (ON_ERROR_STOP, unaligned, tuples only); return stdout."""
        r = subprocess.run(
            [PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", "cairn", "-d", dbname,
             "-c", sql],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            env=clean_env(PGCONNECT_TIMEOUT=5), timeout=timeout)
        if r.returncode != 0:
            raise HarnessError(f"psql failed (exit {r.returncode}) on {dbname}: {sql}\n{r.stderr}")
        return r.stdout

    def create_database(self, hint="t"):
        """CREATE a fresh empty database; return its name."""
        slug = re.sub(r"[^a-z0-9]+", "_", hint.lower()).strip("_")[:40]
        name = f"d{next(self._db_seq)}_{slug}"
        self.psql(f'CREATE DATABASE "{name}"')
        return name


# --------------------------------------------------------------------------
# cairnd

def require_cairnd():
    if not (CAIRND.is_file() and os.access(CAIRND, os.X_OK)):
        raise HarnessError(f"cairnd binary not found at {CAIRND} (run `make` or set CAIRND)")


def run_cli(args, database_url=None, env_url=None, timeout=60, env=None):
    """Run `cairnd ARGS...` to completion; return the CompletedProcess (text).

    database_url is passed as CAIRN_DATABASE_URL unless env_url is given
    explicitly (use env_url=False to pass nothing through the environment).
    """
    require_cairnd()
    extra = dict(env or {})
    url = database_url if env_url is None else env_url
    if url:
        extra["CAIRN_DATABASE_URL"] = url
    return subprocess.run([str(CAIRND)] + [str(a) for a in args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=clean_env(**extra), timeout=timeout)


def spawn_cli(args, database_url=None):
    """Start `cairnd ARGS...` without waiting; stdout and stderr are pipes (text)."""
    require_cairnd()
    extra = {"CAIRN_DATABASE_URL": database_url} if database_url else {}
    return subprocess.Popen([str(CAIRND)] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(**extra), start_new_session=True)


def finish_cli(popen, timeout=60):
    """Wait for a spawn_cli process; kill its group on timeout. Returns (rc, out, err)."""
    try:
        out, err = popen.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = popen.communicate()
        raise HarnessError(f"{popen.args} did not finish in {timeout}s: {out!r} {err!r}")
    return popen.returncode, out, err


def create_token(database_url, name, scope):
    """`cairnd token create`; return the token printed on stdout."""
    r = run_cli(["token", "create", "--name", name, "--scope", scope], database_url)
    if r.returncode != 0:
        raise HarnessError(f"token create exited {r.returncode}: {r.stderr}")
    lines = r.stdout.splitlines()
    if len(lines) != 1 or not TOKEN_RE.match(lines[0]):
        raise HarnessError(f"token create printed {r.stdout!r}, expected one token line")
    return lines[0]


def cairnd_list(command):
    """The JSON array `cairnd COMMAND` prints: engines, operation-kinds."""
    r = run_cli([command], env_url=False)
    if r.returncode != 0:
        raise HarnessError(f"cairnd {command} exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


# How PostgreSQL prints a CHECK (column IN ('a', 'b')) constraint.
CHECK_IN_RE = re.compile(r"\((\w+) = ANY \(ARRAY\[(.*?)\]\)\)")


def check_values(db, table, column):
    """The values the CHECK (column IN (...)) constraint of table allows, as a set; db is
    anything with psql() (an Instance)."""
    found = []
    defs = db.psql("SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                   f" WHERE conrelid = 'public.{table}'::regclass AND contype = 'c'")
    for m in CHECK_IN_RE.finditer(defs):
        if m.group(1) == column:
            found.append(set(re.findall(r"'([^']*)'::text", m.group(2))))
    if len(found) != 1:
        raise HarnessError(f"{len(found)} CHECK constraints list the values of {table}.{column}:"
                           f"\n{defs}")
    return found[0]


class Cairnd:
    """One running `cairnd serve` on a free port of 127.0.0.1, or of host
    (an address of this machine that agents in other network namespaces
    reach)."""

    def __init__(self, database_url, args=(), env=None, label=None, port=None,
                 workdir=None, pass_url_as="flag", listen_via="flag", web_root="",
                 binary=CAIRND, host="127.0.0.1", tls=False):
        require_cairnd()
        self.label = label or f"cairnd{next(_seq)}"
        self.own_dir = workdir is None
        self.dir = Path(workdir) if workdir else make_temp_dir(self.label)
        self.database_url = database_url
        self.port = port or free_port()
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}"
        self.log_path = self.dir / f"{self.label}.log"
        # HTTPS: the installation's authority (made on the way), which the
        # tests' clients and the agents trust cairnd by.
        self.ca_file = None
        if tls:
            self.ca_file = self.dir / "ca.pem"
            r = run_cli(["ca-certificate", "--secret-key-file", self.dir / "secret.key"],
                        database_url)
            if r.returncode != 0:
                raise HarnessError(f"cairnd ca-certificate exited {r.returncode}: {r.stderr}")
            self.ca_file.write_text(r.stdout)
        # Sentinel discovery off unless a test asks for it (args come later and win):
        # many cairnd run at once here, and the default port is shared.
        # A rate limit far above the default (args come later and win): the
        # tests poll every 20 ms, several loops at once, harder than any
        # client cairnd's default is made for (test_rate_limit.py sets its
        # own).
        argv = [binary, "serve", "--secret-key-file", str(self.dir / "secret.key"),
                "--sentinel-listen", "off", "--rate-limit", "5000", "--rate-limit-burst", "10000"]
        # No web console unless a test gives one (web_root=None: cairnd's default,
        # ../build/web or ../share/cairn/web from the binary), so that the repository's own console does not
        # answer the paths outside /v1 that tests probe.
        if web_root is not None:
            argv += ["--web-root", str(web_root)]
        extra_env = dict(env or {})
        if listen_via == "flag":
            argv += ["--listen", f"{host}:{self.port}"]
        else:
            extra_env["CAIRN_LISTEN"] = f"{host}:{self.port}"
        if database_url is not None:
            if pass_url_as == "flag":
                argv += ["--database-url", database_url]
            else:
                extra_env["CAIRN_DATABASE_URL"] = database_url
        if tls:
            argv += ["--tls"]
        argv += [str(a) for a in args]
        self.proc = ManagedProcess(self.label, argv, self.log_path,
                                   env=clean_env(**extra_env))
        self.log = self.proc.log

    @property
    def pid(self):
        return self.proc.pid

    def wait_healthy(self, timeout=20.0):
        """Poll GET /healthz until 200; raise with the log if cairnd exits first."""
        def healthy():
            if not self.proc.alive():
                raise HarnessError(f"{self.label} exited with {self.proc.popen.returncode} "
                                   f"before answering /healthz:\n{tail(self.log_path)}")
            try:
                return requests.get(self.url + "/healthz", timeout=2,
                                    verify=str(self.ca_file or True)).status_code == 200
            except requests.RequestException:
                return False
        try:
            wait_until(healthy, timeout, what=f"{self.label} /healthz")
        except HarnessError as e:
            if "timed out" in str(e):
                raise HarnessError(f"{e}\n{tail(self.log_path)}") from None
            raise
        return self

    def wait_exit(self, timeout):
        return self.proc.wait(timeout)

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        """SIGTERM (or `sig`), wait, SIGKILL the group after `timeout`; return exit code."""
        return self.proc.stop(sig, timeout=timeout)

    def cleanup(self):
        self.stop(timeout=10)
        if self.own_dir:
            remove_temp_dir(self.dir)


def start_cairnd(database_url, args=(), **kw):
    """Start cairnd, wait for /healthz, retrying once on a lost port race."""
    for attempt in range(3):
        c = Cairnd(database_url, args, **kw)
        try:
            return c.wait_healthy()
        except HarnessError:
            text = c.log.text()
            c.cleanup()
            if attempt < 2 and "in use" in text.lower() and "port" not in kw:
                continue
            raise


# --------------------------------------------------------------------------
# HTTP

_DEFAULT = object()


class Api:
    """A thin requests wrapper bound to one cairnd and (optionally) one token."""

    def __init__(self, base_url, token=None, timeout=10, verify=None):
        self.base = base_url
        self.token = token
        self.timeout = timeout
        self.verify = verify  # an https cairnd's authority (a PEM file)
        self.session = requests.Session()

    def with_token(self, token):
        return Api(self.base, token, self.timeout, self.verify)

    def request(self, method, path, *, token=_DEFAULT, headers=None, timeout=None, **kw):
        h = dict(headers or {})
        tok = self.token if token is _DEFAULT else token
        if tok is not None and "Authorization" not in h:
            h["Authorization"] = f"Bearer {tok}"
        if self.verify is not None:
            # Per request: requests lets REQUESTS_CA_BUNDLE win over a session's.
            kw.setdefault("verify", str(self.verify))
        for attempt in (1, 2):
            try:
                return self.session.request(method, self.base + path, headers=h,
                                            timeout=timeout or self.timeout,
                                            allow_redirects=False, **kw)
            except requests.ConnectionError as e:
                # A kept-alive connection cairnd closed after its idle
                # timeout (30 s) just as the session reused it: a GET goes
                # again on a new one, as browsers do. Nothing else is retried.
                if attempt == 2 or method != "GET" or "RemoteDisconnected" not in str(e):
                    raise

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)


class Instance:
    """A started cairnd with an admin and a read token and API clients for both."""

    def __init__(self, cairnd, admin_token, read_token, pg=None, dbname=None):
        self.cairnd = cairnd
        self.url = cairnd.url
        self.database_url = cairnd.database_url
        self.admin_token = admin_token
        self.read_token = read_token
        self.pg = pg
        self.dbname = dbname
        self.api = Api(cairnd.url, admin_token, verify=cairnd.ca_file)
        self.read = Api(cairnd.url, read_token, verify=cairnd.ca_file)
        self.anon = Api(cairnd.url, None, verify=cairnd.ca_file)

    def psql(self, sql):
        return self.pg.psql(sql, self.dbname)


def drain(sock, timeout):
    """Everything the peer sends on sock until it closes the connection:
    (bytes, closed), closed False when it is still open after `timeout`
    seconds of silence."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False
    except ConnectionResetError:
        return data, True


@contextlib.contextmanager
def idle_connections(port, count):
    """Hold `count` keep-alive connections to cairnd on `port` open for the length of
    the with block, each after a finished request (GET /healthz), as idle clients do."""
    socks = []
    try:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            socks.append(s)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = s.recv(4096)
            if not answer.startswith(b"HTTP/1.1 200"):
                raise HarnessError(f"idle connection {len(socks)}: GET /healthz got {answer!r}")
        yield socks
    finally:
        for s in socks:
            s.close()


def raw_http(port, head, body=b"", piece=65536, timeout=10.0):
    """Send a hand-written HTTP/1.1 request and read one response.

    `head` is the request line and headers (without the blank line). The body
    is sent in `piece`-sized writes, stopping early as soon as the server has
    started answering (a server may refuse an oversized body before reading
    it). Returns (status, {lower-case header: value}, body bytes).
    """
    import select
    deadline = time.monotonic() + timeout
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.sendall(head.rstrip(b"\r\n") + b"\r\n\r\n")
        sent = 0
        while sent < len(body):
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sent += sock.send(body[sent:sent + piece])
            except (BrokenPipeError, ConnectionResetError):
                break
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = _recv(sock, deadline)
            if not chunk:
                raise HarnessError(f"connection closed before a full response: {data!r}")
            data += chunk
        head_part, rest = data.split(b"\r\n\r\n", 1)
        lines = head_part.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = _recv(sock, deadline)
            if not chunk:
                break
            rest += chunk
        return status, headers, rest[:length]
    finally:
        sock.close()


def _recv(sock, deadline):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise HarnessError("timed out reading the response")
    sock.settimeout(remaining)
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""
    except socket.timeout:
        raise HarnessError("timed out reading the response") from None
