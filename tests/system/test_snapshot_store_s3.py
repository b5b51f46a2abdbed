"""test_snapshot_store_s3.py -- the snapshot store's S3 client
(controlplane/snapshot_s3.c, driven by tests/tools/s3_store) against s3rver, an
S3-compatible server from npm (tests/s3), and against replies no server should send.

s3rver 3 checks the access key, the date and the Authorization header's shape, but
not a Signature Version 4 signature (its source: "Signature version 4 calculation is
unimplemented"), nor the body against x-amz-content-sha256, nor the ETags a
CompleteMultipartUpload names; and it has no AbortMultipartUpload (405). So the
client talks to it through StrictFront, which does what S3 does there: it verifies
every request's signature with botocore's S3 signer (AWS's own code, not ours) and
its body's hash, refuses a part list whose ETags are not the parts', and answers
aborts (204, then 404 NoSuchUpload)."""

import hashlib
import http.client
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import harness
from expect import eq

S3RVER = harness.REPO / "tests" / "s3" / "node_modules" / ".bin" / "s3rver"
TOOL = Path(os.environ.get("S3_STORE", str(harness.REPO / "build" / "tests" / "tools" /
                                           "s3_store")))
BUCKET = "cairn-snapshots"
ACCESS_KEY = SECRET = "S3RVER"  # the one account s3rver 3 knows
KEY = "7f3c2a/shard-0003.rdb.gz"

AUTH_RE = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, ?"
                     r"SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})")
SIGNATURE_MISMATCH = ("The request signature we calculated does not match the signature you "
                      "provided. Check your key and signing method.")


def s3_error(status, code, message):
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()
    return status, {"Content-Type": "application/xml"}, body


class QuietServer(http.server.ThreadingHTTPServer):
    """A test server that does not print the clients that hang up on it."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class StrictFront(QuietServer):
    """s3rver behind S3's own checks; counts what it verified and refused."""

    def __init__(self, upstream_port):
        super().__init__(("127.0.0.1", 0), FrontHandler)
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.verified = 0
        self.hashed_bytes = 0
        self.refused = []
        self.targets = []  # (method, path and query) of each request
        self.part_etags = {}  # (upload id, part number) -> ETag
        self.aborted = set()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def refusal(self, method, target, headers, body):
        """None when the request is signed as S3 would check it, else the reply."""
        m = AUTH_RE.fullmatch(headers.get("Authorization", ""))
        if m is None:
            return s3_error(400, "AuthorizationHeaderMalformed",
                            "The authorization header is malformed.")
        access_key, _, region, names, signature = m.groups()
        if access_key != ACCESS_KEY:
            return None  # s3rver refuses the keys it does not know itself
        if any(headers.get(n) is None for n in names.split(";")):
            return s3_error(403, "AccessDenied", "A signed header is missing.")
        req = AWSRequest(method=method, url=f"http://{headers['Host']}{target}",
                         headers={n: headers[n] for n in names.split(";")})
        req.context["timestamp"] = headers["x-amz-date"]
        signer = S3SigV4Auth(Credentials(access_key, SECRET), "s3", region)
        want = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
        if want != signature:
            return s3_error(403, "SignatureDoesNotMatch", SIGNATURE_MISMATCH)
        if hashlib.sha256(body).hexdigest() != headers["x-amz-content-sha256"]:
            return s3_error(400, "XAmzContentSHA256Mismatch",
                            "The provided 'x-amz-content-sha256' header does not match what "
                            "was computed.")
        with self.lock:
            self.verified += 1
            self.hashed_bytes += len(body)
        return None

    def what_s3rver_lacks(self, method, query, body):
        """S3's answer where s3rver would give none or a wrong one, else None."""
        upload = query.get("uploadId", [None])[0]
        if method == "DELETE" and upload is not None:
            with self.lock:
                if upload in self.aborted:
                    return s3_error(404, "NoSuchUpload", "The specified upload does not exist.")
                self.aborted.add(upload)
            return 204, {}, b""
        if method == "POST" and upload is not None:
            parts = ET.fromstring(body).findall("Part")
            for part in parts:
                number = int(part.findtext("PartNumber"))
                if self.part_etags.get((upload, number)) != part.findtext("ETag"):
                    return s3_error(400, "InvalidPart", f"Part {number} is not the part uploaded.")
        return None


class FrontHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        front = self.server
        with front.lock:
            front.targets.append((self.command, self.path))
        reply = front.refusal(self.command, self.path, self.headers, body)
        if reply is not None:
            with front.lock:
                front.refused.append((self.command, self.path, reply[2].decode()))
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        reply = reply or front.what_s3rver_lacks(self.command, query, body) or \
            self.forward(body, query)
        status, headers, data = reply
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_PUT = do_POST = do_DELETE = do_GET

    def forward(self, body, query):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("connection", "expect", "content-length")}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        keep = {k: v for k, v in resp.getheaders()
                if k.lower() not in ("connection", "content-length", "transfer-encoding", "date")}
        if self.command == "PUT" and "partNumber" in query and resp.status == 200:
            with self.server.lock:
                self.server.part_etags[(query["uploadId"][0], int(query["partNumber"][0]))] = \
                    resp.getheader("ETag")
        return resp.status, keep, data


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def s3rver():
    """s3rver on a free port with BUCKET made, in a temp dir: (port, its log)."""
    if not S3RVER.exists() or not shutil.which("node"):
        pytest.skip("s3rver is not installed: run `make tests/s3/node_modules` "
                    "(npm ci in tests/s3)")
    work = harness.make_temp_dir("s3rver")
    port = harness.free_port()
    proc = harness.ManagedProcess(
        "s3rver", [S3RVER, "--directory", work / "data", "--address", "127.0.0.1", "--port", port,
                   "--configure-bucket", BUCKET],
        work / "s3rver.log", env=harness.clean_env(), cwd=work)
    failed = True
    try:
        def listening():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0
        harness.wait_until(lambda: listening() or not proc.alive(), 15, what="s3rver to listen")
        assert proc.alive(), f"s3rver exited:\n{proc.log.text()}"
        yield port, proc.log
        failed = False
    finally:
        proc.stop(signal.SIGTERM, timeout=5)
        if failed:
            proc.log.dump()
        harness.remove_temp_dir(work)


@pytest.fixture
def front(request, s3rver):
    """A StrictFront before s3rver; s3rver's log of the test printed if it fails."""
    port, log = s3rver
    offset = log.size()
    server = serve(StrictFront(port))
    yield server
    server.shutdown()
    server.server_close()
    if getattr(getattr(request.node, "rep_call", None), "failed", False):
        log.dump(offset)


def tool(endpoint, *args, bucket=BUCKET, prefix="backups/eu", secret=SECRET,
         access_key=ACCESS_KEY):
    """Run s3_store; (exit code, stdout)."""
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is missing: make build/tests/tools/s3_store", pytrace=False)
    env = harness.clean_env(AWS_ACCESS_KEY_ID=access_key, AWS_SECRET_ACCESS_KEY=secret)
    for name in [k for k in env if k.lower().endswith("_proxy")]:
        del env[name]
    r = subprocess.run([str(TOOL), endpoint, bucket, prefix] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=60, env=env)
    return r.returncode, r.stdout.strip()


def test_upload_read_back_and_delete(front):
    rc, out = tool(front.url, "roundtrip", KEY)
    eq(rc, 0, f"the round trip:\n{out}\nrefused by the front: {front.refused}")
    assert "ok finish" in out and "ok abort again" in out, out
    eq(front.refused, [], "requests refused")
    # One request a step, each signed as botocore computes it; the 5 MiB
    # parts (the second put twice) with their bodies' hashes too.
    eq(front.verified, out.count("\nok ") + 1, "requests verified")
    assert front.hashed_bytes > 3 * (5 << 20), front.hashed_bytes


def test_a_wrong_secret_is_refused_with_s3s_reason(front):
    rc, out = tool(front.url, "begin", KEY, secret="not-the-secret")
    eq((rc, out), (1, f"S3 begin upload of {KEY}: HTTP 403 SignatureDoesNotMatch: "
                      f"{SIGNATURE_MISMATCH}"))


def test_what_the_server_refuses_is_named(front):
    # s3rver's own refusals, read from its XML.
    rc, out = tool(front.url, "read", KEY, 0, 10, access_key="AKIDNOBODY")
    eq((rc, out), (1, f"S3 GET {KEY}: HTTP 403 InvalidAccessKeyId: The AWS Access Key Id you "
                      "provided does not exist in our records."))
    rc, out = tool(front.url, "read", "nothing/here.rdb.gz", 0, 10)
    eq((rc, out), (1, "S3 GET nothing/here.rdb.gz: no such object (HTTP 404 NoSuchKey: "
                      "The specified key does not exist.)"))
    # A missing object is deleted already; a missing bucket is an error.
    eq(tool(front.url, "delete", "nothing/here.rdb.gz"), (0, "deleted"))
    rc, out = tool(front.url, "delete", KEY, bucket="no-such-bucket")
    eq((rc, out), (1, f"S3 DELETE {KEY}: HTTP 404 NoSuchBucket: "
                      "The specified bucket does not exist"))


def test_where_requests_go(front):
    """Path-style: /bucket[/prefix]/key, under any host name the endpoint has."""
    for endpoint, prefix, path in [(front.url, "", f"/{BUCKET}/{KEY}"),
                                   (front.url.replace("127.0.0.1", "localhost") + "/", "a/b",
                                    f"/{BUCKET}/a/b/{KEY}")]:
        rc, out = tool(endpoint, "begin", KEY, prefix=prefix)
        eq(rc, 0, out)
        eq(front.targets[-1], ("POST", f"{path}?uploads"), endpoint)
        rc, out = tool(endpoint, "put", KEY, out, 1, 10)
        eq(rc, 0, out)
    eq(front.refused, [], "requests refused")


def test_an_endpoint_that_does_not_answer():
    port = harness.free_port()
    rc, out = tool(f"http://127.0.0.1:{port}", "read", KEY, 0, 10)
    eq(rc, 1, out)
    assert out.startswith(f"S3 GET {KEY}: ") and str(port) in out, out
    rc, out = tool("ftp://127.0.0.1/", "read", KEY, 0, 10)
    eq((rc, out), (1, 'the S3 endpoint "ftp://127.0.0.1/" is not http:// or https://'))


class HostileHandler(http.server.BaseHTTPRequestHandler):
    """Replies no S3 sends: too long, too big, or not what was asked for."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, **headers):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        start, end = map(int, re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers["Range"]).groups())
        if "longer" in self.path:  # twice the bytes asked for
            self.reply(206, b"x" * 2 * (end - start + 1),
                       Content_Range=f"bytes {start}-{end}/999999")
        else:  # another range than the one asked for
            self.reply(206, b"y" * (end - start + 1),
                       Content_Range=f"bytes {start + 1}-{end + 1}/999999")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(500, b"<Error><Code>InternalError</Code><Message>bad\x01news</Message>" +
                   b"<Padding>" + b"z" * (2 << 20) + b"</Padding></Error>")

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(200, b"", ETag='"' + "e" * 4000 + '"')


def test_hostile_replies_are_errors_not_crashes():
    server = serve(QuietServer(("127.0.0.1", 0), HostileHandler))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        rc, out = tool(url, "read", "longer", 0, 100)
        eq((rc, out), (1, "S3 GET longer: the reply holds more than the 100 bytes asked for"))
        rc, out = tool(url, "read", "shifted", 50, 100)
        eq((rc, out), (1, 'S3 GET shifted: the reply\'s Content-Range "bytes 51-150/999999" '
                          "does not start at 50"))
        # A 2 MiB error: its first 64 KiB are read, its control characters made spaces.
        rc, out = tool(url, "begin", KEY)
        eq((rc, out), (1, f"S3 begin upload of {KEY}: HTTP 500 InternalError: bad news"))
        rc, out = tool(url, "put", KEY, "id", 1, 10)
        eq((rc, out), (1, f"S3 PUT part 1 of {KEY}: the reply has no ETag of at most 127 bytes"))
    finally:
        server.shutdown()
        server.server_close()
