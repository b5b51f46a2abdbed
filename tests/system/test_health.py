"""Liveness and readiness probes: /healthz and /readyz need no token."""

import re

import expect
import harness
from expect import eq


def test_healthz_is_ok_without_token(shared):
    r = shared.anon.get("/healthz")
    eq(expect.json_ok(r), {"status": "ok"}, "healthz body")


def test_healthz_ignores_a_bad_authorization_header(shared):
    r = shared.anon.get("/healthz", headers={"Authorization": "Bearer not-a-token"})
    eq(expect.json_ok(r), {"status": "ok"}, "healthz body")


def test_readyz_reports_current_schema_version(shared):
    body = expect.json_ok(shared.anon.get("/readyz"))
    latest = int(shared.psql("SELECT max(version) FROM schema_migrations").strip())
    eq({k: body[k] for k in ("status", "schema_version")},
       {"status": "ready", "schema_version": latest}, "readyz body")
    # Alone on its database, it leads (docs/operations.md): in a term of 1 or more.
    eq(body["leader"], True, "a lone cairnd leads")
    assert isinstance(body["leader_term"], int) and body["leader_term"] >= 1, body
    assert isinstance(body["schema_version"], int), \
        f"schema_version must be an integer, got {body['schema_version']!r}"


def test_readyz_schema_version_matches_migrate_output(cairn):
    r = harness.run_cli(["migrate", "--database-url", cairn.database_url], env_url=False)
    eq(r.returncode, 0, f"migrate exit code (stderr: {r.stderr!r})")
    out = r.stdout + r.stderr
    m = re.search(r"schema at version (\d+) \(applied (\d+)\)", out)
    assert m, f"migrate output lacks 'schema at version N (applied K)': {out!r}"
    eq(int(m.group(2)), 0, "migrations applied on an already migrated database")
    body = expect.json_ok(cairn.anon.get("/readyz"))
    eq(body["schema_version"], int(m.group(1)), "readyz schema_version vs migrate")
