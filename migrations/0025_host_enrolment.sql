-- 0025_host_enrolment: agents are enrolled, not trusted. A host registered
-- with the shared bootstrap token waits, 'pending', for an admin to approve
-- it (POST /v1/hosts/{id}/approve) -- nothing is placed on it and it is
-- handed no password meanwhile -- unless cairnd runs with
-- --approve-bootstrap-hosts. An operator may instead pre-authorise one host
-- by name with a join token: one use, expiring, only SHA-256 of its secret
-- kept. A name already registered is given to a new agent only with a join
-- token for that name.
ALTER TABLE hosts DROP CONSTRAINT hosts_status_check;
ALTER TABLE hosts ADD CONSTRAINT hosts_status_check
    CHECK (status IN ('pending', 'healthy', 'lost', 'draining'));
ALTER TABLE hosts ADD COLUMN approved_at timestamptz;
UPDATE hosts SET approved_at = created_at;

CREATE TABLE host_join_tokens (
    id           text PRIMARY KEY,
    secret_hash  bytea NOT NULL,
    host_name    text NOT NULL,
    created_by   text,               -- the API token that made it
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    host_id      uuid REFERENCES hosts (id) ON DELETE SET NULL
);
CREATE INDEX host_join_tokens_name ON host_join_tokens (host_name);

ALTER TABLE audit_log DROP CONSTRAINT audit_log_caller_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_caller_kind_check
    CHECK (caller_kind IN ('token', 'agent_bootstrap', 'host_join_token'));

-- A host's document says when it was approved (null while pending).
CREATE OR REPLACE VIEW host_documents AS
SELECT h.id, h.name, h.az, h.status,
    json_build_object(
        'id', h.id, 'name', h.name, 'az', h.az, 'address', h.address, 'status', h.status,
        'capacity', json_build_object('vcpus', h.vcpus, 'memory_mib', h.memory_mib),
        'allocated', (
            SELECT json_build_object(
                'vcpus', coalesce(sum(t.vcpus), 0),
                'memory_mib', coalesce(round(sum(t.memory_gib) * 1024), 0)::bigint,
                'nodes', count(n.id))
            FROM nodes n JOIN node_types t ON t.name = n.node_type
            WHERE n.host_id = h.id AND n.desired_state <> 'deleted'),
        'ports', json_build_object('min', h.port_min, 'max', h.port_max),
        'engines', coalesce((
            SELECT json_agg(json_build_object('engine', e.engine, 'version', e.version,
                                              'full_version', e.full_version, 'path', e.path)
                            ORDER BY e.engine, e.version)
            FROM host_engines e WHERE e.host_id = h.id), '[]'::json),
        'agent_version', h.agent_version, 'desired_generation', h.desired_generation,
        'last_seen_at', api_time(h.last_seen_at), 'created_at', api_time(h.created_at),
        'updated_at', api_time(h.updated_at), 'approved_at', api_time(h.approved_at)) AS doc,
    coalesce((
        SELECT jsonb_agg(jsonb_build_object(
            'id', n.id, 'cluster_id', n.cluster_id, 'port', n.port, 'engine', n.engine,
            'engine_version', n.engine_version, 'node_type', n.node_type,
            'desired_status', n.desired_state, 'status', n.process_state,
            'role', n.observed_role, 'pid', n.pid, 'running_version', n.running_version,
            'replication_offset', n.replication_offset,
            'master_link_status', n.master_link_status,
            'sync_in_progress', n.sync_in_progress, 'loading', n.loading,
            'restarts', n.restarts, 'reported_at', api_time(n.reported_at)) ORDER BY n.port)
        FROM nodes n WHERE n.host_id = h.id), '[]'::jsonb) AS nodes
FROM hosts h;
