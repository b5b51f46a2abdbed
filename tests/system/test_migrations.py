"""Schema migrations: concurrent migrators, schemas newer than the binary, --no-migrate."""

import re

import pytest

import expect
import harness
from expect import eq

MIGRATE_RE = re.compile(r"schema at version (\d+) \(applied (\d+)\)")
TABLES = ["schema_migrations", "node_types", "engine_versions", "engine_upgrade_paths", "hosts",
          "host_engines", "clusters", "shards", "nodes", "operations", "events", "api_tokens"]



def schema(readiness):
    """What /readyz says of the schema (not which cairnd leads)."""
    return {k: readiness[k] for k in ("status", "schema_version")}

def migrate_result(rc, out, err):
    eq(rc, 0, f"cairnd migrate exit code (stdout {out!r}, stderr {err!r})")
    m = MIGRATE_RE.search(out) or MIGRATE_RE.search(err)
    assert m, f"migrate output lacks 'schema at version N (applied K)': {out!r} {err!r}"
    return int(m.group(1)), int(m.group(2))


def test_migrate_then_migrate_again(fresh_db, cairnd_binary):
    version, applied = migrate_result(*harness.finish_cli(
        harness.spawn_cli(["migrate", "--database-url", fresh_db.url])))
    versions = [int(v) for v in fresh_db.psql(
        "SELECT version FROM schema_migrations ORDER BY version").split()]
    eq(versions, list(range(1, version + 1)), "versions in schema_migrations")
    eq(applied, len(versions), "migrations applied on an empty database")
    for t in TABLES:
        eq(fresh_db.psql(f"SELECT to_regclass('public.{t}') IS NOT NULL").strip(), "t",
           f"table {t} exists")
    again = migrate_result(*harness.finish_cli(
        harness.spawn_cli(["migrate"], database_url=fresh_db.url)))
    eq(again, (version, 0), "second migrate (version, applied)")


@pytest.mark.parametrize("round_", range(3))
def test_two_migrators_at_once(pg, cairnd_factory, round_):
    db = pg.create_database(f"race{round_}")
    url = pg.url(db)
    procs = [harness.spawn_cli(["migrate", "--database-url", url]) for _ in range(2)]
    results = [migrate_result(*harness.finish_cli(p)) for p in procs]
    rows = pg.psql("SELECT version, count(*) FROM schema_migrations GROUP BY version "
                   "ORDER BY version", db).split()
    counts = {int(v): int(n) for v, n in (row.split("|") for row in rows)}
    latest = max(counts)
    eq(set(counts.values()), {1}, f"each version recorded once: {counts}")
    eq(sorted(counts), list(range(1, latest + 1)), "versions recorded")
    eq([r[0] for r in results], [latest, latest], "version reported by each migrator")
    eq(sum(r[1] for r in results), len(counts),
       f"migrations applied in total by both migrators {results}")
    # The schema works: a cairnd starts on it and is ready.
    c = cairnd_factory(url, ["--no-migrate"])
    eq(schema(expect.json_ok(harness.Api(c.url).get("/readyz"))),
       {"status": "ready", "schema_version": latest}, "readyz")


def test_two_servers_starting_on_one_empty_database(fresh_db, cairnd_factory):
    a = cairnd_factory(fresh_db.url, wait=False)
    b = cairnd_factory(fresh_db.url, wait=False)
    a.wait_healthy()
    b.wait_healthy()
    for c in (a, b):
        body = expect.json_ok(harness.Api(c.url).get("/readyz"))
        eq(body["status"], "ready", f"{c.label} readyz")
    dup = fresh_db.psql("SELECT count(*) - count(DISTINCT version) FROM schema_migrations").strip()
    eq(dup, "0", "duplicate schema_migrations rows")


def test_refuses_to_start_on_a_newer_schema(fresh_db, cairnd_factory):
    migrate_result(*harness.finish_cli(harness.spawn_cli(["migrate"], fresh_db.url)))
    fresh_db.psql("INSERT INTO schema_migrations (version, name, applied_at) "
                  "VALUES (9999, 'from_the_future', now())")
    c = cairnd_factory(fresh_db.url, wait=False)
    rc = c.wait_exit(15)
    log = c.log.text()
    assert rc is not None, f"cairnd kept running on a schema newer than it knows:\n{log}"
    assert rc != 0, f"cairnd exited 0 on a newer schema:\n{log}"
    assert "9999" in log or "newer" in log.lower(), \
        f"exit message should name the newer schema version:\n{log}"
    versions = fresh_db.psql("SELECT max(version) FROM schema_migrations").strip()
    eq(versions, "9999", "schema_migrations left alone")


def test_no_migrate_on_empty_database_is_not_ready(fresh_db, cairnd_factory):
    c = cairnd_factory(fresh_db.url, ["--no-migrate"])
    anon = harness.Api(c.url)
    eq(expect.json_ok(anon.get("/healthz")), {"status": "ok"}, "healthz")
    expect.problem(anon.get("/readyz"), "NOT_READY")
    eq(fresh_db.psql("SELECT to_regclass('public.operations') IS NULL").strip(), "t",
       "--no-migrate must not create tables")


def test_no_migrate_becomes_ready_once_migrated(fresh_db, cairnd_factory):
    c = cairnd_factory(fresh_db.url, ["--no-migrate"])
    anon = harness.Api(c.url)
    expect.problem(anon.get("/readyz"), "NOT_READY")
    version, _ = migrate_result(*harness.finish_cli(harness.spawn_cli(["migrate"], fresh_db.url)))

    def ready():
        r = anon.get("/readyz")
        return r if r.status_code == 200 else None

    r = harness.wait_until(ready, 5, what="/readyz 200 after an external migrate")
    eq(schema(expect.json_ok(r)), {"status": "ready", "schema_version": version}, "readyz")


def test_exits_when_database_unreachable(cairnd_factory):
    url = f"postgresql://cairn@127.0.0.1:{harness.free_port()}/nowhere"
    c = cairnd_factory(url, wait=False)
    rc = c.wait_exit(20)
    log = c.log.text()
    assert rc is not None and rc != 0, f"exit code {rc} with an unreachable database:\n{log}"
    assert log.strip(), "cairnd must say why it exits"


def test_exits_when_database_does_not_exist(pg, cairnd_factory):
    c = cairnd_factory(pg.url("no_such_database"), wait=False)
    rc = c.wait_exit(20)
    assert rc is not None and rc != 0, f"exit code {rc} for a missing database:\n{c.log.text()}"


def test_exits_without_database_url(cairnd_factory):
    c = cairnd_factory(None, wait=False)
    rc = c.wait_exit(10)
    assert rc is not None and rc != 0, f"exit code {rc} without a database URL:\n{c.log.text()}"
    assert c.log.text().strip(), "cairnd must say what is missing"
