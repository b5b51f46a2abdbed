"""reference.py -- what the contract says cairnd must serve, as data for the tests."""

SIZES = ["micro", "small", "medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge",
         "12xlarge", "16xlarge", "24xlarge"]
FAMILY_SIZES = {
    "t3": ["micro", "small", "medium"],
    "m5": ["large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"],
    "r5": ["large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge"],
    "r6g": ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"],
    "r7g": ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"],
}
# The contract says "31 types" but enumerates 29 (t3 x3, m5 x6, r5 x6, r6g x7,
# r7g x7); the enumeration is what the tests hold cairnd to.
NAMES = {f"cache.{f}.{s}" for f, sizes in FAMILY_SIZES.items() for s in sizes}
# vCPUs of ElastiCache node sizes (every t3 size has 2).
VCPUS = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48,
         "16xlarge": 64, "24xlarge": 96}
NODE_TYPE_KEYS = {"name", "family", "size", "vcpus", "memory_gib", "burstable", "network_gbps",
                  "price_usd_per_hour"}
R7G_LARGE = {"name": "cache.r7g.large", "family": "r7g", "size": "large", "vcpus": 2,
             "memory_gib": 13.07, "burstable": False,
             "network_gbps": {"baseline": 0.937, "burst": 12.5},
             "price_usd_per_hour": {"redis": 0.219, "valkey": 0.1752}}

ENGINE_VERSION_KEYS = {"engine", "version", "status", "upgrade_targets", "schedulable",
                       "hosts_available", "note"}
CATALOG = [("redis", "7.0"), ("valkey", "7.2"), ("valkey", "8.0"), ("valkey", "8.1"),
           ("valkey", "9.0")]
UPGRADES = {
    ("redis", "7.0"): {("valkey", "7.2"), ("valkey", "8.0")},
    ("valkey", "7.2"): {("valkey", "8.0"), ("valkey", "8.1"), ("valkey", "9.0")},
    ("valkey", "8.0"): {("valkey", "8.1"), ("valkey", "9.0")},
    ("valkey", "8.1"): {("valkey", "9.0")},
    ("valkey", "9.0"): set(),
}

ROUTES = {
    ("GET", "/healthz", "none"), ("GET", "/readyz", "none"),
    ("GET", "/v1/node-types", "read"), ("GET", "/v1/node-types/{name}", "read"),
    ("GET", "/v1/engine-versions", "read"), ("GET", "/v1/operations", "read"),
    ("GET", "/v1/operations/{id}", "read"), ("GET", "/v1/events", "read"),
    ("GET", "/v1/tokens", "admin"), ("POST", "/v1/tokens", "admin"),
    ("DELETE", "/v1/tokens/{id}", "admin"),
    ("POST", "/", "sigv4"),
}
