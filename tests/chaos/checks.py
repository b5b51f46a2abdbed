"""checks.py -- what must hold once the stack has recovered from a fault.

Each check returns what it found wrong, as a list of sentences (empty when
all is well), so that the runner can both poll them until they pass (the
recovery) and print them when they never do (the verdict).

  steady()        the topology, as the REST API, the Sentinel listener and
                  the engines each tell it, agrees and is whole; every
                  shard takes a write and reads it back; no engine, node or
                  data dir is left over
  lost_writes()   every acknowledged write reads back (losses inside an
                  asynchronous-replication window are counted apart)
  operations()    nothing is stuck pending or running
  failovers()     the failovers a scenario expected happened, and those it
                  ruled out did not
  Watch           while it all happens: an honest status, one primary
                  published per shard
"""

import json
import threading
import time
from datetime import datetime, timezone

import redis
from redis.crc import key_slot

import agents
import clusters
import writers
from test_ha import sentinel_master

ALL_SLOTS = 16384
ENGINE_TIMEOUT_S = 1.0
# A write acknowledged this long before its primary was killed or frozen may
# not have reached a replica yet: losing it is what asynchronous replication
# allows (reported as async_lost, not a failure).
ASYNC_WINDOW_S = 1.0
ASYNC_GRACE_S = 0.1      # an ack read just after the kill was sent just before it
OPERATION_BOUND_S = 120  # an operation pending or running longer than this is stuck
BAD_FLAGS = {"fail", "fail?", "handshake", "noaddr"}


def iso(epoch):
    """An API timestamp for epoch seconds (the `since` of /v1/events)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def api_epoch(ts):
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc).timestamp()


def label(n):
    return f"{n['id'][:8]} ({n.get('host_name') or n['host_id'][:8]}:{n['port']})"


def slot_ranges(ranges):
    """[(first, last)] from the API's ["0-5460", ...]."""
    return [tuple(int(x) for x in r.split("-")) for r in ranges]


def in_ranges(slot, ranges):
    return any(a <= slot <= b for a, b in ranges)


def engine(n, pw):
    return clusters.client(n["address"], n["port"], pw, timeout=ENGINE_TIMEOUT_S)


# --------------------------------------------------------------------------
# The topology

def rest_shape(t, body):
    """The resource: available, idle, every shard whole, one primary each,
    replicas linked and synced, every slot served (cluster mode), the
    endpoints naming the primary and every replica (disabled mode)."""
    found = []
    if body["status"] != "available":
        found.append(f"{t.id}: status {body['status']}")
    op = body["current_operation"]
    if op is not None:
        found.append(f"{t.id}: operation {op['kind']} {op['status']} at {op['step_name']}")
    if len(body["shards"]) != t.shards:
        found.append(f"{t.id}: {len(body['shards'])} shards, expected {t.shards}")
    for s in body["shards"]:
        found += shard_shape(t, s)
    if t.sharded:
        served = sum(b - a + 1 for s in body["shards"] for a, b in slot_ranges(s["slots"]))
        if served != ALL_SLOTS:
            found.append(f"{t.id}: the shards serve {served} slots")
    else:
        found += group_endpoints(t, body)
    return found


def shard_shape(t, s):
    found = []
    where = f"{t.id} shard {s['id']}"
    if len(s["nodes"]) != t.nodes_per_shard:
        found.append(f"{where}: {len(s['nodes'])} nodes, expected {t.nodes_per_shard}")
    primaries = [n for n in s["nodes"] if n["role"] == "primary"]
    if len(primaries) != 1:
        found.append(f"{where}: {len(primaries)} primaries published")
    for n in s["nodes"]:
        if n["status"] != "running":
            found.append(f"{where}: node {label(n)} {n['status']}")
        rep = n.get("replication")
        if n["role"] == "replica" and rep and (rep["link_status"] != "up" or
                                               rep["sync_in_progress"] or rep["loading"]):
            found.append(f"{where}: replica {label(n)} link {rep['link_status']}, "
                         f"sync {rep['sync_in_progress']}, loading {rep['loading']}")
    return found


def group_endpoints(t, body):
    primary = primary_of(body["shards"][0])
    ep = body["endpoints"]
    found = []
    if primary and (ep["primary"] or {}).get("port") != primary["port"]:
        found.append(f"{t.id}: endpoints.primary {ep['primary']} is not {label(primary)}")
    if len(ep["readers"]) != t.nodes_per_shard - 1:
        found.append(f"{t.id}: {len(ep['readers'])} readers published")
    return found


def primary_of(shard):
    ps = [n for n in shard["nodes"] if n["role"] == "primary"]
    return ps[0] if len(ps) == 1 else None


def sentinel_view(stack, t, body):
    """The Sentinel listener names the primary the resource names."""
    primary = primary_of(body["shards"][0])
    try:
        with redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=t.password,
                         socket_timeout=ENGINE_TIMEOUT_S, decode_responses=True) as s:
            addr = s.execute_command("SENTINEL", "get-master-addr-by-name", t.id)
    except redis.RedisError as e:
        return [f"{t.id}: Sentinel listener: {e}"]
    if primary is None or addr is None or int(addr[1]) != primary["port"]:
        return [f"{t.id}: Sentinel listener names {addr}, the resource "
                f"{label(primary) if primary else 'no primary'}"]
    return []


def parse_cluster_nodes(text):
    """CLUSTER NODES as [{id, port, flags, master, slots, migrating, link}]."""
    out = []
    for line in text.strip().splitlines():
        f = line.split()
        slots = [tok for tok in f[8:] if not tok.startswith("[")]
        out.append({"id": f[0], "port": int(f[1].split("@")[0].rsplit(":", 1)[1]),
                    "flags": set(f[2].split(",")), "master": f[3], "link": f[7],
                    "slots": [tuple(int(x) for x in (s.split("-") * 2)[:2]) for s in slots],
                    "migrating": [tok for tok in f[8:] if tok.startswith("[")]})
    return out


def cluster_view(t, body):
    """Every engine of a sharded cluster knows exactly the resource's nodes,
    none failing, the resource's primaries as its masters and each replica
    following its own shard's primary, every slot owned, no slot half
    moved; and says of itself the role the resource publishes."""
    found = []
    ns = clusters.nodes(body)
    # Every node's port -> the port of its shard's published primary.
    primary_port = {n["port"]: primary_of(s)["port"] for s in body["shards"] for n in s["nodes"]}
    for n in ns:
        try:
            with engine(n, t.password) as c:
                view = parse_cluster_nodes(c.execute_command("CLUSTER", "NODES"))
        except redis.RedisError as e:
            found.append(f"{t.id}: node {label(n)}: {e}")
            continue
        found += one_cluster_view(t, n, view, primary_port)
    return found


def one_cluster_view(t, n, view, primary_port):
    where = f"{t.id}: node {label(n)} sees"
    found = []
    if len(view) != len(primary_port):
        found.append(f"{where} {len(view)} nodes, the resource has {len(primary_port)}")
    port_of = {v["id"]: v["port"] for v in view}
    for v in view:
        bad = v["flags"] & BAD_FLAGS
        if bad or v["link"] != "connected":
            found.append(f"{where} :{v['port']} {','.join(sorted(v['flags']))} {v['link']}")
        if v["migrating"]:
            found.append(f"{where} :{v['port']} moving slots {v['migrating'][:2]}")
        follows = port_of.get(v["master"])
        if "slave" in v["flags"] and follows != primary_port.get(v["port"]):
            found.append(f"{where} :{v['port']} following :{follows}, not its shard's "
                         f"primary :{primary_port.get(v['port'])}")
    want_primaries = set(primary_port.values())
    masters = {v["port"] for v in view if "master" in v["flags"] and v["slots"]}
    if masters != want_primaries:
        found.append(f"{where} masters {sorted(masters)}, the resource {sorted(want_primaries)}")
    owned = sum(b - a + 1 for v in view for a, b in v["slots"])
    if owned != ALL_SLOTS:
        found.append(f"{where} {owned} slots owned")
    me = next((v for v in view if "myself" in v["flags"]), None)
    role = me and ("primary" if "master" in me["flags"] else "replica")
    if role != n["role"]:
        found.append(f"{where} itself as {role}, the resource as {n['role']}")
    return found


def group_view(t, body):
    """Every engine of a group says the role the resource publishes, and the
    replicas follow the published primary with their link up."""
    found = []
    primary = primary_of(body["shards"][0])
    for n in clusters.nodes(body):
        try:
            with engine(n, t.password) as c:
                info = c.info("replication")
        except redis.RedisError as e:
            found.append(f"{t.id}: node {label(n)}: {e}")
            continue
        role = {"master": "primary", "slave": "replica"}.get(info["role"], info["role"])
        if role != n["role"]:
            found.append(f"{t.id}: node {label(n)} is {role}, the resource says {n['role']}")
        elif role == "replica" and primary and (info.get("master_port") != primary["port"] or
                                                info.get("master_link_status") != "up"):
            found.append(f"{t.id}: replica {label(n)} follows :{info.get('master_port')} "
                         f"link {info.get('master_link_status')}")
    return found


def engine_parameters(t, body):
    """Every engine runs with the maxmemory-policy of the spec (the
    parameter the rolling change flips)."""
    want = body["parameters"].get("maxmemory-policy", "volatile-lru")
    found = []
    for n in clusters.nodes(body):
        try:
            with clusters.admin_client(n, timeout=ENGINE_TIMEOUT_S) as c:
                have = c.config_get("maxmemory-policy")["maxmemory-policy"]
        except redis.RedisError as e:
            found.append(f"{t.id}: node {label(n)}: {e}")
            continue
        if have != want:
            found.append(f"{t.id}: node {label(n)} maxmemory-policy {have}, the spec {want}")
    return found


_probe_keys = {}


def probe_key(ranges):
    """A key whose slot lies in the first of ranges (a shard's)."""
    a, b = ranges[0]
    if (a, b) not in _probe_keys:
        i = 0
        while not a <= key_slot(f"chaos-probe-{i}".encode()) <= b:
            i += 1
        _probe_keys[(a, b)] = f"chaos-probe-{i}"
    return _probe_keys[(a, b)]


def serving(stack, t, body):
    """Every shard takes a write and reads it back: a sharded cluster's on
    its published primary, a group through Sentinel discovery."""
    value = str(time.monotonic())
    found = []
    if t.sharded:
        for s in body["shards"]:
            p = primary_of(s)
            key = probe_key(slot_ranges(s["slots"]))
            try:
                with engine(p, t.password) as c:
                    c.set(key, value)
                    if c.get(key) != value:
                        found.append(f"{t.id} shard {s['id']}: a probe read back another value")
            except redis.RedisError as e:
                found.append(f"{t.id} shard {s['id']}: probe on {label(p)}: {e}")
        return found
    sentinel, master = sentinel_master(stack, t.id, t.password)
    try:
        master.set("chaos-probe", value)
        if master.get("chaos-probe") != value.encode():
            found.append(f"{t.id}: a probe read back another value")
    except redis.RedisError as e:
        found.append(f"{t.id}: probe through Sentinel discovery: {e}")
    finally:
        master.close()
    return found


def cluster_problems(stack, api, t):
    """Everything steady() checks of one cluster under test, cheapest
    first: the engines are asked only once the resource looks whole."""
    body = clusters.get(api, t.id)
    if body is None:
        return [f"{t.id}: gone (404)"], None
    found = rest_shape(t, body)
    if found:
        return found, body
    found = sentinel_view(stack, t, body) if not t.sharded else []
    found += cluster_view(t, body) if t.sharded else group_view(t, body)
    found += engine_parameters(t, body)
    if not found:
        found = serving(stack, t, body)
    return found, body


# --------------------------------------------------------------------------
# Hosts: nothing leaked

def host_problems(stack, api, bodies):
    """Every host healthy; every node on it belongs to a live cluster and
    runs as one engine, whose pid the agent reported; no other engine runs
    under the agent's data dir, and no other node dir is left there; and
    the hosts place exactly the nodes each cluster resource lists (bodies:
    {cluster id: body} of the clusters under test)."""
    found = []
    placed = {cid: set() for cid in bodies}
    for hid in stack.host_ids:
        agent = stack.agent_of(hid)
        r = api.get(f"/v1/hosts/{hid}")
        if r.status_code != 200:
            found.append(f"host {agent.name}: GET answered {r.status_code}")
            continue
        h = r.json()
        if h["status"] != "healthy":
            found.append(f"host {agent.name}: {h['status']}")
        found += host_nodes(agent, h["nodes"], set(bodies) | stack.throwaways)
        for n in h["nodes"]:
            placed.setdefault(n["cluster_id"], set()).add(n["id"])
    for cid, body in bodies.items():
        listed = {n["id"] for n in clusters.nodes(body)}
        if placed[cid] != listed:
            found.append(f"{cid}: the hosts place {sorted(i[:8] for i in placed[cid])}, "
                         f"the resource lists {sorted(i[:8] for i in listed)}")
    return found


def host_nodes(agent, host_nodes_, live_clusters):
    found = []
    pids = set()
    for n in host_nodes_:
        what = f"host {agent.name}: node {n['id'][:8]} of {n['cluster_id']}"
        if n["cluster_id"] not in live_clusters:
            found.append(f"{what}: its cluster is gone")
        if n["desired_status"] != "running":
            found.append(f"{what}: desired {n['desired_status']}, still reported {n['status']}")
            continue
        if n["pid"] and agents.is_engine_under(n["pid"], agent.node_dir(n["id"])):
            pids.add(n["pid"])
        else:
            found.append(f"{what}: reported pid {n['pid']} is no engine of it")
    engines = agents.engine_pids_under([agent.data_dir])
    if engines - pids:
        found.append(f"host {agent.name}: engines no node accounts for: {sorted(engines - pids)}")
    dirs = {p.name for p in (agent.data_dir / "nodes").glob("*")}
    extra = dirs - {n["id"] for n in host_nodes_}
    if extra:
        found.append(f"host {agent.name}: data dirs of no node: {sorted(d[:8] for d in extra)}")
    return found


# --------------------------------------------------------------------------
# The whole

def steady(stack, api):
    """Everything that must hold for the stack to count as recovered, as
    (problems, {cluster id: body})."""
    found, bodies = [], {}
    for t in stack.targets.values():
        try:
            problems, body = cluster_problems(stack, api, t)
        except Exception as e:  # noqa: BLE001 -- cairnd restarting, an engine away
            problems, body = [f"{t.id}: {type(e).__name__}: {e}"], None
        found += problems
        bodies[t.id] = body
    if stack.throwaways:
        found.append(f"throwaway clusters left: {sorted(stack.throwaways)}")
    if not found:
        try:
            found = host_problems(stack, api, bodies)
        except Exception as e:  # noqa: BLE001
            found = [f"hosts: {type(e).__name__}: {e}"]
    return found, bodies


def writes_flowing(stack, since):
    """Each writer has had a write acknowledged since `since` (monotonic)."""
    return [f"{t.id}: no write acknowledged since the faults ended"
            for t in stack.targets.values() if t.writer.acked_since(since) == 0]


# --------------------------------------------------------------------------
# Acknowledged writes

def async_window_of(stack, cid, key, acked_at):
    """How long before a fault that took down the primary serving key a
    write to it acknowledged at acked_at was made (seconds, > 0 before),
    or None when no such fault followed it closely enough to excuse its
    loss."""
    slot = None
    for wcid, ranges, at in stack.async_windows:
        if wcid != cid or not at - ASYNC_WINDOW_S <= acked_at <= at + ASYNC_GRACE_S:
            continue
        slot = key_slot(key.encode()) if slot is None and ranges else slot
        if ranges is None or in_ranges(slot, ranges):
            return at - acked_at
    return None


def lost_writes(stack, t):
    """(lost, async_lost): the acknowledged writes of t's writer that no
    longer read back, each counted once over the run. lost is a list of
    (key, seq, acked_at) for the report; async_lost, those inside an
    asynchronous-replication window, a list of how long before their fault
    each was acknowledged."""
    latest = t.writer.snapshot()
    keys = sorted(latest)
    values = writers.read_back(t.connect, keys)
    lost, async_lost = [], []
    for key in keys:
        seq, v = latest[key], values.get(key)
        if v is not None and int(v) >= seq or (key, seq) in t.reported:
            continue
        t.reported.add((key, seq))
        acked_at = t.writer.ack_time(seq)
        before = async_window_of(stack, t.id, key, acked_at)
        if before is None:
            lost.append((key, seq, acked_at))
        else:
            async_lost.append(before)
    return lost, async_lost


# --------------------------------------------------------------------------
# Operations and failovers

def operations(api, cid, since_epoch):
    """(stuck, failed): operations of cid pending or running for longer than
    OPERATION_BOUND_S, and those that failed since since_epoch."""
    now = time.time()
    stuck, failed = [], []
    for status in ("pending", "running", "failed"):
        r = api.get("/v1/operations", params={"cluster_id": cid, "status": status,
                                              "page_size": 100})
        if r.status_code != 200:
            stuck.append(f"{cid}: GET /v1/operations answered {r.status_code}")
            continue
        for op in r.json()["operations"]:
            age = now - api_epoch(op["created_at"])
            what = f"{cid}: {op['kind']} {op['id'][:8]} {status} at {op['step_name']}"
            if status == "failed" and api_epoch(op["created_at"]) >= since_epoch:
                failed.append(f"{what}: {json.dumps(op.get('error'))}")
            elif status != "failed" and age > OPERATION_BOUND_S:
                stuck.append(f"{what} for {age:.0f} s")
    return stuck, failed


def events_since(api, cid, since_epoch):
    out, token = [], None
    while True:
        params = {"cluster_id": cid, "since": iso(since_epoch), "page_size": 500}
        if token:
            params["page_token"] = token
        r = api.get("/v1/events", params=params)
        r.raise_for_status()
        page = r.json()
        out += page["events"]
        token = page.get("next_page_token")
        if not token:
            return out


def automatic_failovers(api, cid, since_epoch):
    return [e for e in events_since(api, cid, since_epoch)
            if e["type"] == "FailoverComplete" and e["detail"].get("automatic")]


def failovers(api, expectations, since_epoch, alone):
    """The failover expectations the scenarios recorded, as (cluster id,
    True: must fail over / False: must not, why); those that rule a
    failover out count only for a scenario run alone."""
    found = []
    for cid, wanted, why in expectations:
        if not wanted and not alone:
            continue
        evs = automatic_failovers(api, cid, since_epoch)
        if wanted and not evs:
            found.append(f"{cid}: no automatic failover after {why}")
        elif not wanted and evs:
            found.append(f"{cid}: {len(evs)} automatic failover(s) after {why}: "
                         f"{[e['message'] for e in evs]}")
    return found


# --------------------------------------------------------------------------
# While the faults last: what the API publishes

# Until the API reports `degraded`, `available` is all it can say of a
# cluster that serves; from the first `degraded` seen on, the status must
# follow the redundancy. Set True once `degraded` is in place to require it
# from the start.
DEGRADED_REQUIRED = False
STATUS_LAG_S = 3.0  # a status may trail the nodes' reports by this much
WATCH_INTERVAL_S = 0.2


def redundancy_lost(t, body, lost_hosts=frozenset()):
    """Whether some shard runs short of nodes (fewer than created, or not
    all running: a node's status is its engine's as last reported, so one
    on a host cairnd has found lost counts as down too)."""
    return any(len(s["nodes"]) < t.nodes_per_shard or
               any(n["status"] != "running" or n["host_id"] in lost_hosts for n in s["nodes"])
               for s in body["shards"])


def lost_hosts(api):
    """The ids of the hosts that are not healthy."""
    r = api.get("/v1/hosts", params={"page_size": 500})
    r.raise_for_status()
    return frozenset(h["id"] for h in r.json()["hosts"] if h["status"] != "healthy")


class Watch:
    """Reads every cluster under test five times a second for as long as
    an iteration's faults and recovery last, in a thread of its own, and
    keeps what it must not see:

    - a status no serving cluster may have, or, once the API has reported
      `degraded` (for good: degraded_seen outlives iterations), a status
      that disagrees with the redundancy for longer than STATUS_LAG_S;
    - two primaries published for one shard: never for a group (cairnd
      designates its one primary); for a sharded cluster, whose roles are
      the engines' own, a note with how long it lasted."""

    SERVING = {"available", "degraded", "modifying"}
    degraded_seen = DEGRADED_REQUIRED

    def __init__(self, stack):
        self.stack = stack
        self.api = stack.new_api()
        self.problems, self.notes = [], []
        self._since = {}  # (what, cluster id, shard id) -> monotonic time first seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)
        for key in list(self._since):
            self._ended(key)

    def _run(self):
        while not self._stop.wait(WATCH_INTERVAL_S):
            for t in self.stack.targets.values():
                try:
                    body = clusters.get(self.api, t.id)
                    lost = lost_hosts(self.api)
                except Exception:  # noqa: BLE001 -- cairnd down: nothing published
                    continue
                if body is not None:
                    self.observe(t, body, lost)

    def observe(self, t, body, lost_hosts=frozenset()):
        status = body["status"]
        if status == "degraded":
            Watch.degraded_seen = True
        if status not in self.SERVING:
            self._problem(f"{t.id}: status {status} for a cluster that serves")
        if self.degraded_seen and status != "modifying":
            lost = redundancy_lost(t, body, lost_hosts)
            self._lasting(("status", t.id, None), (status == "degraded") != lost,
                          f"{t.id}: status {status} while redundancy is "
                          f"{'lost' if lost else 'whole'}")
        for s in body["shards"]:
            two = sum(n["role"] == "primary" for n in s["nodes"]) > 1
            if two and not t.sharded:
                self._problem(f"{t.id}: two primaries published: "
                              f"{[label(n) for n in s['nodes'] if n['role'] == 'primary']}")
            self._lasting(("primaries", t.id, s["id"]), two and t.sharded,
                          f"{t.id} shard {s['id']}: two primaries published")

    def _lasting(self, key, now_true, text):
        """Track a condition that may hold for a while: started, or ended."""
        if now_true:
            self._since.setdefault(key, (time.monotonic(), text))
        elif key in self._since:
            self._ended(key)

    def _ended(self, key):
        began, text = self._since.pop(key)
        lasted = time.monotonic() - began
        if key[0] == "primaries":
            self.notes.append(f"{text} for {lasted:.1f} s")
        elif lasted > STATUS_LAG_S:
            self._problem(f"{text}, for {lasted:.1f} s")

    def _problem(self, text):
        if text not in self.problems:
            self.problems.append(text)
