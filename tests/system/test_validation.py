"""Request bodies on POST /v1/tokens: every way a body can be refused, and the edges that pass."""

import json

import pytest

import expect
import harness
from expect import eq

JSON = {"Content-Type": "application/json"}


def post_raw(api, data, headers=JSON, **kw):
    return api.post("/v1/tokens", data=data, headers=headers, **kw)


def post_json(api, doc):
    return post_raw(api, json.dumps(doc).encode())


@pytest.mark.parametrize("doc,fields", [
    ({}, ["name", "scope"]),
    ({"scope": "read"}, ["name"]),
    ({"name": "x"}, ["scope"]),
    ({"name": 5, "scope": "read"}, ["name"]),
    ({"name": None, "scope": "read"}, ["name"]),
    ({"name": ["a"], "scope": "read"}, ["name"]),
    ({"name": {"a": 1}, "scope": "read"}, ["name"]),
    ({"name": True, "scope": "read"}, ["name"]),
    ({"name": "x", "scope": 1}, ["scope"]),
    ({"name": "x", "scope": None}, ["scope"]),
    ({"name": "a" * 65, "scope": "read"}, ["name"]),
    ({"name": "a" * 1000, "scope": "read"}, ["name"]),
    ({"name": "", "scope": "read"}, ["name"]),
    ({"name": "a b", "scope": "read"}, ["name"]),
    ({"name": "a/b", "scope": "read"}, ["name"]),
    ({"name": "caf\u00e9", "scope": "read"}, ["name"]),
    ({"name": "a\tb", "scope": "read"}, ["name"]),
    ({"name": "<script>", "scope": "read"}, ["name"]),
    ({"name": "x\n", "scope": "read"}, ["name"]),
    ({"name": "x", "scope": "root"}, ["scope"]),
    ({"name": "x", "scope": "ADMIN"}, ["scope"]),
    ({"name": "x", "scope": ""}, ["scope"]),
    ({"name": "x", "scope": "read", "extra": 1}, ["extra"]),
    ({"name": "x", "scope": "read", "id": "0123456789ab"}, ["id"]),
    ({"name": "x", "scope": "read", "token": "cairn_x"}, ["token"]),
    ({"name": "bad name", "scope": "root", "extra": True}, ["name", "scope", "extra"]),
    ({"name": 7, "extra": 1}, ["name", "scope", "extra"]),
], ids=lambda v: json.dumps(v)[:40] if isinstance(v, dict) else None)
def test_validation_failed_names_every_field(shared, doc, fields):
    r = post_json(shared.api, doc)
    expect.problem(r, "VALIDATION_FAILED", fields=fields)


@pytest.mark.parametrize("raw", [b"[]", b'["name","scope"]', b'"name"', b"5", b"null", b"true"])
def test_body_not_an_object(shared, raw):
    r = post_raw(shared.api, raw)
    expect.problem(r, "VALIDATION_FAILED")


@pytest.mark.parametrize("raw", [
    b"", b"{", b"{name: 1}", b"{'name': 'x'}", b'{"name": "x", "scope": "read"}x',
    b'{"name": "x",}', b"\xff\xfe", b'{"name": "\xc3\x28", "scope": "read"}', b"nul",
    b'{"name": "x" "scope": "read"}',
])
def test_malformed_json(shared, raw):
    expect.problem(post_raw(shared.api, raw), "MALFORMED_JSON")


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", "application/jsonx",
                                   "application/xml", "json"])
def test_wrong_content_type_is_415(shared, ctype):
    headers = {} if ctype is None else {"Content-Type": ctype}
    r = post_raw(shared.api, b'{"name": "ct", "scope": "read"}', headers=headers)
    expect.problem(r, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize("ctype", ["application/json", "application/json; charset=utf-8"])
def test_json_content_type_variants_are_accepted(shared, ctype):
    r = post_raw(shared.api, b'{"name": "ct-ok", "scope": "read"}',
                 headers={"Content-Type": ctype})
    body = expect.json_ok(r, 201)
    eq(body["name"], "ct-ok", "name")


@pytest.mark.parametrize("name", ["a", "a" * 64, "A.b-c_9", "...", "-", "_x_"])
def test_valid_names_at_the_edges(shared, name):
    body = expect.json_ok(post_json(shared.api, {"name": name, "scope": "read"}), 201)
    eq(body["name"], name, "name")
    eq(body["scope"], "read", "scope")


def test_whitespace_around_json_is_fine(shared):
    r = post_raw(shared.api, b' \n\t{"scope" : "admin" ,\n "name":"ws"}\n ')
    body = expect.json_ok(r, 201)
    eq((body["name"], body["scope"]), ("ws", "admin"), "name and scope")

# --------------------------------------------------------------------------
# Body size cap


@pytest.fixture
def small_cap(fresh_db, cairnd_factory):
    c = cairnd_factory(fresh_db.url, ["--max-body-bytes", "64"])
    admin = harness.create_token(fresh_db.url, "cap-admin", "admin")
    return harness.Api(c.url, admin)


def post_oversized(api, body):
    """POST a big body over a raw socket, tolerating an early 413; return the problem."""
    port = int(api.base.rsplit(":", 1)[1])
    head = (f"POST /v1/tokens HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {api.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-Id: big-body\r\n").encode()
    status, headers, payload = harness.raw_http(port, head, body)
    eq(status, 413, f"status for a {len(body)}-byte body (body {payload[:300]!r})")
    eq(headers.get("content-type", "").split(";")[0], "application/problem+json",
       "413 content type")
    doc = json.loads(payload)
    eq((doc.get("code"), doc.get("status"), doc.get("instance"), doc.get("request_id")),
       ("PAYLOAD_TOO_LARGE", 413, "/v1/tokens", "big-body"), "413 problem members")
    return doc


def padded(n):
    """A valid token body of exactly n bytes (n >= 29)."""
    base = b'{"name":"cap","scope":"read"}'
    assert len(base) <= n
    return base[:-1] + b" " * (n - len(base)) + b"}"


def test_body_at_the_cap_is_accepted(small_cap):
    body = padded(64)
    eq(len(body), 64, "body length")
    expect.json_ok(post_raw(small_cap, body), 201)


def test_body_one_over_the_cap_is_413(small_cap):
    expect.problem(post_raw(small_cap, padded(65)), "PAYLOAD_TOO_LARGE")


def test_big_body_is_413_quickly(small_cap):
    post_oversized(small_cap, b'{"name":"' + b"a" * (4 << 20) + b'","scope":"read"}')


def test_chunked_body_over_the_cap_is_413(small_cap):
    def chunks():
        yield b'{"name":"cap",'
        for _ in range(10):
            yield b" " * 16
        yield b'"scope":"read"}'
    r = post_raw(small_cap, chunks())
    assert r.request.headers.get("Transfer-Encoding") == "chunked", "request was not chunked"
    expect.problem(r, "PAYLOAD_TOO_LARGE")


def test_chunked_body_under_the_cap_is_accepted(small_cap):
    def chunks():
        yield b'{"name":"chunk",'
        yield b'"scope":"read"}'
    r = post_raw(small_cap, chunks())
    assert r.request.headers.get("Transfer-Encoding") == "chunked", "request was not chunked"
    eq(expect.json_ok(r, 201)["name"], "chunk", "name")


def test_server_still_serves_after_413(small_cap):
    post_oversized(small_cap, padded(100000))
    expect.json_ok(small_cap.get("/v1/node-types"))
    expect.json_ok(post_raw(small_cap, padded(40)), 201)


def test_default_cap_is_one_mebibyte(shared):
    cap = 1048576
    expect.json_ok(post_raw(shared.api, padded(cap)), 201)
    post_oversized(shared.api, padded(cap + 1))
