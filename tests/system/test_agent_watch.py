"""test_agent_watch.py -- the agents of replicas as vantage points on their
primaries (agent/watch.h): real cairnd, PostgreSQL, three cairn-agents and
the engines they run, driven through the REST API and signals.

A group of one primary and one replica (cluster mode disabled, automatic
failover off, so nothing moves while the primary is paused) on two agents.
SIGSTOP of the primary's engine process: the replica's agent says within a
second that the primary is not answering, with a silence of at least
500 ms; SIGCONT: it says at once that the primary answers again. It says
so once each way, not at every PING, and sends cairnd a fresh report at the
same moment: cairnd sees the host within milliseconds of each record (where
the usual sync comes every 2 s) and refuses none of its syncs. A pause of the
replica's agent itself, which PINGs nothing meanwhile, is no news. After a
planned failover the old primary's agent watches the new primary. In cluster
mode each replica's agent watches the primary its engine follows. What the
report says is cairnd's to read; the test reads the agent's log, the
records it writes as it sends those reports.
"""

import os
import signal
import time
from datetime import datetime, timezone

import clusters
import expect
from clusters import nodes, wait_available, wait_until
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("watch")

NOT_ANSWERING = "primary not answering"
FRESH_S = 0.3  # a fresh report reaches cairnd this soon after the news
ANSWERING = "primary answering again"


def epoch(ts):
    """Seconds since the epoch of a timestamp of the API or the logs
    (2026-...T...123456Z, 2026-...T...123Z)."""
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def log_time(record):
    return epoch(record["ts"])


def seen_since(stack, hid, t, within):
    """Wait until cairnd has had a sync from host hid since epoch time t (its
    last_seen_at, written when a sync arrives, even one it then holds), for
    at most `within` seconds. The agent syncs every 2 s otherwise: only the
    fresh report it sends at once lands this soon (almost always)."""
    wait_until(lambda: epoch(stack.host(hid)["last_seen_at"]) >= t - 0.001, within,
               f"a sync from host {hid} since {t:.3f}", interval=0.01)


def said(agent, since, msg, node):
    """The agent's records with msg about node, written after log offset since."""
    return [r for r in agent.messages(since) if r.get("msg") == msg and r.get("node") == node]


def group(stack, cleanup, cid):
    """A valkey 8.0 group of a primary and a replica without automatic
    failover, available: (primary, replica) as the resource lists them."""
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.redis_group(
        cid, engine="valkey", engine_version="8.0", replicas_per_shard=1,
        automatic_failover=False)), 202)
    body = wait_available(stack.api, cid)
    return (next(n for n in nodes(body) if n["role"] == "primary"),
            next(n for n in nodes(body) if n["role"] == "replica"))


def watching(agent, since, node):
    """The primary (address:port) the agent last said it watches for node."""
    records = said(agent, since, "watching the replica's primary", node["id"])
    return records[-1]["primary"] if records else None


def test_paused_primary_is_news_from_its_replicas_agent(stack, cleanup):
    primary, replica = group(stack, cleanup, "watched")
    watcher = stack.agent_of(replica["host_id"])
    assert watcher is not stack.agent_of(primary["host_id"]), "two agents"
    pid = stack.agent_of(primary["host_id"]).pidfile(primary["id"])
    assert pid, "the primary's engine pid"

    # The replica's agent watches the primary cairnd designates.
    start = watcher.start_offset
    wait_until(lambda: watching(watcher, start, replica), 10,
               "the replica's agent watching its primary")
    eq(watching(watcher, start, replica), f"{primary['address']}:{primary['port']}",
       "the primary watched")
    time.sleep(1)  # five PINGs answered: no news
    eq(said(watcher, start, NOT_ANSWERING, replica["id"]), [], "no news while the primary answers")

    before = watcher.log.size()
    stopped_at = time.time()
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: said(watcher, before, NOT_ANSWERING, replica["id"]), 3,
                   "the replica's agent to say its primary is not answering", interval=0.01)
        seen_since(stack, replica["host_id"],
                   log_time(said(watcher, before, NOT_ANSWERING, replica["id"])[0]), FRESH_S)
        time.sleep(1.5)  # seven PINGs unanswered, one reconnection: still one piece of news
    finally:
        resumed_at = time.time()
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: said(watcher, before, ANSWERING, replica["id"]), 3,
               "the replica's agent to say its primary answers again", interval=0.01)
    seen_since(stack, replica["host_id"],
               log_time(said(watcher, before, ANSWERING, replica["id"])[0]), FRESH_S)

    silent = said(watcher, before, NOT_ANSWERING, replica["id"])
    eq(len(silent), 1, f"news of the silence once: {silent}")
    after_ms = (log_time(silent[0]) - stopped_at) * 1000
    print(f"\nprimary paused: its replica's agent said so {after_ms:.0f} ms later, "
          f"silent_ms={silent[0]['silent_ms']}")
    assert int(silent[0]["silent_ms"]) >= 500, silent[0]
    assert after_ms < 1000, f"news of the silence {after_ms:.0f} ms after SIGSTOP"

    back = said(watcher, before, ANSWERING, replica["id"])
    eq(len(back), 1, f"news of the answer once: {back}")
    back_ms = (log_time(back[0]) - resumed_at) * 1000
    assert back_ms < 500, f"news of the answer {back_ms:.0f} ms after SIGCONT"
    # The silence is counted from the last answer, or from one PING interval
    # (200 ms) before the first unanswered PING when the agent, on a busy
    # machine, asked late: up to an interval short of the pause.
    assert int(back[0]["silent_ms"]) >= (resumed_at - stopped_at) * 1000 - 250, back[0]

    # cairnd took every report, the fresh ones included.
    failed = [r for r in watcher.messages(before) if r.get("msg", "").startswith("cairnd request")]
    eq(failed, [], "syncs refused by cairnd")

    # A pause of the watching agent itself is not its primary's silence:
    # it PINGs nothing meanwhile, and on its return it asks before it says.
    before = watcher.log.size()
    watcher.signal(signal.SIGSTOP)
    try:
        time.sleep(2)
    finally:
        watcher.signal(signal.SIGCONT)
    time.sleep(1)
    eq(said(watcher, before, NOT_ANSWERING, replica["id"]), [],
       "no news of the primary after the agent's own pause")


def test_the_watch_follows_a_failover(stack, cleanup):
    """A planned failover: the old primary, a replica now, is watching the
    new one as soon as the failover is over, and no primary fell silent."""
    old, new = group(stack, cleanup, "followed")
    agent_of = {n["id"]: stack.agent_of(n["host_id"]) for n in (old, new)}
    before = {nid: a.log.size() for nid, a in agent_of.items()}
    expect.json_ok(stack.api.post("/v1/clusters/followed/failover", json={}), 202)
    body = clusters.wait_cluster(stack.api, "followed",
                                 lambda b: b["current_operation"] is None, 30, "failover finished")
    eq(next(n for n in nodes(body) if n["role"] == "primary")["id"], new["id"], "promoted")
    wait_until(lambda: watching(agent_of[old["id"]], before[old["id"]], old), 1,
               "the old primary's agent watching the new primary")
    eq(watching(agent_of[old["id"]], before[old["id"]], old), f"{new['address']}:{new['port']}",
       "the primary watched")
    time.sleep(1)
    for node in (old, new):
        eq(said(agent_of[node["id"]], before[node["id"]], NOT_ANSWERING, node["id"]), [],
           f"no news of silence for {node['id']}")


def test_cluster_mode_watches_what_the_replicas_follow(stack, cleanup):
    """Cluster mode, where the engines choose: each replica's agent watches
    the primary its engine follows, hears every PING answered, and reports
    a paused one."""
    cid = "watched-cm"
    cleanup.append(cid)
    expect.json_ok(stack.api.post("/v1/clusters", json=clusters.valkey_cluster(cid)), 202)
    body = wait_available(stack.api, cid)
    pairs = [(next(n for n in s["nodes"] if n["role"] == "primary"),
              next(n for n in s["nodes"] if n["role"] == "replica")) for s in body["shards"]]
    for primary, replica in pairs:
        agent = stack.agent_of(replica["host_id"])
        wait_until(lambda: watching(agent, agent.start_offset, replica)
                   == f"{primary['address']}:{primary['port']}", 5,
                   f"the agent of {replica['id']} watching its primary")
    time.sleep(1)
    for _, replica in pairs:
        agent = stack.agent_of(replica["host_id"])
        eq(said(agent, agent.start_offset, NOT_ANSWERING, replica["id"]), [],
           f"no news while {replica['id']}'s primary answers")

    # A paused primary is news here too (briefly: the engines' own node
    # timeout, 5 s, stays far off).
    primary, replica = pairs[0]
    agent = stack.agent_of(replica["host_id"])
    pid = stack.agent_of(primary["host_id"]).pidfile(primary["id"])
    assert pid, "the primary's engine pid"
    before = agent.log.size()
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: said(agent, before, NOT_ANSWERING, replica["id"]), 2,
                   "the replica's agent to say its primary is not answering", interval=0.01)
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: said(agent, before, ANSWERING, replica["id"]), 2,
               "the replica's agent to say its primary answers again", interval=0.01)
