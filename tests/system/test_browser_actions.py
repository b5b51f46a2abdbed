"""The console's forms and actions in a real browser (tests/browser/actions.mjs):
create (a refusal shown next to its field, then the cluster followed to
available), modify with a preview, a test failover, an engine upgrade of a
redis 7.0 group after its checks pass, a delete confirmed by typing the id;
a read token is offered no action; the fleet and tokens pages. Screenshots
go to build/browser/."""

import os
import subprocess

import clusters
import expect
from expect import eq
import harness
from test_browser import BROWSER, CHROMIUM, SHOTS, require_browser

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "browser-actions", cairnd_args=["--web-root", str(harness.WEB_ROOT)])


def test_forms_and_actions(stack, cleanup):
    require_browser()
    cleanup.extend(["web-made", "web-redis"])
    r = stack.api.post("/v1/clusters", json=clusters.redis_group("web-redis", replicas_per_shard=1))
    eq(r.status_code, 202, f"create: {r.text}")
    clusters.wait_available(stack.api, "web-redis", 60)
    reader = expect.json_ok(stack.api.post("/v1/tokens", json={"name": "viewer", "scope": "read"}),
                            201)["token"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(BROWSER / "actions.mjs"), stack.cairnd.url, stack.inst.admin_token, reader,
         "web-redis", str(SHOTS)],
        cwd=BROWSER, capture_output=True, text=True, timeout=400,
        env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, f"the browser run failed:\n{proc.stdout}\n{proc.stderr}"
    eq(clusters.get(stack.api, "web-made"), None, "the cluster deleted in the console is gone")
    after = clusters.get(stack.api, "web-redis")
    eq((after["engine"], after["engine_version_actual"]), ("valkey", "8.0.1"),
       "the group upgraded from the console")
    for name in ("sizing-options", "create-refused", "cluster-created", "modify-preview", "upgrade-preview",
                 "upgrade-report",
                 "delete-confirm", "fleet", "tokens", "cluster-read-only"):
        assert (SHOTS / f"{name}.png").stat().st_size > 0, f"no screenshot {name}.png"
