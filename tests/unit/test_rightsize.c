/* test_rightsize.c -- right-sizing from metrics (controlplane/rightsize.h):
 * a table of clusters and what each should do, and above all that no
 * recommended shape fails to hold the data seen with the reserve and the
 * headroom kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_spec.h"
#include "rightsize.h"
#include "sizing.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* Part of the catalog (migrations/0002_catalog.sql), Valkey prices. */
static const struct sizing_node_type types[] = {
    {.name = "cache.t3.micro",
     .family = "t3",
     .memory_gib = 0.50,
     .burstable = true,
     .price_usd_hour = 0.0136},
    {.name = "cache.t3.small",
     .family = "t3",
     .memory_gib = 1.37,
     .burstable = true,
     .price_usd_hour = 0.0272},
    {.name = "cache.t3.medium",
     .family = "t3",
     .memory_gib = 3.09,
     .burstable = true,
     .price_usd_hour = 0.0544},
    {.name = "cache.m5.large",
     .family = "m5",
     .memory_gib = 6.38,
     .burstable = false,
     .price_usd_hour = 0.1248},
    {.name = "cache.m5.xlarge",
     .family = "m5",
     .memory_gib = 12.94,
     .burstable = false,
     .price_usd_hour = 0.2488},
    {.name = "cache.r6g.large",
     .family = "r6g",
     .memory_gib = 13.07,
     .burstable = false,
     .price_usd_hour = 0.1648},
    {.name = "cache.r6g.xlarge",
     .family = "r6g",
     .memory_gib = 26.32,
     .burstable = false,
     .price_usd_hour = 0.3288},
    {.name = "cache.r7g.large",
     .family = "r7g",
     .memory_gib = 13.07,
     .burstable = false,
     .price_usd_hour = 0.1752},
    {.name = "cache.r7g.xlarge",
     .family = "r7g",
     .memory_gib = 26.32,
     .burstable = false,
     .price_usd_hour = 0.3496},
    {.name = "cache.r7g.2xlarge",
     .family = "r7g",
     .memory_gib = 52.82,
     .burstable = false,
     .price_usd_hour = 0.6984},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *const names[] = {"0001", "0002", "0003", "0004", "0005", "0006"};

/* One shard's figures in a case, its primary's and replica's alike. */
struct shard_in {
    double bytes, cpu, evictions;
};

/* A case: the shape, what its shards did, and what should come of it. */
struct row {
    const char *what;
    const char *node_type;
    int shards, replicas;
    bool cluster_mode;
    int reserved; /* reserved-memory-percent */
    double rps;   /* per primary */
    struct shard_in in[4];
    const char *status;
    const char *target_type; /* NULL: no target */
    int target_shards;
};

static const struct row rows[] = {
    {"idle oversized: down to the smallest node",
     "cache.r7g.xlarge",
     1,
     1,
     false,
     25,
     0,
     {{3 * MIB, 0.5, 0}},
     "scale_down",
     "cache.t3.micro",
     1},
    {"idle but busy: down, burstable nodes left out",
     "cache.r7g.xlarge",
     1,
     1,
     false,
     25,
     5000,
     {{1 * GIB, 20, 0}},
     "scale_down",
     "cache.r7g.large",
     1},
    {"full: up to the next node that holds it",
     "cache.t3.micro",
     1,
     2,
     false,
     25,
     10,
     {{330 * MIB, 5, 0}},
     "scale_up",
     "cache.t3.small",
     1},
    {"evicting with room by bytes: maxmemory counts",
     "cache.t3.micro",
     1,
     1,
     true,
     90,
     10,
     {{51 * MIB, 5, 1200}},
     "scale_up",
     "cache.t3.small",
     1},
    {"full, and no larger node of its family: the cheapest of another",
     "cache.m5.xlarge",
     1,
     1,
     false,
     25,
     3000,
     {{9 * GIB, 20, 0}},
     "scale_up",
     "cache.r6g.xlarge",
     1},
    {"a busy primary in cluster mode: out",
     "cache.r7g.large",
     2,
     1,
     true,
     25,
     1000,
     {{2 * GIB, 95, 0}, {2 * GIB, 90, 0}},
     "scale_out",
     "cache.r7g.large",
     3},
    {"a busy primary in cluster mode disabled: nothing in one change",
     "cache.r7g.large",
     1,
     2,
     false,
     25,
     1000,
     {{2 * GIB, 95, 0}},
     "scale_out",
     NULL,
     0},
    {"three quiet shards: in",
     "cache.m5.large",
     3,
     1,
     true,
     25,
     3000,
     {{1 * GIB, 10, 0}, {1 * GIB, 12, 0}, {1 * GIB, 9, 0}},
     "scale_in",
     "cache.m5.large",
     1},
    {"cheaper in another family is no reason to move: fits",
     "cache.r7g.large",
     1,
     1,
     false,
     25,
     3000,
     {{5 * GIB, 30, 0}},
     "fits",
     NULL,
     0},
    {"just right: fits",
     "cache.r7g.large",
     2,
     1,
     true,
     25,
     3000,
     {{6 * GIB, 50, 0}, {6.5 * GIB, 55, 0}},
     "fits",
     NULL,
     0},
    {"more data than the largest node, cluster mode disabled",
     "cache.r7g.2xlarge",
     1,
     1,
     false,
     25,
     3000,
     {{40 * GIB, 20, 0}},
     "scale_up",
     NULL,
     0},
    {"more data than the largest node, cluster mode: out",
     "cache.r7g.2xlarge",
     1,
     1,
     true,
     25,
     3000,
     {{40 * GIB, 20, 0}},
     "scale_out",
     "cache.r7g.2xlarge",
     2},
    {"burstable and too busy: up off burstable",
     "cache.t3.medium",
     1,
     1,
     false,
     25,
     9000,
     {{200 * MIB, 30, 0}},
     "scale_up",
     "cache.m5.large",
     1},
};

/* The nodes of a case: a primary and its replicas per shard, each with
 * enough samples. */
static size_t make_nodes(const struct row *r, struct rightsize_node *out, char ids[][32])
{
    size_t n = 0;
    for (int s = 0; s < r->shards; s++) {
        for (int k = 0; k <= r->replicas; k++, n++) {
            snprintf(ids[n], 32, "n%d-%d", s, k);
            out[n] = (struct rightsize_node){
                .id = ids[n],
                .shard = s,
                .primary = k == 0,
                .memory_samples = 100,
                .cpu_samples = 100,
                .bytes_peak = r->in[s].bytes,
                .memory_percent_peak = NAN,
                .cpu_p99 = k == 0 ? r->in[s].cpu : r->in[s].cpu / 4,
                .evictions = k == 0 ? r->in[s].evictions : 0,
                .hits = 100,
                .misses = 10,
                .gets = 1000,
                .sets = 100,
                .connections_peak = 20,
                .requests_per_s_peak = k == 0 ? r->rps : 0,
            };
        }
    }
    return n;
}

static json_t *run(const struct row *r)
{
    struct rightsize_node nodes[32];
    char ids[32][32];
    size_t n = make_nodes(r, nodes, ids);
    struct rightsize_cluster c = {r->node_type,    r->shards,   names, r->replicas,
                                  r->cluster_mode, r->reserved, 7};
    return rightsize_recommend(&c, nodes, n, types, NTYPES);
}

static const struct sizing_node_type *type_named(const char *name)
{
    for (size_t i = 0; i < NTYPES; i++) {
        if (strcmp(types[i].name, name) == 0)
            return &types[i];
    }
    return NULL;
}

/* The invariant, in sizing.h's own terms: a shard of the target holds its
 * share of the data seen (the largest shard's, spread over the new count),
 * with at most what sizing_usable_gib() leaves of a node: the reserve and
 * the headroom stay free. The data of a shard that evicted is at least its
 * maxmemory. */
static void assert_target_holds(const struct row *r, const json_t *rec)
{
    const json_t *target = json_object_get(rec, "target");
    if (json_is_null(target))
        return;
    const struct sizing_node_type *t =
        type_named(json_string_value(json_object_get(target, "node_type")));
    const struct sizing_node_type *cur = type_named(r->node_type);
    int k = (int)json_integer_value(json_object_get(target, "num_shards"));
    double most = 0;
    assert_non_null(t);
    assert_true(k >= 1 && k <= CSPEC_SHARDS_MAX);
    assert_true(r->cluster_mode || k == 1);
    for (int s = 0; s < r->shards; s++) {
        double data = r->in[s].bytes;
        double maxmemory = cur->memory_gib * GIB * (100 - r->reserved) / 100.0;
        if (r->in[s].evictions > 0 && maxmemory > data)
            data = maxmemory;
        most = data > most ? data : most;
    }
    /* Computed apart from rightsize.c: equal figures may differ in the
     * last bits. */
    double per_shard = most * r->shards / k * (1 - 1e-12);
    if (per_shard > sizing_usable_gib(t->memory_gib) * GIB) {
        print_error("%s: %s x %d would hold %.0f bytes per shard, over the %.0f it may fill\n",
                    r->what, t->name, k, per_shard, sizing_usable_gib(t->memory_gib) * GIB);
        fail();
    }
    assert_true(per_shard <= rightsize_data_bytes(t, r->reserved));
    assert_true(per_shard <= t->memory_gib * GIB * (1.0 - SIZING_RESERVED_FRACTION));
}

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        json_t *rec = run(r);
        assert_non_null(rec);
        const char *status = json_string_value(json_object_get(rec, "status"));
        const json_t *target = json_object_get(rec, "target");
        if (strcmp(status, r->status) != 0) {
            print_error("%s: status %s, not %s\n", r->what, status, r->status);
            fail();
        }
        if (r->target_type == NULL) {
            assert_true(json_is_null(target));
        } else {
            assert_string_equal(json_string_value(json_object_get(target, "node_type")),
                                r->target_type);
            assert_int_equal(json_integer_value(json_object_get(target, "num_shards")),
                             r->target_shards);
            assert_int_equal(json_integer_value(json_object_get(target, "replicas_per_shard")),
                             r->replicas);
        }
        assert_target_holds(r, rec);
        assert_true(json_array_size(json_object_get(rec, "evidence")) > 0 ||
                    strcmp(status, "insufficient_data") == 0);
        json_decref(rec);
    }
}

/* Every node type as the current one, one to four shards, data from none
 * to past the node's maxmemory, with and without evictions, idle and busy:
 * whatever is recommended holds the data with the reserve kept. */
static void test_no_target_drops_the_reserve(void **state)
{
    (void)state;
    static const double fill[] = {0, 0.05, 0.3, 0.59, 0.61, 0.74, 0.8, 1.0};
    static const double cpu[] = {1, 60, 85};
    static const double rps[] = {10, 5000};
    int targets = 0;
    for (size_t t = 0; t < NTYPES; t++) {
        for (int shards = 1; shards <= 4; shards++) {
            for (size_t f = 0; f < sizeof(fill) / sizeof(fill[0]); f++) {
                for (size_t c = 0; c < sizeof(cpu) / sizeof(cpu[0]); c++) {
                    for (int ev = 0; ev < 2; ev++) {
                        for (size_t q = 0; q < sizeof(rps) / sizeof(rps[0]); q++) {
                            struct row r = {"sweep",          types[t].name, shards, 1,
                                            shards > 1 || ev, ev ? 50 : 25,  rps[q]};
                            for (int s = 0; s < shards; s++)
                                r.in[s] = (struct shard_in){fill[f] * types[t].memory_gib * GIB *
                                                                (s + 1) / shards,
                                                            cpu[c], ev ? 10 : 0};
                            json_t *rec = run(&r);
                            assert_non_null(rec);
                            assert_target_holds(&r, rec);
                            targets += !json_is_null(json_object_get(rec, "target"));
                            json_decref(rec);
                        }
                    }
                }
            }
        }
    }
    assert_true(targets > 100); /* the sweep did recommend shapes */
}

static void test_insufficient_data_says_what_is_missing(void **state)
{
    (void)state;
    struct rightsize_cluster c = {"cache.r7g.large", 2, names, 1, true, 25, 1};
    struct rightsize_node n = {.id = "a",
                               .shard = 0,
                               .primary = true,
                               .memory_samples = RIGHTSIZE_MIN_SAMPLES,
                               .cpu_samples = 1,
                               .bytes_peak = 1e6,
                               .memory_percent_peak = 1,
                               .cpu_p99 = 1};
    json_t *rec = rightsize_recommend(&c, &n, 1, types, NTYPES);
    assert_string_equal(json_string_value(json_object_get(rec, "status")), "insufficient_data");
    assert_true(json_is_null(json_object_get(rec, "target")));
    const json_t *missing = json_object_get(rec, "missing");
    /* Shard 0001 lacks CPU samples, 0002 has nothing. */
    assert_int_equal(json_array_size(missing), 3);
    const json_t *m = json_array_get(missing, 0);
    assert_string_equal(json_string_value(json_object_get(m, "shard")), "0001");
    assert_string_equal(json_string_value(json_object_get(m, "metric")), "EngineCPUUtilization");
    assert_int_equal(json_integer_value(json_object_get(m, "samples")), 1);
    assert_int_equal(json_integer_value(json_object_get(m, "needed")), RIGHTSIZE_MIN_SAMPLES);
    assert_string_equal(json_string_value(json_object_get(json_array_get(missing, 1), "metric")),
                        "BytesUsedForCache");
    assert_non_null(strstr(json_string_value(json_object_get(rec, "summary")), "0001"));
    json_decref(rec);

    /* No node at all yet (a cluster being created). */
    rec = rightsize_recommend(&c, NULL, 0, types, NTYPES);
    assert_string_equal(json_string_value(json_object_get(rec, "status")), "insufficient_data");
    assert_int_equal(json_array_size(json_object_get(rec, "missing")), 4);
    json_decref(rec);
}

/* The evidence of a full node names the memory metrics, with the
 * thresholds they crossed. */
static void test_memory_evidence(void **state)
{
    (void)state;
    struct rightsize_cluster c = {"cache.t3.micro", 1, names, 1, false, 25, 7};
    struct rightsize_node n = {.id = "p",
                               .shard = 0,
                               .primary = true,
                               .memory_samples = 10,
                               .cpu_samples = 10,
                               .bytes_peak = 350 * MIB,
                               .memory_percent_peak = 91.2,
                               .cpu_p99 = 3,
                               .evictions = 17};
    json_t *rec = rightsize_recommend(&c, &n, 1, types, NTYPES);
    const json_t *ev = json_object_get(rec, "evidence");
    double room = rightsize_data_bytes(&types[0], 25);
    assert_true(fabs(room - 0.5 * GIB * 0.6) < 1);
    assert_string_equal(json_string_value(json_object_get(rec, "status")), "scale_up");

    const json_t *bytes = json_array_get(ev, 0), *pct = json_array_get(ev, 1);
    assert_string_equal(json_string_value(json_object_get(bytes, "metric")), "BytesUsedForCache");
    assert_string_equal(json_string_value(json_object_get(bytes, "statistic")), "Maximum");
    assert_string_equal(json_string_value(json_object_get(bytes, "window")), "7d");
    assert_string_equal(json_string_value(json_object_get(bytes, "node_id")), "p");
    assert_true(fabs(json_number_value(json_object_get(bytes, "threshold")) - room) < 1);
    assert_string_equal(json_string_value(json_object_get(pct, "metric")),
                        "DatabaseMemoryUsagePercentage");
    assert_true(fabs(json_number_value(json_object_get(pct, "value")) - 91.2) < 1e-9);
    /* 60% of the node of the 75% maxmemory has: 80% of maxmemory. */
    assert_true(fabs(json_number_value(json_object_get(pct, "threshold")) - 80) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 2), "metric")),
                        "Evictions");

    const json_t *observed = json_object_get(rec, "observed");
    assert_true(json_is_null(json_object_get(observed, "cache_hit_percent"))); /* no lookups */
    assert_true(json_number_value(json_object_get(observed, "evictions")) == 17);
    json_decref(rec);
}

/* A recommended change applied to the cluster's spec is a valid spec. */
static void test_target_is_a_valid_spec_change(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        json_t *rec = run(r);
        const json_t *change = json_object_get(json_object_get(rec, "target"), "change");
        if (change == NULL) {
            json_decref(rec);
            continue;
        }
        assert_true(json_object_size(change) == 1); /* one change at a time */
        json_t *spec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i}", "id", "orders", "engine",
                                 "valkey", "engine_version", "8.0", "node_type", r->node_type,
                                 "cluster_mode", r->cluster_mode ? "enabled" : "disabled",
                                 "num_shards", r->shards, "replicas_per_shard", r->replicas);
        json_t *next = cspec_merge_patch(spec, change), *errors = json_array();
        json_t *normal = cspec_normalize(next, errors);
        if (normal == NULL) {
            char *text = json_dumps(errors, 0);
            print_error("%s: %s\n", r->what, text);
            free(text);
            fail();
        }
        json_decref(normal);
        json_decref(errors);
        json_decref(next);
        json_decref(spec);
        json_decref(rec);
    }
}

/* One shard at its CPU limit while the others idle is hot; even load is
 * not. */
static void test_hot_shard(void **state)
{
    (void)state;
    struct row hot = {"hot", "cache.r7g.large",
                      3,     1,
                      true,  25,
                      1000,  {{1 * GIB, 95, 0}, {1 * GIB, 10, 0}, {1 * GIB, 12, 0}}};
    json_t *rec = run(&hot);
    const json_t *shards = json_object_get(rec, "hot_shards");
    assert_string_equal(json_string_value(json_object_get(rec, "status")), "scale_out");
    assert_int_equal(json_array_size(shards), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(shards, 0), "shard")),
                        "0001");
    json_decref(rec);

    struct row even = {"even", "cache.r7g.large",
                       3,      1,
                       true,   25,
                       1000,   {{1 * GIB, 90, 0}, {1 * GIB, 88, 0}, {1 * GIB, 92, 0}}};
    rec = run(&even);
    assert_int_equal(json_array_size(json_object_get(rec, "hot_shards")), 0);
    json_decref(rec);
}

static void test_unknown_node_type(void **state)
{
    (void)state;
    struct rightsize_cluster c = {"cache.x9.huge", 1, names, 1, false, 25, 7};
    assert_null(rightsize_recommend(&c, NULL, 0, types, NTYPES));
}

/* As PostgreSQL's percentile_cont, which the metrics API's p99 is. */
static void test_percentile(void **state)
{
    (void)state;
    double v[] = {5, 1, 4, 2, 3};
    assert_true(fabs(rightsize_percentile(v, 5, 0.5) - 3) < 1e-12);
    assert_true(fabs(rightsize_percentile(v, 5, 0.99) - 4.96) < 1e-12);
    assert_true(fabs(rightsize_percentile(v, 5, 0) - 1) < 1e-12);
    double one[] = {7};
    assert_true(rightsize_percentile(one, 1, 0.99) == 7);
    assert_true(isnan(rightsize_percentile(NULL, 0, 0.99)));
}

static void test_reserved_memory_percent(void **state)
{
    (void)state;
    const struct sizing_node_type *m5 = &types[3];
    double usable = sizing_usable_gib(m5->memory_gib) * GIB;
    /* At the default, or keeping less out of maxmemory: the sizing rule. */
    assert_true(fabs(rightsize_data_bytes(m5, 25) - usable) < 1);
    assert_true(fabs(rightsize_data_bytes(m5, 0) - usable) < 1);
    /* Keeping more out: less for data, in proportion. */
    assert_true(fabs(rightsize_data_bytes(m5, 90) - usable * 0.10 / 0.75) < 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_no_target_drops_the_reserve),
        cmocka_unit_test(test_insufficient_data_says_what_is_missing),
        cmocka_unit_test(test_memory_evidence),
        cmocka_unit_test(test_target_is_a_valid_spec_change),
        cmocka_unit_test(test_hot_shard),
        cmocka_unit_test(test_unknown_node_type),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_reserved_memory_percent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
