"""Requests that once killed cairnd, rerouted it or locked everyone out, sent
exactly as they were: each is answered with a problem document (or a close),
and cairnd goes on serving."""

import json
import socket
import time

import pytest
import requests

import agents
import expect
import harness
from expect import eq


def alive(inst):
    """cairnd still runs and answers."""
    assert inst.cairnd.proc.alive(), f"cairnd exited:\n{harness.tail(inst.cairnd.log_path)}"
    eq(requests.get(inst.url + "/healthz", timeout=5).status_code, 200, "GET /healthz")


def raw(port, data, timeout=5.0):
    """Send raw bytes on a new connection; return everything the server sent
    until it closed the connection, ending with b"<quiet>" when it was still
    open after `timeout` seconds of silence."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out, closed = harness.drain(s, timeout)
        return out if closed else out + b"<quiet>"


def parse(answer):
    """(status, headers, body) of the first response in raw bytes."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    return int(lines[0].split()[1]), headers, body[:length]


def problem_of(answer, status, code):
    """Assert a raw answer is a problem document with status and code."""
    got, headers, body = parse(answer)
    assert got == status, f"expected {status}, got {answer[:600]!r}"
    eq(headers.get("content-type"), "application/problem+json", "Content-Type")
    doc = json.loads(body.decode("utf-8"))  # UTF-8 and JSON, whatever was sent
    eq(doc["code"], code, "code")
    eq(doc["status"], status, "status member")
    return doc


# Paths that are not UTF-8 once decoded, or that decode to a NUL: before,
# the first three aborted cairnd ("out of memory encoding JSON").
@pytest.mark.parametrize("target", [
    "/%ff", "/%c0%af", "/%ed%a0%80", "/v1/clusters/x%00/auth", "/healthz%00",
    "/healthz?x=%ff", "/v1/clusters?status=%00", "/%0d%0aX:%20y", "/v1/clusters/a%2Fb",
])
def test_bad_bytes_in_the_target_are_400(module_cairn, target):
    r = module_cairn.anon.get(target)
    expect.problem(r, "MALFORMED_REQUEST")  # instance: the path as sent
    alive(module_cairn)


@pytest.mark.parametrize("request_line,instance", [
    (b"GET /\xff HTTP/1.1", "/\ufffd"),
    (b"FO\xff /healthz HTTP/1.1", "/healthz"),
    (b"GET /healthz?a=\xff HTTP/1.1", "/healthz"),
    (b"GET /%zz HTTP/1.1", "/%zz"),
    (b"GET /a%f HTTP/1.1", "/a%f"),
])
def test_raw_bytes_in_the_request_line_are_400(module_cairn, request_line, instance):
    answer = raw(module_cairn.cairnd.port, request_line + b"\r\nHost: x\r\n\r\n")
    doc = problem_of(answer, 400, "MALFORMED_REQUEST")
    eq(doc["instance"], instance, "instance: the path as sent, scrubbed")
    alive(module_cairn)


def test_access_log_shows_bad_bytes_escaped(module_cairn):
    log = module_cairn.cairnd.log
    start = log.size()
    raw(module_cairn.cairnd.port, b"GET /zz\xff\x1b HTTP/1.1\r\nHost: x\r\n\r\n")
    harness.wait_until(lambda: 'path="/zz\\xff\\x1b"' in log.text(start), 5,
                       what="the access log line with the path escaped")
    assert "\x1b" not in log.text(start) and b"\xff" not in log.text(start).encode("utf-8")


@pytest.mark.parametrize("header", [b"Content-Type: app\xff", b"Content-Encoding: g\xffz"])
def test_bytes_quoted_back_from_headers_are_scrubbed(module_cairn, header):
    """A Content-Type or Content-Encoding holding 0xff aborted cairnd when it
    was quoted in the 415's detail."""
    other = (b"Content-Type: application/json" if header.startswith(b"Content-Encoding")
             else b"")
    head = (b"POST /v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + module_cairn.admin_token.encode() + b"\r\n" + header + b"\r\n"
            + (other + b"\r\n" if other else b"") + b"Content-Length: 2\r\n\r\n{}")
    doc = problem_of(raw(module_cairn.cairnd.port, head), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert "\ufffd" in doc["detail"], doc
    alive(module_cairn)


def test_nul_in_the_path_cannot_reroute_a_delete(module_cairn):
    """DELETE /v1/clusters/NAME%00/pending-changes answered 202 and deleted
    the whole cluster: libmicrohttpd's path ended at the NUL."""
    cid, _ = agents.add_cluster(module_cairn)
    r = module_cairn.api.delete(f"/v1/clusters/{cid}%00/pending-changes")
    expect.problem(r, "MALFORMED_REQUEST")
    r = module_cairn.api.get(f"/v1/clusters/{cid}%00/auth")
    expect.problem(r, "MALFORMED_REQUEST")
    eq(module_cairn.psql(f"SELECT count(*) FROM clusters WHERE id = '{cid}'").strip(), "1",
       "the cluster is still there")
    eq(module_cairn.psql(f"SELECT count(*) FROM operations WHERE cluster_id = '{cid}'").strip(),
       "0", "no operation was queued")


def test_control_characters_in_a_header_are_400(module_cairn):
    answer = raw(module_cairn.cairnd.port,
                 b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a\x01b\r\n\r\n")
    problem_of(answer, 400, "MALFORMED_REQUEST")


def test_unknown_transfer_encoding_is_501_at_once(module_cairn):
    """It used to get no answer until the 30 s idle timeout."""
    started = time.monotonic()
    answer = raw(module_cairn.cairnd.port,
                 b"POST /v1/tokens HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n")
    problem_of(answer, 501, "UNSUPPORTED_TRANSFER_CODING")
    assert time.monotonic() - started < 3, "answered at once, and the connection closed"


@pytest.mark.parametrize("framing", [
    b"Content-Length: 2\r\nContent-Length: 3",
    b"Content-Length: 2\r\nTransfer-Encoding: chunked",
])
def test_ambiguous_framing_is_400(module_cairn, framing):
    answer = raw(module_cairn.cairnd.port,
                 b"POST /v1/tokens HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n\r\n{}")
    problem_of(answer, 400, "MALFORMED_REQUEST")
    alive(module_cairn)


def test_negative_content_length_is_refused_and_closed(module_cairn):
    """libmicrohttpd refuses it before cairnd sees the request (with an HTML
    400 whose status line it sends twice, a bug fixed in libmicrohttpd 1.0);
    what matters here is that the connection is closed and cairnd lives."""
    answer = raw(module_cairn.cairnd.port,
                 b"POST /v1/tokens HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert not answer.endswith(b"<quiet>"), "the connection is closed"
    alive(module_cairn)


def _slow_clients(port, source, count):
    """Open count connections from source that send half a request and stop.
    Returns (sockets, refused at connect)."""
    socks, refused = [], 0
    for _ in range(count):
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        except OSError:
            s.close()
            refused += 1
    return socks, refused


def _closed_by_server(socks):
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def test_slow_clients_from_one_address_do_not_lock_others_out(cairnd_factory, fresh_db):
    """About 1,015 open connections used to stop cairnd accepting any more
    (its descriptor limit): 1,100 slow clients locked out health checks and
    agents. Now the descriptor limit is raised, one address gets at most
    --max-connections-per-address, and everyone else is still served."""
    c = cairnd_factory(fresh_db.url, args=["--max-connections-per-address", "300"])
    socks, refused = _slow_clients(c.port, "127.0.0.2", 1100)
    try:
        started = time.monotonic()
        eq(requests.get(c.url + "/healthz", timeout=5).status_code, 200, "healthz from elsewhere")
        assert time.monotonic() - started < 1.0
        time.sleep(0.5)
        closed = _closed_by_server(socks) + refused
        eq(1100 - closed, 300, "slow connections kept from 127.0.0.2")
    finally:
        for s in socks:
            s.close()


def test_descriptor_limit_is_raised(cairnd_factory, fresh_db):
    c = cairnd_factory(fresh_db.url)
    with open(f"/proc/{c.pid}/limits") as f:
        row = next(line for line in f if line.startswith("Max open files"))
    soft, hard = row.split()[3:5]
    eq(soft, hard, "cairnd's soft descriptor limit is raised to the hard one")


def test_past_max_connections_api_gets_503_but_agents_and_probes_are_served(
        cairnd_factory, fresh_db, pg):
    c = cairnd_factory(fresh_db.url, args=["--max-connections", "20",
                                           "--max-connections-per-address", "0",
                                           "--agent-bootstrap-token", "b" * 32])
    inst_token = harness.create_token(fresh_db.url, "t", "admin")
    with harness.idle_connections(c.port, 25):
        r = requests.get(c.url + "/v1/node-types", timeout=5,
                         headers={"Authorization": f"Bearer {inst_token}"})
        expect.problem(r, "TOO_MANY_CONNECTIONS")
        eq(r.headers.get("Retry-After"), "1", "Retry-After")
        eq(requests.get(c.url + "/healthz", timeout=5).status_code, 200, "health probe")
        r = requests.post(c.url + "/v1/agent/register", json={}, timeout=5,
                          headers={"Authorization": "Bearer " + "b" * 32})
        eq(r.status_code, 400, "an agent's registration is read (and found empty)")
    harness.wait_until(
        lambda: requests.get(c.url + "/v1/node-types", timeout=5,
                             headers={"Authorization": f"Bearer {inst_token}"}).status_code
        == 200, 5, what="the API served again once the connections closed")
