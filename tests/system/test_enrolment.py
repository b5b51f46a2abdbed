"""test_enrolment.py -- agents are enrolled, not trusted: a host registered
with the shared bootstrap token waits for an admin's approval; a join token
pre-authorises one host by name, once, for a while; a name that is
registered is given to a new agent only with a join token for it; a host
without nodes can be forgotten. Driven over HTTP as cairn-agent registers
(test_agent.py drives a real agent through the rebuilt-VM case).
"""

import re

import pytest

import agents as agents_mod
import expect
from expect import eq
from test_agent_protocol import BOOTSTRAP, registration, sync

JOIN_RE = re.compile(r"^cairn_join_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")


@pytest.fixture
def enrol(pg, fresh_db, cairnd_factory):
    """cairnd with a bootstrap token whose hosts wait for approval."""
    c = cairnd_factory(fresh_db.url, ["--agent-bootstrap-token", BOOTSTRAP,
                                      "--heartbeat-timeout", "3"])
    from conftest import make_instance
    return make_instance(pg, fresh_db, c)


def register_with(inst, token, **kw):
    return inst.anon.post("/v1/agent/register", json=registration(**kw),
                          headers={"Authorization": f"Bearer {token}"})


def join_token(inst, name, **kw):
    body = expect.json_ok(inst.api.post("/v1/host-join-tokens",
                                        json={"host_name": name, **kw}), 201)
    assert JOIN_RE.match(body["token"]), body
    return body


def events(inst, host_id):
    body = expect.json_ok(inst.api.get(f"/v1/events?host_id={host_id}"))
    return [(e["type"], e["severity"]) for e in body["events"]]


def host(inst, host_id):
    return expect.json_ok(inst.api.get(f"/v1/hosts/{host_id}"))


def test_a_bootstrap_host_waits_for_approval(enrol):
    reg = expect.json_ok(register_with(enrol, BOOTSTRAP))
    eq(reg["status"], "pending", "status of a new host")
    hid = reg["host_id"]
    eq((host(enrol, hid)["status"], host(enrol, hid)["approved_at"]), ("pending", None),
       "the host before approval")
    listed = expect.json_ok(enrol.api.get("/v1/hosts?status=pending"))["hosts"]
    eq([h["id"] for h in listed], [hid], "GET /v1/hosts?status=pending")
    eq(events(enrol, hid), [("HostRegistered", "warning")], "events")
    # It syncs (a heartbeat), and is handed nothing.
    desired = expect.json_ok(sync(enrol, reg["credential"]))
    eq(desired["nodes"], [], "the desired set of a pending host")
    eq(host(enrol, hid)["status"], "pending", "a heartbeat does not approve")

    # Nothing is placed on it: the only host is pending.
    r = enrol.api.post("/v1/clusters", json={"id": "on-pending", "engine": "valkey",
                                             "engine_version": "8.0",
                                             "node_type": "cache.t3.micro"})
    p = expect.problem(r, "INSUFFICIENT_CAPACITY")
    assert "eligible hosts can take 0" in p["detail"], p

    expect.problem(enrol.read.post(f"/v1/hosts/{hid}/approve"), "FORBIDDEN")
    approved = expect.json_ok(enrol.api.post(f"/v1/hosts/{hid}/approve"))
    eq(approved["status"], "healthy", "status once approved")
    assert approved["approved_at"], approved
    eq(events(enrol, hid), [("HostRegistered", "warning"), ("HostApproved", "info")], "events")
    expect.problem(enrol.api.post(f"/v1/hosts/{hid}/approve"), "HOST_NOT_PENDING")
    expect.problem(enrol.api.post("/v1/hosts/00000000-0000-4000-8000-000000000000/approve"),
                   "HOST_NOT_FOUND")
    expect.problem(enrol.api.post("/v1/hosts/not-a-uuid/approve"), "HOST_NOT_FOUND")


def test_a_registered_name_is_refused_to_another_agent(enrol):
    first = expect.json_ok(register_with(enrol, BOOTSTRAP))
    for body in (dict(), dict(az="az-b", ports=(7100, 7199))):
        r = register_with(enrol, BOOTSTRAP, **body)
        p = expect.problem(r, "HOST_NAME_TAKEN")
        assert "join token" in p["detail"], p
    expect.json_ok(sync(enrol, first["credential"]))
    eq(host(enrol, first["host_id"])["az"], "az-a", "the host unchanged")
    eq(events(enrol, first["host_id"]), [("HostRegistered", "warning")], "events")


def test_a_join_token_opens_one_registration_of_its_name(enrol):
    made = join_token(enrol, "vm-j1")
    eq((made["host_name"], made["status"], made["used_at"], made["host_id"]),
       ("vm-j1", "active", None, None), "a new join token")
    # Another name: refused, and the token is not spent.
    p = expect.problem(register_with(enrol, made["token"], name="vm-other"), "FORBIDDEN")
    assert "another host name" in p["detail"], p
    reg = expect.json_ok(register_with(enrol, made["token"], name="vm-j1"))
    eq(reg["status"], "healthy", "a pre-authorised host needs no approval")
    eq(events(enrol, reg["host_id"]), [("HostRegistered", "info")], "events")
    # Spent: it opens nothing more, for this name or any.
    expect.problem(register_with(enrol, made["token"], name="vm-j1"), "UNAUTHENTICATED")
    listed = expect.json_ok(enrol.api.get("/v1/host-join-tokens"))["join_tokens"]
    eq([(t["id"], t["status"], t["host_id"]) for t in listed],
       [(made["id"], "used", reg["host_id"])], "GET /v1/host-join-tokens")
    assert all("token" not in t for t in listed), "the secret is shown once"
    expect.problem(enrol.read.get("/v1/host-join-tokens"), "FORBIDDEN")
    expect.problem(enrol.api.delete(f"/v1/host-join-tokens/{made['id']}"),
                   "JOIN_TOKEN_NOT_FOUND")


def test_a_join_token_gives_a_registered_name_to_a_new_agent(enrol):
    first = expect.json_ok(register_with(enrol, BOOTSTRAP, name="vm-t"))
    made = join_token(enrol, "vm-t")
    second = expect.json_ok(register_with(enrol, made["token"], name="vm-t", az="az-b"))
    eq(second["host_id"], first["host_id"], "the host id kept")
    eq(second["status"], "healthy", "approved by the join token")
    expect.problem(sync(enrol, first["credential"]), "UNAUTHENTICATED")
    expect.json_ok(sync(enrol, second["credential"]))
    eq(host(enrol, first["host_id"])["az"], "az-b", "the host's AZ updated")
    eq([t for t, _ in events(enrol, first["host_id"])], ["HostRegistered", "HostReregistered"],
       "events")
    entries = expect.json_ok(enrol.api.get("/v1/audit"))["entries"]
    eq([(e["caller"]["kind"], e["caller"]["token_id"], e["status"]) for e in entries
        if e["path"] == "/v1/agent/register"],
       [("agent_bootstrap", None, 200), ("host_join_token", made["id"], 200)],
       "registrations in the audit log")


def test_join_tokens_expire_and_can_be_revoked(enrol):
    expired = join_token(enrol, "vm-e", expires_in_minutes=1)
    agents_mod.write(enrol, "UPDATE host_join_tokens SET expires_at = now() - interval '1 second'"
                            f" WHERE id = '{expired['id']}'")
    expect.problem(register_with(enrol, expired["token"], name="vm-e"), "UNAUTHENTICATED")
    revoked = join_token(enrol, "vm-r")
    r = enrol.api.delete(f"/v1/host-join-tokens/{revoked['id']}")
    assert r.status_code == 204, expect.describe(r)
    expect.problem(register_with(enrol, revoked["token"], name="vm-r"), "UNAUTHENTICATED")
    statuses = {t["id"]: t["status"] for t in
                expect.json_ok(enrol.api.get("/v1/host-join-tokens"))["join_tokens"]}
    eq(statuses, {expired["id"]: "expired"}, "the tokens listed")


@pytest.mark.parametrize("body,fields", [
    ({}, {"host_name"}),
    ({"host_name": "has space"}, {"host_name"}),
    ({"host_name": "x" * 64}, {"host_name"}),
    ({"host_name": "vm", "expires_in_minutes": 0}, {"expires_in_minutes"}),
    ({"host_name": "vm", "expires_in_minutes": 10081}, {"expires_in_minutes"}),
    ({"host_name": "vm", "colour": "blue"}, {"colour"}),
])
def test_join_token_validation(enrol, body, fields):
    expect.problem(enrol.api.post("/v1/host-join-tokens", json=body), "VALIDATION_FAILED",
                   fields=fields)


def test_join_tokens_register_without_a_bootstrap_token(cairn):
    expect.problem(register_with(cairn, BOOTSTRAP), "FORBIDDEN")
    made = join_token(cairn, "vm-a1")
    reg = expect.json_ok(register_with(cairn, made["token"]))
    eq(reg["status"], "healthy", "status")
    # Shaped like a join token but unknown: 401, not the 403 of a missing
    # bootstrap token.
    forged = made["token"][:-4] + ("AAAA" if not made["token"].endswith("AAAA") else "BBBB")
    expect.problem(register_with(cairn, forged, name="vm-a2"), "UNAUTHENTICATED")


def test_a_host_without_nodes_can_be_forgotten(enrol):
    idle = expect.json_ok(register_with(enrol, BOOTSTRAP, name="vm-idle"))
    busy = expect.json_ok(register_with(enrol, BOOTSTRAP, name="vm-busy", ports=(7100, 7199)))
    expect.json_ok(enrol.api.post(f"/v1/hosts/{busy['host_id']}/approve"))
    agents_mod.add_node(enrol, busy["host_id"], agents_mod.add_cluster(enrol))
    expect.problem(enrol.api.delete(f"/v1/hosts/{busy['host_id']}"), "HOST_IN_USE")
    expect.problem(enrol.read.delete(f"/v1/hosts/{idle['host_id']}"), "FORBIDDEN")
    r = enrol.api.delete(f"/v1/hosts/{idle['host_id']}")
    assert r.status_code == 204, expect.describe(r)
    expect.problem(enrol.api.get(f"/v1/hosts/{idle['host_id']}"), "HOST_NOT_FOUND")
    expect.problem(sync(enrol, idle["credential"]), "UNAUTHENTICATED")
    eq([t for t, _ in events(enrol, idle["host_id"])], ["HostRegistered", "HostDeleted"],
       "events of the forgotten host")
    expect.problem(enrol.api.delete(f"/v1/hosts/{idle['host_id']}"), "HOST_NOT_FOUND")
    # Its name is free again (for approval, as any new host).
    eq(expect.json_ok(register_with(enrol, BOOTSTRAP, name="vm-idle"))["status"], "pending",
       "the name registered anew")


def test_a_flood_of_bootstrap_registrations_is_capped(enrol):
    for i in range(100):
        expect.json_ok(register_with(enrol, BOOTSTRAP, name=f"flood-{i}"))
    p = expect.problem(register_with(enrol, BOOTSTRAP, name="flood-100"), "TOO_MANY_PENDING_HOSTS")
    assert "100 hosts wait for approval" in p["detail"], p
    # A join token still opens its host's registration.
    made = join_token(enrol, "vm-wanted")
    expect.json_ok(register_with(enrol, made["token"], name="vm-wanted"))


def test_hostile_join_tokens_and_bodies(enrol):
    """Shapes near a join token, bytes that are not UTF-8, NULs and huge
    lengths: each refused plainly, nothing registered, cairnd unharmed."""
    made = join_token(enrol, "vm-h")
    near = [made["token"][:-1], made["token"] + "A",
            made["token"].replace("cairn_join_", "cairn_joim_"),
            "cairn_join_" + "0" * 12 + "_" + "A" * 43, "cairn_join_" + "g" * 12 + "_" + "A" * 43,
            "cairn_join_" + "A" * 4000]
    for token in near:
        expect.problem(register_with(enrol, token, name="vm-h"), "UNAUTHENTICATED")
    # Past what cairnd reads of a request's headers: refused before any parsing.
    r = register_with(enrol, "cairn_join_" + "A" * 100_000, name="vm-h")
    eq(r.status_code, 431, "a 100 kB Authorization header")
    for raw in (b"Bearer cairn_join_\xff\xfe" + b"0" * 60, b"Bearer " + made["token"].encode()[:-2]
                + b"\xc3\x28"):
        r = enrol.anon.post("/v1/agent/register", json=registration(name="vm-h"),
                            headers={"Authorization": raw})
        assert r.status_code in (400, 401), expect.describe(r)
    for body in (b'{"host_name": "vm\\u0000x"}', b'{"host_name": "vm-\xff"}',
                 b'{"host_name": "' + b"a" * 1_000_000 + b'"}'):
        r = enrol.api.post("/v1/host-join-tokens", data=body,
                           headers={"Content-Type": "application/json"})
        assert r.status_code in (400, 413), expect.describe(r)
    # The token survived all of it, and registers its host.
    eq(expect.json_ok(register_with(enrol, made["token"], name="vm-h"))["status"], "healthy",
       "the join token after the hostile calls")
    names = [h["name"] for h in expect.json_ok(enrol.api.get("/v1/hosts"))["hosts"]]
    eq(names, ["vm-h"], "hosts registered")
