-- 0028_cluster_users: a cluster's tenant users beside the default one (the
-- AUTH token), as ElastiCache's RBAC users are: a name, an access string and
-- one or two passwords (two while one is replaced), of which only SHA-256 is
-- kept -- the form the engines take them in ("#<hex>"), so that no password
-- is ever stored. The desired set carries them to the agents, which give
-- them to the running engines capped (engine/access.h).
CREATE TABLE cluster_users (
    cluster_id      text NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    name            text NOT NULL,
    access_string   text NOT NULL,
    password_hashes text[] NOT NULL
        CHECK (cardinality(password_hashes) BETWEEN 1 AND 2
               AND array_to_string(password_hashes, ',') ~ '^[0-9a-f]{64}(,[0-9a-f]{64})?$'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, name)
);

-- A change of a cluster's users reaches the agents of its nodes at once.
CREATE FUNCTION cluster_users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM hosts_bump_desired(h.host_id)
    FROM (SELECT DISTINCT host_id FROM nodes
          WHERE cluster_id = coalesce(NEW.cluster_id, OLD.cluster_id)
            AND host_id IS NOT NULL) h;
    RETURN NULL;
END $$;

CREATE TRIGGER cluster_users_change AFTER INSERT OR UPDATE OR DELETE ON cluster_users
    FOR EACH ROW EXECUTE FUNCTION cluster_users_changed();

-- As in 0027_auth_rotation.sql, with the cluster's tenant users.
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
        FROM node_tombstones x WHERE x.host_id = h.id) d), '[]'::json))
FROM hosts h WHERE h.id = host
$$;
