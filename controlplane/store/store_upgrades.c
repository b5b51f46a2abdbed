/* store_upgrades.c -- engine upgrades as the store keeps them: the checks
 * before one, the upgrade_engine operation queued or scheduled with
 * pending_changes.engine_upgrade announcing it, the scheduler's reads, the
 * end of one, and the span its report compares (see upgrades.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_spec.h"
#include "store.h"
#include "xalloc.h"

/* ---- the checks ------------------------------------------------------------------ */

static const struct db_stmt hosts_without = {
    "SELECT string_agg(DISTINCT h.name, ', ') FROM nodes n JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted'"
    "   AND NOT EXISTS (SELECT 1 FROM host_engines e WHERE e.host_id = h.id"
    "     AND e.engine = $2 AND e.version = $3)"};

enum db_status store_upgrade_hosts_without(struct db_conn *conn, const char *cluster_id,
                                           const char *engine, const char *version, char **hosts)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, cluster_id);
    db_param_text(&p, engine);
    db_param_text(&p, version);
    enum db_status st = store_query_row(conn, &hosts_without, &p, &res);
    if (st != DB_OK)
        return st;
    *hosts = store_dup_text(res, 0, 0);
    PQclear(res);
    return DB_OK;
}

/* The first node that is not healthy enough, and why. */
static const struct db_stmt unhealthy = {
    "SELECT n.id, s.name, CASE"
    "   WHEN h.status IS DISTINCT FROM 'healthy' THEN 'its host is ' || coalesce(h.status, "
    "'unknown')"
    "   WHEN n.process_state IS DISTINCT FROM 'running' THEN"
    "     'it is ' || coalesce(n.process_state, 'not reported yet')"
    "   WHEN n.role = 'replica' AND n.master_link_status IS DISTINCT FROM 'up' THEN"
    "     'it is not linked to its primary'"
    "   WHEN coalesce(n.loading, false) THEN 'it is loading its data'"
    "   WHEN coalesce(n.sync_in_progress, false) THEN 'it is in a full sync'"
    "   ELSE 'it is ' || (p.replication_offset - n.replication_offset) || ' bytes behind its'"
    "     || ' primary' END"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id LEFT JOIN hosts h ON h.id = n.host_id"
    " LEFT JOIN nodes p ON p.shard_id = n.shard_id AND p.role = 'primary'"
    "   AND p.desired_state <> 'deleted' AND n.role = 'replica'"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted' AND ("
    "   h.status IS DISTINCT FROM 'healthy' OR n.process_state IS DISTINCT FROM 'running'"
    "   OR (n.role = 'replica' AND n.master_link_status IS DISTINCT FROM 'up')"
    "   OR coalesce(n.loading, false) OR coalesce(n.sync_in_progress, false)"
    "   OR p.replication_offset - n.replication_offset > $2::bigint)"
    " ORDER BY s.index, n.ordinal LIMIT 1"};

/* The check's node: its id, shard, then the facts. */
static void read_blocker(const PGresult *res, int row, void *item)
{
    struct store_upgrade_blocker *out = item;
    out->found = true;
    store_copy_text(out->node_id, sizeof(out->node_id), res, row, 0);
    store_copy_text(out->shard, sizeof(out->shard), res, row, 1);
    for (int k = 0; k < 2 && k + 2 < PQnfields(res); k++)
        store_copy_text(out->facts[k], sizeof(out->facts[k]), res, row, k + 2);
}

/* The check's node, if it found one. */
static enum db_status blocker(struct db_conn *conn, const struct db_stmt *stmt,
                              const struct db_params *p, struct store_upgrade_blocker *out)
{
    memset(out, 0, sizeof(*out));
    enum db_status st = store_read_row(conn, stmt, p, read_blocker, out);
    return st == DB_NOT_FOUND ? DB_OK : st;
}

enum db_status store_upgrade_unhealthy(struct db_conn *conn, const char *cluster_id,
                                       long long max_lag, struct store_upgrade_blocker *out)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, max_lag);
    return blocker(conn, &unhealthy, &p, out);
}

/* Primaries whose host had less memory free than their data in their
 * newest sample of the last quarter hour. */
static const struct db_stmt short_of_memory = {
    "SELECT x.id, x.name, x.free, x.used FROM ("
    "   SELECT DISTINCT ON (n.id) n.id, s.name, m.vals[$2::int] AS free, m.vals[$3::int] AS used"
    "   FROM nodes n JOIN shards s ON s.id = n.shard_id"
    "   JOIN metric_samples m ON m.cluster_id = n.cluster_id AND m.node_id = n.id"
    "   WHERE n.cluster_id = $1 AND n.role = 'primary' AND n.desired_state <> 'deleted'"
    "     AND m.at > now() - interval '15 minutes'"
    "   ORDER BY n.id, m.at DESC) x"
    " WHERE x.free < x.used LIMIT 1"};

enum db_status store_upgrade_short_of_memory(struct db_conn *conn, const char *cluster_id,
                                             int free_at, int used_at,
                                             struct store_upgrade_blocker *out)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, free_at);
    db_param_int(&p, used_at);
    return blocker(conn, &short_of_memory, &p, out);
}

static const struct db_stmt lone_nodes = {
    "SELECT coalesce(jsonb_agg(jsonb_build_object('shard_id', s.name, 'node_id', n.id,"
    "   'reason', 'no replica: the node restarts on the new engine from its persistence and the"
    " shard is down until it has loaded') ORDER BY s.index), '[]')"
    " FROM shards s JOIN nodes n ON n.shard_id = s.id AND n.desired_state <> 'deleted'"
    " WHERE s.cluster_id = $1 AND (SELECT count(*) FROM nodes o WHERE o.shard_id = s.id"
    "   AND o.desired_state <> 'deleted') = 1"};

enum db_status store_upgrade_downtime(struct db_conn *conn, const char *cluster_id, json_t **out)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    return store_get_json(conn, &lone_nodes, p.n, p.values, out);
}

/* ---- queueing and scheduling -------------------------------------------------- */

static const struct db_stmt cancel_scheduled = {
    "UPDATE operations SET status = 'cancelled', finished_at = now(), updated_at = now()"
    " WHERE cluster_id = $1 AND kind = 'upgrade_engine' AND status = 'scheduled'"};

static const struct db_stmt insert_upgrade = {
    "INSERT INTO operations (cluster_id, kind, status, context)"
    " VALUES ($1, 'upgrade_engine', CASE WHEN $2::boolean THEN 'pending' ELSE 'scheduled' END,"
    "   jsonb_build_object('from', $3::jsonb, 'to', $4::jsonb, 'downtime', $5::jsonb,"
    "     'apply', CASE WHEN $2::boolean THEN 'immediately' ELSE 'maintenance_window' END))"
    " RETURNING id"};

static const struct db_stmt set_pending = {
    "UPDATE clusters SET pending_changes = pending_changes || jsonb_build_object('engine_upgrade',"
    "   $2::jsonb || jsonb_build_object('operation_id', $3::text,"
    "     'apply', CASE WHEN $4::boolean THEN 'immediately' ELSE 'maintenance_window' END,"
    "     'starts_at', CASE WHEN $4::boolean THEN NULL ELSE " STORE_TS(
        "to_timestamp($5::bigint)") " END,"
                                    "     'downtime', $6::jsonb)),"
                                    "   updated_at = now() WHERE id = $1"};

static enum db_status insert_operation(struct db_conn *conn, const char *cluster_id, bool apply_now,
                                       const char *from, const char *to, const char *downtime,
                                       char *op_id)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    enum db_status st = db_exec_params(conn, &cancel_scheduled, &p);
    if (st != DB_OK)
        return st;
    db_param_bool(&p, apply_now);
    db_param_text(&p, from);
    db_param_text(&p, to);
    db_param_text(&p, downtime);
    return store_insert_id(conn, &insert_upgrade, &p, op_id);
}

enum db_status store_upgrade_queue(struct db_conn *conn, const char *cluster_id, const json_t *from,
                                   const json_t *to, bool apply_now, long long starts_at,
                                   const json_t *downtime, char *op_id)
{
    char *from_text = json_dumps(from, JSON_COMPACT), *to_text = json_dumps(to, JSON_COMPACT);
    char *down_text = json_dumps(downtime, JSON_COMPACT);
    enum db_status st =
        insert_operation(conn, cluster_id, apply_now, from_text, to_text, down_text, op_id);
    if (st == DB_OK) {
        struct db_params p = {0};
        db_param_text(&p, cluster_id);
        db_param_text(&p, to_text);
        db_param_text(&p, op_id);
        db_param_bool(&p, apply_now);
        db_param_int(&p, starts_at);
        db_param_text(&p, down_text);
        st = db_exec_params(conn, &set_pending, &p);
    }
    free(from_text);
    free(to_text);
    free(down_text);
    return st;
}

static const struct db_stmt active_upgrade = {
    "SELECT id, status, context::text FROM operations WHERE cluster_id = $1"
    "   AND kind = 'upgrade_engine' AND status IN ('scheduled', 'pending', 'running')"
    " ORDER BY created_at DESC LIMIT 1 FOR UPDATE"};

static void read_active(const PGresult *res, int row, void *item)
{
    struct store_upgrade_active *out = item;
    store_copy_text(out->id, sizeof(out->id), res, row, 0);
    out->scheduled = strcmp(db_text(res, row, 1), "scheduled") == 0;
    out->context = json_loads(db_text(res, row, 2), 0, NULL);
}

enum db_status store_upgrade_active(struct db_conn *conn, const char *cluster_id,
                                    struct store_upgrade_active *out)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    return store_read_row(conn, &active_upgrade, &p, read_active, out);
}

/* The spec back to what runs, and nothing pending. */
static const struct db_stmt revert_spec = {
    "UPDATE clusters SET spec = spec || jsonb_build_object('engine', $2::text,"
    "   'engine_version', $3::text), generation = generation + 1,"
    "   pending_changes = pending_changes - 'engine_upgrade', updated_at = now() WHERE id = $1"};

enum db_status store_upgrade_revert_spec(struct db_conn *conn, const char *cluster_id,
                                         const char *engine, const char *version)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_text(&p, engine);
    db_param_text(&p, version);
    return db_exec_params(conn, &revert_spec, &p);
}

static const struct db_stmt scheduled = {
    "SELECT o.id, o.cluster_id, coalesce(c.spec ->> 'maintenance_window', '" CSPEC_WINDOW_DEFAULT
    "'),"
    "   EXISTS (SELECT 1 FROM operations a WHERE a.cluster_id = o.cluster_id"
    "     AND a.status IN ('pending', 'running'))"
    " FROM operations o JOIN clusters c ON c.id = o.cluster_id"
    " WHERE o.kind = 'upgrade_engine' AND o.status = 'scheduled' ORDER BY o.created_at"};

static void read_scheduled(const PGresult *res, int row, void *item)
{
    struct store_scheduled_upgrade *u = item;
    store_copy_text(u->op_id, sizeof(u->op_id), res, row, 0);
    store_copy_text(u->cluster_id, sizeof(u->cluster_id), res, row, 1);
    store_copy_text(u->window, sizeof(u->window), res, row, 2);
    u->busy = db_bool(res, row, 3);
}

enum db_status store_upgrades_scheduled(struct db_conn *conn, struct store_scheduled_upgrades *out)
{
    enum db_status st;
    out->items =
        store_read_rows(conn, &scheduled, NULL, sizeof(*out->items), read_scheduled, &out->n, &st);
    return st;
}

static const struct db_stmt start_scheduled = {
    "UPDATE operations SET status = 'pending', updated_at = now(),"
    "   context = context || jsonb_build_object('window_opened_at',"
    "     " STORE_TS("now()") ", 'window', $2::text)"
                              " WHERE id = $1::uuid AND status = 'scheduled'"};

enum db_status store_upgrade_start(struct db_conn *conn, const char *op_id, const char *window,
                                   bool *started)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, op_id);
    db_param_text(&p, window);
    PGresult *res = db_query_params(conn, &start_scheduled, &p, &st);
    *started = res != NULL && strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return st;
}

static const struct db_stmt starts_at = {
    "UPDATE clusters SET pending_changes = jsonb_set(pending_changes,"
    "   '{engine_upgrade,starts_at}', to_jsonb(" STORE_TS(
        "to_timestamp($2::bigint)") "))"
                                    " WHERE id = $1 AND pending_changes #>> "
                                    "'{engine_upgrade,operation_id}' = $3"
                                    "   AND pending_changes #>> '{engine_upgrade,starts_at}' IS "
                                    "DISTINCT FROM"
                                    "     " STORE_TS("to_timestamp($2::bigint)") ""};

enum db_status store_upgrade_set_starts_at(struct db_conn *conn, const char *cluster_id,
                                           const char *op_id, long long when)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, when);
    db_param_text(&p, op_id);
    return db_exec_params(conn, &starts_at, &p);
}

/* ---- the end, and the report ------------------------------------------------------ */

static const struct db_stmt ended = {
    "UPDATE clusters SET status = 'available', updated_at = now(),"
    "  observed_generation = CASE WHEN $2::boolean THEN generation ELSE observed_generation END,"
    "  pending_changes = pending_changes - 'engine_upgrade' WHERE id = $1"};

enum db_status store_upgrade_ended(struct db_conn *conn, const char *cluster_id, bool succeeded)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_bool(&p, succeeded);
    return db_exec_params(conn, &ended, &p);
}

static const struct db_stmt span = {
    "SELECT o.cluster_id, o.context::text, extract(epoch FROM o.started_at)::bigint,"
    "  extract(epoch FROM o.finished_at)::bigint, extract(epoch FROM now())::bigint,"
    "  coalesce((SELECT period_s FROM metric_samples m WHERE m.cluster_id = o.cluster_id"
    "    ORDER BY m.at DESC LIMIT 1), 60)"
    " FROM operations o WHERE o.id = $1::uuid AND o.kind = 'upgrade_engine'"
    "   AND o.status IN ('succeeded', 'failed') AND o.started_at IS NOT NULL"};

static void read_span(const PGresult *res, int row, void *item)
{
    struct store_upgrade_span *out = item;
    store_copy_text(out->cluster_id, sizeof(out->cluster_id), res, row, 0);
    out->context = json_loads(db_text(res, row, 1), 0, NULL);
    out->started = db_int(res, row, 2);
    out->finished = db_int(res, row, 3);
    out->now = db_int(res, row, 4);
    out->period_s = (int)db_int(res, row, 5);
}

enum db_status store_upgrade_span(struct db_conn *conn, const char *op_id,
                                  struct store_upgrade_span *out)
{
    struct db_params p = {0};
    db_param_text(&p, op_id);
    return store_read_row(conn, &span, &p, read_span, out);
}
