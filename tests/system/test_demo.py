"""test_demo.py -- `scripts/demo up` and `down`, as `make demo` runs them, in a
fresh clone of this repository's HEAD.

The clone sits in a directory of mode 700, which the postgres user cannot enter
when the test runs as root (as with a checkout in /root); the stack gets free
ports. The test checks that the stack comes up with three healthy hosts, that
its PostgreSQL refuses anyone without the password kept in a mode-600 file,
that a pid file naming a zombie cairnd or an unrelated process does not pass
for a running daemon, and that `down` leaves no process of the clone behind and
the next `up` finds the same data. Takes about 10 s.
"""

import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

import agents
import harness
from conftest import _failed
from expect import eq

IS_ROOT = os.geteuid() == 0
DEMO_TIMEOUT = 120  # one `up` or `down`; each takes a few seconds
PG_SYSTEM_DIR = Path("/var/lib/cairn-demo")  # root's PostgreSQL data (scripts/demo)
DEMO_HOSTS = {"vm-a", "vm-b", "vm-c"}


class DemoClone:
    """A clone of this repository's HEAD, with the built binaries copied in,
    whose scripts/demo runs on free ports. cleanup() stops and removes
    everything it started, whatever state it is in."""

    def __init__(self):
        self.tmp = harness.make_temp_dir("demo")  # mode 700, like /root
        # A name no other checkout has: root's PostgreSQL data is found by it.
        self.root = self.tmp / self.tmp.name
        self.pg_port = harness.free_port()
        self.listen = f"127.0.0.1:{harness.free_port()}"
        # Sentinel discovery off: its default port is shared by every cairnd.
        self.env = harness.clean_env(CAIRN_DEMO_LISTEN=self.listen,
                                     CAIRN_DEMO_PG_PORT=self.pg_port,
                                     CAIRN_SENTINEL_LISTEN="off")
        self.used = False
        self.zombies = []
        subprocess.run(["git", "clone", "--quiet", str(harness.REPO), str(self.root)],
                       check=True, stdin=subprocess.DEVNULL, timeout=60)
        (self.root / "bin").mkdir()
        shutil.copy2(harness.CAIRND, self.root / "bin" / "cairnd")
        shutil.copy2(agents.AGENT, self.root / "bin" / "cairn-agent")

    def demo(self, command):
        """Run scripts/demo COMMAND from another directory; return its output."""
        self.used = True
        r = subprocess.run([str(self.root / "scripts" / "demo"), command], cwd="/",
                           env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=DEMO_TIMEOUT)
        out = r.stdout + r.stderr
        assert r.returncode == 0, f"scripts/demo {command} exited {r.returncode}:\n{out}"
        return out

    def settings(self):
        """CAIRN_URL, CAIRN_TOKEN and CAIRN_DATABASE_URL as var/demo.env sets them."""
        r = subprocess.run(["bash", "-c", '. "$1" && printf "%s\\n" "$CAIRN_URL" '
                            '"$CAIRN_TOKEN" "$CAIRN_DATABASE_URL"', "_",
                            str(self.root / "var" / "demo.env")],
                           env=self.env, capture_output=True, text=True, check=True, timeout=10)
        return r.stdout.splitlines()

    def own_pg_homes(self):
        """Root's PostgreSQL directories of this clone: /var/lib/cairn-demo/<name>-<hash>."""
        pattern = re.compile(re.escape(self.root.name) + r"-[0-9a-f]{12}")
        if not PG_SYSTEM_DIR.is_dir():
            return []
        return [d for d in PG_SYSTEM_DIR.iterdir() if pattern.fullmatch(d.name)]

    def processes(self):
        """(pid, name, command line) of every live process of this clone: its
        cairnd and agents, engines and PostgreSQL working in its directories."""
        marks = [str(self.root)] + [str(d) for d in self.own_pg_homes()]
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                    "utf-8", "replace")
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                cwd = ""
            if any(m in cmdline or cwd == m or cwd.startswith(m + "/") for m in marks):
                found.append((int(entry.name), name, cmdline.strip()))
        return found

    def make_zombie(self, name):
        """A process called NAME that has exited and that nobody reaps; return its pid."""
        fake = self.tmp / "fake"
        fake.mkdir(exist_ok=True)
        shutil.copy2(shutil.which("true"), fake / name)
        p = subprocess.Popen([str(fake / name)], stdin=subprocess.DEVNULL)
        self.zombies.append(p)
        harness.wait_until(lambda: proc_state(p.pid) == "Z", 10, what=f"{name} to exit")
        return p.pid

    def dump_logs(self):
        logs = sorted((self.root / "var" / "log").glob("*.log"))
        logs += [d / "postgres.log" for d in self.own_pg_homes()]
        for log in logs:
            harness.LogSource(f"demo {log.name}", log).dump()

    def cleanup(self, failed):
        try:
            if failed:
                self.dump_logs()
            if self.used:
                r = subprocess.run([str(self.root / "scripts" / "demo"), "down"], cwd="/",
                                   env=self.env, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=DEMO_TIMEOUT)
                if r.returncode != 0:
                    sys.stderr.write(f"scripts/demo down at teardown:\n{r.stdout}{r.stderr}\n")
            for pid, _, cmdline in self.processes():
                sys.stderr.write(f"killing what scripts/demo down left: {pid} {cmdline}\n")
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        finally:
            for p in self.zombies:
                p.wait()
            for d in self.own_pg_homes():
                shutil.rmtree(d, ignore_errors=True)
            harness.remove_temp_dir(self.tmp)


def proc_state(pid):
    """The state letter of process PID (R, S, Z, ...), or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[0]


def psql(url, as_user=None, env=None):
    """Run one query on URL with psql, never prompting; return the CompletedProcess."""
    argv = [harness.PSQL, "-X", "-w", "-At", "-d", url, "-c",
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"]
    if as_user:
        argv = ["runuser", "-u", as_user, "--"] + argv
    return subprocess.run(argv, cwd="/", env=env or harness.clean_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)


@pytest.fixture
def clone(request, cairnd_binary):
    try:
        agents.require_agent()
    except harness.HarnessError as e:
        pytest.fail(str(e), pytrace=False)
    c = DemoClone()
    try:
        yield c
    finally:
        c.cleanup(_failed(request.node))


def healthy_hosts(url, token, ca):
    r = requests.get(url + "/v1/hosts", headers={"Authorization": f"Bearer {token}"},
                     timeout=10, verify=str(ca))
    eq(r.status_code, 200, f"GET /v1/hosts: {r.text}")
    return {h["name"] for h in r.json()["hosts"]
            if h["status"] == "healthy"}


def aws_settings_work(clone):
    """var/demo.env's AWS credentials sign requests the ElastiCache-compatible
    endpoint (CAIRN_ELASTICACHE_URL, TF_VAR_cairn_elasticache_endpoint) accepts."""
    boto3 = pytest.importorskip("boto3", reason="python3-boto3 is not installed")
    r = subprocess.run(["bash", "-c", '. "$1" && printf "%s\\n" "$AWS_ACCESS_KEY_ID" '
                        '"$AWS_SECRET_ACCESS_KEY" "$AWS_REGION" "$CAIRN_ELASTICACHE_URL" '
                        '"$TF_VAR_cairn_elasticache_endpoint" "$AWS_CA_BUNDLE"', "_",
                        str(clone.root / "var" / "demo.env")],
                       env=clone.env, capture_output=True, text=True, check=True, timeout=10)
    key, secret, region, url, tf_url, bundle = r.stdout.splitlines()
    eq(tf_url, url, "TF_VAR_cairn_elasticache_endpoint")
    eq(bundle, str(clone.root / "var" / "ca-bundle.pem"), "AWS_CA_BUNDLE")
    ec = boto3.client("elasticache", endpoint_url=url, region_name=region,
                      aws_access_key_id=key, aws_secret_access_key=secret, verify=bundle)
    eq(ec.describe_replication_groups()["ReplicationGroups"], [], "the demo's groups")


def test_demo_up_secure_and_down(clone):
    if IS_ROOT:
        blocked = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x",
                                  str(clone.tmp)], cwd="/")
        assert blocked.returncode != 0, f"the postgres user can enter {clone.tmp}"

    out = clone.demo("up")
    assert "Cairn demo is up." in out, out
    url, token, database_url = clone.settings()
    eq(url, f"https://{clone.listen}", "CAIRN_URL in var/demo.env")
    # HTTPS, by Cairn's own authority, which the demo wrote out.
    ca = clone.root / "var" / "ca.pem"
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(url + "/healthz", timeout=10, verify="/etc/ssl/certs/ca-certificates.crt"
                     if Path("/etc/ssl/certs/ca-certificates.crt").exists() else True)
    eq(requests.get(url + "/healthz", timeout=10, verify=str(ca)).status_code, 200,
       "GET /healthz")
    assert DEMO_HOSTS <= healthy_hosts(url, token, ca), out
    aws_settings_work(clone)

    # Where the data is, as the summary says: root's outside the checkout,
    # in a directory of the postgres user's only.
    m = re.search(r"^ +data in (\S+)$", out, re.M)
    assert m, f"no 'data in' line in the summary:\n{out}"
    data = clone.root / m.group(1)  # an absolute path stays as it is
    if IS_ROOT:
        eq([d / "pg" for d in clone.own_pg_homes()], [data], "root's PostgreSQL data directory")
        home = data.parent.stat()
        eq((pwd.getpwuid(home.st_uid).pw_name, stat.S_IMODE(home.st_mode)), ("postgres", 0o700),
           f"owner and mode of {data.parent}")
    else:
        eq(data, clone.root / "var" / "pg", "PostgreSQL's data directory")

    # The password is in a file of ours alone, named by CAIRN_DATABASE_URL.
    passfile = Path(parse_qs(urlsplit(database_url).query)["passfile"][0])
    eq(passfile, clone.root / "var" / "pgpass", "passfile of CAIRN_DATABASE_URL")
    st = passfile.stat()
    eq((st.st_uid, stat.S_IMODE(st.st_mode)), (os.geteuid(), 0o600), f"owner and mode of {passfile}")
    ok = psql(database_url)
    eq((ok.returncode, ok.stdout.strip()), (0, "t"), f"psql with the password: {ok.stderr}")

    # Without it, nobody gets in: not we without the file, not another user
    # with the URL (the file is not theirs to read).
    bare = f"postgresql://cairn@127.0.0.1:{clone.pg_port}/cairn"
    attempts = [("no password file", psql(bare, env=harness.clean_env(
        PGPASSFILE=clone.tmp / "no-pgpass")))]
    if IS_ROOT:
        attempts += [(f"user nobody, {u}", psql(u, as_user="nobody"))
                     for u in (bare, database_url)]
    for what, r in attempts:
        assert r.returncode != 0 and "password" in r.stderr, \
            f"{what}: psql exited {r.returncode}: {r.stdout}{r.stderr}"

    # What `down` must stop, as the process scan sees it.
    names = {name for _, name, _ in clone.processes()}
    assert {"cairnd", "cairn-agent", "postgres"} <= names, f"processes of the clone: {names}"
    clone.demo("down")
    eq(clone.processes(), [], "processes of the clone after scripts/demo down")

    # Stale pid files: a cairnd that exited and was never reaped, and a live
    # process that is no agent. `up` starts both daemons again, on the same data.
    run = clone.root / "var" / "run"
    zombie = clone.make_zombie("cairnd")
    (run / "cairnd.pid").write_text(f"{zombie}\n")
    (run / "agent-az-a.pid").write_text(f"{clone.make_zombie('cairn-agent')}\n")
    (run / "agent-az-b.pid").write_text(f"{os.getpid()}\n")
    out = clone.demo("up")
    for line in ("cairnd started", "agent vm-a started", "agent vm-b started",
                 "reusing the admin token"):
        assert f"demo: {line}" in out, f"'{line}' missing from scripts/demo up:\n{out}"
    assert "creating a PostgreSQL cluster" not in out, out
    pid = int((run / "cairnd.pid").read_text())
    assert pid != zombie and proc_state(pid) not in (None, "Z", "X"), \
        f"var/run/cairnd.pid names {pid}, state {proc_state(pid)}"
    eq(Path(f"/proc/{pid}/comm").read_text().strip(), "cairnd", f"process {pid}")
    eq(clone.settings()[1], token, "admin token after down and up")
    assert DEMO_HOSTS <= healthy_hosts(url, token, ca), out

    clone.demo("down")
    eq(clone.processes(), [], "processes of the clone after scripts/demo down")
