"""test_host_details.py -- which hosts run a cluster is the operator's
business: a read token sees the clusters (their nodes' endpoints and zones),
their events and operations, but no host's id or name and no event that is
only a host's, unless it was created with host_details. An admin token
always sees them. Real cairnd, agents and engines."""

import json

import clusters
import expect
from clusters import nodes
from expect import eq
from test_ha import create

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("host_details")


def token(stack, **body):
    r = stack.api.post("/v1/tokens", json={"name": "t", "scope": "read", **body})
    return expect.json_ok(r, 201)


def host_names(stack):
    return [h["name"] for h in stack.hosts().values()]


def events(api, **params):
    pages = expect.walk(api, "/v1/events", "events", 500, params)
    return [e for p in pages for e in p["events"]]


def assert_no_host(stack, what, text):
    """No host id or host name anywhere in text (a response body)."""
    assert '"host_id"' not in text and '"host_name"' not in text, f"{what} names a host: {text}"
    for hid in stack.host_ids:
        assert hid not in text, f"{what} has host id {hid}: {text}"
    for name in host_names(stack):
        assert f'"{name}"' not in text and f" {name} " not in text, \
            f"{what} names host {name}: {text}"


def test_token_says_what_it_sees(stack):
    plain = token(stack)
    eq(plain["host_details"], False, "a read token by default")
    eq(token(stack, host_details=None)["host_details"], False, "host_details null")
    eq(token(stack, host_details=True)["host_details"], True, "a read token asked to")
    eq(token(stack, scope="admin")["host_details"], True, "an admin token")
    eq(token(stack, scope="admin", host_details=True)["host_details"], True, "admin, true")
    expect.problem(stack.api.post("/v1/tokens", json={"name": "t", "scope": "admin",
                                                       "host_details": False}),
                   "VALIDATION_FAILED", ["host_details"])
    for bad in ("yes", 1, [], {}, "true"):
        expect.problem(stack.api.post("/v1/tokens", json={"name": "t", "scope": "read",
                                                           "host_details": bad}),
                       "VALIDATION_FAILED", ["host_details"])
    # The token says it of itself, and the list says it of each.
    me = expect.json_ok(stack.api.with_token(plain["token"]).get("/v1/tokens/current"))
    eq(me["host_details"], False, "/v1/tokens/current of a plain read token")
    listed = {t["id"]: t for p in expect.walk(stack.api, "/v1/tokens", "tokens", 500)
              for t in p["tokens"]}
    eq(listed[plain["id"]]["host_details"], False, "the list")


def test_read_token_sees_clusters_without_hosts(stack, cleanup):
    body, _ = create(stack, cleanup, clusters.redis_group("hd-group", replicas_per_shard=1))
    plain = stack.api.with_token(token(stack)["token"])
    seer = stack.api.with_token(token(stack, host_details=True)["token"])

    # The admin and the read token with host details see each node's host.
    want = {n["id"]: n["host_id"] for n in nodes(body)}
    assert all(h in stack.host_ids for h in want.values()), f"admin's view: {body}"
    for api, who in ((stack.api, "admin"), (seer, "host_details")):
        got = expect.json_ok(api.get("/v1/clusters/hd-group"))
        eq({n["id"]: n["host_id"] for n in nodes(got)}, want, f"{who}: nodes' hosts")

    # The plain one sees where each node is reached, and its zone, not its host.
    r = plain.get("/v1/clusters/hd-group")
    got = expect.json_ok(r)
    assert_no_host(stack, "GET /v1/clusters/{id}", r.text)
    eq({n["id"]: (n["address"], n["port"], n["az"]) for n in nodes(got)},
       {n["id"]: (n["address"], n["port"], n["az"]) for n in nodes(body)},
       "endpoints and zones")
    eq(got["endpoints"], body["endpoints"], "the cluster's endpoints")
    eq(r.headers.get("ETag"), stack.api.get("/v1/clusters/hd-group").headers.get("ETag"),
       "one ETag for both views")
    r = plain.get("/v1/clusters", params={"page_size": 500})
    expect.json_ok(r)
    assert_no_host(stack, "GET /v1/clusters", r.text)
    for path in ("/v1/operations", "/v1/events"):
        r = plain.get(path, params={"page_size": 500, "cluster_id": "hd-group"})
        expect.json_ok(r)
        assert_no_host(stack, path, r.text)


def test_read_token_sees_no_host_events(stack):
    plain = stack.api.with_token(token(stack)["token"])
    seer = stack.api.with_token(token(stack, host_details=True)["token"])

    # Every agent registered: each host has its own events, which the admin
    # and the token with host details see, the plain one does not.
    for api, who in ((stack.api, "admin"), (seer, "host_details")):
        seen = events(api)
        registered = {e["host_id"] for e in seen if e["type"] == "HostRegistered"}
        assert set(stack.host_ids) <= registered, f"{who}: HostRegistered of {registered}"
        mine = events(api, host_id=stack.host_ids[0])
        assert mine and all(e["host_id"] == stack.host_ids[0] for e in mine), \
            f"{who}: the events of one host: {mine}"
    seen = events(plain)
    assert seen, "the plain read token sees the clusters' events"
    for e in seen:
        assert e["cluster_id"] is not None, f"a host's own event shown: {e}"
        assert "host_id" not in e, f"an event with its host: {e}"
    assert_no_host(stack, "GET /v1/events", json.dumps(seen))
    # Nor can it ask for a host's events, whatever it sends as the id.
    for hid in (stack.host_ids[0], "00000000-0000-0000-0000-000000000000"):
        expect.problem(plain.get("/v1/events", params={"host_id": hid}), "FORBIDDEN")
    # A malformed one is a malformed one, for everyone.
    expect.problem(plain.get("/v1/events", params={"host_id": "%ff"}),
                   "INVALID_QUERY_PARAMETER", ["host_id"])
    # The hosts themselves stay admin-only, with or without host details.
    for api in (plain, seer):
        expect.problem(api.get("/v1/hosts"), "FORBIDDEN")
        expect.problem(api.get(f"/v1/hosts/{stack.host_ids[0]}"), "FORBIDDEN")

