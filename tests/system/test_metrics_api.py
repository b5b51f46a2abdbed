"""test_metrics_api.py -- cairnd's metric store and query API, fed over the
agent protocol with samples whose values are known, so every statistic can
be checked exactly: POST /v1/agent/metrics (validation, only the host's own
nodes, a repeated sample replaces the first), GET /v1/metrics/catalog, and
GET /v1/clusters/{id}/metrics (stats across nodes, per node, periods,
ranges in RFC 3339 and epoch seconds, the 1,440-point limit, errors).

Nodes are placed with SQL as the scheduler would; no engine runs.
"""

import calendar
import re
import statistics
import time

import pytest

import expect
import harness
from agents import add_cluster, add_node
from expect import eq
from test_agent_protocol import BOOTSTRAP, register, sync

AGENT_ARGS = ["--agent-bootstrap-token", BOOTSTRAP, "--approve-bootstrap-hosts"]


@pytest.fixture
def hosts(pg, fresh_db, cairnd_factory):
    c = cairnd_factory(fresh_db.url, AGENT_ARGS)
    from conftest import make_instance
    inst = make_instance(pg, fresh_db, c)
    a = register(inst, name="vm-m1")
    b = register(inst, name="vm-m2", ports=(7100, 7199))
    for h in (a, b):
        expect.json_ok(sync(inst, h["credential"]))
    return inst, a, b


def push(inst, cred, samples, period_s=60, **extra):
    body = {"period_s": period_s, "samples": samples}
    body.update(extra)
    return inst.anon.post("/v1/agent/metrics", json=body,
                          headers={"Authorization": f"Bearer {cred}"})


def query(inst, cid, **params):
    return inst.api.get(f"/v1/clusters/{cid}/metrics", params=params)


def points(body, i=0):
    return [(p["timestamp"], p["value"]) for p in body["series"][i]["points"]]


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_catalog_lists_every_metric(hosts):
    inst, _, _ = hosts
    body = expect.json_ok(inst.api.get("/v1/metrics/catalog"))
    eq(body["namespace"], "Cairn/Cache", "namespace")
    by_name = {m["name"]: m for m in body["metrics"]}
    for name in ("CPUUtilization", "FreeableMemory", "EngineCPUUtilization", "CurrConnections",
                 "CacheHits", "CacheHitRate", "IsPrimary", "ReplicationLag", "GetTypeCmds",
                 "GetTypeCmdsLatency", "SetTypeCmds", "NonKeyTypeCmdsLatency"):
        assert name in by_name, name
    eq((by_name["CacheHits"]["unit"], by_name["CacheHits"]["kind"]), ("Count", "counter"), "hits")
    eq((by_name["CPUUtilization"]["unit"], by_name["CPUUtilization"]["source"]),
       ("Percent", "host"), "cpu")
    eq(by_name["GetTypeCmdsLatency"]["unit"], "Microseconds", "latency unit")
    assert all(m["description"] for m in body["metrics"])


def test_statistics_across_nodes_and_periods(hosts):
    inst, a, b = hosts
    cluster = add_cluster(inst)
    n1 = add_node(inst, a["host_id"], cluster)
    n2 = add_node(inst, b["host_id"], cluster)
    other = add_node(inst, b["host_id"], add_cluster(inst))
    t0 = (int(time.time()) // 3600 - 2) * 3600  # two hours ago, on the hour
    # Ten minutes of each node: n1 counts 10, 20, ..., n2 counts 1, 2, ...
    s1 = [{"node_id": n1, "at": t0 + 60 * k,
           "values": {"GetTypeCmds": 10 * (k + 1), "CPUUtilization": 50.0, "NotAMetric": 1}}
          for k in range(10)]
    s2 = [{"node_id": n2, "at": t0 + 60 * k, "values": {"GetTypeCmds": k + 1}}
          for k in range(10)]
    eq(push(inst, a["credential"], s1).status_code, 204, "push of vm-m1")
    eq(push(inst, b["credential"], s2 + [{"node_id": other, "at": t0, "values": {
        "GetTypeCmds": 1000}}]).status_code, 204, "push of vm-m2")
    # A node of another host is not taken from this one.
    eq(push(inst, a["credential"], [{"node_id": n2, "at": t0, "values": {"GetTypeCmds": 99999}}])
       .status_code, 204, "push for a node on another host")
    cid = cluster[0]
    rng = {"start": iso(t0), "end": str(t0 + 600)}

    def stat(name, **kw):
        return points(expect.json_ok(query(inst, cid, names="GetTypeCmds", stat=name,
                                           **dict(rng, **kw))))

    minute = [(iso(t0 + 60 * k), None) for k in range(10)]
    eq([v for _, v in stat("Sum")], [11.0 * (k + 1) for k in range(10)], "Sum per minute")
    eq([t for t, _ in stat("Sum")], [t for t, _ in minute], "timestamps")
    eq([v for _, v in stat("Average")], [5.5 * (k + 1) for k in range(10)], "Average")
    eq([v for _, v in stat("Minimum")], [1.0 * (k + 1) for k in range(10)], "Minimum")
    eq([v for _, v in stat("Maximum")], [10.0 * (k + 1) for k in range(10)], "Maximum")
    eq([v for _, v in stat("SampleCount")], [2.0] * 10, "SampleCount")
    # Five-minute periods: Sum adds both nodes' five minutes.
    five = stat("Sum", period="300")
    eq(five, [(iso(t0), 11.0 * 15), (iso(t0 + 300), 11.0 * 40)], "Sum per 5 minutes")
    # Percentiles are across the nodes' averages in a bucket (n1: 30, n2: 3),
    # the same from the samples (a 2-minute period) as from the rollups.
    p = stat("p50", period="300")[0][1]
    assert abs(p - statistics.median([30, 3])) < 1e-6, p
    p = stat("p90", period="120")[0][1]
    assert abs(p - (1.5 + 0.9 * (15 - 1.5))) < 1e-4, p
    # One node; a series per node.
    one = points(expect.json_ok(query(inst, cid, names="GetTypeCmds", stat="Sum", node_id=n2,
                                      **rng)))
    eq([v for _, v in one], [1.0 * (k + 1) for k in range(10)], "node n2 alone")
    per = expect.json_ok(query(inst, cid, names="GetTypeCmds,CPUUtilization", stat="Average",
                               group_by="node", **rng))
    got = {(s["name"], s["node_id"]): [p["value"] for p in s["points"]] for s in per["series"]}
    eq(got[("GetTypeCmds", n1)], [10.0 * (k + 1) for k in range(10)], "n1's series")
    eq(got[("CPUUtilization", n1)], [50.0] * 10, "n1's CPU")
    assert ("CPUUtilization", n2) not in got, "n2 has no CPU values"
    # A sample pushed again replaces the first.
    eq(push(inst, a["credential"], [dict(s1[0], values={"GetTypeCmds": 7})]).status_code, 204,
       "push again")
    eq(stat("Sum")[0][1], 8.0, "the replaced value counts")


def test_query_errors_and_limits(hosts):
    inst, a, _ = hosts
    cluster = add_cluster(inst)
    add_node(inst, a["host_id"], cluster)
    cid = cluster[0]
    body = expect.json_ok(query(inst, cid, names="CPUUtilization"))
    eq((body["period"], body["stat"], len(body["series"])), (60, "Average", 1), "defaults")
    eq(body["series"][0]["points"], [], "no data yet")
    for params, field in (({"names": "Nope"}, "names"), ({}, "names"),
                          ({"names": "CacheHits", "stat": "Median"}, "stat"),
                          ({"names": "CacheHits", "period": "0"}, "period"),
                          ({"names": "CacheHits", "start": "yesterday"}, "start"),
                          ({"names": "CacheHits", "group_by": "shard"}, "group_by"),
                          ({"names": "CacheHits", "node_id": "n1"}, "node_id")):
        expect.problem(query(inst, cid, **params), "INVALID_QUERY_PARAMETER", fields=[field])
    now = int(time.time())
    p = expect.problem(query(inst, cid, names="CacheHits", start=str(now - 86400 * 2),
                             end=str(now), period="60"), "INVALID_QUERY_PARAMETER",
                       fields=["period"])
    msg = p["errors"][0]["message"]
    assert "2880 points" in msg and "1440" in msg, p
    expect.json_ok(query(inst, cid, names="CacheHits", start=str(now - 86400), end=str(now),
                         period="60"))
    expect.problem(query(inst, cid, names="CacheHits", start=str(now), end=str(now - 60)),
                   "INVALID_QUERY_PARAMETER", fields=["end"])
    expect.problem(query(inst, "no-such-cluster", names="CacheHits"), "CLUSTER_NOT_FOUND")


def test_push_validation(hosts):
    inst, a, _ = hosts
    cred = a["credential"]
    for body, fields in (({"samples": []}, ["period_s"]),
                         ({"period_s": 0, "samples": []}, ["period_s"]),
                         ({"period_s": 60, "samples": [{"at": 1}]}, ["samples[0].node_id",
                                                                     "samples[0].values"]),
                         ({"period_s": 60, "samples": [{"node_id": "x", "at": -1, "values": {}}]},
                          ["samples[0].at"])):
        r = inst.anon.post("/v1/agent/metrics", json=body,
                           headers={"Authorization": f"Bearer {cred}"})
        expect.problem(r, "VALIDATION_FAILED", fields=fields)
    # Only agents push.
    expect.problem(inst.api.post("/v1/agent/metrics", json={"period_s": 60, "samples": []}),
                   "FORBIDDEN")


def test_retention_drops_old_partitions(hosts, cairnd_factory, fresh_db):
    """Samples older than the retention live in their own daily partition;
    the housekeeping (hourly, and when cairnd starts) drops it whole."""
    inst, a, _ = hosts
    cluster = add_cluster(inst)
    n1 = add_node(inst, a["host_id"], cluster)
    old = (int(time.time()) // 86400 - 20) * 86400 + 3600  # 20 days ago, 01:00 UTC
    recent = (int(time.time()) // 60 - 5) * 60
    eq(push(inst, a["credential"], [{"node_id": n1, "at": old, "values": {"CacheHits": 5}},
                                    {"node_id": n1, "at": recent, "values": {"CacheHits": 7}}])
       .status_code, 204, "push")
    day = time.strftime("%Y%m%d", time.gmtime(old))
    assert f"metric_samples_{day}" in inst.psql(
        "SELECT string_agg(relname, ' ') FROM pg_class WHERE relname LIKE 'metric_samples_%'")
    rng = {"start": str(old - 3600), "end": str(old + 3600), "period": "60", "stat": "Sum"}
    hourly = dict(rng, period="3600")
    eq([v for _, v in points(expect.json_ok(query(inst, cluster[0], names="CacheHits", **rng)))],
       [5.0], "the old sample before the housekeeping")
    # A cairnd starting on the same database keeps 15 days.
    cairnd_factory(fresh_db.url, AGENT_ARGS)

    def dropped():
        return f"metric_samples_{day}" not in inst.psql(
            "SELECT coalesce(string_agg(relname, ' '), '') FROM pg_class"
            " WHERE relname LIKE 'metric_samples_%'")
    harness.wait_until(dropped, 10, what="the old partition dropped")
    eq(points(expect.json_ok(query(inst, cluster[0], names="CacheHits", **rng))), [],
       "nothing left of the old day's samples")
    eq([v for _, v in points(expect.json_ok(query(inst, cluster[0], names="CacheHits",
                                                  **hourly)))],
       [5.0], "its hourly rollup stays (15 months)")
    eq([v for _, v in points(expect.json_ok(query(inst, cluster[0], names="CacheHits",
                                                  start=str(recent), end=str(recent + 60),
                                                  stat="Sum")))], [7.0], "recent data kept")


def test_several_series_in_one_query(hosts):
    """POST /v1/metrics/query: a dashboard's series in one call, over one
    range and period; a missing cluster is an error in its result only."""
    inst, a, b = hosts
    c1, c2 = add_cluster(inst), add_cluster(inst)
    n1 = add_node(inst, a["host_id"], c1)
    n2 = add_node(inst, b["host_id"], c2)
    t0 = (int(time.time()) // 3600 - 1) * 3600
    eq(push(inst, a["credential"], [{"node_id": n1, "at": t0 + 60 * k,
                                     "values": {"CacheHits": 3, "CurrConnections": 10 + k}}
                                    for k in range(3)]).status_code, 204, "push a")
    eq(push(inst, b["credential"], [{"node_id": n2, "at": t0, "values": {"CacheHits": 4}}])
       .status_code, 204, "push b")
    body = {"start": iso(t0), "end": str(t0 + 180), "period": 180,
            "queries": [{"id": "hits", "cluster_id": c1[0], "name": "CacheHits", "stat": "Sum"},
                        {"id": "conns", "cluster_id": c1[0], "name": "CurrConnections",
                         "stat": "Maximum", "group_by": "node"},
                        {"id": "other", "cluster_id": c2[0], "name": "CacheHits",
                         "node_id": n2},
                        {"id": "gone", "cluster_id": "no-such", "name": "CacheHits"}]}
    res = {r["id"]: r for r in expect.json_ok(inst.api.post("/v1/metrics/query",
                                                            json=body))["results"]}
    eq(points(res["hits"]), [(iso(t0), 9.0)], "hits")
    eq((res["conns"]["series"][0]["node_id"], points(res["conns"])), (n1, [(iso(t0), 12.0)]),
       "connections per node")
    eq((res["other"]["stat"], points(res["other"])), ("Average", [(iso(t0), 4.0)]), "other")
    eq(res["gone"]["error"]["code"], "CLUSTER_NOT_FOUND", "missing cluster")
    # The same answers as columns: timestamps (epoch seconds) and values in step.
    cols = {r["id"]: r for r in expect.json_ok(inst.api.post(
        "/v1/metrics/query", json=dict(body, format="columns")))["results"]}
    for qid in ("hits", "conns", "other"):
        eq(len(cols[qid]["series"]), len(res[qid]["series"]), f"{qid}: series as columns")
        for as_points, as_cols in zip(res[qid]["series"], cols[qid]["series"]):
            assert "points" not in as_cols, as_cols
            eq((as_cols["node_id"], list(zip(as_cols["timestamps"], as_cols["values"]))),
               (as_points["node_id"], [(calendar.timegm(time.strptime(p["timestamp"],
                                                                      "%Y-%m-%dT%H:%M:%SZ")),
                                        p["value"]) for p in as_points["points"]]),
               f"{qid} as columns")
    eq(cols["gone"]["error"]["code"], "CLUSTER_NOT_FOUND", "missing cluster, as columns")
    for bad, fields in (({"queries": []}, ["queries"]),
                        ({"queries": [{"id": "x", "cluster_id": "c", "name": "Nope"}]},
                         ["queries[0].name"]),
                        ({"period": 0, "queries": [{"id": "x", "cluster_id": "c",
                                                    "name": "CacheHits", "stat": "mean"}]},
                         ["period", "queries[0].stat"]),
                        ({"format": "rows", "queries": [{"id": "x", "cluster_id": "c",
                                                         "name": "CacheHits"}]},
                         ["format"])):
        expect.problem(inst.api.post("/v1/metrics/query", json=bad), "VALIDATION_FAILED",
                       fields=fields)
    expect.problem(inst.api.post("/v1/metrics/query", json=dict(
        body, start=str(t0 - 86400 * 3), period=60)), "VALIDATION_FAILED", fields=["period"])


PROM_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
                       r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*)?\})? (-?[0-9.eE+-]+|NaN)$')


def parse_prometheus(text):
    """{(name, frozenset(labels)): value}, failing on any line the text
    format (0.0.4) does not allow, and on a sample without HELP and TYPE."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            assert len(parts) == 4, line
            if parts[1] == "TYPE":
                assert parts[3] in ("counter", "gauge"), line
                typed.add(parts[2])
            continue
        m = PROM_LINE.match(line)
        assert m, f"not a sample line: {line!r}"
        assert m.group(1) in typed, f"sample before its TYPE: {line!r}"
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(5))
    return samples


def test_prometheus_scrape(hosts):
    """GET /metrics: cairnd's own health and each node's newest values as
    cairn_cache_* gauges, in the Prometheus text format, with a token."""
    inst, a, _ = hosts
    cluster = add_cluster(inst)
    n1 = add_node(inst, a["host_id"], cluster)
    now = int(time.time()) // 60 * 60
    eq(push(inst, a["credential"], [
        {"node_id": n1, "at": now - 120, "values": {"GetTypeCmds": 5, "CPUUtilization": 1}},
        {"node_id": n1, "at": now - 60, "values": {"GetTypeCmds": 42, "CPUUtilization": 12.5,
                                                    "IsPrimary": 1}}]).status_code, 204, "push")
    expect.problem(inst.anon.get("/metrics"), "UNAUTHENTICATED")
    r = inst.api.get("/metrics")
    eq(r.status_code, 200, "scrape")
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
    samples = parse_prometheus(r.text)
    labels = frozenset({("cluster_id", cluster[0]), ("node_id", n1), ("shard_id", "0001"),
                        ("role", "")})
    eq(samples[("cairn_cache_get_type_cmds", labels)], 42.0, "the newest GetTypeCmds")
    eq(samples[("cairn_cache_cpu_utilization", labels)], 12.5, "CPUUtilization")
    eq(samples[("cairn_cache_is_primary", labels)], 1.0, "IsPrimary")
    assert ("cairn_cache_cache_hits", labels) not in samples, "no value, no sample"
    assert samples[("cairn_http_requests_total", frozenset({("code", "2xx")}))] >= 1
    assert samples[("cairn_hosts", frozenset({("status", "healthy")}))] == 2
    eq(samples[("cairn_host_monitor_hearing", frozenset())], 1.0, "hearing its agents")
    assert 0 <= samples[("cairn_agents_behind_seconds", frozenset())] < 1, samples


def test_finished_days_are_compacted_without_changing_answers(hosts, cairnd_factory, fresh_db):
    """A finished day of 60-second samples moves into one compressed series
    per node and metric, and its partition goes; queries answer the same.
    A sample that comes late for it brings its node's day back."""
    inst, a, b = hosts
    cluster = add_cluster(inst)
    n1 = add_node(inst, a["host_id"], cluster)
    n2 = add_node(inst, b["host_id"], cluster)
    day0 = (int(time.time()) // 86400 - 3) * 86400  # three days ago, 00:00 UTC
    t0 = day0 + 5 * 3600 + 1800                      # 05:30, so two hours' blocks
    for cred, node, f in ((a["credential"], n1, 1), (b["credential"], n2, 3)):
        samples = [{"node_id": node, "at": t0 + 60 * k,
                    "values": {"GetTypeCmds": f * (k + 1), "CPUUtilization": 10.0 + k}}
                   for k in range(0, 50) if k != 7]  # one minute missing
        eq(push(inst, cred, samples).status_code, 204, "push")
    cid = cluster[0]
    asks = [dict(names="GetTypeCmds", stat="Sum", period="60"),
            dict(names="GetTypeCmds,CPUUtilization", stat="Average", period="60",
                 group_by="node"),
            dict(names="CPUUtilization", stat="Maximum", period="600", node_id=n2),
            dict(names="GetTypeCmds", stat="p50", period="120")]
    rng = {"start": str(t0 - 600), "end": str(t0 + 3600)}
    before = [expect.json_ok(query(inst, cid, **dict(rng, **q)))["series"] for q in asks]
    assert before[0][0]["points"], before[0]
    day = time.strftime("%Y%m%d", time.gmtime(day0))
    cairnd_factory(fresh_db.url, AGENT_ARGS)  # its housekeeping

    def compacted():
        return f"metric_samples_{day}" not in inst.psql(
            "SELECT coalesce(string_agg(relname, ' '), '') FROM pg_class"
            " WHERE relname LIKE 'metric_samples_%'")
    harness.wait_until(compacted, 15, what="the day compacted")
    eq(inst.psql(f"SELECT count(*) FROM metric_series WHERE cluster_id = '{cid}'").strip(), "4",
       "one series per node and metric it had")
    after = [expect.json_ok(query(inst, cid, **dict(rng, **q)))["series"] for q in asks]
    for q, x, y in zip(asks, before, after):
        eq(y, x, f"the same answer after compaction for {q}")

    # An agent back after a long outage pushes the missing minute of n1, and
    # one it had already sent: n1's day comes back into samples, whole.
    late = [{"node_id": n1, "at": t0 + 60 * 7, "values": {"GetTypeCmds": 8.0,
                                                          "CPUUtilization": 17.0}},
            {"node_id": n1, "at": t0 + 60 * 3, "values": {"GetTypeCmds": 4.0,
                                                          "CPUUtilization": 13.0}}]
    eq(push(inst, a["credential"], late).status_code, 204, "late push")
    eq(inst.psql(f"SELECT count(*) FROM metric_series WHERE node_id = '{n1}'").strip(), "0",
       "n1's series taken out")
    eq(inst.psql(f"SELECT count(*) FROM metric_samples WHERE node_id = '{n1}'").strip(), "50",
       "n1's 49 minutes back, and the late one")
    sums = {p["timestamp"]: p["value"]
            for p in expect.json_ok(query(inst, cid, **dict(rng, **asks[0])))["series"][0]["points"]}
    eq(sums[iso(t0 + 60 * 7)], 8.0, "the late minute counts once")
    eq(sums[iso(t0 + 60 * 3)], 4.0 + 12.0, "a minute sent twice counts once")
    ten = expect.json_ok(query(inst, cid, **dict(rng, names="GetTypeCmds", stat="SampleCount",
                                                 period="600")))["series"][0]["points"]
    eq(sum(p["value"] for p in ten), 99.0, "the rollups have every minute once (49 + 50)")
    cairnd_factory(fresh_db.url, AGENT_ARGS)  # compacts it again
    harness.wait_until(compacted, 15, what="the day compacted again")
    eq(inst.psql(f"SELECT count(*) FROM metric_series WHERE node_id = '{n1}'").strip(), "2",
       "n1's day compacted again")
    eq(expect.json_ok(query(inst, cid, **dict(rng, names="GetTypeCmds", stat="SampleCount",
                                              period="60")))["series"][0]["points"].__len__(),
       50, "every minute answered once")
