"""The node-type and engine-version catalogs."""

import pytest

import expect
import harness
from expect import eq
from reference import (CATALOG, ENGINE_VERSION_KEYS, FAMILY_SIZES, NAMES, NODE_TYPE_KEYS,
                       R7G_LARGE, SIZES, UPGRADES, VCPUS)


def vkey(version):
    return tuple(int(p) for p in version.split("."))


@pytest.fixture(scope="module")
def node_types(shared):
    body = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": 1000}))
    eq(set(body), {"node_types"}, "members of a one-page node-type list")
    return body["node_types"]


@pytest.fixture(scope="module")
def engine_versions(shared):
    body = expect.json_ok(shared.read.get("/v1/engine-versions", params={"page_size": 1000}))
    eq(set(body), {"engine_versions"}, "members of a one-page engine-version list")
    return body["engine_versions"]

# --------------------------------------------------------------------------
# The engines


def test_database_engines_are_cairnds(shared):
    """The schema's lists of engines are engine/catalog.c's: the CHECKs of the engine
    columns, and a price column of node_types per engine."""
    engines = set(harness.cairnd_list("engines"))
    for table in ("engine_versions", "host_engines"):
        eq(harness.check_values(shared, table, "engine"), engines, f"CHECK of {table}.engine")
    prices = shared.psql("SELECT column_name FROM information_schema.columns"
                         " WHERE table_name = 'node_types' AND column_name LIKE 'price%'")
    eq(set(prices.split()), {f"price_{e}_usd_hour" for e in engines}, "price columns")

# --------------------------------------------------------------------------
# Node types


def test_the_elasticache_node_types(node_types):
    names = [nt["name"] for nt in node_types]
    eq(len(names), len(NAMES), "number of node types")
    eq(len(set(names)), len(names), f"distinct names in {names}")
    eq(set(names), NAMES, "node-type names")


def test_default_page_holds_the_whole_catalog(shared, node_types):
    body = expect.json_ok(shared.read.get("/v1/node-types"))
    eq(body, {"node_types": node_types}, "default page vs page_size=1000")


def test_node_type_shape(node_types):
    for nt in node_types:
        eq(set(nt), NODE_TYPE_KEYS, f"members of {nt.get('name')}")
        family, size = nt["name"].split(".")[1:]
        eq((nt["family"], nt["size"]), (family, size), f"family/size of {nt['name']}")
        eq(nt["burstable"], family == "t3", f"burstable of {nt['name']}")
        assert isinstance(nt["vcpus"], int) and nt["vcpus"] > 0, f"vcpus of {nt}"
        assert isinstance(nt["memory_gib"], (int, float)) and nt["memory_gib"] > 0, f"memory of {nt}"
        eq(set(nt["network_gbps"]), {"baseline", "burst"}, f"network members of {nt['name']}")
        assert 0 < nt["network_gbps"]["baseline"] <= nt["network_gbps"]["burst"], \
            f"network baseline must be positive and <= burst: {nt}"
        eq(set(nt["price_usd_per_hour"]), {"redis", "valkey"}, f"price members of {nt['name']}")
        assert nt["price_usd_per_hour"]["redis"] > 0, f"redis price of {nt}"


def test_r7g_large_reference_values(node_types):
    got = next(nt for nt in node_types if nt["name"] == "cache.r7g.large")
    eq(got, R7G_LARGE, "cache.r7g.large")


def test_valkey_price_is_80_percent_of_redis(node_types):
    for nt in node_types:
        p = nt["price_usd_per_hour"]
        assert abs(p["valkey"] - p["redis"] * 0.8) < 5e-5, \
            f"{nt['name']}: valkey {p['valkey']} != 0.8 x redis {p['redis']} = {p['redis'] * 0.8}"


def test_vcpus_follow_elasticache_sizes(node_types):
    for nt in node_types:
        want = 2 if nt["family"] == "t3" else VCPUS[nt["size"]]
        eq(nt["vcpus"], want, f"vcpus of {nt['name']}")


def test_bigger_sizes_have_more_memory_and_cost_more(node_types):
    for family, sizes in FAMILY_SIZES.items():
        members = {nt["size"]: nt for nt in node_types if nt["family"] == family}
        for small, big in zip(sizes, sizes[1:]):
            a, b = members[small], members[big]
            assert a["memory_gib"] < b["memory_gib"], \
                f"memory: {a['name']} {a['memory_gib']} !< {b['name']} {b['memory_gib']}"
            assert a["price_usd_per_hour"]["redis"] < b["price_usd_per_hour"]["redis"], \
                f"price: {a['name']} {a['price_usd_per_hour']} !< {b['name']} {b['price_usd_per_hour']}"


def test_ordered_by_family_then_size(node_types):
    families = [nt["family"] for nt in node_types]
    runs = [f for i, f in enumerate(families) if i == 0 or families[i - 1] != f]
    eq(runs, list(FAMILY_SIZES), "family order (api/openapi.yaml: t3, m5, r5, r6g, r7g)")
    for family in runs:
        sizes = [nt["size"] for nt in node_types if nt["family"] == family]
        eq(sizes, sorted(sizes, key=SIZES.index), f"size order within {family}")


@pytest.mark.parametrize("name", sorted(NAMES))
def test_get_one_node_type(shared, node_types, name):
    body = expect.json_ok(shared.read.get(f"/v1/node-types/{name}"))
    eq(body, next(nt for nt in node_types if nt["name"] == name), f"GET {name} vs list item")


@pytest.mark.parametrize("name", ["cache.r7g.huge", "r7g.large", "cache.R7G.LARGE",
                                  "cache.r7g.large.x", "x" * 300],
                         ids=["huge", "no-prefix", "upper-case", "suffix", "300-chars"])
def test_unknown_node_type_is_404(shared, name):
    r = shared.read.get(f"/v1/node-types/{name}")
    expect.problem(r, "NODE_TYPE_NOT_FOUND", instance=r.request.path_url)

# --------------------------------------------------------------------------
# Engine versions


def test_engine_version_catalog(engine_versions):
    got = sorted((ev["engine"], ev["version"]) for ev in engine_versions)
    eq(got, sorted(CATALOG), "engine versions")


def test_engine_version_shape(engine_versions):
    for ev in engine_versions:
        eq(set(ev), ENGINE_VERSION_KEYS, f"members of {ev.get('engine')} {ev.get('version')}")
        assert isinstance(ev["status"], str) and ev["status"], f"status of {ev}"
        for t in ev["upgrade_targets"]:
            eq(set(t), {"engine", "version"}, f"upgrade target members in {ev}")


def test_upgrade_targets(engine_versions):
    for ev in engine_versions:
        key = (ev["engine"], ev["version"])
        targets = [(t["engine"], t["version"]) for t in ev["upgrade_targets"]]
        eq(len(targets), len(set(targets)), f"duplicate upgrade targets of {key}: {targets}")
        eq(set(targets), UPGRADES[key], f"upgrade targets of {key}")


def test_never_a_downgrade(engine_versions):
    known = {(ev["engine"], ev["version"]) for ev in engine_versions}
    for ev in engine_versions:
        for t in ev["upgrade_targets"]:
            target = (t["engine"], t["version"])
            assert target in known, f"{ev['engine']} {ev['version']} targets unknown {target}"
            assert t["engine"] == ev["engine"] or (ev["engine"], t["engine"]) == ("redis", "valkey"), \
                f"engine downgrade {ev['engine']} {ev['version']} -> {target}"
            if t["engine"] == ev["engine"]:
                assert vkey(t["version"]) > vkey(ev["version"]), \
                    f"downgrade {ev['engine']} {ev['version']} -> {target}"
            else:
                assert vkey(t["version"]) >= vkey(ev["version"]), \
                    f"version downgrade {ev['engine']} {ev['version']} -> {target}"


def test_not_schedulable_without_hosts(engine_versions):
    for ev in engine_versions:
        eq((ev["schedulable"], ev["hosts_available"]), (False, 0),
           f"schedulable/hosts_available of {ev['engine']} {ev['version']}")
        want = f"no healthy registered host reports {ev['engine']} {ev['version']} yet"
        assert ev["note"].startswith(want), \
            f"note of {ev['engine']} {ev['version']}: {ev['note']!r} does not start with {want!r}"


def test_valkey_8_0_is_available(engine_versions):
    ev = next(e for e in engine_versions if (e["engine"], e["version"]) == ("valkey", "8.0"))
    eq(ev["status"], "available", "status of valkey 8.0")


@pytest.mark.parametrize("engine", ["redis", "valkey"])
def test_engine_filter(shared, engine_versions, engine):
    body = expect.json_ok(shared.read.get("/v1/engine-versions", params={"engine": engine}))
    want = [ev for ev in engine_versions if ev["engine"] == engine]
    eq(body["engine_versions"], want, f"engine={engine}")
    eq(len(want), {"redis": 1, "valkey": 4}[engine], f"number of {engine} versions")
