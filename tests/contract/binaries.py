"""binaries.py -- what the contract tests ask cairnd about: the lists it is built with; and
where the binaries and the OpenAPI document are.

CAIRND and CAIRN_AGENT override the paths of the binaries (default: <repo>/bin/cairnd and
<repo>/bin/cairn-agent).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CAIRND = Path(os.environ.get("CAIRND") or REPO / "bin" / "cairnd")
AGENT = Path(os.environ.get("CAIRN_AGENT") or REPO / "bin" / "cairn-agent")
SPEC_PATH = REPO / "api" / "openapi.yaml"


def run(binary, *args):
    """Run a built binary with args; return its standard output, failing the test on a
    non-zero exit."""
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing or not executable: run `make` at the repository root "
                    "first, or point CAIRND at the binary")
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail(f"`{binary} {' '.join(args)}` exited {proc.returncode}\n"
                    f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


def cairnd_list(command):
    """The JSON array `cairnd COMMAND` prints (routes, engines, operation-kinds,
    managed-settings)."""
    out = run(CAIRND, command)
    try:
        table = json.loads(out)
    except json.JSONDecodeError as e:
        pytest.fail(f"`{CAIRND} {command}` did not print JSON ({e}):\n{out}")
    assert isinstance(table, list), \
        f"`cairnd {command}` printed {type(table).__name__}, not an array"
    return table
