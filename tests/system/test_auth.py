"""Bearer tokens and scopes: who may call what, and in which order checks happen."""

import pytest

import expect
import harness
from expect import eq

WWW_AUTH = 'Bearer realm="cairn"'


def unauthenticated(resp):
    body = expect.problem(resp, "UNAUTHENTICATED")
    header = resp.headers.get("WWW-Authenticate")
    assert header is not None and header.startswith(WWW_AUTH), \
        f"WWW-Authenticate: expected to start with {WWW_AUTH!r}, got {header!r}"
    return body


def test_no_token_is_401_with_www_authenticate(shared):
    r = shared.anon.get("/v1/node-types")
    unauthenticated(r)
    eq(r.headers.get("WWW-Authenticate"), WWW_AUTH, "WWW-Authenticate header")


@pytest.mark.parametrize("path", ["/v1/node-types", "/v1/node-types/cache.r7g.large",
                                  "/v1/engine-versions", "/v1/operations", "/v1/events",
                                  "/v1/tokens", "/v1/operations/00000000-0000-0000-0000-000000000000"])
def test_every_v1_get_route_needs_a_token(shared, path):
    unauthenticated(shared.anon.get(path))


def test_post_and_delete_need_a_token(shared):
    unauthenticated(shared.anon.post("/v1/tokens", json={"name": "x", "scope": "read"}))
    unauthenticated(shared.anon.delete("/v1/tokens/0123456789ab"))


def _malformed_headers(valid_token):
    key_id = harness.TOKEN_RE.match(valid_token).group(1)
    secret = harness.TOKEN_RE.match(valid_token).group(2)
    wrong_secret = ("B" if secret[0] != "B" else "C") + secret[1:]
    return {
        "empty": "",
        "scheme only": "Bearer",
        "scheme and space": "Bearer ",
        "basic auth": "Basic c3lzOnN5cw==",
        "token without scheme": valid_token,
        "garbage": "Bearer garbage",
        "short": "Bearer cairn_0123",
        "bad key id": "Bearer cairn_XYZXYZXYZXYZ_" + secret,
        "secret too short": f"Bearer cairn_{key_id}_{secret[:-1]}",
        "secret too long": f"Bearer cairn_{key_id}_{secret}A",
        "trailing junk": f"Bearer {valid_token} extra",
        "unknown key id": "Bearer cairn_0123456789ab_" + secret,
        "wrong secret": f"Bearer cairn_{key_id}_{wrong_secret}",
    }


@pytest.mark.parametrize("case", ["empty", "scheme only", "scheme and space", "basic auth",
                                  "token without scheme", "garbage", "short", "bad key id",
                                  "secret too short", "secret too long", "trailing junk",
                                  "unknown key id", "wrong secret"])
def test_malformed_or_unknown_token_is_401(shared, case):
    header = _malformed_headers(shared.admin_token)[case]
    r = shared.anon.get("/v1/node-types", headers={"Authorization": header})
    unauthenticated(r)
    assert shared.admin_token not in r.text, "the response must not echo the token"


def test_read_token_may_get(shared):
    expect.json_ok(shared.read.get("/v1/node-types"))
    expect.json_ok(shared.read.get("/v1/engine-versions"))
    expect.json_ok(shared.read.get("/v1/operations"))
    expect.json_ok(shared.read.get("/v1/events"))


def test_read_token_is_forbidden_to_post_and_delete(shared):
    expect.problem(shared.read.post("/v1/tokens", json={"name": "sneaky", "scope": "admin"}),
                   "FORBIDDEN")
    expect.problem(shared.read.delete("/v1/tokens/0123456789ab"), "FORBIDDEN")
    key_id = harness.TOKEN_RE.match(shared.admin_token).group(1)
    expect.problem(shared.read.delete(f"/v1/tokens/{key_id}"), "FORBIDDEN")
    # The admin token must still work: the read token revoked nothing.
    expect.json_ok(shared.api.get("/v1/tokens"))


def test_read_token_is_forbidden_to_list_tokens(shared):
    expect.problem(shared.read.get("/v1/tokens"), "FORBIDDEN")


def test_admin_token_may_do_everything(cairn):
    expect.json_ok(cairn.api.get("/v1/node-types"))
    expect.json_ok(cairn.api.get("/v1/tokens"))
    created = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "tmp", "scope": "read"}),
                             201)
    r = cairn.api.delete(f"/v1/tokens/{created['id']}")
    eq(r.status_code, 204, f"DELETE status ({expect.describe(r)})")


def test_forbidden_comes_before_body_checks(shared):
    r = shared.read.post("/v1/tokens", data=b"{broken",
                         headers={"Content-Type": "application/json"})
    expect.problem(r, "FORBIDDEN")
    r = shared.read.post("/v1/tokens", data=b"x", headers={"Content-Type": "text/plain"})
    expect.problem(r, "FORBIDDEN")


def test_auth_comes_before_query_checks(shared):
    unauthenticated(shared.anon.get("/v1/node-types", params={"page_size": "0", "bogus": "1"}))
    expect.problem(shared.read.get("/v1/tokens", params={"bogus": "1"}), "FORBIDDEN")


def test_unauthenticated_comes_before_body_checks(shared):
    r = shared.anon.post("/v1/tokens", data=b"{broken",
                         headers={"Content-Type": "application/json"})
    unauthenticated(r)
