/* api_recommendations.c -- GET /v1/clusters/{id}/recommendations: whether
 * a cluster's shape fits what it held and did over its last days, or it
 * should scale up, down, out or in (rightsize.h decides). Here: each node's
 * figures read from the metric store, what applying the target takes (what
 * PATCH answers, changes.h), and for a hot shard the live hot-slot advice
 * of GET /v1/clusters/{id}/slot-stats. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "changes.h"
#include "engine_config.h"
#include "metrics.h"
#include "rightsize.h"
#include "timeutil.h"
#include "xalloc.h"

#define DAY_S 86400

/* How a figure's points, over the window, become one value. */
enum fold_how {
    FOLD_MAX,     /* the largest */
    FOLD_SUM,     /* their sum */
    FOLD_COUNT,   /* their sum, as a count of samples */
    FOLD_P99,     /* their 99th percentile */
    FOLD_RATE_MAX /* the largest, per second of its period */
};

/* Each figure of struct rightsize_node: the metric and statistic queried,
 * per node, in periods of period_s, and how its points fold into the field
 * at offset (a double; a long long for FOLD_COUNT). */
struct figure {
    const char *metric;
    enum store_metric_stat stat;
    int period_s;
    enum fold_how how;
    size_t offset;
};

#define FIELD(f) offsetof(struct rightsize_node, f)
static const struct figure figures[] = {
    {"BytesUsedForCache", STORE_STAT_SAMPLE_COUNT, DAY_S, FOLD_COUNT, FIELD(memory_samples)},
    {"EngineCPUUtilization", STORE_STAT_SAMPLE_COUNT, DAY_S, FOLD_COUNT, FIELD(cpu_samples)},
    {"BytesUsedForCache", STORE_STAT_MAXIMUM, DAY_S, FOLD_MAX, FIELD(bytes_peak)},
    {"DatabaseMemoryUsagePercentage", STORE_STAT_MAXIMUM, DAY_S, FOLD_MAX,
     FIELD(memory_percent_peak)},
    {"EngineCPUUtilization", STORE_STAT_AVERAGE, RIGHTSIZE_CPU_PERIOD_S, FOLD_P99, FIELD(cpu_p99)},
    {"Evictions", STORE_STAT_SUM, DAY_S, FOLD_SUM, FIELD(evictions)},
    {"CacheHits", STORE_STAT_SUM, DAY_S, FOLD_SUM, FIELD(hits)},
    {"CacheMisses", STORE_STAT_SUM, DAY_S, FOLD_SUM, FIELD(misses)},
    {"GetTypeCmds", STORE_STAT_SUM, DAY_S, FOLD_SUM, FIELD(gets)},
    {"SetTypeCmds", STORE_STAT_SUM, DAY_S, FOLD_SUM, FIELD(sets)},
    {"CurrConnections", STORE_STAT_MAXIMUM, DAY_S, FOLD_MAX, FIELD(connections_peak)},
    {"KeyBasedCmds", STORE_STAT_SUM, RIGHTSIZE_CPU_PERIOD_S, FOLD_RATE_MAX,
     FIELD(requests_per_s_peak)},
};
#define NFIGURES (sizeof(figures) / sizeof(figures[0]))

/* What one request reads from the database. */
struct gather {
    const char *id;
    long long start, end; /* the window, epoch seconds */
    json_t *cluster;      /* the resource, as GET /v1/clusters/{id} has it */
    json_t *types;        /* the node type catalog */
    json_t *series[NFIGURES];
};

static void gather_clear(struct gather *g)
{
    json_decref(g->cluster);
    json_decref(g->types);
    for (size_t i = 0; i < NFIGURES; i++)
        json_decref(g->series[i]);
    g->cluster = g->types = NULL;
    memset(g->series, 0, sizeof(g->series));
}

/* Every node type, in catalog order, into g->types. */
static enum db_status read_types(struct db_conn *conn, struct gather *g)
{
    struct page page = {.size = PAGE_SIZE_MAX};
    char next[PAGE_KEY_MAX];

    g->types = json_array();
    do {
        char *items = NULL;
        enum db_status st = store_node_types_list(conn, &page, &items, next);
        if (st != DB_OK)
            return st;
        json_t *some = json_loads(items, 0, NULL);
        free(items);
        json_array_extend(g->types, some);
        json_decref(some);
        page.has_after = next[0] != '\0';
        snprintf(page.after, sizeof(page.after), "%s", next);
    } while (page.has_after);
    return DB_OK;
}

/* One figure of every node over the window: a series per node. */
static enum db_status read_figure(struct db_conn *conn, struct gather *g, size_t i)
{
    const struct figure *f = &figures[i];
    char start[24], end[24];
    int metric = metric_index(f->metric);
    struct problem refused = {0};

    snprintf(start, sizeof(start), "%lld", g->start);
    snprintf(end, sizeof(end), "%lld", g->end);
    struct store_metric_query q = {.cluster_id = g->id,
                                   .start = start,
                                   .end = end,
                                   .period_s = f->period_s,
                                   .stat = f->stat,
                                   .by_node = true,
                                   .columns = true,
                                   .metrics = &metric,
                                   .nmetrics = 1,
                                   .max_points = (int)((g->end - g->start) / f->period_s) + 2};
    enum db_status st = store_metric_query(conn, &q, &g->series[i], &refused);
    problem_clear(&refused); /* the window is always one the store answers */
    return st;
}

static enum db_status gather_fn(struct db_conn *conn, void *arg)
{
    struct gather *g = arg;
    char *text = NULL;

    gather_clear(g);
    enum db_status st = store_cluster_get(conn, g->id, false, &text);
    if (st != DB_OK)
        return st;
    g->cluster = json_loads(text, 0, NULL);
    free(text);
    if (g->cluster == NULL)
        return DB_ERROR;
    if ((st = read_types(conn, g)) != DB_OK)
        return st;
    for (size_t i = 0; i < NFIGURES && st == DB_OK; i++)
        st = read_figure(conn, g, i);
    return st;
}

/* ---- from the documents to rightsize's input ---------------------------------------- */

/* Set figure f of r to v (NAN: none). */
static void set_figure(struct rightsize_node *r, const struct figure *f, double v)
{
    if (f->how == FOLD_COUNT) {
        long long n = isnan(v) ? 0 : (long long)v;
        memcpy((char *)r + f->offset, &n, sizeof(n));
    } else {
        memcpy((char *)r + f->offset, &v, sizeof(v));
    }
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct rightsize_node *)a)->id, ((const struct rightsize_node *)b)->id);
}

/* The cluster's nodes, sorted by id, with no figures yet; *n of them. */
static struct rightsize_node *cluster_nodes(const json_t *shards, size_t *n)
{
    size_t s, k, count = 0;
    json_t *shard, *node;
    json_array_foreach (shards, s, shard) {
        count += json_array_size(json_object_get(shard, "nodes"));
    }
    struct rightsize_node *out = xcalloc(count + 1, sizeof(*out));
    *n = 0;
    json_array_foreach (shards, s, shard) {
        json_array_foreach (json_object_get(shard, "nodes"), k, node) {
            const char *role = json_string_value(json_object_get(node, "role"));
            struct rightsize_node *r = &out[(*n)++];
            *r = (struct rightsize_node){
                .id = json_string_value(json_object_get(node, "id")),
                .shard = (int)s,
                .primary = role != NULL && strcmp(role, "primary") == 0,
            };
            for (size_t f = 0; f < NFIGURES; f++)
                set_figure(r, &figures[f], NAN);
        }
    }
    qsort(out, *n, sizeof(*out), by_id);
    return out;
}

/* Fold one node's series of figure f into r. */
static void fold_series(const struct figure *f, const json_t *values, struct rightsize_node *r)
{
    size_t n = json_array_size(values), i;
    double *all = xcalloc(n + 1, sizeof(*all)), acc = NAN;
    json_t *v;

    json_array_foreach (values, i, v) {
        double d = json_number_value(v);
        all[i] = d;
        if (f->how == FOLD_MAX || f->how == FOLD_RATE_MAX)
            acc = isnan(acc) || d > acc ? d : acc;
        else
            acc = (isnan(acc) ? 0 : acc) + d;
    }
    if (f->how == FOLD_P99)
        acc = rightsize_percentile(all, n, 0.99);
    else if (f->how == FOLD_RATE_MAX && !isnan(acc))
        acc /= f->period_s;
    free(all);
    set_figure(r, f, acc);
}

/* Put each figure's series into the nodes they are of (nodes of the window
 * no longer in the cluster are left out). */
static void fold_figures(const struct gather *g, struct rightsize_node *nodes, size_t n)
{
    for (size_t f = 0; f < NFIGURES; f++) {
        size_t i;
        json_t *s;
        json_array_foreach (json_object_get(g->series[f], "series"), i, s) {
            struct rightsize_node key = {.id = json_string_value(json_object_get(s, "node_id"))};
            struct rightsize_node *r =
                key.id != NULL ? bsearch(&key, nodes, n, sizeof(*nodes), by_id) : NULL;
            if (r != NULL)
                fold_series(&figures[f], json_object_get(s, "values"), r);
        }
    }
}

/* The engines' reserved-memory-percent: the cluster's parameter, else the
 * managed default. */
static int reserved_memory_percent(const json_t *cluster)
{
    const struct engine_config_managed *m = engine_config_managed_find("reserved-memory-percent");
    const char *v =
        json_string_value(json_object_get(json_object_get(cluster, "parameters"), m->param));
    return atoi(v != NULL ? v : m->fallback);
}

/* ---- what the answer adds --------------------------------------------------------- */

/* What applying the target's change takes: the request, and what this
 * cairnd answers it with now. */
static json_t *apply_json(const char *id, const json_t *change)
{
    json_t *fields = json_array(), *value;
    const char *name;
    struct change_plan plan;
    struct problem p = {0};

    json_object_foreach ((json_t *)change, name, value) {
        json_array_append_new(fields, json_string(name));
    }
    bool accepted = change_plan(fields, false, &plan, &p);
    json_decref(fields);
    json_t *out = json_pack("{s:{s:s, s:s+, s:O}, s:b}", "request", "method", "PATCH", "path",
                            "/v1/clusters/", id, "body", change, "accepted_now", accepted);
    if (!accepted) {
        const struct problem_info *info = problem_info(p.code);
        json_object_set_new(out, "refusal",
                            json_pack("{s:i, s:s, s:s}", "status", info->status, "code", info->code,
                                      "detail", p.detail));
        json_object_set_new(out, "note",
                            json_string("advice only: PATCH refuses this change as the cluster "
                                        "stands (see refusal); a new cluster of the target "
                                        "shape, filled from this one, gets there meanwhile"));
    }
    problem_clear(&p);
    return out;
}

/* Give each hot shard of out its live slot figures and advice, or say why
 * there are none. */
static void add_slot_advice(struct app *app, const char *id, json_t *out)
{
    json_t *hot = json_object_get(out, "hot_shards"), *stats = NULL, *h, *s;
    struct problem p = {0};
    size_t i, k;

    if (json_array_size(hot) == 0)
        return;
    bool read = api_slot_stats_read(app, id, &stats, &p);
    json_array_foreach (hot, i, h) {
        json_t *advice = json_null();
        json_array_foreach (json_object_get(stats, "shards"), k, s) {
            if (json_equal(json_object_get(s, "id"), json_object_get(h, "shard")))
                advice = json_pack(
                    "{s:O, s:O, s:O, s:O}", "load_measure", json_object_get(stats, "load_measure"),
                    "hot", json_object_get(s, "hot"), "hottest", json_object_get(s, "hottest"),
                    "advice", json_object_get(s, "advice"));
        }
        json_object_set_new(h, "slots", advice);
        if (!read)
            json_object_set_new(h, "slots_unavailable", json_string(p.detail));
    }
    json_decref(stats);
    problem_clear(&p);
}

static json_t *window_json(int days, long long start, long long end)
{
    char s[TIME_TEXT_SIZE], e[TIME_TEXT_SIZE];
    return json_pack("{s:i, s:s, s:s}", "days", days, "start",
                     time_format((int64_t)start * 1000000, TIME_SECONDS, s), "end",
                     time_format((int64_t)end * 1000000, TIME_SECONDS, e));
}

/* ---- the handler ------------------------------------------------------------------- */

/* The recommendation from what g read (NULL: the spec's node type is not
 * in the catalog). */
static json_t *recommend(const struct gather *g, int days)
{
    const json_t *c = g->cluster, *shards = json_object_get(c, "shards");
    const char *engine = json_string_value(json_object_get(c, "engine"));
    int num_shards = (int)json_integer_value(json_object_get(c, "num_shards"));
    const char **names = xcalloc((size_t)num_shards + 1, sizeof(*names));
    char(*fallback)[16] = xcalloc((size_t)num_shards + 1, sizeof(*fallback));
    size_t ntypes = json_array_size(g->types), nnodes;

    for (int s = 0; s < num_shards; s++) {
        names[s] = json_string_value(json_object_get(json_array_get(shards, (size_t)s), "id"));
        if (names[s] == NULL) { /* the shard is not placed yet */
            snprintf(fallback[s], sizeof(fallback[s]), "%04d", s + 1);
            names[s] = fallback[s];
        }
    }
    struct sizing_node_type *types = api_node_types(g->types, engine != NULL ? engine : "");
    struct rightsize_node *nodes = cluster_nodes(shards, &nnodes);
    fold_figures(g, nodes, nnodes);
    const char *mode = json_string_value(json_object_get(c, "cluster_mode"));
    struct rightsize_cluster rc = {
        .node_type = json_string_value(json_object_get(c, "node_type")),
        .num_shards = num_shards,
        .shard_names = names,
        .replicas_per_shard = (int)json_integer_value(json_object_get(c, "replicas_per_shard")),
        .cluster_mode = mode == NULL || strcmp(mode, "disabled") != 0,
        .reserved_memory_percent = reserved_memory_percent(c),
        .days = days,
    };
    json_t *out =
        rc.node_type != NULL ? rightsize_recommend(&rc, nodes, nnodes, types, ntypes) : NULL;
    free(nodes);
    free(types);
    free(fallback);
    free(names);
    return out;
}

void api_clusters_recommendations(struct http_request *req)
{
    const char *id = http_param(req, "id");
    long long days;

    if (!api_query_int(req, "days", 1, RIGHTSIZE_DAYS_MAX, RIGHTSIZE_DAYS_DEFAULT, &days))
        return;
    struct gather g = {.id = id, .end = (long long)time(NULL)};
    g.start = g.end - days * DAY_S;
    enum db_status st = db_run(req->app->db, gather_fn, &g);
    if (st == DB_NOT_FOUND) {
        gather_clear(&g);
        http_reply_problem(req, PROBLEM_CLUSTER_NOT_FOUND, NULL, "cluster %s does not exist", id);
        return;
    }
    if (st != DB_OK) {
        gather_clear(&g);
        http_reply_db_error(req, st);
        return;
    }
    json_t *rec = recommend(&g, (int)days);
    gather_clear(&g);
    if (rec == NULL) {
        http_reply_problem(req, PROBLEM_INTERNAL_ERROR, NULL,
                           "the node type of cluster %s is not in the catalog", id);
        return;
    }
    json_t *out =
        json_pack("{s:s, s:o}", "cluster_id", id, "window", window_json((int)days, g.start, g.end));
    json_object_update(out, rec);
    json_decref(rec);
    const json_t *change = json_object_get(json_object_get(out, "target"), "change");
    if (change != NULL)
        json_object_set_new(out, "apply", apply_json(id, change));
    add_slot_advice(req->app, id, out);
    http_reply_json(req, 200, out);
}
