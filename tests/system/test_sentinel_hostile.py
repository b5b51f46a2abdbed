"""test_sentinel_hostile.py -- cairnd's Sentinel-compatible listener under
the requests that once froze or bloated it, sent by hand over raw sockets
to a real cairnd (the module's ClusterStack, --sentinel-max-clients 300):

- `*2147483647` from 200 connections: hiredis allocated 2^31 slots and
  freed them one by one, ~10 s of the listener's thread per connection,
  and SIGTERM no longer stopped cairnd;
- a declared `$2000000000` string was buffered as long as bytes came;
- connections were never closed, however many, however idle;
- `AUTH <password>\\0x` was accepted: the argument was read as a C string;
- an error reply quoting a client's CR LF let it forge the next reply;
- each subscription cost a query ten times a second.

A one-node group gives the tests a real password and a real primary to
discover. Every socket a test opens is closed when it ends, pass or fail.
"""

import contextlib
import signal
import socket
import time

import pytest
import redis

import agents
import clusters
import expect
import harness
from clusters import password, wait_available, wait_until
from expect import eq

MAX_CLIENTS = 300
MAX_UNAUTHENTICATED = 128   # SENTINEL_MAX_UNAUTHENTICATED (at most half of MAX_CLIENTS)
AUTH_TIMEOUT_S = 10         # SENTINEL_AUTH_TIMEOUT_US
SHUTDOWN_TIMEOUT_S = 10     # cairnd's default --shutdown-timeout
FLOOD = 200
SUBSCRIBERS = 200

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "sentinel-hostile", cairnd_args=["--sentinel-max-clients", str(MAX_CLIENTS)])


@pytest.fixture(scope="module")
def group(stack):
    """A one-node group, cluster mode disabled: (id, password, primary)."""
    cid = "hostile"
    expect.json_ok(stack.api.post("/v1/clusters",
                                  json=clusters.redis_group(cid, replicas_per_shard=0)), 202)
    body = wait_available(stack.api, cid)
    primary = body["endpoints"]["primary"]
    return cid, password(stack.api, cid), (primary["address"], str(primary["port"]))


@pytest.fixture
def sockets(stack):
    """connect() opens a raw connection to the listener; every one is closed
    when the test ends."""
    with contextlib.ExitStack() as opened:
        def connect():
            s = socket.create_connection(("127.0.0.1", stack.sentinel_port), timeout=5)
            opened.callback(s.close)
            return s
        yield connect


def resp(*args):
    """A request as clients send one: an array of bulk strings."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_exactly(s, n, timeout=5):
    s.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise AssertionError(f"closed after {data!r}, {n} bytes expected")
        data += chunk
    return data


def read_line(s, timeout=5):
    """One reply line (simple string, error, integer or header), CRLF included."""
    s.settimeout(timeout)
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = s.recv(1)
        if not chunk:
            raise AssertionError(f"closed after {data!r}")
        data += chunk
    return data


def ask(s, *args):
    s.sendall(resp(*args))
    return read_line(s)


def closed_by_server(s, timeout):
    return harness.drain(s, timeout)[1]


def send_quietly(s, data):
    """Send what a hostile client sends; the listener may have closed s."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def discover(stack, cid, pw):
    """(address, port) of cid's primary as redis-py asks the listener for it,
    on a connection of its own, closed afterwards."""
    c = redis.Redis(host="127.0.0.1", port=stack.sentinel_port, password=pw,
                    socket_timeout=2, socket_connect_timeout=2)
    try:
        found = c.execute_command("SENTINEL", "get-master-addr-by-name", cid)
    finally:
        c.connection_pool.disconnect()
    return tuple(x.decode() for x in found)


def test_array_count_flood_leaves_the_listener_responsive(stack, group, sockets):
    cid, pw, primary = group
    hostile = [sockets() for _ in range(FLOOD)]
    for s in hostile:
        send_quietly(s, b"*2147483647\r\n")
    for s in hostile[::2]:
        s.close()   # as found: the count, then close

    start = time.monotonic()
    found = discover(stack, cid, pw)
    took = time.monotonic() - start
    print(f"\nafter {FLOOD} '*2147483647' connections: a discovery in {took * 1000:.0f} ms")
    eq(found, primary, "the primary, discovered")
    assert took < 1, f"the listener took {took:.2f} s to answer"
    told = b"-ERR Protocol error: array of 2147483647 elements, more than 64\r\n"
    answers = [harness.drain(s, 2) for s in hostile[1::2]]
    assert all(closed for _, closed in answers), "a connection sending *2147483647 stays open"
    # Each is told why, unless it was closed first to make room for others.
    assert {said for said, _ in answers} <= {told, b""}, answers
    assert told in {said for said, _ in answers}, answers


@pytest.mark.parametrize("head", [b"$2000000000\r\n", b"*1\r\n$2000000000\r\n"],
                         ids=["string", "request"])
def test_declared_huge_string_is_not_buffered(stack, sockets, head):
    pid = stack.cairnd.pid
    before = agents.proc_rss_kib(pid)
    s = sockets()
    s.sendall(head)
    chunk, sent = b"x" * (1 << 20), 0
    s.settimeout(5)
    try:
        while sent < 200 << 20:
            s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    time.sleep(0.2)
    after = agents.proc_rss_kib(pid)
    print(f"\n{head!r}: {sent >> 20} MiB taken before the close; cairnd's RSS {before} KiB -> "
          f"{after} KiB")
    assert sent < 200 << 20, "the listener read 200 MiB of one string"
    assert after - before < 4096, f"cairnd's RSS grew by {after - before} KiB"


def test_idle_connections(stack, group, sockets):
    """Unauthenticated: closed after AUTH_TIMEOUT_S. Authenticated (idle
    for less than 300 s) and subscribed: kept, and they answer PING."""
    cid, pw, _ = group
    stranger, known, subscriber = sockets(), sockets(), sockets()
    start = time.monotonic()
    eq(ask(stranger, "PING"), b"+PONG\r\n", "a stranger's PING")
    eq(ask(known, "AUTH", pw), b"+OK\r\n", "AUTH")
    eq(ask(subscriber, "AUTH", pw), b"+OK\r\n", "AUTH")
    subscriber.sendall(resp("SUBSCRIBE", "+switch-master"))
    read_exactly(subscriber, len(b"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n"))

    assert closed_by_server(stranger, AUTH_TIMEOUT_S + 2), \
        f"an unauthenticated connection open after {AUTH_TIMEOUT_S + 2} s"
    took = time.monotonic() - start
    print(f"\nan unauthenticated connection was closed after {took:.1f} s")
    assert took >= AUTH_TIMEOUT_S - 0.5, f"closed after {took:.1f} s"
    eq(ask(known, "PING"), b"+PONG\r\n", "an authenticated client's PING")
    subscriber.sendall(resp("PING"))
    eq(read_exactly(subscriber, len(b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")),
       b"*2\r\n$4\r\npong\r\n$0\r\n\r\n", "a subscriber's PING")


def test_arguments_are_compared_in_full(stack, group, sockets):
    cid, pw, primary = group
    s = sockets()
    wrong = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    eq(ask(s, "AUTH", pw.encode() + b"\0x"), wrong, "AUTH <password>\\0x")
    eq(ask(s, "AUTH", pw.encode() + b"\0"), wrong, "AUTH <password>\\0")
    eq(ask(s, "AUTH", "default", pw.encode() + b"\0x"), wrong, "AUTH default <password>\\0x")
    eq(ask(s, "HELLO", "2", "AUTH", "default", pw.encode() + b"\0x"), wrong,
       "HELLO 2 AUTH default <password>\\0x")
    eq(ask(s, "SENTINEL", "get-master-addr-by-name", cid), b"-NOAUTH Authentication required.\r\n",
       "still not authenticated")
    eq(ask(s, "AUTH", pw), b"+OK\r\n", "AUTH <password>")
    eq(ask(s, "SENTINEL", "get-master-addr-by-name", cid.encode() + b"\0x"), b"*-1\r\n",
       "a cluster name with a NUL and more")
    eq(ask(s, "PING\0x"), b"-ERR unknown command 'PING?x'\r\n", "PING\\0x")
    eq(ask(s, "sentinel", "get-master-addr-by-name", cid), b"*2\r\n", "lower case still works")
    read_exactly(s, sum(len(b"$%d\r\n%s\r\n" % (len(p), p.encode())) for p in primary))


def test_error_replies_cannot_forge_a_reply(stack, group, sockets):
    """A client's CR and LF never reach the reply that quotes it."""
    _, pw, _ = group
    s = sockets()
    eq(ask(s, "HELLO", "2", "X\r\n+OK"), b"-ERR Syntax error in HELLO option 'X??+OK'\r\n",
       "HELLO with a CRLF option")
    eq(ask(s, "AUTH", pw), b"+OK\r\n", "AUTH")
    eq(ask(s, "FOO\r\n+OK"), b"-ERR unknown command 'FOO??+OK'\r\n", "a command with a CRLF")
    eq(ask(s, "PING"), b"+PONG\r\n", "the next reply is PING's")


def test_connection_caps(stack, group, sockets):
    cid, pw, primary = group
    # Unauthenticated: the oldest gives way to each newcomer beyond the cap.
    strangers = [sockets() for _ in range(MAX_UNAUTHENTICATED)]
    for s in strangers:
        eq(ask(s, "PING"), b"+PONG\r\n", "a stranger's PING")
    newcomer = sockets()
    eq(ask(newcomer, "PING"), b"+PONG\r\n", f"the stranger number {MAX_UNAUTHENTICATED + 1}")
    assert closed_by_server(strangers[0], 2), "the oldest stranger is still connected"
    eq(ask(strangers[1], "PING"), b"+PONG\r\n", "the next oldest stranger")
    # A client with a token still gets in.
    eq(discover(stack, cid, pw), primary, "discovered while strangers fill their share")
    for s in strangers + [newcomer]:
        s.close()

    # Every connection in use and authenticated: the next one is refused,
    # and one gets in again once a client leaves.
    def knock():
        """A new connection: b"" when admitted (then authenticated), else
        what the listener said before closing it."""
        s = sockets()
        said, closed = harness.drain(s, 0.3)
        if closed:
            return s, said
        eq(ask(s, "AUTH", pw), b"+OK\r\n", "AUTH on an admitted connection")
        return s, b""
    members = []
    for i in range(MAX_CLIENTS):
        members.append(sockets())
        eq(ask(members[-1], "AUTH", pw), b"+OK\r\n", f"AUTH on connection {i + 1}")
    _, said = knock()
    eq(said, b"-ERR max number of clients reached\r\n", f"connection {MAX_CLIENTS + 1}")
    members[0].close()
    wait_until(lambda: knock()[1] == b"", 5, "a connection admitted once a client left")


def test_subscribers_cost_one_read_per_group(stack, group, sockets):
    """Each round (10 a second), a group's primary is read once however many
    subscribe to it: a token holder's hundreds of subscriptions do not
    become thousands of queries a second."""
    _, pw, _ = group

    def transaction_rate():
        def count():
            return int(stack.db.psql("SELECT xact_commit + xact_rollback FROM pg_stat_database"
                                     " WHERE datname = current_database()"))
        time.sleep(1.5)   # PostgreSQL counts a session's transactions up to a second late
        before, start = count(), time.monotonic()
        time.sleep(3)
        return (count() - before) / (time.monotonic() - start)

    alone = transaction_rate()
    subscribers = []
    for _ in range(SUBSCRIBERS):
        s = sockets()
        eq(ask(s, "AUTH", pw), b"+OK\r\n", "AUTH")
        s.sendall(resp("SUBSCRIBE", "+switch-master"))
        subscribers.append(s)
    for s in subscribers:
        read_exactly(s, len(b"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n"))
    watched = transaction_rate()
    print(f"\ncairnd's database: {alone:.0f} transactions/s, {watched:.0f} with {SUBSCRIBERS} "
          f"subscribers to one group")
    assert watched - alone < SUBSCRIBERS, \
        f"{SUBSCRIBERS} subscribers cost {watched - alone:.0f} transactions/s"


def test_sigterm_with_hostile_connections_open(stack, sockets):
    hostile = [sockets() for _ in range(FLOOD)]
    for i, s in enumerate(hostile):
        send_quietly(s, [b"*2147483647\r\n", b"$2000000000\r\nxxxx", b"*3\r\n$4\r\nAUTH\r\n",
                         b""][i % 4])
    start = time.monotonic()
    rc = stack.cairnd.stop(signal.SIGTERM, timeout=SHUTDOWN_TIMEOUT_S + 5)
    took = time.monotonic() - start
    print(f"\ncairnd stopped {took * 1000:.0f} ms after SIGTERM with {FLOOD} hostile connections")
    try:
        eq(rc, 0, "cairnd's exit code after SIGTERM")
        assert took < SHUTDOWN_TIMEOUT_S, f"cairnd took {took:.1f} s to stop"
    finally:
        stack.restart_cairnd()
