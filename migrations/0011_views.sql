-- 0011_views: the API's documents and the store's biggest reads, as views and
-- functions instead of statements pasted together in C. Each can be read,
-- run and explained in psql; the store's statements only filter, order and
-- page them. A later migration changes one with CREATE OR REPLACE (DROP and
-- CREATE when a view loses a column or a function's result changes).
--
-- Every function here is LANGUAGE sql, STABLE and not STRICT, and every view
-- is a plain SELECT, so that the planner inlines them into the statement that
-- uses them (EXPLAIN shows their tables, never a Function Scan): filters and
-- limits reach the tables, and only the rows returned get their documents.

-- A timestamp as the API shows it, Cairn's timestamp text: RFC 3339 in UTC
-- with microseconds (2026-11-30T08:30:19.123456Z); NULL stays NULL. The
-- pattern is TIME_SQL_FORMAT (lib/timeutil.h), which spells it for C's
-- statements (STORE_TS); tests/unit/test_timeutil.c holds the two together.
CREATE OR REPLACE FUNCTION api_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- The cluster resource (GET /v1/clusters/{id} and the list), one row per
-- cluster, with the columns the list filters on. doc is the spec exactly as
-- sent or defaulted plus what is computed: status, engine_version_actual
-- (what its nodes run), generation, pending_changes, timestamps, the
-- operation under way, shards with their nodes, endpoints.
--
-- Roles come from the engines' reports, never from placement. A reader is a
-- replica that is linked and neither loading nor in a full sync; cluster
-- mode's configuration endpoint lists every running node on a healthy host.
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
                        'id', n.id, 'role', n.role, 'host_id', n.host_id, 'az', h.az,
                        'address', h.address, 'port', n.port, 'engine', n.engine,
                        'engine_version', n.running_version,
                        'status', coalesce(n.process_state, 'pending')) ORDER BY n.ordinal)
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

-- An operation as the API shows it, with the columns the list filters and
-- pages on. doc is json, not jsonb, so its keys keep this order.
CREATE OR REPLACE VIEW operation_documents AS
SELECT o.id, o.cluster_id, o.cluster_uid, o.kind, o.status, o.created_at,
    json_build_object(
        'id', o.id, 'cluster_id', o.cluster_id, 'cluster_uid', o.cluster_uid,
        'kind', o.kind, 'status', o.status,
        'step', o.step, 'step_name', o.step_name, 'steps', o.steps, 'progress', o.progress,
        'error', o.error,
        'created_at', api_time(o.created_at), 'started_at', api_time(o.started_at),
        'finished_at', api_time(o.finished_at), 'updated_at', api_time(o.updated_at)) AS doc
FROM operations o;

-- An event as the API shows it (json: keys in this order), with the columns
-- the list filters on; id is a bigint here and text in doc.
CREATE OR REPLACE VIEW event_documents AS
SELECT e.id, e.cluster_id, e.cluster_uid, e.host_id, e.created_at,
    json_build_object(
        'id', e.id::text, 'cluster_id', e.cluster_id, 'cluster_uid', e.cluster_uid,
        'host_id', e.host_id, 'operation_id', e.operation_id, 'type', e.type,
        'severity', e.severity, 'message', e.message, 'detail', e.detail,
        'created_at', api_time(e.created_at)) AS doc
FROM events e;

-- The uid of the latest cluster named id (0009: a name can be used again):
-- the one that exists, or else the newest one that history, 'operations' or
-- 'events', records (by creation or by id). A filter by cluster id shows the
-- history of one cluster, never that of an earlier one of the same name.
-- One row; a set-returning function so that the planner inlines it: call
-- it as (SELECT uid FROM cluster_latest_uid($1, 'events')), which runs once.
CREATE OR REPLACE FUNCTION cluster_latest_uid(id text, history text) RETURNS TABLE (uid uuid)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT c.uid FROM clusters c WHERE c.id = cluster_latest_uid.id),
        CASE history
        WHEN 'operations' THEN (SELECT o.cluster_uid FROM operations o
                               WHERE o.cluster_id = cluster_latest_uid.id
                               ORDER BY o.created_at DESC LIMIT 1)
        WHEN 'events' THEN (SELECT e.cluster_uid FROM events e
                           WHERE e.cluster_id = cluster_latest_uid.id
                           ORDER BY e.id DESC LIMIT 1)
        END)
$$;

-- A host as the API shows it: doc (json, keys in this order) for the list,
-- and nodes, the nodes placed on it as the agent reports them (by port), which
-- GET /v1/hosts/{id} adds. allocated counts what its live nodes' node types
-- take.
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
        'updated_at', api_time(h.updated_at)) AS doc,
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

-- The desired set of the host, as the agent protocol's sync reply carries it
-- (json, keys in this order); no row when there is no such host. Nodes wait
-- without a port until the range has one free, and are left out until then.
-- A node's engine settings are its cluster's parameters over managed, the
-- managed settings' defaults by parameter name (cairnd passes them from
-- engine/engine_config.c): the managed ones go to their own config fields,
-- the rest to "parameters". Cluster mode unless disabled. In cluster mode
-- disabled a replica follows its shard's primary (replicaof); a primary of
-- an automatic-failover cluster holds after a crash while a running replica
-- may take over.
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
                                  AND o.desired_state = 'running'),
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

-- Every host as placement sees it: what it has left (its capacity less its
-- live nodes' node types) and whether it can take a node of engine at line
-- (the catalog's major.minor): healthy, with that engine installed. Callers
-- order by name: the scheduler breaks ties between hosts by their order.
CREATE OR REPLACE FUNCTION placement_hosts(engine text, line text)
RETURNS TABLE (id uuid, name text, az text, free_vcpus bigint, free_memory_mib bigint,
               eligible boolean)
LANGUAGE sql STABLE AS $$
SELECT h.id, h.name, h.az, h.vcpus - coalesce(a.vcpus, 0),
    h.memory_mib - coalesce(a.memory_mib, 0),
    h.status = 'healthy' AND EXISTS (
        SELECT 1 FROM host_engines e
        WHERE e.host_id = h.id AND e.engine = placement_hosts.engine
          AND e.version = placement_hosts.line)
FROM hosts h LEFT JOIN (
    SELECT n.host_id, sum(t.vcpus) AS vcpus,
        round(sum(t.memory_gib) * 1024)::bigint AS memory_mib
    FROM nodes n JOIN node_types t ON t.name = n.node_type
    WHERE n.desired_state <> 'deleted' GROUP BY n.host_id) a ON a.host_id = h.id
$$;

-- Every value of one metric (its catalog position from 1) of a cluster in
-- [from_s, to_s) (epoch seconds), of one node or (for_node NULL) all, as
-- partial sums, minimums, maximums and counts (at, epoch seconds; node_id;
-- s, mn, mx, c), from three places, each where it is complete: the rollups
-- of rollup_s seconds (0: none) up to where they are done; then the
-- compacted days, which cairnd decodes (store_metric_series_points) and
-- passes in: per series a node and day (epoch seconds), and their 1,440
-- minutes' values one after another; then the samples. A sample or a
-- compacted minute is its own part (c = 1), a rollup holds its period's.
CREATE OR REPLACE FUNCTION metric_parts(
    for_cluster text, from_s bigint, to_s bigint, for_node uuid, metric integer,
    rollup_s integer, series_nodes uuid[], series_days bigint[], series_values real[])
RETURNS TABLE (at bigint, node_id uuid, s real, mn real, mx real, c integer)
LANGUAGE sql STABLE AS $$
WITH mark AS (
    SELECT coalesce((SELECT done_until FROM metric_rollup_marks WHERE period_s = rollup_s),
                    '-infinity') AS t),
after AS (
    SELECT CASE WHEN rollup_s > 0 THEN greatest(to_timestamp(from_s), mark.t)
                ELSE to_timestamp(from_s) END AS t
    FROM mark)
SELECT date_part('epoch', r.at)::bigint, r.node_id, r.sums[metric], r.mins[metric],
    r.maxs[metric], r.counts[metric]
FROM metric_rollups r, mark
WHERE rollup_s > 0 AND r.cluster_id = for_cluster AND r.period_s = rollup_s
  AND r.at >= to_timestamp(from_s) AND r.at < least(to_timestamp(to_s), mark.t)
  AND (for_node IS NULL OR r.node_id = for_node) AND r.counts[metric] > 0
UNION ALL
SELECT x.at, series_nodes[(u.i - 1) / 1440 + 1], u.v, u.v, u.v, 1
FROM unnest(series_values) WITH ORDINALITY AS u(v, i), after,
    LATERAL (SELECT series_days[(u.i - 1) / 1440 + 1] + (u.i - 1) % 1440 * 60 AS at) x
WHERE u.v IS NOT NULL AND x.at >= date_part('epoch', after.t)
UNION ALL
SELECT date_part('epoch', m.at)::bigint, m.node_id, v, v, v, 1
FROM metric_samples m, after, LATERAL (SELECT m.vals[metric] AS v) x
WHERE m.cluster_id = for_cluster AND m.at >= after.t AND m.at < to_timestamp(to_s)
  AND (for_node IS NULL OR m.node_id = for_node) AND v IS NOT NULL
$$;

-- The statistics of one period bucket of one metric (and one node, or ''
-- for all), as metric_aggregate and metric_aggregate_percentiles give
-- them: Average, Minimum, Maximum, Sum and SampleCount over all the values
-- in the bucket, whichever source each came from, and p50, p90 and p99
-- across the nodes' averages in it (pct; NULL when not asked for).
CREATE TYPE metric_stats AS (bucket bigint, node_key text, average float8, minimum real,
                             maximum real, total real, sample_count numeric, pct float8[]);

-- metric_stats of metric_parts per period bucket (and per node with
-- by_node), ordered by node_key, then bucket; pct is NULL.
CREATE OR REPLACE FUNCTION metric_aggregate(
    for_cluster text, from_s bigint, to_s bigint, period integer, for_node uuid,
    metric integer, by_node boolean, rollup_s integer,
    series_nodes uuid[], series_days bigint[], series_values real[])
RETURNS SETOF metric_stats LANGUAGE sql STABLE AS $$
SELECT at / period * period, CASE WHEN by_node THEN node_id::text ELSE '' END,
    sum(s) / sum(c), min(mn), max(mx), sum(s), sum(c)::numeric, NULL::float8[]
FROM metric_parts(for_cluster, from_s, to_s, for_node, metric, rollup_s,
                  series_nodes, series_days, series_values)
GROUP BY 1, 2 ORDER BY 2, 1
$$;

-- metric_aggregate with pct, for which the parts are summed per node first:
-- a pass that metric_aggregate saves.
CREATE OR REPLACE FUNCTION metric_aggregate_percentiles(
    for_cluster text, from_s bigint, to_s bigint, period integer, for_node uuid,
    metric integer, by_node boolean, rollup_s integer,
    series_nodes uuid[], series_days bigint[], series_values real[])
RETURNS SETOF metric_stats LANGUAGE sql STABLE AS $$
SELECT at, CASE WHEN by_node THEN node_id::text ELSE '' END,
    sum(s) / sum(c), min(mn), max(mx), sum(s), sum(c),
    percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY s / c)
FROM (SELECT at / period * period AS at, node_id, sum(s) AS s, min(mn) AS mn, max(mx) AS mx,
             sum(c) AS c
      FROM metric_parts(for_cluster, from_s, to_s, for_node, metric, rollup_s,
                        series_nodes, series_days, series_values)
      GROUP BY 1, 2) per_node
GROUP BY 1, 2 ORDER BY 2, 1
$$;
