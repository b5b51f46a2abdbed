"""test_calibration.py -- POST /v1/sizing/calibrations on real cairnd, agents
and engines: a calibration on a demo host runs the engine's own benchmark
against a temporary one-node cluster, records its figures, removes the node,
and the next sizing takes its figure for that node type; one whose
benchmark cannot run ends failed with the node removed all the same; one
whose cairnd is killed mid-benchmark is finished by the cairnd that comes
back, with no benchmark left behind; two cairnds on one database never run
its benchmark twice at once; the refusals (400, 403, 404, 409)
leave nothing allocated.

A failed test prints what cairnd, the agents and the engines logged during
it; every calibration's temporary cluster a test leaves is deleted after it,
and the module's agents, engines and cairnds are stopped at its end.
"""

import os
import time
import uuid

import agents
import clusters
import expect
import harness
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("calibration")

DURATION_S = 2  # of each calibration's benchmark here: the figures are checked, not tuned
DEADLINE_S = 30  # the whole calibration, node start and removal included
LEASE_S = 5  # a dead cairnd's operations are taken over after this (runner.c)


def start(api, cleanup, body):
    """POST a calibration, asserting 202 with the calibration and its
    Location; its temporary cluster is added to cleanup."""
    r = api.post("/v1/sizing/calibrations", json=body)
    cal = expect.json_ok(r, 202)
    eq(r.headers.get("Location"), f"/v1/sizing/calibrations/{cal['id']}", "Location")
    assert cal["status"] in ("pending", "running"), cal
    assert cal["cluster_id"].startswith("calibration-"), cal["cluster_id"]
    eq(cal["results"], None, "results before the benchmark")
    cleanup.append(cal["cluster_id"])
    return cal


def get(api, cal_id):
    return expect.json_ok(api.get(f"/v1/sizing/calibrations/{cal_id}"))


def wait_ended(api, cal_id, timeout=DEADLINE_S + 30):
    """Poll the calibration until it has succeeded or failed; return it."""
    def ended():
        cal = get(api, cal_id)
        return cal if cal["status"] in ("succeeded", "failed") else None
    return clusters.wait_until(ended, timeout, f"calibration {cal_id} ended", interval=0.2)


def assert_removed(stack, cal, before):
    """The calibration's temporary cluster is gone and its host has back
    what it had before."""
    expect.problem(stack.api.get(f"/v1/clusters/{cal['cluster_id']}"), "CLUSTER_NOT_FOUND")
    clusters.wait_until(lambda: stack.allocations() == before, 10,
                        "hosts' allocations as before the calibration")
    types = [e["type"] for e in clusters.events(stack.api, cal["cluster_id"])]
    assert "ClusterDeleted" in types, types


def benchmarks_against(port):
    """Processes running a load generator against 127.0.0.1:port."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"-benchmark") and b"-p" in argv and \
                argv[argv.index(b"-p") + 1:argv.index(b"-p") + 2] == [str(port).encode()]:
            found.append(int(pid))
    return found


def test_calibration_on_a_demo_host(stack, cleanup):
    host_id = stack.host_ids[0]
    host = stack.host(host_id)
    before = stack.allocations()
    started = time.monotonic()
    cal = start(stack.api, cleanup, {"host_id": host_id, "duration_s": DURATION_S})
    # The defaults: Valkey's newest line the host runs, the smallest
    # non-burstable type that fits its 8 GiB.
    eq((cal["host_id"], cal["host_name"], cal["engine"], cal["engine_version"], cal["node_type"]),
       (host_id, host["name"], "valkey", "8.0", "cache.m5.large"), "where it runs")
    eq(cal["parameters"], {"value_bytes": 200, "read_ratio": 0.8, "pipeline": 1, "clients": 20,
                           "duration_s": DURATION_S}, "parameters")

    # While it runs, its node is a cluster like any other, on the host asked.
    body = clusters.get(stack.api, cal["cluster_id"])
    if body is not None:
        eq(body["tags"], {"cairn:purpose": "calibration", "cairn:calibration": cal["id"]}, "tags")
        eq((body["cluster_mode"], body["num_shards"], body["replicas_per_shard"]),
           ("disabled", 1, 0), "shape")
        assert {n["host_id"] for n in clusters.nodes(body)} <= {host_id}, body

    done = wait_ended(stack.api, cal["id"])
    took = time.monotonic() - started
    eq(done["status"], "succeeded", f"status ({done['error']})")
    eq(done["progress"], 100, "progress")
    assert took < DEADLINE_S, f"the calibration took {took:.1f} s"
    res = done["results"]
    assert res["requests_per_second"] > 0, res
    assert 0 < res["p50_latency_ms"] <= res["p99_latency_ms"], res
    eq(res["host_vcpus"], clusters.AGENT_VCPUS, "host vCPUs")
    assert abs(res["requests_per_second_per_vcpu"]
               - res["requests_per_second"] / clusters.AGENT_VCPUS) < 0.01, res
    for cmd in ("get", "set"):
        assert res[cmd]["requests_per_second"] > 0, res
        assert res[cmd]["p50_latency_ms"] <= res[cmd]["p99_latency_ms"], res
    # 80% GET: the harmonic mix lies between the two commands.
    lo, hi = sorted(res[c]["requests_per_second"] for c in ("get", "set"))
    assert lo - 0.01 <= res["requests_per_second"] <= hi + 0.01, res
    assert res["engine_version_actual"].startswith("8.0."), res
    assert res["requests"] >= 20000 and res["keys"] >= 1, res
    eq(res["benchmark"], "valkey-benchmark", "program")

    op = expect.json_ok(stack.api.get(f"/v1/operations/{done['operation_id']}"))
    eq((op["kind"], op["status"], op["cluster_id"]), ("calibrate", "succeeded", cal["cluster_id"]),
       "operation")
    eq([s["name"] for s in op["steps"]],
       ["wait_engine", "wait_ready", "benchmark", "record", "stop_node", "wait_removed",
        "drop_cluster", "finish"], "steps")
    assert_removed(stack, cal, before)

    listed = expect.json_ok(stack.inst.read.get("/v1/sizing/calibrations"))["calibrations"]
    eq(listed[0], {k: v for k, v in done.items() if k not in ("host_id", "host_name")},
       "the newest calibration, listed first, without its host (read scope)")
    eq(expect.json_ok(stack.inst.read.get(f"/v1/sizing/calibrations/{done['id']}")), listed[0],
       "one calibration, without its host (read scope)")

    # Sizing takes the calibrated figure for cache.m5.large, and says so.
    out = expect.json_ok(stack.inst.read.post("/v1/sizing", json={
        "data_gib": 1, "requests_per_second": 1000, "node_families": ["m5"],
        "availability": "none", "cluster_mode": "disabled"}))
    first = out["options"][0]
    eq(first["node_type"], "cache.m5.large", "first option")
    eq(first["throughput"]["capacity_per_node_rps"], round(res["requests_per_second"]),
       "capacity per node")
    capacity = next(a for a in out["assumptions"] if a["name"] == "capacity_rps.cache.m5.large")
    eq((capacity["value"], capacity["source"]), (res["requests_per_second"], "calibration"),
       "the calibrated assumption")
    assert f"calibration {cal['id']}" in capacity["note"], capacity
    # Another engine's sizing keeps the published figure.
    out = expect.json_ok(stack.inst.read.post("/v1/sizing", json={
        "engine": "redis", "data_gib": 1, "requests_per_second": 1000, "node_families": ["m5"],
        "availability": "none", "cluster_mode": "disabled"}))
    capacity = next(a for a in out["assumptions"] if a["name"] == "capacity_rps.cache.m5.large")
    eq(capacity["source"], "published", "redis's capacity of cache.m5.large")


def test_failed_benchmark_removes_the_node(stack, cleanup):
    """A cairnd whose benchmark program is missing: the calibration fails
    with BENCHMARK_FAILED, and its node is removed all the same."""
    before = stack.allocations()
    missing = "/nonexistent/valkey-benchmark"
    stack.cairnd.stop(timeout=10)
    stack.cairnd_args += ["--calibration-benchmark", missing]
    stack.restart_cairnd()
    try:
        cal = start(stack.api, cleanup, {"duration_s": DURATION_S})
        done = wait_ended(stack.api, cal["id"])
        eq(done["status"], "failed", "status")
        eq(done["error"]["code"], "BENCHMARK_FAILED", f"error ({done['error']})")
        assert missing in done["error"]["message"], done["error"]
        eq(done["results"], None, "results")
        op = expect.json_ok(stack.api.get(f"/v1/operations/{done['operation_id']}"))
        eq(op["step_name"], "finish", "the step that failed it")
        assert_removed(stack, cal, before)
        # A failed calibration is not sizing's.
        out = expect.json_ok(stack.api.post("/v1/sizing", json={
            "data_gib": 1, "requests_per_second": 1000, "node_families": ["m5"],
            "availability": "none", "cluster_mode": "disabled", "engine_version": "8.0"}))
        capacity = next(a for a in out["assumptions"]
                        if a["name"] == "capacity_rps.cache.m5.large")
        assert cal["id"] not in capacity["note"], capacity
    finally:
        stack.cairnd.stop(timeout=10)
        stack.cairnd_args = stack.cairnd_args[:-2]
        stack.restart_cairnd()


def test_cairnd_killed_mid_benchmark(stack, cleanup):
    """cairnd dies while its benchmark runs: the benchmark dies with it, and
    the cairnd that comes back finishes the calibration and removes the
    node."""
    before = stack.allocations()
    cal = start(stack.api, cleanup, {"host_id": stack.host_ids[1], "duration_s": 4})
    clusters.wait_until(lambda: get(stack.api, cal["id"])["step_name"] == "benchmark", 30,
                        "the calibration at its benchmark")
    port = clusters.nodes(clusters.get(stack.api, cal["cluster_id"]))[0]["port"]
    clusters.wait_until(lambda: benchmarks_against(port), 10, "the benchmark running")
    stack.kill9_cairnd()
    clusters.wait_until(lambda: not benchmarks_against(port), 5,
                        "the benchmark gone with its cairnd")
    stack.restart_cairnd()
    done = wait_ended(stack.api, cal["id"], timeout=LEASE_S + DEADLINE_S + 30)
    eq(done["status"], "succeeded", f"status ({done['error']})")
    assert done["results"]["requests_per_second"] > 0, done
    assert_removed(stack, cal, before)


def test_two_cairnds_take_turns(stack, cleanup):
    """Two cairnds on one database, either of which may claim the
    calibration's steps: its benchmark never runs twice at once, and the
    calibration ends as it does with one."""
    before = stack.allocations()
    other = harness.start_cairnd(stack.db.url, ["--agent-bootstrap-token", agents.BOOTSTRAP, "--approve-bootstrap-hosts"],
                                 label="cairnd-calibration-other", workdir=stack.cairnd.dir)
    try:
        cal = start(stack.api, cleanup, {"duration_s": 3})
        port, most, deadline = None, 0, time.monotonic() + DEADLINE_S + 30
        while get(stack.api, cal["id"])["status"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, "the calibration did not end"
            body = clusters.get(stack.api, cal["cluster_id"]) if port is None else None
            if body is not None and clusters.nodes(body) and clusters.nodes(body)[0]["port"]:
                port = clusters.nodes(body)[0]["port"]
            if port is not None:
                most = max(most, len(benchmarks_against(port)))
            time.sleep(0.02)
        done = get(stack.api, cal["id"])
        eq(done["status"], "succeeded", f"status ({done['error']})")
        eq(most, 1, "benchmarks running at once, at most")
        assert_removed(stack, cal, before)
    finally:
        other.cleanup()


def test_refusals(stack, cleanup):
    before = stack.allocations()
    listed = expect.json_ok(stack.api.get("/v1/sizing/calibrations"))["calibrations"]
    api = stack.api
    cases = [
        ({"duration_s": 21}, "duration_s"),
        ({"duration_s": 0}, "duration_s"),
        ({"clients": 501}, "clients"),
        ({"read_ratio": 1.5}, "read_ratio"),
        ({"value_bytes": 0}, "value_bytes"),
        ({"engine": "memcached"}, "engine"),
        ({"host_id": "vm-a"}, "host_id"),
        ({"host_id": str(uuid.uuid4())}, "host_id"),
        ({"node_type": "cache.z9.huge"}, "node_type"),
        ({"engine_version": "6.2"}, "engine_version"),
        ({"warmup": True}, "warmup"),
    ]
    for body, field in cases:
        expect.problem(api.post("/v1/sizing/calibrations", json=body), "VALIDATION_FAILED",
                       fields=[field])
    # The hosts have 8 GiB: an r5.large (13 GiB) fits none of them.
    p = expect.problem(api.post("/v1/sizing/calibrations",
                                json={"host_id": stack.host_ids[0], "node_type": "cache.r5.large"}),
                       "INSUFFICIENT_CAPACITY")
    assert "cache.r5.large needs" in p["detail"], p
    # Valkey 8.1 is in the catalog, but no host here runs it.
    p = expect.problem(api.post("/v1/sizing/calibrations", json={"engine_version": "8.1"}),
                       "ENGINE_NOT_INSTALLED")
    eq(p["detail"], "no healthy host runs valkey 8.1", "detail")
    expect.problem(stack.inst.read.post("/v1/sizing/calibrations", json={}), "FORBIDDEN")
    expect.problem(api.get(f"/v1/sizing/calibrations/{uuid.uuid4()}"), "CALIBRATION_NOT_FOUND")
    expect.problem(api.get("/v1/sizing/calibrations/not-a-uuid"), "CALIBRATION_NOT_FOUND")
    # Nothing was started or allocated.
    eq(expect.json_ok(api.get("/v1/sizing/calibrations"))["calibrations"], listed, "calibrations")
    eq(stack.allocations(), before, "hosts' allocations")
