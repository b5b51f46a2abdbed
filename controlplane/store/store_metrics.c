/* store_metrics.c -- metric samples: daily partitions, the rows agents
 * push, the aggregation behind a query (see api_metrics.c), and each node's
 * newest sample for the Prometheus endpoint. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "store.h"
#include "xalloc.h"

static const struct db_stmt partitions = {
    "SELECT metric_partitions((to_timestamp($1::bigint) AT TIME ZONE 'UTC')::date,"
    " (to_timestamp($2::bigint) AT TIME ZONE 'UTC')::date)"};

enum db_status store_metric_partitions(struct db_conn *conn, const char *first_at,
                                       const char *last_at)
{
    const char *params[2] = {first_at, last_at};
    enum db_status st;
    PQclear(db_query(conn, &partitions, 2, params, &st));
    return st;
}

/* Only nodes placed on the pushing host are taken; a sample pushed again
 * (a retry) replaces the first. */
static const struct db_stmt add_samples = {
    "WITH s AS (SELECT * FROM jsonb_to_recordset($3::jsonb)"
    "   AS s(node_id uuid, at bigint, vals real[]))"
    " INSERT INTO metric_samples (cluster_id, node_id, at, period_s, vals)"
    " SELECT n.cluster_id, n.id, to_timestamp(s.at), $2::int, s.vals"
    " FROM s JOIN nodes n ON n.id = s.node_id AND n.host_id = $1::uuid"
    " ON CONFLICT (cluster_id, at, node_id)"
    " DO UPDATE SET vals = EXCLUDED.vals, period_s = EXCLUDED.period_s"};

static const struct db_stmt late_samples = {
    "SELECT metric_rollup_late($1::uuid, to_timestamp($2::bigint), to_timestamp($3::bigint))"};

enum db_status store_metric_samples_add(struct db_conn *conn, const char *host_id,
                                        const char *period_s, const char *rows,
                                        const char *first_at, const char *last_at,
                                        long long *stored)
{
    const char *params[3] = {host_id, period_s, rows};
    const char *late[3] = {host_id, first_at, last_at};
    long long restored = 0;
    enum db_status st = store_metric_uncompact(conn, host_id, rows, first_at, last_at, &restored);
    if (st != DB_OK)
        return st;
    if (restored > 0)
        log_info("late metric samples: their compacted days are back in samples",
                 "host_id=%s"
                 " restored=%lld",
                 host_id, restored);
    PGresult *res = db_query(conn, &add_samples, 3, params, &st);

    if (res != NULL)
        *stored = atoll(PQcmdTuples(res));
    PQclear(res);
    if (st == DB_OK)
        PQclear(db_query(conn, &late_samples, 3, late, &st));
    return st;
}

static const struct db_stmt drop_before = {
    "SELECT metric_partitions_drop_before((now() AT TIME ZONE 'UTC')::date - $1::int)"};

enum db_status store_metric_retention(struct db_conn *conn, int keep_days, long long *dropped)
{
    char days[16];
    const char *params[1] = {days};

    snprintf(days, sizeof(days), "%d", keep_days);
    return store_get_int64(conn, &drop_before, 1, params, dropped);
}

/* ---- queries ------------------------------------------------------------- */

/* In the order of the aggregate's statistic columns. */
const char *const store_metric_stats[] = {[STORE_STAT_AVERAGE] = "Average",
                                          [STORE_STAT_MINIMUM] = "Minimum",
                                          [STORE_STAT_MAXIMUM] = "Maximum",
                                          [STORE_STAT_SUM] = "Sum",
                                          [STORE_STAT_SAMPLE_COUNT] = "SampleCount",
                                          [STORE_STAT_P50] = "p50",
                                          [STORE_STAT_P90] = "p90",
                                          [STORE_STAT_P99] = "p99",
                                          [STORE_STAT_P99 + 1] = NULL};

/* start and end as epoch seconds, end defaulting to now and start to
 * default_range before end; NULL when the cluster does not exist. */
static const struct db_stmt resolve_range = {
    "WITH t AS (SELECT CASE WHEN $3::text ~ '^[0-9]+$' THEN to_timestamp($3::bigint)"
    "     ELSE coalesce($3::timestamptz, now()) END AS e)"
    " SELECT extract(epoch FROM CASE WHEN $2::text ~ '^[0-9]+$' THEN to_timestamp($2::bigint)"
    "     ELSE coalesce($2::timestamptz, t.e - make_interval(secs => $4::int)) END)::bigint,"
    "   extract(epoch FROM t.e)::bigint"
    " FROM t WHERE EXISTS (SELECT 1 FROM clusters WHERE id = $1)"};

/* Every statistic of a metric per period bucket (and node), over the
 * rollups, the compacted days' series (decoded by store_metric_series_points
 * into $9-$11) and the samples: metric_parts and metric_aggregate
 * (migrations/0011_views.sql) say how. Rows: bucket, node, then the
 * statistics in store_metric_stats' order, the percentiles as one array;
 * without percentiles the nodes' averages are not needed, which saves a
 * pass. */
static const struct db_stmt aggregate = {
    "SELECT * FROM metric_aggregate_percentiles($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"};
static const struct db_stmt aggregate_no_percentiles = {
    "SELECT * FROM metric_aggregate($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"};

/* The value of statistic stat in row r of the aggregate. */
static double stat_value(const PGresult *res, int r, int stat)
{
    if (stat < STORE_STAT_P50)
        return strtod(PQgetvalue(res, r, 2 + stat), NULL);
    const char *p = PQgetvalue(res, r, 2 + STORE_STAT_P50); /* {p50,p90,p99} */
    for (int k = STORE_STAT_P50; k < stat && p != NULL; k++)
        p = strchr(p, ',');
    return p != NULL ? strtod(p + 1, NULL) : 0;
}

/* The rollup a period can be answered from: the longest that divides it. */
static int rollup_for(long long period_s)
{
    if (period_s % 3600 == 0)
        return 3600;
    if (period_s % 300 == 0)
        return 300;
    return 0;
}

static const struct db_stmt rollup = {"SELECT metric_rollup($1::int, interval '2 minutes')"};

static const struct db_stmt rollup_retention = {
    "WITH d AS (DELETE FROM metric_rollups WHERE (period_s = 300 AND at < now() - interval"
    " '63 days') OR (period_s = 3600 AND at < now() - interval '15 months') RETURNING 1)"
    " SELECT count(*) FROM d"};

enum db_status store_metric_rollups(struct db_conn *conn, long long *rows)
{
    static const char *const periods[] = {"300", "3600"};
    long long n = 0, dropped = 0;
    enum db_status st = DB_OK;

    *rows = 0;
    for (size_t i = 0; i < 2 && st == DB_OK; i++) {
        const char *params[1] = {periods[i]};
        if ((st = store_get_int64(conn, &rollup, 1, params, &n)) == DB_OK)
            *rows += n;
    }
    if (st == DB_OK)
        st = store_get_int64(conn, &rollup_retention, 0, NULL, &dropped);
    return st;
}

/* A point's or the window's time (epoch seconds) as Cairn's timestamp text
 * in whole seconds, into buf (TIME_TEXT_SIZE bytes). */
static char *iso(long long epoch, char *buf)
{
    return time_format((int64_t)epoch * 1000000, TIME_SECONDS, buf);
}

/* An empty series of metric m: its points as [{timestamp, value}], or with
 * columns as timestamps[] (epoch seconds) and values[] in step, which is
 * half the bytes and a fraction of the work for a dashboard's many series. */
static json_t *series(const struct metric_def *m, const char *node_id, bool columns)
{
    if (columns)
        return json_pack("{s:s, s:s, s:s?, s:[], s:[]}", "name", m->name, "unit", m->unit,
                         "node_id", node_id, "timestamps", "values");
    return json_pack("{s:s, s:s, s:s?, s:[]}", "name", m->name, "unit", m->unit, "node_id", node_id,
                     "points");
}

/* Append the bucket starting at epoch seconds at, of value v, to s. */
static void series_append(json_t *s, bool columns, long long at, double v)
{
    if (columns) {
        json_array_append_new(json_object_get(s, "timestamps"), json_integer(at));
        json_array_append_new(json_object_get(s, "values"), json_real(v));
        return;
    }
    char ts[TIME_TEXT_SIZE];
    json_t *point = json_object();
    json_object_set_new(point, "timestamp", json_string(iso(at, ts)));
    json_object_set_new(point, "value", json_real(v));
    json_array_append_new(json_object_get(s, "points"), point);
}

/* The query's range in epoch seconds; DB_NOT_FOUND without the cluster,
 * DB_REFUSED (p says which parameter) when it cannot be answered. */
static enum db_status resolve(struct db_conn *conn, const struct store_metric_query *q,
                              long long *s, long long *e, struct problem *p)
{
    struct db_params params = {0};
    enum db_status st;
    db_param_text(&params, q->cluster_id);
    db_param_text(&params, q->start);
    db_param_text(&params, q->end);
    db_param_int(&params, q->default_range_s);
    PGresult *res = db_query_params(conn, &resolve_range, &params, &st);
    if (res == NULL)
        return st;
    st = PQntuples(res) == 1 ? DB_OK : DB_NOT_FOUND;
    if (st == DB_OK) {
        *s = db_int(res, 0, 0);
        *e = db_int(res, 0, 1);
    }
    PQclear(res);
    if (st != DB_OK)
        return st;
    if (*e <= *s) {
        problem_field(p, "end", "must be after start");
        return DB_REFUSED;
    }
    long long points = (*e - *s + q->period_s - 1) / q->period_s;
    if (points > q->max_points) {
        char msg[192];
        snprintf(msg, sizeof(msg),
                 "%lld points per series from start, end and period; at most %d: use a longer "
                 "period or a shorter range",
                 points, q->max_points);
        problem_field(p, "period", msg);
        return DB_REFUSED;
    }
    return DB_OK;
}

/* Append the series of metric k of q over [s, e) to all. */
static enum db_status one_metric(struct db_conn *conn, const struct store_metric_query *q, int k,
                                 long long s, long long e, json_t *all)
{
    const struct metric_def *m = &metric_catalog[q->metrics[k]];
    char start[24], end[24], period[24], metric[16], level[16];
    snprintf(start, sizeof(start), "%lld", s);
    snprintf(end, sizeof(end), "%lld", e);
    snprintf(period, sizeof(period), "%lld", q->period_s);
    snprintf(level, sizeof(level), "%d", rollup_for(q->period_s));
    snprintf(metric, sizeof(metric), "%d", q->metrics[k] + 1); /* SQL arrays count from 1 */
    struct store_series_ask ask = {q->cluster_id, metric, start, end, q->node_id, level};
    struct store_series_points pts = {0};
    enum db_status st = store_metric_series_points(conn, &ask, &pts);
    const char *ap[11] = {q->cluster_id,
                          start,
                          end,
                          period,
                          q->node_id,
                          metric,
                          q->by_node ? "true" : "false",
                          level,
                          pts.nodes,
                          pts.days,
                          pts.values};
    const struct db_stmt *stmt = q->stat >= STORE_STAT_P50 ? &aggregate : &aggregate_no_percentiles;
    const int lengths[11] = {[10] = (int)pts.values_len}, formats[11] = {[10] = 1};
    PGresult *res =
        st == DB_OK ? db_query_formats(conn, stmt, 11, ap, lengths, formats, &st) : NULL;
    free(pts.nodes);
    free(pts.days);
    free(pts.values);
    if (res == NULL)
        return st;
    json_t *cur = NULL;
    const char *cur_node = NULL;
    if (!q->by_node) {
        cur = series(m, q->node_id, q->columns);
        json_array_append_new(all, cur);
    }
    for (int r = 0; r < PQntuples(res); r++) {
        const char *node = PQgetvalue(res, r, 1);
        if (q->by_node && (cur_node == NULL || strcmp(cur_node, node) != 0)) {
            cur = series(m, node, q->columns);
            json_array_append_new(all, cur);
            cur_node = node;
        }
        series_append(cur, q->columns, db_int(res, r, 0), stat_value(res, r, q->stat));
    }
    PQclear(res);
    return DB_OK;
}

enum db_status store_metric_query(struct db_conn *conn, const struct store_metric_query *q,
                                  json_t **out, struct problem *p)
{
    long long s = 0, e = 0;
    enum db_status st = resolve(conn, q, &s, &e, p);
    if (st != DB_OK)
        return st;
    json_t *all = json_array();
    for (int k = 0; k < q->nmetrics && st == DB_OK; k++)
        st = one_metric(conn, q, k, s, e, all);
    if (st != DB_OK) {
        json_decref(all);
        return st;
    }
    char ts[TIME_TEXT_SIZE], te[TIME_TEXT_SIZE];
    *out = json_pack("{s:s, s:s, s:s, s:I, s:s, s:o}", "cluster_id", q->cluster_id, "start",
                     iso(s, ts), "end", iso(e, te), "period", (json_int_t)q->period_s, "stat",
                     store_metric_stats[q->stat], "series", all);
    return DB_OK;
}

/* ---- the newest samples, for the Prometheus endpoint ------------------------------ */

/* Each node's newest sample of the last ten minutes, with its labels. */
static const struct db_stmt latest_samples = {
    "SELECT DISTINCT ON (m.node_id) m.cluster_id, m.node_id, s.name, coalesce(n.role, ''),"
    "   array_to_string(m.vals, ',', 'NaN')"
    " FROM metric_samples m JOIN nodes n ON n.id = m.node_id JOIN shards s ON s.id = n.shard_id"
    " WHERE m.at > now() - interval '10 minutes' AND n.desired_state <> 'deleted'"
    " ORDER BY m.node_id, m.at DESC"};

/* Split text, the values as PostgreSQL prints them with NaN for none, in
 * place into s->vals by catalog position. */
static void split_values(struct store_latest_sample *s)
{
    char *save = NULL;
    size_t k = 0;
    s->vals = xcalloc(metric_count + 1, sizeof(*s->vals));
    for (char *tok = strtok_r(s->text, ",", &save); tok != NULL && k < metric_count;
         tok = strtok_r(NULL, ",", &save), k++)
        s->vals[k] = strcmp(tok, "NaN") != 0 ? tok : NULL;
}

enum db_status store_metric_latest(struct db_conn *conn, struct store_latest_samples *out)
{
    enum db_status st;
    PGresult *res = db_query(conn, &latest_samples, 0, NULL, &st);
    if (res == NULL)
        return st;
    out->n = (size_t)PQntuples(res);
    out->items = xcalloc(out->n + 1, sizeof(*out->items));
    for (size_t i = 0; i < out->n; i++) {
        struct store_latest_sample *s = &out->items[i];
        store_copy_text(s->cluster_id, sizeof(s->cluster_id), res, (int)i, 0);
        store_copy_text(s->node_id, sizeof(s->node_id), res, (int)i, 1);
        store_copy_text(s->shard, sizeof(s->shard), res, (int)i, 2);
        store_copy_text(s->role, sizeof(s->role), res, (int)i, 3);
        s->text = xstrdup(db_text(res, (int)i, 4) != NULL ? db_text(res, (int)i, 4) : "");
        split_values(s);
    }
    PQclear(res);
    return DB_OK;
}

void store_metric_latest_free(struct store_latest_samples *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i].text);
        free(s->items[i].vals);
    }
    free(s->items);
    memset(s, 0, sizeof(*s));
}
