"""Reading operations and events, with rows inserted straight into PostgreSQL."""

import pytest

import expect
import harness
from expect import eq

CL_A = "aaaaaaaa-0000-4000-8000-000000000001"
CL_B = "bbbbbbbb-0000-4000-8000-000000000002"
# The uid of each cluster's life (its history carries it; no cluster row is needed).
UID = {CL_A: "0000000a-1111-4000-8000-000000000001", CL_B: "0000000b-1111-4000-8000-000000000002",
       None: None}
OP_KEYS = {"id", "cluster_id", "cluster_uid", "kind", "status", "step", "step_name", "steps",
           "progress", "error", "created_at", "started_at", "finished_at", "updated_at",
           "cancel_requested_at", "slot_migration"}
EV_KEYS = {"id", "cluster_id", "cluster_uid", "host_id", "operation_id", "type", "severity",
           "message", "detail", "created_at"}

# id, cluster, kind, status, step, step_name, progress, error, created, started, finished
OPS = [
    ("00000000-0000-4000-8000-00000000000a", CL_A, "create", "succeeded", 5, "done", 100, None,
     "2026-01-01 10:00:00.000001+00", "2026-01-01 10:00:01+00", "2026-01-01 10:05:00+00"),
    ("00000000-0000-4000-8000-00000000000b", CL_A, "scale_shards", "failed", 2, "move_slots", 40,
     '{"code": "INSUFFICIENT_CAPACITY", "message": "need 3 AZs"}',
     "2026-01-02 10:00:00.5+00", "2026-01-02 10:00:01+00", "2026-01-02 10:01:00+00"),
    ("00000000-0000-4000-8000-00000000000c", CL_B, "create", "running", 1, "place_nodes", 10, None,
     "2026-01-03 12:00:00+02", "2026-01-03 10:00:02+00", None),
    ("00000000-0000-4000-8000-00000000000d", None, "change_node_type", "pending", 0, None, 0, None,
     "2026-01-04 10:00:00+00", None, None),
    ("00000000-0000-4000-8000-00000000000e", CL_B, "failover", "cancelled", 0, None, 0, None,
     "2026-01-05 10:00:00.123456+00", None, "2026-01-05 10:00:03+00"),
]
NEWEST_FIRST = ["00000000-0000-4000-8000-00000000000e", "00000000-0000-4000-8000-00000000000d",
                "00000000-0000-4000-8000-00000000000c", "00000000-0000-4000-8000-00000000000b",
                "00000000-0000-4000-8000-00000000000a"]


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    return "'" + v.replace("'", "''") + "'"


def insert_ops(cairn):
    rows = []
    for (oid, cl, kind, state, step, step_name, progress, err, created, started,
         finished) in OPS:
        # A pending or running operation is leased to another cairnd for a
        # day: this one's runner must leave it alone.
        lease = ("'elsewhere', now() + interval '1 day'" if state in ("pending", "running")
                 else "NULL, NULL")
        rows.append(
            f"({lit(oid)}, {lit(cl)}, {lit(UID[cl])}::uuid, {lit(kind)}, {lit(state)}, {step}, "
            f"{lit(step_name)}, '{{}}'::jsonb, {progress}, {lit(err)}::jsonb, {lit(created)}, "
            f"{lit(started)}, {lit(finished)}, {lit(created)}::timestamptz + interval '1 minute',"
            f" {lease})")
    cairn.psql("INSERT INTO operations (id, cluster_id, cluster_uid, kind, status, step, step_name,"
               " context, progress, error, created_at, started_at, finished_at, updated_at,"
               " lease_owner, lease_expires_at) VALUES " + ", ".join(rows))


def insert_events(cairn):
    cairn.psql(
        "INSERT INTO events (cluster_id, cluster_uid, operation_id, type, severity, message,"
        " detail, created_at) VALUES "
        f"({lit(CL_A)}, {lit(UID[CL_A])}, {lit(OPS[0][0])}, 'ClusterCreating', 'info', 'cluster created', "
        "   '{\"shards\": 3}', '2026-02-01 08:00:00+00'),"
        f"({lit(CL_B)}, {lit(UID[CL_B])}, NULL, 'NodeDown', 'error', 'node n1 stopped answering', "
        "   '{\"node\": \"n1\"}', '2026-02-01 09:00:00.25+00'),"
        f"({lit(CL_A)}, {lit(UID[CL_A])}, NULL, 'FailoverComplete', 'warning', 'promoted replica', "
        "   '{}', '2026-02-01 10:00:00+00'),"
        "(NULL, NULL, NULL, 'HostLost', 'warning', 'host h3 lost', "
        "   '{\"host\": \"h3\", \"nested\": {\"a\": [1, 2]}}', '2026-02-01 11:00:00+00')")


@pytest.fixture(scope="module")
def ops(module_cairn):
    """A cairnd whose database holds OPS and the events of insert_events()."""
    insert_ops(module_cairn)
    insert_events(module_cairn)
    return module_cairn


@pytest.fixture(scope="module")
def events(ops):
    return ops

# --------------------------------------------------------------------------
# Operations


def test_database_operation_kinds_are_cairnds(module_cairn):
    """The CHECK of operations.kind allows the kinds of controlplane/ops/ops.c, no more."""
    eq(harness.check_values(module_cairn, "operations", "kind"),
       set(harness.cairnd_list("operation-kinds")), "CHECK of operations.kind")


def test_get_operation_exact(ops):
    body = expect.json_ok(ops.read.get(f"/v1/operations/{OPS[1][0]}"))
    eq(body, {
        "id": OPS[1][0], "cluster_id": CL_A, "cluster_uid": UID[CL_A], "kind": "scale_shards", "status": "failed",
        "step": 2, "step_name": "move_slots", "steps": [], "progress": 40,
        "error": {"code": "INSUFFICIENT_CAPACITY", "message": "need 3 AZs"},
        "created_at": "2026-01-02T10:00:00.500000Z", "started_at": "2026-01-02T10:00:01.000000Z",
        "finished_at": "2026-01-02T10:01:00.000000Z", "updated_at": "2026-01-02T10:01:00.500000Z",
        "cancel_requested_at": None, "slot_migration": None,
    }, "operation b")


def test_get_operation_with_nulls_and_utc_conversion(ops):
    body = expect.json_ok(ops.read.get(f"/v1/operations/{OPS[3][0]}"))
    eq(body, {
        "id": OPS[3][0], "cluster_id": None, "cluster_uid": None, "kind": "change_node_type", "status": "pending",
        "step": 0, "step_name": None, "steps": [], "progress": 0, "error": None,
        "created_at": "2026-01-04T10:00:00.000000Z", "started_at": None, "finished_at": None,
        "updated_at": "2026-01-04T10:01:00.000000Z",
        "cancel_requested_at": None, "slot_migration": None,
    }, "operation d")
    body = expect.json_ok(ops.read.get(f"/v1/operations/{OPS[2][0]}"))
    eq(body["created_at"], "2026-01-03T10:00:00.000000Z", "created_at given at +02:00")


def test_list_operations_newest_first(ops):
    body = expect.json_ok(ops.read.get("/v1/operations"))
    eq(set(body), {"operations"}, "list members")
    eq([o["id"] for o in body["operations"]], NEWEST_FIRST, "order")
    for o in body["operations"]:
        eq(set(o), OP_KEYS, f"members of {o['id']}")
        for k in ("created_at", "updated_at"):
            expect.timestamp(o[k], k)
        single = expect.json_ok(ops.read.get(f"/v1/operations/{o['id']}"))
        eq(o, single, f"list item vs GET {o['id']}")


@pytest.mark.parametrize("params,want", [
    ({"cluster_id": CL_A}, ["b", "a"]),
    ({"cluster_id": CL_B}, ["e", "c"]),
    ({"cluster_id": "cccccccc-0000-4000-8000-000000000003"}, []),
    ({"status": "running"}, ["c"]),
    ({"status": "succeeded"}, ["a"]),
    ({"status": "cancelled"}, ["e"]),
    ({"kind": "create"}, ["c", "a"]),
    ({"kind": "failover"}, ["e"]),
    ({"cluster_id": CL_A, "status": "failed"}, ["b"]),
    ({"cluster_uid": UID[CL_B]}, ["e", "c"]),
    ({"cluster_uid": UID[CL_B], "cluster_id": CL_A}, []),
    ({"cluster_id": CL_B, "kind": "create", "status": "running"}, ["c"]),
    ({"cluster_id": CL_B, "kind": "create", "status": "failed"}, []),
])
def test_filter_operations(ops, params, want):
    body = expect.json_ok(ops.read.get("/v1/operations", params=params))
    got = [o["id"][-1] for o in body["operations"]]
    eq(got, want, f"operations for {params}")


# Cluster ids are the names users give (lowercase letters, digits, hyphens).
@pytest.mark.parametrize("value", ["Orders", "orders_eu", "a" * 41, "caf\u00e9", "x y", ""])
def test_malformed_cluster_id_filter(ops, value):
    for path in ("/v1/operations", "/v1/events"):
        r = ops.read.get(f"{path}?cluster_id={value}")
        expect.problem(r, "INVALID_QUERY_PARAMETER", fields=["cluster_id"])


@pytest.mark.parametrize("param,value", [("status", "done"), ("status", "RUNNING"),
                                         ("status", "runnin"), ("kind", "no_such_kind")])
def test_bad_status_or_kind_filter(ops, param, value):
    expect.problem(ops.read.get("/v1/operations", params={param: value}),
                   "INVALID_QUERY_PARAMETER", fields=[param])


@pytest.mark.parametrize("oid", ["00000000-0000-4000-8000-0000000000ff", "not-a-uuid", "123",
                                 "00000000-0000-4000-8000-00000000000a-", "f" * 300],
                         ids=["unknown", "not-a-uuid", "number", "suffix", "300-chars"])
def test_unknown_or_malformed_operation_is_404(ops, oid):
    r = ops.read.get(f"/v1/operations/{oid}")
    expect.problem(r, "OPERATION_NOT_FOUND")


def test_walk_operations(ops):
    pages = expect.walk(ops.read, "/v1/operations", "operations", 2)
    eq([len(p["operations"]) for p in pages], [2, 2, 1], "page sizes")
    eq([o["id"] for p in pages for o in p["operations"]], NEWEST_FIRST, "walked order")


def test_walk_filtered_operations(ops):
    pages = expect.walk(ops.read, "/v1/operations", "operations", 1, params={"cluster_id": CL_B})
    eq([o["id"][-1] for p in pages for o in p["operations"]], ["e", "c"], "walked CL_B ops")


def test_default_page_size_is_100(cairn):
    cairn.psql("INSERT INTO operations (kind, status, step, progress, context, created_at, "
               "updated_at) SELECT 'create', 'succeeded', 0, 100, '{}', "
               "timestamptz '2026-03-01 00:00:00+00' + n * interval '1 second', now() "
               "FROM generate_series(1, 101) AS n")
    first = expect.json_ok(cairn.read.get("/v1/operations"))
    eq(len(first["operations"]), 100, "items on the default first page")
    assert "next_page_token" in first, "101 operations need a second page"
    eq(first["operations"][0]["created_at"], "2026-03-01T00:01:41.000000Z", "newest first")
    second = expect.json_ok(cairn.read.get("/v1/operations",
                                           params={"page_token": first["next_page_token"]}))
    eq(len(second["operations"]), 1, "items on the second page")
    assert "next_page_token" not in second, f"next_page_token on the last page: {second}"
    eq(second["operations"][0]["created_at"], "2026-03-01T00:00:01.000000Z", "oldest last")


# --------------------------------------------------------------------------
# Events


def test_list_events_oldest_first(events):
    body = expect.json_ok(events.api.get("/v1/events"))
    eq(set(body), {"events"}, "list members")
    evs = body["events"]
    eq([e["type"] for e in evs], ["ClusterCreating", "NodeDown", "FailoverComplete", "HostLost"],
       "event order")
    for e in evs:
        eq(set(e), EV_KEYS, f"members of event {e.get('id')}")
        assert isinstance(e["id"], str) and e["id"].isdigit(), f"event id must be a decimal string: {e['id']!r}"
    ids = [int(e["id"]) for e in evs]
    eq(ids, sorted(ids), "event ids ascend with time here")
    eq(evs[0] | {"id": None}, {
        "id": None, "cluster_id": CL_A, "cluster_uid": UID[CL_A], "host_id": None,
        "operation_id": OPS[0][0],
        "type": "ClusterCreating",
        "severity": "info", "message": "cluster created", "detail": {"shards": 3},
        "created_at": "2026-02-01T08:00:00.000000Z"}, "first event")
    eq(evs[1]["created_at"], "2026-02-01T09:00:00.250000Z", "second event time")
    eq((evs[1]["operation_id"], evs[1]["severity"]), (None, "error"), "second event")
    eq(evs[2]["detail"], {}, "empty detail")
    eq((evs[3]["cluster_id"], evs[3]["detail"]), (None, {"host": "h3", "nested": {"a": [1, 2]}}),
       "fourth event")


def test_read_token_sees_no_host(events):
    """A read token (created without host_details) sees the clusters'
    events without host_id, and not the host's own."""
    evs = expect.json_ok(events.read.get("/v1/events"))["events"]
    eq([e["type"] for e in evs], ["ClusterCreating", "NodeDown", "FailoverComplete"], "events")
    for e in evs:
        eq(set(e), EV_KEYS - {"host_id"}, f"members of event {e['id']}")
    eq(evs[0]["detail"], {"shards": 3}, "detail")


@pytest.mark.parametrize("params,want", [
    ({"cluster_id": CL_A}, ["ClusterCreating", "FailoverComplete"]),
    ({"cluster_id": CL_B}, ["NodeDown"]),
    ({"cluster_id": "cccccccc-0000-4000-8000-000000000003"}, []),
    ({"since": "2026-02-01T08:30:00Z"}, ["NodeDown", "FailoverComplete", "HostLost"]),
    ({"since": "2026-02-01T09:30:00.000000Z"}, ["FailoverComplete", "HostLost"]),
    ({"since": "2026-02-01T11:30:00+02:00"}, ["FailoverComplete", "HostLost"]),
    ({"since": "2026-02-01T12:00:00Z"}, []),
    ({"since": "2020-01-01T00:00:00Z"}, ["ClusterCreating", "NodeDown", "FailoverComplete", "HostLost"]),
    ({"cluster_id": CL_A, "since": "2026-02-01T08:30:00Z"}, ["FailoverComplete"]),
    ({"cluster_uid": UID[CL_A]}, ["ClusterCreating", "FailoverComplete"]),
])
def test_filter_events(events, params, want):
    body = expect.json_ok(events.api.get("/v1/events", params=params))
    eq([e["type"] for e in body["events"]], want, f"events for {params}")


@pytest.mark.parametrize("since", ["yesterday", "2026-02-01", "2026-13-01T00:00:00Z",
                                   "2026-02-01T25:00:00Z", "1700000000", "2026-02-01T08:00:00Zjunk"])
def test_bad_since(events, since):
    expect.problem(events.api.get("/v1/events", params={"since": since}),
                   "INVALID_QUERY_PARAMETER", fields=["since"])


def test_walk_events(events):
    everything = expect.json_ok(events.api.get("/v1/events"))["events"]
    pages = expect.walk(events.api, "/v1/events", "events", 3)
    eq([len(p["events"]) for p in pages], [3, 1], "page sizes")
    eq([e for p in pages for e in p["events"]], everything, "walked events")


def test_operations_token_is_rejected_by_events(ops):
    op_token = expect.json_ok(ops.read.get("/v1/operations", params={"page_size": 1}))[
        "next_page_token"]
    ev_token = expect.json_ok(ops.read.get("/v1/events", params={"page_size": 1}))[
        "next_page_token"]
    expect.problem(ops.read.get("/v1/events", params={"page_token": op_token}), "INVALID_PAGE_TOKEN")
    expect.problem(ops.read.get("/v1/operations", params={"page_token": ev_token}),
                   "INVALID_PAGE_TOKEN")


# --------------------------------------------------------------------------
# A cluster id used again


def test_a_reused_cluster_id_has_a_history_of_its_own(cairn):
    """Events filtered by cluster id used to list an earlier, deleted cluster of
    the same name: each cluster now has a uid its operations and events carry."""
    def life(kind):
        cairn.psql("INSERT INTO clusters (id, spec) VALUES ('reuse', '{}')")
        uid = cairn.psql("SELECT uid FROM clusters WHERE id = 'reuse'").strip()
        op = cairn.psql("INSERT INTO operations (cluster_id, kind, status) VALUES"
                        f" ('reuse', '{kind}', 'succeeded') RETURNING id").strip()
        cairn.psql("INSERT INTO events (cluster_id, operation_id, type, message) VALUES"
                   f" ('reuse', '{op}', 'ClusterCreating', 'creating')")
        return uid, op

    def events(**params):
        body = expect.json_ok(cairn.api.get("/v1/events", params=params))
        return [(e["type"], e["cluster_uid"]) for e in body["events"]]

    def operations(**params):
        body = expect.json_ok(cairn.read.get("/v1/operations", params=params))
        return [(o["id"], o["cluster_uid"]) for o in body["operations"]]

    first, first_op = life("create")
    eq(expect.json_ok(cairn.read.get("/v1/clusters/reuse"))["uid"], first, "the cluster's uid")
    cairn.psql("DELETE FROM clusters WHERE id = 'reuse'")
    # The deletion's last event is written once the cluster's row is gone.
    cairn.psql("INSERT INTO events (cluster_id, operation_id, type, message) VALUES"
               f" ('reuse', '{first_op}', 'ClusterDeleted', 'deleted')")
    first_history = [("ClusterCreating", first), ("ClusterDeleted", first)]
    eq(events(cluster_id="reuse"), first_history, "a deleted cluster's history, by its id")

    second, second_op = life("failover")
    assert second != first
    eq(expect.json_ok(cairn.read.get("/v1/clusters/reuse"))["uid"], second, "the new uid")
    eq(events(cluster_id="reuse"), [("ClusterCreating", second)], "the new cluster's events")
    eq(events(cluster_uid=first), first_history, "the first cluster's events, by its uid")
    eq(operations(cluster_id="reuse"), [(second_op, second)], "the new cluster's operations")
    eq(operations(cluster_uid=first), [(first_op, first)], "the first cluster's operations")
    expect.problem(cairn.api.get("/v1/events", params={"cluster_uid": "reuse"}),
                   "INVALID_QUERY_PARAMETER", fields=["cluster_uid"])
