-- 0014_calibrations: what one node of a node type answers on this fleet's
-- own hosts, measured by the calibrate operation (POST
-- /v1/sizing/calibrations) on a temporary one-node cluster with the
-- engine's own benchmark. Sizing takes the latest that succeeded for a node
-- type and engine over the published table.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale_shards', 'scale_replicas', 'change_node_type',
                    'upgrade_engine', 'failover', 'replace_node', 'apply_parameters',
                    'calibrate'));

-- Status, progress and error are the operation's. The host's name and vCPUs
-- are kept as they were: the figures stand for that host even once it is
-- gone.
CREATE TABLE calibrations (
    id             uuid PRIMARY KEY,
    operation_id   uuid NOT NULL UNIQUE REFERENCES operations (id),
    cluster_id     text NOT NULL,            -- the temporary cluster, removed when it ends
    host_id        uuid REFERENCES hosts (id) ON DELETE SET NULL,
    host_name      text NOT NULL,
    host_vcpus     integer NOT NULL CHECK (host_vcpus > 0),
    node_type      text NOT NULL REFERENCES node_types (name),
    engine         text NOT NULL,
    engine_version text NOT NULL,            -- the line, 8.0
    value_bytes    integer NOT NULL CHECK (value_bytes > 0),
    read_ratio     float8 NOT NULL CHECK (read_ratio BETWEEN 0 AND 1),
    pipeline       integer NOT NULL CHECK (pipeline > 0),
    clients        integer NOT NULL CHECK (clients > 0),
    duration_s     integer NOT NULL CHECK (duration_s > 0),
    results        jsonb,                    -- the benchmark's figures; NULL until recorded
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calibrations_newest ON calibrations (created_at DESC, id DESC);
CREATE INDEX calibrations_latest ON calibrations (engine, node_type, created_at DESC);

-- A calibration as the API shows it (json: keys in this order), with the
-- column the list pages on.
CREATE VIEW calibration_documents AS
SELECT c.id, c.created_at,
    json_build_object(
        'id', c.id, 'status', o.status, 'step_name', o.step_name, 'progress', o.progress,
        'operation_id', c.operation_id, 'cluster_id', c.cluster_id,
        'host_id', c.host_id, 'host_name', c.host_name, 'node_type', c.node_type,
        'engine', c.engine, 'engine_version', c.engine_version,
        'parameters', json_build_object('value_bytes', c.value_bytes,
            'read_ratio', c.read_ratio, 'pipeline', c.pipeline, 'clients', c.clients,
            'duration_s', c.duration_s),
        'results', c.results, 'error', o.error,
        'created_at', api_time(c.created_at), 'finished_at', api_time(o.finished_at)) AS doc
FROM calibrations c JOIN operations o ON o.id = c.operation_id;
