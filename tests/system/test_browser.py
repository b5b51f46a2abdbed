"""The web console in a real browser: Debian's chromium driven by playwright-core
(tests/browser/console.mjs) signs in, lists and filters clusters, opens one and signs out,
against a real stack with a real cluster. Screenshots go to build/browser/."""

import os
import shutil
import subprocess

import pytest

import clusters
import harness
from expect import eq

BROWSER = harness.REPO / "tests" / "browser"
SHOTS = harness.REPO / "build" / "browser"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")



stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "browser", cairnd_args=["--web-root", str(harness.WEB_ROOT)])


def require_browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no chromium at {CHROMIUM}: run scripts/install-deps (Debian's chromium)")
    if not (BROWSER / "node_modules" / "playwright-core").is_dir() or not shutil.which("node"):
        pytest.skip("playwright-core is not installed: run `make browser-deps` (npm ci in tests/browser)")


def test_sign_in_list_open_and_sign_out(stack, cleanup):
    require_browser()
    cleanup.append("shop")
    r = stack.api.post("/v1/clusters", json=clusters.valkey_cluster("shop", num_shards=1))
    eq(r.status_code, 202, f"create: {r.text}")
    clusters.wait_available(stack.api, "shop", 60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(BROWSER / "console.mjs"), stack.cairnd.url, stack.inst.admin_token, "shop",
         str(SHOTS)],
        cwd=BROWSER, capture_output=True, text=True, timeout=120,
        env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, f"the browser run failed:\n{proc.stdout}\n{proc.stderr}"
    for name in ("signin-refused", "clusters", "cluster", "clusters-narrow"):
        assert (SHOTS / f"{name}.png").stat().st_size > 0, f"no screenshot {name}.png"
