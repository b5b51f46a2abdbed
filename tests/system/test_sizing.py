"""test_sizing.py -- POST /v1/sizing as a user asks it: the seed workload
lands on a .large memory-optimized node, every refusal names its field, a
budget too small answers with no options and the reasons, and an option's
cluster_spec posted to /v1/clusters unchanged becomes an available cluster
on real engines."""

import clusters
import expect
from expect import eq

stack, _dump_on_failure, cleanup = clusters.stack_fixtures("sizing")

SEED = {"keys": 14_700_000, "avg_key_bytes": 4, "avg_value_bytes": 200,
        "requests_per_second": 20000, "read_ratio": 0.8, "availability": "none",
        "cluster_mode": "disabled"}


def size(api, body, status=200):
    return expect.json_ok(api.post("/v1/sizing", json=body), status)


def test_seed_workload(stack):
    for engine, version in (("redis", "7.0"), ("valkey", "8.0")):
        out = size(stack.inst.read, dict(SEED, engine=engine, engine_version=version))
        options = out["options"]
        assert options, out
        first = options[0]
        assert first["node_type"].startswith("cache.r") and first["node_type"].endswith(".large"), \
            first["node_type"]
        for o in options:
            assert o["node_type"] != "cache.m5.large" and not o["node_type"].startswith("cache.t3")
            assert o["memory"]["node_gib"] * 1.073741824 >= 10.5, o["memory"]
            eq((o["cluster_mode"], o["num_shards"], o["replicas_per_shard"]), ("disabled", 1, 0),
               "shape asked")
            assert any("no replica" in w for w in o["warnings"]), o["warnings"]
        prices = [o["price_usd_per_month"] for o in options]
        eq(prices, sorted(prices), "cheapest first")
        names = {a["name"] for a in out["assumptions"]}
        assert {"reserved_memory_percent", "headroom_percent",
                "engine_overhead_bytes_per_key"} <= names, names
        assert any(a["source"] == "published" for a in out["assumptions"]), out["assumptions"]
        eq(first["cluster_spec"]["engine"], engine, "spec engine")


def test_refusals_name_their_field(stack):
    api = stack.inst.read
    cases = [
        ({}, "data_gib"),
        ({"data_gib": 1, "keys": 10, "avg_key_bytes": 1, "avg_value_bytes": 1}, "data_gib"),
        ({"keys": 10, "avg_value_bytes": 5}, "avg_key_bytes"),
        ({"data_gib": 1, "read_ratio": 2}, "read_ratio"),
        ({"data_gib": 1, "data_types": {"strings": 0.5, "hashes": 0.2}}, "data_types"),
        ({"data_gib": 1, "node_families": ["z9"]}, "node_families[0]"),
        ({"data_gib": 1, "engine": "valkey", "engine_version": "6.2"}, "engine_version"),
        ({"data_gib": 1, "availability": "always"}, "availability"),
        ({"data_gib": 1, "id": "Bad_Id"}, "id"),
        ({"data_gib": -1}, "data_gib"),
        ({"data_gib": 1, "surprise": True}, "surprise"),
    ]
    for body, field in cases:
        expect.problem(api.post("/v1/sizing", json=body), "VALIDATION_FAILED", fields=[field])


def test_nothing_fits_says_why(stack):
    out = size(stack.inst.read, {"data_gib": 50, "max_monthly_usd": 10})
    eq(out["options"], [], "options")
    assert any("max_monthly_usd" in r for r in out["reasons"]), out["reasons"]


def test_an_option_becomes_a_cluster(stack, cleanup):
    out = size(stack.inst.read, {"id": "sized", "data_gib": 0.1, "requests_per_second": 200,
                                 "availability": "standard", "max_options": 3})
    spec = out["options"][0]["cluster_spec"]
    eq(spec["node_type"], "cache.t3.micro", "a tiny workload's node")
    cleanup.append("sized")
    r = stack.api.post("/v1/clusters", json=spec)
    eq(r.status_code, 202, f"POST of the option's spec ({r.text})")
    body = clusters.wait_available(stack.api, "sized")
    for k, v in spec.items():
        eq(body[k], v, f"{k} as sized")
