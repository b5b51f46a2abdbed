"""Keep api/openapi.yaml in step with cairnd's route table, error registry and lists.

Checks that the document is valid OpenAPI (with the node validator in this folder),
that every $ref resolves, that its operations are exactly the routes `cairnd routes`
prints, with the same scope and matching security, that its error codes and
problem responses agree with the registry of codes and statuses, which must also be
the registry cairnd is built with (controlplane/http/problem.h), and that its engines and
operation kinds are the ones `cairnd engines` and `cairnd operation-kinds` print --
as are the kinds the SQL in controlplane/ names.

Run from the repository root, after `make` (for bin/cairnd) and `npm ci` in this folder:

    /usr/bin/python3 -m pytest tests/contract

CAIRND overrides the path of the binary (default: <repo>/bin/cairnd).
"""

import re
import shutil
import subprocess

import pytest

from binaries import HERE, REPO, SPEC_PATH, cairnd_list
PROBLEM_H = REPO / "controlplane" / "http" / "problem.h"

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
SCOPES = ("none", "read", "admin", "sigv4", "agent", "bootstrap")
# The security scheme each scope's operations must declare (none: `security: []`). API
# tokens, agent credentials and the bootstrap token are all bearer credentials, but none
# opens the routes of another kind, so each kind has its own scheme.
SECURITY_SCHEMES = {
    "read": "bearer",
    "admin": "bearer",
    "agent": "agentCredential",
    "bootstrap": "bootstrapToken",
    "sigv4": "awsSigV4",
}
PROBLEM_JSON = "application/problem+json"

# The error registry as the API contract states it: code -> HTTP status.
KNOWN_CODES = {
    "MALFORMED_REQUEST": 400,
    "UNSUPPORTED_TRANSFER_CODING": 501,
    "TOO_MANY_CONNECTIONS": 503,
    "RATE_LIMITED": 429,
    "MALFORMED_JSON": 400,
    "VALIDATION_FAILED": 400,
    "INVALID_QUERY_PARAMETER": 400,
    "INVALID_PAGE_TOKEN": 400,
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "ROUTE_NOT_FOUND": 404,
    "NODE_TYPE_NOT_FOUND": 404,
    "OPERATION_NOT_FOUND": 404,
    "TOKEN_NOT_FOUND": 404,
    "JOIN_TOKEN_NOT_FOUND": 404,
    "HOST_NOT_FOUND": 404,
    "CLUSTER_NOT_FOUND": 404,
    "CALIBRATION_NOT_FOUND": 404,
    "SNAPSHOT_NOT_FOUND": 404,
    "NOT_SUPPORTED_BY_ENGINE": 409,
    "COMBINED_CHANGES": 400,
    "NO_PENDING_CHANGE": 404,
    "ENGINE_NOT_INSTALLED": 409,
    "CLUSTER_UNHEALTHY": 409,
    "INSUFFICIENT_MEMORY": 409,
    "OPERATION_NOT_CANCELLABLE": 409,
    "NO_IN_SYNC_REPLICA": 409,
    "METHOD_NOT_ALLOWED": 405,
    "CLUSTER_ALREADY_EXISTS": 409,
    "INSUFFICIENT_CAPACITY": 409,
    "OPERATION_IN_PROGRESS": 409,
    "CHANGE_NOT_SUPPORTED_YET": 409,
    "HOST_NAME_TAKEN": 409,
    "HOST_NOT_PENDING": 409,
    "HOST_IN_USE": 409,
    "USER_NOT_FOUND": 404,
    "USER_ALREADY_EXISTS": 409,
    "USER_QUOTA_EXCEEDED": 409,
    "TOO_MANY_PENDING_HOSTS": 409,
    "SNAPSHOT_NAME_TAKEN": 409,
    "SNAPSHOT_NOT_AVAILABLE": 409,
    "SNAPSHOT_PART_OUT_OF_ORDER": 409,
    "PRECONDITION_FAILED": 412,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "INTERNAL_ERROR": 500,
    "OPERATION_FAILED": 500,
    "DATABASE_UNAVAILABLE": 503,
    "NOT_READY": 503,
    "SECRET_KEY_UNAVAILABLE": 503,
    "NO_SNAPSHOT_STORE": 503,
}


# ---------------------------------------------------------------- helpers


def eq_list(got, want, what):
    assert got == want, f"{what}: {got}, but cairnd has {want}"


@pytest.fixture(scope="module")
def route_table():
    """The route table as `cairnd routes` prints it: a list of {method, path, scope,
    console, query}."""
    table = cairnd_list("routes")
    assert isinstance(table, list), f"`cairnd routes` printed {type(table).__name__}, not an array"
    return table


@pytest.fixture(scope="module")
def routes(route_table):
    """The REST API's routes: {(METHOD, path): scope}. The web console's (`console`:
    true) are pages and files, not API operations, and this document leaves them out."""
    result, problems = {}, []
    for entry in route_table:
        if not (isinstance(entry, dict) and {"method", "path", "scope", "console"} <= entry.keys()):
            problems.append(f"entry without method, path, scope and console: {entry!r}")
            continue
        if entry["console"]:
            continue
        key = (entry["method"].upper(), entry["path"])
        if key in result:
            problems.append(f"route listed twice: {key[0]} {key[1]}")
        result[key] = entry["scope"]
    assert not problems, "bad `cairnd routes` output:\n  " + "\n  ".join(problems)
    return result


def operations(spec):
    """Yield (METHOD, path, operation, path item) for every operation in the document."""
    for path, item in spec.get("paths", {}).items():
        for method in HTTP_METHODS:
            if method in item:
                yield method.upper(), path, item[method], item


def resolve_pointer(doc, ref):
    """Return the object a local `#/...` reference points at; raise KeyError if none."""
    if not ref.startswith("#"):
        raise KeyError(f"{ref}: not a local reference")
    node = doc
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(ref)
    return node


def deref(doc, obj):
    """Follow `$ref` until an object without one is reached."""
    seen = set()
    while isinstance(obj, dict) and "$ref" in obj:
        ref = obj["$ref"]
        assert ref not in seen, f"reference cycle through {ref}"
        seen.add(ref)
        obj = resolve_pointer(doc, ref)
    return obj


def walk(node, where="#"):
    """Yield (JSON pointer, dict) for every dict in the document."""
    if isinstance(node, dict):
        yield where, node
        for k, v in node.items():
            yield from walk(v, f"{where}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{where}/{i}")


def kebab(code):
    return code.lower().replace("_", "-")


def problem_examples(spec, response):
    """Yield (name, example value) for the problem+json examples of a resolved response."""
    media = response.get("content", {}).get(PROBLEM_JSON)
    if not media:
        return
    if "example" in media:
        yield "example", media["example"]
    for name, ex in media.get("examples", {}).items():
        ex = deref(spec, ex)
        if "value" in ex:
            yield name, ex["value"]


def all_responses(spec):
    """Yield (where, status or None, resolved response) for every operation response, then
    every component response (whose status is known only where it is used)."""
    for method, path, op, _ in operations(spec):
        for status, resp in op.get("responses", {}).items():
            yield f"{method} {path} {status}", str(status), deref(spec, resp)
    for name, resp in spec.get("components", {}).get("responses", {}).items():
        yield f"components.responses.{name}", None, deref(spec, resp)


# ---------------------------------------------------------------- the document itself


def test_document_is_valid_openapi():
    node = shutil.which("node")
    assert node, "node is not installed: run scripts/install-deps"
    lib = HERE / "node_modules" / "@seriousme" / "openapi-schema-validator"
    assert lib.is_dir(), (f"{lib} is missing: run `npm ci` in {HERE} "
                          "(the Makefile's contract-test target does this)")
    proc = subprocess.run([node, str(HERE / "validate-openapi.mjs"), str(SPEC_PATH)],
                          capture_output=True, text=True, timeout=120, cwd=HERE,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"OpenAPI validation failed:\n{proc.stdout}{proc.stderr}"


def test_every_ref_resolves(spec):
    broken = []
    for where, obj in walk(spec):
        ref = obj.get("$ref")
        if isinstance(ref, str):
            try:
                resolve_pointer(spec, ref)
            except (KeyError, IndexError, ValueError):
                broken.append(f"{where}: {ref}")
    assert not broken, "unresolvable $ref:\n  " + "\n  ".join(broken)


def test_operation_ids_are_unique(spec):
    seen, problems = {}, []
    for method, path, op, _ in operations(spec):
        op_id = op.get("operationId")
        if not op_id:
            problems.append(f"{method} {path}: no operationId")
        elif op_id in seen:
            problems.append(f"{method} {path}: operationId {op_id} also used by {seen[op_id]}")
        else:
            seen[op_id] = f"{method} {path}"
    assert not problems, "\n".join(problems)


def test_path_parameters_are_declared(spec):
    problems = []
    for method, path, op, item in operations(spec):
        params = [deref(spec, p) for p in item.get("parameters", []) + op.get("parameters", [])]
        declared = {p["name"] for p in params if p.get("in") == "path"}
        in_path = {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
        if declared != in_path:
            problems.append(f"{method} {path}: path has {sorted(in_path)}, "
                            f"parameters declare {sorted(declared)}")
    assert not problems, "\n".join(problems)


def test_lists_take_pagination_parameters(spec):
    problems = []
    for method, path, op, item in operations(spec):
        ok = deref(spec, op.get("responses", {}).get("200", {}))
        schema = deref(spec, ok.get("content", {}).get("application/json", {}).get("schema", {}))
        if "next_page_token" not in schema.get("properties", {}):
            continue
        params = [deref(spec, p) for p in item.get("parameters", []) + op.get("parameters", [])]
        names = {p["name"] for p in params if p.get("in") == "query"}
        missing = {"page_size", "page_token"} - names
        if missing:
            problems.append(f"{method} {path}: list without {sorted(missing)}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- spec vs. route table


def test_operations_are_exactly_the_routes(spec, routes):
    in_spec = {(method, path) for method, path, _, _ in operations(spec)}
    in_binary = set(routes)
    missing_from_spec = sorted(in_binary - in_spec)
    missing_from_binary = sorted(in_spec - in_binary)
    lines = []
    if missing_from_spec:
        lines.append(f"routes in `cairnd routes` but not in {SPEC_PATH.name}:")
        lines += [f"  {m} {p}" for m, p in missing_from_spec]
    if missing_from_binary:
        lines.append(f"operations in {SPEC_PATH.name} but not in `cairnd routes`:")
        lines += [f"  {m} {p}" for m, p in missing_from_binary]
    assert not lines, "\n".join(lines)


def test_query_parameters_are_the_routes(spec, route_table):
    """Each operation documents exactly the query parameters its route accepts: cairnd refuses
    any other with 400 INVALID_QUERY_PARAMETER."""
    problems = []
    for entry in route_table:
        if entry.get("console"):
            continue
        item = spec.get("paths", {}).get(entry["path"], {})
        op = item.get(entry["method"].lower())
        if op is None:
            continue  # test_operations_are_exactly_the_routes names it
        params = [deref(spec, p) for p in item.get("parameters", []) + op.get("parameters", [])]
        documented = sorted(p["name"] for p in params if p.get("in") == "query")
        accepted = sorted(entry.get("query", []))
        if documented != accepted:
            problems.append(f"{entry['method']} {entry['path']}: documents {documented}, "
                            f"cairnd accepts {accepted}")
    assert not problems, "\n".join(problems)


def test_console_routes_stay_out_of_the_api(spec, route_table):
    """The console's rows take only what the API leaves: nothing under /v1, no route the
    document names, and no credential."""
    problems = []
    in_spec = {(method.upper(), path) for method, path, _, _ in operations(spec)}
    for entry in route_table:
        if not entry.get("console"):
            continue
        where = f"console route {entry['method']} {entry['path']}"
        if entry["path"] == "/v1" or entry["path"].startswith("/v1/"):
            problems.append(f"{where}: under /v1, the API's namespace")
        if entry["path"] in in_spec:
            problems.append(f"{where}: a path {SPEC_PATH.name} documents")
        if entry["scope"] != "none":
            problems.append(f"{where}: scope {entry['scope']}, not none")
    assert not problems, "\n".join(problems)


def test_scopes_match_the_routes(spec, routes):
    problems = []
    for method, path, op, _ in operations(spec):
        scope = op.get("x-cairn-scope")
        if scope not in SCOPES:
            problems.append(f"{method} {path}: x-cairn-scope is {scope!r}, not one of {SCOPES}")
            continue
        route_scope = routes.get((method, path))
        if route_scope is not None and route_scope != scope:
            problems.append(f"{method} {path}: spec says {scope}, cairnd says {route_scope}")
    for (method, path), scope in routes.items():
        if scope not in SCOPES:
            problems.append(f"cairnd route {method} {path}: scope {scope!r} not one of {SCOPES}")
    assert not problems, "\n".join(problems)


def test_security_follows_scope(spec):
    schemes = spec.get("components", {}).get("securitySchemes", {})
    problems = []
    for name in sorted(set(SECURITY_SCHEMES.values())):
        scheme = schemes.get(name)
        if name == "awsSigV4":  # a signature in the Authorization header, not a bearer
            if not (scheme and scheme.get("type") == "apiKey" and scheme.get("in") == "header"
                    and scheme.get("name") == "Authorization"):
                problems.append(f"components.securitySchemes.awsSigV4 must be the "
                                f"Authorization header: {scheme}")
            continue
        if not (scheme and scheme.get("type") == "http"
                and str(scheme.get("scheme", "")).lower() == "bearer"):
            problems.append(f"components.securitySchemes.{name} must be an http bearer scheme: "
                            f"{scheme}")
    unused = sorted(set(schemes) - set(SECURITY_SCHEMES.values()))
    if unused:
        problems.append(f"security schemes no scope uses: {unused}")
    for method, path, op, _ in operations(spec):
        effective = op["security"] if "security" in op else spec.get("security")
        scope = op.get("x-cairn-scope")
        if scope == "none" and effective != []:
            problems.append(f"{method} {path}: scope none but security is {effective}, not []")
        if scope in SECURITY_SCHEMES:
            want = [{SECURITY_SCHEMES[scope]: []}]
            if effective != want:
                problems.append(f"{method} {path}: scope {scope} but security is {effective}, "
                                f"not {want}")
    assert not problems, "\n".join(problems)


def test_auth_failures_are_documented(spec):
    """Every route that takes a credential documents 401 and 403: read routes refuse agent
    credentials, admin routes also read tokens, the agent route API tokens, and the
    registration route answers 403 while cairnd has no bootstrap token."""
    problems = []
    for method, path, op, _ in operations(spec):
        scope, responses = op.get("x-cairn-scope"), op.get("responses", {})
        # The ElastiCache endpoint refuses as AWS does: 403, never 401.
        want = set() if scope == "none" else {"403"} if scope == "sigv4" else {"401", "403"}
        missing = want - set(map(str, responses))
        if missing:
            problems.append(f"{method} {path}: scope {scope} but no {sorted(missing)} response")
        if scope == "none" and {"401", "403"} & set(map(str, responses)):
            problems.append(f"{method} {path}: scope none yet documents 401/403")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- error codes


def test_error_codes_are_the_registry(spec):
    schema = spec["components"]["schemas"]["ErrorCode"]
    enum = schema["enum"]
    unknown = sorted(set(enum) - KNOWN_CODES.keys())
    absent = sorted(KNOWN_CODES.keys() - set(enum))
    assert not unknown, f"ErrorCode lists codes the contract does not know: {unknown}"
    assert not absent, f"ErrorCode lacks codes of the contract: {absent}"
    assert len(enum) == len(set(enum)), "ErrorCode lists a code twice"
    statuses = schema.get("x-cairn-status", {})
    wrong = {c: s for c, s in statuses.items() if KNOWN_CODES.get(c) != s}
    assert set(statuses) == set(enum), "ErrorCode's x-cairn-status must map every code"
    assert not wrong, f"x-cairn-status disagrees with the contract: {wrong}"


def test_registry_is_cairnds():
    """KNOWN_CODES is the registry cairnd is built with, code for code and status for status."""
    text = PROBLEM_H.read_text(encoding="utf-8")
    built = {code: int(status)
             for code, status in re.findall(r"\bX\(\s*([A-Z_]+)\s*,\s*(\d{3})\s*,", text)}
    assert built, f"no X(CODE, status, title) entries found in {PROBLEM_H}"
    missing = sorted(built.keys() - KNOWN_CODES.keys())
    extra = sorted(KNOWN_CODES.keys() - built.keys())
    wrong = {c: (KNOWN_CODES[c], s) for c, s in built.items() if c in KNOWN_CODES
             and KNOWN_CODES[c] != s}
    assert not missing, f"codes in {PROBLEM_H.name} that the contract lacks: {missing}"
    assert not extra, f"codes of the contract that {PROBLEM_H.name} lacks: {extra}"
    assert not wrong, f"statuses that differ (contract, {PROBLEM_H.name}): {wrong}"


def test_operation_error_codes_are_documented(spec):
    """Every code an operation fails with by itself is in OperationError's table."""
    text = PROBLEM_H.read_text(encoding="utf-8")
    block = text[text.index("#define OPERATION_ERROR_CODES"):]
    block = block[:block.index("\n\n")]
    own = set(re.findall(r"\bX\(\s*([A-Z_]+)\s*,\s*\"", block))
    assert own, f"no X(CODE, title) entries in OPERATION_ERROR_CODES of {PROBLEM_H}"
    table = spec["components"]["schemas"]["OperationError"]["description"]
    documented = set(re.findall(r"`([A-Z][A-Z_]+)`", table))
    assert not own - documented, f"OperationError does not document: {sorted(own - documented)}"
    stale = documented - own - KNOWN_CODES.keys()
    assert not stale, f"OperationError documents codes cairnd lacks: {sorted(stale)}"


def test_problem_responses_match_their_codes(spec):
    problems = []
    for where, status, resp in all_responses(spec):
        media = resp.get("content", {}).get(PROBLEM_JSON)
        if "text/xml" in resp.get("content", {}):
            continue  # the ElastiCache endpoint's faults (its own codes)
        if status is not None and status.startswith(("4", "5")) and not media:
            problems.append(f"{where}: error response without {PROBLEM_JSON} content")
        if not media:
            continue
        if status is not None and not status.startswith(("4", "5")):
            problems.append(f"{where}: problem document on a non-error status")
        examples = list(problem_examples(spec, resp))
        if not examples:
            problems.append(f"{where}: problem response without an example")
        for name, value in examples:
            code = value.get("code")
            if code not in KNOWN_CODES:
                problems.append(f"{where} example {name}: unknown code {code!r}")
                continue
            expected = KNOWN_CODES[code]
            if value.get("status") != expected:
                problems.append(f"{where} example {name}: {code} has status "
                                f"{value.get('status')}, registry says {expected}")
            if status is not None and status != str(expected):
                problems.append(f"{where} example {name}: {code} is a {expected}, "
                                f"documented under {status}")
            if value.get("type") != f"urn:cairn:problem:{kebab(code)}":
                problems.append(f"{where} example {name}: type {value.get('type')!r} for {code}")
            if code in ("VALIDATION_FAILED", "INVALID_QUERY_PARAMETER") and not value.get("errors"):
                problems.append(f"{where} example {name}: {code} without errors[]")
    assert not problems, "\n".join(problems)


def test_specific_problem_headers(spec):
    """401 carries WWW-Authenticate and 405 carries Allow, wherever they are described."""
    problems = []
    for where, _, resp in all_responses(spec):
        codes = {v.get("code") for _, v in problem_examples(spec, resp)}
        headers = resp.get("headers", {})
        if "UNAUTHENTICATED" in codes and "WWW-Authenticate" not in headers:
            problems.append(f"{where}: UNAUTHENTICATED without a WWW-Authenticate header")
        if "METHOD_NOT_ALLOWED" in codes and "Allow" not in headers:
            problems.append(f"{where}: METHOD_NOT_ALLOWED without an Allow header")
        if "X-Request-Id" not in headers:
            problems.append(f"{where}: no X-Request-Id header")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- lists kept in C


def test_engines_are_cairnds(spec):
    """The Engine enum, and the engines a node type is priced for, are engine/catalog.c's."""
    engines = cairnd_list("engines")
    schemas = spec["components"]["schemas"]
    eq_list(schemas["Engine"]["enum"], engines, "components.schemas.Engine.enum")
    price = schemas["NodeType"]["properties"]["price_usd_per_hour"]
    eq_list(price["required"], engines, "NodeType.price_usd_per_hour.required")
    eq_list(list(price["properties"]), engines, "NodeType.price_usd_per_hour.properties")


def test_operation_kinds_are_cairnds(spec):
    """The OperationKind enum is controlplane/ops/ops.c's list, in its order (the order the
    ?kind= filter's message lists them in)."""
    kinds = cairnd_list("operation-kinds")
    eq_list(spec["components"]["schemas"]["OperationKind"]["enum"], kinds,
            "components.schemas.OperationKind.enum")


# A C string literal, and the SQL that names an operation kind.
C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
KIND_IS = re.compile(r"\bkind\s*(?:=|<>)\s*'([a-z_]+)'")
KIND_IN = re.compile(r"\bkind\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.IGNORECASE)
KIND_INSERTED = re.compile(r"INSERT INTO operations\s*\(cluster_id,\s*kind\b[^)]*\)\s*"
                           r"VALUES\s*\(\s*\$1,\s*'([a-z_]+)'", re.IGNORECASE)


def sql_kinds(path):
    """{kind: path} for every operation kind the SQL in a C file names."""
    sql = "".join(C_STRING.findall(path.read_text(encoding="utf-8")))
    named = set(KIND_IS.findall(sql)) | set(KIND_INSERTED.findall(sql))
    for listed in KIND_IN.findall(sql):
        named |= set(re.findall(r"'([a-z_]+)'", listed))
    return {k: path.relative_to(REPO) for k in named}


def test_sql_names_only_known_kinds():
    """SQL compares operations.kind with literals and inserts kinds by name; each must be
    a kind of the list (a misspelt one would match nothing, silently)."""
    kinds = set(cairnd_list("operation-kinds"))
    named = {}
    for path in sorted((REPO / "controlplane").rglob("*.c")):
        named.update(sql_kinds(path))
    assert {"create", "failover", "replace_node"} <= named.keys(), \
        f"the SQL patterns found only {sorted(named)}: do they still match controlplane/'s SQL?"
    unknown = {k: str(p) for k, p in named.items() if k not in kinds}
    assert not unknown, f"SQL names operation kinds cairnd does not have: {unknown}"
