-- 0035_snapshots: backups. A snapshot is a copy of every shard's data at
-- one moment, taken from an in-sync replica where there is one (BGSAVE:
-- the primary is not forked), carried off its host by the host's agent in
-- gzip parts into the snapshot store (controlplane/snapshot_store.h), and
-- checked against the checksum the agent sent. A snapshot outlives its
-- cluster: it names the cluster by id and uid, without a foreign key.
CREATE TABLE snapshots (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name               text NOT NULL UNIQUE,
    cluster_id         text NOT NULL,
    cluster_uid        uuid NOT NULL,
    source             text NOT NULL CHECK (source IN ('manual', 'automatic', 'final')),
    status             text NOT NULL DEFAULT 'creating'
                       CHECK (status IN ('creating', 'available', 'failed', 'deleting')),
    engine             text NOT NULL,
    engine_version     text NOT NULL,
    node_type          text NOT NULL,
    cluster_mode       text NOT NULL CHECK (cluster_mode IN ('enabled', 'disabled')),
    num_shards         integer NOT NULL CHECK (num_shards >= 1),
    replicas_per_shard integer NOT NULL CHECK (replicas_per_shard >= 0),
    operation_id       uuid,
    retention_days     integer,   -- automatic ones go this long after they were taken
    error              jsonb,
    created_at         timestamptz NOT NULL DEFAULT now(),
    completed_at       timestamptz
);
CREATE INDEX snapshots_newest ON snapshots (created_at DESC, id DESC);
CREATE INDEX snapshots_cluster ON snapshots (cluster_id, created_at DESC, id DESC);

-- One row per shard: the node it is taken from, what the engine said of
-- its data when it saved it, and the upload's progress. An upload's parts
-- arrive in order; part_tags names each for the store (S3's ETags).
CREATE TABLE snapshot_shards (
    snapshot_id  uuid NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
    shard        integer NOT NULL CHECK (shard >= 0),
    node_id      uuid NOT NULL,
    status       text NOT NULL DEFAULT 'saving'
                 CHECK (status IN ('saving', 'uploading', 'uploaded')),
    slots        jsonb,           -- [[first, last], ...] in cluster mode, else null
    keys         bigint,          -- at the save, in every database
    databases    jsonb,           -- keys per database at the save: {"0": 1200, "3": 7}
    memory_bytes bigint,          -- used_memory_dataset at the save
    size_bytes   bigint,          -- the RDB file, as the agent read it
    sha256       text,            -- of the RDB file, as the agent read it
    stored_bytes bigint NOT NULL DEFAULT 0,
    upload_id    text,
    parts        integer NOT NULL DEFAULT 0,
    part_tags    jsonb NOT NULL DEFAULT '[]',
    error        text,            -- why the agent could not upload it
    PRIMARY KEY (snapshot_id, shard)
);

ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale_shards', 'scale_replicas', 'change_node_type',
                    'upgrade_engine', 'failover', 'replace_node', 'apply_parameters',
                    'calibrate', 'rebalance', 'snapshot'));

-- The API's document of a snapshot.
CREATE VIEW snapshot_documents AS
SELECT s.id, s.name, s.cluster_id, s.created_at,
    json_build_object(
        'id', s.id, 'name', s.name, 'cluster_id', s.cluster_id, 'cluster_uid', s.cluster_uid,
        'source', s.source, 'status', s.status, 'engine', s.engine,
        'engine_version', s.engine_version, 'node_type', s.node_type,
        'cluster_mode', s.cluster_mode, 'num_shards', s.num_shards,
        'replicas_per_shard', s.replicas_per_shard,
        'memory_bytes', (SELECT sum(x.memory_bytes) FROM snapshot_shards x
                         WHERE x.snapshot_id = s.id),
        'keys', (SELECT sum(x.keys) FROM snapshot_shards x WHERE x.snapshot_id = s.id),
        'size_bytes', (SELECT sum(x.size_bytes) FROM snapshot_shards x
                       WHERE x.snapshot_id = s.id),
        'stored_bytes', (SELECT coalesce(sum(x.stored_bytes), 0) FROM snapshot_shards x
                         WHERE x.snapshot_id = s.id),
        'operation_id', s.operation_id, 'error', s.error,
        'expires_at', api_time(s.created_at + make_interval(days => s.retention_days)),
        'created_at', api_time(s.created_at), 'completed_at', api_time(s.completed_at),
        'shards', coalesce((SELECT json_agg(json_build_object(
            'index', x.shard, 'slots', x.slots, 'keys', x.keys, 'databases', x.databases,
            'memory_bytes', x.memory_bytes, 'size_bytes', x.size_bytes,
            'stored_bytes', x.stored_bytes, 'sha256', x.sha256) ORDER BY x.shard)
            FROM snapshot_shards x WHERE x.snapshot_id = s.id), '[]'::json)) AS doc
FROM snapshots s;

-- A shard's upload asked of an agent, or no longer: its host's desired set
-- changes.
CREATE FUNCTION snapshot_shards_desired_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM hosts_bump_desired(n.host_id) FROM nodes n
    WHERE n.id IN (OLD.node_id, NEW.node_id);
    RETURN NULL;
END $$;
CREATE TRIGGER snapshot_shards_desired AFTER UPDATE OF status, node_id ON snapshot_shards
    FOR EACH ROW WHEN (OLD.status = 'uploading' OR NEW.status = 'uploading')
    EXECUTE FUNCTION snapshot_shards_desired_changed();
CREATE FUNCTION snapshot_shards_desired_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM hosts_bump_desired(n.host_id) FROM nodes n WHERE n.id = OLD.node_id;
    RETURN NULL;
END $$;
CREATE TRIGGER snapshot_shards_desired_delete AFTER DELETE ON snapshot_shards
    FOR EACH ROW WHEN (OLD.status = 'uploading')
    EXECUTE FUNCTION snapshot_shards_desired_gone();

-- As in 0031_transit_encryption.sql, with the uploads the host's agent is
-- asked for: each a shard's saved RDB file of a node on the host.
CREATE OR REPLACE FUNCTION host_desired_set(host uuid, heartbeat_timeout_s integer,
                                            managed jsonb)
RETURNS SETOF json LANGUAGE sql STABLE AS $$
SELECT json_build_object(
    'generation', h.desired_generation,
    'heartbeat_timeout_s', heartbeat_timeout_s,
    'nodes', coalesce((SELECT json_agg(d.node ORDER BY d.port) FROM (
        SELECT json_build_object(
        'node_id', n.id, 'engine', n.engine, 'version', n.engine_version, 'port', n.port,
        'run', n.desired_state = 'running', 'deleted', n.desired_state = 'deleted',
        'restart_policy', n.restart_policy,
        'config', json_build_object(
            'memory_mib', round(t.memory_gib * 1024)::bigint,
            'reserved_memory_percent', (eff.settings ->> 'reserved-memory-percent')::int,
            'maxmemory_policy', eff.settings ->> 'maxmemory-policy',
            'appendonly', (eff.settings ->> 'appendonly')::boolean,
            'cluster_enabled', coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled',
            'cluster_node_timeout_ms', (eff.settings ->> 'cluster-node-timeout')::int,
            'password_box', encode(c.auth_secret, 'hex'),
            'previous_password_box', encode(c.auth_secret_previous, 'hex'), 'cluster_id', c.id,
            'tls', CASE WHEN coalesce((c.spec ->> 'transit_encryption')::boolean, false)
                        THEN json_build_object('cert', h.tls_cert_pem,
                                               'key_box', encode(h.tls_key_sealed, 'hex')) END,
            'users', coalesce((SELECT json_agg(json_build_object(
                'name', u.name, 'password_hashes', u.password_hashes,
                'access_string', u.access_string) ORDER BY u.name)
                FROM cluster_users u WHERE u.cluster_id = c.id), '[]'::json),
            'cluster_uid', c.uid,
            'replicaof', CASE WHEN c.spec ->> 'cluster_mode' = 'disabled'
                              AND n.role = 'replica' THEN (
                SELECT json_build_object('address', ph.address, 'port', p.port)
                FROM nodes p JOIN hosts ph ON ph.id = p.host_id
                WHERE p.shard_id = n.shard_id AND p.role = 'primary' AND p.port IS NOT NULL
                LIMIT 1) END,
            'hold_after_crash', coalesce(n.role = 'primary', false)
                AND coalesce((c.spec ->> 'automatic_failover')::boolean, false)
                AND EXISTS (SELECT 1 FROM nodes o
                            WHERE o.shard_id = n.shard_id AND o.id <> n.id
                              AND o.desired_state = 'running' AND o.process_state = 'running')
                AND NOT EXISTS (SELECT 1 FROM nodes o
                                WHERE o.shard_id = n.shard_id AND o.id <> n.id
                                  AND o.role = 'primary' AND o.process_state = 'running'
                                  AND o.desired_state = 'running')
                AND NOT coalesce(n.hold_released_at >= n.state_since, false),
            'parameters', (coalesce(c.spec -> 'parameters', '{}'::jsonb)
                           - ARRAY(SELECT jsonb_object_keys(managed))) || n.parameters))
            AS node, n.port
        FROM nodes n JOIN node_types t ON t.name = n.node_type
        JOIN clusters c ON c.id = n.cluster_id
        CROSS JOIN LATERAL (SELECT managed || coalesce(c.spec -> 'parameters', '{}'::jsonb)
                            AS settings) eff
        WHERE n.host_id = h.id AND n.port IS NOT NULL
        UNION ALL
        SELECT json_build_object('node_id', x.node_id, 'engine', x.engine,
            'version', x.engine_version, 'port', x.port, 'run', false, 'deleted', true),
            x.port
        FROM node_tombstones x WHERE x.host_id = h.id) d), '[]'::json),
    'uploads', coalesce((SELECT json_agg(json_build_object(
        'snapshot_id', s.snapshot_id, 'shard', s.shard, 'node_id', s.node_id)
        ORDER BY s.snapshot_id, s.shard)
        FROM snapshot_shards s JOIN nodes n ON n.id = s.node_id
        WHERE s.status = 'uploading' AND n.host_id = h.id), '[]'::json))
FROM hosts h WHERE h.id = host
$$;

-- Clusters made before take no automatic snapshots, as their specs now say.
UPDATE clusters SET spec = spec || '{"snapshot_window": "03:00-04:00", "snapshot_retention_days": 0}'
WHERE NOT spec ? 'snapshot_retention_days';
