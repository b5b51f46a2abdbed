-- 0022_engine_users: each engine has users of Cairn's own besides the
-- tenant's default user -- one cairnd and the agents log in as, one
-- replicas authenticate to their primary with -- whose passwords cairnd
-- derives from its secret key and the cluster's uid (cluster_nodes.c). The
-- desired set carries the uid so that cairnd can hand them to the agents.
-- An agent puts back a change to its engines' users, and a replica that
-- follows another primary than the designated one, and counts each in its
-- reports; the counts last reported are kept to tell a new one
-- (EngineUsersRepaired, ReplicaRepointed).
ALTER TABLE nodes ADD COLUMN users_repairs integer NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN repoints integer NOT NULL DEFAULT 0;

-- As in 0021_node_tombstones.sql, with the cluster's uid.
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
            'password_box', encode(c.auth_secret, 'hex'), 'cluster_id', c.id,
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
