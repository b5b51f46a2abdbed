"""expect.py -- assertions on cairnd's HTTP answers, each printing both values."""

import json
import re

TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

PROBLEM_KEYS = {"type", "title", "status", "detail", "code", "instance", "request_id"}
VALIDATION_CODES = {"VALIDATION_FAILED", "INVALID_QUERY_PARAMETER"}

STATUS_OF = {
    "MALFORMED_JSON": 400, "VALIDATION_FAILED": 400, "INVALID_QUERY_PARAMETER": 400,
    "INVALID_PAGE_TOKEN": 400, "UNAUTHENTICATED": 401, "FORBIDDEN": 403,
    "ROUTE_NOT_FOUND": 404, "NODE_TYPE_NOT_FOUND": 404, "OPERATION_NOT_FOUND": 404,
    "TOKEN_NOT_FOUND": 404, "HOST_NOT_FOUND": 404, "METHOD_NOT_ALLOWED": 405, "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415, "INTERNAL_ERROR": 500, "DATABASE_UNAVAILABLE": 503,
    "NOT_READY": 503, "CLUSTER_NOT_FOUND": 404, "CLUSTER_ALREADY_EXISTS": 409,
    "INSUFFICIENT_CAPACITY": 409, "OPERATION_IN_PROGRESS": 409, "CHANGE_NOT_SUPPORTED_YET": 409,
    "PRECONDITION_FAILED": 412, "NO_IN_SYNC_REPLICA": 409, "NOT_SUPPORTED_BY_ENGINE": 409,
    "SECRET_KEY_UNAVAILABLE": 503, "COMBINED_CHANGES": 400, "NO_PENDING_CHANGE": 404,
    "ENGINE_NOT_INSTALLED": 409, "CLUSTER_UNHEALTHY": 409, "INSUFFICIENT_MEMORY": 409,
    "MALFORMED_REQUEST": 400, "UNSUPPORTED_TRANSFER_CODING": 501, "TOO_MANY_CONNECTIONS": 503,
    "OPERATION_FAILED": 500, "CALIBRATION_NOT_FOUND": 404, "RATE_LIMITED": 429,
    "JOIN_TOKEN_NOT_FOUND": 404, "HOST_NAME_TAKEN": 409, "HOST_NOT_PENDING": 409,
    "HOST_IN_USE": 409, "TOO_MANY_PENDING_HOSTS": 409, "USER_NOT_FOUND": 404,
    "USER_ALREADY_EXISTS": 409, "USER_QUOTA_EXCEEDED": 409, "SNAPSHOT_NOT_FOUND": 404,
    "SNAPSHOT_NAME_TAKEN": 409, "SNAPSHOT_NOT_AVAILABLE": 409, "NO_SNAPSHOT_STORE": 503,
}


def describe(resp):
    """One line naming the request and the answer, for assertion messages."""
    body = resp.text if len(resp.text) < 2000 else resp.text[:2000] + "..."
    return f"{resp.request.method} {resp.request.url} -> {resp.status_code} {body!r}"


def media_type(resp):
    return resp.headers.get("Content-Type", "").split(";")[0].strip().lower()


def request_id(resp):
    """Assert the answer carries a well-formed X-Request-Id; return it."""
    rid = resp.headers.get("X-Request-Id")
    assert rid is not None and REQUEST_ID_RE.match(rid), \
        f"X-Request-Id missing or malformed ({rid!r}) on {describe(resp)}"
    return rid


def json_ok(resp, status=200):
    """Assert a JSON success answer with `status`; return the decoded body."""
    assert resp.status_code == status, f"expected status {status}, got {describe(resp)}"
    request_id(resp)
    assert media_type(resp) == "application/json", \
        f"expected Content-Type application/json, got {resp.headers.get('Content-Type')!r}"
    try:
        return resp.json()
    except json.JSONDecodeError as e:
        raise AssertionError(f"body is not JSON ({e}): {describe(resp)}") from None


def problem(resp, code, fields=None, instance=None, extra=()):
    """Assert an application/problem+json answer carrying `code`; return it.

    fields: when given, the exact set of `field` names expected in `errors`.
    instance: the request path expected in `instance` (defaults to the
    request's path without the query string).
    extra: extension members the problem must carry (`operation`).
    """
    status = STATUS_OF[code]
    assert resp.status_code == status, f"expected {status} {code}, got {describe(resp)}"
    assert media_type(resp) == "application/problem+json", \
        f"expected Content-Type application/problem+json, got " \
        f"{resp.headers.get('Content-Type')!r} for {describe(resp)}"
    try:
        body = resp.json()
    except json.JSONDecodeError as e:
        raise AssertionError(f"problem body is not JSON ({e}): {describe(resp)}") from None
    assert isinstance(body, dict), f"problem body is not an object: {body!r}"
    missing = PROBLEM_KEYS - set(body)
    assert not missing, f"problem lacks {sorted(missing)}: {body!r}"
    allowed = PROBLEM_KEYS | ({"errors"} if code in VALIDATION_CODES else set()) | set(extra)
    unexpected = set(body) - allowed
    assert not unexpected, f"problem has unexpected members {sorted(unexpected)}: {body!r}"
    absent = set(extra) - set(body)
    assert not absent, f"problem lacks {sorted(absent)}: {body!r}"
    assert body["code"] == code, f"code: expected {code!r}, got {body['code']!r}"
    assert body["status"] == status, f"status member: expected {status}, got {body['status']!r}"
    want_type = "urn:cairn:problem:" + code.lower().replace("_", "-")
    assert body["type"] == want_type, f"type: expected {want_type!r}, got {body['type']!r}"
    assert isinstance(body["title"], str) and body["title"], f"title: {body['title']!r}"
    assert isinstance(body["detail"], str) and body["detail"], f"detail: {body['detail']!r}"
    rid = request_id(resp)
    assert body["request_id"] == rid, \
        f"request_id: body has {body['request_id']!r}, header has {rid!r}"
    want_instance = instance if instance is not None else resp.request.path_url.split("?")[0]
    assert body["instance"] == want_instance, \
        f"instance: expected {want_instance!r}, got {body['instance']!r}"
    if code in VALIDATION_CODES:
        errs = body.get("errors")
        assert isinstance(errs, list) and errs, f"errors must be a non-empty list: {body!r}"
        for e in errs:
            assert isinstance(e, dict) and set(e) == {"field", "message"}, \
                f"each error must be {{field, message}}, got {e!r}"
            assert isinstance(e["field"], str), f"field must be a string: {e!r}"
            assert isinstance(e["message"], str) and e["message"], f"empty message: {e!r}"
        if fields is not None:
            got = sorted(e["field"] for e in errs)
            assert got == sorted(fields), f"error fields: expected {sorted(fields)}, got {got}"
    else:
        assert fields is None, "fields only apply to validation problems"
    return body


def html_not_found(resp):
    """Assert the HTML page cairnd answers 404 with outside /v1 (where the web console's
    files are, not the API)."""
    assert resp.status_code == 404, f"expected 404, got {describe(resp)}"
    request_id(resp)
    eq(resp.headers.get("Content-Type"), "text/html; charset=utf-8", "Content-Type of the 404")
    if resp.request.method != "HEAD":
        assert "<h1>Not found</h1>" in resp.text, f"not the 404 page: {describe(resp)}"


def timestamp(value, what="timestamp"):
    assert isinstance(value, str) and TS_RE.match(value), \
        f"{what}: expected RFC 3339 UTC with microseconds, got {value!r}"


def eq(got, want, what="value"):
    assert got == want, f"{what}: expected {want!r}, got {got!r}"


def walk(api, path, key, page_size, params=None, limit=1000):
    """Follow next_page_token from the first page to the end; return the pages."""
    pages = []
    token = None
    for _ in range(limit):
        q = dict(params or {})
        q["page_size"] = page_size
        if token is not None:
            q["page_token"] = token
        body = json_ok(api.get(path, params=q))
        assert key in body, f"list body lacks {key!r}: {body!r}"
        pages.append(body)
        token = body.get("next_page_token")
        if token is None:
            return pages
        assert isinstance(token, str) and token, f"next_page_token must be a non-empty string: {token!r}"
    raise AssertionError(f"{path}: pagination did not end after {limit} pages")


_LOGFMT_PAIR = re.compile(r'\s*([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?=\s|$)')


def logfmt(line):
    """Parse one logfmt line into a dict (quoted values unescaped); None if not logfmt."""
    out = {}
    pos = 0
    while pos < len(line):
        m = _LOGFMT_PAIR.match(line, pos)
        if not m:
            return None
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return None
        out[key] = value
        pos = m.end()
        while pos < len(line) and line[pos] == " ":
            pos += 1
    return out
