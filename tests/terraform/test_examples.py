"""Keep the Terraform examples in docs/terraform working against the API cairnd serves.

The providers cannot be installed here, so the examples are parsed with HashiCorp's own HCL
parser (@cdktf/hcl2json, through parse-hcl.mjs; `npm ci` in this folder installs it) and
every request a resource makes -- create, read, update, destroy -- is worked out as the
provider would: its method, its path, its query parameters and its Prefer header. Each must be
a route `cairnd routes` prints, with query parameters the route accepts; every write must wait
for its operation; the body must hold only fields of the cluster spec (`cairnd changes` lists
them), never the write-only auth_token (it would read back as drift), with the required ones,
an engine `cairnd engines` knows, and the fields that never change marked to replace the
resource.

Run from the repository root, after `make` (for bin/cairnd) and `npm ci` in this folder:

    /usr/bin/python3 -m pytest tests/terraform

CAIRND overrides the path of the binary (default: <repo>/bin/cairnd).
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CAIRND = Path(os.environ.get("CAIRND") or REPO / "bin" / "cairnd")
EXAMPLES = REPO / "docs" / "terraform"
PROVIDERS = ("restapi", "restful")  # the generic HTTP providers the examples show

REQUIRED_FIELDS = {"id", "engine", "engine_version", "node_type"}
WRITE_ONLY = {"auth_token"}
DEFAULT_MAX_WAIT_S = 300  # cairnd's --max-wait: a longer wait is cut to it
WAIT_PREFERENCE = re.compile(r"(?:^|,)\s*wait\s*=\s*(\d+)\s*(?:[;,]|$)", re.IGNORECASE)
VAR = re.compile(r"\$\{var\.([A-Za-z0-9_]+)\}")


def cairnd_json(command):
    if not CAIRND.is_file() or not os.access(CAIRND, os.X_OK):
        pytest.fail(f"{CAIRND} is missing: run `make` at the repository root first, or point "
                    "CAIRND at the binary")
    proc = subprocess.run([str(CAIRND), command], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, f"cairnd {command} exited {proc.returncode}: {proc.stderr}"
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def routes():
    """{(METHOD, path pattern): set of accepted query parameters} of the REST API."""
    return {(r["method"], r["path"]): set(r["query"])
            for r in cairnd_json("routes") if not r["console"]}


@pytest.fixture(scope="module")
def spec_fields():
    """{field: how a change of it is made} of the cluster spec."""
    return {row["field"]: row["change"] for row in cairnd_json("changes")}


@pytest.fixture(scope="module")
def engines():
    return set(cairnd_json("engines"))


@pytest.fixture(scope="module")
def parsed():
    """{path relative to docs/terraform: the file as hcl2json gives it} for every .tf file."""
    node = shutil.which("node")
    assert node, "node is not installed: run scripts/install-deps"
    assert (HERE / "node_modules" / "@cdktf" / "hcl2json").is_dir(), \
        f"@cdktf/hcl2json is missing: run `npm ci` in {HERE} (make contract does)"
    files = sorted(EXAMPLES.rglob("*.tf"))
    assert files, f"no .tf files under {EXAMPLES}"
    proc = subprocess.run([node, str(HERE / "parse-hcl.mjs"), *map(str, files)],
                          capture_output=True, text=True, timeout=120, cwd=HERE, check=False)
    assert proc.returncode == 0, f"not valid HCL:\n{proc.stderr}"
    return {str(Path(f).relative_to(EXAMPLES)): doc for f, doc in json.loads(proc.stdout).items()}


def blocks(doc, kind):
    """{name: body} of the blocks of a kind with one label (variable "x", locals)."""
    return {name: bodies[0] for name, bodies in doc.get(kind, {}).items()}


def resolve(value, variables):
    """value with every "${var.x}" replaced by x's default: whole, it keeps the default's
    type; inside a string, it is spliced in. Other expressions are left as they are."""
    if isinstance(value, dict):
        return {k: resolve(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, variables) for v in value]
    if not isinstance(value, str):
        return value
    m = VAR.fullmatch(value)
    if m:
        assert "default" in variables.get(m.group(1), {}), f"var.{m.group(1)} has no default"
        return variables[m.group(1)]["default"]
    return VAR.sub(lambda v: str(variables[v.group(1)].get("default", v.group(0))), value)


def local_of(doc, expression):
    """The local that "${jsonencode(local.x)}" encodes."""
    m = re.fullmatch(r"\$\{jsonencode\(local\.([A-Za-z0-9_]+)\)\}", expression)
    assert m, f"data must be jsonencode(local.NAME), not {expression!r}"
    locals_ = {}
    for block in doc.get("locals", []):
        locals_.update(block)
    assert m.group(1) in locals_, f"no local {m.group(1)}"
    return locals_[m.group(1)]


class Request:
    """One request a resource makes: method, path pattern, query, Prefer header."""

    def __init__(self, what, method, path, query=None, prefer=None):
        self.what, self.method, self.path = what, method, path
        self.query = query or {}
        self.prefer = prefer

    def __repr__(self):
        return f"{self.what}: {self.method} {self.path} query={self.query} prefer={self.prefer}"


def restapi_requests(doc, res, variables):
    """What restapi_object does: POST data to create_path (or path); GET, PUT and DELETE
    read_path, update_path and destroy_path (or path/{id}); query_string on every request;
    the provider's headers on every request."""
    provider = blocks(doc, "provider")["restapi"]
    headers = resolve(provider.get("headers", {}), variables)
    prefer = next((v for k, v in headers.items() if k.lower() == "prefer"), None)
    query = dict(parse_qsl(resolve(res.get("query_string", ""), variables)))

    def method(kind, default):
        return (res.get(f"{kind}_method") or provider.get(f"{kind}_method") or default).upper()

    item = f"{res['path']}/{{id}}"
    return [Request("create", method("create", "POST"), res.get("create_path", res["path"]),
                    query, prefer),
            Request("read", method("read", "GET"), res.get("read_path", item), query, prefer),
            Request("update", method("update", "PUT"), res.get("update_path", item), query,
                    prefer),
            Request("destroy", method("destroy", "DELETE"), res.get("destroy_path", item), query,
                    prefer)]


def restful_path(template, res):
    """A restful path template as a route pattern: $(path) expanded, $(body.id) the {id}."""
    return template.replace("$(path)", res["path"]).replace("$(body.id)", "{id}")


def restful_requests(doc, res, variables):
    """What restful_resource does: create_method to path; GET read_path (its id); the update
    and delete methods to update_path and delete_path, or the id; each with its own query
    (create_query, ...) over the resource's query over the provider's, and its own header
    over the resource's over the provider's."""
    provider = blocks(doc, "provider")["restful"]
    ident = restful_path(res.get("read_path", res["path"]), res)

    def part(kind, name, default):
        return resolve(res.get(f"{kind}_{name}", res.get(name, provider.get(name, default))),
                       variables)

    def request(kind, method, path):
        query = {k: v[0] for k, v in part(kind, "query", {}).items()}
        headers = part(kind, "header", {})
        prefer = next((v for k, v in headers.items() if k.lower() == "prefer"), None)
        return Request(kind, method.upper(), path, query, prefer)

    return [request("create", res.get("create_method", provider.get("create_method", "POST")),
                    res["path"]),
            request("read", "GET", ident),
            request("update", res.get("update_method", provider.get("update_method", "PUT")),
                    restful_path(res.get("update_path", ident), res)),
            request("delete", res.get("delete_method", provider.get("delete_method", "DELETE")),
                    restful_path(res.get("delete_path", ident), res))]


def example_resources(parsed):
    """(file, doc, provider, resource name, resource body, variables, requests, cluster body)
    for every resource of the generic providers in the examples."""
    found = []
    for file, doc in parsed.items():
        variables = blocks(doc, "variable")
        for name, res in blocks(doc.get("resource", {}), "restapi_object").items():
            body = resolve(local_of(doc, res["data"]), variables)
            found.append((file, doc, "restapi", name, res, variables,
                          restapi_requests(doc, res, variables), body))
        for name, res in blocks(doc.get("resource", {}), "restful_resource").items():
            found.append((file, doc, "restful", name, res, variables,
                          restful_requests(doc, res, variables), resolve(res["body"], variables)))
    return found


def test_every_provider_has_an_example(parsed):
    """docs/terraform/<provider>/main.tf for each, using that provider's resource."""
    shown = sorted({p for _, _, p, *_ in example_resources(parsed)})
    assert shown == sorted(PROVIDERS), f"examples use {shown}, expected {sorted(PROVIDERS)}"
    for p in PROVIDERS:
        assert f"{p}/main.tf" in parsed, f"docs/terraform/{p}/main.tf is missing"


def test_endpoint_and_token_are_variables(parsed):
    """The provider reads cairnd's address and the API token from variables; the token is
    sensitive and has no default."""
    problems = []
    for file, doc in parsed.items():
        providers = blocks(doc, "provider")
        if not set(providers) & set(PROVIDERS):
            continue
        variables = blocks(doc, "variable")
        token = variables.get("cairn_token", {})
        if "cairn_url" not in variables or not token:
            problems.append(f"{file}: variables cairn_url and cairn_token are required")
        if token.get("sensitive") is not True or "default" in token:
            problems.append(f"{file}: cairn_token must be sensitive, with no default")
        for name, p in providers.items():
            text = json.dumps(p)
            if "${var.cairn_url}" not in text or "${var.cairn_token}" not in text:
                problems.append(f"{file}: provider {name} must use var.cairn_url and "
                                "var.cairn_token")
    assert not problems, "\n".join(problems)


def test_requests_are_routes(parsed, routes):
    """Every request the resources make is a route of the API, with query parameters that
    route accepts (cairnd refuses any other with 400)."""
    problems = []
    for file, _, provider, name, _, _, requests, _ in example_resources(parsed):
        for r in requests:
            accepted = routes.get((r.method, r.path))
            if accepted is None:
                problems.append(f"{file} {provider} {name}: {r} is no route of cairnd")
            elif set(r.query) - accepted:
                problems.append(f"{file} {provider} {name}: {r} sends "
                                f"{sorted(set(r.query) - accepted)}, the route accepts "
                                f"{sorted(accepted)}")
    assert not problems, "\n".join(problems)


def wait_of(request):
    """The wait a request asks for, in seconds, or None: ?wait= wins over Prefer."""
    if "wait" in request.query:
        value = str(request.query["wait"])
        assert value.isdigit(), f"{request}: wait must be whole seconds"
        return int(value)
    m = WAIT_PREFERENCE.search(request.prefer or "")
    return int(m.group(1)) if m else None


def test_writes_wait_for_their_operation(parsed):
    """Create, update and destroy ask to wait (Prefer: wait=N or ?wait=N), so that apply
    returns once the cluster is available and destroy once it is gone; for no longer than
    cairnd holds a request by default, which would cut it."""
    problems = []
    for file, _, provider, name, _, _, requests, _ in example_resources(parsed):
        for r in requests:
            wait = wait_of(r)
            if r.what == "read":
                continue
            if wait is None or wait <= 0:
                problems.append(f"{file} {provider} {name}: {r} does not wait")
            elif wait > DEFAULT_MAX_WAIT_S:
                problems.append(f"{file} {provider} {name}: {r} waits {wait} s, more than "
                                f"cairnd's default --max-wait of {DEFAULT_MAX_WAIT_S}")
    assert not problems, "\n".join(problems)


def test_bodies_are_cluster_specs(parsed, spec_fields, engines):
    """The body holds fields of the spec only, with the required ones; no write-only field,
    which GET never returns and the provider would see as drift; an engine cairnd runs; and
    the fields that can never change replace the resource instead of being refused."""
    immutable = {f for f, how in spec_fields.items() if how == "immutable"}
    problems = []
    for file, _, provider, name, res, _, _, body in example_resources(parsed):
        where = f"{file} {provider} {name}"
        unknown = set(body) - set(spec_fields)
        if unknown:
            problems.append(f"{where}: {sorted(unknown)} are no fields of the cluster spec")
        if set(body) & WRITE_ONLY:
            problems.append(f"{where}: {sorted(set(body) & WRITE_ONLY)} is write-only")
        if REQUIRED_FIELDS - set(body):
            problems.append(f"{where}: lacks {sorted(REQUIRED_FIELDS - set(body))}")
        if body.get("engine") not in engines:
            problems.append(f"{where}: engine {body.get('engine')!r} is not one of {engines}")
        replace = set(res.get("force_new", res.get("force_new_attrs", [])))
        if replace != immutable & set(body):
            problems.append(f"{where}: replaces the resource on {sorted(replace)}, but the "
                            f"fields that never change are {sorted(immutable & set(body))}")
        if not re.fullmatch(r"[a-z](?:[a-z0-9]|-(?!-))*[a-z0-9]", str(body.get("id", ""))):
            problems.append(f"{where}: id {body.get('id')!r} is not a cluster id")
    assert not problems, "\n".join(problems)


def test_the_parser_refuses_what_terraform_would(tmp_path):
    """The check above would be worth little if the parser took anything: broken HCL fails."""
    bad = tmp_path / "bad.tf"
    bad.write_text('resource "restapi_object" "x" {\n  path = \n}\n', encoding="utf-8")
    proc = subprocess.run([shutil.which("node") or "node", str(HERE / "parse-hcl.mjs"), str(bad)],
                          capture_output=True, text=True, timeout=60, cwd=HERE, check=False)
    assert proc.returncode == 1 and "bad.tf" in proc.stderr, (proc.returncode, proc.stderr)
