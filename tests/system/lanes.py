"""lanes.py -- the system tests in two pytest processes at once.

Most of the system layer's time is spent waiting -- on heartbeat and node
timeouts, on Terraform's and the AWS SDK's polling, on a browser, on metric
periods to close -- not computing, so two lanes side by side take little
more than the longer one. Each lane has its own PostgreSQL, cairnds and
agents (as every module has), and its own band of ports for the agents'
engines (CAIRN_TEST_PORTS), so that the two never reach for the same port.

Lane "tools" holds the modules that wait on outside programs and big data
(Terraform, boto3 and the AWS CLI, Chromium, benchmarks, metric periods,
resharding); lane "engines" the rest, among them the failover tests whose
timing matters most, which so share the machine with waiting more than with
computing.

    python3 tests/system/lanes.py [pytest options...]

runs both with the options given, prints each lane's output when it ends,
and exits non-zero if either failed. Interrupted, it stops both.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

TOOLS = {
    "test_browser.py", "test_browser_actions.py", "test_browser_dashboard.py",
    "test_browser_snapshots.py",
    "test_calibration.py", "test_catalog.py", "test_compressed_push.py", "test_console.py",
    "test_demo.py", "test_elasticache.py", "test_metrics.py", "test_metrics_api.py",
    "test_metrics_first_sample.py", "test_node_type.py", "test_patroni.py",
    "test_recommendations.py",
    "test_scale_replicas.py", "test_scaling.py", "test_sizing.py", "test_slot_stats.py",
    "test_snapshots.py", "test_terraform.py", "test_upgrade.py",
}

# Agents' engine ports (and their cluster bus ports, + 10000) per lane: both
# bands below the kernel's ephemeral range, and clear of the demo's
# 7000-7299 and its bus ports 17000-17299.
PORTS = {"engines": "12000-16999", "tools": "17300-21999"}


def lanes():
    files = sorted(p.name for p in HERE.glob("test_*.py"))
    unknown = TOOLS - set(files)
    if unknown:
        sys.exit(f"lanes.py: no such test module: {', '.join(sorted(unknown))}")
    return {"engines": [f for f in files if f not in TOOLS],
            "tools": [f for f in files if f in TOOLS]}


def main(args):
    procs = {}
    logs = {}
    started = time.monotonic()
    try:
        for name, files in lanes().items():
            logs[name] = open(HERE / f".lane-{name}.log", "w+")
            env = dict(os.environ, CAIRN_TEST_PORTS=PORTS[name])
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "pytest", *args, *files], cwd=HERE, env=env,
                stdout=logs[name], stderr=subprocess.STDOUT, start_new_session=True)
        failed = []
        pending = dict(procs)
        while pending:
            for name, p in list(pending.items()):
                if p.poll() is None:
                    continue
                del pending[name]
                took = time.monotonic() - started
                logs[name].seek(0)
                print(f"===== lane {name}: exit {p.returncode} after {took:.0f} s =====",
                      flush=True)
                sys.stdout.write(logs[name].read())
                sys.stdout.flush()
                if p.returncode != 0:
                    failed.append(name)
            time.sleep(0.5)
        print(f"===== lanes done in {time.monotonic() - started:.0f} s"
              f"{': failed ' + ', '.join(failed) if failed else ''} =====")
        return 1 if failed else 0
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGINT)  # pytest's own teardown, then
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        for f in logs.values():
            f.close()
            Path(f.name).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
