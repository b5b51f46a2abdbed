"""The web console as cairnd serves it from build/web (web/ and the uPlot `make` vendors):
the page and every module and stylesheet it loads arrive with their types and a
Content-Security-Policy that allows only the console's own files, the page carries no
inline script or style, and the API it calls is the one everyone uses."""

import posixpath
import re
from html.parser import HTMLParser

import pytest

import harness
from expect import eq

WEB = harness.WEB_ROOT
SOURCE = harness.REPO / "web"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")


class Page(HTMLParser):
    """What index.html loads, and anything inline that the policy would refuse."""

    def __init__(self):
        super().__init__()
        self.loads, self.inline, self.preloads = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            if "src" in a:
                self.loads.append(a["src"])
            else:
                self.inline.append("<script> without src")
        if tag == "link" and a.get("rel") == "stylesheet":
            self.loads.append(a["href"])
        if tag == "link" and a.get("rel") == "modulepreload":
            self.preloads.append(a["href"])
        if tag == "style":
            self.inline.append("<style>")
        for name in a:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"{tag} {name}=")


@pytest.fixture(scope="module")
def console(pg, cairnd_binary, request):
    if not (WEB / "index.html").is_file():
        pytest.fail(f"no console at {WEB}: run `make`", pytrace=False)
    db = pg.create_database("console")
    failed_before = request.session.testsfailed
    c = harness.start_cairnd(pg.url(db), web_root=WEB, label="cairnd-console")
    try:
        yield c
    finally:
        if request.session.testsfailed > failed_before:
            c.log.dump()
        c.cleanup()


def served(console, path, content_type):
    r = harness.Api(console.url).get(path)
    eq(r.status_code, 200, f"status of {path}")
    eq(r.headers.get("Content-Type"), content_type, f"Content-Type of {path}")
    eq(r.headers.get("Content-Security-Policy"), CSP, f"Content-Security-Policy of {path}")
    eq(r.headers.get("Referrer-Policy"), "no-referrer", f"Referrer-Policy of {path}")
    return r.text


def modules(path, text):
    """The modules the module at path imports, statically or with import(), as paths from
    the root."""
    found = re.findall(r"""^import .* from '(\.\.?/[\w./-]+)';|import\('(\.\.?/[\w./-]+)'\)""",
                       text, re.M)
    return [posixpath.normpath(posixpath.join(posixpath.dirname(path), a or b))
            for a, b in found]


def reachable(starts, read):
    """Every module reachable from the modules starts, read(path) giving each one's text;
    the starts included."""
    seen, todo = set(), list(starts)
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += modules(path, read(path))
    return seen


def test_the_page_and_all_it_loads_are_served_under_the_policy(console):
    page = Page()
    page.feed(served(console, "/", "text/html; charset=utf-8"))
    eq(page.inline, [], "inline script, style or handlers in index.html (the policy refuses them)")
    for loaded in ("js/app.js", "css/console.css", "vendor/uplot.css"):
        assert loaded in page.loads, page.loads
    for sheet in (p for p in page.loads if p.endswith(".css")):
        served(console, "/" + sheet, "text/css; charset=utf-8")
    def read(path):
        text = served(console, "/" + path, "text/javascript; charset=utf-8")
        assert "innerHTML" not in text, f"{path} builds markup from strings"
        return text

    seen = reachable([p for p in page.loads if p.endswith(".js")], read)
    eq(sorted(p for p in seen if p.startswith("js/")),
       sorted("js/" + p.name for p in (SOURCE / "js").glob("*.js")),
       "modules reached from the page (each file in web/js is used)")
    assert "vendor/uplot.js" in seen, f"uPlot is not reached from the page: {sorted(seen)}"


def test_every_module_is_preloaded(console):
    """index.html lists, as modulepreload, every module app.js imports, statically or
    with import(), and theirs, so that the browser fetches them at once instead of one
    level of imports after another."""
    page = Page()
    page.feed(served(console, "/", "text/html; charset=utf-8"))
    needed = reachable(["js/app.js"], lambda path: (WEB / path).read_text()) - {"js/app.js"}
    eq(sorted(page.preloads), sorted(needed), "modules preloaded by index.html")


def test_the_built_console_is_the_source(console):
    """build/web holds web/'s served files as they are now: `make` copied them afresh."""
    sources = [SOURCE / "index.html", SOURCE / "favicon.svg"]
    sources += sorted((SOURCE / "css").glob("*")) + sorted((SOURCE / "js").glob("*"))
    for path in sources:
        rel = path.relative_to(SOURCE)
        eq((WEB / rel).read_bytes(), path.read_bytes(), f"build/web/{rel} (run `make`)")


def test_the_api_beside_it_is_unchanged(console):
    r = harness.Api(console.url).get("/v1/clusters")
    eq(r.status_code, 401, "the API still needs a token")
    eq(r.headers.get("Content-Type"), "application/problem+json", "the API's refusals")
