"""writers.py -- the application the chaos suite keeps running: one writer
per cluster, SETting key after key for the whole run and recording each
acknowledged write with its time, and the read-back that checks them.

Every write has a sequence number, its value; its key is the number modulo
KEYSPACE, so a run of any length keeps a few thousand keys and one read-back
pass stays cheap. A key must hold its newest acknowledged value or a later
one (a write whose answer was lost may still have been applied): anything
older, or nothing, is a lost write.

The clients are the ones applications use: redis-py's cluster client,
rebuilt from the cluster's configuration endpoints after any error (see
HEALING in tests/system/test_ha.py), and redis-py's Sentinel client pointed
at cairnd's Sentinel-compatible listener.
"""

import collections
import threading
import time

import redis
from redis.cluster import ClusterNode, RedisCluster

import clusters
from agentstack import quiet_cluster_client
from test_ha import sentinel_master

KEYSPACE = 4000
INTERVAL_S = 0.01       # between two writes, as test_ha.Writer
CLIENT_TIMEOUT_S = 1.0  # a frozen node costs the writer this long, then it reconnects
RECONNECT_PAUSE_S = 0.05  # after a failure: no busy loop while a shard is down
READ_CHUNK = 500

# The writers expect errors, count them, and reconnect: no tracebacks on
# stderr, and no client left without a default node.
quiet_cluster_client()


class Writer:
    """One thread writing to one cluster through clients from connect()
    (a callable returning an object with set(), mget() and close()), a new
    client after any error."""

    def __init__(self, name, connect, keyspace=KEYSPACE):
        self.name = name
        self.connect = connect
        self.keyspace = keyspace
        self.acked_at = []  # by sequence number - 1: monotonic time of the ack, or None
        self.latest = {}    # key -> newest acknowledged sequence number
        self.errors = 0
        self.recent_errors = collections.deque(maxlen=1000)  # (monotonic time, error text)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"writer-{name}", daemon=True)

    def key(self, seq):
        return f"{self.name}:{seq % self.keyspace}"

    def _run(self):
        client = None
        while not self._stop.is_set():
            if client is None:
                client = self._connect()
                if client is None:
                    continue
            seq = len(self.acked_at) + 1
            try:
                client.set(self.key(seq), str(seq))
            except Exception as e:  # noqa: BLE001 -- any failure is a write not acknowledged
                self.recent_errors.append((time.monotonic(), f"{type(e).__name__}: {e}"[:80]))
                self._record(seq, None)
                client = _close(client)
                time.sleep(RECONNECT_PAUSE_S)
                continue
            self._record(seq, time.monotonic())
            time.sleep(INTERVAL_S)

    def _connect(self):
        try:
            return self.connect()
        except Exception:  # noqa: BLE001 -- discovery or every seed down: try again
            time.sleep(RECONNECT_PAUSE_S)
            return None

    def _record(self, seq, at):
        with self._lock:
            self.acked_at.append(at)
            if at is None:
                self.errors += 1
            else:
                self.latest[self.key(seq)] = seq

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def snapshot(self):
        """{key: newest acknowledged sequence number} as of now."""
        with self._lock:
            return dict(self.latest)

    def ack_time(self, seq):
        return self.acked_at[seq - 1]

    def counts(self):
        """(writes sent, writes acknowledged) so far."""
        with self._lock:
            return len(self.acked_at), len(self.acked_at) - self.errors

    def errors_since(self, t):
        """The errors of the writes that failed since t, most frequent
        first, as [(text, count)]."""
        return collections.Counter(e for at, e in list(self.recent_errors)
                                   if at >= t).most_common()

    def acked_since(self, t):
        """How many writes were acknowledged at or after monotonic time t."""
        return sum(1 for at in self._times_since(t) if at is not None)

    def longest_gap(self, since, until):
        """The longest time in [since, until] without an acknowledged write,
        in seconds: how long the application could not write."""
        gap, last = 0.0, since
        for at in self._times_since(since):
            if at is not None and at <= until:
                gap, last = max(gap, at - last), at
        return max(gap, until - last)

    def _times_since(self, t):
        """The ack times (None for failures) of the writes sent since about
        t, newest last: the writes are in order, so scan back from the end."""
        with self._lock:
            times = self.acked_at
            i = len(times)
            while i > 0 and (times[i - 1] is None or times[i - 1] >= t):
                i -= 1
            return times[i:]


def _close(client):
    try:
        client.close()
    except Exception:  # noqa: BLE001 -- a broken client may fail to close
        pass
    return None


class SeedCache:
    """The configuration endpoints of a sharded cluster as the API last gave
    them, so that clients can still be made while cairnd is down (an
    application keeps its endpoints; it does not ask the control plane
    before every reconnect)."""

    def __init__(self, api, cid):
        self.api, self.cid = api, cid
        self.seeds = []

    def get(self):
        try:
            body = clusters.get(self.api, self.cid)
            self.seeds = [(e["address"], e["port"]) for e in body["endpoints"]["configuration"]]
        except Exception:  # noqa: BLE001 -- cairnd down or restarting: keep the last ones
            pass
        return self.seeds


def cluster_connector(api, cid, pw):
    """A connect() for a sharded cluster: redis-py's cluster client."""
    seeds = SeedCache(api, cid)

    def connect():
        nodes = [ClusterNode(host, port) for host, port in seeds.get()]
        return RedisCluster(startup_nodes=nodes, password=pw, decode_responses=True,
                            socket_timeout=CLIENT_TIMEOUT_S,
                            socket_connect_timeout=CLIENT_TIMEOUT_S)
    return connect


def sentinel_connector(stack, cid, pw):
    """A connect() for a group: the primary through the Sentinel listener."""
    return lambda: sentinel_master(stack, cid, pw)[1]


def read_back(connect, keys, attempts=5):
    """{key: value} for every key, read through a fresh client from connect()
    in chunks (the cluster client splits each by slot); the whole pass is
    tried again on an error, up to `attempts` times."""
    for attempt in range(attempts):
        client = None
        try:
            client = connect()
            out = {}
            for i in range(0, len(keys), READ_CHUNK):
                chunk = keys[i:i + READ_CHUNK]
                values = (client.mget_nonatomic(chunk) if isinstance(client, RedisCluster)
                          else client.mget(chunk))
                out.update(zip(chunk, values))
            return out
        except (redis.RedisError, redis.exceptions.RedisClusterException, OSError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
        finally:
            if client is not None:
                _close(client)
