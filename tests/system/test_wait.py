"""test_wait.py -- Prefer: wait (RFC 7240) and ?wait= on the cluster writes, as generic
Terraform HTTP providers use them, over real HTTP against cairnd, three agents and real
engines.

A write that starts an operation and asks to wait answers when the operation has ended: 201
with the available cluster for a create, 200 with the cluster for a change or a failover, 204
for a delete, or the operation's problem document when it failed. When the wait runs out
first the answer is 202 as without one, with Location and an integer Retry-After. An answer
that honoured a wait says Preference-Applied. cairnd runs with one worker here, so a request
parked while it waits must hold no thread: other requests are answered meanwhile.

And the rules those providers need to see no drift: every field comes back as sent or
defaulted, a PUT of the same spec runs nothing and answers 200, a PUT of another engine runs
the in-place upgrade, a field that can never change is refused by name, and DELETE of a
missing cluster and GET of a deleted one are 404.
"""

import contextlib
import signal
import threading
import time

import clusters
import expect
from clusters import SPEC_FIELDS, get, nodes, operations, wait_available, wait_until
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "wait", cairnd_args=["--http-threads", "1"])

WAIT_S = 60          # what the tests ask for
CLIENT_S = 150       # the HTTP client's own timeout: longer than any wait here
MAX_WAIT_S = 300     # cairnd's --max-wait default


def group(cid, **over):
    """A redis 7.0 group of a primary and a replica, as a Terraform body would send it: the
    required fields and a few more, the rest left to their defaults."""
    body = {"id": cid, "engine": "redis", "engine_version": "7.0",
            "node_type": "cache.t3.micro", "cluster_mode": "disabled",
            "replicas_per_shard": 1, "tags": {"managed-by": "terraform"}}
    body.update(over)
    return body


def prefer(seconds):
    return {"Prefer": f"wait={seconds}"}


def call(stack, method, path, **kw):
    """A request with a client timeout longer than any wait."""
    return stack.api.request(method, path, timeout=CLIENT_S, **kw)


def applied(r, seconds):
    eq(r.headers.get("Preference-Applied"), f"wait={seconds}", "Preference-Applied")


def accepted(r, location):
    """A 202: Location as given, an integer Retry-After; the body decoded."""
    body = expect.json_ok(r, 202)
    eq(r.headers.get("Location"), location, "Location")
    retry = r.headers.get("Retry-After", "")
    assert retry.isdigit() and int(retry) >= 1, f"Retry-After must be whole seconds: {retry!r}"
    return body


def operation(api, op_id):
    return expect.json_ok(api.get(f"/v1/operations/{op_id}"))


def wait_operation(api, op_id, timeout=120):
    return wait_until(lambda: (lambda o: o if o["status"] in ("succeeded", "failed") else None)(
        operation(api, op_id)), timeout, f"operation {op_id} ended", interval=0.2)


def spec_of(body):
    return {k: body[k] for k in SPEC_FIELDS}


@contextlib.contextmanager
def agents_frozen(stack):
    """Every agent stopped (SIGSTOP) for the block, well under the heartbeat timeout: an
    operation that needs the engines to start or stop waits for them meanwhile."""
    for a in stack.agents:
        a.signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for a in stack.agents:
            a.signal(signal.SIGCONT)


def test_bad_waits_and_missing_clusters(stack):
    """?wait= that is not whole seconds is refused before anything is done; an unparseable
    Prefer is ignored, not refused; DELETE of a cluster that never was is 404, waiting or not."""
    for bad in ("soon", "-1", "", "1.5", "0x10"):
        expect.problem(call(stack, "POST", "/v1/clusters", params={"wait": bad},
                            json=group("never")),
                       "INVALID_QUERY_PARAMETER", fields=["wait"])
    eq(get(stack.api, "never"), None, "nothing was created")
    expect.problem(call(stack, "GET", "/v1/clusters", params={"wait": "5"}),
                   "INVALID_QUERY_PARAMETER", fields=["wait"])
    # A bad header is no reason to refuse: the body's own problem answers.
    expect.problem(call(stack, "POST", "/v1/clusters", headers={"Prefer": "wait=5 6, }{"},
                           json=group("never", num_shards=0)),
                   "VALIDATION_FAILED", fields=["num_shards"])
    for how in ({"headers": prefer(5)}, {"params": {"wait": "5"}}, {}):
        expect.problem(call(stack, "DELETE", "/v1/clusters/never", **how), "CLUSTER_NOT_FOUND")


def test_failed_create_answers_its_problem(stack, cleanup):
    """A create whose host is lost before the engines start fails with HOST_LOST: the waiting
    POST answers the operation's problem. Deleting the failed cluster with a wait answers 204
    once it is gone, and GET is 404 after. No other cluster lives meanwhile: a lost host
    would move their primaries."""
    cid = "w-doomed"
    cleanup.append(cid)
    frozen = stack.agents[0]
    frozen.signal(signal.SIGSTOP)
    try:
        r = call(stack, "POST", "/v1/clusters", headers=prefer(WAIT_S),
             json=group(cid, replicas_per_shard=2))  # a node on every host
    finally:
        frozen.signal(signal.SIGCONT)
    problem = expect.problem(r, "OPERATION_FAILED", extra={"operation"})
    applied(r, WAIT_S)
    op = problem["operation"]
    eq((op["kind"], op["status"], op["error"]["code"]), ("create", "failed", "HOST_LOST"),
       "the operation in the problem")
    assert op["id"] in problem["detail"] and op["error"]["message"] in problem["detail"], problem
    eq(get(stack.api, cid)["status"], "create-failed", "the cluster after")
    wait_until(lambda: stack.host(stack.host_ids[0])["status"] == "healthy", 30,
               "the frozen host healthy again")

    start = time.monotonic()
    r = call(stack, "DELETE", f"/v1/clusters/{cid}", params={"wait": str(WAIT_S)})
    eq(r.status_code, 204, f"DELETE with a wait: {expect.describe(r)}")
    eq(r.content, b"", "a 204 has no body")
    applied(r, WAIT_S)
    print(f"\nDELETE with a wait answered in {time.monotonic() - start:.2f} s")
    expect.problem(stack.api.get(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")
    expect.problem(call(stack, "DELETE", f"/v1/clusters/{cid}", headers=prefer(WAIT_S)),
                   "CLUSTER_NOT_FOUND")


def _create_parked_while_others_are_served(stack, body):
    """POST body with a wait that cairnd caps, in a thread, the agents frozen for 2 s so that
    the create cannot end meanwhile; GET the cluster list over and over all the while. cairnd
    runs one worker: a parked POST holding it would stall every GET until the create is done.
    Returns the POST's answer and how long each GET answered while it was parked took."""
    api = stack.api.with_token(stack.api.token)
    out = {}

    def create():
        out["r"] = api.request("POST", "/v1/clusters", headers=prefer(100000), json=body,
                               timeout=CLIENT_S)

    served = []
    with agents_frozen(stack):
        t = threading.Thread(target=create)
        t.start()
        try:
            wait_until(lambda: get(stack.api, body["id"]) is not None, 10, "the cluster stored")
            until = time.monotonic() + 2
            while time.monotonic() < until:
                began = time.monotonic()
                r = stack.api.get("/v1/clusters", timeout=5)
                served.append(time.monotonic() - began)
                eq(r.status_code, 200, "GET while a POST waits")
                assert t.is_alive(), f"the POST answered while no engine could start: {out}"
                time.sleep(0.05)
        except BaseException:
            t.join(CLIENT_S)
            raise
    t.join(CLIENT_S)
    return out["r"], served


def test_create_waits_and_nothing_drifts(stack, cleanup):
    """The provider's whole life of a cluster: create and wait, read back with no drift, apply
    the same spec (nothing runs), refuse what can never change, change parameters and fail
    over with a wait, upgrade the engine in place with a PUT, delete and wait."""
    cid = "w-tf"
    cleanup.append(cid)
    sent = group(cid)

    r, served = _create_parked_while_others_are_served(stack, sent)
    created = expect.json_ok(r, 201)
    eq(r.headers.get("Location"), f"/v1/clusters/{cid}", "Location")
    applied(r, MAX_WAIT_S)
    etag = r.headers.get("ETag")
    eq((created["status"], created["current_operation"]), ("available", None), "created")
    assert len(served) >= 5 and max(served) < 1, f"GETs while the POST was parked took {served}"
    print(f"\n{len(served)} GETs answered while the POST was parked; slowest "
          f"{max(served) * 1000:.0f} ms")

    # Every field as sent or defaulted, in the answer and in GET.
    for k, v in sent.items():
        eq(created[k], v, f"{k} as sent")
    eq({k: created[k] for k in ("description", "num_shards", "automatic_failover", "multi_az",
                                "maintenance_window", "parameters")},
       {"description": "", "num_shards": 1, "automatic_failover": True, "multi_az": True,
        "maintenance_window": "sun:05:00-sun:06:00", "parameters": {}}, "the defaults")
    read = get(stack.api, cid)
    eq(spec_of(read), spec_of(created), "GET shows the spec the POST answered")
    ops_before = len(operations(stack.api, cid))

    # The same spec again, as sent and in full: nothing runs, nothing changes, no wait applies.
    for body in (sent, spec_of(read)):
        r = call(stack, "PUT", f"/v1/clusters/{cid}", headers=prefer(WAIT_S), json=body)
        same = expect.json_ok(r, 200)
        eq(r.headers.get("ETag"), etag, "the generation is unchanged")
        assert "Preference-Applied" not in r.headers, r.headers
        eq(spec_of(same), spec_of(read), "the spec")
    eq(len(operations(stack.api, cid)), ops_before, "no operation ran")

    # What can never change is refused by name.
    expect.problem(call(stack, "PUT", f"/v1/clusters/{cid}", headers=prefer(WAIT_S),
                           json=dict(sent, cluster_mode="enabled")),
                   "VALIDATION_FAILED", fields=["cluster_mode"])
    expect.problem(call(stack, "PATCH", f"/v1/clusters/{cid}",
                        json={"cluster_mode": "enabled"}),
                   "VALIDATION_FAILED", fields=["cluster_mode"])

    # Parameters run an operation: waited for, 200 once applied.
    r = call(stack, "PATCH", f"/v1/clusters/{cid}", params={"wait": str(WAIT_S)},
                json={"parameters": {"maxmemory-policy": "allkeys-lru"}})
    patched = expect.json_ok(r, 200)
    applied(r, WAIT_S)
    eq((patched["status"], patched["parameters"]),
       ("available", {"maxmemory-policy": "allkeys-lru"}), "after the parameters")
    kinds = [(o["kind"], o["status"]) for o in operations(stack.api, cid)]
    eq(kinds[0], ("apply_parameters", "succeeded"), "the newest operation")

    # A wait of 0 answers at once: 202 with the operation to follow -- or,
    # when the operation (a CONFIG SET on two engines) ended before the
    # answer was made, 200, the wait of 0 honoured all the same.
    r = call(stack, "PATCH", f"/v1/clusters/{cid}", headers=prefer(0),
                json={"parameters": {"maxmemory-policy": "volatile-lru"}})
    op_id = operations(stack.api, cid)[0]["id"]
    if r.status_code == 200:
        eq(expect.json_ok(r)["current_operation"], None, "the operation already ended")
    else:
        accepted(r, f"/v1/operations/{op_id}")
    applied(r, 0)
    eq(wait_operation(stack.api, op_id)["status"], "succeeded", "the second parameters change")
    # An unparseable Prefer is ignored: the answer is today's, the cluster as changed.
    r = call(stack, "PATCH", f"/v1/clusters/{cid}", headers={"Prefer": "wait=5 6"},
                json={"parameters": {"maxmemory-policy": "allkeys-lru"}})
    expect.json_ok(r, 200)
    assert "Preference-Applied" not in r.headers and "Location" not in r.headers, r.headers
    wait_available(stack.api, cid)

    # A failover, waited for: 200 with the cluster, its primary moved.
    before = wait_until(lambda: (lambda b: b if all(
        n["status"] == "running" for n in nodes(b)) and b["endpoints"]["readers"] else None)(
        get(stack.api, cid)), 30, "the replica linked and in sync")
    r = call(stack, "POST", f"/v1/clusters/{cid}/failover", headers=prefer(WAIT_S), json={})
    after = expect.json_ok(r, 200)
    applied(r, WAIT_S)
    assert after["endpoints"]["primary"] not in (None, before["endpoints"]["primary"]), \
        f"the primary did not move: {before['endpoints']} -> {after['endpoints']}"
    eq(operations(stack.api, cid)[0]["kind"], "failover", "the newest operation")

    # A PUT of another engine upgrades in place, and answers once it has.
    wait_until(lambda: get(stack.api, cid)["endpoints"]["readers"], 30, "a reader again")
    current = spec_of(get(stack.api, cid))  # its parameters too: one change at a time
    r = call(stack, "PUT", f"/v1/clusters/{cid}", headers=prefer(120),
             json=dict(current, engine="valkey", engine_version="8.0"))
    upgraded = expect.json_ok(r, 200)
    applied(r, 120)
    eq((upgraded["engine"], upgraded["engine_version"], upgraded["engine_version_actual"],
        upgraded["status"]), ("valkey", "8.0", "8.0.1", "available"), "after the upgrade")
    eq(operations(stack.api, cid)[0]["kind"], "upgrade_engine", "the newest operation")

    r = call(stack, "DELETE", f"/v1/clusters/{cid}", headers=prefer(WAIT_S))
    eq(r.status_code, 204, f"DELETE with a wait: {expect.describe(r)}")
    expect.problem(stack.api.get(f"/v1/clusters/{cid}"), "CLUSTER_NOT_FOUND")


def test_a_wait_that_runs_out_answers_202(stack, cleanup):
    """A wait shorter than the create answers 202 once it is over: the cluster still
    creating, Location (the cluster, a create's status monitor), Retry-After. ?wait= wins over
    Prefer. Without a wait the answer is 202 at once, as it always was."""
    cid = "w-short"
    cleanup.append(cid)
    with agents_frozen(stack):  # so that the create cannot end within the second
        start = time.monotonic()
        r = call(stack, "POST", "/v1/clusters", params={"wait": "1"}, headers=prefer(WAIT_S),
                 json=group(cid))
        took = time.monotonic() - start
    body = accepted(r, f"/v1/clusters/{cid}")
    applied(r, 1)
    eq(body["status"], "creating", "status")
    assert 0.9 <= took < 10, f"the 202 came after {took:.2f} s, not after the 1 s asked"
    wait_available(stack.api, cid)

    r = call(stack, "PATCH", f"/v1/clusters/{cid}",
                json={"parameters": {"maxmemory-policy": "allkeys-lru"}})
    expect.json_ok(r, 200)  # no wait asked: the cluster, its operation under way
    assert "Preference-Applied" not in r.headers, r.headers
    wait_available(stack.api, cid)
    r = call(stack, "DELETE", f"/v1/clusters/{cid}")
    op_id = operations(stack.api, cid)[0]["id"]
    eq(accepted(r, f"/v1/operations/{op_id}")["status"], "deleting", "status")
    assert "Preference-Applied" not in r.headers, r.headers
    clusters.wait_gone(stack.api, cid)
