-- 0012_node_replication: a cluster's nodes show where they run by name and,
-- for a replica, how its replication stands, so that a topology view can
-- tell a replica that is linked and caught up from one that is not.

-- A replica's replication as its agent last reported it: link_status
-- (master_link_status: up or down), sync_in_progress, loading, and lag_bytes,
-- how far its offset is behind its shard's primary's (each as last
-- reported, so a few seconds apart; null until both are known). Null for a
-- primary or a node whose role is not known yet.
CREATE OR REPLACE FUNCTION node_replication(role text, link_status text, sync_in_progress boolean,
                                            loading boolean, offset_ bigint, shard uuid)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN role = 'replica' THEN jsonb_build_object(
        'link_status', link_status,
        'sync_in_progress', coalesce(sync_in_progress, false),
        'loading', coalesce(loading, false),
        'lag_bytes', (SELECT greatest(max(p.replication_offset) - offset_, 0)
                      FROM nodes p
                      WHERE p.shard_id = shard AND p.role = 'primary'
                        AND p.desired_state <> 'deleted'))
    END
$$;

-- The cluster resource as 0011 made it, with host_name and replication on
-- every node.
CREATE OR REPLACE VIEW cluster_documents AS
SELECT c.id, c.status, c.spec ->> 'engine' AS engine, c.spec -> 'tags' AS tags,
    c.spec || jsonb_build_object(
        'uid', c.uid,
        'status', c.status,
        'engine_version_actual', CASE WHEN c.engine_version_actual IS NULL THEN NULL
            ELSE coalesce((SELECT string_agg(DISTINCT n.running_version, ', ')
                           FROM nodes n
                           WHERE n.cluster_id = c.id AND n.desired_state <> 'deleted'),
                          c.engine_version_actual) END,
        'generation', c.generation,
        'pending_changes', c.pending_changes,
        'created_at', api_time(c.created_at),
        'updated_at', api_time(c.updated_at),
        'current_operation', (
            SELECT jsonb_build_object('id', o.id, 'kind', o.kind, 'status', o.status,
                                      'step_name', o.step_name, 'progress', o.progress)
            FROM operations o
            WHERE o.cluster_id = c.id AND o.status IN ('pending', 'running')
            ORDER BY o.created_at DESC LIMIT 1),
        'shards', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', s.name,
                'slots', coalesce((SELECT jsonb_agg(lower(r) || '-' || (upper(r) - 1))
                                   FROM unnest(s.slots) r), '[]'::jsonb),
                'nodes', coalesce((
                    SELECT jsonb_agg(jsonb_build_object(
                        'id', n.id, 'role', n.role, 'host_id', n.host_id, 'host_name', h.name,
                        'az', h.az, 'address', h.address, 'port', n.port, 'engine', n.engine,
                        'engine_version', n.running_version,
                        'status', coalesce(n.process_state, 'pending'),
                        'replication', node_replication(n.role, n.master_link_status,
                            n.sync_in_progress, n.loading, n.replication_offset, s.id))
                        ORDER BY n.ordinal)
                    FROM nodes n LEFT JOIN hosts h ON h.id = n.host_id
                    WHERE n.shard_id = s.id AND n.desired_state <> 'deleted'), '[]'::jsonb))
                ORDER BY s.index)
            FROM shards s WHERE s.cluster_id = c.id), '[]'::jsonb),
        'endpoints', CASE WHEN c.spec ->> 'cluster_mode' = 'disabled' THEN jsonb_build_object(
            'primary', (
                SELECT jsonb_build_object('address', h.address, 'port', n.port)
                FROM nodes n JOIN hosts h ON h.id = n.host_id
                WHERE n.cluster_id = c.id AND n.role = 'primary'
                  AND n.process_state = 'running'
                LIMIT 1),
            'readers', coalesce((
                SELECT jsonb_agg(jsonb_build_object('address', h.address, 'port', n.port)
                                 ORDER BY n.port)
                FROM nodes n JOIN hosts h ON h.id = n.host_id
                WHERE n.cluster_id = c.id AND n.role = 'replica'
                  AND n.process_state = 'running' AND h.status = 'healthy'
                  AND n.desired_state <> 'deleted' AND n.master_link_status = 'up'
                  AND NOT coalesce(n.loading, false)
                  AND NOT coalesce(n.sync_in_progress, false)), '[]'::jsonb))
        ELSE jsonb_build_object('configuration', coalesce((
                SELECT jsonb_agg(jsonb_build_object('address', h.address, 'port', n.port)
                                 ORDER BY h.address, n.port)
                FROM nodes n JOIN hosts h ON h.id = n.host_id
                WHERE n.cluster_id = c.id AND n.process_state = 'running'
                  AND h.status = 'healthy' AND n.desired_state <> 'deleted'), '[]'::jsonb))
        END) AS doc
FROM clusters c;
