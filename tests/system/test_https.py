"""test_https.py -- cairnd over HTTPS (--tls): its certificate issued by the
installation's own certificate authority, which anyone may download
(GET /v1/ca-certificate) and the agents verify cairnd by
(--control-plane-ca-file). Real cairnd, agents and engines: the whole stack
of this module talks HTTPS only."""

import socket
import ssl
import subprocess
import time

import pytest
import requests

import agents
import clusters
import expect
import harness
from clusters import nodes
from conftest import Database
from expect import eq
from test_ha import create

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("https", tls=True)


def test_agents_register_and_clusters_run_over_https(stack, cleanup):
    assert stack.api.base.startswith("https://"), stack.api.base
    eq(len(stack.host_ids), 3, "hosts registered over HTTPS")
    body, pw = create(stack, cleanup, clusters.redis_group(
        "https-group", engine="valkey", engine_version="8.0", replicas_per_shard=1))
    with clusters.client(nodes(body)[0]["address"], nodes(body)[0]["port"], pw) as c:
        assert c.ping()


def test_the_authority_is_public_and_names_cairnd(stack):
    r = stack.inst.anon.get("/v1/ca-certificate")
    eq((r.status_code, r.headers["Content-Type"]), (200, "application/x-pem-file"), "the answer")
    eq(r.text, stack.cairnd.ca_file.read_text(), "the authority cairnd ca-certificate printed")
    # The certificate names the address and localhost, and verifies by them.
    port = stack.cairnd.port
    for host in ("127.0.0.1", "localhost"):
        r = requests.get(f"https://{host}:{port}/healthz", verify=str(stack.cairnd.ca_file),
                         timeout=5)
        eq(r.status_code, 200, f"https://{host}")
    ctx = ssl.create_default_context(cafile=str(stack.cairnd.ca_file))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            cert = tls.getpeercert()
            eq(tls.version() in ("TLSv1.2", "TLSv1.3"), True, tls.version())
    names = {v for k, v in cert["subjectAltName"]}
    assert {"127.0.0.1", "localhost"} <= names, names


def test_what_does_not_trust_cairnds_authority_is_refused(stack):
    port = stack.cairnd.port
    # A client trusting only the system's authorities.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"https://127.0.0.1:{port}/healthz", timeout=5)
    # Plain HTTP on the HTTPS port gets no answer.
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    # An agent without the authority's file never registers, and says why.
    a = agents.Agent(stack.inst.url, "vm-stray", "az-x", port_count=4)
    a.start()
    try:
        harness.wait_until(lambda: "certificate" in a.log.text(a.start_offset).lower(), 15,
                           what="the agent's complaint about cairnd's certificate")
        hosts = expect.json_ok(stack.api.get("/v1/hosts"))["hosts"]
        assert "vm-stray" not in [h["name"] for h in hosts], hosts
    finally:
        a.stop()


def test_tls_needs_a_key_to_seal_its_authority_with(pg):
    db = Database(pg, pg.create_database("https_nokey"))
    r = subprocess.run([str(harness.CAIRND), "serve", "--tls", "--listen",
                        f"127.0.0.1:{harness.free_port()}", "--database-url", db.url,
                        "--sentinel-listen", "off"],
                       capture_output=True, text=True, timeout=30,
                       env=harness.clean_env())
    assert r.returncode != 0, r
    assert "--tls needs --secret-key-file" in r.stderr + r.stdout, r.stderr + r.stdout
