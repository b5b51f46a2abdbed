"""Backups in the console, in a real browser (tests/browser/snapshots.mjs): a
cluster's automatic snapshots set in Modify, a snapshot taken from the
cluster's page and followed to available on #/snapshots, restored through the
dialog into a cluster of another shape (its deletion refused meanwhile), the
restored cluster deleted with a final snapshot, both snapshots deleted; a read
token sees them and no button that changes them. The stack keeps snapshots in
a directory of its own. Screenshots go to build/browser/."""

import datetime
import os
import subprocess

import clusters
import expect
from expect import eq
import harness
from test_browser import BROWSER, CHROMIUM, SHOTS, require_browser

stack, _dump_on_failure, cleanup = clusters.stack_fixtures(
    "browser-snapshots", cairnd_args=["--web-root", str(harness.WEB_ROOT)])

KEYS = 1000


def far_window():
    """A daily snapshot window of an hour that opens 12 hours from now: no
    automatic snapshot begins while the test runs."""
    hour = (datetime.datetime.now(datetime.timezone.utc).hour + 12) % 24
    return f"{hour:02d}:00-{(hour + 1) % 24:02d}:00"


def test_take_restore_and_delete_snapshots(stack, cleanup):
    require_browser()
    source, copy = "web-src", "web-copy"
    cleanup.extend([source, copy])
    r = stack.api.post("/v1/clusters", json=clusters.valkey_cluster(source, num_shards=1))
    eq(r.status_code, 202, f"create: {r.text}")
    body = clusters.wait_available(stack.api, source, 60)
    client = clusters.cluster_client(body, clusters.password(stack.api, source))
    try:
        pipe = client.pipeline()
        for i in range(KEYS):
            pipe.set(f"key:{i}", f"value {i}")
        pipe.execute()
    finally:
        client.close()
    reader = expect.json_ok(stack.api.post("/v1/tokens", json={"name": "viewer", "scope": "read"}),
                            201)["token"]
    window = far_window()
    SHOTS.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(BROWSER / "snapshots.mjs"), stack.cairnd.url, stack.inst.admin_token, reader,
         source, str(KEYS), window, str(SHOTS)],
        cwd=BROWSER, capture_output=True, text=True, timeout=150,
        env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, f"the browser run failed:\n{proc.stdout}\n{proc.stderr}"
    print(proc.stdout.strip())
    after = clusters.get(stack.api, source)
    eq((after["snapshot_retention_days"], after["snapshot_window"]), (7, window),
       "the automatic snapshots set in Modify")
    eq(clusters.get(stack.api, copy), None, "the restored cluster deleted in the console is gone")
    eq(expect.json_ok(stack.api.get("/v1/snapshots"))["snapshots"], [],
       "the snapshots deleted in the console are gone")
    for name in ("snapshot-take", "snapshots", "snapshot", "snapshot-restore", "snapshot-delete-refused",
                 "snapshots-read-only", "delete-final-snapshot"):
        assert (SHOTS / f"{name}.png").stat().st_size > 0, f"no screenshot {name}.png"
