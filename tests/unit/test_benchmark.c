/* test_benchmark.c -- the engines' load generators (engine/benchmark.h):
 * their --csv output, captured from valkey-benchmark 8.0 and
 * redis-benchmark 7.0 (fixtures/capture.sh), and hand-written edge cases;
 * the command line; finding the program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "benchmark.h"
#include "xalloc.h"

#include "fixtures/fixture.h"

static struct engine_bench_csv parse_ok(const char *text)
{
    struct engine_bench_csv csv;
    char err[256] = "";
    if (!engine_bench_parse_csv(text, strlen(text), &csv, err, sizeof(err)))
        fail_msg("refused: %s", err);
    return csv;
}

/* Refused, with a message that contains want, and nothing kept. */
static void parse_refused(const char *text, const char *want)
{
    struct engine_bench_csv csv;
    char err[256] = "";
    assert_false(engine_bench_parse_csv(text, strlen(text), &csv, err, sizeof(err)));
    assert_int_equal(csv.count, 0);
    if (strstr(err, want) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", err, want);
}

static void test_captured_output(void **state)
{
    static const struct {
        const char *engine;
        double set_rps, set_p50, set_p99, get_rps, get_p50, get_p99;
    } cases[] = {
        {"redis", 38461.54, 0.239, 1.751, 31695.72, 0.359, 1.831},
        {"valkey", 22446.69, 0.447, 4.295, 21164.02, 0.479, 3.447},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        char *text = fixture_load_engine(cases[i].engine, "benchmark.csv", &len);
        struct engine_bench_csv csv;
        char err[256];
        assert_true(engine_bench_parse_csv(text, len, &csv, err, sizeof(err)));
        assert_int_equal(csv.count, 2);
        const struct engine_bench_test *set = engine_bench_find(&csv, "SET");
        const struct engine_bench_test *get = engine_bench_find(&csv, "get");
        assert_non_null(set);
        assert_non_null(get);
        assert_string_equal(set->name, "SET");
        assert_float_equal(set->rps, cases[i].set_rps, 1e-9);
        assert_float_equal(set->p50_ms, cases[i].set_p50, 1e-9);
        assert_float_equal(set->p99_ms, cases[i].set_p99, 1e-9);
        assert_float_equal(get->rps, cases[i].get_rps, 1e-9);
        assert_float_equal(get->p50_ms, cases[i].get_p50, 1e-9);
        assert_float_equal(get->p99_ms, cases[i].get_p99, 1e-9);
        assert_null(engine_bench_find(&csv, "INCR"));
        free(text);
    }
}

/* A wrong password: the program says so and exits 1, with no CSV. */
static void test_captured_refusal(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        const char *engine = e == 0 ? "redis" : "valkey";
        size_t len, slen;
        char *text = fixture_load_engine(engine, "benchmark_wrongpass.txt", &len);
        char *status = fixture_load_engine(engine, "benchmark_wrongpass.status", &slen);
        struct engine_bench_csv csv;
        char err[256];
        assert_int_equal(atoi(status), 1);
        assert_non_null(strstr(text, "WRONGPASS"));
        assert_false(engine_bench_parse_csv(text, len, &csv, err, sizeof(err)));
        assert_non_null(strstr(err, "no header line"));
        free(text);
        free(status);
    }
}

static void test_columns_found_by_name(void **state)
{
    (void)state;
    struct engine_bench_csv csv =
        parse_ok("WARNING: something the program thought worth saying\r\n"
                 "\r\n"
                 "p99_latency_ms,\"extra\",rps,\"test\",p50_latency_ms\r\n"
                 "\"2.5\",\"x\",\"1000\",\"GET\",\"0.5\"\r\n"
                 "\r\n"
                 "3,,2000.5,\"SET\",1e0\r\n");
    assert_int_equal(csv.count, 2);
    assert_string_equal(csv.tests[0].name, "GET");
    assert_float_equal(csv.tests[0].rps, 1000, 0);
    assert_float_equal(csv.tests[0].p50_ms, 0.5, 0);
    assert_float_equal(csv.tests[0].p99_ms, 2.5, 0);
    assert_float_equal(csv.tests[1].rps, 2000.5, 0);
    assert_float_equal(csv.tests[1].p50_ms, 1, 0);
}

static void test_quotes(void **state)
{
    (void)state;
    struct engine_bench_csv csv =
        parse_ok("\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n"
                 "\"LPUSH (\"\"needed\"\")\",\"1\",\"0\",\"0\"");
    assert_int_equal(csv.count, 1);
    assert_string_equal(csv.tests[0].name, "LPUSH (\"needed\")");
    /* A header alone: no test, but the output is what it should be. */
    csv = parse_ok("\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n");
    assert_int_equal(csv.count, 0);
}

static void test_refusals(void **state)
{
    const char *h = "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n";
    char text[512];
    (void)state;
    parse_refused("", "no header line");
    parse_refused("SET: 35587.19 requests per second\n", "no header line");
    parse_refused("\"test\",\"rps\",\"p50_latency_ms\"\n", "line 1: the header has no column "
                                                           "p99_latency_ms");
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"\"SET\",\"1\",\"2\"", "line 2: 3 fields where the header has 4"},
        {"\"SET\",\"1\",\"2\",\"3\",\"4\"", "line 2: 5 fields"},
        {"\"SET\",\"-1\",\"0\",\"0\"", "line 2: a figure of test SET is not a number >= 0"},
        {"\"SET\",\"nan\",\"0\",\"0\"", "not a number"},
        {"\"SET\",\"inf\",\"0\",\"0\"", "not a number"},
        {"\"SET\",\"1x\",\"0\",\"0\"", "not a number"},
        {"\"SET\",\"\",\"0\",\"0\"", "not a number"},
        {"\"\",\"1\",\"0\",\"0\"", "line 2: a test's name must be 1 to 31 bytes"},
        {"\"0123456789012345678901234567890123\",\"1\",\"0\",\"0\"", "1 to 31 bytes"},
        {"\"SET,\"1\",\"0\",\"0\"", "text after a quoted field"},
        {"\"SET\",\"1\",\"0\",\"0", "line 2: a quote is not closed"},
        {"\"SET\",\"1\",\"0\",\"0\"\n\"set\",\"1\",\"0\",\"0\"",
         "line 3: test set is listed twice"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "%s%s\n", h, bad[i].line);
        parse_refused(text, bad[i].want);
    }
    /* Too many fields, too long a field, too many tests. */
    char *wide = xasprintf("%s%s\n", h, ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,");
    parse_refused(wide, "line 2: more than 32 fields");
    free(wide);
    char *longf = xasprintf("%s\"SET\",\"%070d\",\"0\",\"0\"\n", h, 1);
    parse_refused(longf, "line 2: a field is longer than 63 bytes");
    free(longf);
    char many[4096];
    size_t n = (size_t)snprintf(many, sizeof(many), "%s", h);
    for (int t = 0; t <= ENGINE_BENCH_TESTS_MAX; t++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "\"T%d\",\"1\",\"0\",\"0\"\n", t);
    parse_refused(many, "line 18: more than 16 tests");
}

/* The text need not end in a NUL: only len bytes are read. */
static void test_reads_only_len_bytes(void **state)
{
    const char text[] = "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n"
                        "\"SET\",\"100\",\"1\",\"2\"\n\"GET\",\"bad";
    struct engine_bench_csv csv;
    char err[128];
    (void)state;
    char *copy = xmalloc(sizeof(text) - 1);
    memcpy(copy, text, sizeof(text) - 1);
    size_t upto = (size_t)(strstr(text, "\"GET") - text);
    assert_true(engine_bench_parse_csv(copy, upto, &csv, err, sizeof(err)));
    assert_int_equal(csv.count, 1);
    assert_false(engine_bench_parse_csv(copy, sizeof(text) - 1, &csv, err, sizeof(err)));
    free(copy);
}

static void test_argv(void **state)
{
    const struct engine_bench_args a = {
        "/usr/bin/valkey-benchmark", "10.0.0.7", 7001, "s3cret", 20, 50000, 200, 4, 16666};
    const char *want[] = {"/usr/bin/valkey-benchmark",
                          "-h",
                          "10.0.0.7",
                          "-p",
                          "7001",
                          "-a",
                          "s3cret",
                          "-c",
                          "20",
                          "-n",
                          "50000",
                          "-d",
                          "200",
                          "-P",
                          "4",
                          "-r",
                          "16666",
                          "-t",
                          "set,get",
                          "--csv",
                          NULL};
    (void)state;
    char **argv = engine_bench_argv(&a);
    for (size_t i = 0; want[i] != NULL; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[sizeof(want) / sizeof(want[0]) - 1]);
    engine_bench_argv_free(argv);

    struct engine_bench_args open = a;
    open.password = NULL;
    argv = engine_bench_argv(&open);
    assert_string_equal(argv[5], "-c");
    engine_bench_argv_free(argv);
}

/* The engine's own program first, the other's else, executables in
 * absolute directories only. */
static void test_find_program(void **state)
{
    char dir[] = "/tmp/cairn-bench-XXXXXX", path[256], out[256];
    (void)state;
    assert_non_null(mkdtemp(dir));
    char *search = xasprintf("relative:%s:/nonexistent", dir);
    assert_false(engine_bench_find_program("valkey", search, out, sizeof(out)));

    snprintf(path, sizeof(path), "%s/redis-benchmark", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_false(
        engine_bench_find_program("valkey", search, out, sizeof(out))); /* not executable */
    assert_int_equal(chmod(path, 0755), 0);
    assert_true(engine_bench_find_program("valkey", search, out, sizeof(out)));
    assert_string_equal(out, path);

    char other[256];
    snprintf(other, sizeof(other), "%s/valkey-benchmark", dir);
    f = fopen(other, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(other, 0755), 0);
    assert_true(engine_bench_find_program("valkey", search, out, sizeof(out)));
    assert_string_equal(out, other);
    assert_true(engine_bench_find_program("redis", search, out, sizeof(out)));
    assert_string_equal(out, path);

    unlink(path);
    unlink(other);
    rmdir(dir);
    free(search);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_output),
        cmocka_unit_test(test_captured_refusal),
        cmocka_unit_test(test_columns_found_by_name),
        cmocka_unit_test(test_quotes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reads_only_len_bytes),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_find_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
