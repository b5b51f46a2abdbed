/* rightsize.c -- right-sizing a running cluster (rightsize.h). */
#include "rightsize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_spec.h"
#include "sizing.h"
#include "slot_advice.h"
#include "xalloc.h"

#define GIB               (1024.0 * 1024.0 * 1024.0)
#define CPU_LIMIT_PERCENT (SIZING_TARGET_UTILIZATION * 100.0)
/* Prices closer than this (dollars an hour) are one price. */
#define PRICE_EPSILON 1e-9

/* A shard's figures, folded from its nodes'. */
struct shard {
    const char *name;
    long long memory_samples, cpu_samples; /* of its best-covered node */
    double bytes;                          /* the most data a node of it held */
    const char *bytes_node;
    double percent; /* its highest DatabaseMemoryUsagePercentage */
    double cpu;     /* its primary's CPU p99 (any node's when no primary has one) */
    const char *cpu_node;
    double evictions;
    double demand; /* the data it must be able to hold */
};

/* The cluster's figures, and what a recommendation is built from. */
struct ctx {
    const struct rightsize_cluster *c;
    const struct sizing_node_type *cur; /* the current node type */
    const struct sizing_node_type *types;
    size_t ntypes;
    char window[16]; /* "7d" */
    struct shard *shards;
    int busiest_data, busiest_cpu; /* shards with the most demand, CPU */
    double demand_total, evictions, hits, misses, reads, writes, connections, rps;
    bool small; /* a workload burstable nodes may take */
};

/* A shape a cluster may take: one node type, so many shards. */
struct shape {
    const struct sizing_node_type *type;
    int shards;
};

/* The larger of a and b, a NAN counting as smaller than any number. */
static double max_of(double a, double b)
{
    if (isnan(a))
        return b;
    return isnan(b) || a >= b ? a : b;
}

static double zero_if_nan(double v)
{
    return isnan(v) ? 0 : v;
}

/* v as JSON rounded to hundredths, or null for NAN. */
static json_t *number(double v)
{
    return isnan(v) ? json_null() : json_real(round(v * 100.0) / 100.0);
}

/* bytes in the largest binary unit that leaves at least 1, into buf. */
static const char *human_bytes(double bytes, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

double rightsize_data_bytes(const struct sizing_node_type *t, int reserved_memory_percent)
{
    double kept = (100.0 - reserved_memory_percent) / 100.0 / (1.0 - SIZING_RESERVED_FRACTION);
    return floor(sizing_usable_gib(t->memory_gib) * GIB * (kept < 1.0 ? kept : 1.0));
}

/* The engine's maxmemory on a node of type t. */
static double maxmemory_bytes(const struct sizing_node_type *t, int reserved_memory_percent)
{
    return t->memory_gib * GIB * (100.0 - reserved_memory_percent) / 100.0;
}

static int ascending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double rightsize_percentile(double *values, size_t n, double q)
{
    if (n == 0)
        return NAN;
    qsort(values, n, sizeof(*values), ascending);
    double rank = q * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    return values[lo] + (rank - (double)lo) * (values[hi] - values[lo]);
}

static const struct sizing_node_type *find_type(const struct ctx *x, const char *name)
{
    for (size_t i = 0; i < x->ntypes; i++) {
        if (strcmp(x->types[i].name, name) == 0)
            return &x->types[i];
    }
    return NULL;
}

/* ---- the figures ---------------------------------------------------------------- */

/* Fold the nodes' figures into their shards' and the cluster's. */
static void fold(struct ctx *x, const struct rightsize_node *nodes, size_t nnodes)
{
    const struct rightsize_cluster *c = x->c;
    double maxmemory = maxmemory_bytes(x->cur, c->reserved_memory_percent);
    double primary_cpu[CSPEC_SHARDS_MAX];
    const char *primary_node[CSPEC_SHARDS_MAX];

    x->shards = xcalloc((size_t)c->num_shards + 1, sizeof(*x->shards));
    for (int s = 0; s < c->num_shards; s++) {
        x->shards[s] = (struct shard){
            .name = c->shard_names[s], .bytes = NAN, .percent = NAN, .cpu = NAN, .demand = NAN};
        primary_cpu[s] = NAN;
        primary_node[s] = NULL;
    }
    for (size_t i = 0; i < nnodes; i++) {
        const struct rightsize_node *n = &nodes[i];
        if (n->shard < 0 || n->shard >= c->num_shards)
            continue;
        struct shard *sh = &x->shards[n->shard];
        if (n->memory_samples > sh->memory_samples)
            sh->memory_samples = n->memory_samples;
        if (n->cpu_samples > sh->cpu_samples)
            sh->cpu_samples = n->cpu_samples;
        if (!isnan(n->bytes_peak) && (isnan(sh->bytes) || n->bytes_peak > sh->bytes)) {
            sh->bytes = n->bytes_peak;
            sh->bytes_node = n->id;
        }
        sh->percent = max_of(sh->percent, n->memory_percent_peak);
        if (!isnan(n->cpu_p99) && (isnan(sh->cpu) || n->cpu_p99 > sh->cpu)) {
            sh->cpu = n->cpu_p99;
            sh->cpu_node = n->id;
        }
        if (n->primary && !isnan(n->cpu_p99) &&
            (isnan(primary_cpu[n->shard]) || n->cpu_p99 > primary_cpu[n->shard])) {
            primary_cpu[n->shard] = n->cpu_p99;
            primary_node[n->shard] = n->id;
        }
        sh->evictions += zero_if_nan(n->evictions);
        x->hits += zero_if_nan(n->hits);
        x->misses += zero_if_nan(n->misses);
        x->reads += zero_if_nan(n->gets);
        /* A replica applies its primary's writes: only primaries' count. */
        if (n->primary) {
            x->writes += zero_if_nan(n->sets);
            x->rps += zero_if_nan(n->requests_per_s_peak);
        }
        x->connections = max_of(x->connections, n->connections_peak);
    }
    x->busiest_data = x->busiest_cpu = 0;
    for (int s = 0; s < c->num_shards; s++) {
        struct shard *sh = &x->shards[s];
        if (!isnan(primary_cpu[s])) {
            sh->cpu = primary_cpu[s];
            sh->cpu_node = primary_node[s];
        }
        /* Keys were evicted: the data wanted more room than maxmemory. */
        sh->demand = sh->evictions > 0 ? max_of(sh->bytes, maxmemory) : sh->bytes;
        x->demand_total += zero_if_nan(sh->demand);
        x->evictions += sh->evictions;
        if (sh->demand > x->shards[x->busiest_data].demand ||
            isnan(x->shards[x->busiest_data].demand))
            x->busiest_data = s;
        if (sh->cpu > x->shards[x->busiest_cpu].cpu || isnan(x->shards[x->busiest_cpu].cpu))
            x->busiest_cpu = s;
    }
    x->small = x->rps < SIZING_BURSTABLE_MAX_RPS && x->demand_total < SIZING_BURSTABLE_MAX_BYTES;
}

/* What c lacks to be judged: [{shard, metric, samples, needed}]. */
static json_t *missing(const struct ctx *x)
{
    json_t *out = json_array();
    for (int s = 0; s < x->c->num_shards; s++) {
        const struct shard *sh = &x->shards[s];
        if (sh->memory_samples < RIGHTSIZE_MIN_SAMPLES)
            json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:i}", "shard", sh->name,
                                                 "metric", "BytesUsedForCache", "samples",
                                                 (json_int_t)sh->memory_samples, "needed",
                                                 RIGHTSIZE_MIN_SAMPLES));
        if (sh->cpu_samples < RIGHTSIZE_MIN_SAMPLES)
            json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:i}", "shard", sh->name,
                                                 "metric", "EngineCPUUtilization", "samples",
                                                 (json_int_t)sh->cpu_samples, "needed",
                                                 RIGHTSIZE_MIN_SAMPLES));
    }
    return out;
}

static json_t *observed(const struct ctx *x)
{
    json_t *shards = json_array();
    for (int s = 0; s < x->c->num_shards; s++) {
        const struct shard *sh = &x->shards[s];
        json_array_append_new(shards,
                              json_pack("{s:s, s:o, s:o, s:o, s:o, s:I, s:I}", "id", sh->name,
                                        "data_bytes_peak", number(sh->bytes), "memory_percent_peak",
                                        number(sh->percent), "engine_cpu_p99", number(sh->cpu),
                                        "evictions", number(sh->evictions), "memory_samples",
                                        (json_int_t)sh->memory_samples, "cpu_samples",
                                        (json_int_t)sh->cpu_samples));
    }
    double lookups = x->hits + x->misses, commands = x->reads + x->writes, data = NAN;
    for (int s = 0; s < x->c->num_shards; s++) {
        if (!isnan(x->shards[s].bytes))
            data = zero_if_nan(data) + x->shards[s].bytes;
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "data_bytes_peak", number(data),
                     "evictions", number(x->evictions), "cache_hit_percent",
                     number(lookups > 0 ? 100.0 * x->hits / lookups : NAN), "write_percent",
                     number(commands > 0 ? 100.0 * x->writes / commands : NAN), "connections_peak",
                     number(x->connections), "requests_per_second_peak", number(x->rps), "shards",
                     shards);
}

/* ---- shapes ----------------------------------------------------------------------- */

static double shape_price(const struct ctx *x, struct shape s)
{
    return s.type->price_usd_hour * s.shards * (1 + x->c->replicas_per_shard);
}

/* How much more each shard of s carries than one of the current shape. */
static double spread(const struct ctx *x, struct shape s)
{
    return (double)x->c->num_shards / s.shards;
}

/* Whether s holds the data and the CPU seen, on nodes fit for the workload:
 * the test every recommended shape passes. */
static bool holds(const struct ctx *x, struct shape s)
{
    double data = x->shards[x->busiest_data].demand * spread(x, s);
    double cpu = x->shards[x->busiest_cpu].cpu * spread(x, s);
    return !(data > rightsize_data_bytes(s.type, x->c->reserved_memory_percent)) &&
           !(cpu > CPU_LIMIT_PERCENT) && (!s.type->burstable || x->small);
}

static bool cheaper(double a, double b)
{
    return a < b - PRICE_EPSILON;
}

/* Whether a is a better pick than b: cheaper; at one price, more room for
 * data; then fewer nodes to run. */
static bool better(const struct ctx *x, struct shape a, struct shape b)
{
    double pa = shape_price(x, a), pb = shape_price(x, b);
    if (cheaper(pa, pb) || cheaper(pb, pa))
        return pa < pb;
    double ra = rightsize_data_bytes(a.type, x->c->reserved_memory_percent) * a.shards;
    double rb = rightsize_data_bytes(b.type, x->c->reserved_memory_percent) * b.shards;
    if (ra != rb)
        return ra > rb;
    return a.shards < b.shards;
}

/* Whether node type t is of the current one's family, or burstable for a
 * small workload: where a node type change looks first, so that a cluster
 * stays on the generation it was given unless only another one holds it. */
static bool near(const struct ctx *x, const struct sizing_node_type *t)
{
    return strcmp(t->family, x->cur->family) == 0 || (t->burstable && x->small);
}

/* The best shape that holds the cluster and costs less than below (any
 * price when below is INFINITY), changing the node type (one near() the
 * current, or with any_family, any when none near holds it) or, in cluster
 * mode, the number of shards. False when none does. */
static bool best_shape(const struct ctx *x, double below, bool any_family, struct shape *best)
{
    bool found = false;
    for (int any = 0; any <= (int)any_family && !found; any++) {
        for (size_t i = 0; i < x->ntypes; i++) {
            struct shape s = {&x->types[i], x->c->num_shards};
            if ((any || near(x, s.type)) && s.type != x->cur && holds(x, s) &&
                cheaper(shape_price(x, s), below) && (!found || better(x, s, *best))) {
                *best = s;
                found = true;
            }
        }
    }
    /* More shards only ever hold more: the first that holds is the one. */
    for (int k = 1; x->c->cluster_mode && k <= CSPEC_SHARDS_MAX; k++) {
        struct shape s = {x->cur, k};
        if (k == x->c->num_shards || !holds(x, s))
            continue;
        if (cheaper(shape_price(x, s), below) && (!found || better(x, s, *best))) {
            *best = s;
            found = true;
        }
        break;
    }
    return found;
}

/* The statuses a change of shape has, and how a summary says them. */
static const char *const verbs[][2] = {{"scale_up", "Scale up"},
                                       {"scale_down", "Scale down"},
                                       {"scale_out", "Scale out"},
                                       {"scale_in", "Scale in"}};

static const char *verb(const char *status)
{
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        if (strcmp(verbs[i][0], status) == 0)
            return verbs[i][1];
    }
    return status;
}

static const char *direction(const struct ctx *x, struct shape s)
{
    if (s.shards != x->c->num_shards)
        return s.shards > x->c->num_shards ? "scale_out" : "scale_in";
    if (s.type->memory_gib != x->cur->memory_gib)
        return s.type->memory_gib > x->cur->memory_gib ? "scale_up" : "scale_down";
    return s.type->price_usd_hour > x->cur->price_usd_hour ? "scale_up" : "scale_down";
}

/* How a summary names s: its node type, and its shards when they change. */
static const char *shape_words(const struct ctx *x, struct shape s, char *buf, size_t size)
{
    if (s.shards == x->c->num_shards)
        snprintf(buf, size, "%s", s.type->name);
    else
        snprintf(buf, size, "%d shard%s of %s", s.shards, s.shards > 1 ? "s" : "", s.type->name);
    return buf;
}

static json_t *shape_json(const struct ctx *x, struct shape s)
{
    double hourly = shape_price(x, s);
    return json_pack("{s:s, s:i, s:i, s:I, s:o, s:o}", "node_type", s.type->name, "num_shards",
                     s.shards, "replicas_per_shard", x->c->replicas_per_shard,
                     "data_bytes_per_shard",
                     (json_int_t)rightsize_data_bytes(s.type, x->c->reserved_memory_percent),
                     "price_usd_per_hour", number(hourly), "price_usd_per_month",
                     number(hourly * SIZING_HOURS_PER_MONTH));
}

/* The target: the shape, and the spec's fields it changes. */
static json_t *target_json(const struct ctx *x, struct shape s)
{
    json_t *t = shape_json(x, s), *change = json_object();
    if (s.type != x->cur)
        json_object_set_new(change, "node_type", json_string(s.type->name));
    if (s.shards != x->c->num_shards)
        json_object_set_new(change, "num_shards", json_integer(s.shards));
    json_object_set_new(t, "change", change);
    return t;
}

/* ---- evidence ----------------------------------------------------------------------- */

/* Append a figure to list: metric's statistic over the window, its value in
 * unit, the threshold it was held against (NAN: none), the shard and node
 * it is of (NULL: the cluster), and what it means. */
static void evidence(const struct ctx *x, json_t *list, const char *metric, const char *statistic,
                     double value, const char *unit, double threshold, const struct shard *sh,
                     const char *node_id, const char *note_fmt, ...)
    __attribute__((format(printf, 10, 11)));

static void evidence(const struct ctx *x, json_t *list, const char *metric, const char *statistic,
                     double value, const char *unit, double threshold, const struct shard *sh,
                     const char *node_id, const char *note_fmt, ...)
{
    char note[400];
    va_list ap;
    va_start(ap, note_fmt);
    vsnprintf(note, sizeof(note), note_fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:s, s:s, s:s, s:o, s:s}", "metric", metric, "statistic", statistic,
                          "window", x->window, "value", number(value), "unit", unit);
    if (!isnan(threshold))
        json_object_set_new(e, "threshold", number(threshold));
    if (sh != NULL)
        json_object_set_new(e, "shard", json_string(sh->name));
    if (node_id != NULL)
        json_object_set_new(e, "node_id", json_string(node_id));
    json_object_set_new(e, "note", json_string(note));
    json_array_append_new(list, e);
}

/* How the memory a node keeps free is said, into buf. */
static const char *kept_free(const struct ctx *x, char *buf, size_t size)
{
    if (x->c->reserved_memory_percent <= SIZING_RESERVED_FRACTION * 100.0)
        snprintf(buf, size, "%.0f%% of its memory reserved and %.0f%% headroom",
                 SIZING_RESERVED_FRACTION * 100.0, SIZING_HEADROOM_FRACTION * 100.0);
    else
        snprintf(buf, size,
                 "the cluster's reserved-memory-percent of %d and headroom in proportion",
                 x->c->reserved_memory_percent);
    return buf;
}

/* The memory figures of shard sh against what a shard of s holds. */
static void memory_evidence(const struct ctx *x, json_t *list, const struct shard *sh,
                            struct shape s)
{
    char held[32], room[32], share[96] = "", kept[96];
    double data = rightsize_data_bytes(s.type, x->c->reserved_memory_percent);
    double per_shard = data / spread(x, s);
    if (s.shards != x->c->num_shards)
        snprintf(share, sizeof(share), "; with %d shards instead of %d, %s of it per shard today",
                 s.shards, x->c->num_shards, human_bytes(per_shard, held, sizeof(held)));
    evidence(x, list, "BytesUsedForCache", "Maximum", sh->bytes, "Bytes", per_shard, sh,
             sh->bytes_node, "the most data a node of shard %s held; a %s node holds %s with %s%s",
             sh->name, s.type->name, human_bytes(data, room, sizeof(room)),
             kept_free(x, kept, sizeof(kept)), share);
    if (!isnan(sh->percent) && s.type == x->cur && s.shards == x->c->num_shards)
        evidence(x, list, "DatabaseMemoryUsagePercentage", "Maximum", sh->percent, "Percent",
                 100.0 * rightsize_data_bytes(x->cur, x->c->reserved_memory_percent) /
                     maxmemory_bytes(x->cur, x->c->reserved_memory_percent),
                 sh, NULL, "of maxmemory, at its highest on a node of shard %s", sh->name);
}

static void evictions_evidence(const struct ctx *x, json_t *list, const struct shard *sh)
{
    evidence(x, list, "Evictions", "Sum", sh->evictions, "Count", 0, sh, NULL,
             "keys evicted for maxmemory in shard %s: its data wanted more room than it had",
             sh->name);
}

/* The CPU figure of shard sh against what a primary of s may take of it. */
static void cpu_evidence(const struct ctx *x, json_t *list, const struct shard *sh, struct shape s)
{
    double more = spread(x, s);
    evidence(x, list, "EngineCPUUtilization", "p99", sh->cpu, "Percent", CPU_LIMIT_PERCENT / more,
             sh, sh->cpu_node,
             "p99 of the %d-second averages of shard %s's primary, in percent of one core; "
             "primaries are kept under %.0f%%%s",
             RIGHTSIZE_CPU_PERIOD_S, sh->name, CPU_LIMIT_PERCENT,
             more != 1.0 ? ", and each of the target's shards takes its share of the load" : "");
}

static void requests_evidence(const struct ctx *x, json_t *list)
{
    evidence(x, list, "KeyBasedCmds", "Maximum", x->rps, "Count/Second", SIZING_BURSTABLE_MAX_RPS,
             NULL, NULL,
             "the primaries' key commands per second in their busiest %d seconds, added up; "
             "burstable node types are for workloads under %.0f requests/s and %.0f GB",
             RIGHTSIZE_CPU_PERIOD_S, SIZING_BURSTABLE_MAX_RPS, SIZING_BURSTABLE_MAX_BYTES / 1e9);
}

/* ---- the recommendation --------------------------------------------------------------- */

/* Append to reasons why the current shape fails holds(), and to ev the
 * figures that show it. */
static void pressure(const struct ctx *x, json_t *ev, json_t *reasons)
{
    struct shape cur = {x->cur, x->c->num_shards};
    double room = rightsize_data_bytes(x->cur, x->c->reserved_memory_percent);
    char a[32], b[32];

    for (int s = 0; s < x->c->num_shards; s++) {
        const struct shard *sh = &x->shards[s];
        if (sh->demand > room) {
            memory_evidence(x, ev, sh, cur);
            json_array_append_new(
                reasons,
                sh->demand > sh->bytes
                    ? json_sprintf("shard %s evicted keys at its maxmemory of %s: its data wants "
                                   "more room than a %s node gives it (%s with the reserve and "
                                   "headroom kept)",
                                   sh->name, human_bytes(sh->demand, a, sizeof(a)), x->cur->name,
                                   human_bytes(room, b, sizeof(b)))
                    : json_sprintf("shard %s's data peaked at %s, over the %s a %s node holds "
                                   "with the reserve and headroom kept",
                                   sh->name, human_bytes(sh->demand, a, sizeof(a)),
                                   human_bytes(room, b, sizeof(b)), x->cur->name));
        }
        if (sh->evictions > 0) {
            evictions_evidence(x, ev, sh);
            json_array_append_new(reasons,
                                  json_sprintf("%.0f keys were evicted from shard %s for maxmemory",
                                               sh->evictions, sh->name));
        }
        if (sh->cpu > CPU_LIMIT_PERCENT) {
            cpu_evidence(x, ev, sh, cur);
            json_array_append_new(
                reasons, json_sprintf("the engine CPU p99 of shard %s's primary was %.1f%%, over "
                                      "the %.0f%% a primary is kept under",
                                      sh->name, sh->cpu, CPU_LIMIT_PERCENT));
        }
    }
    if (x->cur->burstable && !x->small) {
        requests_evidence(x, ev);
        json_array_append_new(reasons, json_sprintf("%s is a burstable node type, for small "
                                                    "workloads only: this one peaked at %.0f "
                                                    "requests/s with %s of data",
                                                    x->cur->name, x->rps,
                                                    human_bytes(x->demand_total, a, sizeof(a))));
    }
}

/* Append to ev the figures that show the shape s holds the cluster. */
static void fit_evidence(const struct ctx *x, json_t *ev, struct shape s)
{
    const struct shard *data = &x->shards[x->busiest_data], *cpu = &x->shards[x->busiest_cpu];
    memory_evidence(x, ev, data, s);
    cpu_evidence(x, ev, cpu, s);
    if (s.type->burstable)
        requests_evidence(x, ev);
}

/* Hot shards: under pressure themselves, and hot by slot_advice_hot(). */
static json_t *hot_shards(const struct ctx *x)
{
    json_t *out = json_array();
    double room = rightsize_data_bytes(x->cur, x->c->reserved_memory_percent);
    double demand = 0, cpu = 0;
    size_t n = (size_t)x->c->num_shards;

    for (int s = 0; s < x->c->num_shards; s++) {
        demand += zero_if_nan(x->shards[s].demand);
        cpu += zero_if_nan(x->shards[s].cpu);
    }
    demand /= (double)n;
    cpu /= (double)n;
    for (int s = 0; s < x->c->num_shards; s++) {
        const struct shard *sh = &x->shards[s];
        bool by_data = sh->demand > room && slot_advice_hot(sh->demand, demand, n);
        bool by_cpu = sh->cpu > CPU_LIMIT_PERCENT && slot_advice_hot(sh->cpu, cpu, n);
        if (!by_data && !by_cpu)
            continue;
        json_t *ev = json_array();
        if (by_data)
            memory_evidence(x, ev, sh, (struct shape){x->cur, x->c->num_shards});
        if (by_cpu)
            cpu_evidence(x, ev, sh, (struct shape){x->cur, x->c->num_shards});
        json_array_append_new(
            out, json_pack("{s:s, s:o, s:o, s:o, s:s}", "shard", sh->name, "evidence", ev,
                           "times_mean_data", number(demand > 0 ? sh->demand / demand : NAN),
                           "times_mean_cpu", number(cpu > 0 ? sh->cpu / cpu : NAN), "note",
                           "one shard carries more than the others: moving slots off it "
                           "spreads its load without a new shape, where more shards would "
                           "leave a hot key where it is"));
    }
    return out;
}

static json_t *insufficient(struct ctx *x, json_t *out)
{
    json_t *miss = missing(x), *first = json_array_get(miss, 0);
    json_object_set_new(out, "status", json_string("insufficient_data"));
    json_object_set_new(
        out, "summary",
        json_sprintf("Not enough metrics in the last %d day(s) to judge the shape: shard %s has "
                     "%lld sample(s) of %s, %d are needed (metrics arrive from the cluster's "
                     "agents every period once its nodes run).",
                     x->c->days, json_string_value(json_object_get(first, "shard")),
                     (long long)json_integer_value(json_object_get(first, "samples")),
                     json_string_value(json_object_get(first, "metric")), RIGHTSIZE_MIN_SAMPLES));
    json_object_set_new(out, "target", json_null());
    json_object_set_new(out, "missing", miss);
    return out;
}

/* The status, summary and target of a cluster under pressure. */
static void scale_for_pressure(const struct ctx *x, json_t *out, json_t *reasons)
{
    struct shape best;
    const char *why = json_string_value(json_array_get(reasons, 0));

    if (best_shape(x, INFINITY, true, &best)) {
        const char *status = direction(x, best);
        json_object_set_new(out, "status", json_string(status));
        json_object_set_new(out, "target", target_json(x, best));
        char to[96];
        json_object_set_new(
            out, "summary",
            json_sprintf("%s to %s: %s.", verb(status), shape_words(x, best, to, sizeof(to)), why));
        return;
    }
    /* Nothing in reach holds it: more shards would, where there can be more. */
    bool cpu = x->shards[x->busiest_cpu].cpu > CPU_LIMIT_PERCENT;
    json_object_set_new(out, "status",
                        json_string(cpu || x->c->cluster_mode ? "scale_out" : "scale_up"));
    json_object_set_new(out, "target", json_null());
    json_array_append_new(
        reasons, json_string(x->c->cluster_mode
                                 ? "no single node type change or shard count holds it: "
                                   "change both, one after the other"
                                 : "cluster mode disabled keeps one shard, and no node type of "
                                   "the catalog holds it: a cluster in cluster mode, filled by "
                                   "backup and restore, can spread it over shards"));
    json_object_set_new(
        out, "summary",
        json_sprintf("The cluster needs more room (%s), and no shape Cairn offers in one change "
                     "holds it.",
                     why));
}

/* The status, summary and target of a cluster its shape holds. */
static void rightsize_holding(const struct ctx *x, json_t *out, json_t *ev)
{
    struct shape cur = {x->cur, x->c->num_shards}, best;
    const struct shard *data = &x->shards[x->busiest_data], *cpu = &x->shards[x->busiest_cpu];
    char a[32], b[32], to[96];

    /* Saving money is no reason to change families. */
    if (best_shape(x, shape_price(x, cur), false, &best)) {
        const char *status = direction(x, best);
        fit_evidence(x, ev, best);
        json_object_set_new(out, "status", json_string(status));
        json_object_set_new(out, "target", target_json(x, best));
        json_object_set_new(
            out, "summary",
            json_sprintf("%s to %s: it holds the data (at most %s in a shard) with the reserve "
                         "and headroom kept and the busiest primary's engine CPU (p99 %.1f%%), "
                         "for $%.2f a month instead of $%.2f.",
                         verb(status), shape_words(x, best, to, sizeof(to)),
                         human_bytes(data->demand, a, sizeof(a)), cpu->cpu,
                         shape_price(x, best) * SIZING_HOURS_PER_MONTH,
                         shape_price(x, cur) * SIZING_HOURS_PER_MONTH));
        return;
    }
    fit_evidence(x, ev, cur);
    json_object_set_new(out, "status", json_string("fits"));
    json_object_set_new(out, "target", json_null());
    json_object_set_new(
        out, "summary",
        json_sprintf(
            "The shape fits: the data peaked at %s per shard of the %s a shard holds "
            "with the reserve and headroom kept, the busiest primary's engine CPU p99 "
            "was %.1f%%, and no cheaper shape holds both.",
            human_bytes(data->demand, a, sizeof(a)),
            human_bytes(rightsize_data_bytes(x->cur, x->c->reserved_memory_percent), b, sizeof(b)),
            cpu->cpu));
}

json_t *rightsize_recommend(const struct rightsize_cluster *c, const struct rightsize_node *nodes,
                            size_t nnodes, const struct sizing_node_type *types, size_t ntypes)
{
    struct ctx x = {.c = c, .types = types, .ntypes = ntypes, .connections = NAN};
    x.cur = find_type(&x, c->node_type);
    if (x.cur == NULL || c->num_shards < 1 || c->num_shards > CSPEC_SHARDS_MAX)
        return NULL;
    snprintf(x.window, sizeof(x.window), "%dd", c->days);
    fold(&x, nodes, nnodes);

    struct shape cur = {x.cur, c->num_shards};
    json_t *out =
        json_pack("{s:s, s:s, s:o}", "status", "", "summary", "", "current", shape_json(&x, cur));
    json_t *ev = json_array(), *reasons = json_array();
    json_t *miss = missing(&x);
    bool enough = json_array_size(miss) == 0;
    json_decref(miss);

    if (!enough) {
        insufficient(&x, out);
    } else if (!holds(&x, cur)) {
        pressure(&x, ev, reasons);
        scale_for_pressure(&x, out, reasons);
    } else {
        rightsize_holding(&x, out, ev);
    }
    json_object_set_new(out, "evidence", ev);
    json_object_set_new(out, "observed", observed(&x));
    json_t *hot = enough ? hot_shards(&x) : json_array();
    if (json_array_size(hot) > 0) {
        json_t *summary = json_sprintf(
            "%s Shard %s carries more than the others: moving slots off it (hot_shards) "
            "spreads its load without a new shape.",
            json_string_value(json_object_get(out, "summary")),
            json_string_value(json_object_get(json_array_get(hot, 0), "shard")));
        json_object_set_new(out, "summary", summary);
    }
    json_object_set_new(out, "hot_shards", hot);
    json_object_set_new(out, "reasons", reasons);
    free(x.shards);
    return out;
}
