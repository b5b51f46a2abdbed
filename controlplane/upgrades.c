/* upgrades.c -- see upgrades.h. */
#define _GNU_SOURCE
#include "upgrades.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_spec.h"
#include "cluster_nodes.h"
#include "log.h"
#include "metrics.h"
#include "ops.h"
#include "runner.h"
#include "changes.h"
#include "store.h"
#include "xalloc.h"

/* ---- checks ------------------------------------------------------------------ */

static const struct db_stmt path_allowed = {
    "SELECT EXISTS (SELECT 1 FROM engine_upgrade_paths WHERE from_engine = $1"
    "   AND from_version = $2 AND to_engine = $3 AND to_version = $4),"
    " coalesce((SELECT string_agg(to_engine || ' ' || to_version, ', '"
    "   ORDER BY to_engine, to_version) FROM engine_upgrade_paths"
    "   WHERE from_engine = $1 AND from_version = $2), '')"};

enum db_status upgrade_path_allowed(struct db_conn *conn, const char *from_engine,
                                    const char *from_version, const char *to_engine,
                                    const char *to_version, bool *ok, char *allowed,
                                    size_t allowed_size)
{
    const char *params[4] = {from_engine, from_version, to_engine, to_version};
    enum db_status st;
    PGresult *res = db_query(conn, &path_allowed, 4, params, &st);
    if (res == NULL)
        return st;
    *ok = PQgetvalue(res, 0, 0)[0] == 't';
    snprintf(allowed, allowed_size, "%s", PQgetvalue(res, 0, 1));
    PQclear(res);
    return DB_OK;
}

static const struct db_stmt cluster_live = {
    "SELECT count(*) FROM clusters WHERE id = $1 AND status <> 'deleting'"};

static const struct db_stmt hosts_without = {
    "SELECT string_agg(DISTINCT h.name, ', ') FROM nodes n JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted'"
    "   AND NOT EXISTS (SELECT 1 FROM host_engines e WHERE e.host_id = h.id"
    "     AND e.engine = $2 AND e.version = $3)"};

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

static const struct db_stmt lone_nodes = {
    "SELECT coalesce(jsonb_agg(jsonb_build_object('shard_id', s.name, 'node_id', n.id,"
    "   'reason', 'no replica: the node restarts on the new engine from its persistence and the"
    " shard is down until it has loaded') ORDER BY s.index), '[]')"
    " FROM shards s JOIN nodes n ON n.shard_id = s.id AND n.desired_state <> 'deleted'"
    " WHERE s.cluster_id = $1 AND (SELECT count(*) FROM nodes o WHERE o.shard_id = s.id"
    "   AND o.desired_state <> 'deleted') = 1"};

enum db_status upgrade_check(struct db_conn *conn, const char *cluster_id, const char *engine,
                             const char *version, struct problem *p, json_t **downtime)
{
    const char *params[3] = {cluster_id, engine, version};
    char lag[24], free_at[16], used_at[16];
    enum db_status st;
    PGresult *res;

    long long live = 0;
    if ((st = store_get_int64(conn, &cluster_live, 1, params, &live)) != DB_OK)
        return st;
    if (live == 0) {
        problem_set(p, PROBLEM_CLUSTER_NOT_FOUND, "cluster %s does not exist or is being deleted",
                    cluster_id != NULL ? cluster_id : "(none)");
        return DB_REFUSED;
    }
    if ((res = db_query(conn, &hosts_without, 3, params, &st)) == NULL)
        return st;
    if (!PQgetisnull(res, 0, 0))
        problem_set(
            p, PROBLEM_ENGINE_NOT_INSTALLED,
            "%s %s is not installed on host(s) %s; install it there (the agent reports it on "
            "its next sync) and ask again",
            engine, version, PQgetvalue(res, 0, 0));
    PQclear(res);
    if (p->set)
        return DB_REFUSED;

    snprintf(lag, sizeof(lag), "%lld", UPGRADE_MAX_LAG_BYTES);
    const char *hp[2] = {cluster_id, lag};
    if ((res = db_query(conn, &unhealthy, 2, hp, &st)) == NULL)
        return st;
    if (PQntuples(res) > 0)
        problem_set(
            p, PROBLEM_CLUSTER_UNHEALTHY,
            "node %s of shard %s is not healthy: %s; an upgrade needs every node running and "
            "every replica linked and in sync",
            PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
    PQclear(res);
    if (p->set)
        return DB_REFUSED;

    snprintf(free_at, sizeof(free_at), "%d", metric_index("FreeableMemory") + 1);
    snprintf(used_at, sizeof(used_at), "%d", metric_index("BytesUsedForCache") + 1);
    const char *mp[3] = {cluster_id, free_at, used_at};
    if ((res = db_query(conn, &short_of_memory, 3, mp, &st)) == NULL)
        return st;
    if (PQntuples(res) > 0)
        problem_set(
            p, PROBLEM_INSUFFICIENT_MEMORY,
            "the host of primary %s (shard %s) has %s bytes free and its data takes %s: a full "
            "sync of an upgraded replica forks the primary and may need as much again; free "
            "memory or use a larger node type first",
            PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2),
            PQgetvalue(res, 0, 3));
    PQclear(res);
    if (p->set)
        return DB_REFUSED;
    if (downtime == NULL)
        return DB_OK;

    if ((res = db_query(conn, &lone_nodes, 1, params, &st)) == NULL)
        return st;
    *downtime = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
    PQclear(res);
    return DB_OK;
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

static long long clock_now(const struct app *app)
{
    return (long long)time(NULL) + app->cfg.test_clock_offset_s;
}

/* When the window opens next, by the real clock (the offset removed), so
 * users read a real time. */
static long long window_next_open(const struct app *app, const char *window)
{
    int start = 0, end = 0;
    char msg[128];
    if (!cspec_window_parse(window, &start, &end, msg, sizeof(msg)))
        return -1;
    return cspec_window_next_open(start, end, clock_now(app)) - app->cfg.test_clock_offset_s;
}

enum db_status upgrade_queue(struct app *app, struct db_conn *conn, const char *cluster_id,
                             const json_t *from, const json_t *to, bool apply_now,
                             const char *window, json_t *downtime, char *op_id)
{
    char *from_text = json_dumps(from, JSON_COMPACT), *to_text = json_dumps(to, JSON_COMPACT);
    char *down_text = json_dumps(downtime, JSON_COMPACT);
    char starts[24] = "0";
    const char *params[6] = {
        cluster_id, apply_now ? "true" : "false", from_text, to_text, down_text, NULL};
    enum db_status st;
    PGresult *res;

    if (!apply_now)
        snprintf(starts, sizeof(starts), "%lld", window_next_open(app, window));
    PQclear(db_query(conn, &cancel_scheduled, 1, params, &st));
    if (st == DB_OK && (res = db_query(conn, &insert_upgrade, 5, params, &st)) != NULL) {
        snprintf(op_id, 40, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        const char *pp[6] = {cluster_id, to_text, op_id, params[1], starts, down_text};
        PQclear(db_query(conn, &set_pending, 6, pp, &st));
    }
    if (st == DB_OK) {
        char *detail = xasprintf("{\"from\": %s, \"to\": %s, \"apply\": \"%s\"}", from_text,
                                 to_text, apply_now ? "immediately" : "maintenance_window");
        st =
            store_event_add(conn, cluster_id, op_id,
                            apply_now ? "EngineUpgradeRequested" : "EngineUpgradeScheduled", "info",
                            apply_now ? "an engine upgrade was requested"
                                      : "an engine upgrade waits for the maintenance window",
                            detail);
        free(detail);
    }
    free(from_text);
    free(to_text);
    free(down_text);
    return st;
}

/* ---- the change behind PATCH engine / engine_version (changes.h) ---------------- */

static json_t *engine_of(const json_t *spec)
{
    return json_pack("{s:O, s:O}", "engine", json_object_get(spec, "engine"), "engine_version",
                     json_object_get(spec, "engine_version"));
}

/* The catalog's path, then the cluster's state. */
static enum db_status upgrade_precheck(struct db_conn *conn, struct change_request *r,
                                       struct problem *p)
{
    const char *from_engine = json_string_value(json_object_get(r->stored, "engine"));
    const char *from_version = json_string_value(json_object_get(r->stored, "engine_version"));
    const char *to_engine = json_string_value(json_object_get(r->next, "engine"));
    const char *to_version = json_string_value(json_object_get(r->next, "engine_version"));
    char allowed[256];
    bool ok = false;
    json_t *downtime = NULL;
    enum db_status st = upgrade_path_allowed(conn, from_engine, from_version, to_engine, to_version,
                                             &ok, allowed, sizeof(allowed));
    if (st != DB_OK)
        return st;
    if (!ok) {
        char *msg =
            xasprintf("cannot go from %s %s to %s %s: %s%s", from_engine, from_version, to_engine,
                      to_version, allowed[0] ? "the upgrades allowed are to " : "it is the newest",
                      allowed[0] ? allowed : "; engines are never downgraded");
        problem_field(p, "engine_version", msg);
        free(msg);
        return DB_REFUSED;
    }
    st = upgrade_check(conn, r->cluster_id, to_engine, to_version, p, &downtime);
    if (downtime != NULL)
        json_object_set_new(r->facts, "downtime", downtime);
    return st;
}

static enum db_status upgrade_request(struct db_conn *conn, struct change_request *r,
                                      struct problem *p)
{
    (void)p;
    json_t *from = engine_of(r->stored), *to = engine_of(r->next);
    enum db_status st =
        upgrade_queue(r->app, conn, r->cluster_id, from, to, r->apply_now,
                      json_string_value(json_object_get(r->next, "maintenance_window")),
                      json_object_get(r->facts, "downtime"), r->op_id);
    json_decref(from);
    json_decref(to);
    r->poke = r->apply_now;
    return st;
}

const struct change_op change_op_upgrade_engine = {
    .kind = &op_cluster_upgrade_engine,
    .what = "an engine upgrade",
    .alone = true,
    .accepted = true,
    .precheck = upgrade_precheck,
    .queue = upgrade_request,
};

static const struct db_stmt scheduled_of = {
    "SELECT id, status, context::text FROM operations WHERE cluster_id = $1"
    "   AND kind = 'upgrade_engine' AND status IN ('scheduled', 'pending', 'running')"
    " ORDER BY created_at DESC LIMIT 1 FOR UPDATE"};

static const struct db_stmt cancel_op = {
    "UPDATE operations SET status = 'cancelled', finished_at = now(), updated_at = now()"
    " WHERE id = $1::uuid"};

/* The spec back to what runs, and nothing pending. */
static const struct db_stmt revert_spec = {
    "UPDATE clusters SET spec = spec || jsonb_build_object('engine', $2::text,"
    "   'engine_version', $3::text), generation = generation + 1,"
    "   pending_changes = pending_changes - 'engine_upgrade', updated_at = now() WHERE id = $1"};

struct cancel_call {
    const char *id;
    bool started;
};

static enum db_status cancel_fn(struct db_conn *conn, void *arg)
{
    struct cancel_call *c = arg;
    const char *params[3] = {c->id, NULL, NULL};
    enum db_status st;
    PGresult *res = db_query(conn, &scheduled_of, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0 || strcmp(PQgetvalue(res, 0, 1), "scheduled") != 0) {
        c->started = PQntuples(res) > 0;
        PQclear(res);
        return DB_NOT_FOUND;
    }
    char op_id[40];
    snprintf(op_id, sizeof(op_id), "%s", PQgetvalue(res, 0, 0));
    json_t *context = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    PQclear(res);
    params[1] = json_string_value(json_object_get(json_object_get(context, "from"), "engine"));
    params[2] =
        json_string_value(json_object_get(json_object_get(context, "from"), "engine_version"));
    const char *op[1] = {op_id};
    PQclear(db_query(conn, &cancel_op, 1, op, &st));
    if (st == DB_OK)
        PQclear(db_query(conn, &revert_spec, 3, params, &st));
    if (st == DB_OK)
        st = store_event_add(conn, c->id, op_id, "EngineUpgradeCancelled", "info",
                             "the scheduled engine upgrade was cancelled", NULL);
    json_decref(context);
    return st;
}

enum db_status upgrade_cancel(struct app *app, const char *cluster_id, bool *started)
{
    struct cancel_call c = {cluster_id, false};
    enum db_status st = db_tx(app->db, DB_READ_COMMITTED, cancel_fn, &c);
    *started = c.started;
    return st;
}

static const struct db_stmt scheduled = {
    "SELECT o.id, o.cluster_id, coalesce(c.spec ->> 'maintenance_window', '" CSPEC_WINDOW_DEFAULT
    "'),"
    "   EXISTS (SELECT 1 FROM operations a WHERE a.cluster_id = o.cluster_id"
    "     AND a.status IN ('pending', 'running'))"
    " FROM operations o JOIN clusters c ON c.id = o.cluster_id"
    " WHERE o.kind = 'upgrade_engine' AND o.status = 'scheduled' ORDER BY o.created_at"};

static const struct db_stmt start_scheduled = {
    "UPDATE operations SET status = 'pending', updated_at = now(),"
    "   context = context || jsonb_build_object('window_opened_at',"
    "     " STORE_TS("now()") ", 'window', $2::text)"
                              " WHERE id = $1::uuid AND status = 'scheduled'"};

static const struct db_stmt starts_at = {
    "UPDATE clusters SET pending_changes = jsonb_set(pending_changes,"
    "   '{engine_upgrade,starts_at}', to_jsonb(" STORE_TS(
        "to_timestamp($2::bigint)") "))"
                                    " WHERE id = $1 AND pending_changes #>> "
                                    "'{engine_upgrade,operation_id}' = $3"
                                    "   AND pending_changes #>> '{engine_upgrade,starts_at}' IS "
                                    "DISTINCT FROM"
                                    "     " STORE_TS("to_timestamp($2::bigint)") ""};

struct tick_call {
    struct app *app;
    int started;
};

static enum db_status tick_fn(struct db_conn *conn, void *arg)
{
    struct tick_call *c = arg;
    enum db_status st;
    PGresult *res = db_query(conn, &scheduled, 0, NULL, &st);

    if (res == NULL)
        return st;
    long long now = (long long)time(NULL);
    for (int r = 0; r < PQntuples(res) && st == DB_OK; r++) {
        const char *op_id = PQgetvalue(res, r, 0), *cluster_id = PQgetvalue(res, r, 1);
        const char *window = PQgetvalue(res, r, 2);
        bool busy = PQgetvalue(res, r, 3)[0] == 't';
        long long opens = window_next_open(c->app, window);
        char when[24];
        snprintf(when, sizeof(when), "%lld", opens);
        if (opens > now || busy) {
            const char *sp[3] = {cluster_id, when, op_id};
            PQclear(db_query(conn, &starts_at, 3, sp, &st));
            continue;
        }
        const char *params[2] = {op_id, window};
        PGresult *u = db_query(conn, &start_scheduled, 2, params, &st);
        if (u != NULL && atoi(PQcmdTuples(u)) == 1) {
            c->started++;
            log_info("maintenance window open: engine upgrade starts", "cluster=%s operation=%s",
                     cluster_id, op_id);
        }
        PQclear(u);
    }
    PQclear(res);
    return st;
}

int upgrade_schedule_tick(struct app *app)
{
    struct tick_call c = {app, 0};
    if (db_run(app->db, tick_fn, &c) != DB_OK)
        return 0;
    if (c.started > 0 && app->runner != NULL)
        runner_poke(app->runner);
    return c.started;
}

/* ---- milestones ------------------------------------------------------------------ */

static const struct db_stmt set_modifying = {
    "UPDATE clusters SET status = 'modifying', updated_at = now() WHERE id = $1"};

struct milestone_call {
    const char *cluster_id, *op_id;
    const json_t *context;
    const char *code, *error;
    bool rolled_back;
};

static char *from_to(const json_t *context)
{
    const json_t *from = json_object_get(context, "from"), *to = json_object_get(context, "to");
    return xasprintf("%s %s to %s %s", json_string_value(json_object_get(from, "engine")),
                     json_string_value(json_object_get(from, "engine_version")),
                     json_string_value(json_object_get(to, "engine")),
                     json_string_value(json_object_get(to, "engine_version")));
}

static enum db_status started_fn(struct db_conn *conn, void *arg)
{
    struct milestone_call *c = arg;
    const char *params[1] = {c->cluster_id};
    enum db_status st;
    PQclear(db_query(conn, &set_modifying, 1, params, &st));
    if (st != DB_OK)
        return st;
    char *what = from_to(c->context), *message = xasprintf("engine upgrade from %s", what);
    json_t *d = json_pack("{s:O, s:O, s:O?}", "from", json_object_get(c->context, "from"), "to",
                          json_object_get(c->context, "to"), "downtime",
                          json_object_get(c->context, "downtime"));
    char *detail = json_dumps(d, JSON_COMPACT);
    st = store_event_add(conn, c->cluster_id, c->op_id, "EngineUpgradeStarted", "info", message,
                         detail);
    free(detail);
    json_decref(d);
    free(message);
    free(what);
    return st;
}

bool upgrade_started(struct app *app, const char *cluster_id, const char *op_id, json_t *context)
{
    if (json_is_true(json_object_get(context, "announced")))
        return true;
    struct milestone_call c = {cluster_id, op_id, context, NULL, NULL, false};
    if (db_tx(app->db, DB_READ_COMMITTED, started_fn, &c) != DB_OK)
        return false;
    json_object_set_new(context, "announced", json_true());
    return true;
}

static const struct db_stmt node_engine = {
    "UPDATE nodes SET engine = $2, engine_version = $3 WHERE id = $1::uuid"};

struct engine_call {
    const char *node_id, *engine, *version;
};

static enum db_status engine_fn(struct db_conn *conn, void *arg)
{
    struct engine_call *c = arg;
    const char *params[3] = {c->node_id, c->engine, c->version};
    enum db_status st;
    PQclear(db_query(conn, &node_engine, 3, params, &st));
    return st;
}

bool upgrade_node_set_engine(struct app *app, const char *node_id, const char *engine,
                             const char *version)
{
    struct engine_call c = {node_id, engine, version};
    return db_run(app->db, engine_fn, &c) == DB_OK;
}

struct node_done_call {
    const char *cluster_id, *op_id, *node_id, *running;
    long long seconds;
};

static enum db_status node_done_fn(struct db_conn *conn, void *arg)
{
    struct node_done_call *c = arg;
    char *message = xasprintf("node %s runs %s (%llds)", c->node_id, c->running, c->seconds);
    char *detail =
        xasprintf("{\"node_id\": \"%s\", \"running_version\": \"%s\", \"seconds\": %lld}",
                  c->node_id, c->running, c->seconds);
    enum db_status st =
        store_event_add(conn, c->cluster_id, c->op_id, "NodeUpgraded", "info", message, detail);
    free(message);
    free(detail);
    return st;
}

void upgrade_node_done(struct app *app, const char *cluster_id, const char *op_id,
                       const char *node_id, const char *running, long long seconds)
{
    struct node_done_call c = {cluster_id, op_id, node_id, running, seconds};
    if (db_run(app->db, node_done_fn, &c) != DB_OK)
        log_warn("could not record a NodeUpgraded event", "node=%s", node_id);
}

static const struct db_stmt set_done = {
    "UPDATE clusters SET status = 'available', observed_generation = generation,"
    "  pending_changes = pending_changes - 'engine_upgrade', updated_at = now() WHERE id = $1"};

static enum db_status done_fn(struct db_conn *conn, void *arg)
{
    struct milestone_call *c = arg;
    const char *params[1] = {c->cluster_id};
    enum db_status st;
    PQclear(db_query(conn, &set_done, 1, params, &st));
    if (st != DB_OK)
        return st;
    json_t *d =
        json_pack("{s:O, s:O, s:O?, s:O?, s:O?}", "from", json_object_get(c->context, "from"), "to",
                  json_object_get(c->context, "to"), "duration_ms",
                  json_object_get(c->context, "duration_ms"), "write_pauses",
                  json_object_get(c->context, "write_pauses"), "nodes_upgraded",
                  json_object_get(c->context, "nodes_done"));
    char *detail = json_dumps(d, JSON_COMPACT), *what = from_to(c->context);
    char *message =
        xasprintf("engine upgraded from %s in %.1f s", what,
                  (double)json_integer_value(json_object_get(c->context, "duration_ms")) / 1000.0);
    st = store_event_add(conn, c->cluster_id, c->op_id, "EngineUpgradeComplete", "info", message,
                         detail);
    free(message);
    free(what);
    free(detail);
    json_decref(d);
    return st;
}

enum db_status upgrade_done(struct db_conn *conn, const char *cluster_id, const char *op_id,
                            const json_t *context)
{
    struct milestone_call c = {cluster_id, op_id, context, NULL, NULL, false};
    return done_fn(conn, &c);
}

static const struct db_stmt set_failed = {
    "UPDATE clusters SET status = 'available', updated_at = now(),"
    "  pending_changes = pending_changes - 'engine_upgrade' WHERE id = $1"};

static enum db_status failed_fn(struct db_conn *conn, void *arg)
{
    struct milestone_call *c = arg;
    const json_t *from = json_object_get(c->context, "from");
    const char *params[3] = {c->cluster_id, json_string_value(json_object_get(from, "engine")),
                             json_string_value(json_object_get(from, "engine_version"))};
    enum db_status st;
    PQclear(db_query(conn, &set_failed, 1, params, &st));
    if (st == DB_OK && c->rolled_back && params[1] != NULL && params[2] != NULL)
        PQclear(db_query(conn, &revert_spec, 3, params, &st));
    if (st != DB_OK)
        return st;
    json_t *d = json_pack("{s:s, s:s, s:b}", "code", c->code, "error", c->error, "rolled_back",
                          c->rolled_back);
    char *detail = json_dumps(d, JSON_COMPACT);
    st = store_event_add(conn, c->cluster_id, c->op_id, "EngineUpgradeFailed", "error", c->error,
                         detail);
    free(detail);
    json_decref(d);
    return st;
}

enum db_status upgrade_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                              const char *code, const char *error, const json_t *context,
                              bool rolled_back)
{
    struct milestone_call c = {cluster_id, op_id, context, code, error, rolled_back};
    return failed_fn(conn, &c);
}

/* ---- the upgrade report ------------------------------------------------------------ */

/* The metrics the report compares, cluster averages over the hour before
 * and the hour after. */
static const char *const report_metrics[] = {
    "EngineCPUUtilization",     "CPUUtilization",     "BytesUsedForCache",
    "MemoryFragmentationRatio", "GetTypeCmdsLatency", "SetTypeCmdsLatency",
    "CurrConnections",          "Evictions",          "ReplicationLag"};
#define REPORT_METRICS  (sizeof(report_metrics) / sizeof(report_metrics[0]))
#define REPORT_WINDOW_S 3600

static const struct db_stmt report_source = {
    "SELECT o.cluster_id, o.context::text, extract(epoch FROM o.started_at)::bigint,"
    "  extract(epoch FROM o.finished_at)::bigint, extract(epoch FROM now())::bigint,"
    "  coalesce((SELECT period_s FROM metric_samples m WHERE m.cluster_id = o.cluster_id"
    "    ORDER BY m.at DESC LIMIT 1), 60)"
    " FROM operations o WHERE o.id = $1::uuid AND o.kind = 'upgrade_engine'"
    "   AND o.status IN ('succeeded', 'failed') AND o.started_at IS NOT NULL"};

/* The mean of each series' points (NAN without points), in metrics' order;
 * with STORE_STAT_SUM, the sum of their points. */
static enum db_status means(struct db_conn *conn, const char *cluster_id, long long start,
                            long long end, enum store_metric_stat stat, const int *metrics, int n,
                            double *out)
{
    char s[24], e[24];
    snprintf(s, sizeof(s), "%lld", start);
    snprintf(e, sizeof(e), "%lld", end);
    struct store_metric_query q = {.cluster_id = cluster_id,
                                   .start = s,
                                   .end = e,
                                   .period_s = 60,
                                   .stat = stat,
                                   .metrics = metrics,
                                   .nmetrics = n,
                                   .max_points = REPORT_WINDOW_S / 60 + 1};
    json_t *res = NULL;
    char err[256];
    for (int i = 0; i < n; i++)
        out[i] = NAN;
    if (end <= start)
        return DB_OK;
    enum db_status st = store_metric_query(conn, &q, &res, err, sizeof(err));
    if (st != DB_OK)
        return st == DB_NOT_FOUND ? DB_OK : st;
    json_t *series = json_object_get(res, "series");
    for (int i = 0; i < n && i < (int)json_array_size(series); i++) {
        json_t *points = json_object_get(json_array_get(series, (size_t)i), "points"), *p;
        size_t k;
        double sum = 0;
        json_array_foreach (points, k, p) {
            sum += json_number_value(json_object_get(p, "value"));
        }
        if (json_array_size(points) > 0)
            out[i] = stat == STORE_STAT_SUM ? sum : sum / (double)json_array_size(points);
    }
    json_decref(res);
    return DB_OK;
}

static json_t *compare(double before, double after)
{
    json_t *o = json_object();
    json_object_set_new(o, "before", isnan(before) ? json_null() : json_real(before));
    json_object_set_new(o, "after", isnan(after) ? json_null() : json_real(after));
    json_object_set_new(o, "change_percent",
                        isnan(before) || isnan(after) || before == 0
                            ? json_null()
                            : json_real((after - before) / fabs(before) * 100.0));
    return o;
}

/* Engine CPU seconds per million commands over [start, end): the engines'
 * CPU time (EngineCPUUtilization, percent of a core, over each sample's
 * period) over every command they ran (KeyBasedCmds + NonKeyTypeCmds), so
 * that more or less traffic does not pass for a faster or slower engine. */
static enum db_status cpu_per_million(struct db_conn *conn, const char *cluster_id, long long start,
                                      long long end, int period_s, double *out)
{
    const int which[3] = {metric_index("EngineCPUUtilization"), metric_index("KeyBasedCmds"),
                          metric_index("NonKeyTypeCmds")};
    double sums[3];
    enum db_status st = means(conn, cluster_id, start, end, STORE_STAT_SUM, which, 3, sums);
    double commands = sums[1] + sums[2];
    *out = st == DB_OK && !isnan(sums[0]) && !isnan(commands) && commands > 0
               ? sums[0] / 100.0 * period_s / commands * 1e6
               : NAN;
    return st;
}

enum db_status upgrade_operation_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    enum db_status st = store_operation_get(conn, id, out);
    if (st != DB_OK)
        return st;
    PGresult *res = db_query(conn, &report_source, 1, params, &st);
    if (res == NULL || PQntuples(res) == 0) {
        PQclear(res);
        return st == DB_OK || res == NULL ? DB_OK : st;
    }
    char cluster_id[64];
    snprintf(cluster_id, sizeof(cluster_id), "%s", PQgetvalue(res, 0, 0));
    json_t *context = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    long long started = atoll(PQgetvalue(res, 0, 2)), finished = atoll(PQgetvalue(res, 0, 3));
    long long now = atoll(PQgetvalue(res, 0, 4));
    int period_s = atoi(PQgetvalue(res, 0, 5));
    PQclear(res);

    long long after_end = finished + REPORT_WINDOW_S < now ? finished + REPORT_WINDOW_S : now;
    int which[REPORT_METRICS];
    double before[REPORT_METRICS], after[REPORT_METRICS], cpu_before = NAN, cpu_after = NAN;
    for (size_t i = 0; i < REPORT_METRICS; i++)
        which[i] = metric_index(report_metrics[i]);
    if ((st = means(conn, cluster_id, started - REPORT_WINDOW_S, started, STORE_STAT_AVERAGE, which,
                    REPORT_METRICS, before)) == DB_OK &&
        (st = means(conn, cluster_id, finished, after_end, STORE_STAT_AVERAGE, which,
                    REPORT_METRICS, after)) == DB_OK &&
        (st = cpu_per_million(conn, cluster_id, started - REPORT_WINDOW_S, started, period_s,
                              &cpu_before)) == DB_OK)
        st = cpu_per_million(conn, cluster_id, finished, after_end, period_s, &cpu_after);
    if (st != DB_OK) {
        json_decref(context);
        return st;
    }
    json_t *metrics = json_object();
    for (size_t i = 0; i < REPORT_METRICS; i++)
        json_object_set_new(metrics, report_metrics[i], compare(before[i], after[i]));
    json_object_set_new(metrics, "EngineCPUSecondsPerMillionCommands",
                        compare(cpu_before, cpu_after));
    json_t *op = json_loads(*out, 0, NULL);
    json_t *report = json_pack(
        "{s:O?, s:O?, s:O?, s:O?, s:O?, s:{s:I, s:I}, s:{s:I, s:I}, s:o}", "from",
        json_object_get(context, "from"), "to", json_object_get(context, "to"), "duration_ms",
        json_object_get(context, "duration_ms"), "write_pauses",
        json_object_get(context, "write_pauses"), "downtime", json_object_get(context, "downtime"),
        "before", "start", (json_int_t)(started - REPORT_WINDOW_S), "end", (json_int_t)started,
        "after", "start", (json_int_t)finished, "end", (json_int_t)after_end, "metrics", metrics);
    if (op != NULL && report != NULL) {
        json_object_set_new(op, "report", report);
        free(*out);
        *out = json_dumps(op, JSON_COMPACT);
    } else {
        json_decref(report);
    }
    json_decref(op);
    json_decref(context);
    return DB_OK;
}
