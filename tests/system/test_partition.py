"""test_partition.py -- an old primary back from a network cut, cluster
mode: real cairnd, three cairn-agents in three AZs, each with its engines
in a network namespace of its own (netns.py; root only, skipped otherwise).

Cut off, a primary's host is lost on the vantage points' word and its
replica takes over within about a second. When the host comes back, the
old primary still calls itself primary until the cluster bus reaches it --
which may be never while it stays cut from the other hosts -- and a client
whose slot map still names it would have its writes acknowledged there and
then dropped. cairnd tells the two claims apart by their configuration
epochs: the old one is recorded a replica (the API never names two
primaries) and its writes are held from the moment cairnd reaches it, until
it rejoins as a replica.
"""

import time

import pytest
import redis

import clusters
import netns
from clusters import events, nodes, wait_until
from expect import eq
from test_ha import create
from test_host_vantage import HEARTBEAT_S

USABLE, WHY = netns.usable()
CUT_S = 4
pytestmark = pytest.mark.skipif(not USABLE, reason=f"network namespaces: {WHY}")


class NetStack(clusters.ClusterStack):
    """A ClusterStack whose agents each run in a network namespace of their
    own on one bridge; cairnd listens on the bridge."""

    def __init__(self, pg):
        self.network = netns.Network()
        try:
            super().__init__(pg, "partition", listen_host=self.network.gateway)
        except BaseException:
            self.network.remove()
            raise

    def _start_agent(self, name, az, before_start=None, **agent_kw):
        h = self.network.add_host(name)
        return super()._start_agent(name, az, before_start, address=h.address, netns=h.netns)

    def close(self, failed=False):
        try:
            super().close(failed)
        finally:
            self.network.remove()


@pytest.fixture(scope="module")
def stack(pg, cairnd_binary):
    s = NetStack(pg)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def cleanup(stack):
    ids = []
    yield ids
    for cid in ids:
        stack.api.delete(f"/v1/clusters/{cid}")
        clusters.wait_gone(stack.api, cid, 60)


def primaries(stack, cid):
    return [n for n in nodes(clusters.get(stack.api, cid)) if n["role"] == "primary"]


def test_old_primary_back_from_a_cut_has_its_writes_held(stack, cleanup):
    """Cluster mode, one shard of 1 + 1, the default 5 s node timeout: the
    primary's host cut off until its replica has taken over, then back for
    cairnd and the applications but still cut from the other hosts, so that
    the cluster bus cannot tell it of the takeover (were the bus let through,
    it would race cairnd, and win now and then). The API names one primary
    all along; cairnd holds the old one's writes (PrimaryFenced) within a
    moment of reaching it, so that no write sent to it is acknowledged; once
    the hosts reach each other it rejoins as the new primary's replica, and
    the key written before the cut is still there."""
    cid = "cut-cm"
    body, pw = create(stack, cleanup, clusters.valkey_cluster(cid, num_shards=1))
    old = next(n for n in nodes(body) if n["role"] == "primary")
    new = next(n for n in nodes(body) if n["role"] == "replica")
    with clusters.client(old["address"], old["port"], pw) as c:
        c.set("before", "cut")
        c.wait(1, 2000)
    left = HEARTBEAT_S + 0.5 - (time.monotonic() - stack.started_at)
    if left > 0:
        time.sleep(left)  # cairnd trusts host losses only after a heartbeat timeout

    host = stack.network.host(stack.agent_of(old["host_id"]).name)
    seen = []
    stack.network.cut(host)
    stack.network.split(host)
    try:
        cut_at = time.monotonic()

        def taken_over():
            ps = primaries(stack, cid)
            seen.append(len(ps))
            return ps and ps[0]["id"] == new["id"]
        wait_until(taken_over, 8, "the replica took over", interval=0.05)
        print(f"\ncut host, cluster mode: the replica took over "
              f"{(time.monotonic() - cut_at) * 1000:.0f} ms after the cut")
        # Cut for CUT_S in all, as long as a real outage.
        while time.monotonic() < cut_at + CUT_S:
            seen.append(len(primaries(stack, cid)))
            time.sleep(0.1)
        stack.network.mend(host)  # back, but not for the other hosts
    except BaseException:
        stack.network.mend(host)
        stack.network.unsplit(host)
        raise
    mended = time.monotonic()

    def fenced():
        ps = primaries(stack, cid)
        seen.append(len(ps))
        return [e for e in events(stack.api, cid) if e["type"] == "PrimaryFenced"]
    fence = wait_until(fenced, 10, "the old primary's writes held (PrimaryFenced)", interval=0.02)
    print(f"old primary's writes held {(time.monotonic() - mended) * 1000:.0f} ms after the "
          f"cut ended (or sooner: the API was polled)")
    try:
        check_held(stack, old, new, pw, fence, mended)
    finally:
        stack.network.unsplit(host)
    rejoined(stack, cid, old, new, pw)
    assert max(seen) == 1, f"the API named {max(seen)} primaries for the shard"


def check_held(stack, old, new, pw, fence, mended):
    """The fence names the old primary, and no write sent to it is
    acknowledged while it cannot hear of the takeover."""
    d = fence[-1]["detail"]
    eq((d["node"], d["primary"]), (old["id"], new["id"]), "the fence's nodes")
    assert d["config_epoch"] < d["primary_config_epoch"], d

    acked = []
    deadline = time.monotonic() + 2
    with clusters.client(old["address"], old["port"], pw, timeout=0.5) as c:
        while time.monotonic() < deadline:
            try:
                if c.set(f"stale-{len(acked)}", "x"):
                    acked.append(time.monotonic() - mended)
            except (redis.ResponseError, redis.TimeoutError, redis.ConnectionError):
                pass
    eq(acked, [], "writes the old primary acknowledged after it was fenced")
    eq(clusters.engine_role(old["address"], old["port"], pw), "primary",
       "the old primary's own word while it cannot hear of the takeover")


def rejoined(stack, cid, old, new, pw):
    """Once the hosts reach each other again, the old primary rejoins as a
    replica of the new one, its hold ended, and nothing written to it while
    held was applied."""
    wait_until(lambda: clusters.engine_role(old["address"], old["port"], pw) == "replica", 20,
               "the old primary rejoined as a replica")
    clusters.wait_available(stack.api, cid, timeout=30)
    with clusters.client(new["address"], new["port"], pw) as c:
        eq(c.get("before"), "cut", "the write from before the cut")
        eq(sum(c.exists(f"stale-{i}") for i in range(5)), 0, "no stale write applied")
    # The hold ends once it is a replica: its replication goes on.
    with clusters.client(new["address"], new["port"], pw) as c:
        c.set("after", "rejoin")
    with clusters.client(old["address"], old["port"], pw) as c:
        def replicated():
            try:
                return c.execute_command("READONLY") and c.get("after") == "rejoin"
            except redis.ResponseError:
                return False  # CLUSTERDOWN: back from a minority, it waits a moment to rejoin
        wait_until(replicated, 10, "the old primary replicates the new one's writes")
