"""test_host_loss.py -- a host is lost only after a heartbeat timeout in
which cairnd could have heard from it: not because cairnd itself was down
(a restart after a pause) or could not reach its database (an outage), and
still after one timeout once cairnd is back when its agent really is gone.

Real PostgreSQL (this module's own, since one test stops it), cairnd with a
2 s heartbeat timeout, three cairn-agents in three AZs and the engines they
run. Every pause is 1.5 times the timeout, so when cairnd looks again every
host's last heartbeat is older than the timeout.

A failed test prints what cairnd, the agents and the engines logged during
it; every cluster a test creates is deleted after it, and the module's
agents, engines, cairnds and PostgreSQL are stopped at its end.
"""

import signal
import time
from datetime import datetime, timezone

import pytest

import clusters
import expect
import harness
from clusters import nodes, wait_available, wait_until
from expect import eq

HEARTBEAT_S = 2
PAUSE_S = 1.5 * HEARTBEAT_S  # cairnd or PostgreSQL away this long
LEASE_S = 5  # a dead cairnd's operations are taken over after this (runner.c)
REPORT_LATE_S = 1.0  # a slow agent reports this long after cairnd is back, within the timeout
WATCH_S = 2 * HEARTBEAT_S + 1  # how long a test watches for a loss that should not come


@pytest.fixture(scope="module")
def pg():
    """This module's own PostgreSQL (it stands in for the session's, which
    the stack fixture asks for by this name): a test stops it."""
    server = harness.PostgresServer("pg-host-loss")
    try:
        server.start()
        yield server
    finally:
        server.destroy()


stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "host-loss", cairnd_args=["--heartbeat-timeout", str(HEARTBEAT_S)])


@pytest.fixture(autouse=True)
def _hosts_healthy_first(stack):
    """Each test starts with every host healthy, whatever the one before did."""
    wait_until(lambda: {h["status"] for h in stack.hosts().values()} == {"healthy"}, 15,
               "every host healthy before the test")


def api_time(ts):
    """Seconds since the epoch of an API timestamp (2026-...T...123456Z)."""
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def host_events(stack, hid, since, kind):
    """The events of host hid of this type recorded at or after since (epoch s)."""
    r = expect.json_ok(stack.api.get("/v1/events", params={"host_id": hid, "page_size": 500}))
    return [e for e in r["events"] if e["type"] == kind and api_time(e["created_at"]) >= since]


def losses(stack, since):
    """Every host.lost event of the stack's hosts since `since`."""
    return [e for hid in stack.host_ids for e in host_events(stack, hid, since, "HostLost")]


def create_group(stack, cleanup, cid):
    """A Redis group (one primary, two replicas, automatic failover on, one
    node per AZ), deleted after the test; its resource once available."""
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(cid)), 202)
    return wait_available(stack.api, cid, 40)


def primary_id(body):
    ps = [n["id"] for n in nodes(body) if n["role"] == "primary"]
    eq(len(ps), 1, f"one primary in {nodes(body)}")
    return ps[0]


def failover_events(stack, cid):
    return [e for e in clusters.events(stack.api, cid)
            if e["type"] in ("FailoverComplete", "PrimaryDemoted")]


def restart_after_pause(stack, pause=PAUSE_S):
    """kill -9 cairnd, wait `pause` s, start a new one on the same port and
    database; return (time of the kill, time the new one answered)."""
    killed = time.time()
    stack.kill9_cairnd()
    time.sleep(pause)
    stack.restart_cairnd()
    return killed, time.time()


def restart_with_a_loss_recorded(stack, host, pause=PAUSE_S):
    """restart_after_pause(), with host's agent stopped from just before the
    kill until REPORT_LATE_S after the new cairnd answered, and the host
    recorded lost while cairnd is down (as another cairnd sharing the
    database, or this one in its last moment, may have done)."""
    slow = stack.agent_of(host)
    killed = time.time()
    slow.signal(signal.SIGSTOP)
    try:
        stack.kill9_cairnd()
        stack.inst.psql(f"UPDATE hosts SET status = 'lost', updated_at = now() WHERE id = '{host}'")
        time.sleep(pause)
        stack.restart_cairnd()
        back = time.time()
        time.sleep(REPORT_LATE_S)
    finally:
        slow.signal(signal.SIGCONT)
    return killed, back


def wait_reported(stack, since, what):
    """Every host synced after `since` (epoch s); return how long that took.
    cairnd may answer 503 for a moment after an outage, while it reconnects."""
    def all_reported():
        r = stack.api.get("/v1/hosts")
        return r.status_code == 200 and all(api_time(h["last_seen_at"]) > since
                                            for h in r.json()["hosts"])
    wait_until(all_reported, 3 * HEARTBEAT_S, f"every agent to sync after {what}", interval=0.05)
    return time.time() - since


def watch_healthy(stack, seconds, what):
    """Every host healthy at every look for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        states = {h["name"]: h["status"] for h in stack.hosts().values()}
        assert set(states.values()) == {"healthy"}, f"hosts {what}: {states}"
        time.sleep(0.1)


def nothing_lost_or_failed_over(stack, cid, primary, since, what):
    """No host lost since `since`, no failover of group cid, and its primary
    is still `primary`, after `what`."""
    eq(losses(stack, since), [], f"hosts lost after {what}")
    eq(failover_events(stack, cid), [], f"failovers after {what}")
    eq(primary_id(clusters.get(stack.api, cid)), primary, f"the primary after {what}")


def test_restart_after_a_long_pause_loses_no_host_and_fails_nothing_over(stack, cleanup):
    """cairnd killed for 1.5 heartbeat timeouts, then started again: the
    agents reconnect, no host is lost and the group keeps its primary."""
    cid = "hl-restart"
    primary = primary_id(create_group(stack, cleanup, cid))

    killed, back = restart_after_pause(stack)
    took = wait_reported(stack, back, "the restart")
    watch_healthy(stack, WATCH_S, "after the restart")

    nothing_lost_or_failed_over(stack, cid, primary, killed, "the restart")
    print(f"\ncairnd down {back - killed:.2f} s (heartbeat timeout {HEARTBEAT_S} s); every agent "
          f"synced {took:.2f} s after it answered again; no host lost")


@pytest.mark.parametrize("recorded", [False, True], ids=["silent-hosts", "a-loss-recorded"])
def test_create_in_flight_completes_after_a_long_pause(stack, cleanup, recorded):
    """kill -9 of cairnd right after a create's 202, back after longer than
    the operation lease (three heartbeat timeouts), so the new cairnd takes
    the create over at once: it succeeds, and no host is lost. Also when
    one of its hosts was recorded lost meanwhile and reports only a second
    after the restart: the create waits for it rather than fail."""
    cid = f"hl-create-{int(recorded)}"
    cleanup.append(cid)
    created = expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(cid)), 202)
    if recorded:
        host = nodes(created)[0]["host_id"]
        killed, back = restart_with_a_loss_recorded(stack, host, LEASE_S + 1)
    else:
        killed, back = restart_after_pause(stack, LEASE_S + 1)

    ready = wait_available(stack.api, cid, 40)
    eq([(o["kind"], o["status"]) for o in clusters.operations(stack.api, cid)],
       [("create", "succeeded")], "operations")
    eq(len(nodes(ready)), 3, "nodes")
    eq(losses(stack, killed), [], "hosts lost after the restart")
    print(f"\ncreate available {time.time() - back:.2f} s after cairnd answered again")


def test_database_outage_loses_no_host(stack, cleanup):
    """PostgreSQL stopped for 1.5 heartbeat timeouts, then started: no
    host is lost and the group keeps its primary."""
    cid = "hl-outage"
    primary = primary_id(create_group(stack, cleanup, cid))

    stopped = time.time()
    stack.pg.stop("fast")
    try:
        time.sleep(PAUSE_S)
    finally:
        stack.pg.start()
    back = time.time()
    took = wait_reported(stack, back, "the outage")
    watch_healthy(stack, WATCH_S, "after the outage")

    nothing_lost_or_failed_over(stack, cid, primary, stopped, "the outage")
    print(f"\nPostgreSQL down {back - stopped:.2f} s; every agent synced {took:.2f} s after it "
          f"was back; no host lost")


def test_loss_recorded_before_the_restart_waits_for_the_host_to_report(stack, cleanup):
    """The primary's host recorded lost while cairnd was down (as another
    cairnd on the same database, or this one in its last moment, may have
    done) and its agent slow to come back (stopped until a second after the
    restart): the new cairnd does not fail the group over on that record
    before the host has had a whole heartbeat timeout to report to it, and
    the host's sync makes it healthy again."""
    cid = "hl-recorded"
    body = create_group(stack, cleanup, cid)
    primary = primary_id(body)
    host = next(n["host_id"] for n in nodes(body) if n["id"] == primary)

    killed, back = restart_with_a_loss_recorded(stack, host)
    recovered = wait_until(lambda: host_events(stack, host, killed, "HostRecovered"),
                           3 * HEARTBEAT_S, "the host to report again", interval=0.05)
    at = api_time(recovered[0]["created_at"])
    watch_healthy(stack, WATCH_S, "after the host reported")

    eq(failover_events(stack, cid), [], "failovers after the restart")
    eq(primary_id(clusters.get(stack.api, cid)), primary, "the primary after the restart")
    print(f"\nhost recorded lost before the restart reported {at - back:.2f} s after cairnd "
          f"answered again (heartbeat timeout {HEARTBEAT_S} s); no failover")


def test_silent_host_is_still_lost_one_timeout_after_the_restart(stack):
    """An agent that really is gone: its host is lost one heartbeat timeout
    after the new cairnd came up (not at once, not never); the others stay
    healthy. The agent is started again at the end."""
    gone = stack.agents[2]
    hid = stack.host_ids[2]
    killed = time.time()
    stack.kill9_cairnd()
    gone.stop()
    try:
        time.sleep(PAUSE_S)
        starting = time.time()
        stack.restart_cairnd()
        up = time.time()
        lost = wait_until(lambda: host_events(stack, hid, killed, "HostLost"),
                          HEARTBEAT_S + 5, "the silent host lost", interval=0.05)
        at = api_time(lost[0]["created_at"])
        eq(len(lost), 1, "host.lost events of the silent host")
        print(f"\nsilent host lost {at - up:.2f} s after cairnd answered again "
              f"({at - starting:.2f} s after it was started; heartbeat timeout {HEARTBEAT_S} s)")
        assert at >= starting + HEARTBEAT_S, \
            f"lost {at - starting:.2f} s after cairnd was started, before a heartbeat timeout"
        assert at <= up + HEARTBEAT_S + 1, \
            f"lost {at - up:.2f} s after cairnd answered, more than a timeout and a second"
        others = [h for h in stack.host_ids if h != hid]
        eq([e for h in others for e in host_events(stack, h, killed, "HostLost")], [],
           "other hosts lost")
    finally:
        if not gone.alive():
            gone.start()
    wait_until(lambda: stack.host(hid)["status"] == "healthy", 3 * HEARTBEAT_S,
               "the host healthy again once its agent is back")


def test_syncs_stuck_in_cairnd_lose_no_host(stack, cleanup):
    """Every host's row locked for 1.5 heartbeat timeouts (as a long
    transaction would hold them): the agents' syncs reach cairnd but wait
    there to be recorded. Their silence is cairnd's own, so no host is lost;
    cairnd says it is behind its agents, then that it caught up."""
    cid = "hl-stuck"
    primary = primary_id(create_group(stack, cleanup, cid))
    offset = stack.cairnd.log.size()
    stuck = time.time()
    stack.db.psql(f"BEGIN; SELECT 1 FROM hosts FOR UPDATE; SELECT pg_sleep({PAUSE_S}); COMMIT")
    took = wait_reported(stack, time.time(), "the locks")
    watch_healthy(stack, WATCH_S, "after the locks")

    nothing_lost_or_failed_over(stack, cid, primary, stuck, "the locks")
    log = stack.cairnd.log.text(offset)
    assert "cairnd is behind its agents' syncs" in log, log[-3000:]
    assert "cairnd caught up with its agents' syncs" in log, log[-3000:]
    print(f"\nhost rows locked {PAUSE_S:.1f} s; every agent synced {took:.2f} s after; "
          "no host lost")
