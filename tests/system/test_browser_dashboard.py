"""A cluster's metric dashboard in a real browser: Debian's chromium driven by playwright-core
(tests/browser/dashboard.mjs) opens the dashboard of a Valkey cluster under traffic, sees real
datapoints, splits a chart per node, runs a planned failover through the API and sees it marked
on the charts, and reads the hot slots. Agents push every 2 s here (the metric tests' setting),
so datapoints arrive within seconds. Screenshots go to build/browser/."""

import os
import shutil
import subprocess
import threading
import time

import pytest
import redis

import clusters
import harness
from expect import eq

BROWSER = harness.REPO / "tests" / "browser"
SHOTS = harness.REPO / "build" / "browser"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHARDS, REPLICAS = 2, 1

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "dashboard", cairnd_args=["--web-root", str(harness.WEB_ROOT)],
    agent_args=["--metrics-interval", "1", "--metrics-period", "2"])


def require_browser():
    if not (harness.WEB_ROOT / "vendor" / "uplot.js").is_file():
        pytest.skip(f"no console with uPlot at {harness.WEB_ROOT}: run `make`")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no chromium at {CHROMIUM}: run scripts/install-deps (Debian's chromium)")
    if not (BROWSER / "node_modules" / "playwright-core").is_dir() or not shutil.which("node"):
        pytest.skip("playwright-core is not installed: run `make browser-deps` (npm ci in tests/browser)")


class Traffic:
    """SETs and GETs through the cluster client until stopped; a failover's
    moved slots are followed by the client, its brief errors counted."""

    def __init__(self, body, pw):
        self.client = clusters.cluster_client(body, pw)
        self.stop = threading.Event()
        self.ops = self.errors = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.client.set(f"k{i % 500}", str(i))
                self.client.get(f"k{(i * 7) % 500}")
                self.ops += 2
            except redis.RedisError:
                self.errors += 1
                time.sleep(0.05)
            i += 1
            time.sleep(0.002)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        self.client.close()


def test_dashboard_charts_nodes_markers_and_hot_slots(stack, cleanup):
    require_browser()
    cid = "dash"
    cleanup.append(cid)
    r = stack.api.post("/v1/clusters", json=clusters.valkey_cluster(
        cid, num_shards=SHARDS, replicas_per_shard=REPLICAS))
    eq(r.status_code, 202, f"create: {r.text}")
    body = clusters.wait_available(stack.api, cid, 90)
    nodes = len(clusters.nodes(body))
    eq(nodes, SHARDS * (1 + REPLICAS), "nodes of the cluster")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with Traffic(body, clusters.password(stack.api, cid)) as traffic:
        time.sleep(5)  # a few metric periods of traffic before the page opens
        proc = subprocess.run(
            ["node", str(BROWSER / "dashboard.mjs"), stack.cairnd.url, stack.inst.admin_token, cid,
             str(nodes), str(SHARDS), str(SHOTS)],
            cwd=BROWSER, capture_output=True, text=True, timeout=300,
            env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, f"the browser run failed:\n{proc.stdout}\n{proc.stderr}"
    assert traffic.ops > 0, "no traffic reached the cluster"
    print(proc.stdout.strip(), f"({traffic.ops} commands, {traffic.errors} errors)")
    complete = [e for e in clusters.events(stack.api, cid) if e["type"] == "FailoverComplete"]
    assert complete, "the failover the page marked did not complete"
    for name in ("dashboard", "dashboard-per-node", "dashboard-narrow"):
        assert (SHOTS / f"{name}.png").stat().st_size > 0, f"no screenshot {name}.png"
