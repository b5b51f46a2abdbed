-- 0031_transit_encryption: a cluster created with "transit_encryption": true
-- serves TLS only: each host running its nodes holds a certificate for its
-- address, issued by the installation's certificate authority
-- (0030_certificate_authority.sql) when the host first needs one and again
-- before it expires (tls_not_after), its key sealed as the engine passwords
-- are. The desired set carries them to the host's agent.
ALTER TABLE hosts ADD COLUMN tls_cert_pem text;
ALTER TABLE hosts ADD COLUMN tls_key_sealed bytea;
ALTER TABLE hosts ADD COLUMN tls_not_after timestamptz;

-- As in 0028_cluster_users.sql, with the host's certificate for the nodes of
-- clusters with transit encryption.
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
        FROM node_tombstones x WHERE x.host_id = h.id) d), '[]'::json))
FROM hosts h WHERE h.id = host
$$;

-- Clusters made before have no transit encryption, as their specs now say.
UPDATE clusters SET spec = spec || '{"transit_encryption": false}'
WHERE NOT spec ? 'transit_encryption';
