/* store_metrics.c -- metric samples: daily partitions, the rows agents
 * push, and the aggregation behind a query (see api_metrics.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

enum db_status store_metric_samples_add(struct db_conn *conn, const char *host_id,
                                        const char *period_s, const char *rows, long long *stored)
{
    const char *params[3] = {host_id, period_s, rows};
    enum db_status st;
    PGresult *res = db_query(conn, &add_samples, 3, params, &st);

    if (res != NULL)
        *stored = atoll(PQcmdTuples(res));
    PQclear(res);
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

/* start and end as epoch seconds, end defaulting to now and start to
 * default_range before end; NULL when the cluster does not exist. */
static const struct db_stmt resolve_range = {
    "WITH t AS (SELECT CASE WHEN $3::text ~ '^[0-9]+$' THEN to_timestamp($3::bigint)"
    "     ELSE coalesce($3::timestamptz, now()) END AS e)"
    " SELECT extract(epoch FROM CASE WHEN $2::text ~ '^[0-9]+$' THEN to_timestamp($2::bigint)"
    "     ELSE coalesce($2::timestamptz, t.e - make_interval(secs => $4::int)) END)::bigint,"
    "   extract(epoch FROM t.e)::bigint"
    " FROM t WHERE EXISTS (SELECT 1 FROM clusters WHERE id = $1)"};

/* Every statistic of metric $6 per period bucket (and node with $7), over
 * the values of the cluster's rows in [start, end). */
static const struct db_stmt aggregate = {
    "SELECT (floor(extract(epoch FROM m.at) / $4::int) * $4::int)::bigint AS b,"
    "   CASE WHEN $7::boolean THEN m.node_id::text ELSE '' END AS node,"
    "   avg(v), min(v), max(v), sum(v), count(v),"
    "   percentile_cont(0.5) WITHIN GROUP (ORDER BY v),"
    "   percentile_cont(0.9) WITHIN GROUP (ORDER BY v),"
    "   percentile_cont(0.99) WITHIN GROUP (ORDER BY v)"
    " FROM metric_samples m, LATERAL (SELECT m.vals[$6::int] AS v) x"
    " WHERE m.cluster_id = $1 AND m.at >= to_timestamp($2::bigint)"
    "   AND m.at < to_timestamp($3::bigint) AND ($5::uuid IS NULL OR m.node_id = $5::uuid)"
    "   AND v IS NOT NULL"
    " GROUP BY 1, 2 ORDER BY 2, 1"};

static char *iso(long long epoch)
{
    time_t t = (time_t)epoch;
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return xstrdup(buf);
}

static json_t *series(const struct metric_def *m, const char *node_id)
{
    return json_pack("{s:s, s:s, s:s?, s:[]}", "name", m->name, "unit", m->unit, "node_id", node_id,
                     "points");
}

enum db_status store_metric_query(struct db_conn *conn, struct store_metric_query *q, json_t **out,
                                  char *err, size_t errsize)
{
    char range[16], period[16], start[24], end[24], metric[16];
    const char *rp[4] = {q->cluster_id, q->start, q->end, range};
    enum db_status st;

    snprintf(range, sizeof(range), "%d", q->default_range_s);
    PGresult *res = db_query(conn, &resolve_range, 4, rp, &st);
    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    long long s = atoll(PQgetvalue(res, 0, 0)), e = atoll(PQgetvalue(res, 0, 1));
    PQclear(res);
    if (e <= s) {
        snprintf(err, errsize, "must be after start");
        q->bad_field = "end";
        return DB_NOT_FOUND;
    }
    long long points = (e - s + q->period_s - 1) / q->period_s;
    if (points > q->max_points) {
        snprintf(err, errsize,
                 "%lld points per series from start, end and period; at most %d: use a longer "
                 "period or a shorter range",
                 points, q->max_points);
        q->bad_field = "period";
        return DB_NOT_FOUND;
    }
    snprintf(start, sizeof(start), "%lld", s);
    snprintf(end, sizeof(end), "%lld", e);
    snprintf(period, sizeof(period), "%lld", q->period_s);
    json_t *all = json_array();
    for (int k = 0; k < q->nmetrics && st == DB_OK; k++) {
        const struct metric_def *m = &metric_catalog[q->metrics[k]];
        snprintf(metric, sizeof(metric), "%d", q->metrics[k] + 1); /* SQL arrays count from 1 */
        const char *ap[7] = {
            q->cluster_id, start, end, period, q->node_id, metric, q->by_node ? "true" : "false"};
        if ((res = db_query(conn, &aggregate, 7, ap, &st)) == NULL)
            break;
        json_t *cur = NULL;
        const char *cur_node = NULL;
        if (!q->by_node) {
            cur = series(m, q->node_id);
            json_array_append_new(all, cur);
        }
        for (int r = 0; r < PQntuples(res); r++) {
            const char *node = PQgetvalue(res, r, 1);
            if (q->by_node && (cur_node == NULL || strcmp(cur_node, node) != 0)) {
                cur = series(m, node);
                json_array_append_new(all, cur);
                cur_node = node;
            }
            char *ts = iso(atoll(PQgetvalue(res, r, 0)));
            double v = strtod(PQgetvalue(res, r, 2 + q->stat), NULL);
            json_array_append_new(json_object_get(cur, "points"),
                                  json_pack("{s:s, s:f}", "timestamp", ts, "value", v));
            free(ts);
        }
        PQclear(res);
    }
    if (st != DB_OK) {
        json_decref(all);
        return st;
    }
    char *ts = iso(s), *te = iso(e);
    static const char *const stats[] = {"Average",     "Minimum", "Maximum", "Sum",
                                        "SampleCount", "p50",     "p90",     "p99"};
    *out =
        json_pack("{s:s, s:s, s:s, s:I, s:s, s:o}", "cluster_id", q->cluster_id, "start", ts, "end",
                  te, "period", (json_int_t)q->period_s, "stat", stats[q->stat], "series", all);
    free(ts);
    free(te);
    return DB_OK;
}
