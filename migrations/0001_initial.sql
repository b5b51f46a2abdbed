-- 0001_initial: the core schema. Three kinds of state are kept apart:
-- spec (clusters.spec + generation), observed (hosts, nodes, shards as the
-- engines report them) and operations (durable workflows between the two).

-- Catalog: node types users choose from, priced per engine.
CREATE TABLE node_types (
    name                  text PRIMARY KEY,           -- cache.r7g.large
    family                text NOT NULL,              -- r7g
    size                  text NOT NULL,              -- large
    sort_order            integer NOT NULL UNIQUE,    -- family, then size
    vcpus                 integer NOT NULL CHECK (vcpus > 0),
    memory_gib            numeric(8, 2) NOT NULL CHECK (memory_gib > 0),
    network_baseline_gbps numeric(8, 3) NOT NULL CHECK (network_baseline_gbps > 0),
    network_burst_gbps    numeric(8, 3) NOT NULL CHECK (network_burst_gbps >= network_baseline_gbps),
    burstable             boolean NOT NULL DEFAULT false,
    price_redis_usd_hour  numeric(10, 4) NOT NULL CHECK (price_redis_usd_hour > 0),
    price_valkey_usd_hour numeric(10, 4) NOT NULL CHECK (price_valkey_usd_hour > 0)
);

-- Catalog: engine lines (major.minor) and the upgrades allowed between them.
CREATE TABLE engine_versions (
    engine        text NOT NULL CHECK (engine IN ('redis', 'valkey')),
    version       text NOT NULL CHECK (version ~ '^[0-9]+\.[0-9]+$'),
    release_order integer NOT NULL UNIQUE,
    status        text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'deprecated')),
    PRIMARY KEY (engine, version)
);

CREATE TABLE engine_upgrade_paths (
    from_engine  text NOT NULL,
    from_version text NOT NULL,
    to_engine    text NOT NULL,
    to_version   text NOT NULL,
    PRIMARY KEY (from_engine, from_version, to_engine, to_version),
    FOREIGN KEY (from_engine, from_version) REFERENCES engine_versions (engine, version),
    FOREIGN KEY (to_engine, to_version) REFERENCES engine_versions (engine, version),
    CHECK ((from_engine, from_version) <> (to_engine, to_version))
);

-- Observed: VMs running cairn-agent, and the engine binaries each has.
CREATE TABLE hosts (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name             text NOT NULL UNIQUE,
    az               text NOT NULL,
    address          text NOT NULL,
    vcpus            integer NOT NULL CHECK (vcpus > 0),
    memory_mib       bigint NOT NULL CHECK (memory_mib > 0),
    port_min         integer NOT NULL,
    port_max         integer NOT NULL CHECK (port_max >= port_min),
    state            text NOT NULL DEFAULT 'healthy' CHECK (state IN ('healthy', 'lost', 'draining')),
    credential_id    text UNIQUE,
    credential_hash  bytea,
    last_seen_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hosts_az ON hosts (az);

CREATE TABLE host_engines (
    host_id      uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    engine       text NOT NULL,
    version      text NOT NULL,   -- the catalog line, 8.0
    full_version text NOT NULL,   -- what the binary reports, 8.0.1
    path         text NOT NULL,
    PRIMARY KEY (host_id, engine, version)
);

-- Spec: what the user asked for. spec is returned verbatim; generation
-- increments on every accepted change, observed_generation says how far the
-- operations have carried it.
CREATE TABLE clusters (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                text NOT NULL,
    spec                jsonb NOT NULL,
    generation          bigint NOT NULL DEFAULT 1,
    observed_generation bigint NOT NULL DEFAULT 0,
    status              text NOT NULL DEFAULT 'creating',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz
);
-- Names are unique among clusters that still exist.
CREATE UNIQUE INDEX clusters_live_name ON clusters (name) WHERE deleted_at IS NULL;

CREATE TABLE shards (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    cluster_id uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    index      integer NOT NULL CHECK (index >= 0),
    slots      int4range[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cluster_id, index)
);

CREATE TABLE nodes (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    cluster_id         uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    shard_id           uuid NOT NULL REFERENCES shards (id) ON DELETE CASCADE,
    host_id            uuid REFERENCES hosts (id),
    port               integer,
    engine             text NOT NULL,
    engine_version     text NOT NULL,
    -- Observed from the engine (ROLE, CLUSTER NODES), never assumed.
    role               text CHECK (role IN ('primary', 'replica')),
    state              text NOT NULL DEFAULT 'pending',
    engine_node_id     text,
    replication_offset bigint,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (host_id, port)
);
CREATE INDEX nodes_cluster ON nodes (cluster_id);
CREATE INDEX nodes_host ON nodes (host_id);

-- Operations: durable workflows, one row each, resumable at step after a
-- runner dies (its lease expires and another claims it).
CREATE TABLE operations (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- No foreign key: an operation's history outlives its cluster.
    cluster_id       uuid,
    kind             text NOT NULL CHECK (kind IN ('create', 'delete', 'scale_shards',
                         'scale_replicas', 'change_node_type', 'upgrade_engine', 'failover',
                         'replace_node', 'apply_parameters')),
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running',
                         'succeeded', 'failed', 'cancelled')),
    step             integer NOT NULL DEFAULT 0,
    step_name        text,
    context          jsonb NOT NULL DEFAULT '{}',
    progress         integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    error            jsonb,
    lease_owner      text,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operations_newest ON operations (created_at DESC, id DESC);
CREATE INDEX operations_cluster ON operations (cluster_id, created_at DESC, id DESC);
-- At most one mutating operation runs per cluster.
CREATE UNIQUE INDEX operations_one_active ON operations (cluster_id)
    WHERE state IN ('pending', 'running') AND cluster_id IS NOT NULL;
CREATE INDEX operations_claimable ON operations (lease_expires_at)
    WHERE state IN ('pending', 'running');

-- Events: what happened, for users and for audit. Also outlives clusters.
CREATE TABLE events (
    id           bigserial PRIMARY KEY,
    cluster_id   uuid,
    operation_id uuid,
    type         text NOT NULL,
    severity     text NOT NULL DEFAULT 'info' CHECK (severity IN ('info', 'warning', 'error')),
    message      text NOT NULL,
    detail       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_created ON events (created_at, id);
CREATE INDEX events_cluster ON events (cluster_id, id);

-- API tokens: only the SHA-256 of the secret part is stored.
CREATE TABLE api_tokens (
    id           text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
    name         text NOT NULL,
    scope        text NOT NULL CHECK (scope IN ('admin', 'read')),
    secret_hash  bytea NOT NULL CHECK (length(secret_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_created ON api_tokens (created_at, id);
