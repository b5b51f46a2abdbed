"""The token API and the `cairnd token` commands: create, list, revoke."""

import base64
import hashlib
import time

import pytest

import expect
import harness
from expect import eq

TOKEN_KEYS = {"id", "name", "scope", "host_details", "created_at", "last_used_at", "revoked_at",
              "expires_at"}


def check_token_fields(tok, name=None, scope=None):
    eq(set(tok), TOKEN_KEYS, "token members")
    assert isinstance(tok["id"], str) and len(tok["id"]) == 12 \
        and all(c in "0123456789abcdef" for c in tok["id"]), f"token id {tok['id']!r}"
    if name is not None:
        eq(tok["name"], name, "token name")
    if scope is not None:
        eq(tok["scope"], scope, "token scope")
    expect.timestamp(tok["created_at"], "created_at")
    if tok["last_used_at"] is not None:
        expect.timestamp(tok["last_used_at"], "last_used_at")


def list_tokens(api):
    pages = expect.walk(api, "/v1/tokens", "tokens", 1000)
    return [t for p in pages for t in p["tokens"]]


def by_id(tokens):
    return {t["id"]: t for t in tokens}


def test_create_shows_token_once(cairn):
    r = cairn.api.post("/v1/tokens", json={"name": "ci-bot", "scope": "read"})
    body = expect.json_ok(r, 201)
    eq(set(body), TOKEN_KEYS | {"token", "access_key_id", "secret_access_key"},
       "created token members")
    check_token_fields({k: v for k, v in body.items()
                        if k not in ("token", "access_key_id", "secret_access_key")},
                       "ci-bot", "read")
    eq(body["last_used_at"], None, "last_used_at of a new token")
    eq(body["revoked_at"], None, "revoked_at of a new token")
    m = harness.TOKEN_RE.match(body["token"])
    assert m, f"token format: expected cairn_<12 hex>_<43 base64url>, got {body['token']!r}"
    eq(m.group(1), body["id"], "key id embedded in the token")
    # The same token as AWS credentials (cairnd has its secret key, so it is kept sealed).
    eq((body["access_key_id"], body["secret_access_key"]), (m.group(1), m.group(2)),
       "the token's AWS credentials")

    listed = by_id(list_tokens(cairn.api))
    assert body["id"] in listed, f"new token {body['id']} missing from list {sorted(listed)}"
    check_token_fields(listed[body["id"]], "ci-bot", "read")
    eq(listed[body["id"]]["created_at"], body["created_at"], "created_at in list vs create")
    raw = cairn.api.get("/v1/tokens", params={"page_size": 1000}).text
    assert body["token"] not in raw and m.group(2) not in raw, "the list must not show the secret"
    assert "secret" not in raw, f"the list must not show a secret or its hash: {raw}"


def test_created_tokens_work_with_their_scope(cairn):
    rd = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "r", "scope": "read"}), 201)
    ad = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "a", "scope": "admin"}), 201)
    reader = cairn.api.with_token(rd["token"])
    admin = cairn.api.with_token(ad["token"])
    expect.json_ok(reader.get("/v1/node-types"))
    expect.problem(reader.post("/v1/tokens", json={"name": "x", "scope": "read"}), "FORBIDDEN")
    expect.json_ok(admin.post("/v1/tokens", json={"name": "x", "scope": "read"}), 201)


def test_list_shows_cli_tokens(cairn):
    tokens = list_tokens(cairn.api)
    names = sorted((t["name"], t["scope"]) for t in tokens)
    eq(names, [("sys-admin", "admin"), ("sys-read", "read")], "tokens of a fresh database")
    ids = by_id(tokens)
    admin_id = harness.TOKEN_RE.match(cairn.admin_token).group(1)
    read_id = harness.TOKEN_RE.match(cairn.read_token).group(1)
    eq(sorted(ids), sorted([admin_id, read_id]), "token ids")
    for t in tokens:
        check_token_fields(t)
        eq(t["revoked_at"], None, f"revoked_at of {t['name']}")


def test_last_used_at_is_a_timestamp_or_null(cairn):
    expect.json_ok(cairn.read.get("/v1/node-types"))
    for t in list_tokens(cairn.api):
        check_token_fields(t)


def test_current_names_the_calling_token(cairn):
    rd = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "console", "scope": "read"}),
                        201)
    reader = cairn.api.with_token(rd["token"])
    me = expect.json_ok(reader.get("/v1/tokens/current"))
    check_token_fields(me, "console", "read")
    eq(me["id"], rd["id"], "id of the calling token")
    assert rd["token"] not in reader.get("/v1/tokens/current").text, "the secret was shown again"
    admin = expect.json_ok(cairn.api.get("/v1/tokens/current"))
    eq(admin["scope"], "admin", "scope of the admin token")
    # "current" is no token id: revoking it revokes nothing, and a read token may not try.
    expect.problem(cairn.api.delete("/v1/tokens/current"), "TOKEN_NOT_FOUND")
    expect.problem(reader.delete("/v1/tokens/current"), "FORBIDDEN")
    expect.problem(cairn.api.get("/v1/tokens/current", token=None), "UNAUTHENTICATED")


def test_delete_revokes(cairn):
    created = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "doomed", "scope": "admin"}),
                             201)
    victim = cairn.api.with_token(created["token"])
    expect.json_ok(victim.get("/v1/tokens"))

    r = cairn.api.delete(f"/v1/tokens/{created['id']}")
    eq(r.status_code, 204, f"DELETE status ({expect.describe(r)})")
    eq(r.content, b"", "204 body")

    body = expect.problem(victim.get("/v1/node-types"), "UNAUTHENTICATED")
    assert created["token"] not in str(body), "problem must not echo the token"
    expect.problem(victim.post("/v1/tokens", json={"name": "x", "scope": "read"}),
                   "UNAUTHENTICATED")

    listed = by_id(list_tokens(cairn.api))[created["id"]]
    assert listed["revoked_at"] is not None, f"revoked token still shows revoked_at null: {listed}"
    expect.timestamp(listed["revoked_at"], "revoked_at")
    assert listed["revoked_at"] >= listed["created_at"], f"revoked before created: {listed}"
    # Other tokens are untouched.
    expect.json_ok(cairn.api.get("/v1/tokens"))


@pytest.mark.parametrize("token_id", ["0123456789ab", "ffffffffffff", "nothex", "x" * 200])
def test_delete_unknown_token_is_404(shared, token_id):
    expect.problem(shared.api.delete(f"/v1/tokens/{token_id}"), "TOKEN_NOT_FOUND")


def test_failed_create_stores_nothing(cairn):
    before = sorted(t["id"] for t in list_tokens(cairn.api))
    expect.problem(cairn.api.post("/v1/tokens", json={"name": "bad name", "scope": "read"}),
                   "VALIDATION_FAILED")
    expect.problem(cairn.api.post("/v1/tokens", json={"name": "ok", "scope": "root"}),
                   "VALIDATION_FAILED")
    after = sorted(t["id"] for t in list_tokens(cairn.api))
    eq(after, before, "token ids after rejected creates")


def test_only_a_sha256_of_the_secret_is_stored(cairn):
    body = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "hashed", "scope": "read"}),
                          201)
    token = body["token"]
    secret = harness.TOKEN_RE.match(token).group(2)
    row = cairn.psql(f"SELECT encode(secret_hash, 'hex') || ' ' || row_to_json(t)::text "
                     f"FROM api_tokens t WHERE id = '{body['id']}'").strip()
    stored_hex, row_text = row.split(" ", 1)
    eq(len(stored_hex), 64, f"secret_hash length in hex (row {row_text})")
    assert secret not in row_text and token not in row_text, f"secret stored in clear: {row_text}"
    decoded = base64.urlsafe_b64decode(secret + "=")
    candidates = {hashlib.sha256(x).hexdigest(): what for what, x in [
        ("whole token", token.encode()), ("secret text", secret.encode()),
        ("decoded secret", decoded)]}
    assert stored_hex in candidates, \
        f"secret_hash {stored_hex} is not SHA-256 of the token, the secret or its bytes"


def test_token_list_pagination(cairn):
    for i in range(5):
        expect.json_ok(cairn.api.post("/v1/tokens", json={"name": f"p{i}", "scope": "read"}), 201)
    pages = expect.walk(cairn.api, "/v1/tokens", "tokens", 2)
    eq([len(p["tokens"]) for p in pages], [2, 2, 2, 1], "page sizes walking 7 tokens by 2")
    ids = [t["id"] for p in pages for t in p["tokens"]]
    eq(len(set(ids)), 7, f"distinct ids in {ids}")
    eq(ids, [t["id"] for t in list_tokens(cairn.api)], "paged order vs one page")

# --------------------------------------------------------------------------
# CLI


def test_cli_create_prints_only_the_token(fresh_db, cairnd_binary):
    harness.run_cli(["migrate"], fresh_db.url)
    r = harness.run_cli(["token", "create", "--name", "cli-one", "--scope", "admin"], fresh_db.url)
    eq(r.returncode, 0, f"exit code (stderr {r.stderr!r})")
    lines = r.stdout.splitlines()
    eq(len(lines), 1, f"stdout lines of token create: {r.stdout!r}")
    assert harness.TOKEN_RE.match(lines[0]), f"token format: {lines[0]!r}"


@pytest.mark.parametrize("args", [
    ["--name", "x", "--scope", "root"],
    ["--name", "bad name", "--scope", "read"],
    ["--name", "", "--scope", "read"],
    ["--name", "x"],
    ["--scope", "read"],
])
def test_cli_create_rejects_bad_arguments(shared, args):
    r = harness.run_cli(["token", "create"] + args, shared.database_url)
    assert r.returncode != 0, f"token create {args} exited 0 with stdout {r.stdout!r}"
    eq(r.stdout.strip(), "", "stdout of a failed token create")
    assert r.stderr.strip(), "a failed token create must say why on stderr"


def test_cli_list_shows_tokens(cairn):
    r = harness.run_cli(["token", "list"], cairn.database_url)
    eq(r.returncode, 0, f"token list exit code (stderr {r.stderr!r})")
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    eq(lines[0].split(), ["ID", "NAME", "SCOPE", "CREATED", "LAST_USED", "REVOKED"],
       "token list header")
    eq(len(lines), 3, f"header + two tokens: {r.stdout!r}")
    admin_id = harness.TOKEN_RE.match(cairn.admin_token).group(1)
    read_id = harness.TOKEN_RE.match(cairn.read_token).group(1)
    rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
    eq(sorted(rows), sorted([admin_id, read_id]), "ids in token list")
    eq(rows[admin_id][1:3], ["sys-admin", "admin"], "admin row name and scope")
    eq(rows[read_id][1:3], ["sys-read", "read"], "read row name and scope")
    assert cairn.admin_token not in r.stdout and cairn.read_token not in r.stdout, \
        "token list must not print secrets"


def refused_soon(request, what):
    """The answer of request() once it is 401: a change made outside this
    cairnd (the CLI, SQL) reaches its cache of verified credentials through
    a PostgreSQL notification, within milliseconds, not before the change's
    own process has exited."""
    # In a list: a 4xx response is falsy itself.
    return harness.wait_until(lambda: (lambda r: [r] if r.status_code == 401 else None)(request()),
                              2, interval=0.001, what=what)[0]


def test_cli_revoke(cairn):
    read_id = harness.TOKEN_RE.match(cairn.read_token).group(1)
    expect.json_ok(cairn.read.get("/v1/node-types"))
    r = harness.run_cli(["token", "revoke", read_id], cairn.database_url)
    eq(r.returncode, 0, f"token revoke exit code (stderr {r.stderr!r})")
    expect.problem(refused_soon(lambda: cairn.read.get("/v1/node-types"),
                                "the token revoked by the CLI refused"), "UNAUTHENTICATED")
    listed = by_id(list_tokens(cairn.api))[read_id]
    assert listed["revoked_at"] is not None, f"revoked_at after CLI revoke: {listed}"
    r = harness.run_cli(["token", "list"], cairn.database_url)
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith(read_id))
    admin_id = harness.TOKEN_RE.match(cairn.admin_token).group(1)
    admin_row = next(ln for ln in r.stdout.splitlines() if ln.startswith(admin_id))
    assert row.split()[-1] != admin_row.split()[-1], \
        f"REVOKED column must differ between a revoked and a live token: {row!r} vs {admin_row!r}"


def test_cli_revoke_unknown_id(cairn):
    r = harness.run_cli(["token", "revoke", "0123456789ab"], cairn.database_url)
    eq(r.returncode, 1, f"exit code of revoking an unknown id (stdout {r.stdout!r})")
    assert (r.stderr + r.stdout).strip(), "revoking an unknown id must print a message"
    expect.json_ok(cairn.api.get("/v1/tokens"))


def test_a_token_expires(cairn):
    """expires_in_days sets expires_at; past it the token opens nothing (401,
    as a revoked one), signed requests included; without it, never."""
    r = cairn.api.post("/v1/tokens", json={"name": "temp", "scope": "read", "expires_in_days": 30})
    body = expect.json_ok(r, 201)
    expect.timestamp(body["expires_at"], "expires_at")
    assert body["expires_at"][:4] in ("2026", "2027"), body
    temp = cairn.api.with_token(body["token"])
    expect.json_ok(temp.get("/v1/clusters"))
    never = expect.json_ok(cairn.api.post("/v1/tokens", json={"name": "forever", "scope": "read"}),
                           201)
    eq(never["expires_at"], None, "expires_at without expires_in_days")

    cairn.psql(f"UPDATE api_tokens SET expires_at = now() - interval '1 second'"
               f" WHERE id = '{body['id']}'")
    r = refused_soon(lambda: temp.get("/v1/clusters"), "the expired token refused")
    expect.problem(r, "UNAUTHENTICATED")
    assert "expired" in r.json()["detail"], r.json()
    eq(by_id(list_tokens(cairn.api))[body["id"]]["revoked_at"], None, "expired is not revoked")

    for bad in (0, 3651, "30", 1.5):
        expect.problem(cairn.api.post("/v1/tokens", json={"name": "x", "scope": "read",
                                                          "expires_in_days": bad}),
                       "VALIDATION_FAILED", fields={"expires_in_days"})


def test_a_revocation_reaches_every_cairnd_at_once(cairn, cairnd_factory):
    """Each cairnd keeps the credentials it verified lately (no database
    round trip per request); a revocation on one cairnd -- or in the
    database itself -- is announced to all, and the next request on another
    cairnd sharing the database is refused."""
    other = cairnd_factory(cairn.database_url)
    there = harness.Api(other.url)
    for how in ("api", "database"):
        created = expect.json_ok(cairn.api.post("/v1/tokens",
                                                json={"name": f"cached-{how}", "scope": "read"}),
                                 201)
        for _ in range(20):  # verified once, then from the cache
            expect.json_ok(there.get("/v1/node-types?page_size=1", token=created["token"]))
        if how == "api":
            eq(cairn.api.delete(f"/v1/tokens/{created['id']}").status_code, 204, "DELETE")
        else:
            cairn.psql(f"UPDATE api_tokens SET revoked_at = now() WHERE id = '{created['id']}'")
        revoked = time.monotonic()
        harness.wait_until(
            lambda: there.get("/v1/node-types?page_size=1",
                              token=created["token"]).status_code == 401, 2, interval=0.001,
            what=f"the other cairnd refusing the token revoked through the {how}")
        print(f"\nrevoked through the {how}: refused by the other cairnd after "
              f"{(time.monotonic() - revoked) * 1000:.1f} ms")
