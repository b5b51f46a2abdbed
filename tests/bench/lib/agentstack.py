"""agentstack.py -- the stack the agent benchmarks run on: a throwaway
PostgreSQL, cairnd with agent registration on (its other settings at their
defaults: syncs held 2 s, 6 s heartbeat timeout), and cairn-agents, all on
127.0.0.1 in temp dirs. Built from the system tests' harness.py and
agents.py, which also reap every process and temp dir at exit.

Used by tests/bench/agent-footprint, tests/bench/propagation,
tests/bench/clusters and tests/bench/failover (which adds cairnd arguments:
its Sentinel-compatible listener on a free port).
"""

import logging
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "system"))

import agents  # noqa: E402
import harness  # noqa: E402


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def exit_cleanly_on_signals():
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt so `finally` blocks and
    the atexit handlers stop everything that was started."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


class AgentStack:
    """cairnd_args are added to cairnd's command line after the bootstrap
    token (harness.Cairnd turns Sentinel discovery off unless they say
    otherwise). The benchmark's own agents register with that token and
    need no admin's approval, as the demo's and the system tests' do."""

    def __init__(self, label, cairnd_args=()):
        harness.require_cairnd()
        agents.require_agent()
        self.pg = harness.PostgresServer(f"{label}-pg").start()
        self.db = self.pg.create_database(label)
        self.cairnd = harness.start_cairnd(self.pg.url(self.db),
                                           ["--agent-bootstrap-token", agents.BOOTSTRAP,
                                            "--approve-bootstrap-hosts"]
                                           + [str(a) for a in cairnd_args],
                                           label=f"{label}-cairnd")
        self.api = harness.Api(self.cairnd.url,
                               harness.create_token(self.pg.url(self.db), "bench", "admin"))
        self.agents = []
        self._cluster = None

    def psql(self, sql):
        return self.pg.psql(sql, self.db)

    def agent(self, name, az="az-a", **kw):
        a = agents.Agent(self.cairnd.url, name, az, **kw).start()
        self.agents.append(a)
        return a

    def host_id(self, agent, timeout=15):
        """Wait for the agent's registration; return its host id."""
        return agent.wait_registered(timeout)

    def cluster(self):
        """(cluster_id, shard_id) of the one cluster the nodes belong to."""
        if self._cluster is None:
            self._cluster = agents.add_cluster(self)
        return self._cluster

    def add_node(self, host_id, **kw):
        return agents.add_node(self, host_id, self.cluster(), **kw)

    def nodes(self, host_id):
        r = self.api.get(f"/v1/hosts/{host_id}")
        r.raise_for_status()
        return r.json()["nodes"]

    def wait_running(self, host_id, count, timeout=30):
        """Wait until `count` nodes of the host run; return them."""
        def running():
            nodes = [n for n in self.nodes(host_id)
                     if n["status"] == "running" and n["pid"]]
            return nodes if len(nodes) == count else None
        return harness.wait_until(running, timeout, interval=0.1,
                                  what=f"{count} engines running")

    def close(self):
        """Agents first (they would restart killed engines), then the
        engines, cairnd and PostgreSQL."""
        agents.shut_down(self.agents)
        self.cairnd.cleanup()
        self.pg.destroy()


def quiet_cluster_client():
    """Make redis-py's cluster client fit for a long run that kills its nodes.

    It logs every error it retries, with a traceback, through the root
    logger's last-resort handler: keep stderr readable.

    redis-py 4.3.4 (Debian's python3-redis): when RedisCluster reinitializes
    after a node died, it deep-copies its connection arguments to reconnect to
    a seed, and those hold a bound method of the client itself (its on-connect
    hook), whose locks cannot be copied: RedisClusterException ("cannot pickle
    '_thread.lock' object"), which is not a RedisError, and a client left
    without a default node. A deep copy of the client that returns the client
    itself avoids both."""
    from redis.cluster import RedisCluster
    logging.getLogger("redis").addHandler(logging.NullHandler())
    logging.getLogger("redis").propagate = False
    if "__deepcopy__" not in vars(RedisCluster):
        RedisCluster.__deepcopy__ = lambda self, memo: self


def percentile(values, p):
    """The p-th percentile (0-100) of values, nearest rank."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


def now_ms():
    return time.monotonic() * 1000.0
