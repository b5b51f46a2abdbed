"""test_rate_limit.py -- requests per API token (--rate-limit,
--rate-limit-burst): a token over its rate gets 429 RATE_LIMITED with
Retry-After, before the request reaches the database; other tokens, agents
and the health probes go on; the ElastiCache endpoint throttles as AWS
does."""

import time

import requests

import ec_tools
import expect
from conftest import make_instance
from expect import eq


def test_a_token_over_its_rate_gets_429_and_others_go_on(fresh_db, pg, cairnd_factory):
    c = cairnd_factory(fresh_db.url, ["--rate-limit", "5", "--rate-limit-burst", "10"])
    inst = make_instance(pg, fresh_db, c)
    answers = [inst.api.get("/v1/clusters") for _ in range(14)]
    codes = [r.status_code for r in answers]
    eq(codes[:10], [200] * 10, "the burst")
    assert 429 in codes[10:], codes
    refused = next(r for r in answers if r.status_code == 429)
    expect.problem(refused, "RATE_LIMITED")
    eq(refused.headers.get("Retry-After"), "1", "Retry-After")
    assert refused.json()["detail"].startswith("token "), refused.json()

    # Another token has a bucket of its own; the unauthenticated health
    # probe is not limited.
    expect.json_ok(inst.read.get("/v1/clusters"))
    for _ in range(20):
        eq(requests.get(f"{c.url}/healthz", timeout=5).status_code, 200, "health")

    # Refilled at 5 a second.
    time.sleep(1.1)
    expect.json_ok(inst.api.get("/v1/clusters"))

    # The request refused is not a write that happened: a POST over the rate
    # stores nothing.
    while inst.api.get("/v1/clusters").status_code != 429:
        pass
    r = inst.api.post("/v1/tokens", json={"name": "over", "scope": "read"})
    expect.problem(r, "RATE_LIMITED")
    time.sleep(2.2)
    names = [t["name"] for t in expect.json_ok(inst.api.get("/v1/tokens"))["tokens"]]
    assert "over" not in names, names


def test_the_elasticache_endpoint_throttles(fresh_db, pg, cairnd_factory):
    """SigV4 requests count against their token as bearer ones do, and are
    refused as AWS throttles (400 Throttling), which the SDKs retry."""
    c = cairnd_factory(fresh_db.url, ["--rate-limit", "1", "--rate-limit-burst", "3"])
    inst = make_instance(pg, fresh_db, c)
    creds = ec_tools.credentials(inst.api)  # a new token: a full bucket of its own
    ec = ec_tools.boto3_client(c.url, creds)
    from botocore.exceptions import ClientError
    outcomes = []
    for _ in range(8):
        try:
            ec.describe_replication_groups()
            outcomes.append("ok")
        except ClientError as e:
            outcomes.append((e.response["ResponseMetadata"]["HTTPStatusCode"],
                             e.response["Error"]["Code"]))
    eq(outcomes[:3], ["ok"] * 3, "the burst")
    assert (400, "Throttling") in outcomes[3:], outcomes
