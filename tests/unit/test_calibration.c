/* test_calibration.c -- the calibration of the sizing model
 * (controlplane/calibration.h): where it runs by default and what it
 * refuses, how many requests and keys its benchmark uses, and what the
 * benchmark's lines come to for a workload's mix. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "calibration.h"
#include "sizing.h"

/* Three hosts: a lost one with the most room, a big one with Valkey 8.0 and
 * 8.1, a small one with Redis 7.0 and Valkey 8.0. */
static const char *const CHOICES =
    "{\"hosts\": ["
    "  {\"id\": \"00000000-0000-4000-8000-000000000001\", \"name\": \"vm-a\", \"status\": "
    "   \"lost\", \"vcpus\": 64, \"free_vcpus\": 64, \"free_memory_mib\": 262144,"
    "   \"lines\": {\"valkey\": [\"8.0\"]}},"
    "  {\"id\": \"00000000-0000-4000-8000-000000000002\", \"name\": \"vm-b\", \"status\": "
    "   \"healthy\", \"vcpus\": 16, \"free_vcpus\": 14, \"free_memory_mib\": 30000,"
    "   \"lines\": {\"valkey\": [\"8.0\", \"8.1\"]}},"
    "  {\"id\": \"00000000-0000-4000-8000-000000000003\", \"name\": \"vm-c\", \"status\": "
    "   \"healthy\", \"vcpus\": 4, \"free_vcpus\": 4, \"free_memory_mib\": 8192,"
    "   \"lines\": {\"redis\": [\"7.0\"], \"valkey\": [\"8.0\"]}}],"
    " \"node_types\": ["
    "  {\"name\": \"cache.t3.micro\", \"vcpus\": 2, \"memory_gib\": 0.5, \"memory_mib\": 512,"
    "   \"burstable\": true},"
    "  {\"name\": \"cache.m5.large\", \"vcpus\": 2, \"memory_gib\": 6.38, \"memory_mib\": 6533,"
    "   \"burstable\": false},"
    "  {\"name\": \"cache.m5.xlarge\", \"vcpus\": 4, \"memory_gib\": 12.94, \"memory_mib\": "
    "   13251, \"burstable\": false},"
    "  {\"name\": \"cache.r5.large\", \"vcpus\": 2, \"memory_gib\": 13.07, \"memory_mib\": 13384,"
    "   \"burstable\": false}],"
    " \"lines\": {\"redis\": [\"7.0\"], \"valkey\": [\"7.2\", \"8.0\", \"8.1\", \"9.0\"]}}";

static json_t *choices(void)
{
    json_error_t e;
    json_t *c = json_loads(CHOICES, 0, &e);
    if (c == NULL)
        fail_msg("CHOICES: %s", e.text);
    return c;
}

static struct calib_choice choose_ok(const char *body_text)
{
    json_t *body = json_loads(body_text, 0, NULL), *c = choices();
    struct calib_choice out;
    struct problem p = {0};
    assert_non_null(body);
    if (!calib_choose(body, c, &out, &p))
        fail_msg("refused %s: %s", body_text, p.detail);
    json_decref(body);
    json_decref(c);
    return out;
}

/* Refused with code, a detail containing want (NULL: not checked), and
 * for VALIDATION_FAILED the fields named, in order. */
static void choose_refused(const char *body_text, enum problem_code code, const char *want,
                           const char *const *fields)
{
    json_t *body = json_loads(body_text, 0, NULL), *c = choices();
    struct calib_choice out;
    struct problem p = {0};
    assert_non_null(body);
    assert_false(calib_choose(body, c, &out, &p));
    assert_true(p.set);
    assert_int_equal(p.code, code);
    if (want != NULL && strstr(p.detail, want) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", p.detail, want);
    size_t n = 0;
    for (; fields != NULL && fields[n] != NULL; n++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(p.errors, n), "field")), fields[n]);
    if (fields != NULL)
        assert_int_equal(json_array_size(p.errors), n);
    problem_clear(&p);
    json_decref(body);
    json_decref(c);
}

static void test_defaults(void **state)
{
    (void)state;
    /* The healthy host with the most free memory, Valkey's newest line it
     * runs, the smallest non-burstable type that fits. */
    struct calib_choice c = choose_ok("{}");
    assert_string_equal(c.host_name, "vm-b");
    assert_string_equal(c.host_id, "00000000-0000-4000-8000-000000000002");
    assert_int_equal(c.host_vcpus, 16);
    assert_string_equal(c.engine, "valkey");
    assert_string_equal(c.engine_version, "8.1");
    assert_string_equal(c.node_type, "cache.m5.large");
    assert_float_equal(c.node_memory_gib, 6.38, 1e-9);

    /* Redis: only vm-c runs it. */
    c = choose_ok("{\"engine\": \"redis\"}");
    assert_string_equal(c.host_name, "vm-c");
    assert_string_equal(c.engine_version, "7.0");
    assert_string_equal(c.node_type, "cache.m5.large");

    /* A type only vm-b has room for. */
    c = choose_ok("{\"node_type\": \"cache.r5.large\"}");
    assert_string_equal(c.host_name, "vm-b");

    /* A host asked: its newest line. */
    c = choose_ok("{\"host_id\": \"00000000-0000-4000-8000-000000000003\"}");
    assert_string_equal(c.host_name, "vm-c");
    assert_string_equal(c.engine_version, "8.0");
    assert_string_equal(c.node_type, "cache.m5.large");

    /* Burstable when asked. */
    c = choose_ok("{\"node_type\": \"cache.t3.micro\", \"engine_version\": \"8.0\"}");
    assert_string_equal(c.node_type, "cache.t3.micro");
    assert_string_equal(c.engine_version, "8.0");
    assert_string_equal(c.host_name, "vm-b");
}

static void test_refusals(void **state)
{
    (void)state;
    static const char *const all3[] = {"host_id", "node_type", "engine_version", NULL};
    choose_refused("{\"host_id\": \"00000000-0000-4000-8000-00000000000f\", \"node_type\": "
                   "\"cache.z9.huge\", \"engine_version\": \"6.2\"}",
                   PROBLEM_VALIDATION_FAILED, NULL, all3);
    static const char *const version[] = {"engine_version", NULL};
    choose_refused("{\"engine\": \"redis\", \"engine_version\": \"8.0\"}",
                   PROBLEM_VALIDATION_FAILED, NULL, version);

    choose_refused("{\"host_id\": \"00000000-0000-4000-8000-000000000001\"}",
                   PROBLEM_INSUFFICIENT_CAPACITY, "host vm-a is lost: no node can be placed on it",
                   NULL);
    choose_refused("{\"host_id\": \"00000000-0000-4000-8000-000000000003\", \"engine_version\": "
                   "\"8.1\"}",
                   PROBLEM_ENGINE_NOT_INSTALLED, "host vm-c does not run valkey 8.1", NULL);
    choose_refused("{\"host_id\": \"00000000-0000-4000-8000-000000000002\", \"engine\": "
                   "\"redis\"}",
                   PROBLEM_ENGINE_NOT_INSTALLED, "host vm-b runs no line of redis in the catalog",
                   NULL);
    choose_refused("{\"host_id\": \"00000000-0000-4000-8000-000000000003\", \"node_type\": "
                   "\"cache.r5.large\"}",
                   PROBLEM_INSUFFICIENT_CAPACITY,
                   "host vm-c has 4 vCPU and 8192 MiB free; a cache.r5.large needs 2 vCPU and "
                   "13384 MiB",
                   NULL);
    choose_refused("{\"engine_version\": \"9.0\"}", PROBLEM_ENGINE_NOT_INSTALLED,
                   "no healthy host runs valkey 9.0", NULL);
    choose_refused("{\"engine\": \"redis\", \"node_type\": \"cache.m5.xlarge\"}",
                   PROBLEM_INSUFFICIENT_CAPACITY,
                   "no healthy host that runs redis has room for a cache.m5.xlarge", NULL);
}

/* A host with room for no non-burstable type. */
static void test_no_room(void **state)
{
    json_t *c = choices(), *body = json_object();
    struct calib_choice out;
    struct problem p = {0};
    (void)state;
    json_t *host = json_array_get(json_object_get(c, "hosts"), 2);
    json_object_set_new(host, "free_memory_mib", json_integer(4096));
    json_object_set_new(body, "host_id", json_string("00000000-0000-4000-8000-000000000003"));
    assert_false(calib_choose(body, c, &out, &p));
    assert_int_equal(p.code, PROBLEM_INSUFFICIENT_CAPACITY);
    assert_string_equal(p.detail, "host vm-c has room for no non-burstable node type (4 vCPU and "
                                  "4096 MiB free)");
    json_decref(body);
    json_decref(c);
}

static void test_params(void **state)
{
    struct calib_params p;
    (void)state;
    json_t *body = json_object();
    calib_params_read(body, &p);
    assert_int_equal(p.value_bytes, 200);
    assert_float_equal(p.read_ratio, 0.8, 0);
    assert_int_equal(p.pipeline, 1);
    assert_int_equal(p.clients, 20);
    assert_int_equal(p.duration_s, 10);
    json_decref(body);
    body = json_pack("{s:i, s:f, s:i, s:i, s:i}", "value_bytes", 1024, "read_ratio", 0.5,
                     "pipeline", 8, "clients", 50, "duration_s", 20);
    calib_params_read(body, &p);
    assert_int_equal(p.value_bytes, 1024);
    assert_float_equal(p.read_ratio, 0.5, 0);
    assert_int_equal(p.pipeline, 8);
    assert_int_equal(p.clients, 50);
    assert_int_equal(p.duration_s, 20);
    json_decref(body);
}

static void test_requests_and_deadlines(void **state)
{
    struct calib_params p = {200, 0.8, 1, 20, 10};
    (void)state;
    assert_int_equal(calib_pilot_requests(&p), 20000);
    p.pipeline = 16;
    assert_int_equal(calib_pilot_requests(&p), 32000);
    p.clients = 500;
    p.pipeline = 64;
    assert_int_equal(calib_pilot_requests(&p), 1000000);
    p.clients = 20;
    p.pipeline = 1;

    /* 10,000 per test in 0.5 s: 200,000 per test take the 10 s. */
    assert_int_equal(calib_main_requests(&p, 10000, 0.5), 200000);
    /* Never fewer than the pilot's, never more than 100 M. */
    assert_int_equal(calib_main_requests(&p, 10000, 4.9), 20408);
    assert_int_equal(calib_main_requests(&p, 10000, 1e-9), 100000000);
    assert_int_equal(calib_main_requests(&p, 10000, 0), 100000000);
    /* A pilot that took half the duration is measurement enough. */
    assert_int_equal(calib_main_requests(&p, 10000, 5.0), 0);
    assert_int_equal(calib_main_requests(&p, 10000, 30), 0);

    assert_int_equal(calib_deadline_s(&p, true), 12);
    assert_int_equal(calib_deadline_s(&p, false), 17);
    p.duration_s = 20;
    assert_int_equal(calib_deadline_s(&p, false), 32);
    p.duration_s = 1;
    assert_int_equal(calib_deadline_s(&p, false), 3);
}

static void test_keys(void **state)
{
    struct calib_params p = {200, 0.8, 1, 20, 10};
    (void)state;
    /* A third of the SETs, so that most GETs find their key. */
    assert_int_equal(calib_keys(300000, &p, "valkey", "8.0", 6.38), 100000);
    assert_int_equal(calib_keys(2, &p, "valkey", "8.0", 6.38), 1);
    /* Large values on a small node: what half its maxmemory holds. */
    p.value_bytes = 1 << 20;
    long long keys = calib_keys(30000000, &p, "valkey", "8.0", 0.5);
    double per_key = 16 + (1 << 20) +
                     sizing_key_overhead("valkey", "8.0", false, false, (double)keys, 16, 1 << 20);
    assert_int_equal(keys, (long long)(0.5 * 1024 * 1024 * 1024 * 0.75 / 2 / per_key));
    assert_true(keys > 100 && keys < 200);
    /* Never none. */
    assert_int_equal(calib_keys(30000000, &p, "valkey", "8.0", 0.0001), 1);
}

static struct engine_bench_csv two(double get_rps, double get_p50, double get_p99, double set_rps,
                                   double set_p50, double set_p99)
{
    struct engine_bench_csv csv = {.count = 2};
    csv.tests[0] = (struct engine_bench_test){"SET", set_rps, set_p50, set_p99};
    csv.tests[1] = (struct engine_bench_test){"GET", get_rps, get_p50, get_p99};
    return csv;
}

static void test_combine(void **state)
{
    struct calib_figures mix;
    char err[128];
    (void)state;
    /* 80% of requests at 1/100000 s, 20% at 1/50000 s: 1 / (0.8/1e5 + 0.2/5e4) = 83333.3 */
    struct engine_bench_csv csv = two(100000, 0.2, 0.9, 50000, 0.4, 0.7);
    assert_true(calib_combine(&csv, 0.8, &mix, err, sizeof(err)));
    assert_float_equal(mix.rps, 1.0 / (0.8 / 100000 + 0.2 / 50000), 1e-6);
    assert_float_equal(mix.p50_ms, 0.4, 0);
    assert_float_equal(mix.p99_ms, 0.9, 0);

    /* All reads, all writes: the one command. */
    assert_true(calib_combine(&csv, 1.0, &mix, err, sizeof(err)));
    assert_float_equal(mix.rps, 100000, 1e-9);
    assert_float_equal(mix.p50_ms, 0.2, 0);
    assert_true(calib_combine(&csv, 0.0, &mix, err, sizeof(err)));
    assert_float_equal(mix.rps, 50000, 1e-9);
    assert_float_equal(mix.p99_ms, 0.7, 0);

    /* The mix is never faster than its faster command, nor slower than
     * its slower one. */
    for (double r = 0; r <= 1.0; r += 0.05) {
        assert_true(calib_combine(&csv, r, &mix, err, sizeof(err)));
        assert_true(mix.rps >= 50000 - 1e-6 && mix.rps <= 100000 + 1e-6);
        assert_true(mix.p50_ms <= mix.p99_ms);
    }

    /* A command with a share and no line, or no requests. */
    struct engine_bench_csv only_set = {.count = 1};
    only_set.tests[0] = (struct engine_bench_test){"SET", 100, 1, 2};
    assert_false(calib_combine(&only_set, 0.5, &mix, err, sizeof(err)));
    assert_string_equal(err, "the benchmark reported no line for GET");
    assert_true(calib_combine(&only_set, 0.0, &mix, err, sizeof(err)));
    csv = two(0, 0, 0, 100, 1, 1);
    assert_false(calib_combine(&csv, 0.5, &mix, err, sizeof(err)));
    assert_string_equal(err, "the benchmark reported no requests for GET");
}

static void test_results_json(void **state)
{
    struct calib_figures mix;
    char err[128];
    (void)state;
    struct engine_bench_csv csv = two(34602.07, 0.351, 0.919, 35587.19, 0.359, 0.735);
    assert_true(calib_combine(&csv, 0.8, &mix, err, sizeof(err)));
    json_t *r = calib_results_json(&csv, &mix, 16);
    double rps = json_number_value(json_object_get(r, "requests_per_second"));
    assert_float_equal(rps, round(mix.rps * 100) / 100, 1e-9);
    assert_float_equal(json_number_value(json_object_get(r, "requests_per_second_per_vcpu")),
                       round(mix.rps / 16 * 100) / 100, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(r, "host_vcpus")), 16);
    assert_float_equal(json_number_value(json_object_get(r, "p50_latency_ms")), 0.359, 1e-12);
    assert_float_equal(json_number_value(json_object_get(r, "p99_latency_ms")), 0.919, 1e-12);
    json_t *get = json_object_get(r, "get");
    assert_float_equal(json_number_value(json_object_get(get, "requests_per_second")), 34602.07,
                       1e-9);
    assert_float_equal(json_number_value(json_object_get(get, "p99_latency_ms")), 0.919, 1e-12);
    assert_float_equal(
        json_number_value(json_object_get(json_object_get(r, "set"), "requests_per_second")),
        35587.19, 1e-9);
    json_decref(r);
}

/* The body's limits: duration at most 20 s, unknown fields refused. */
static void test_request_spec(void **state)
{
    static const struct {
        const char *body;
        const char *field; /* NULL: accepted */
    } cases[] = {
        {"{}", NULL},
        {"{\"duration_s\": 20, \"clients\": 500, \"pipeline\": 64, \"read_ratio\": 1}", NULL},
        {"{\"host_id\": \"00000000-0000-4000-8000-000000000002\"}", NULL},
        {"{\"duration_s\": 21}", "duration_s"},
        {"{\"duration_s\": 0}", "duration_s"},
        {"{\"clients\": 501}", "clients"},
        {"{\"pipeline\": 0}", "pipeline"},
        {"{\"value_bytes\": 1048577}", "value_bytes"},
        {"{\"read_ratio\": 1.5}", "read_ratio"},
        {"{\"engine\": \"memcached\"}", "engine"},
        {"{\"host_id\": \"vm-a\"}", "host_id"},
        {"{\"warmup\": true}", "warmup"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *body = json_loads(cases[i].body, 0, NULL), *errors = json_array();
        bool ok = jspec_check(body, calib_request_spec, errors);
        if (cases[i].field == NULL) {
            assert_true(ok);
        } else {
            assert_false(ok);
            assert_string_equal(
                json_string_value(json_object_get(json_array_get(errors, 0), "field")),
                cases[i].field);
        }
        json_decref(errors);
        json_decref(body);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_no_room),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_requests_and_deadlines),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_combine),
        cmocka_unit_test(test_results_json),
        cmocka_unit_test(test_request_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
