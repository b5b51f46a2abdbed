"""test_control_plane_ha.py -- three cairnd on one PostgreSQL: each serves the
API and the agents, exactly one of them (the leader) runs the host monitor
and makes the failover decisions, and when the leader is killed another
takes over within 2 s, finishes the operations that were running and keeps
failing engines over; writes that wait for their operation, and the
agents' long-polls, are answered by any of them.

Real PostgreSQL, three cairnd with a 2 s heartbeat timeout, three
cairn-agents in three AZs given all three cairnd's URLs (in the same order:
each talks to the first that answers), and the engines they run. A failed
test prints what the cairnd, the agents and the engines logged during it;
every cluster a test creates is deleted after it, and the killed cairnd is
started again for the next test.
"""

import os
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
TAKEOVER_S = 2  # the bound on a new leader after a kill -9

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "cp-ha", cairnd_args=["--heartbeat-timeout", str(HEARTBEAT_S)], peers=2)


def cairnds(stack):
    return [stack.cairnd] + stack.peers


def readiness(stack, c):
    """GET /readyz of cairnd c: its body, or None while it cannot answer."""
    try:
        r = harness.Api(c.url, timeout=2).get("/readyz")
    except Exception:  # noqa: BLE001 -- a dead cairnd does not answer
        return None
    return r.json() if r.status_code == 200 else None


def leaders(stack):
    """[(cairnd, term)] of every live cairnd that says it leads."""
    out = []
    for c in cairnds(stack):
        body = readiness(stack, c) if c.proc.alive() else None
        if body is not None and body["leader"]:
            out.append((c, body["leader_term"]))
    return out


def the_leader(stack, timeout=5):
    """The one cairnd that leads, once exactly one does: (cairnd, term)."""
    return wait_until(lambda: (lambda ls: ls[0] if len(ls) == 1 else None)(leaders(stack)),
                      timeout, "exactly one leader")


def followers(stack, leader):
    return [c for c in cairnds(stack) if c is not leader]


def api_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def losses_since(stack, since):
    """Every HostLost event of the stack's hosts recorded after `since` (epoch s)."""
    api = stack.api_of(the_leader(stack)[0])
    return [e for hid in stack.host_ids
            for e in expect.json_ok(api.get("/v1/events", params={"host_id": hid,
                                                                  "page_size": 500}))["events"]
            if e["type"] == "HostLost" and api_time(e["created_at"]) > since]


@pytest.fixture(autouse=True)
def _every_cairnd_up(stack):
    """Each test starts with the three cairnd running, every host healthy."""
    api = stack.api_of(stack.peers[-1])
    wait_until(lambda: all(expect.json_ok(api.get(f"/v1/hosts/{h}"))["status"] == "healthy"
                           for h in stack.host_ids), 15, "every host healthy before the test")
    the_leader(stack)


@pytest.fixture
def ids(stack, cleanup):
    """The ids of the clusters a test creates (deleted after it), with every
    killed cairnd started again before they are."""
    yield cleanup
    for c in cairnds(stack):
        if not c.proc.alive():
            stack.restart_cairnd(c)


def kill_leader(stack):
    """kill -9 of the leader; (its term, when it was killed, how long until
    another cairnd led in a later term, the new leader and its term)."""
    old, term = the_leader(stack)
    killed = time.monotonic()
    stack.kill9_cairnd(old)
    new, new_term = wait_until(
        lambda: (lambda ls: ls[0] if len(ls) == 1 and ls[0][1] > term else None)(leaders(stack)),
        10, "another cairnd leading", interval=0.01)
    return term, time.time(), time.monotonic() - killed, new, new_term


def test_one_leader_takes_over_within_two_seconds_and_fails_engines_over(stack, ids):
    """One leader among three. kill -9 of it: another leads in a later term
    within 2 s, the agents that talked to it move to the next cairnd without
    a host lost, and a primary engine killed afterwards is failed over by
    the new leader, whose term is recorded with the decision."""
    leader, term = the_leader(stack)
    for c in followers(stack, leader):
        body = readiness(stack, c)
        eq((body["leader"], "leader_term" in body), (False, False), f"{c.label} follows")
    cid = "cp-ha-failover"
    ids.append(cid)
    api = stack.api_of(followers(stack, leader)[0])
    expect.json_ok(api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1)), 202)
    before = wait_available(stack.api_of(followers(stack, leader)[1]), cid, 40)

    old_term, killed_at, took, new, new_term = kill_leader(stack)
    print(f"\nkill -9 of the leader (term {old_term}): {new.label} leads in term {new_term} "
          f"after {took * 1000:.0f} ms")
    assert took < TAKEOVER_S, f"the takeover took {took:.2f} s"
    api = stack.api_of(new)

    primary = next(n for n in nodes(before) if n["role"] == "primary")
    pid = stack.agent_of(primary["host_id"]).pidfile(primary["id"])
    assert pid, "the primary's engine pid"
    os.kill(pid, signal.SIGKILL)
    after = wait_until(lambda: (lambda b: b if b["endpoints"]["primary"] not in
                                (None, before["endpoints"]["primary"]) else None)(
        clusters.get(api, cid)), 15, "a new primary endpoint", interval=0.02)
    promoted = next(n for n in nodes(after) if n["role"] == "primary")
    assert promoted["id"] != primary["id"], promoted
    term_of_decision = stack.inst.psql(
        "SELECT leader_term FROM events"
        f" WHERE cluster_id = '{cid}' AND type = 'FailoverComplete'").split()
    eq(term_of_decision, [str(new_term)], "the failover recorded with the new leader's term")

    # A whole heartbeat timeout and more after the kill: no host was lost.
    time.sleep(HEARTBEAT_S + 1)
    eq(losses_since(stack, killed_at - took), [], "hosts lost after the kill")


def test_operations_of_a_killed_leader_finish_and_waits_answer_anywhere(stack, ids):
    """A create sent to the leader, which is killed right after its 202:
    the operation finishes (its lease taken over by another cairnd's
    runner), and a write that waits for its operation on one cairnd is
    answered when another's runner ends it."""
    leader, _ = the_leader(stack)
    cid = "cp-ha-create"
    ids.append(cid)
    expect.json_ok(stack.api_of(leader).post("/v1/clusters", json=clusters.redis_group(cid)), 202)
    kill_leader(stack)
    live = [c for c in cairnds(stack) if c.proc.alive()]
    ready = wait_available(stack.api_of(live[0]), cid, 40)
    eq(len(nodes(ready)), 3, "nodes")
    eq([(o["kind"], o["status"]) for o in clusters.operations(stack.api_of(live[1]), cid)],
       [("create", "succeeded")], "operations")

    waited = "cp-ha-wait"
    ids.append(waited)
    r = stack.api_of(live[1]).post("/v1/clusters", json=clusters.redis_group(
        waited, replicas_per_shard=1), headers={"Prefer": "wait=60"}, timeout=90)
    assert r.status_code in (200, 201), f"{r.status_code} {r.text}"
    eq(r.json()["status"], "available", "the waited-for cluster")


def test_a_later_term_fences_the_leader(stack):
    """A term begun behind the leader's back (as by a cairnd that took the
    lock after the leader's session broke) fences it: it steps down at its
    next tick, and the leadership goes on in a later term still."""
    leader, term = the_leader(stack)
    offset = leader.log.size()
    stack.inst.psql("UPDATE leadership SET term = term + 1")
    _, now = wait_until(
        lambda: (lambda ls: ls[0] if len(ls) == 1 and ls[0][1] > term + 1 else None)(
            leaders(stack)), 5, "a leader in a later term")
    eq(now, term + 2, "the term after the one begun behind its back")
    lost = [r for r in (expect.logfmt(ln) for ln in leader.log.text(offset).splitlines())
            if r and r.get("msg") == "leadership lost"]
    assert lost and lost[0]["reason"] == "another cairnd began a later term", lost
