"""test_compressed_push.py -- request bodies sent with Content-Encoding: gzip.

A metrics push gzipped by hand is stored like a plain one. The route's
limit holds for the expanded body too: a gzip bomb gets 413, however small
it is on the wire, and does not cost cairnd its size in memory. Damaged
gzip gets 400, a coding other than gzip 415. And the real cairn-agent
gzips its pushes: its log line for each push gives the bytes of JSON and
the bytes it sent, and cairnd stored what came.
"""

import gzip
import json
import time
import zlib

import expect
from agents import add_cluster, add_node
from expect import eq
from test_agent import agent_said, settle, stack  # noqa: F401 -- stack is a fixture
from test_metrics_api import hosts, points, query  # noqa: F401 -- hosts is a fixture

MIB = 1 << 20
METRICS_LIMIT = 16 * MIB  # the route's own limit; --max-body-bytes is 1 MiB


def post(inst, cred, raw, coding="gzip", path="/v1/agent/metrics"):
    headers = {"Authorization": f"Bearer {cred}", "Content-Type": "application/json"}
    if coding is not None:
        headers["Content-Encoding"] = coding
    return inst.anon.post(path, data=raw, headers=headers)


def padded(doc, size):
    """doc as JSON, followed by spaces up to size bytes: still the same JSON."""
    text = json.dumps(doc).encode()
    return text + b" " * (size - len(text))


def gzip_of_spaces(doc, size):
    """gzip of padded(doc, size), compressed piece by piece (size may be large)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    text = json.dumps(doc).encode()
    out = [z.compress(text)]
    left, piece = size - len(text), b" " * MIB
    while left > 0:
        out.append(z.compress(piece[:min(left, MIB)]))
        left -= MIB
    out.append(z.flush())
    return b"".join(out)


def vm_hwm_kib(pid):
    """The most memory the process has held (VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))


def test_gzipped_push_is_stored(hosts):
    inst, a, _ = hosts
    cluster = add_cluster(inst)
    nid = add_node(inst, a["host_id"], cluster)
    t0 = (int(time.time()) // 60 - 10) * 60
    codings = [None, "identity", "gzip", "x-gzip", "GZIP"]
    for k, coding in enumerate(codings):
        doc = {"period_s": 60, "samples": [{"node_id": nid, "at": t0 + 60 * k,
                                            "values": {"CacheHits": k + 1}}]}
        raw = json.dumps(doc).encode()
        r = post(inst, a["credential"], gzip.compress(raw) if "gzip" in str(coding).lower()
                 else raw, coding)
        eq(r.status_code, 204, f"push with Content-Encoding {coding}: {expect.describe(r)}")
    body = expect.json_ok(query(inst, cluster[0], names="CacheHits", stat="Sum",
                                start=str(t0), end=str(t0 + 60 * len(codings))))
    eq([v for _, v in points(body)], [1.0, 2.0, 3.0, 4.0, 5.0], "the samples stored")


def test_limit_holds_for_the_expanded_body(hosts):
    inst, a, _ = hosts
    cred = a["credential"]
    empty = {"period_s": 60, "samples": []}
    # Exactly at the route's limit once expanded: taken.
    r = post(inst, cred, gzip_of_spaces(empty, METRICS_LIMIT))
    eq(r.status_code, 204, f"a body that expands to the limit: {expect.describe(r)}")
    # One byte more: refused, though some 16 kB on the wire.
    raw = gzip_of_spaces(empty, METRICS_LIMIT + 1)
    assert len(raw) < 64 * 1024, len(raw)
    p = expect.problem(post(inst, cred, raw), "PAYLOAD_TOO_LARGE")
    assert "expands" in p["detail"] and str(METRICS_LIMIT) in p["detail"], p
    # A bomb: 256 MiB in 256 kB. Refused without cairnd holding it.
    bomb = gzip_of_spaces(empty, 256 * MIB)
    assert len(bomb) < MIB, len(bomb)
    expect.problem(post(inst, cred, bomb), "PAYLOAD_TOO_LARGE")
    hwm = vm_hwm_kib(inst.cairnd.pid)
    assert hwm < 128 * 1024, f"cairnd's peak memory is {hwm} KiB after a 256 MiB bomb"
    # Routes without a limit of their own take --max-body-bytes (1 MiB), expanded.
    sync = {"generation": 0, "engines": [], "nodes": []}
    r = post(inst, cred, gzip_of_spaces(sync, MIB), path="/v1/agent/sync")
    expect.json_ok(r)
    p = expect.problem(post(inst, cred, gzip_of_spaces(sync, MIB + 1), path="/v1/agent/sync"),
                       "PAYLOAD_TOO_LARGE")
    assert str(MIB) in p["detail"], p


def test_damaged_gzip_is_400(hosts):
    inst, a, _ = hosts
    good = gzip.compress(json.dumps({"period_s": 60, "samples": []}).encode())
    bad_crc = good[:-8] + bytes([good[-8] ^ 1]) + good[-7:]
    for raw, why in ((json.dumps({"period_s": 60, "samples": []}).encode(),
                      "incorrect header check"),
                     (good[:-3], "ends early"),
                     (bad_crc, "incorrect data check"),
                     (good + b"{}", "incorrect header check")):
        p = expect.problem(post(inst, a["credential"], raw), "MALFORMED_JSON")
        assert "not gzip" in p["detail"] and why in p["detail"], p


def test_other_codings_are_415(hosts):
    inst, a, _ = hosts
    raw = json.dumps({"period_s": 60, "samples": []}).encode()
    for coding in ("br", "deflate", "compress", "zstd", "gzip, gzip", "identity, gzip"):
        r = post(inst, a["credential"], raw, coding)
        p = expect.problem(r, "UNSUPPORTED_MEDIA_TYPE")
        assert coding in p["detail"], p
        eq(r.headers.get("Accept-Encoding"), "gzip", f"Accept-Encoding for {coding}")
    # The same on every route with a body.
    r = inst.api.post("/v1/tokens", data=json.dumps({"name": "br", "scope": "read"}),
                      headers={"Content-Type": "application/json", "Content-Encoding": "br"})
    expect.problem(r, "UNSUPPORTED_MEDIA_TYPE")
    r = inst.api.post("/v1/tokens", data=gzip.compress(b'{"name": "gz", "scope": "read"}'),
                      headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    eq(expect.json_ok(r, 201)["name"], "gz", "a token created from a gzip body")


def test_the_agent_gzips_its_pushes(stack):
    a = stack.agent(extra_args=["--metrics-interval", "1", "--metrics-period", "2",
                                "--log-level", "debug"])
    hid = stack.host_id(a)
    cluster = add_cluster(stack.inst)
    nid = add_node(stack.inst, hid, cluster)
    stack.wait_serving(hid, nid)
    pushes = settle(lambda: agent_said(a, "metrics pushed"), bool, 20, "a push taken by cairnd")
    for r in pushes:
        body, sent = int(r["body_bytes"]), int(r["sent_bytes"])
        assert sent < body, f"the agent sent {sent} bytes for {body} bytes of JSON: {r}"
    now = int(time.time())
    stored = points(expect.json_ok(query(stack.inst, cluster[0], names="CurrConnections",
                                         node_id=nid, start=str(now - 60), end=str(now + 2),
                                         period="2")))
    assert stored, "cairnd stored none of the agent's gzipped samples"
