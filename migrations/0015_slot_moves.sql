-- 0015_slot_moves: online shard scaling and rebalancing move hash slots
-- between primaries under traffic. Each move of an operation is journalled
-- here before the engines are touched, so a cairnd that dies mid-move
-- leaves the slot named for the next runner to finish (engine/slot_move.h:
-- a move is always resumed, never guessed at), and the operation's document
-- reports slots, keys and bytes moved and the time left.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale_shards', 'scale_replicas', 'change_node_type',
                    'upgrade_engine', 'failover', 'replace_node', 'apply_parameters',
                    'calibrate', 'rebalance'));

-- POST /v1/operations/{id}/cancel: the operation stops at its next safe
-- point (a slot boundary) and ends cancelled.
ALTER TABLE operations ADD COLUMN cancel_requested_at timestamptz;

CREATE TABLE slot_moves (
    operation_id  uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    slot          integer NOT NULL CHECK (slot BETWEEN 0 AND 16383),
    from_shard    integer NOT NULL CHECK (from_shard >= 0),  -- shard index
    to_shard      integer NOT NULL CHECK (to_shard >= 0 AND to_shard <> from_shard),
    keys_planned  bigint NOT NULL DEFAULT 0 CHECK (keys_planned >= 0),
    bytes_planned bigint NOT NULL DEFAULT 0 CHECK (bytes_planned >= 0),  -- an estimate
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'moving', 'moved')),
    keys_moved    bigint NOT NULL DEFAULT 0,
    started_at    timestamptz,
    finished_at   timestamptz,
    PRIMARY KEY (operation_id, slot)
);

CREATE OR REPLACE VIEW operation_documents AS
SELECT o.id, o.cluster_id, o.cluster_uid, o.kind, o.status, o.created_at,
    json_build_object(
        'id', o.id, 'cluster_id', o.cluster_id, 'cluster_uid', o.cluster_uid,
        'kind', o.kind, 'status', o.status,
        'step', o.step, 'step_name', o.step_name, 'steps', o.steps, 'progress', o.progress,
        'error', o.error,
        'created_at', api_time(o.created_at), 'started_at', api_time(o.started_at),
        'finished_at', api_time(o.finished_at), 'updated_at', api_time(o.updated_at),
        'cancel_requested_at', api_time(o.cancel_requested_at),
        'slot_migration', (
            SELECT json_build_object(
                'slots_total', count(*),
                'slots_moved', count(*) FILTER (WHERE m.status = 'moved'),
                'keys_moved', coalesce(sum(m.keys_moved), 0),
                'keys_planned', coalesce(sum(m.keys_planned), 0),
                'bytes_moved_estimate', coalesce(sum(m.bytes_planned)
                                                 FILTER (WHERE m.status = 'moved'), 0),
                'bytes_planned_estimate', coalesce(sum(m.bytes_planned), 0),
                -- the rate so far, over what is left, by slots
                'eta_s', CASE WHEN count(*) FILTER (WHERE m.status = 'moved') = 0
                                   OR count(*) FILTER (WHERE m.status <> 'moved') = 0 THEN NULL
                    ELSE round((extract(epoch FROM max(m.finished_at) - min(m.started_at))
                                / count(*) FILTER (WHERE m.status = 'moved')
                                * count(*) FILTER (WHERE m.status <> 'moved'))::numeric, 1)
                    END)
            FROM slot_moves m WHERE m.operation_id = o.id HAVING count(*) > 0)) AS doc
FROM operations o;

-- A shard that scaling in removes keeps its row while its nodes' agents
-- stop them and remove their data (a deleted node's row goes once its agent
-- no longer reports it, and the shard's with its last node); meanwhile its
-- index may be used again by a shard scaling out adds.
ALTER TABLE shards ADD COLUMN removed_at timestamptz;
ALTER TABLE shards DROP CONSTRAINT shards_cluster_id_index_key;
CREATE UNIQUE INDEX shards_cluster_index ON shards (cluster_id, index) WHERE removed_at IS NULL;
CREATE INDEX shards_removed ON shards (removed_at) WHERE removed_at IS NOT NULL;

-- The cluster resource as 0012 made it, without removed shards.
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
            FROM shards s WHERE s.cluster_id = c.id AND s.removed_at IS NULL), '[]'::jsonb),
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
