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
#include "store.h"
#include "xalloc.h"

/* ---- checks ------------------------------------------------------------------ */

enum db_status upgrade_check(struct db_conn *conn, const char *cluster_id, const char *engine,
                             const char *version, struct problem *p, json_t **downtime)
{
    bool live = false;
    enum db_status st = store_cluster_live(conn, cluster_id, &live);
    if (st != DB_OK)
        return st;
    if (!live) {
        problem_set(p, PROBLEM_CLUSTER_NOT_FOUND, "cluster %s does not exist or is being deleted",
                    cluster_id != NULL ? cluster_id : "(none)");
        return DB_REFUSED;
    }

    char *hosts = NULL;
    if ((st = store_upgrade_hosts_without(conn, cluster_id, engine, version, &hosts)) != DB_OK)
        return st;
    if (hosts != NULL)
        problem_set(
            p, PROBLEM_ENGINE_NOT_INSTALLED,
            "%s %s is not installed on host(s) %s; install it there (the agent reports it on "
            "its next sync) and ask again",
            engine, version, hosts);
    free(hosts);
    if (p->set)
        return DB_REFUSED;

    struct store_upgrade_blocker sick;
    if ((st = store_upgrade_unhealthy(conn, cluster_id, UPGRADE_MAX_LAG_BYTES, &sick)) != DB_OK)
        return st;
    if (sick.found) {
        problem_set(
            p, PROBLEM_CLUSTER_UNHEALTHY,
            "node %s of shard %s is not healthy: %s; an upgrade needs every node running and "
            "every replica linked and in sync",
            sick.node_id, sick.shard, sick.facts[0]);
        return DB_REFUSED;
    }

    struct store_upgrade_blocker tight;
    if ((st = store_upgrade_short_of_memory(conn, cluster_id, metric_index("FreeableMemory") + 1,
                                            metric_index("BytesUsedForCache") + 1, &tight)) !=
        DB_OK)
        return st;
    if (tight.found) {
        problem_set(
            p, PROBLEM_INSUFFICIENT_MEMORY,
            "the host of primary %s (shard %s) has %s bytes free and its data takes %s: a full "
            "sync of an upgraded replica forks the primary and may need as much again; free "
            "memory or use a larger node type first",
            tight.node_id, tight.shard, tight.facts[0], tight.facts[1]);
        return DB_REFUSED;
    }
    return downtime != NULL ? store_upgrade_downtime(conn, cluster_id, downtime) : DB_OK;
}

/* ---- queueing and scheduling -------------------------------------------------- */

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
    const char *apply = apply_now ? "immediately" : "maintenance_window";
    long long starts_at = apply_now ? 0 : window_next_open(app, window);
    enum db_status st =
        store_upgrade_queue(conn, cluster_id, from, to, apply_now, starts_at, downtime, op_id);
    if (st != DB_OK)
        return st;
    json_t *d = json_pack("{s:O, s:O, s:s}", "from", from, "to", to, "apply", apply);
    char *detail = json_dumps(d, JSON_COMPACT);
    st = store_event_add(conn, cluster_id, op_id,
                         apply_now ? "EngineUpgradeRequested" : "EngineUpgradeScheduled", "info",
                         apply_now ? "an engine upgrade was requested"
                                   : "an engine upgrade waits for the maintenance window",
                         detail);
    free(detail);
    json_decref(d);
    return st;
}

struct cancel_call {
    const char *id;
    struct problem *p;
};

static enum db_status cancel_fn(struct db_conn *conn, void *arg)
{
    struct cancel_call *c = arg;
    struct store_upgrade_active up;
    enum db_status st = store_upgrade_active(conn, c->id, &up);

    problem_clear(c->p);
    if (st == DB_NOT_FOUND) {
        problem_set(c->p, PROBLEM_NO_PENDING_CHANGE,
                    "cluster %s has no engine upgrade waiting for its maintenance window (or "
                    "does not exist)",
                    c->id);
        return DB_REFUSED;
    }
    if (st != DB_OK)
        return st;
    if (!up.scheduled) {
        json_decref(up.context);
        problem_set(c->p, PROBLEM_OPERATION_IN_PROGRESS,
                    "the engine upgrade of cluster %s has started; it can no longer be cancelled",
                    c->id);
        return DB_REFUSED;
    }
    const json_t *from = json_object_get(up.context, "from");
    if ((st = store_operation_cancel(conn, up.id)) == DB_OK)
        st = store_upgrade_revert_spec(conn, c->id,
                                       json_string_value(json_object_get(from, "engine")),
                                       json_string_value(json_object_get(from, "engine_version")));
    if (st == DB_OK)
        st = store_event_add(conn, c->id, up.id, "EngineUpgradeCancelled", "info",
                             "the scheduled engine upgrade was cancelled", NULL);
    json_decref(up.context);
    return st;
}

bool upgrade_cancel(struct app *app, const char *cluster_id, struct problem *p)
{
    struct cancel_call c = {cluster_id, p};
    return problem_db(p, db_tx(app->db, DB_READ_COMMITTED, cancel_fn, &c));
}

struct tick_call {
    struct app *app;
    int started;
};

static enum db_status tick_fn(struct db_conn *conn, void *arg)
{
    struct tick_call *c = arg;
    struct store_scheduled_upgrades due;
    enum db_status st = store_upgrades_scheduled(conn, &due);

    c->started = 0; /* a retried transaction counts again */
    if (st != DB_OK)
        return st;
    long long now = (long long)time(NULL);
    for (size_t i = 0; i < due.n && st == DB_OK; i++) {
        const struct store_scheduled_upgrade *u = &due.items[i];
        long long opens = window_next_open(c->app, u->window);
        if (opens > now || u->busy) {
            st = store_upgrade_set_starts_at(conn, u->cluster_id, u->op_id, opens);
            continue;
        }
        bool started = false;
        st = store_upgrade_start(conn, u->op_id, u->window, &started);
        if (started) {
            c->started++;
            log_info("maintenance window open: engine upgrade starts", "cluster=%s operation=%s",
                     u->cluster_id, u->op_id);
        }
    }
    free(due.items);
    return st;
}

int upgrade_schedule_tick(struct app *app)
{
    struct tick_call c = {app, 0};
    if (db_tx(app->db, DB_READ_COMMITTED, tick_fn, &c) != DB_OK)
        return 0;
    if (c.started > 0 && app->runner != NULL)
        runner_poke(app->runner);
    return c.started;
}

/* ---- milestones ------------------------------------------------------------------ */

static char *from_to(const json_t *context)
{
    const json_t *from = json_object_get(context, "from"), *to = json_object_get(context, "to");
    return xasprintf("%s %s to %s %s", json_string_value(json_object_get(from, "engine")),
                     json_string_value(json_object_get(from, "engine_version")),
                     json_string_value(json_object_get(to, "engine")),
                     json_string_value(json_object_get(to, "engine_version")));
}

/* An event of the upgrade, taking message and detail (a JSON object). */
static enum db_status upgrade_event(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                    const char *type, const char *severity, char *message,
                                    json_t *detail)
{
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st = store_event_add(conn, cluster_id, op_id, type, severity, message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

enum db_status upgrade_started(struct db_conn *conn, const char *cluster_id, const char *op_id,
                               const json_t *context)
{
    enum db_status st = store_cluster_set_status(conn, cluster_id, "modifying");
    if (st != DB_OK)
        return st;
    char *what = from_to(context), *message = xasprintf("engine upgrade from %s", what);
    free(what);
    return upgrade_event(conn, cluster_id, op_id, "EngineUpgradeStarted", "info", message,
                         json_pack("{s:O, s:O, s:O?}", "from", json_object_get(context, "from"),
                                   "to", json_object_get(context, "to"), "downtime",
                                   json_object_get(context, "downtime")));
}

enum db_status upgrade_done(struct db_conn *conn, const char *cluster_id, const char *op_id,
                            const json_t *context)
{
    enum db_status st = store_upgrade_ended(conn, cluster_id, true);
    if (st != DB_OK)
        return st;
    const json_t *ms = json_object_get(context, "duration_ms");
    char *what = from_to(context);
    char *message = xasprintf("engine upgraded from %s in %.1f s", what,
                              (double)json_integer_value(ms) / 1000.0);
    free(what);
    return upgrade_event(conn, cluster_id, op_id, "EngineUpgradeComplete", "info", message,
                         json_pack("{s:O, s:O, s:O?, s:O?, s:O?}", "from",
                                   json_object_get(context, "from"), "to",
                                   json_object_get(context, "to"), "duration_ms", ms,
                                   "write_pauses", json_object_get(context, "write_pauses"),
                                   "nodes_upgraded", json_object_get(context, "nodes_done")));
}

enum db_status upgrade_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                              const char *code, const char *error, const json_t *context,
                              bool rolled_back)
{
    const json_t *from = json_object_get(context, "from");
    const char *engine = json_string_value(json_object_get(from, "engine"));
    const char *version = json_string_value(json_object_get(from, "engine_version"));
    enum db_status st = store_upgrade_ended(conn, cluster_id, false);
    if (st == DB_OK && rolled_back && engine != NULL && version != NULL)
        st = store_upgrade_revert_spec(conn, cluster_id, engine, version);
    if (st != DB_OK)
        return st;
    return upgrade_event(
        conn, cluster_id, op_id, "EngineUpgradeFailed", "error", xstrdup(error),
        json_pack("{s:s, s:s, s:b}", "code", code, "error", error, "rolled_back", rolled_back));
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
    struct problem refused = {0};
    for (int i = 0; i < n; i++)
        out[i] = NAN;
    if (end <= start)
        return DB_OK;
    enum db_status st = store_metric_query(conn, &q, &res, &refused);
    problem_clear(&refused);
    if (st != DB_OK) /* a cluster gone since, or a window it cannot answer: no figures */
        return st == DB_NOT_FOUND || st == DB_REFUSED ? DB_OK : st;
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
    struct store_upgrade_span span;
    enum db_status st = store_operation_get(conn, id, out);
    if (st != DB_OK)
        return st;
    /* Without a span (not an upgrade, not ended, or not readable), the
     * operation goes out without a report. */
    if (store_upgrade_span(conn, id, &span) != DB_OK)
        return DB_OK;
    const char *cluster_id = span.cluster_id;
    json_t *context = span.context;
    long long started = span.started, finished = span.finished, now = span.now;
    int period_s = span.period_s;

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
