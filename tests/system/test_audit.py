"""test_audit.py -- GET /v1/audit: every call that changes something or
tries to, by a caller cairnd knows -- who, what, when, from where, how it
ended -- on the REST API, the ElastiCache endpoint and agent registration;
reads, agents' syncs and unknown callers are not in it; admins only."""

import pytest
import requests

import ec_tools
import expect
from conftest import make_instance
from expect import eq
from test_agent_protocol import BOOTSTRAP, registration

ENTRY_KEYS = {"id", "time", "request_id", "caller", "remote_address", "method", "path", "action",
              "status"}


@pytest.fixture
def inst(pg, fresh_db, cairnd_factory):
    c = cairnd_factory(fresh_db.url, ["--agent-bootstrap-token", BOOTSTRAP,
                                      "--approve-bootstrap-hosts"])
    return make_instance(pg, fresh_db, c)


def token_id(token):
    return token.split("_")[1]


def entries(inst, **query):
    pages = expect.walk(inst.api, "/v1/audit", "entries", 100, params=query)
    return [e for p in pages for e in p["entries"]]


def test_mutating_calls_are_recorded_with_who_what_and_how(inst):
    admin, read = token_id(inst.admin_token), token_id(inst.read_token)
    r = inst.api.post("/v1/tokens", json={"name": "ci", "scope": "read"},
                      headers={"X-Request-Id": "audit-create-1"})
    made = expect.json_ok(r, 201)
    expect.json_ok(inst.api.get("/v1/clusters"))                 # a read: not recorded
    expect.problem(inst.read.post("/v1/tokens", json={"name": "x", "scope": "admin"}),
                   "FORBIDDEN")                                  # refused: recorded
    expect.problem(inst.anon.post("/v1/tokens", json={}), "UNAUTHENTICATED")  # unknown: not
    expect.problem(inst.api.post("/v1/clusters", json={"id": "Bad Id"}), "VALIDATION_FAILED")
    eq(inst.api.delete(f"/v1/tokens/{made['id']}").status_code, 204, "revoke")
    expect.json_ok(inst.api.get("/v1/tokens/current"))          # another read: not recorded

    got = entries(inst)
    for e in got:
        eq(set(e), ENTRY_KEYS, "entry members")
        expect.timestamp(e["time"], "time")
        eq(e["remote_address"], "127.0.0.1", "remote_address")
    eq([(e["method"], e["path"], e["status"], e["caller"]["token_id"], e["caller"]["scope"])
        for e in got],
       [("POST", "/v1/tokens", 201, admin, "admin"),
        ("POST", "/v1/tokens", 403, read, "read"),
        ("POST", "/v1/clusters", 400, admin, "admin"),
        ("DELETE", f"/v1/tokens/{made['id']}", 204, admin, "admin")], "the calls recorded")
    eq(got[0]["request_id"], "audit-create-1", "the request id sent")
    eq({e["caller"]["kind"] for e in got}, {"token"}, "caller kinds")
    assert got[0]["id"] < got[1]["id"] < got[2]["id"], got

    # Filters, and admins only.
    eq([e["status"] for e in entries(inst, token_id=read)], [403], "one token's")
    eq(entries(inst, since="2100-01-01T00:00:00Z"), [], "since the future")
    expect.problem(inst.api.get("/v1/audit", params={"token_id": "nope"}),
                   "INVALID_QUERY_PARAMETER", fields={"token_id"})
    expect.problem(inst.read.get("/v1/audit"), "FORBIDDEN")


def test_the_auth_token_read_the_elasticache_endpoint_and_registration(inst):
    admin = token_id(inst.admin_token)
    expect.problem(inst.api.get("/v1/clusters/none/auth"), "CLUSTER_NOT_FOUND")
    creds = ec_tools.credentials(inst.api)
    ec = ec_tools.boto3_client(inst.url, creds)
    from botocore.exceptions import ClientError
    ec.describe_replication_groups()                             # a read: not recorded
    with pytest.raises(ClientError):
        ec.delete_replication_group(ReplicationGroupId="none")
    r = requests.post(f"{inst.url}/v1/agent/register", json=registration(),
                      headers={"Authorization": f"Bearer {BOOTSTRAP}"}, timeout=10)
    expect.json_ok(r)

    got = entries(inst)
    eq([(e["method"], e["path"], e["action"], e["caller"]["kind"], e["caller"]["token_id"])
        for e in got],
       [("GET", "/v1/clusters/none/auth", None, "token", admin),
        ("POST", "/v1/tokens", None, "token", admin),
        ("POST", "/", "DeleteReplicationGroup", "token", creds[0]),
        ("POST", "/v1/agent/register", None, "agent_bootstrap", None)], "the calls recorded")
    assert got[2]["status"] >= 400, got[2]
    eq(got[3]["status"], 200, "registration")


def test_hostile_filters_and_a_flood_of_unknown_callers(inst):
    """Filters of bytes that are not a token id or a time are refused (400,
    whichever layer sees them first); a flood of calls without a known
    token leaves the audit log as it was."""
    for bad in ("ABCDEF012345", "0" * 11, "0" * 10000, "%00", "%ff" * 6, "0123456789a%00"):
        r = inst.api.get(f"/v1/audit?token_id={bad}")
        eq(r.status_code, 400, f"token_id={bad[:40]}: {r.text[:200]}")
    for bad in ("yesterday", "2026-13-01T00:00:00Z", "%ff", "2026-12-01T00:00:00Z%00", "9" * 5000):
        r = inst.api.get(f"/v1/audit?since={bad}")
        eq(r.status_code, 400, f"since={bad[:40]}: {r.text[:200]}")
    before = len(entries(inst))
    for _ in range(200):
        inst.anon.post("/v1/clusters", json={"id": "x"})
        inst.api.with_token("cairn_000000000000_" + "A" * 43).delete("/v1/tokens/000000000000")
    eq(len(entries(inst)), before, "entries after 400 unauthenticated calls")
