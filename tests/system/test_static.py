"""The web console's files: cairnd serves a --web-root outside /v1 with media types,
ETags, conditional GETs and HEAD, streams large files, and never anything outside the
root, whatever the path says."""

import os
import shutil

import pytest

import expect
import harness
from expect import eq

BIG = 5 * 1024 * 1024
SECRET = b"outside the web root\n"

FILES = {
    "index.html": b"<!doctype html><title>console</title>\n",
    "css/app.css": b"body { color: #222; }\n",
    "js/app.js": b"export const ready = true;\n",
    "js/app.js.map": b"{\"version\": 3}\n",
    "clusters/index.html": b"<!doctype html><title>clusters</title>\n",
    "docs/notes.txt": b"a directory without an index\n",
    "empty.txt": b"",
    "big.bin": bytes(range(256)) * (BIG // 256),
    "changing.txt": b"first\n",
    ".env": SECRET,
    "css/.hidden.css": SECRET,
}


class Site:
    """cairnd serving base/web; base/secret.txt is beside the root, not in it."""

    def __init__(self, cairnd, base):
        self.cairnd = cairnd
        self.base = base
        self.web = base / "web"
        self.http = harness.Api(cairnd.url)

    def raw_get(self, target, method=b"GET"):
        """A request with the target exactly as given (a client library would
        normalise its dot segments): (status, headers, body)."""
        return harness.raw_http(self.cairnd.port,
                                method + b" " + target + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Connection: close")


@pytest.fixture(scope="module")
def site(pg, cairnd_binary, request):
    base = harness.make_temp_dir("webroot")
    web = base / "web"
    for name, data in FILES.items():
        (web / name).parent.mkdir(parents=True, exist_ok=True)
        (web / name).write_bytes(data)
    (base / "secret.txt").write_bytes(SECRET)
    os.symlink(base / "secret.txt", web / "link.txt")  # a file out of the root
    os.symlink(base, web / "up")                         # a directory out of the root
    os.symlink(web / "css/app.css", web / "inside.css")  # even one that stays inside
    os.mkfifo(web / "fifo.txt")                          # opening it must not hang
    db = pg.create_database("static")
    failed_before = request.session.testsfailed
    c = harness.start_cairnd(pg.url(db), web_root=web, label="cairnd-static")
    try:
        yield Site(c, base)
    finally:
        if request.session.testsfailed > failed_before:
            c.log.dump()
        c.cleanup()
        harness.remove_temp_dir(base)


def file_ok(resp, name, content_type):
    """Assert resp is the file name from FILES with content_type; return its ETag."""
    assert resp.status_code == 200, f"expected 200, got {expect.describe(resp)}"
    expect.request_id(resp)
    eq(resp.headers.get("Content-Type"), content_type, f"Content-Type of {name}")
    eq(resp.headers.get("Cache-Control"), "no-cache", f"Cache-Control of {name}")
    eq(resp.headers.get("X-Content-Type-Options"), "nosniff", f"X-Content-Type-Options of {name}")
    eq(resp.headers.get("Content-Length"), str(len(FILES[name])), f"Content-Length of {name}")
    if resp.request.method == "GET":
        assert resp.content == FILES[name], f"body of {name}: {resp.content[:200]!r}"
    etag = resp.headers.get("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"'), f"ETag of {name}: {etag!r}"
    return etag


def test_index_at_the_root(site):
    file_ok(site.http.get("/"), "index.html", "text/html; charset=utf-8")
    file_ok(site.http.get("/index.html"), "index.html", "text/html; charset=utf-8")


@pytest.mark.parametrize("name,content_type", [
    ("css/app.css", "text/css; charset=utf-8"),
    ("js/app.js", "text/javascript; charset=utf-8"),
    ("js/app.js.map", "application/json"),
    ("docs/notes.txt", "text/plain; charset=utf-8"),
    ("empty.txt", "text/plain; charset=utf-8"),
])
def test_a_file_has_the_type_of_its_extension(site, name, content_type):
    file_ok(site.http.get("/" + name), name, content_type)


def test_the_query_string_is_the_pages(site):
    """The API refuses query parameters it does not know; a page's are its own."""
    file_ok(site.http.get("/js/app.js?v=2&cluster=orders"), "js/app.js",
            "text/javascript; charset=utf-8")


def test_if_none_match_gets_304(site):
    etag = file_ok(site.http.get("/css/app.css"), "css/app.css", "text/css; charset=utf-8")
    for held in (etag, "W/" + etag, f'"something-else", {etag}', "*"):
        r = site.http.get("/css/app.css", headers={"If-None-Match": held})
        eq(r.status_code, 304, f"status for If-None-Match: {held}")
        eq(r.content, b"", "a 304 has no body")
        eq(r.headers.get("ETag"), etag, "ETag on the 304")
        eq(r.headers.get("Cache-Control"), "no-cache", "Cache-Control on the 304")
    r = site.http.get("/css/app.css", headers={"If-None-Match": '"something-else"'})
    file_ok(r, "css/app.css", "text/css; charset=utf-8")


def test_a_changed_file_gets_a_new_etag(site):
    old = site.http.get("/changing.txt").headers["ETag"]
    (site.web / "changing.txt").write_bytes(b"second, longer\n")
    r = site.http.get("/changing.txt", headers={"If-None-Match": old})
    eq(r.status_code, 200, "status once the file changed")
    eq(r.content, b"second, longer\n", "the new content")
    assert r.headers["ETag"] != old, f"the ETag stayed {old}"


def test_head_sends_the_headers_alone(site):
    get = site.http.get("/js/app.js")
    head = site.http.request("HEAD", "/js/app.js")
    etag = file_ok(head, "js/app.js", "text/javascript; charset=utf-8")
    eq(etag, get.headers["ETag"], "the same ETag as GET")
    eq(head.content, b"", "HEAD body")
    eq(site.http.request("HEAD", "/js/app.js", headers={"If-None-Match": etag}).status_code, 304,
       "a conditional HEAD")
    expect.html_not_found(site.http.request("HEAD", "/nothing.js"))


@pytest.mark.parametrize("target", [
    b"/../secret.txt",
    b"/%2e%2e/secret.txt",
    b"/%2E%2E/secret.txt",
    b"/.%2e/secret.txt",
    b"/css/../../secret.txt",
    b"/css/%2e%2e/%2e%2e/secret.txt",
    b"/js/../index.html",
    b"/./index.html",
    b"/css\\..\\..\\secret.txt",
    b"//secret.txt",
    b"/css//app.css",
    b"/.env",
    b"/%2eenv",
    b"/css/.hidden.css",
    b"/link.txt",
    b"/up/secret.txt",
    b"/up/web/index.html",
    b"/inside.css",
    b"/fifo.txt",
])
def test_nothing_outside_the_root_or_hidden_is_served(site, target):
    status, headers, body = site.raw_get(target)
    eq(status, 404, f"status for {target!r}")
    eq(headers.get("content-type"), "text/html; charset=utf-8", f"Content-Type for {target!r}")
    assert SECRET not in body and b"<title>console" not in body, f"{target!r} served {body!r}"


def test_an_encoded_slash_is_refused_before_routing(site):
    status, headers, body = site.raw_get(b"/css%2f..%2f..%2fsecret.txt")
    eq(status, 400, "status")
    eq(headers.get("content-type"), "application/problem+json", "Content-Type")
    assert SECRET not in body


def test_a_directory_is_its_index(site):
    r = site.http.get("/clusters/")
    eq((r.status_code, r.content), (200, FILES["clusters/index.html"]), "GET /clusters/")
    eq(r.headers.get("Content-Type"), "text/html; charset=utf-8", "Content-Type")
    r = site.http.get("/clusters")
    eq((r.status_code, r.headers.get("Location")), (301, "/clusters/"),
       "a directory named without its '/' is redirected to it")
    r = site.http.get("/clusters?view=all")
    eq(r.headers.get("Location"), "/clusters/?view=all", "the query goes along")
    expect.html_not_found(site.http.get("/docs/"))  # no index.html there
    expect.html_not_found(site.http.get("/index.html/"))  # a file is no directory


def test_an_unknown_path_outside_v1_is_an_html_404(site):
    for path in ("/nothing.html", "/css/nothing.css", "/healthz/x", "/v2/clusters", "/V1/x"):
        expect.html_not_found(site.http.get(path))


def test_the_api_keeps_its_problem_documents(site):
    for path in ("/v1", "/v1/", "/v1/nothing", "/v1/index.html"):
        expect.problem(site.http.get(path), "ROUTE_NOT_FOUND")
    r = site.http.request("HEAD", "/v1/node-types")
    eq((r.status_code, r.headers.get("Allow")), (405, "GET"), "HEAD on an API route")
    r = site.http.post("/index.html", json={})
    expect.problem(r, "METHOD_NOT_ALLOWED")
    eq(r.headers.get("Allow"), "GET, HEAD", "Allow on a console path")
    expect.json_ok(site.http.get("/healthz"))


def test_a_large_file_is_streamed_whole(site):
    with site.http.session.get(site.cairnd.url + "/big.bin", stream=True, timeout=30) as r:
        eq(r.status_code, 200, "status")
        eq(r.headers.get("Content-Length"), str(BIG), "Content-Length")
        eq(r.headers.get("Content-Type"), "application/octet-stream", "Content-Type")
        got = b"".join(r.iter_content(1 << 16))
    eq(len(got), BIG, "bytes received")
    assert got == FILES["big.bin"], "the bytes received differ from the file's"


def test_the_console_does_not_take_the_agents_reserve(cairnd_factory, fresh_db):
    """Past --max-connections only agents and health probes are served, from a reserve;
    the console's files need no token either, but are not for them."""
    web = harness.make_temp_dir("busy")
    (web / "index.html").write_bytes(FILES["index.html"])
    c = cairnd_factory(fresh_db.url, web_root=web,
                       args=["--max-connections", "16", "--max-connections-per-address", "0"])
    http = harness.Api(c.url)
    try:
        with harness.idle_connections(c.port, 20):
            expect.problem(http.get("/"), "TOO_MANY_CONNECTIONS")
            eq(http.get("/healthz").status_code, 200, "the health probe, from the reserve")
        harness.wait_until(lambda: http.get("/").status_code == 200, 5,
                           what="the console served again once the connections closed")
    finally:
        harness.remove_temp_dir(web)


def test_no_web_root_serves_nothing(shared):
    """The system tests' cairnd run with --web-root '' (harness.Cairnd)."""
    for path in ("/", "/index.html"):
        expect.html_not_found(shared.anon.get(path))


@pytest.mark.parametrize("layout", [
    ("build/web",),                        # bin/cairnd in a checkout: what `make` assembled
    ("share/cairn/web",),                  # installed by `make install`
    ("share/cairn/web", "build/web"),      # both: the installed console wins
])
def test_the_default_web_root_is_beside_the_binary(cairnd_factory, fresh_db, layout):
    base = harness.make_temp_dir("install")
    try:
        (base / "bin").mkdir()
        binary = base / "bin" / "cairnd"
        shutil.copy2(harness.CAIRND, binary)
        for i, root in enumerate(layout):
            (base / root).mkdir(parents=True)
            (base / root / "index.html").write_bytes(FILES["index.html"] if i == 0 else SECRET)
        c = cairnd_factory(fresh_db.url, web_root=None, binary=binary)
        r = harness.Api(c.url).get("/")
        file_ok(r, "index.html", "text/html; charset=utf-8")
    finally:
        harness.remove_temp_dir(base)
