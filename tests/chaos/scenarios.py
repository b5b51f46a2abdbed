"""scenarios.py -- the faults the chaos suite injects, one small function
each, and the table the runner draws them from.

A scenario gets a Fault: the stack, a random generator of its own (seeded
from the run's SEED) and the iteration's Record. It picks its target from
the live topology, injects the fault, lifts it (SIGCONT, a restart) and
returns; waiting for the stack to recover is the runner's job. On the way it
records what the verification must know: the asynchronous-replication
window a killed or frozen primary opens (acknowledged writes it may not have
replicated), and whether a failover must or must not follow.
"""

import random
import socket
import time
from dataclasses import dataclass
from typing import Callable

import redis

import chaos_stack
import checks
import clusters
import disk
import procs
import writers
from checks import label, primary_of, slot_ranges

SHORT_PAUSE_S = 0.5        # a primary's engine stopped this long must not fail over
AGENT_PAUSE_S = 2.0        # nor an agent stopped this long (heartbeat timeout: 3 s)
SYNC_CYCLE_S = 1.5         # an agent's sync is held this long (half the heartbeat timeout)
LONG_PAUSE_MIN_S = 3.0     # a primary stopped this long, and until a failover, must fail over
FAILOVER_WAIT_S = 20.0
TOPOLOGY_WAIT_S = 30.0     # for cairnd to answer again when a compound fault restarted it
PARTITION_S = (2.0, 6.0)    # how long a host stays cut off
REACH_AFTER_S = 1.0        # into a cut, the root namespace tries to reach the host's engines
REACH_TIMEOUT_S = 0.5
THROWAWAY_TIMEOUT_S = 90.0
RESHARD_KEYS = 5_000


class Record:
    """What the scenarios of one iteration leave for its verification;
    shared by the scenarios of a compound fault, which run in threads."""

    def __init__(self, snapshot):
        self.snapshot = snapshot     # {cluster id: body} before the first fault
        self.expectations = []       # (cluster id, must fail over?, why)
        self.problems = []           # what a scenario's own checks found
        self.notes = []              # worth reporting, not a failure


class Fault:
    """One scenario's handle on the stack during one iteration."""

    def __init__(self, stack, rng, record):
        self.stack, self.rng, self.record = stack, rng, record
        self.api = stack.new_api()
        self.what = ""
        self.upgrade = None  # an upgrade scenario's Upgrade, from prepare to run

    # ---- the topology ---------------------------------------------------

    def body(self, cid, fresh=True):
        """The cluster as the API shows it now, waiting up to 30 s for
        cairnd if it is being restarted (fresh=False: not waiting); the
        snapshot from before the iteration when it does not answer."""
        deadline = time.monotonic() + (TOPOLOGY_WAIT_S if fresh else 0)
        while True:
            try:
                body = clusters.get(self.api, cid)
                if body is not None:
                    return body
            except Exception:  # noqa: BLE001 -- cairnd down: wait, then fall back
                pass
            if time.monotonic() >= deadline:
                return self.record.snapshot.get(cid)  # None for a throwaway
            time.sleep(0.2)

    def cluster(self):
        return self.stack.targets[self.rng.choice(sorted(self.stack.targets))]

    def shard(self, t):
        return self.rng.choice(self.body(t.id)["shards"])

    def primary(self):
        """A random cluster under test and the primary of a random shard."""
        t = self.cluster()
        for _ in range(50):
            p = primary_of(self.shard(t))
            if p is not None:
                return t, p
            time.sleep(0.1)
        raise AssertionError(f"{t.id}: no shard with one primary to hit")

    def replica(self):
        t = self.cluster()
        return t, self.rng.choice([n for n in self.shard(t)["nodes"] if n["role"] != "primary"])

    def pid(self, node):
        """The node's engine pid, waiting a little for one (it may be
        restarting after an earlier fault)."""
        return clusters.wait_until(lambda: self.stack.engine_pid(node), 10,
                                   f"an engine pid for node {label(node)}")

    def agent(self):
        return self.rng.choice(self.stack.agents)

    def primaries_on(self, agents_):
        """(target, node) for every primary on the hosts of agents_, of the
        clusters under test and of those an upgrade scenario writes to."""
        hosts = {a.name for a in agents_}
        found = []
        for t in list(self.stack.targets.values()) + list(self.stack.upgrading.values()):
            body = self.body(t.id, fresh=False)
            found += [(t, n) for n in (clusters.nodes(body) if body else [])
                      if n["role"] == "primary" and n.get("host_name") in hosts]
        return found

    # ---- what the verification must know ----------------------------------

    def hit(self, what):
        self.what = what

    def async_window(self, t, node):
        """Writes this node acknowledged just before now may be lost: it is
        a primary about to be killed or frozen."""
        shard = next(s for s in self.body(t.id, fresh=False)["shards"]
                     if node["id"] in [n["id"] for n in s["nodes"]])
        ranges = slot_ranges(shard["slots"]) if t.sharded else None
        self.stack.async_windows.append((t.id, ranges, time.monotonic()))

    def expect_failover(self, cid, wanted, why):
        self.record.expectations.append((cid, wanted, f"{self.what}: {why}"))

    def problem(self, text):
        self.record.problems.append(text)

    def note(self, text):
        self.record.notes.append(text)

    def sleep(self, low, high):
        time.sleep(self.rng.uniform(low, high))

    def hold(self, pids, seconds):
        """SIGSTOP pids for `seconds`, then SIGCONT them."""
        procs.freeze(pids)
        try:
            time.sleep(seconds)
        finally:
            procs.thaw(pids)


# --------------------------------------------------------------------------
# Engines

def kill_primary(f):
    """kill -9 of a primary's engine: its agent holds it down, a replica
    takes over (elected in cluster mode, promoted by cairnd otherwise), and
    the old node comes back as a replica."""
    t, node = f.primary()
    pid = f.pid(node)
    f.hit(f"{t.id} {label(node)}")
    f.async_window(t, node)
    procs.kill9(pid)
    f.expect_failover(t.id, True, "kill -9 of a primary")


def kill_replica(f):
    """kill -9 of a replica's engine: its agent restarts it; nothing fails
    over."""
    t, node = f.replica()
    pid = f.pid(node)
    f.hit(f"{t.id} {label(node)}")
    procs.kill9(pid)
    f.expect_failover(t.id, False, "kill -9 of a replica")


def kill_shard(f):
    """kill -9 of every engine of one shard (a group's every node) at once:
    the replicas restart from their AOF and one must be made primary, by an
    election, a forced takeover or cairnd."""
    t = f.cluster()
    shard = f.shard(t)
    pids = [f.pid(n) for n in shard["nodes"]]
    f.hit(f"{t.id} shard {shard['id']}")
    primary = primary_of(shard)
    if primary is not None:
        f.async_window(t, primary)
    for pid in pids:
        procs.kill9(pid)


def pause_primary_short(f):
    """SIGSTOP of a primary's engine for 500 ms: shorter than any failure
    detection (node timeout 2 s; the agent's PING waits 1 s, cairnd 1 s
    more), so nothing may fail over."""
    t, node = f.primary()
    pid = f.pid(node)
    f.hit(f"{t.id} {label(node)}")
    f.hold([pid], SHORT_PAUSE_S)
    f.expect_failover(t.id, False, f"SIGSTOP of a primary for {SHORT_PAUSE_S * 1000:.0f} ms")


def pause_primary_long(f):
    """SIGSTOP of a primary's engine for several seconds, and until the API
    shows another primary for its shard: it must fail over, and the old
    primary, thawed, must step down."""
    t, node = f.primary()
    pid = f.pid(node)
    f.hit(f"{t.id} {label(node)}")
    f.async_window(t, node)
    procs.freeze([pid])
    try:
        time.sleep(LONG_PAUSE_MIN_S + f.rng.uniform(0, 2))
        replaced_primary(f, t, node)
    finally:
        procs.thaw([pid])
    f.expect_failover(t.id, True, "SIGSTOP of a primary for seconds")


def replaced_primary(f, t, node):
    """Wait (bounded) until node's shard publishes another primary (a
    sharded cluster may publish both meanwhile: the frozen engine's role
    is the last its agent could read)."""
    def other():
        for s in f.body(t.id)["shards"]:
            if node["id"] in [n["id"] for n in s["nodes"]]:
                return any(n["role"] == "primary" and n["id"] != node["id"] for n in s["nodes"])
        return True  # the node was replaced
    try:
        clusters.wait_until(other, FAILOVER_WAIT_S, "another primary", interval=0.1)
    except Exception:  # noqa: BLE001 -- the expectation reports it
        pass


# --------------------------------------------------------------------------
# Hosts and agents

def freeze_host(f):
    """SIGSTOP of a whole VM (its agent and every engine) for 2 to 12 s,
    then SIGCONT: past 3 s the host is lost, its primaries fail over, and
    4 s later its nodes are replaced; when it comes back its stale nodes
    are fenced or removed."""
    agent = f.agent()
    seconds = f.rng.uniform(2, 12)
    f.hit(f"{agent.name} for {seconds:.1f} s")
    for t, n in f.primaries_on([agent]):
        f.async_window(t, n)
    f.hold(f.stack.host_pids(agent), seconds)


def lose_az(f):
    """SIGSTOP of every VM of one AZ for 8 to 15 s, then SIGCONT: their
    primaries fail over, their nodes are replaced in the other AZs."""
    az = f.rng.choice(sorted({a.az for a in f.stack.agents}))
    lost = f.stack.agents_in(az)
    seconds = f.rng.uniform(8, 15)
    f.hit(f"{az} ({', '.join(a.name for a in lost)}) for {seconds:.1f} s")
    for t, n in f.primaries_on(lost):
        f.async_window(t, n)
    f.hold([pid for a in lost for pid in f.stack.host_pids(a)], seconds)


def kill_agent(f):
    """kill -9 of an agent, started again on its data dir within 2 s: it
    re-adopts its engines, which never stopped; nothing fails over."""
    agent = f.agent()
    down = f.rng.uniform(0.2, 2.0)
    f.hit(f"{agent.name}, down {down:.1f} s")
    agent.kill9()
    time.sleep(down)
    f.stack.restart_agent(agent)
    for cid in f.stack.targets:
        f.expect_failover(cid, False, "kill -9 of an agent restarted at once")


def pause_agent(f):
    """SIGSTOP of an agent alone for 2 s (its engines serve on): less than
    the 3 s heartbeat timeout, so the host is not lost and nothing fails
    over."""
    agent = f.agent()
    f.hit(agent.name)
    f.sleep(0, SYNC_CYCLE_S)  # at any point of its sync cycle, not always the same
    f.hold([agent.pid], AGENT_PAUSE_S)
    for cid in f.stack.targets:
        f.expect_failover(cid, False, f"SIGSTOP of an agent for {AGENT_PAUSE_S:.0f} s")


def fill_disk(f):
    """The data dir (a small tmpfs) of a primary's host filled up for 3 to
    8 s, then freed: its engines cannot write their AOF meanwhile (a
    primary there refuses writes) and its agent cannot save its state; once
    there is room again, everything must carry on as before."""
    _, node = f.primary()
    agent = f.stack.agent_of_node(node)
    seconds = f.rng.uniform(3, 8)
    try:
        mib = disk.fill(agent.data_dir)
        f.hit(f"{agent.name} ({mib} MiB written) for {seconds:.1f} s")
        time.sleep(seconds)
    finally:
        disk.free(agent.data_dir)


# --------------------------------------------------------------------------
# The network (each host in a network namespace of its own: netns.py)

def partition_host(f):
    """A host (one holding a primary when one does) cut off from
    everything for 2 to 6 s, its link down, then back: unlike a frozen
    host its processes run on. Once cut long enough its primaries fail
    over, on the word of the replicas' agents and cairnd; nobody could
    reach them meanwhile, so they acknowledged no write; back, they step
    down and rejoin as replicas."""
    net = f.stack.network
    agent, seconds = cut_off(f, "cut off")
    net.cut(net.host(agent.name))
    try:
        engines_reachable(f, agent, seconds, want=False)
    finally:
        net.mend(net.host(agent.name))


def partition_host_peers(f):
    """A host (one holding a primary when one does) cut off from the other
    hosts only, for 2 to 6 s: cairnd and the applications still reach it.
    Its primaries' replicas find them silent and a sharded cluster's
    elect another primary while the applications may still write to the
    old one: the split brain that a node timeout bounds."""
    net = f.stack.network
    agent, seconds = cut_off(f, "cut off from the other hosts")
    net.split(net.host(agent.name))
    try:
        engines_reachable(f, agent, seconds, want=True)
    finally:
        net.unsplit(net.host(agent.name))


def cut_off(f, how):
    """The host to cut (one holding a primary when one does) and for how
    long; the asynchronous-replication window of its primaries opened."""
    held = {n["host_name"] for t in f.stack.targets.values()
            for n in clusters.nodes(f.body(t.id)) if n["role"] == "primary"}
    agent = f.rng.choice([a for a in f.stack.agents if a.name in held] or f.stack.agents)
    seconds = f.rng.uniform(*PARTITION_S)
    f.hit(f"{agent.name} {how} for {seconds:.1f} s")
    for t, n in f.primaries_on([agent]):
        f.async_window(t, n)
    return agent, seconds


def engines_reachable(f, agent, seconds, want):
    """Wait out a cut of `seconds`, trying REACH_AFTER_S into it whether
    the root namespace (cairnd, the applications) can open a connection to
    each engine of the host: a problem when it can and want is False, or
    the other way round (the cut is not the one the scenario says)."""
    ends = time.monotonic() + seconds
    time.sleep(min(REACH_AFTER_S, seconds))
    for t in f.stack.targets.values():
        for n in clusters.nodes(f.body(t.id, fresh=False)):
            if n.get("host_name") != agent.name:
                continue
            try:
                socket.create_connection((n["address"], n["port"]), REACH_TIMEOUT_S).close()
                reached = True
            except OSError:
                reached = False
            if reached != want:
                f.problem(f"{label(n)} {'reached' if reached else 'not reached'} from the root "
                          f"namespace during the cut")
    time.sleep(max(0.0, ends - time.monotonic()))


# --------------------------------------------------------------------------
# The control plane

def restart_cairnd(f):
    """kill -9 of cairnd, and a new one on the same port and database."""
    f.stack.kill9_cairnd()
    f.sleep(0.2, 2.0)
    f.stack.restart_cairnd()


def kill_cairnd_mid_failover(f):
    """kill -9 of a primary's engine and, 0 to 300 ms later, of cairnd: the
    next cairnd must finish the failover. Most often within 50 ms, while
    cairnd is still in the middle of it (a promotion takes 10 to 40 ms)."""
    t, node = f.primary()
    pid = f.pid(node)
    delay = f.rng.uniform(0, 0.05) if f.rng.random() < 0.7 else f.rng.uniform(0.05, 0.3)
    f.hit(f"{t.id} {label(node)}, cairnd {delay * 1000:.0f} ms later")
    f.async_window(t, node)
    procs.kill9(pid)
    time.sleep(delay)
    restart_cairnd(f)
    f.expect_failover(t.id, True, "kill -9 of a primary and of cairnd")


def restart_postgres(f):
    """PostgreSQL stopped (fast or immediate) for 1 to 5 s: cairnd answers
    503 meanwhile, fails nothing over for the silence, and carries on."""
    mode = f.rng.choice(["fast", "immediate"])
    down = f.rng.uniform(1, 5)
    f.hit(f"{mode}, down {down:.1f} s")
    f.stack.restart_postgres(mode, down)


def kill_cairnd_mid_create(f):
    """POST of a small throwaway cluster and kill -9 of cairnd 0 to 2.5 s
    later: the next cairnd must finish the create or fail it cleanly; either
    way the cluster can be deleted and leaves nothing behind."""
    cid = f.stack.throwaway_id()
    body = f.rng.choice([
        clusters.redis_group(cid, engine="valkey", engine_version="8.0", replicas_per_shard=1),
        clusters.valkey_cluster(cid, num_shards=2, replicas_per_shard=1)])
    delay = f.rng.uniform(0, 2.5)
    f.hit(f"{cid} ({body.get('cluster_mode', 'enabled')}), cairnd {delay:.1f} s later")
    if not create_throwaway(f, body):
        return
    time.sleep(delay)
    restart_cairnd(f)
    end = wait_throwaway(f, cid, lambda b: b["status"] in ("available", "create-failed"),
                         "its create to end")
    if end is None:
        return
    if end["status"] == "create-failed":
        f.note(f"{cid}: create failed after the restart: "
               f"{[op.get('error') for op in clusters.operations(f.api, cid)][:1]}")
    else:
        probe_throwaway(f, cid, end)
    delete_throwaway(f, cid)


def kill_cairnd_mid_reshard(f):
    """A throwaway cluster of 2 shards (a replica each) with 5,000 keys
    scaled to 3, and cairnd killed while slots move: the next cairnd must
    end the operation, with every slot served, none half moved, and every
    key readable."""
    cid = f.stack.throwaway_id()
    if not create_throwaway(f, clusters.valkey_cluster(cid, num_shards=2)):
        return
    try:
        if wait_throwaway(f, cid, lambda b: b["status"] == "available", "available") is None:
            return
        pw = clusters.password(f.api, cid)
        try:
            load_keys(clusters.cluster_client(clusters.get(f.api, cid), pw))
        except redis.exceptions.ResponseError as e:
            if "MISCONF" not in str(e):
                raise
            # A disk filled by another scenario: nothing to reshard with.
            f.note(f"{cid}: its keys could not be written ({e}); not resharded")
            return
        op_id = patch_when_idle(f, cid, {"num_shards": 3})
        moved_before_kill = f.rng.randint(0, 3000)
        f.hit(f"{cid}, cairnd killed after {moved_before_kill} slots moved")
        wait_slots_moved(f, op_id, moved_before_kill)
        restart_cairnd(f)
        op = wait_operation(f, op_id)
        if op is not None:
            if op["status"] != "succeeded":
                f.note(f"{cid}: scale_shards {op['status']} after the restart: {op.get('error')}")
            body = wait_throwaway(f, cid, lambda b: b["status"] == "available"
                                  and b["current_operation"] is None, "available after the scale")
            if body is not None:
                check_resharded(f, cid, body, pw)
    finally:
        delete_throwaway(f, cid)


def kill_cairnd_mid_upgrade(f):
    """An in-place upgrade (redis 7.0 to valkey 8.0) of a throwaway cluster
    with a writer, and cairnd killed after 0 to all but one of its nodes
    were upgraded, 0 to 400 ms into the next (a node's restart, or the
    shard's failover): the next cairnd must end the operation, every node
    on one engine, one primary per shard, no acknowledged write lost."""
    up = f.upgrade
    if up is None:
        return
    before = f.rng.randint(0, len(clusters.nodes(up.body)) - 1)
    into = f.rng.uniform(0, 0.4)
    try:
        f.hit(up.describe())
        if not up.request(f):
            return
        f.hit(f"{up.describe()}, cairnd killed {into * 1000:.0f} ms after "
              f"{before} node(s) upgraded")
        if not up.wait_nodes_upgraded(f, before):
            f.note(f"{up.t.id}: the upgrade ended before {before} node(s) were counted upgraded")
        time.sleep(into)
        if up.ended(f):
            f.note(f"{up.t.id}: the upgrade had ended when cairnd was killed")
        restart_cairnd(f)
        up.verify(f)
    finally:
        up.close(f)


def upgrade_engine(f):
    """An in-place upgrade (redis 7.0 to valkey 8.0) of a throwaway cluster
    with a writer, always fired with another fault: it must end, every node
    on one engine, one primary per shard, no acknowledged write lost."""
    up = f.upgrade
    if up is None:
        return
    try:
        f.hit(up.describe())
        if up.request(f):
            up.verify(f)
    finally:
        up.close(f)


def rolling_parameters(f):
    """PATCH of parameters (maxmemory-policy, set live on every node by an
    apply_parameters operation) on a cluster under test, always fired with
    another fault: once recovered, every engine must run the new value."""
    t = f.cluster()
    now = f.body(t.id)["parameters"].get("maxmemory-policy", "volatile-lru")
    new = "allkeys-lru" if now != "allkeys-lru" else "volatile-lru"
    f.hit(f"{t.id} maxmemory-policy {new}")
    patch_when_idle(f, t.id, {"parameters": {"maxmemory-policy": new}}, accepted=(200, 202))


# --------------------------------------------------------------------------
# Throwaway clusters

def create_throwaway(f, body):
    """POST a throwaway cluster; whether it was accepted (the stack then
    counts it as one to be deleted)."""
    r = f.api.post("/v1/clusters", json=body)
    if r.status_code != 202:
        f.problem(f"create {body['id']}: {r.status_code} {r.text}")
        return False
    f.stack.throwaways.add(body["id"])
    return True


def wait_throwaway(f, cid, ok, what):
    """Poll a throwaway cluster until ok(body), riding out a cairnd
    restart; None (and a problem recorded) on timeout."""
    def done():
        try:
            b = clusters.get(f.api, cid)
        except Exception:  # noqa: BLE001 -- cairnd restarting
            return None
        return b if b is not None and ok(b) else None
    try:
        return clusters.wait_until(done, THROWAWAY_TIMEOUT_S, f"{cid} {what}", interval=0.2)
    except Exception as e:  # noqa: BLE001
        f.problem(f"{cid}: {e}")
        return None


def probe_throwaway(f, cid, body):
    """A created throwaway cluster takes a write on each shard's primary."""
    pw = clusters.password(f.api, cid)
    for s in body["shards"]:
        p = primary_of(s)
        if p is None:
            f.problem(f"{cid} shard {s['id']}: available without one primary")
            continue
        try:
            with checks.engine(p, pw) as c:
                c.set(checks.probe_key(slot_ranges(s["slots"])) if s["slots"] else "probe", "1")
        except redis.RedisError as e:
            f.problem(f"{cid} shard {s['id']}: available but {label(p)} refuses a write: {e}")


def delete_throwaway(f, cid):
    """DELETE (again while another operation holds the cluster) and wait
    until it is gone; the stack forgets it then."""
    def deleted():
        try:
            r = f.api.delete(f"/v1/clusters/{cid}")
        except Exception:  # noqa: BLE001
            return False
        return r.status_code in (202, 204, 404)
    def gone():
        try:
            return clusters.get(f.api, cid) is None
        except Exception:  # noqa: BLE001 -- cairnd restarting
            return False
    try:
        clusters.wait_until(deleted, THROWAWAY_TIMEOUT_S, f"DELETE {cid} accepted", interval=0.5)
        clusters.wait_until(gone, THROWAWAY_TIMEOUT_S, f"{cid} gone", interval=0.2)
        f.stack.throwaways.discard(cid)
    except Exception as e:  # noqa: BLE001
        f.problem(f"{cid}: {e}")


def load_keys(rc):
    for start in range(0, RESHARD_KEYS, 5000):
        p = rc.pipeline()
        for i in range(start, min(RESHARD_KEYS, start + 5000)):
            p.set(f"k:{i}", i)
        p.execute()
    rc.close()


def patch_when_idle(f, cid, change, accepted=(202,)):
    """PATCH once no other operation holds the cluster; the operation's id
    (None when the answer started none)."""
    def sent():
        r = f.api.patch(f"/v1/clusters/{cid}", json=change)
        if r.status_code == 409 and r.json().get("code") == "OPERATION_IN_PROGRESS":
            return None
        assert r.status_code in accepted, f"PATCH {cid} {change}: {r.status_code} {r.text}"
        return r.headers.get("Location", "").rsplit("/", 1)[-1] or True
    return clusters.wait_until(sent, THROWAWAY_TIMEOUT_S, f"PATCH {change} accepted",
                               interval=0.2)


def wait_slots_moved(f, op_id, count):
    def moved():
        op = get_operation(f, op_id)
        sm = (op or {}).get("slot_migration") or {}
        return op is not None and (sm.get("slots_moved", 0) >= count or
                                   op["status"] not in ("pending", "running"))
    clusters.wait_until(moved, THROWAWAY_TIMEOUT_S, f"{count} slots moved", interval=0.05)


def get_operation(f, op_id):
    try:
        r = f.api.get(f"/v1/operations/{op_id}")
    except Exception:  # noqa: BLE001
        return None
    return r.json() if r.status_code == 200 else None


def wait_operation(f, op_id):
    def ended():
        op = get_operation(f, op_id)
        return op if op and op["status"] in ("succeeded", "failed", "cancelled") else None
    try:
        return clusters.wait_until(ended, THROWAWAY_TIMEOUT_S * 2, f"operation {op_id} ended",
                                   interval=0.2)
    except Exception as e:  # noqa: BLE001
        f.problem(str(e))
        return None


def check_resharded(f, cid, body, pw):
    """Every slot served (the resource and every engine), none half moved,
    every key where the cluster client finds it."""
    served = sum(b - a + 1 for s in body["shards"] for a, b in slot_ranges(s["slots"]))
    if served != checks.ALL_SLOTS:
        f.problem(f"{cid}: the resource serves {served} slots after the scale")
    for n in clusters.nodes(body):
        with checks.engine(n, pw) as c:
            view = checks.parse_cluster_nodes(c.execute_command("CLUSTER", "NODES"))
        owned = sum(b - a + 1 for v in view for a, b in v["slots"])
        moving = [v["migrating"] for v in view if v["migrating"]]
        if owned != checks.ALL_SLOTS or moving:
            f.problem(f"{cid}: {label(n)} sees {owned} slots owned, moving {moving[:2]}")
    keys = [f"k:{i}" for i in range(RESHARD_KEYS)]
    values = writers.read_back(
        lambda: clusters.cluster_client(clusters.get(f.api, cid), pw), keys)
    missing = [k for k in keys if values.get(k) != k[2:]]
    if missing:
        f.problem(f"{cid}: {len(missing)} keys lost by the scale, e.g. {missing[:5]}")


# --------------------------------------------------------------------------
# In-place engine upgrades of throwaway clusters (redis to valkey is one way:
# the clusters under test keep their engines)

UPGRADE_TO = {"engine": "valkey", "engine_version": "8.0"}
UPGRADE_KEYS = 5_000
UPGRADE_READY_S = 30.0  # for the precheck to pass (replicas linked) after the create
UPGRADE_STEADY_S = 30.0  # for the cluster to be whole and serving once the upgrade ended


class Upgrade:
    """A throwaway redis 7.0 cluster, a group of 1 + 1 or 1 + 2 nodes or 2
    shards of 1 + 1 drawn at random, with UPGRADE_KEYS keys and a writer
    (registered with the stack, so that faults on its hosts open the
    asynchronous-replication windows of its primaries), and its upgrade to
    valkey 8.0 from the PATCH to the verdict."""

    def __init__(self, f):
        cid = f.stack.throwaway_id()
        if f.rng.random() < 0.5:
            replicas = f.rng.choice([1, 2])
            body = clusters.redis_group(cid, replicas_per_shard=replicas)
            shape = (1, replicas + 1)
        else:
            body = clusters.valkey_cluster(cid, engine="redis", engine_version="7.0",
                                           num_shards=2, replicas_per_shard=1)
            shape = (2, 2)
        self.t = chaos_stack.Target(cid, body, *shape)
        self.body = None    # the resource once available
        self.op_id = None
        self.duration = None  # from the PATCH to the operation's end, seconds

    def describe(self):
        shape = (f"{self.t.shards} shards x {self.t.nodes_per_shard}" if self.t.sharded
                 else f"group of {self.t.nodes_per_shard}")
        return f"{self.t.id} ({shape})"

    def create(self, f):
        """Created, available, loaded and written to; False (a problem
        recorded) when it did not come up."""
        if not create_throwaway(f, self.t.body):
            return False
        self.body = wait_throwaway(f, self.t.id, lambda b: b["status"] == "available",
                                   "available")
        if self.body is None:
            return False
        t = self.t
        t.password = clusters.password(f.api, t.id)
        if t.sharded:
            t.connect = writers.cluster_connector(f.stack.new_api(), t.id, t.password)
        else:
            t.connect = writers.sentinel_connector(f.stack, t.id, t.password)
        client = t.connect()
        try:
            for start in range(0, UPGRADE_KEYS, 1000):
                p = client.pipeline(transaction=False) if not t.sharded else client.pipeline()
                for i in range(start, min(UPGRADE_KEYS, start + 1000)):
                    p.set(f"pre:{i}", i)
                p.execute()
        finally:
            client.close()
        t.writer = writers.Writer(t.id, t.connect).start()
        f.stack.upgrading[t.id] = t
        return True

    def request(self, f):
        """PATCH to valkey 8.0 once the precheck lets it through (a fresh
        cluster's replicas may still be syncing, a fault may hold a node);
        False (a problem recorded) when it never does."""
        refused = []

        def sent():
            try:
                r = f.api.patch(f"/v1/clusters/{self.t.id}", json=UPGRADE_TO)
            except Exception as e:  # noqa: BLE001 -- cairnd restarting
                refused[:] = [str(e)]
                return None
            if r.status_code == 202:
                return r.json()["pending_changes"]["engine_upgrade"]["operation_id"]
            refused[:] = [f"{r.status_code} {r.text[:300]}"]
            return None
        try:
            self.op_id = clusters.wait_until(sent, UPGRADE_READY_S, "the upgrade accepted",
                                             interval=0.2)
        except AssertionError:
            f.problem(f"{self.t.id}: PATCH to valkey 8.0 never accepted: {refused}")
            return False
        self.requested_at = time.monotonic()
        return True

    def ended(self, f):
        op = get_operation(f, self.op_id)
        return op is not None and op["status"] not in ("pending", "running")

    def wait_nodes_upgraded(self, f, count):
        """Until count NodeUpgraded events of the operation (polling every
        20 ms); False when it ended first or it took too long."""
        def reached():
            try:
                evs = [e for e in clusters.events(f.api, self.t.id)
                       if e["type"] == "NodeUpgraded" and e.get("operation_id") == self.op_id]
            except Exception:  # noqa: BLE001
                return None
            return len(evs) >= count or (self.ended(f) and "ended")
        try:
            return clusters.wait_until(reached, THROWAWAY_TIMEOUT_S, f"{count} nodes upgraded",
                                       interval=0.02) is True
        except AssertionError:
            return False

    def verify(self, f):
        """The operation ends (one primary published per shard of a group
        meanwhile); then the cluster is whole and serving, every node on one
        engine (valkey 8.0 when the upgrade succeeded), and every key and
        acknowledged write reads back."""
        op = self.wait_end(f)
        if op is None:
            return
        self.duration = time.monotonic() - self.requested_at
        f.note(f"{self.t.id}: upgrade {op['status']} {self.duration:.1f} s after the PATCH"
               + (f": {op['error']['code']} {op['error']['message'][:200]}"
                  if op["status"] == "failed" else ""))
        body = self.wait_steady(f)
        if body is None:
            return
        self.check_engines(f, op, body)
        self.t.writer.stop()
        self.check_writes(f)

    def wait_end(self, f):
        def ended():
            op = get_operation(f, self.op_id)
            try:
                body = clusters.get(f.api, self.t.id)
            except Exception:  # noqa: BLE001 -- cairnd restarting
                body = None
            for s in (body or {}).get("shards", []):
                ps = [label(n) for n in s["nodes"] if n["role"] == "primary"]
                if len(ps) > 1 and not self.t.sharded:
                    f.problem(f"{self.t.id}: two primaries published during the upgrade: {ps}")
            return op if op and op["status"] in ("succeeded", "failed", "cancelled") else None
        try:
            return clusters.wait_until(ended, THROWAWAY_TIMEOUT_S * 2,
                                       f"upgrade {self.op_id} ended", interval=0.2)
        except AssertionError:
            op = get_operation(f, self.op_id) or {}
            f.problem(f"{self.t.id}: the upgrade did not end in {THROWAWAY_TIMEOUT_S * 2:.0f} s: "
                      f"{op.get('status')} at {op.get('step_name')}")
            return None

    def wait_steady(self, f):
        """The checks the clusters under test pass (checks.cluster_problems),
        polled until they hold; the body, or None and a problem."""
        last = []

        def steady():
            try:
                found, body = checks.cluster_problems(f.stack, f.api, self.t)
            except Exception as e:  # noqa: BLE001
                found, body = [f"{type(e).__name__}: {e}"], None
            last[:] = found
            return body if not found else None
        try:
            return clusters.wait_until(steady, UPGRADE_STEADY_S, "whole and serving",
                                       interval=0.2)
        except AssertionError:
            f.problem(f"{self.t.id}: not whole {UPGRADE_STEADY_S:.0f} s after its upgrade "
                      f"ended: {last[:4]}")
            return None

    def check_engines(self, f, op, body):
        """Every node runs one engine (valkey 8.0 once succeeded) and the
        resource shows what each runs."""
        running = {}
        for n in clusters.nodes(body):
            with checks.engine(n, self.t.password) as c:
                info = c.info("server")
            running[label(n)] = (("valkey", info["valkey_version"]) if "valkey_version" in info
                                 else ("redis", info["redis_version"]))
            if (n["engine"], n["engine_version"]) != running[label(n)]:
                f.problem(f"{self.t.id}: {label(n)} shown as {n['engine']} "
                          f"{n['engine_version']}, runs {' '.join(running[label(n)])}")
        kinds = {(e, v.rsplit(".", 1)[0]) for e, v in running.values()}
        if len(kinds) > 1:
            f.problem(f"{self.t.id}: nodes on more than one engine after the upgrade "
                      f"{op['status']}: {running}")
        elif op["status"] == "succeeded" and kinds != {("valkey", "8.0")}:
            f.problem(f"{self.t.id}: the upgrade succeeded, the nodes run {running}")

    def check_writes(self, f):
        """The keys loaded before and every acknowledged write read back."""
        t = self.t
        try:
            keys = [f"pre:{i}" for i in range(UPGRADE_KEYS)]
            values = writers.read_back(t.connect, keys)
            lost, async_lost = checks.lost_writes(f.stack, t)
        except Exception as e:  # noqa: BLE001
            f.problem(f"{t.id}: cannot read back: {type(e).__name__}: {e}")
            return
        missing = [k for k in keys  # bytes through Sentinel, str through the cluster client
                   if values.get(k) is None or int(values[k]) != int(k[4:])]
        if missing:
            f.problem(f"{t.id}: {len(missing)} of the keys loaded before lost, e.g. {missing[:5]}")
        if lost:
            f.problem(f"{t.id}: {len(lost)} acknowledged writes lost, e.g. "
                      + ", ".join(f"{k}={seq}" for k, seq, _ in lost[:5]))
        if async_lost:
            f.note(f"{t.id}: {len(async_lost)} acknowledged writes lost in an "
                   "asynchronous-replication window")
        f.note(f"{t.id}: {t.writer.counts()[1]} writes acknowledged, "
               f"{len(lost) + len(async_lost)} lost")

    def close(self, f):
        """The writer stopped and the cluster deleted, whatever happened."""
        if self.t.writer is not None:
            self.t.writer.stop()
        f.stack.upgrading.pop(self.t.id, None)
        if self.t.id in f.stack.throwaways:
            delete_throwaway(f, self.t.id)


def prepare_upgrade(f):
    """Before the fault: the throwaway cluster an upgrade scenario upgrades."""
    up = Upgrade(f)
    if up.create(f):
        f.upgrade = up
    else:
        up.close(f)


# --------------------------------------------------------------------------
# The table

@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable
    weight: int = 2
    control: bool = False     # restarts cairnd or PostgreSQL: never two such at once
    with_fault: bool = False  # always fired together with another scenario
    prepare: Callable = None  # sets up what the fault needs, before the iteration's clock


SCENARIOS = [
    Scenario("kill_primary", kill_primary, weight=4),
    Scenario("kill_replica", kill_replica),
    Scenario("kill_shard", kill_shard),
    Scenario("pause_primary_short", pause_primary_short),
    Scenario("pause_primary_long", pause_primary_long),
    Scenario("freeze_host", freeze_host),
    Scenario("kill_agent", kill_agent),
    Scenario("pause_agent", pause_agent),
    Scenario("kill_cairnd_mid_failover", kill_cairnd_mid_failover, control=True),
    Scenario("kill_cairnd_mid_create", kill_cairnd_mid_create, weight=1, control=True),
    Scenario("kill_cairnd_mid_reshard", kill_cairnd_mid_reshard, weight=1, control=True),
    Scenario("restart_postgres", restart_postgres, control=True),
    Scenario("lose_az", lose_az, weight=1),
    Scenario("fill_disk", fill_disk, weight=1),
    Scenario("kill_cairnd_mid_upgrade", kill_cairnd_mid_upgrade, weight=1, control=True,
             prepare=prepare_upgrade),
    Scenario("partition_host", partition_host),
    Scenario("partition_host_peers", partition_host_peers),
    Scenario("rolling_parameters", rolling_parameters, with_fault=True),
    Scenario("upgrade_engine", upgrade_engine, weight=1, with_fault=True,
             prepare=prepare_upgrade),
]
BY_NAME = {s.name: s for s in SCENARIOS}
COMPOUND_SHARE = 0.25
COMPOUND_DELAY_S = (0.0, 3.0)


def draw(rng, allowed):
    """The scenarios of one iteration: one, or (COMPOUND_SHARE of the time,
    and always for a with_fault one) two that may run together, with the
    delay before the second. A with_fault scenario comes first or second
    at random: before the fault, or while it lasts."""
    pool = [s for s in SCENARIOS if s.name in allowed]
    first = _weighted(rng, pool)
    if not first.with_fault and rng.random() >= COMPOUND_SHARE:
        return [first], 0.0
    partners = [s for s in pool if not s.with_fault and not (s.control and first.control)]
    if not partners:
        return [first], 0.0
    pair = [first, _weighted(rng, partners)]
    if first.with_fault:
        rng.shuffle(pair)
    return pair, rng.uniform(*COMPOUND_DELAY_S)


def _weighted(rng, pool):
    return rng.choices(pool, weights=[s.weight for s in pool])[0]


def seeded(rng):
    """A generator of its own for one scenario, drawn from the iteration's,
    so that threads do not share one and a SEED replays the same draws."""
    return random.Random(rng.getrandbits(64))

