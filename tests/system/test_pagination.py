"""Pagination: page_size bounds, page tokens, walking a list to its end."""

import pytest

import expect
from expect import eq
from reference import NAMES

N = len(NAMES)

LISTS = [("/v1/node-types", "node_types"), ("/v1/engine-versions", "engine_versions"),
         ("/v1/operations", "operations"), ("/v1/events", "events"), ("/v1/tokens", "tokens")]


def full(api, path, key):
    body = expect.json_ok(api.get(path, params={"page_size": 1000}))
    assert "next_page_token" not in body, f"unexpected next_page_token on a full page: {body!r}"
    return body[key]


def test_walk_node_types_by_seven(shared):
    everything = full(shared.read, "/v1/node-types", "node_types")
    pages = expect.walk(shared.read, "/v1/node-types", "node_types", 7)
    eq([len(p["node_types"]) for p in pages], [7] * (N // 7) + [N % 7], "page sizes")
    for p in pages[:-1]:
        assert "next_page_token" in p, f"missing next_page_token on a non-final page: {p!r}"
    assert "next_page_token" not in pages[-1], f"next_page_token on the last page: {pages[-1]!r}"
    walked = [nt["name"] for p in pages for nt in p["node_types"]]
    eq(walked, [nt["name"] for nt in everything], "walked names vs one page")
    eq(len(set(walked)), N, "distinct names walked")
    eq([nt for p in pages for nt in p["node_types"]], everything, "walked items vs one page")


def test_next_page_token_only_when_more_items_exist(shared):
    body = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": N}))
    eq(len(body["node_types"]), N, f"items at page_size={N}")
    assert "next_page_token" not in body, f"next_page_token although nothing follows: {body!r}"
    body = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": N - 1}))
    eq(len(body["node_types"]), N - 1, f"items at page_size={N - 1}")
    token = body.get("next_page_token")
    assert isinstance(token, str) and token, f"next_page_token at page_size={N - 1}: {token!r}"
    last = expect.json_ok(shared.read.get("/v1/node-types",
                                          params={"page_size": N - 1, "page_token": token}))
    eq(len(last["node_types"]), 1, "items on the second page")
    assert "next_page_token" not in last, f"next_page_token on the last page: {last!r}"


def test_page_size_bounds_accepted(shared):
    one = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": 1}))
    eq(len(one["node_types"]), 1, "items at page_size=1")
    assert "next_page_token" in one, f"page_size=1 of {N} items must have a next_page_token"
    big = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": 1000}))
    eq(len(big["node_types"]), N, "items at page_size=1000")


@pytest.mark.parametrize("path,key", LISTS)
@pytest.mark.parametrize("size", ["0", "1001", "-1", "abc", "1.5", "", "1e2", "99999999999999999999",
                                  " 5", "0x10"])
def test_page_size_out_of_bounds(shared, path, key, size):
    r = shared.api.get(f"{path}?page_size={size}")
    expect.problem(r, "INVALID_QUERY_PARAMETER", fields=["page_size"])


@pytest.mark.parametrize("path,key", LISTS)
@pytest.mark.parametrize("token", ["garbage", "!!!", "A" * 500, "eyJhIjoxfQ", "0"])
def test_garbage_page_token(shared, path, key, token):
    expect.problem(shared.api.get(path, params={"page_token": token}), "INVALID_PAGE_TOKEN")


@pytest.mark.parametrize("other_path", ["/v1/engine-versions", "/v1/operations", "/v1/events",
                                        "/v1/tokens"])
def test_token_from_another_list_is_rejected(shared, other_path):
    body = expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": 1}))
    token = body["next_page_token"]
    # The token is good where it came from...
    expect.json_ok(shared.read.get("/v1/node-types", params={"page_size": 1, "page_token": token}))
    # ...and refused anywhere else.
    expect.problem(shared.api.get(other_path, params={"page_token": token}), "INVALID_PAGE_TOKEN")


def test_engine_versions_token_is_rejected_by_node_types(shared):
    body = expect.json_ok(shared.read.get("/v1/engine-versions", params={"page_size": 1}))
    token = body["next_page_token"]
    expect.problem(shared.read.get("/v1/node-types", params={"page_token": token}),
                   "INVALID_PAGE_TOKEN")


def test_walk_engine_versions_by_two(shared):
    everything = full(shared.read, "/v1/engine-versions", "engine_versions")
    pages = expect.walk(shared.read, "/v1/engine-versions", "engine_versions", 2)
    eq([len(p["engine_versions"]) for p in pages], [2, 2, 1], "page sizes")
    eq([ev for p in pages for ev in p["engine_versions"]], everything, "walked vs one page")


def test_walk_filtered_engine_versions(shared):
    pages = expect.walk(shared.read, "/v1/engine-versions", "engine_versions", 3,
                        params={"engine": "valkey"})
    got = [ev["version"] for p in pages for ev in p["engine_versions"]]
    eq(sorted(got), ["7.2", "8.0", "8.1", "9.0"], "valkey versions walked by 3")
    eq(len(pages), 2, "pages of 4 valkey versions by 3")


def test_empty_lists_have_no_next_token(cairn):
    for path, key in [("/v1/operations", "operations"), ("/v1/events", "events")]:
        body = expect.json_ok(cairn.read.get(path))
        eq(body, {key: []}, f"{path} on a fresh database")


def test_walk_events_past_ten(cairn):
    """Event ids are numbers: the 10th and later must sort after the 9th."""
    cairn.psql("INSERT INTO events (type, message) SELECT 'test.tick', 'tick ' || g"
               " FROM generate_series(1, 23) g")
    pages = expect.walk(cairn.api, "/v1/events", "events", 3)
    walked = [int(e["id"]) for p in pages for e in p["events"]]
    eq(len(walked), 23, "events walked")
    eq(walked, sorted(walked), "events in id order")
    eq([e["message"] for p in pages for e in p["events"]], [f"tick {i}" for i in range(1, 24)],
       "every event once, oldest first")
