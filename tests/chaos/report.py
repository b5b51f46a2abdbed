"""report.py -- what the chaos suite prints: one line per iteration, the
summary table at the end, and everything worth reading after a failed
iteration (topology, operations, events, the end of the daemons' logs).
"""

import json
import sys
from dataclasses import dataclass, field

import redis

import checks
import clusters
import harness
from agentstack import percentile

LOG_LINES = {"cairnd": 80, "agent": 30, "postgres": 20}
ENGINE_LOG_LINES = 8  # of an engine that does not run
ENGINE_WARNINGS = 12


@dataclass
class Outcome:
    """One iteration, as the report shows it."""
    index: int
    scenarios: list           # scenario names
    labels: list              # "name(what it hit)"
    recovery_ms: float = None
    gaps_ms: dict = field(default_factory=dict)  # cluster id -> longest time without an ack
    acked: int = 0
    lost: int = 0
    async_lost: int = 0
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def failed(self):
        return bool(self.problems)


def out(text=""):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def line(o, total):
    rec = f"{o.recovery_ms:6.0f}" if o.recovery_ms is not None else "     -"
    gaps = "/".join(f"{g:.0f}" for g in o.gaps_ms.values())
    out(f"{o.index:4d}/{total:<4d} {' + '.join(o.labels):<72} recovery {rec} ms  "
        f"write gap {gaps:>11} ms  acked {o.acked:5d}  lost {o.lost:3d}  "
        f"async_lost {o.async_lost:3d}  {'FAIL' if o.failed else 'ok'}")
    for p in o.problems:
        out(f"          ! {p}")
    for n in o.notes:
        out(f"          - {n}")


def summary(outcomes):
    """The table: per scenario (an iteration counts for each of its
    scenarios), runs, recovery p50/p90/max, losses, failures; then all."""
    names = sorted({n for o in outcomes for n in o.scenarios})
    rows = [(n, [o for o in outcomes if n in o.scenarios]) for n in names]
    rows.append(("all", outcomes))
    out()
    out(f"{'scenario':<26} {'runs':>5} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8} "
        f"{'lost':>6} {'async_lost':>10} {'failures':>8}")
    for name, os_ in rows:
        times = [o.recovery_ms for o in os_ if o.recovery_ms is not None]
        p = [f"{percentile(times, q):8.0f}" if times else "       -" for q in (50, 90, 100)]
        out(f"{name:<26} {len(os_):>5} {p[0]} {p[1]} {p[2]} "
            f"{sum(o.lost for o in os_):>6} {sum(o.async_lost for o in os_):>10} "
            f"{sum(o.failed for o in os_):>8}")


# --------------------------------------------------------------------------
# After a failed iteration

def dump(stack, api, since_epoch, offsets):
    """Topology, operations, events since the iteration began, and the end
    of what every daemon logged during it."""
    out("\n======== state after the failed iteration ========")
    for t in stack.targets.values():
        _safe(lambda: dump_cluster(stack, api, t), f"cluster {t.id}")
        _safe(lambda: dump_history(api, t.id, since_epoch), f"history of {t.id}")
    for cid in sorted(stack.throwaways):
        _safe(lambda: dump_history(api, cid, since_epoch), f"history of {cid}")
    _safe(lambda: dump_hosts(stack, api), "hosts")
    for log in stack.logs():
        kind = next((k for k in LOG_LINES if k in log.name), "agent")
        if log.name.startswith("cairnd") and log.path != stack.cairnd.log_path and \
                log.size() <= offsets.get(log.name, 0):
            continue  # an earlier cairnd's log, quiet since
        out(f"---- {log.name}: its last {LOG_LINES[kind]} lines of this iteration ----")
        lines = log.text(offsets.get(log.name, 0)).splitlines()
        out("\n".join(lines[-LOG_LINES[kind]:]) or "(nothing)")
    out("======== end of the dump ========\n")


def _safe(fn, what):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- a dump must not hide the failure it explains
        out(f"({what}: cannot show: {type(e).__name__}: {e})")


def dump_cluster(stack, api, t):
    """Each node as the resource shows it, then as its engine does; the end
    of the engine's own log when it does not run."""
    body = clusters.get(api, t.id)
    out(f"---- {t.id}: status {body['status']}, operation {body['current_operation']}")
    for s in body["shards"]:
        out(f"  shard {s['id']} slots {s['slots']}")
        for n in s["nodes"]:
            out(f"    {checks.label(n)} {n['az']} {n['role']} {n['status']} "
                f"replication {json.dumps(n.get('replication'))}")
            out("      " + engine_view(t, n).replace("\n", "\n      "))
            if n["status"] != "running":
                log = stack.agent_of_node(n).node_dir(n["id"]) / "engine.log"
                for ln in engine_log_excerpt(log):
                    out(f"      engine.log: {ln}")


def engine_log_excerpt(path):
    """What an engine that does not run said: its warnings (the lines the
    engines mark with '#'), each once, then its last lines."""
    lines = harness.LogSource("engine", path).text().splitlines()
    warnings = list(dict.fromkeys(ln.split(" # ", 1)[1] for ln in lines if " # " in ln))
    return [f"# {w}" for w in warnings[-ENGINE_WARNINGS:]] + lines[-ENGINE_LOG_LINES:]


def engine_view(t, n):
    try:
        with checks.engine(n, t.password) as c:
            if t.sharded:
                return c.execute_command("CLUSTER", "NODES").strip()
            info = c.info("replication")
            return " ".join(f"{k}={info.get(k)}" for k in (
                "role", "master_port", "master_link_status", "master_repl_offset",
                "connected_slaves"))
    except redis.RedisError as e:
        return f"(engine: {e})"


def dump_history(api, cid, since_epoch):
    r = api.get("/v1/operations", params={"cluster_id": cid, "page_size": 20})
    for op in r.json()["operations"]:
        if checks.api_epoch(op["created_at"]) >= since_epoch or op["status"] in ("pending",
                                                                                 "running"):
            out(f"  op {op['id'][:8]} {op['kind']} {op['status']} step {op['step_name']} "
                f"error {json.dumps(op['error'])}")
    for e in checks.events_since(api, cid, since_epoch):
        out(f"  event {e['created_at']} {e['type']}: {e['message']}")


def dump_hosts(stack, api):
    for hid in stack.host_ids:
        h = api.get(f"/v1/hosts/{hid}").json()
        out(f"---- host {h['name']} ({h['az']}): {h['status']}, last seen {h['last_seen_at']}")
        for n in h["nodes"]:
            out(f"    {n['id'][:8]} {n['cluster_id']} :{n['port']} desired {n['desired_status']} "
                f"{n['status']} {n['role']} pid {n['pid']}")
