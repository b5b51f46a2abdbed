"""test_engine_tls.py -- Cairn's RESP client over TLS (engine/resp.c with
OpenSSL), against the real engines' tls-port, with certificates from Cairn's
certificate authority code (lib/x509.c) issued by tests/tools/resp_tls.
What cairnd and the agents will reach TLS-only engines with: a blocking and
a non-blocking (poll-driven) connection, the engine's certificate checked
-- chain and name --, AUTH over TLS; anything else refused with a reason."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

import harness
from expect import eq

TOOL = Path(os.environ.get("RESP_TLS", str(harness.REPO / "build" / "tests" / "tools" /
                                           "resp_tls")))
ENGINES = {"valkey": "/usr/bin/valkey-server", "redis": "/usr/bin/redis-server"}
PASSWORD = "a-password-over-tls-0123"


def tool(*args):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is missing: make build/tests/tools/resp_tls", pytrace=False)
    return subprocess.run([str(TOOL)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=30)


@pytest.fixture(params=sorted(ENGINES))
def engine(request):
    """An engine serving TLS only, on a free port, with a certificate for
    127.0.0.1 and a password: (port, directory of ca.pem)."""
    binary = ENGINES[request.param]
    if not Path(binary).exists():
        pytest.skip(f"{binary} is not installed")
    work = harness.make_temp_dir(f"tls-{request.param}")
    r = tool("issue", work, "127.0.0.1")
    assert r.returncode == 0, r.stderr
    port = harness.free_port()
    proc = harness.ManagedProcess(
        f"{request.param}-tls", [binary, "--port", "0", "--tls-port", port, "--bind", "127.0.0.1",
                                 "--save", "", "--requirepass", PASSWORD,
                                 "--tls-cert-file", work / "server.pem",
                                 "--tls-key-file", work / "server.key",
                                 "--tls-ca-cert-file", work / "ca.pem",
                                 "--tls-auth-clients", "no"],
        work / "engine.log", env=harness.clean_env(), cwd=work)
    try:
        harness.wait_until(lambda: tool("ping", "127.0.0.1", port, "--ca", work / "ca.pem",
                                        "--password", PASSWORD).returncode == 0, 10,
                           what=f"{request.param} over TLS")
        yield port, work
    finally:
        proc.stop(signal.SIGTERM, timeout=10)


@pytest.mark.parametrize("mode", [[], ["--nonblock"]], ids=["blocking", "nonblocking"])
def test_ping_with_auth_over_tls(engine, mode):
    port, work = engine
    r = tool("ping", "127.0.0.1", port, "--ca", work / "ca.pem", "--password", PASSWORD, *mode)
    eq((r.returncode, r.stdout.strip()), (0, "PONG"), f"PING over TLS: {r.stderr}")
    r = tool("ping", "127.0.0.1", port, "--ca", work / "ca.pem", "--password", "wrong", *mode)
    assert r.returncode == 1 and "could not authenticate" in r.stdout, r.stdout


@pytest.mark.parametrize("mode", [[], ["--nonblock"]], ids=["blocking", "nonblocking"])
def test_what_cannot_be_trusted_is_refused(engine, mode):
    port, work = engine
    other = harness.make_temp_dir("tls-other")
    assert tool("issue", other, "127.0.0.1").returncode == 0
    cases = {
        "another authority": (["127.0.0.1", "--ca", other / "ca.pem"],
                              "certificate is not trusted"),
        "another name than the certificate's": (["localhost", "--ca", work / "ca.pem"],
                                                "hostname mismatch"),
        "plain TCP to the TLS port": (["127.0.0.1"], "127.0.0.1:"),
    }
    for what, (args, why) in cases.items():
        r = tool("ping", args[0], port, *args[1:], "--password", PASSWORD, *mode)
        assert r.returncode == 1 and why in r.stdout, f"{what}: {r.stdout} {r.stderr}"
