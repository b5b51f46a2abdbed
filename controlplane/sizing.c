/* sizing.c -- the sizing model (sizing.h): the engine's memory per key,
 * what one node answers, the fewest shards per node type and mode that
 * hold the workload, and the options ranked by price. */
#include "sizing.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "xalloc.h"

#define GIB                  (1024.0 * 1024.0 * 1024.0)
#define FRAGMENTATION        1.10 /* used memory over what was asked of the allocator */
#define UNKNOWN_KEY_OVERHEAD 0.15 /* of the payload, when keys are not given */
#define DEFAULT_VALUE_BYTES  200.0
#define REQUEST_FRAMING      40.0 /* RESP framing and the command around a key and value */
#define PIPELINE_EXPONENT    0.7  /* throughput grows as depth^0.7 ... */
#define PIPELINE_MAX         16   /* ... up to this depth */
#define WRITE_HEAVY_SHARE    0.5
#define NEAR_CAPACITY        0.7 /* of capacity: "near" the 80% a primary is sized to */
#define MAXCLIENTS           65000

const char *const sizing_type_names[SIZING_TYPE_COUNT + 1] = {"strings",     "hashes", "sets",
                                                              "sorted_sets", "lists",  NULL};

/* What a key of each type costs beyond a string of the same payload: its
 * payload grows by the factor (encodings, element headers) and the key
 * gains the container's bytes. Cairn's defaults; a calibration measures. */
static const struct {
    double factor, container;
} type_cost[SIZING_TYPE_COUNT] = {
    [SIZING_STRINGS] = {1.00, 0},      [SIZING_HASHES] = {1.25, 32}, [SIZING_SETS] = {1.50, 32},
    [SIZING_SORTED_SETS] = {2.00, 48}, [SIZING_LISTS] = {1.15, 32},
};

double sizing_usable_gib(double node_gib)
{
    return node_gib * (1.0 - SIZING_RESERVED_FRACTION - SIZING_HEADROOM_FRACTION);
}

/* ---- what one node answers --------------------------------------------- */

/* Requests/s of one node, by size: R5, 14.7M keys, 200-byte values, 80% GET
 * / 20% SET, no pipelining, 20 clients (DOMAIN.md's table, "R5"). The other
 * current families run the same engine on cores of the same class: their
 * sizes take these figures until a calibration says otherwise. */
static const struct {
    const char *size;
    double rps;
} published[] = {
    {"large", 215000},   {"xlarge", 207000},   {"2xlarge", 217000},  {"4xlarge", 225000},
    {"8xlarge", 247000}, {"12xlarge", 247000}, {"16xlarge", 237000}, {"24xlarge", 237000},
};

double sizing_published_rps(const char *family, const char *size)
{
    if (strcmp(family, "t3") == 0)
        return SIZING_BURSTABLE_MAX_RPS; /* sized by the burstable rule, not by a benchmark */
    for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++)
        if (strcmp(published[i].size, size) == 0)
            return published[i].rps;
    return 0;
}

static double capacity(const struct sizing_node_type *t)
{
    return t->capacity_rps > 0 ? t->capacity_rps : sizing_published_rps(t->family, t->size);
}

double sizing_pipeline_factor(int depth)
{
    int d = depth < 1 ? 1 : depth > PIPELINE_MAX ? PIPELINE_MAX : depth;
    return pow(d, PIPELINE_EXPONENT);
}

/* ---- memory ---------------------------------------------------------------- */

size_t sizing_alloc_class(size_t n)
{
    if (n <= 8)
        return 8;
    if (n <= 16)
        return 16;
    if (n <= 64)
        return (n + 15) / 16 * 16;
    /* Four classes between each power of two and the next. */
    size_t pow2 = 64;
    while (pow2 * 2 < n)
        pow2 *= 2;
    size_t step = pow2 / 4;
    return (n + step - 1) / step * step;
}

/* A string of len bytes as the engine allocates it: header, bytes, NUL. */
static size_t sds_bytes(size_t len)
{
    size_t header = len < 256 ? 3 : len < 65536 ? 5 : 9;
    return sizing_alloc_class(header + len + 1);
}

static double pow2_ceil(double n)
{
    double p = 4; /* a dictionary's smallest table */
    while (p < n)
        p *= 2;
    return p;
}

/* Valkey from 8.0 keeps the key inside its dictionary entry and a
 * dictionary per slot (no per-key links); earlier lines and Redis do not. */
static bool valkey8(const char *engine, const char *version)
{
    return strcmp(engine, "valkey") == 0 && version != NULL && atoi(version) >= 8;
}

double sizing_key_overhead(const char *engine, const char *version, bool cluster_mode, bool ttl,
                           double keys, double key_bytes, double value_bytes)
{
    size_t k = (size_t)ceil(key_bytes), v = (size_t)ceil(value_bytes);
    double entry, value, buckets = keys >= 1 ? 8.0 * pow2_ceil(keys) / keys : 8.0;

    /* Values up to 44 bytes share one allocation with their object. */
    value = v <= 44 ? (double)sizing_alloc_class(16 + 3 + v + 1) : 16.0 + (double)sds_bytes(v);
    if (valkey8(engine, version))
        entry = (double)sizing_alloc_class(16 + 3 + k + 1);
    else
        entry = (double)sizing_alloc_class(cluster_mode ? 24 + 16 : 24) + (double)sds_bytes(k);
    double expiry = ttl ? (double)sizing_alloc_class(24) + buckets : 0;
    return entry + value + buckets + expiry - (double)(k + v);
}

/* ---- the workload, as the model uses it --------------------------------- */

struct load {
    double keys, payload;            /* grown over the horizon */
    double key_bytes, value_bytes;   /* averages, value_bytes with the type mix */
    double extra_per_key;            /* containers of the type mix */
    double reads, writes, req_bytes; /* per second; bytes of one request */
};

static void workload(const struct sizing_input *in, struct load *l)
{
    double grow = 1.0 + in->growth_percent / 100.0, factor = 0;

    l->extra_per_key = 0;
    for (int t = 0; t < SIZING_TYPE_COUNT; t++) {
        factor += in->mix[t] * type_cost[t].factor;
        l->extra_per_key += in->mix[t] * type_cost[t].container;
    }
    if (in->has_keys) {
        l->keys = in->keys * grow;
        l->key_bytes = in->avg_key_bytes;
        l->value_bytes = in->avg_value_bytes * factor;
        l->payload = l->keys * (l->key_bytes + l->value_bytes);
    } else {
        l->keys = 0;
        l->key_bytes = 0;
        l->value_bytes = DEFAULT_VALUE_BYTES;
        l->payload = in->data_bytes * grow;
    }
    l->reads = in->rps * in->read_ratio;
    l->writes = in->rps - l->reads;
    l->req_bytes = (in->has_keys ? in->avg_key_bytes + in->avg_value_bytes : DEFAULT_VALUE_BYTES) +
                   REQUEST_FRAMING;
}

/* ---- one shape ----------------------------------------------------------- */

struct shape {
    const struct sizing_node_type *type;
    bool cluster_mode;
    int shards, replicas;
    /* per node of a shard */
    double payload_gib, overhead_gib, used_gib, usable_gib;
    double primary_rps, replica_rps, capacity_rps, network_gbps;
    double monthly_usd;
    int order; /* the catalog's position, newest family last */
};

/* Whether shards of t hold l; fills s. */
static bool fits(const struct sizing_input *in, const struct load *l, struct shape *s)
{
    double per = 1.0 / s->shards, keys = l->keys * per, payload = l->payload * per;
    double overhead;

    if (in->has_keys)
        overhead = keys * (sizing_key_overhead(in->engine, in->engine_version, s->cluster_mode,
                                               in->ttl, keys, l->key_bytes, l->value_bytes) +
                           l->extra_per_key);
    else
        overhead = payload * UNKNOWN_KEY_OVERHEAD;
    s->payload_gib = payload / GIB;
    s->overhead_gib = overhead / GIB;
    s->used_gib = (payload + overhead) * FRAGMENTATION / GIB;
    s->usable_gib = sizing_usable_gib(s->type->memory_gib);

    double reads = l->reads * per, writes = l->writes * per;
    double primary_reads = in->read_from_replicas ? reads / (1 + s->replicas) : reads;
    s->primary_rps = writes + primary_reads;
    s->replica_rps =
        s->replicas == 0 ? 0 : writes + (in->read_from_replicas ? reads / (1 + s->replicas) : 0);
    s->capacity_rps = capacity(s->type) * sizing_pipeline_factor(in->pipeline);
    /* Out of the primary: its answers, and every write once to each replica. */
    s->network_gbps = (s->primary_rps + writes * s->replicas) * l->req_bytes * 8 / 1e9;
    return s->used_gib <= s->usable_gib &&
           s->primary_rps <= SIZING_TARGET_UTILIZATION * s->capacity_rps &&
           s->network_gbps <= SIZING_TARGET_UTILIZATION * s->type->network_gbps;
}

/* ---- options --------------------------------------------------------------- */

static bool family_allowed(const struct sizing_input *in, const char *family)
{
    if (in->families == NULL)
        return true;
    for (const char *const *f = in->families; *f != NULL; f++)
        if (strcmp(*f, family) == 0)
            return true;
    return false;
}

static int replicas_of(const struct sizing_input *in)
{
    int r = in->replicas >= 0                                    ? in->replicas
            : in->availability == SIZING_AVAILABILITY_PRODUCTION ? 2
            : in->availability == SIZING_AVAILABILITY_STANDARD   ? 1
                                                                 : 0;
    return r > SIZING_REPLICAS_MAX ? SIZING_REPLICAS_MAX : r;
}

static json_t *text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *text(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return json_string(buf);
}

static double round2(double v)
{
    return round(v * 100.0) / 100.0;
}

static json_t *cluster_spec(const struct sizing_input *in, const struct shape *s, bool multi_az)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:b}", "id", in->id, "engine",
                     in->engine, "engine_version", in->engine_version, "node_type", s->type->name,
                     "cluster_mode", s->cluster_mode ? "enabled" : "disabled", "num_shards",
                     s->shards, "replicas_per_shard", s->replicas, "automatic_failover",
                     s->replicas > 0, "multi_az", multi_az);
}

static json_t *warnings(const struct sizing_input *in, const struct load *l, const struct shape *s,
                        bool multi_az)
{
    json_t *w = json_array();
    double write_share = in->rps > 0 ? l->writes / in->rps : 0;

    if (s->type->burstable)
        json_array_append_new(w, text("%s is burstable: load above its baseline CPU spends "
                                      "credits, and once they are gone it is throttled",
                                      s->type->name));
    if (s->replicas == 0)
        json_array_append_new(w, json_string("no replica: losing a node loses its data, and its "
                                             "shard is down until the node is replaced"));
    else if (!multi_az)
        json_array_append_new(w, json_string("one zone: losing the zone takes the whole cluster"));
    if (in->replicas > SIZING_REPLICAS_MAX)
        json_array_append_new(w, text("%d replicas per shard asked: more than %d burden the "
                                      "primary; %d used",
                                      in->replicas, SIZING_REPLICAS_MAX, SIZING_REPLICAS_MAX));
    if (write_share > WRITE_HEAVY_SHARE && s->primary_rps >= NEAR_CAPACITY * s->capacity_rps)
        json_array_append_new(w, text("write-heavy (%.0f%% writes) primaries at %.0f%% of their "
                                      "capacity: full syncs come often and the headroom is thin",
                                      write_share * 100, s->primary_rps / s->capacity_rps * 100));
    if (in->connections > MAXCLIENTS)
        json_array_append_new(w, text("%d connections: each node accepts %d (maxclients); pool "
                                      "them",
                                      in->connections, MAXCLIENTS));
    if (!s->cluster_mode)
        json_array_append_new(w, json_string("cluster mode disabled: growing past one node later "
                                             "needs a backup and restore into a new cluster"));
    return w;
}

static json_t *reasons(const struct sizing_input *in, const struct shape *s, bool multi_az)
{
    json_t *r = json_array();

    json_array_append_new(
        r,
        text("memory: each shard's %.2f GiB of data and %.2f GiB of engine overhead come to "
             "%.2f GiB with fragmentation, within the %.2f GiB a %s may fill (%.0f%% of its "
             "%.2f GiB; the rest is the reserve and the headroom)",
             s->payload_gib, s->overhead_gib, s->used_gib, s->usable_gib, s->type->name,
             (1 - SIZING_RESERVED_FRACTION - SIZING_HEADROOM_FRACTION) * 100, s->type->memory_gib));
    if (in->rps > 0)
        json_array_append_new(
            r, text("throughput: each primary answers %.0f requests/s, %.0f%% of the %.0f one "
                    "node answers (sized to %.0f%%)",
                    s->primary_rps, s->primary_rps / s->capacity_rps * 100, s->capacity_rps,
                    SIZING_TARGET_UTILIZATION * 100));
    json_array_append_new(r, text("%d shard%s: the fewest that hold the data and the traffic",
                                  s->shards, s->shards == 1 ? "" : "s"));
    if (s->replicas > 0)
        json_array_append_new(
            r, text("%d replica%s per shard%s: availability %s", s->replicas,
                    s->replicas == 1 ? "" : "s", multi_az ? " in other zones" : "",
                    in->availability == SIZING_AVAILABILITY_PRODUCTION ? "production"
                    : in->availability == SIZING_AVAILABILITY_STANDARD ? "standard"
                                                                       : "as asked"));
    if (s->cluster_mode)
        json_array_append_new(r, json_string("cluster mode: the cluster can grow both up and out"));
    return r;
}

static json_t *option_json(const struct sizing_input *in, const struct load *l,
                           const struct shape *s)
{
    bool multi_az = s->replicas > 0 && in->availability != SIZING_AVAILABILITY_NONE && in->azs != 1;
    double node_gib = s->type->memory_gib;
    json_t *memory = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "node_gib", node_gib, "data_gib",
                               round2(s->payload_gib), "engine_overhead_gib",
                               round2(s->used_gib - s->payload_gib), "reserved_gib",
                               round2(node_gib * SIZING_RESERVED_FRACTION), "headroom_gib",
                               round2(node_gib * SIZING_HEADROOM_FRACTION), "free_gib",
                               round2(s->usable_gib - s->used_gib));
    json_t *throughput = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f}", "needed_per_primary_rps", round(s->primary_rps),
        "needed_per_replica_rps", round(s->replica_rps), "capacity_per_node_rps",
        round(s->capacity_rps), "write_share", in->rps > 0 ? round2(l->writes / in->rps) : 0.0,
        "network_gbps_per_primary", round(s->network_gbps * 1000) / 1000, "network_gbps_baseline",
        s->type->network_gbps);
    return json_pack("{s:s, s:s, s:i, s:i, s:b, s:i, s:f, s:o, s:o, s:o, s:o, s:o}", "node_type",
                     s->type->name, "cluster_mode", s->cluster_mode ? "enabled" : "disabled",
                     "num_shards", s->shards, "replicas_per_shard", s->replicas, "multi_az",
                     multi_az, "nodes", s->shards * (1 + s->replicas), "price_usd_per_month",
                     round2(s->monthly_usd), "memory", memory, "throughput", throughput, "reasons",
                     reasons(in, s, multi_az), "warnings", warnings(in, l, s, multi_az),
                     "cluster_spec", cluster_spec(in, s, multi_az));
}

static int by_price(const void *a, const void *b)
{
    const struct shape *x = a, *y = b;
    if (x->monthly_usd != y->monthly_usd)
        return x->monthly_usd < y->monthly_usd ? -1 : 1;
    int nx = x->shards * (1 + x->replicas), ny = y->shards * (1 + y->replicas);
    if (nx != ny)
        return nx - ny;
    if (x->cluster_mode != y->cluster_mode)
        return x->cluster_mode ? -1 : 1; /* cluster mode preferred */
    return y->order - x->order;          /* the newer family */
}

/* Why nothing fits, counted over every node type and mode tried. */
struct misses {
    int family, burstable, too_small, budget, no_replica_mode;
    double cheapest_over_budget;
};

static json_t *assumptions(const struct sizing_input *in, const struct load *l,
                           const struct shape *options, size_t n)
{
    json_t *a = json_array();
#define ASSUME(name, value, source, note)                                                          \
    json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s}", "name", name, "value", value,       \
                                       "source", source, "note", note))
    ASSUME("reserved_memory_percent", json_real(SIZING_RESERVED_FRACTION * 100), "rule",
           "kept for replication buffers and the copy-on-write of a fork");
    ASSUME("headroom_percent", json_real(SIZING_HEADROOM_FRACTION * 100), "rule",
           "kept free so that memory alarms fire before the node is full");
    ASSUME("target_utilization_percent", json_real(SIZING_TARGET_UTILIZATION * 100), "rule",
           "of a node's request capacity and baseline network a primary is sized to");
    ASSUME("fragmentation_ratio", json_real(FRAGMENTATION), "default",
           "memory the allocator holds over what the engine asked of it");
    if (in->has_keys) {
        double per =
            sizing_key_overhead(in->engine, in->engine_version, in->mode != SIZING_MODE_DISABLED,
                                in->ttl, l->keys, l->key_bytes, l->value_bytes) +
            l->extra_per_key;
        ASSUME("engine_overhead_bytes_per_key", json_real(round(per)), "default",
               "dictionary entry, object and string headers rounded to jemalloc's size classes, "
               "hash buckets, an expiry entry when keys expire, the data types' containers");
    } else {
        ASSUME("engine_overhead_percent", json_real(UNKNOWN_KEY_OVERHEAD * 100), "default",
               "of the payload, since the keys' count and sizes were not given");
        ASSUME("avg_value_bytes", json_real(DEFAULT_VALUE_BYTES), "default",
               "for the bytes each request moves");
    }
    ASSUME("request_framing_bytes", json_real(REQUEST_FRAMING), "default",
           "RESP framing and the command around each key and value on the wire");
    if (in->pipeline > 1)
        ASSUME("pipeline_factor", json_real(round2(sizing_pipeline_factor(in->pipeline))),
               "default", "throughput multiplies by depth^0.7, up to a depth of 16");
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = options[j].type == options[i].type;
        if (seen)
            continue;
        const struct sizing_node_type *t = options[i].type;
        char name[96];
        snprintf(name, sizeof(name), "capacity_rps.%s", t->name);
        ASSUME(name, json_real(capacity(t)),
               t->capacity_rps > 0 && t->capacity_source != NULL ? t->capacity_source
               : t->burstable                                    ? "rule"
                                                                 : "published",
               t->capacity_rps > 0 ? (t->capacity_note != NULL ? t->capacity_note
                                                               : "measured on this fleet's hosts")
               : t->burstable      ? "burstable nodes are for workloads under 2,000 requests/s"
                              : "r5 of the same size: 200-byte values, 80% GET, no pipelining, 20 "
                                "clients");
    }
#undef ASSUME
    return a;
}

static json_t *none_reasons(const struct sizing_input *in, const struct misses *m)
{
    json_t *r = json_array();
    if (m->too_small > 0)
        json_array_append_new(r, text("%d node type and mode pairs cannot hold the workload even "
                                      "at %d shards, or with cluster mode disabled in one node",
                                      m->too_small, SIZING_SHARDS_MAX));
    if (m->burstable > 0)
        json_array_append_new(r, json_string("burstable t3 nodes are only for workloads under "
                                             "2,000 requests/s and 10 GB"));
    if (m->family > 0)
        json_array_append_new(r, text("%d node types are outside node_families", m->family));
    if (m->no_replica_mode > 0)
        json_array_append_new(r, json_string("cluster mode needs a replica per shard; "
                                             "availability none has none"));
    if (m->budget > 0)
        json_array_append_new(r, text("over max_monthly_usd (%.2f): the cheapest that fits costs "
                                      "%.2f a month",
                                      in->max_monthly_usd, m->cheapest_over_budget));
    return r;
}

json_t *sizing_recommend(const struct sizing_input *in, const struct sizing_node_type *types,
                         size_t ntypes)
{
    struct load l;
    struct misses m = {0};
    struct shape *found = xcalloc(ntypes * 2 + 1, sizeof(*found));
    size_t n = 0;
    int replicas = replicas_of(in);

    workload(in, &l);
    bool small = in->rps < SIZING_BURSTABLE_MAX_RPS && l.payload < SIZING_BURSTABLE_MAX_BYTES;
    for (size_t i = 0; i < ntypes; i++) {
        const struct sizing_node_type *t = &types[i];
        if (!family_allowed(in, t->family)) {
            m.family++;
            continue;
        }
        if (t->burstable && !small) {
            m.burstable++;
            continue;
        }
        for (int cm = 0; cm < 2; cm++) {
            bool cluster_mode = cm == 0;
            if ((cluster_mode && in->mode == SIZING_MODE_DISABLED) ||
                (!cluster_mode && in->mode == SIZING_MODE_ENABLED))
                continue;
            if (cluster_mode && replicas == 0) {
                m.no_replica_mode++;
                continue;
            }
            struct shape s = {
                .type = t, .cluster_mode = cluster_mode, .replicas = replicas, .order = (int)i};
            int most = cluster_mode ? SIZING_SHARDS_MAX : 1;
            for (s.shards = 1; s.shards <= most && !fits(in, &l, &s); s.shards++)
                ;
            if (s.shards > most) {
                m.too_small++;
                continue;
            }
            s.monthly_usd = t->price_usd_hour * SIZING_HOURS_PER_MONTH * s.shards * (1 + replicas);
            if (in->max_monthly_usd > 0 && s.monthly_usd > in->max_monthly_usd) {
                if (m.budget++ == 0 || s.monthly_usd < m.cheapest_over_budget)
                    m.cheapest_over_budget = s.monthly_usd;
                continue;
            }
            found[n++] = s;
        }
    }
    qsort(found, n, sizeof(*found), by_price);
    size_t shown = n < (size_t)in->max_options ? n : (size_t)in->max_options;
    json_t *options = json_array();
    for (size_t i = 0; i < shown; i++) {
        json_t *o = option_json(in, &l, &found[i]);
        json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
        json_array_append_new(options, o);
    }
    json_t *out = json_pack("{s:o, s:o, s:o}", "options", options, "assumptions",
                            assumptions(in, &l, found, shown), "reasons",
                            n == 0 ? none_reasons(in, &m) : json_array());
    free(found);
    return out;
}
