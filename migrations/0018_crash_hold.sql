-- 0018_crash_hold: a crashed primary that no replica can replace is let
-- go. Its agent holds a crashed primary of an automatic-failover cluster
-- down while a replica may take its place, so that it comes back only as a
-- replica of the new primary. But replicas that restarted while it was
-- down (every engine of a shard killed at once) never completed a sync
-- since, and cairnd promotes none that may hold less than the primary's
-- disk: the primary's own disk is then the only full copy. cairnd releases
-- the hold (hold_released_at, from the moment its engine went down on: a
-- later crash holds again) and it restarts as the primary it still is.
ALTER TABLE nodes ADD COLUMN hold_released_at timestamptz;

-- As in 0011_views.sql, with the release.
CREATE OR REPLACE FUNCTION host_desired_set(host uuid, heartbeat_timeout_s integer,
                                            managed jsonb)
RETURNS SETOF json LANGUAGE sql STABLE AS $$
SELECT json_build_object(
    'generation', h.desired_generation,
    'heartbeat_timeout_s', heartbeat_timeout_s,
    'nodes', coalesce((SELECT json_agg(json_build_object(
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
            'password_box', encode(c.auth_secret, 'hex'), 'cluster_id', c.id,
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
        ORDER BY n.port)
        FROM nodes n JOIN node_types t ON t.name = n.node_type
        JOIN clusters c ON c.id = n.cluster_id
        CROSS JOIN LATERAL (SELECT managed || coalesce(c.spec -> 'parameters', '{}'::jsonb)
                            AS settings) eff
        WHERE n.host_id = h.id AND n.port IS NOT NULL), '[]'::json))
FROM hosts h WHERE h.id = host
$$;
