/* test_sizing.c -- the sizing model (controlplane/sizing.h) on table cases
 * and a property: the seed workload lands on a .large memory-optimized node,
 * small workloads on t3, write-heavy primaries are warned about,
 * production gets two replicas in other zones, big datasets shard, a budget
 * too small leaves no option and says why; every option's memory budget
 * adds up to its node and holds the data with the reserve and headroom, and
 * options come cheapest first. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sizing.h"

/* The catalog's node types (migrations/0002_catalog.sql), Valkey's prices. */
static const struct sizing_node_type catalog[] = {
    {"cache.t3.micro", "t3", "micro", 2, 0.50, 0.064, true, 0.0136, 0, NULL},
    {"cache.t3.small", "t3", "small", 2, 1.37, 0.128, true, 0.0272, 0, NULL},
    {"cache.t3.medium", "t3", "medium", 2, 3.09, 0.256, true, 0.0544, 0, NULL},
    {"cache.m5.large", "m5", "large", 2, 6.38, 0.750, false, 0.1248, 0, NULL},
    {"cache.m5.xlarge", "m5", "xlarge", 4, 12.94, 1.250, false, 0.2488, 0, NULL},
    {"cache.m5.2xlarge", "m5", "2xlarge", 8, 26.05, 2.500, false, 0.4984, 0, NULL},
    {"cache.r5.large", "r5", "large", 2, 13.07, 0.750, false, 0.1728, 0, NULL},
    {"cache.r5.xlarge", "r5", "xlarge", 4, 26.32, 1.250, false, 0.3448, 0, NULL},
    {"cache.r6g.large", "r6g", "large", 2, 13.07, 0.750, false, 0.1648, 0, NULL},
    {"cache.r6g.xlarge", "r6g", "xlarge", 4, 26.32, 1.250, false, 0.3288, 0, NULL},
    {"cache.r6g.4xlarge", "r6g", "4xlarge", 16, 105.81, 5.000, false, 1.3136, 0, NULL},
    {"cache.r7g.large", "r7g", "large", 2, 13.07, 0.937, false, 0.1752, 0, NULL},
    {"cache.r7g.xlarge", "r7g", "xlarge", 4, 26.32, 1.876, false, 0.3496, 0, NULL},
    {"cache.r7g.4xlarge", "r7g", "4xlarge", 16, 105.81, 7.500, false, 1.396, 0, NULL},
};
static const size_t ncatalog = sizeof(catalog) / sizeof(catalog[0]);

static struct sizing_input base(void)
{
    struct sizing_input in = {.id = "sized",
                              .engine = "valkey",
                              .engine_version = "8.0",
                              .read_ratio = 0.8,
                              .pipeline = 1,
                              .replicas = -1,
                              .availability = SIZING_AVAILABILITY_STANDARD,
                              .mode = SIZING_MODE_ANY,
                              .max_options = 10};
    in.mix[SIZING_STRINGS] = 1.0;
    return in;
}

static const char *first_type(const json_t *out)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(out, "options"), 0), "node_type"));
}

static bool has_warning(const json_t *option, const char *part)
{
    size_t i;
    json_t *w;
    json_array_foreach (json_object_get(option, "warnings"), i, w) {
        if (strstr(json_string_value(w), part) != NULL)
            return true;
    }
    return false;
}

/* Every option: the memory budget adds up to the node and leaves free >= 0;
 * the spec says what the option says; prices never go down the list. */
static void check_options(const json_t *out)
{
    double price = 0;
    size_t i;
    json_t *o;
    json_array_foreach (json_object_get(out, "options"), i, o) {
        const json_t *m = json_object_get(o, "memory");
        double sum = json_real_value(json_object_get(m, "data_gib")) +
                     json_real_value(json_object_get(m, "engine_overhead_gib")) +
                     json_real_value(json_object_get(m, "fragmentation_gib")) +
                     json_real_value(json_object_get(m, "reserved_gib")) +
                     json_real_value(json_object_get(m, "headroom_gib")) +
                     json_real_value(json_object_get(m, "free_gib"));
        double node = json_real_value(json_object_get(m, "node_gib"));
        assert_true(sum > node - 0.05 && sum < node + 0.05);
        assert_true(json_real_value(json_object_get(m, "free_gib")) >= 0);
        double p = json_real_value(json_object_get(o, "price_usd_per_month"));
        assert_true(p >= price);
        price = p;
        const json_t *spec = json_object_get(o, "cluster_spec");
        assert_string_equal(json_string_value(json_object_get(spec, "node_type")),
                            json_string_value(json_object_get(o, "node_type")));
        assert_int_equal(json_integer_value(json_object_get(spec, "num_shards")),
                         json_integer_value(json_object_get(o, "num_shards")));
        assert_int_equal(json_integer_value(json_object_get(o, "rank")), (json_int_t)i + 1);
    }
}

static void test_alloc_classes(void **state)
{
    (void)state;
    assert_int_equal(sizing_alloc_class(1), 8);
    assert_int_equal(sizing_alloc_class(9), 16);
    assert_int_equal(sizing_alloc_class(17), 32);
    assert_int_equal(sizing_alloc_class(33), 48);
    assert_int_equal(sizing_alloc_class(65), 80);
    assert_int_equal(sizing_alloc_class(204), 224);
    assert_int_equal(sizing_alloc_class(257), 320);
    assert_int_equal(sizing_alloc_class(4097), 5120);
}

static void test_key_overhead(void **state)
{
    (void)state;
    /* 4-byte keys, 200-byte values: the value's string rounds up to 224,
     * plus the object, the entry, the key and the buckets. */
    double redis = sizing_key_overhead("redis", "7.0", false, false, 14.7e6, 4, 200);
    double redis_cm = sizing_key_overhead("redis", "7.0", true, false, 14.7e6, 4, 200);
    double valkey = sizing_key_overhead("valkey", "8.0", true, false, 14.7e6, 4, 200);
    assert_true(redis > 60 && redis < 120);
    assert_true(redis_cm > redis);  /* Redis 7.0's per-key slot links */
    assert_true(valkey < redis_cm); /* Valkey 8 embeds the key, dictionaries per slot */
    assert_true(sizing_key_overhead("redis", "7.0", false, true, 14.7e6, 4, 200) > redis);
}

/* 14.7M keys of 4 bytes with 200-byte values (2.9 GB), 80% GET, no
 * replicas, cluster mode disabled: at least 10.5 GB of node -- a .large
 * memory-optimized node, never m5.large or a t3. */
static void test_seed_workload(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        struct sizing_input in = base();
        in.engine = e == 0 ? "redis" : "valkey";
        in.engine_version = e == 0 ? "7.0" : "8.0";
        in.has_keys = true;
        in.keys = 14.7e6;
        in.avg_key_bytes = 4;
        in.avg_value_bytes = 200;
        in.rps = 20000;
        in.availability = SIZING_AVAILABILITY_NONE;
        in.mode = SIZING_MODE_DISABLED;
        json_t *out = sizing_recommend(&in, catalog, ncatalog);
        check_options(out);
        const char *t = first_type(out);
        assert_non_null(t);
        assert_true(strstr(t, ".large") != NULL && t[6] == 'r');
        size_t i;
        json_t *o;
        json_array_foreach (json_object_get(out, "options"), i, o) {
            const char *name = json_string_value(json_object_get(o, "node_type"));
            assert_true(strcmp(name, "cache.m5.large") != 0 && strncmp(name, "cache.t3", 8) != 0);
            assert_true(json_real_value(json_object_get(json_object_get(o, "memory"), "node_gib")) *
                            1.073741824 >=
                        10.5);
            assert_int_equal(json_integer_value(json_object_get(o, "replicas_per_shard")), 0);
            assert_true(has_warning(o, "no replica"));
        }
        json_decref(out);
    }
}

static void test_small_workload_takes_t3(void **state)
{
    (void)state;
    struct sizing_input in = base();
    in.data_bytes = 1e9;
    in.rps = 500;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    check_options(out);
    assert_string_equal(first_type(out), "cache.t3.medium");
    assert_true(has_warning(json_array_get(json_object_get(out, "options"), 0), "burstable"));
    json_decref(out);
    /* Past 2,000 requests/s, no t3 at all. */
    in.rps = 5000;
    out = sizing_recommend(&in, catalog, ncatalog);
    assert_true(strncmp(first_type(out), "cache.t3", 8) != 0);
    json_decref(out);
}

static void test_write_heavy_is_warned(void **state)
{
    (void)state;
    struct sizing_input in = base();
    in.data_bytes = 2e9;
    in.rps = 500000;
    in.read_ratio = 0.3;
    in.max_options = 50;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    check_options(out);
    size_t i, warned = 0;
    json_t *o;
    json_array_foreach (json_object_get(out, "options"), i, o) {
        warned += has_warning(o, "write-heavy");
        const json_t *t = json_object_get(o, "throughput");
        assert_true(json_real_value(json_object_get(t, "needed_per_primary_rps")) <=
                    0.8 * json_real_value(json_object_get(t, "capacity_per_node_rps")) + 1);
    }
    assert_true(warned > 0);
    json_decref(out);
}

static void test_production_has_two_replicas_across_zones(void **state)
{
    (void)state;
    struct sizing_input in = base();
    in.data_bytes = 20e9;
    in.rps = 50000;
    in.availability = SIZING_AVAILABILITY_PRODUCTION;
    in.azs = 3;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    check_options(out);
    json_t *o = json_array_get(json_object_get(out, "options"), 0);
    assert_int_equal(json_integer_value(json_object_get(o, "replicas_per_shard")), 2);
    assert_true(json_is_true(json_object_get(o, "multi_az")));
    assert_true(json_is_true(json_object_get(json_object_get(o, "cluster_spec"), "multi_az")));
    assert_false(has_warning(o, "zone"));
    json_decref(out);
    /* One zone: still two replicas, and the warning. */
    in.azs = 1;
    out = sizing_recommend(&in, catalog, ncatalog);
    assert_true(has_warning(json_array_get(json_object_get(out, "options"), 0), "one zone"));
    json_decref(out);
}

static void test_large_dataset_shards(void **state)
{
    (void)state;
    struct sizing_input in = base();
    in.data_bytes = 300e9;
    in.rps = 100000;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    check_options(out);
    size_t i;
    json_t *o;
    json_array_foreach (json_object_get(out, "options"), i, o) {
        assert_string_equal(json_string_value(json_object_get(o, "cluster_mode")), "enabled");
        assert_true(json_integer_value(json_object_get(o, "num_shards")) > 1);
    }
    json_decref(out);
}

static void test_budget_too_small(void **state)
{
    (void)state;
    struct sizing_input in = base();
    in.data_bytes = 50e9;
    in.max_monthly_usd = 10;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    assert_int_equal(json_array_size(json_object_get(out, "options")), 0);
    json_t *r = json_object_get(out, "reasons");
    assert_true(json_array_size(r) > 0);
    bool budget = false;
    size_t i;
    json_t *t;
    json_array_foreach (r, i, t) {
        budget = budget || strstr(json_string_value(t), "max_monthly_usd") != NULL;
    }
    assert_true(budget);
    json_decref(out);
}

static void test_families_and_replicas_cap(void **state)
{
    (void)state;
    static const char *const only[] = {"r7g", NULL};
    struct sizing_input in = base();
    in.data_bytes = 5e9;
    in.families = only;
    in.replicas = 7;
    json_t *out = sizing_recommend(&in, catalog, ncatalog);
    check_options(out);
    size_t i;
    json_t *o;
    json_array_foreach (json_object_get(out, "options"), i, o) {
        assert_non_null(strstr(json_string_value(json_object_get(o, "node_type")), ".r7g."));
        assert_int_equal(json_integer_value(json_object_get(o, "replicas_per_shard")), 5);
        assert_true(has_warning(o, "7 replicas"));
    }
    json_decref(out);
}

/* Random workloads: every option holds the data with the reserve and the
 * headroom, and they come cheapest first. */
/* The capacity_rps.<type> assumption of out. */
static const json_t *capacity_assumption(const json_t *out, const char *type)
{
    char name[96];
    size_t i;
    json_t *a;
    snprintf(name, sizeof(name), "capacity_rps.%s", type);
    json_array_foreach (json_object_get(out, "assumptions"), i, a) {
        if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0)
            return a;
    }
    fail_msg("no assumption %s", name);
    return NULL;
}

/* A node type calibrated on the fleet: the measured capacity replaces the
 * published one, pipelining multiplies it as it does the published one, and
 * the assumption says where it comes from; the others keep theirs. */
static void test_calibrated_capacity(void **state)
{
    (void)state;
    struct sizing_node_type types[2] = {catalog[3], catalog[6]}; /* m5.large, r5.large */
    types[0].capacity_rps = 40000;
    types[0].capacity_source = "calibration";
    types[0].capacity_note = "calibration 1234, on host vm-a";
    struct sizing_input in = base();
    in.data_bytes = 1e9;
    in.rps = 30000; /* within 80% of 40,000 */
    in.availability = SIZING_AVAILABILITY_NONE;
    in.mode = SIZING_MODE_DISABLED;
    json_t *out = sizing_recommend(&in, types, 2);
    const json_t *first = json_array_get(json_object_get(out, "options"), 0);
    assert_string_equal(first_type(out), "cache.m5.large");
    assert_float_equal(json_number_value(json_object_get(json_object_get(first, "throughput"),
                                                         "capacity_per_node_rps")),
                       40000, 0);
    const json_t *a = capacity_assumption(out, "cache.m5.large");
    assert_float_equal(json_number_value(json_object_get(a, "value")), 40000, 0);
    assert_string_equal(json_string_value(json_object_get(a, "source")), "calibration");
    assert_string_equal(json_string_value(json_object_get(a, "note")),
                        "calibration 1234, on host vm-a");
    a = capacity_assumption(out, "cache.r5.large");
    assert_string_equal(json_string_value(json_object_get(a, "source")), "published");
    json_decref(out);

    in.rps = 40000; /* past 80% of the calibrated m5.large: only the r5 holds it */
    out = sizing_recommend(&in, types, 2);
    assert_string_equal(first_type(out), "cache.r5.large");
    json_decref(out);
    in.pipeline = 4; /* 40,000 x 4^0.7 */
    out = sizing_recommend(&in, types, 2);
    assert_string_equal(first_type(out), "cache.m5.large");
    json_decref(out);

    assert_float_equal(sizing_pipeline_factor(1), 1, 0);
    assert_float_equal(sizing_pipeline_factor(0), 1, 0);
    assert_float_equal(sizing_pipeline_factor(4), pow(4, 0.7), 1e-12);
    assert_float_equal(sizing_pipeline_factor(64), pow(16, 0.7), 1e-12);
}

static void test_property_options_hold_and_sort(void **state)
{
    (void)state;
    srand(16);
    for (int round = 0; round < 300; round++) {
        struct sizing_input in = base();
        in.has_keys = rand() % 2;
        in.keys = 1000.0 + rand() % 50000000;
        in.avg_key_bytes = 1 + rand() % 100;
        in.avg_value_bytes = 1 + rand() % 20000;
        in.data_bytes = 1e6 * (1 + rand() % 500000);
        in.rps = rand() % 2000000;
        in.read_ratio = (rand() % 101) / 100.0;
        in.pipeline = 1 + rand() % 20;
        in.ttl = rand() % 2;
        in.growth_percent = rand() % 200;
        in.availability = (enum sizing_availability)(rand() % 3);
        in.mode = (enum sizing_mode)(rand() % 3);
        in.read_from_replicas = rand() % 2;
        in.max_options = 1 + rand() % 50;
        json_t *out = sizing_recommend(&in, catalog, ncatalog);
        check_options(out);
        assert_true(json_array_size(json_object_get(out, "options")) <= (size_t)in.max_options);
        if (json_array_size(json_object_get(out, "options")) == 0)
            assert_true(json_array_size(json_object_get(out, "reasons")) > 0);
        json_decref(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_classes),
        cmocka_unit_test(test_key_overhead),
        cmocka_unit_test(test_seed_workload),
        cmocka_unit_test(test_small_workload_takes_t3),
        cmocka_unit_test(test_write_heavy_is_warned),
        cmocka_unit_test(test_production_has_two_replicas_across_zones),
        cmocka_unit_test(test_large_dataset_shards),
        cmocka_unit_test(test_budget_too_small),
        cmocka_unit_test(test_families_and_replicas_cap),
        cmocka_unit_test(test_calibrated_capacity),
        cmocka_unit_test(test_property_options_hold_and_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
