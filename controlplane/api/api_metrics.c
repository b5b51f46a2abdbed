/* api_metrics.c -- metrics: agents push period samples (POST
 * /v1/agent/metrics), users read the catalog (GET /v1/metrics/catalog) and
 * query series (GET /v1/clusters/{id}/metrics).
 *
 * A sample is one node's values for one period, stored as one row whose
 * array holds every catalog metric by position (engine/metrics.h); names
 * the catalog does not know (a newer agent) are ignored. Queries aggregate
 * rows into the requested period: Average, Minimum, Maximum, Sum and
 * SampleCount over every value in it (across the cluster's nodes, or one
 * node's), and p50/p90/p99 over the same values. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cluster_spec.h"
#include "jspec.h"
#include "log.h"
#include "metrics.h"
#include "monitor.h"
#include "strbuf.h"
#include "timeutil.h"
#include "xalloc.h"

#define MAX_POINTS      1440 /* per series, as CloudWatch */
#define MAX_NAMES       32   /* metrics per query */
#define DEFAULT_RANGE_S (3 * 3600)
#define MAX_PERIOD_S    86400
#define MAX_SAMPLES     5000 /* per push */

/* ---- POST /v1/agent/metrics ---------------------------------------------- */

static const struct jspec_field sample_fields[] = {
    {.name = "node_id", .type = JSPEC_STRING, .required = true, .max_len = 36},
    {.name = "at",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 0,
     .max = 32503680000.0},
    {.name = "values", .type = JSPEC_OBJECT, .required = true, .fields = cspec_any_object},
    {0},
};
static const struct jspec_field sample_item = {.type = JSPEC_OBJECT, .fields = sample_fields};

const struct jspec_field api_agent_metrics_spec[] = {
    {.name = "period_s",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 1,
     .max = 3600},
    {.name = "dropped", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e12},
    {.name = "samples",
     .type = JSPEC_ARRAY,
     .required = true,
     .max_len = MAX_SAMPLES,
     .items = &sample_item},
    {0},
};

/* The samples as rows for the store: [{node_id, at, vals: [...]}], vals
 * by catalog position with null where a sample has no value. */
static json_t *sample_rows(const json_t *samples, long long *first_at, long long *last_at)
{
    json_t *rows = json_array(), *s, *v;
    const char *name;
    size_t i;

    *first_at = -1;
    *last_at = -1;
    json_array_foreach ((json_t *)samples, i, s) {
        json_t *vals = json_array();
        for (size_t k = 0; k < metric_count; k++)
            json_array_append_new(vals, json_null());
        json_object_foreach (json_object_get(s, "values"), name, v) {
            int k = metric_index(name);
            double d = json_number_value(v);
            if (k >= 0 && json_is_number(v) && isfinite(d))
                json_array_set_new(vals, (size_t)k, json_real(d));
        }
        long long at = json_integer_value(json_object_get(s, "at"));
        if (*first_at < 0 || at < *first_at)
            *first_at = at;
        if (at > *last_at)
            *last_at = at;
        json_array_append_new(rows,
                              json_pack("{s:O, s:I, s:o}", "node_id", json_object_get(s, "node_id"),
                                        "at", (json_int_t)at, "vals", vals));
    }
    return rows;
}

struct push {
    const char *host_id;
    char *rows;
    char period[16], first[24], last[24];
    long long stored;
};

static enum db_status push_fn(struct db_conn *conn, void *arg)
{
    struct push *p = arg;
    enum db_status st = store_metric_partitions(conn, p->first, p->last);
    if (st != DB_OK)
        return st;
    return store_metric_samples_add(conn, p->host_id, p->period, p->rows, p->first, p->last,
                                    &p->stored);
}

void api_agent_metrics(struct http_request *req)
{
    const json_t *body = req->json;
    struct push p = {.host_id = req->who.host_id};
    long long first, last;
    json_t *rows = sample_rows(json_object_get(body, "samples"), &first, &last);

    if (json_array_size(rows) == 0) {
        json_decref(rows);
        http_reply_empty(req, 204);
        return;
    }
    snprintf(p.period, sizeof(p.period), "%lld",
             (long long)json_integer_value(json_object_get(body, "period_s")));
    snprintf(p.first, sizeof(p.first), "%lld", first);
    snprintf(p.last, sizeof(p.last), "%lld", last);
    p.rows = json_dumps(rows, JSON_COMPACT);
    json_decref(rows);
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, push_fn, &p);
    free(p.rows);
    long long dropped = json_integer_value(json_object_get(body, "dropped"));
    if (dropped > 0)
        log_warn("agent dropped metric samples", "host_id=%s dropped=%lld", p.host_id, dropped);
    if (st != DB_OK) {
        http_reply_db_error(req, st);
        return;
    }
    http_reply_empty(req, 204);
}

/* ---- GET /v1/metrics/catalog --------------------------------------------- */

void api_metrics_catalog(struct http_request *req)
{
    static const char *const kinds[] = {"gauge", "counter"};
    static const char *const sources[] = {"host", "engine"};
    json_t *items = json_array();

    for (size_t i = 0; i < metric_count; i++) {
        const struct metric_def *m = &metric_catalog[i];
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", m->name, "unit",
                                               m->unit, "kind", kinds[m->kind], "source",
                                               sources[m->source], "description", m->description));
    }
    http_reply_json(req, 200,
                    json_pack("{s:s, s:o}", "namespace", "Cairn/Cache", "metrics", items));
}

/* ---- GET /v1/clusters/{id}/metrics ----------------------------------------- */

static int stat_index(const char *s)
{
    for (size_t i = 0; store_metric_stats[i] != NULL; i++) {
        if (strcmp(store_metric_stats[i], s) == 0)
            return (int)i;
    }
    return -1;
}

/* Whether s is a time the API takes: RFC 3339, or seconds since the epoch. */
static bool is_time(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return time_is_rfc3339(s) || (n > 0 && n <= 12 && s[n] == '\0');
}

/* Split "A,B" into names known to the catalog; false with errors when one
 * is unknown or there are too many. */
static bool parse_names(const char *text, int *idx, int *n, json_t *errors)
{
    char *copy = xstrdup(text), *save = NULL;
    bool ok = true;

    *n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int k = metric_index(tok);
        if (k < 0) {
            json_array_append_new(errors, json_pack("{s:s, s:s}", "field", "names", "message",
                                                    "names a metric the catalog does not have (GET "
                                                    "/v1/metrics/catalog lists them)"));
            ok = false;
            break;
        }
        if (*n == MAX_NAMES) {
            json_array_append_new(errors, json_pack("{s:s, s:s}", "field", "names", "message",
                                                    "at most 32 metrics per query"));
            ok = false;
            break;
        }
        idx[(*n)++] = k;
    }
    if (ok && *n == 0) {
        json_array_append_new(errors, json_pack("{s:s, s:s}", "field", "names", "message",
                                                "is required: metric names, comma-separated"));
        ok = false;
    }
    free(copy);
    return ok;
}

/* Answer q with a pooled connection, within the API's limits; p as for
 * store_metric_query(). */
static enum db_status run_query(struct http_request *req, struct store_metric_query *q,
                                json_t **out, struct problem *p)
{
    struct db_conn *conn;
    enum db_status st = db_acquire(req->app->db, &conn);

    q->default_range_s = DEFAULT_RANGE_S;
    q->max_points = MAX_POINTS;
    if (st != DB_OK)
        return st;
    st = store_metric_query(conn, q, out, p);
    db_release(req->app->db, conn);
    return st;
}

void api_clusters_metrics(struct http_request *req)
{
    const char *id = http_param(req, "id");
    const char *names = http_query(req, "names");
    const char *start = http_query(req, "start"), *end = http_query(req, "end");
    const char *period_text = http_query(req, "period");
    const char *stat = http_query(req, "stat");
    const char *node_id = http_query(req, "node_id");
    const char *group_by = http_query(req, "group_by");
    json_t *errors = json_array();
    int idx[MAX_NAMES], nnames = 0, si = stat_index(stat != NULL ? stat : "Average");
    long long period = 60;

    parse_names(names != NULL ? names : "", idx, &nnames, errors);
    if (period_text != NULL) {
        char *e;
        period = strtoll(period_text, &e, 10);
        if (*period_text == '\0' || *e != '\0' || period < 1 || period > MAX_PERIOD_S)
            jspec_error(errors, "period", "must be whole seconds from 1 to 86400");
    }
    if (si < 0)
        jspec_error(errors, "stat",
                    "must be one of Average, Minimum, Maximum, Sum, SampleCount, p50, p90, p99");
    if (start != NULL && !is_time(start))
        jspec_error(errors, "start", "must be an RFC 3339 time or seconds since the epoch");
    if (end != NULL && !is_time(end))
        jspec_error(errors, "end", "must be an RFC 3339 time or seconds since the epoch");
    if (group_by != NULL && strcmp(group_by, "node") != 0)
        jspec_error(errors, "group_by", "must be node");
    if (node_id != NULL && !page_is_uuid(node_id))
        jspec_error(errors, "node_id", "must be a node id (UUID)");
    if (json_array_size(errors) > 0) {
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors,
                           "the query cannot be answered as asked");
        return;
    }
    json_decref(errors);

    struct store_metric_query q = {.cluster_id = id,
                                   .start = start,
                                   .end = end,
                                   .period_s = period,
                                   .stat = si,
                                   .node_id = node_id,
                                   .by_node = group_by != NULL,
                                   .metrics = idx,
                                   .nmetrics = nnames};
    json_t *out = NULL;
    struct problem p = {0};
    enum db_status st = run_query(req, &q, &out, &p);
    if (st == DB_REFUSED) {
        problem_set(&p, PROBLEM_INVALID_QUERY_PARAMETER, "the query cannot be answered as asked");
        http_reply_error(req, &p);
    } else if (st == DB_NOT_FOUND) {
        http_reply_problem(req, PROBLEM_CLUSTER_NOT_FOUND, NULL, "cluster %s does not exist", id);
    } else if (st != DB_OK) {
        http_reply_db_error(req, st);
    } else {
        http_reply_json(req, 200, out);
    }
}

/* ---- POST /v1/metrics/query ------------------------------------------------ */

#define MAX_QUERIES 20

static bool check_name(const json_t *value, char *msg, size_t msgsize)
{
    if (metric_index(json_string_value(value)) >= 0)
        return true;
    snprintf(msg, msgsize, "is not a metric of the catalog (GET /v1/metrics/catalog)");
    return false;
}

static bool check_node(const json_t *value, char *msg, size_t msgsize)
{
    if (page_is_uuid(json_string_value(value)))
        return true;
    snprintf(msg, msgsize, "must be a node id (UUID)");
    return false;
}

static bool check_time(const json_t *value, char *msg, size_t msgsize)
{
    if (is_time(json_string_value(value)))
        return true;
    snprintf(msg, msgsize, "must be an RFC 3339 time or seconds since the epoch");
    return false;
}

static const char *const by_node[] = {"node", NULL};
static const char *const formats[] = {"points", "columns", NULL};

static const struct jspec_field query_fields[] = {
    {.name = "id", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 64},
    {.name = "cluster_id", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 64},
    {.name = "name", .type = JSPEC_STRING, .required = true, .check = check_name},
    {.name = "stat", .type = JSPEC_STRING, .one_of = store_metric_stats},
    {.name = "node_id", .type = JSPEC_STRING, .nullable = true, .check = check_node},
    {.name = "group_by", .type = JSPEC_STRING, .nullable = true, .one_of = by_node},
    {0},
};
static const struct jspec_field query_item = {.type = JSPEC_OBJECT, .fields = query_fields};

const struct jspec_field api_metrics_query_spec[] = {
    {.name = "start", .type = JSPEC_STRING, .check = check_time},
    {.name = "end", .type = JSPEC_STRING, .check = check_time},
    {.name = "period", .type = JSPEC_INTEGER, .has_range = true, .min = 1, .max = MAX_PERIOD_S},
    {.name = "format", .type = JSPEC_STRING, .one_of = formats},
    {.name = "queries",
     .type = JSPEC_ARRAY,
     .required = true,
     .min_len = 1,
     .max_len = MAX_QUERIES,
     .items = &query_item},
    {0},
};

/* Several series in one call (a dashboard): each query names one metric of
 * one cluster, over the body's shared range, period and format. A query whose
 * cluster does not exist gets an error in its result; a range that cannot
 * be answered refuses the whole request. */
void api_metrics_query(struct http_request *req)
{
    const json_t *body = req->json;
    const json_t *period = json_object_get(body, "period");
    const char *format = json_string_value(json_object_get(body, "format"));
    json_t *results = json_array(), *item, *out = NULL;
    size_t i;

    json_array_foreach (json_object_get(body, "queries"), i, item) {
        const char *stat = json_string_value(json_object_get(item, "stat"));
        int metric = metric_index(json_string_value(json_object_get(item, "name")));
        struct store_metric_query q = {
            .cluster_id = json_string_value(json_object_get(item, "cluster_id")),
            .start = json_string_value(json_object_get(body, "start")),
            .end = json_string_value(json_object_get(body, "end")),
            .period_s = period != NULL ? json_integer_value(period) : 60,
            .stat = stat_index(stat != NULL ? stat : "Average"),
            .node_id = json_string_value(json_object_get(item, "node_id")),
            .by_node = json_is_string(json_object_get(item, "group_by")),
            .columns = format != NULL && strcmp(format, "columns") == 0,
            .metrics = &metric,
            .nmetrics = 1};
        struct problem p = {0};
        enum db_status st = run_query(req, &q, &out, &p);
        const char *id = json_string_value(json_object_get(item, "id"));
        if (st == DB_REFUSED) {
            problem_set(&p, PROBLEM_VALIDATION_FAILED, "the queries cannot be answered as asked");
            http_reply_error(req, &p);
            json_decref(results);
            return;
        }
        if (st == DB_NOT_FOUND) {
            char message[160];
            snprintf(message, sizeof(message), "cluster %s does not exist", q.cluster_id);
            json_array_append_new(results,
                                  json_pack("{s:s, s:{s:s, s:s}}", "id", id, "error", "code",
                                            "CLUSTER_NOT_FOUND", "message", message));
            continue;
        }
        if (st != DB_OK) {
            json_decref(results);
            http_reply_db_error(req, st);
            return;
        }
        json_object_set_new(out, "id", json_string(id));
        json_array_append_new(results, out);
    }
    http_reply_json(req, 200, json_pack("{s:o}", "results", results));
}

/* ---- GET /metrics (Prometheus) ---------------------------------------------- */

/* "CPUUtilization" -> "cpu_utilization", "GetTypeCmdsLatency" ->
 * "get_type_cmds_latency". */
static void snake(const char *name, char *out, size_t outsize)
{
    size_t o = 0;
    for (size_t i = 0; name[i] != '\0' && o + 2 < outsize; i++) {
        char c = name[i];
        bool upper = c >= 'A' && c <= 'Z';
        if (upper && i > 0) {
            char p = name[i - 1], n = name[i + 1];
            bool p_upper = p >= 'A' && p <= 'Z';
            if (!p_upper || (n >= 'a' && n <= 'z'))
                out[o++] = '_';
        }
        out[o++] = upper ? (char)(c - 'A' + 'a') : c;
    }
    out[o] = '\0';
}

static void prom_family(struct strbuf *p, const char *name, const char *type, const char *help)
{
    strbuf_printf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A gauge family of the rows count() counts, labelled l1 (and l2 when not
 * NULL). */
static enum db_status prom_counts(struct db_conn *conn, struct strbuf *p, const char *family,
                                  const char *help,
                                  enum db_status (*count)(struct db_conn *, struct store_counts *),
                                  const char *l1, const char *l2)
{
    struct store_counts counts;
    enum db_status st = count(conn, &counts);
    if (st != DB_OK)
        return st;
    prom_family(p, family, "gauge", help);
    for (size_t r = 0; r < counts.n; r++) {
        const struct store_count *c = &counts.items[r];
        if (l2 != NULL)
            strbuf_printf(p, "%s{%s=\"%s\",%s=\"%s\"} %lld\n", family, l1, c->labels[0], l2,
                          c->labels[1], c->n);
        else
            strbuf_printf(p, "%s{%s=\"%s\"} %lld\n", family, l1, c->labels[0], c->n);
    }
    free(counts.items);
    return DB_OK;
}

static enum db_status prom_nodes(struct db_conn *conn, struct strbuf *p)
{
    struct store_latest_samples latest;
    enum db_status st = store_metric_latest(conn, &latest);
    if (st != DB_OK)
        return st;
    for (size_t k = 0; k < metric_count; k++) {
        const struct metric_def *m = &metric_catalog[k];
        char name[96], family[128], help[320];
        snake(m->name, name, sizeof(name));
        snprintf(family, sizeof(family), "cairn_cache_%s", name);
        snprintf(help, sizeof(help), "%s (%s%s)", m->description, m->unit,
                 m->kind == METRIC_COUNTER ? ", in the node's last sample period" : "");
        prom_family(p, family, "gauge", help);
        for (size_t r = 0; r < latest.n; r++) {
            const struct store_latest_sample *s = &latest.items[r];
            if (s->vals[k] == NULL)
                continue;
            strbuf_printf(p,
                          "%s{cluster_id=\"%s\",node_id=\"%s\",shard_id=\"%s\",role=\"%s\"} %s\n",
                          family, s->cluster_id, s->node_id, s->shard, s->role, s->vals[k]);
        }
    }
    store_metric_latest_free(&latest);
    return DB_OK;
}

void api_prometheus(struct http_request *req)
{
    static const char *const classes[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    struct strbuf p;
    strbuf_init(&p, 8192);
    struct http_stats hs;
    struct db_conn *conn;
    enum db_status st;

    http_stats_read(&hs);
    prom_family(&p, "cairn_http_requests_total", "counter",
                "Requests this cairnd answered, by status class.");
    for (int i = 1; i < 6; i++)
        strbuf_printf(&p, "cairn_http_requests_total{code=\"%s\"} %llu\n", classes[i],
                      hs.requests_by_class[i]);
    prom_family(&p, "cairn_http_request_seconds_total", "counter",
                "Seconds this cairnd spent answering requests.");
    strbuf_printf(&p, "cairn_http_request_seconds_total %.6f\n", hs.request_seconds_total);
    prom_family(&p, "cairn_agents_behind_seconds", "gauge",
                "How long the oldest agent sync waiting in this cairnd has waited to be heard.");
    strbuf_printf(&p, "cairn_agents_behind_seconds %.3f\n",
                  (double)http_agents_behind_us(req->app->http) / 1e6);
    prom_family(&p, "cairn_host_monitor_hearing", "gauge",
                "1 while this cairnd can hear its agents' heartbeats (its database in reach, its "
                "syncs on time); 0 while it judges no host lost.");
    strbuf_printf(&p, "cairn_host_monitor_hearing %d\n", monitor_hearing(req->app->monitor));
    if ((st = db_acquire(req->app->db, &conn)) == DB_OK) {
        if ((st = prom_counts(conn, &p, "cairn_hosts", "Hosts by status.", store_hosts_by_status,
                              "status", NULL)) == DB_OK &&
            (st = prom_counts(conn, &p, "cairn_clusters", "Clusters by status.",
                              store_clusters_by_status, "status", NULL)) == DB_OK &&
            (st = prom_counts(conn, &p, "cairn_operations", "Operations by kind and status.",
                              store_operations_by_status, "kind", "status")) == DB_OK)
            st = prom_nodes(conn, &p);
        db_release(req->app->db, conn);
    }
    if (st != DB_OK) {
        free(p.p);
        http_reply_db_error(req, st);
        return;
    }
    http_reply_text(req, 200, p.p, "text/plain; version=0.0.4; charset=utf-8");
}
