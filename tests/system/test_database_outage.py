"""PostgreSQL going away under a running cairnd, and coming back."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import expect
import harness
from expect import eq

QUICK = 5.0  # no answer may take longer than this while the database is down


def timed(fn):
    t0 = time.monotonic()
    r = fn()
    return r, time.monotonic() - t0


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_outage_then_recovery(private_pg, cairnd_factory, mode):
    db = private_pg.create_database("outage")
    url = private_pg.url(db)
    c = cairnd_factory(url)
    admin = harness.create_token(url, "outage-admin", "admin")
    api = harness.Api(c.url, admin, timeout=QUICK + 5)
    anon = harness.Api(c.url, None, timeout=QUICK + 5)
    expect.json_ok(api.get("/v1/operations"))
    eq(expect.json_ok(anon.get("/readyz"))["status"], "ready", "readyz before the outage")
    pid = c.pid

    private_pg.stop(mode)

    # /readyz turns to 503 NOT_READY quickly, and every answer on the way is 200 or 503.
    def not_ready():
        r, took = timed(lambda: anon.get("/readyz"))
        assert took < QUICK, f"/readyz took {took:.1f}s with the database down"
        assert r.status_code in (200, 503), f"/readyz during outage: {expect.describe(r)}"
        return [r] if r.status_code == 503 else None  # a 503 Response is falsy

    expect.problem(harness.wait_until(not_ready, QUICK, what="/readyz 503")[0], "NOT_READY")

    # Liveness does not depend on the database.
    eq(expect.json_ok(anon.get("/healthz")), {"status": "ok"}, "healthz during outage")

    # Every /v1 request answers 503 DATABASE_UNAVAILABLE, promptly, even many at once.
    calls = [lambda: api.get("/v1/operations"), lambda: api.get("/v1/node-types"),
             lambda: api.get("/v1/events"), lambda: api.get("/v1/tokens"),
             lambda: api.post("/v1/tokens", json={"name": "during", "scope": "read"})]
    for call in calls:
        r, took = timed(call)
        assert took < QUICK, f"request took {took:.1f}s with the database down: {expect.describe(r)}"
        expect.problem(r, "DATABASE_UNAVAILABLE")
    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(lambda i: timed(calls[i % len(calls)]), range(24)))
    for r, took in results:
        assert took < QUICK, f"concurrent request took {took:.1f}s: {expect.describe(r)}"
        expect.problem(r, "DATABASE_UNAVAILABLE")
    assert c.proc.alive(), f"cairnd died during the outage:\n{harness.tail(c.log_path)}"

    private_pg.start()
    t0 = time.monotonic()

    def ready():
        r = anon.get("/readyz")
        assert r.status_code in (200, 503), f"/readyz during recovery: {expect.describe(r)}"
        return r if r.status_code == 200 else None

    harness.wait_until(ready, QUICK, what="/readyz 200 after restart")

    # Within a few seconds /v1 works again; any failure on the way is a proper 503.
    streak = []

    def healthy_streak():
        r = api.get("/v1/operations")
        if r.status_code == 200:
            streak.append(r)
        else:
            expect.problem(r, "DATABASE_UNAVAILABLE")
            streak.clear()
        return len(streak) >= 12

    harness.wait_until(healthy_streak, QUICK, interval=0.01, what="12 requests in a row answering 200")
    assert time.monotonic() - t0 < 2 * QUICK, "recovery took too long"
    expect.json_ok(api.post("/v1/tokens", json={"name": "after", "scope": "read"}), 201)
    eq(c.pid, pid, "cairnd pid")
    assert c.proc.alive(), "cairnd must survive the outage"


def test_outage_while_idle_then_first_request_after_restart(private_pg, cairnd_factory):
    """Pooled connections broken while idle must not leak errors after recovery."""
    db = private_pg.create_database("idle")
    url = private_pg.url(db)
    c = cairnd_factory(url, ["--db-pool-size", "2", "--http-threads", "2"])
    admin = harness.create_token(url, "idle-admin", "admin")
    api = harness.Api(c.url, admin, timeout=QUICK + 5)
    with ThreadPoolExecutor(max_workers=4) as pool:
        for r in pool.map(lambda _: api.get("/v1/operations"), range(8)):
            expect.json_ok(r)
    private_pg.stop("fast")
    private_pg.start()

    def ok():
        r = api.get("/v1/operations")
        if r.status_code != 200:
            expect.problem(r, "DATABASE_UNAVAILABLE")
        return r.status_code == 200

    harness.wait_until(ok, QUICK, what="/v1/operations 200 after a restart")
    assert c.proc.alive(), "cairnd must survive the restart"
