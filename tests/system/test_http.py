"""HTTP conventions: request ids, problem documents, routing errors, query checks, logs."""

import re
import subprocess
import threading
import time

import pytest

import expect
import harness
from conftest import make_instance
from expect import eq

# --------------------------------------------------------------------------
# X-Request-Id


def test_request_id_is_generated_when_absent(shared):
    ids = []
    for _ in range(3):
        r = shared.anon.get("/healthz")
        rid = r.headers.get("X-Request-Id")
        assert rid and expect.REQUEST_ID_RE.match(rid), f"generated X-Request-Id {rid!r}"
        ids.append(rid)
    eq(len(set(ids)), 3, f"distinct generated request ids among {ids}")


@pytest.mark.parametrize("rid", ["abc", "req-1.2_3:4", "A" * 128, "0"])
def test_valid_request_id_is_echoed(shared, rid):
    r = shared.read.get("/v1/node-types", headers={"X-Request-Id": rid})
    expect.json_ok(r)
    eq(r.headers.get("X-Request-Id"), rid, "echoed X-Request-Id")


@pytest.mark.parametrize("rid", ["A" * 129, "has space", "semi;colon", "slash/x", "ünï"])
def test_invalid_request_id_is_replaced(shared, rid):
    raw = rid.encode("utf-8")
    r = shared.anon.get("/healthz", headers={"X-Request-Id": raw})
    got = r.headers.get("X-Request-Id")
    assert got and got != rid, f"invalid X-Request-Id {rid!r} must be replaced, got {got!r}"
    assert expect.REQUEST_ID_RE.match(got), f"generated X-Request-Id {got!r}"


def test_request_id_on_errors_matches_problem_body(shared):
    r = shared.anon.get("/v1/no-such-thing", headers={"X-Request-Id": "trace-404"})
    body = expect.problem(r, "ROUTE_NOT_FOUND")
    eq(body["request_id"], "trace-404", "problem request_id")
    r = shared.anon.get("/v1/node-types")
    body = expect.problem(r, "UNAUTHENTICATED")
    assert expect.REQUEST_ID_RE.match(body["request_id"]), f"generated id {body['request_id']!r}"

# --------------------------------------------------------------------------
# Routing: 404 and 405


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/v1/nope",
                                  "/v1/node-types/cache.r7g.large/extra"])
def test_unknown_route_is_404_before_auth(shared, path):
    for api in (shared.anon, shared.api):
        body = expect.problem(api.get(path), "ROUTE_NOT_FOUND")
        assert "errors" not in body, f"non-validation problem carries errors: {body!r}"


# Outside /v1 the paths belong to the web console (--web-root, off here): what it
# does not have is a page's 404, in HTML, not a problem document.
@pytest.mark.parametrize("path", ["/", "/v2/node-types", "/healthz/x", "/V1/NODE-TYPES"])
def test_unknown_path_outside_the_api_is_an_html_404(shared, path):
    for api in (shared.anon, shared.api):
        expect.html_not_found(api.get(path))


@pytest.mark.parametrize("method,path,allow", [
    ("POST", "/healthz", {"GET"}),
    ("DELETE", "/readyz", {"GET"}),
    ("POST", "/v1/node-types", {"GET"}),
    ("DELETE", "/v1/node-types/cache.r7g.large", {"GET"}),
    ("PUT", "/v1/tokens", {"GET", "POST"}),
    ("PATCH", "/v1/tokens", {"GET", "POST"}),
    ("GET", "/v1/tokens/0123456789ab", {"DELETE"}),
    ("POST", "/v1/operations", {"GET"}),
    ("DELETE", "/v1/events", {"GET"}),
    ("PUT", "/v1/engine-versions", {"GET"}),
])
def test_wrong_method_is_405_with_allow_before_auth(shared, method, path, allow):
    for api in (shared.anon, shared.read):
        r = api.request(method, path)
        expect.problem(r, "METHOD_NOT_ALLOWED")
        header = r.headers.get("Allow")
        assert header is not None, f"405 without Allow header: {expect.describe(r)}"
        got = {m.strip() for m in header.split(",")}
        eq(got, allow, f"Allow methods for {method} {path}")


def test_allow_header_format_for_tokens(shared):
    r = shared.api.request("PUT", "/v1/tokens")
    expect.problem(r, "METHOD_NOT_ALLOWED")
    eq(r.headers.get("Allow"), "GET, POST", "Allow header")

# --------------------------------------------------------------------------
# Problem document shape


def test_problem_document_shape(shared):
    r = shared.read.get("/v1/node-types/cache.nope.large", headers={"X-Request-Id": "shape-1"})
    body = expect.problem(r, "NODE_TYPE_NOT_FOUND")
    eq(set(body), expect.PROBLEM_KEYS, "problem members")
    eq(body["type"], "urn:cairn:problem:node-type-not-found", "type")
    eq(body["status"], 404, "status")
    eq(body["instance"], "/v1/node-types/cache.nope.large", "instance")
    eq(body["request_id"], "shape-1", "request_id")
    eq(r.headers.get("Content-Type", "").split(";")[0], "application/problem+json", "content type")


def test_json_responses_are_application_json(shared):
    for path in ("/healthz", "/readyz"):
        expect.json_ok(shared.anon.get(path))
    for path in ("/v1/node-types", "/v1/engine-versions", "/v1/operations", "/v1/events",
                 "/v1/tokens"):
        expect.json_ok(shared.api.get(path))

# --------------------------------------------------------------------------
# Query parameters


@pytest.mark.parametrize("path,param", [
    ("/v1/node-types", "foo"),
    ("/v1/node-types/cache.r7g.large", "verbose"),
    ("/v1/engine-versions", "engin"),
    ("/v1/operations", "cluster"),
    ("/v1/events", "until"),
    ("/v1/tokens", "scope"),
])
def test_unknown_query_parameter_is_rejected(shared, path, param):
    r = shared.api.get(path, params={param: "1"})
    expect.problem(r, "INVALID_QUERY_PARAMETER", fields=[param])


def test_several_unknown_query_parameters_are_listed_together(shared):
    r = shared.api.get("/v1/node-types", params={"a": "1", "b": "2"})
    expect.problem(r, "INVALID_QUERY_PARAMETER", fields=["a", "b"])


def test_unknown_query_parameter_on_post(shared):
    r = shared.api.post("/v1/tokens?dry_run=1", data=b"{not json",
                        headers={"Content-Type": "application/json"})
    expect.problem(r, "INVALID_QUERY_PARAMETER", fields=["dry_run"])


@pytest.mark.parametrize("engine", ["mysql", "Valkey", "redis,valkey"])
def test_bad_engine_filter(shared, engine):
    r = shared.read.get("/v1/engine-versions", params={"engine": engine})
    expect.problem(r, "INVALID_QUERY_PARAMETER", fields=["engine"])

# --------------------------------------------------------------------------
# Logs


def _log_records(instance):
    """Every log line of an instance, parsed as logfmt (None for lines that are not)."""
    return [(ln, expect.logfmt(ln)) for ln in instance.cairnd.log.text().splitlines()
            if ln.strip()]


def _access_record(instance, rid):
    def find():
        for _, rec in _log_records(instance):
            if rec and rec.get("msg") == "request" and rec.get("request_id") == rid:
                return rec
        return None
    return harness.wait_until(find, 5, what=f"an access log line with request_id={rid}")


def test_access_log_line_per_request(shared):
    rid = f"access-log-{time.monotonic_ns()}"
    r = shared.read.get("/v1/node-types", headers={"X-Request-Id": rid})
    expect.json_ok(r)
    rec = _access_record(shared, rid)
    eq({k: rec.get(k) for k in ("level", "method", "path", "status")},
       {"level": "info", "method": "GET", "path": "/v1/node-types", "status": "200"},
       f"access log fields of {rec}")
    assert re.fullmatch(r"\d+(\.\d+)?", rec.get("duration_ms", "")), \
        f"duration_ms must be a number: {rec}"
    eq(rec.get("bytes"), str(len(r.content)), f"bytes= vs response body length in {rec}")
    assert rec.get("ts"), f"access log line lacks ts: {rec}"


def test_access_log_records_error_status_and_path_without_query(shared):
    rid = f"access-err-{time.monotonic_ns()}"
    r = shared.anon.get("/v1/node-types?page_size=5", headers={"X-Request-Id": rid})
    expect.problem(r, "UNAUTHENTICATED")
    rec = _access_record(shared, rid)
    eq((rec.get("status"), rec.get("path")), ("401", "/v1/node-types"),
       f"status and path in {rec}")


def test_every_log_line_is_logfmt(cairn):
    cairn.read.get("/v1/node-types")
    cairn.anon.get("/v1/nope")
    cairn.api.post("/v1/tokens", json={"name": "x y"})
    cairn.cairnd.stop()  # flush everything, including the shutdown lines
    records = _log_records(cairn)
    assert len(records) >= 4, f"expected several log lines, got {records!r}"
    bad = [ln for ln, rec in records
           if rec is None or list(rec)[:3] != ["ts", "level", "msg"]
           or rec["level"] not in ("debug", "info", "warn", "error")]
    assert not bad, f"log lines not in logfmt ts=... level=... msg=...: {bad[:5]!r}"


def test_token_secrets_never_reach_the_log(cairn):
    created = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "quiet", "scope": "read"}),
                             201)
    cairn.api.with_token(created["token"]).get("/v1/node-types")
    cairn.anon.get("/v1/node-types", headers={"Authorization": "Bearer " + created["token"] + "x"})
    cairn.cairnd.stop()
    text = cairn.cairnd.log.text()
    for tok in (created["token"], cairn.admin_token, cairn.read_token):
        secret = harness.TOKEN_RE.match(tok).group(2)
        assert secret not in text, f"a token secret appears in the log:\n{text}"


def test_a_blocked_handler_holds_up_no_other_connection(pg, fresh_db, cairnd_factory):
    """A request whose handler waits (here on a table lock) holds up no request on
    another connection, even a kept-alive one served by the same connection thread: the
    API's handlers run on workers. With two threads, ten connections opened before the
    POST that waits each get their next answer at once."""
    c = cairnd_factory(fresh_db.url, ["--http-threads", "2"])
    inst = make_instance(pg, fresh_db, c)
    kept = [harness.Api(c.url, inst.admin_token) for _ in range(10)]
    for k in kept:  # each opens its connection (and the token's last use is recorded)
        expect.json_ok(k.get("/v1/node-types"))
    api = harness.Api(c.url, inst.admin_token)
    locker = subprocess.Popen(
        [harness.PSQL, "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "cairn",
         "-d", fresh_db.name],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        env=harness.clean_env())
    blocked = threading.Thread(target=lambda: api.post(
        "/v1/clusters", json={"id": "waits", "engine": "valkey", "engine_version": "8.0",
                              "node_type": "cache.t3.micro"}, timeout=30))
    try:
        locker.stdin.write("BEGIN; LOCK TABLE clusters IN EXCLUSIVE MODE; SELECT 1;\n")
        locker.stdin.flush()
        harness.wait_until(lambda: "t" == fresh_db.psql(
            "SELECT count(*) > 0 FROM pg_locks l JOIN pg_class r ON r.oid = l.relation"
            " WHERE r.relname = 'clusters' AND l.mode = 'ExclusiveLock' AND l.granted").strip(),
            10, what="the lock taken")
        blocked.start()
        harness.wait_until(lambda: "t" == fresh_db.psql(
            "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'").strip(),
            10, what="the POST waiting on the lock")
        for i, k in enumerate(kept):
            t = time.monotonic()
            r = k.get("/v1/node-types", timeout=5)
            eq(r.status_code, 200, f"GET on kept-alive connection {i}")
            assert time.monotonic() - t < 2, f"connection {i} waited {time.monotonic() - t:.1f} s"
    finally:
        locker.stdin.write("ROLLBACK;\n")
        locker.stdin.close()
        locker.wait(10)
        blocked.join(30)
