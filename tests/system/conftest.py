"""conftest.py -- fixtures that give each system test real daemons to drive.

pg              session-wide PostgreSQL 15 shared by most tests
fresh_db        a new empty database on `pg` for one test
private_pg      a PostgreSQL of a test's own, for tests that stop and restart it
cairnd_factory  starts cairnd processes for one test and stops them after it
cairn           cairnd on a fresh database, with an admin and a read token
shared          one cairnd for the session, for tests that change nothing that matters
module_cairn    cairnd on a fresh database shared by one test module (read-only tests
                over data the module inserts once)

When a test fails, the teardown of each fixture prints the log of the daemon
it owns (session daemons: only the part written during the failed test).

Run from the repository root:  /usr/bin/python3 -m pytest tests/system
Environment: CAIRND (binary, default bin/cairnd), CAIRN_PG_BIN (default
/usr/lib/postgresql/15/bin), CAIRN_KEEP_TMP=1 keeps temp dirs for a post-mortem.
"""

import signal
import sys

import pytest

import harness


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    # Turn SIGTERM/SIGHUP into KeyboardInterrupt so fixture finalizers still run.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


def _failed(node):
    return any(getattr(getattr(node, f"rep_{when}", None), "failed", False)
               for when in ("setup", "call"))


_session_logs = []


@pytest.fixture(autouse=True)
def _session_logs_on_failure(request):
    """Print what the session daemons logged during this test if it failed."""
    offsets = [(src, src.size()) for src in _session_logs]
    yield
    if _failed(request.node):
        for src, offset in offsets:
            src.dump(offset)


@pytest.fixture(scope="session")
def cairnd_binary():
    try:
        harness.require_cairnd()
    except harness.HarnessError as e:
        pytest.fail(str(e), pytrace=False)
    return harness.CAIRND


@pytest.fixture(scope="session")
def pg():
    server = harness.PostgresServer("pg")
    try:
        server.start()
        _session_logs.append(server.log)
        yield server
    finally:
        if server.log in _session_logs:
            _session_logs.remove(server.log)
        server.destroy()


class Database:
    def __init__(self, pg, name):
        self.pg = pg
        self.name = name
        self.url = pg.url(name)

    def psql(self, sql):
        return self.pg.psql(sql, self.name)


@pytest.fixture
def fresh_db(pg, request):
    return Database(pg, pg.create_database(request.node.name))


@pytest.fixture
def private_pg(request):
    server = harness.PostgresServer("pgpriv")
    try:
        server.start()
        yield server
    finally:
        if _failed(request.node):
            server.stop("fast", timeout=10)
            server.log.dump()
        server.destroy()


@pytest.fixture
def cairnd_factory(request, cairnd_binary):
    """start(database_url, args=(), wait=True, **kw) -> harness.Cairnd."""
    started = []

    def start(database_url, args=(), wait=True, **kw):
        if wait:
            c = harness.start_cairnd(database_url, args, **kw)
        else:
            c = harness.Cairnd(database_url, args, **kw)
        started.append(c)
        return c

    try:
        yield start
    finally:
        failed = _failed(request.node)
        for c in started:
            rc = c.stop(timeout=10)
            if failed:
                sys.stderr.write(f"\n{c.label} exit code at teardown: {rc}\n")
                c.log.dump()
            c.cleanup()


def make_instance(pg, db, cairnd):
    admin = harness.create_token(db.url, "sys-admin", "admin")
    read = harness.create_token(db.url, "sys-read", "read")
    return harness.Instance(cairnd, admin, read, pg=pg, dbname=db.name)


@pytest.fixture
def cairn(pg, fresh_db, cairnd_factory):
    """cairnd on a fresh, migrated database with admin and read tokens."""
    c = cairnd_factory(fresh_db.url)
    return make_instance(pg, fresh_db, c)


def _long_lived_instance(pg, label):
    """Start cairnd on its own database; its log is dumped per failed test."""
    db = Database(pg, pg.create_database(label))
    c = harness.start_cairnd(db.url, label=label)
    try:
        _session_logs.append(c.log)
        yield make_instance(pg, db, c)
    finally:
        if c.log in _session_logs:
            _session_logs.remove(c.log)
        c.cleanup()


@pytest.fixture(scope="session")
def shared(pg, cairnd_binary):
    """One cairnd for the whole session, for tests that only read or validate."""
    yield from _long_lived_instance(pg, "cairnd-shared")


@pytest.fixture(scope="module")
def module_cairn(pg, cairnd_binary, request):
    """One cairnd on a fresh database for the tests of one module."""
    yield from _long_lived_instance(pg, "cairnd-" + request.module.__name__.replace("_", "-"))
