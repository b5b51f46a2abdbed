"""The web console as cairnd serves it from the repository's web/: the page and every
module it loads arrive with their types and a Content-Security-Policy that allows only the
console's own files, the page carries no inline script or style, and the API it calls is
the one everyone uses."""

import re
from html.parser import HTMLParser

import pytest

import harness
from expect import eq

WEB = harness.REPO / "web"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")


class Page(HTMLParser):
    """What index.html loads, and anything inline that the policy would refuse."""

    def __init__(self):
        super().__init__()
        self.loads, self.inline = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            if "src" in a:
                self.loads.append(a["src"])
            else:
                self.inline.append("<script> without src")
        if tag == "link" and a.get("rel") == "stylesheet":
            self.loads.append(a["href"])
        if tag == "style":
            self.inline.append("<style>")
        for name in a:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"{tag} {name}=")


@pytest.fixture(scope="module")
def console(pg, cairnd_binary, request):
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


def modules(text):
    """The relative modules a module imports."""
    return re.findall(r"""^import .* from '(\./[\w.]+)';""", text, re.M)


def test_the_page_and_all_it_loads_are_served_under_the_policy(console):
    page = Page()
    page.feed(served(console, "/", "text/html; charset=utf-8"))
    eq(page.inline, [], "inline script, style or handlers in index.html (the policy refuses them)")
    assert "js/app.js" in page.loads and "css/console.css" in page.loads, page.loads
    seen, todo = set(), [p for p in page.loads if p.endswith(".js")]
    served(console, "/css/console.css", "text/css; charset=utf-8")
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = served(console, "/" + path, "text/javascript; charset=utf-8")
        assert "innerHTML" not in text, f"{path} builds markup from strings"
        todo += ["js/" + m[2:] for m in modules(text)]
    eq(sorted(seen), sorted("js/" + p.name for p in (WEB / "js").glob("*.js")),
       "modules reached from the page (each file in web/js is used)")


def test_the_api_beside_it_is_unchanged(console):
    r = harness.Api(console.url).get("/v1/clusters")
    eq(r.status_code, 401, "the API still needs a token")
    eq(r.headers.get("Content-Type"), "application/problem+json", "the API's refusals")
