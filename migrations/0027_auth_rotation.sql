-- 0027_auth_rotation: a cluster's AUTH token is changed without a moment
-- in which clients are refused. PATCH auth_token with the strategy
-- "rotate" keeps the token in use valid beside the new one
-- (auth_secret_previous, sealed as auth_secret is) until a "set" ends the
-- rotation; "set" alone replaces it at once. The desired set carries both
-- so that the agents give the engines' default user both passwords.
ALTER TABLE clusters ADD COLUMN auth_secret_previous bytea;
ALTER TABLE clusters ADD COLUMN auth_token_updated_at timestamptz;

-- As in 0022_engine_users.sql, with the previous AUTH token.
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
        FROM node_tombstones x WHERE x.host_id = h.id) d), '[]'::json))
FROM hosts h WHERE h.id = host
$$;

-- A changed AUTH token reaches every agent of the cluster's nodes at once.
CREATE TRIGGER clusters_auth_update AFTER UPDATE OF auth_secret, auth_secret_previous ON clusters
    FOR EACH ROW WHEN (OLD.auth_secret IS DISTINCT FROM NEW.auth_secret
                       OR OLD.auth_secret_previous IS DISTINCT FROM NEW.auth_secret_previous)
    EXECUTE FUNCTION clusters_spec_changed();
