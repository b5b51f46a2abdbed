"""chaos_stack.py -- the stack the chaos suite breaks, and the two clusters
its writers use the whole run.

A ClusterStack (tests/system/clusters.py: cairnd on a PostgreSQL of the
suite's own, agents vm-a, vm-b and vm-c in az-a, az-b and az-c) plus a
fourth agent, vm-a2, in az-a, so that losing one host and losing one AZ are
different faults and a lost host's nodes always have somewhere to go.
Every agent's data dir is a small tmpfs, which a scenario fills up. Each
agent, with the engines it starts, runs in a network namespace of its own
(netns.py), so that a scenario can cut a host off; cairnd listens on the
bridge that joins them, PostgreSQL and cairnd's Sentinel listener stay on
127.0.0.1. Both take root (and the namespaces a kernel that allows them):
without, every host is on 127.0.0.1 and those scenarios are left out.
cairnd runs with a 3 s heartbeat timeout and replaces lost nodes 4 s after
that, as in test_ha.py, so that every recovery is bounded by seconds; an
engine upgrade's node that does not come up on its new engine is rolled
back after 30 s (not 300), so that an upgrade scenario ends within its
iteration.

  chaos-cm     valkey 8.0, cluster mode, 3 shards x (1 primary + 1 replica),
               cluster-node-timeout 2000 ms (Cairn's default is 5000)
  chaos-group  redis 7.0, cluster mode disabled, 1 primary + 2 replicas,
               automatic failover (the default with replicas)
"""

import itertools
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import agents
import clusters
import disk
import harness
import netns
import procs
import writers

HEARTBEAT_S = 3
REPLACE_AFTER_S = 4
UPGRADE_NODE_TIMEOUT_S = 30
NODE_TIMEOUT_MS = 2000
SPARE_HOST = ("vm-a2", "az-a")
SMALL_DISK_MIB = 128  # an agent's data dir: room for its engines' files, quick to fill
SMALL_DISKS = os.geteuid() == 0  # mounting a tmpfs takes root; without, no fill_disk
PARTITIONS = ("partition_host", "partition_host_peers")  # need a network per host
SHARDED = "chaos-cm"
GROUP = "chaos-group"
CREATE_TIMEOUT_S = 90
API_TIMEOUT_S = 5


def left_out():
    """{scenario name: why} for the scenarios this machine cannot run."""
    why = {}
    if not SMALL_DISKS:
        why["fill_disk"] = "not root: no tmpfs data dirs"
    usable, reason = netns.usable()
    if not usable:
        why.update((name, f"{reason}: no network namespaces, every host on 127.0.0.1")
                   for name in PARTITIONS)
    return why


@dataclass
class Target:
    """A cluster the writers use: its shape as created, its writer, and how
    to read it back."""
    id: str
    body: dict
    shards: int
    nodes_per_shard: int
    password: str = None
    writer: writers.Writer = None
    connect: object = None      # a fresh client, for the read-back
    reported: set = field(default_factory=set)  # (key, seq) losses already counted

    @property
    def sharded(self):
        return self.body.get("cluster_mode", "enabled") == "enabled"


class ChaosStack(clusters.ClusterStack):
    """The stack, its clusters and writers. close() thaws whatever a fault
    left frozen before anything is stopped."""

    def __init__(self):
        self.targets = {}
        self.own_pg = harness.PostgresServer("chaos-pg").start()
        self.async_windows = []      # (cluster id, slot ranges or None, monotonic time)
        self.throwaways = set()      # ids of throwaway clusters that may still exist
        self.upgrading = {}          # {id: Target}: throwaways an upgrade scenario writes to
        self._throwaway_seq = itertools.count(1)
        # The harness starts every daemon with PR_SET_PDEATHSIG, which fires
        # when the *thread* that started it ends: a daemon restarted by a
        # scenario's thread would get SIGTERM as soon as the scenario
        # returns. Restarts go through this one thread, which lives as long
        # as the stack.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="spawner")
        self.network = None
        try:
            if netns.usable()[0]:
                self.network = netns.Network()
            super().__init__(self.own_pg, "chaos", cairnd_args=[
                "--heartbeat-timeout", str(HEARTBEAT_S), "--replace-after", str(REPLACE_AFTER_S),
                "--upgrade-node-timeout", str(UPGRADE_NODE_TIMEOUT_S)],
                listen_host=self.network.gateway if self.network else "127.0.0.1")
            self.add_host(*SPARE_HOST)
            self._create_targets()
        except BaseException:
            self.close(failed=True)
            raise

    # ---- the clusters under test ----------------------------------------

    def _create_targets(self):
        params = {"cluster-node-timeout": str(NODE_TIMEOUT_MS)}
        for t in (Target(SHARDED, clusters.valkey_cluster(SHARDED, parameters=params), 3, 2),
                  Target(GROUP, clusters.redis_group(GROUP), 1, 3)):
            self._post(t)
        for t in self.targets.values():
            self._start_writing(t)

    def _post(self, t):
        r = self.api.post("/v1/clusters", json=t.body)
        assert r.status_code == 202, f"create {t.id}: {r.status_code} {r.text}"
        self.targets[t.id] = t

    def _start_writing(self, t):
        """Once t is available: its password, its clients, its writer."""
        clusters.wait_available(self.api, t.id, timeout=CREATE_TIMEOUT_S)
        t.password = clusters.password(self.api, t.id)
        if t.sharded:
            t.connect = writers.cluster_connector(self.new_api(), t.id, t.password)
        else:
            t.connect = writers.sentinel_connector(self, t.id, t.password)
        t.writer = writers.Writer(t.id, t.connect).start()

    def recreate(self, cid):
        """A cluster under test the stack could not bring back, deleted and
        created again with a new writer, so that a long run goes on
        measuring (what the old writer wrote is not checked any more)."""
        old = self.targets[cid]
        old.writer.stop()
        clusters.wait_until(lambda: self.api.delete(f"/v1/clusters/{cid}").status_code != 409,
                            CREATE_TIMEOUT_S, f"DELETE {cid} accepted", interval=0.5)
        clusters.wait_gone(self.api, cid, CREATE_TIMEOUT_S)
        t = Target(cid, old.body, old.shards, old.nodes_per_shard)
        self._post(t)
        self._start_writing(t)

    def _start_agent(self, name, az, before_start=None):
        """Every agent of the stack on a data dir of its own small tmpfs,
        in a network namespace of its own."""
        where = {}
        if self.network is not None:
            h = self.network.add_host(name)
            where = {"address": h.address, "netns": h.netns}
        small_disk = (lambda a: disk.mount_tmpfs(a.data_dir, SMALL_DISK_MIB)) \
            if SMALL_DISKS else None
        return super()._start_agent(name, az, small_disk, **where)

    def new_api(self):
        """An API client of its own (a requests session is not for sharing
        between threads), with a short timeout: cairnd may be down."""
        return harness.Api(self.inst.url, self.inst.admin_token, timeout=API_TIMEOUT_S)

    def throwaway_id(self):
        """A fresh id for a throwaway cluster (add it to throwaways once
        its POST is accepted)."""
        return f"chaos-tmp-{next(self._throwaway_seq)}"

    # ---- processes ---------------------------------------------------------

    def agent_of_node(self, node):
        return self.agent_of(node["host_id"])

    def engine_pid(self, node):
        """The pid of a node's engine (its agent's pidfile), or None."""
        return self.agent_of_node(node).pidfile(node["id"])

    def host_pids(self, agent):
        """The agent and every engine it started: a whole VM."""
        return [agent.pid] + sorted(agents.engine_pids_under([agent.data_dir]))

    def agents_in(self, az):
        return [a for a in self.agents if a.az == az]

    def _spawn(self, start, *args):
        """Run start(*args) in the spawner thread; its result."""
        return self._spawner.submit(start, *args).result()

    def restart_agent(self, agent):
        """Start a dead agent again, on its data dir."""
        self._spawn(agent.start)

    def restart_cairnd(self):
        return self._spawn(super().restart_cairnd)

    def restart_postgres(self, mode, down_s):
        """Stop PostgreSQL (fast or immediate), keep it down down_s seconds,
        start it again on the same port and data."""
        self.own_pg.stop(mode)
        time.sleep(down_s)
        self.start_postgres()

    def start_postgres(self):
        self._spawn(self.own_pg.start)

    # ---- shutting down -------------------------------------------------------

    def logs(self):
        return super().logs() + [self.own_pg.log]

    def close(self, failed=False):
        """Stop everything, once (ClusterStack's constructor calls this
        itself when it fails)."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        procs.thaw_all()
        for t in list(self.targets.values()) + list(self.upgrading.values()):
            if t.writer is not None:
                t.writer.stop()
        try:
            if hasattr(self, "agents"):
                super().close(failed)
        finally:
            self.own_pg.destroy()
            self._spawner.shutdown()
            self._remove_small_disks()
            if self.network is not None:
                self.network.remove()

    def _remove_small_disks(self):
        """The agents' clean-up emptied their tmpfs but could not remove
        the mount points: unmount them, then remove what is left."""
        for a in getattr(self, "agents", []):
            disk.unmount(a.data_dir)
            shutil.rmtree(a.dir, ignore_errors=True)
