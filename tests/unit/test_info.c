/* test_info.c -- the INFO parser (engine/info.h) on real Redis 7.0 and Valkey
 * 8.0 output and on hand-written edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "info.h"
#include "xalloc.h"

#include "fixtures/fixture.h"

/* What the captured INFO everything fixtures say (see fixtures/capture.sh). */
struct info_case {
    const char *engine;
    int primary_port, replica_port;
    const char *redis_version;
    const char *valkey_version; /* NULL: no such key (Redis) */
    const char *mode_key;       /* Redis says redis_mode, Valkey server_mode */
    const char *slave0;         /* the primary's replica line */
};

static const struct info_case cases[] = {
    {"redis", 27056, 27057, "7.0.15", NULL, "redis_mode",
     "ip=127.0.0.1,port=27057,state=online,offset=507,lag=0"},
    {"valkey", 22525, 22526, "7.2.4", "8.0.1", "server_mode",
     "ip=127.0.0.1,port=22526,state=online,offset=507,lag=1,type=replica"},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *const section_order[] = {
    "Server",  "Clients",      "Memory",     "Persistence",  "Stats",   "Replication", "CPU",
    "Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace",
};

static struct engine_info *load_info(const char *engine, const char *file, char **text, size_t *len)
{
    *text = fixture_load_engine(engine, file, len);
    return engine_info_parse(*text, *len);
}

/* Count the lines of text that contain a ':' (what the parser should keep). */
static size_t count_entries(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p;) {
        size_t line = strcspn(p, "\n");
        if (memchr(p, ':', line) != NULL)
            n++;
        p += line + (p[line] == '\n');
    }
    return n;
}

static void expect_ll(const struct engine_info *info, const char *section, const char *key,
                      long long want)
{
    long long got = -12345;
    if (!engine_info_get_ll(info, section, key, &got))
        fail_msg("%s is not an integer (value \"%s\")", key,
                 engine_info_get(info, section, key) ? engine_info_get(info, section, key)
                                                     : "(absent)");
    if (got != want)
        fail_msg("%s: got %lld, expected %lld", key, got, want);
}

static void test_primary_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct info_case *k = &cases[c];
        char *text, buf[64];
        size_t len, nsections, total = 0;
        struct engine_info *info = load_info(k->engine, "info_primary.txt", &text, &len);
        const struct engine_info_section *s = engine_info_sections(info, &nsections);

        assert_int_equal(nsections, sizeof(section_order) / sizeof(section_order[0]));
        for (size_t i = 0; i < nsections; i++) {
            assert_string_equal(s[i].name, section_order[i]);
            total += s[i].count;
        }
        assert_int_equal(total, count_entries(text));
        assert_int_equal(engine_info_skipped(info), 0);
        assert_int_equal(engine_info_section(info, "modules")->count, 0);

        assert_string_equal(engine_info_get(info, "Server", "redis_version"), k->redis_version);
        if (k->valkey_version != NULL) {
            assert_string_equal(engine_info_get(info, NULL, "valkey_version"), k->valkey_version);
            assert_string_equal(engine_info_get(info, NULL, "server_name"), "valkey");
        } else {
            assert_null(engine_info_get(info, NULL, "valkey_version"));
            assert_null(engine_info_get(info, NULL, "server_name"));
        }
        assert_string_equal(engine_info_get(info, "server", k->mode_key), "standalone");
        expect_ll(info, "server", "tcp_port", k->primary_port);
        assert_string_equal(engine_info_get(info, NULL, "config_file"), "");

        /* Values containing ':' are kept whole. */
        assert_non_null(strstr(engine_info_get(info, NULL, "executable"), "-server"));

        assert_string_equal(engine_info_get(info, "Replication", "role"), "master");
        assert_null(engine_info_get(info, "Server", "role"));
        expect_ll(info, "replication", "connected_slaves", 1);
        expect_ll(info, NULL, "master_repl_offset", 507);
        const char *slave0 = engine_info_get(info, "replication", "slave0");
        assert_string_equal(slave0, k->slave0);
        assert_true(engine_info_field(slave0, "ip", buf, sizeof(buf)));
        assert_string_equal(buf, "127.0.0.1");
        long long port = 0, offset = 0;
        assert_true(engine_info_field_ll(slave0, "port", &port));
        assert_int_equal(port, k->replica_port);
        assert_true(engine_info_field(slave0, "state", buf, sizeof(buf)));
        assert_string_equal(buf, "online");
        assert_true(engine_info_field_ll(slave0, "offset", &offset));
        assert_int_equal(offset, 507);

        const char *db0 = engine_info_get(info, "keyspace", "db0");
        long long keys = 0, expires = 0, avg_ttl = 0;
        assert_true(engine_info_field_ll(db0, "keys", &keys));
        assert_true(engine_info_field_ll(db0, "expires", &expires));
        assert_true(engine_info_field_ll(db0, "avg_ttl", &avg_ttl));
        assert_int_equal(keys, 12);
        assert_int_equal(expires, 1);
        assert_true(avg_ttl > 3500000 && avg_ttl <= 3600000);

        const char *get = engine_info_get(info, "commandstats", "cmdstat_get");
        long long calls = 0, usec = 0, rejected = -1, failed = -1;
        double per_call = 0;
        assert_true(engine_info_field_ll(get, "calls", &calls));
        assert_true(engine_info_field_ll(get, "usec", &usec));
        assert_true(engine_info_field_double(get, "usec_per_call", &per_call));
        assert_true(engine_info_field_ll(get, "rejected_calls", &rejected));
        assert_true(engine_info_field_ll(get, "failed_calls", &failed));
        assert_int_equal(calls, 2);
        assert_true(per_call > 0 && per_call * (double)calls <= (double)usec + 0.01);
        assert_int_equal(rejected, 0);
        assert_int_equal(failed, 0);
        long long incr_failed = 0;
        assert_true(engine_info_field_ll(engine_info_get(info, NULL, "cmdstat_incr"),
                                         "failed_calls", &incr_failed));
        assert_int_equal(incr_failed, 1);
        long long errors = 0;
        assert_true(engine_info_field_ll(engine_info_get(info, "errorstats", "errorstat_ERR"),
                                         "count", &errors));
        assert_int_equal(errors, 1);

        long long used = 0;
        double frag = 0, peak_perc = 0;
        assert_true(engine_info_get_ll(info, "memory", "used_memory", &used));
        assert_true(used > 100000);
        assert_true(engine_info_get_double(info, "memory", "mem_fragmentation_ratio", &frag));
        assert_true(frag > 0);
        /* "100.16%" is not a number; "1.11M" not an integer. */
        assert_false(engine_info_get_double(info, NULL, "used_memory_peak_perc", &peak_perc));
        assert_false(engine_info_get_ll(info, NULL, "used_memory_human", &used));
        expect_ll(info, "cluster", "cluster_enabled", 0);

        engine_info_free(info);
        free(text);
    }
}

static void test_replica_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct info_case *k = &cases[c];
        char *text;
        size_t len;
        struct engine_info *info = load_info(k->engine, "info_replica.txt", &text, &len);

        assert_int_equal(engine_info_skipped(info), 0);
        assert_string_equal(engine_info_get(info, "replication", "role"), "slave");
        assert_string_equal(engine_info_get(info, "replication", "master_host"), "127.0.0.1");
        expect_ll(info, "replication", "master_port", k->primary_port);
        expect_ll(info, "server", "tcp_port", k->replica_port);
        assert_string_equal(engine_info_get(info, NULL, "master_link_status"), "up");
        expect_ll(info, NULL, "master_sync_in_progress", 0);
        expect_ll(info, NULL, "slave_repl_offset", 507);
        expect_ll(info, "persistence", "loading", 0);
        expect_ll(info, "replication", "connected_slaves", 0);
        assert_null(engine_info_get(info, NULL, "slave0"));
        long long keys = 0;
        assert_true(engine_info_field_ll(engine_info_get(info, "keyspace", "db0"), "keys", &keys));
        assert_int_equal(keys, 12);

        engine_info_free(info);
        free(text);
    }
}

/* Valkey 8.0 adds keys Redis 7.0 lacks (and keeps redis_version for
 * clients, at 7.2.4); check the parser exposes them, not that it knows them. */
static void test_valkey_only_keys(void **state)
{
    char *text;
    size_t len;
    struct engine_info *info = load_info("valkey", "info_primary.txt", &text, &len);
    char buf[32];

    (void)state;
    assert_string_equal(engine_info_get(info, "server", "availability_zone"), "");
    assert_true(
        engine_info_field(engine_info_get(info, "server", "listener0"), "name", buf, sizeof(buf)));
    assert_string_equal(buf, "tcp");
    assert_non_null(engine_info_get(info, "stats", "eventloop_cycles"));
    assert_true(engine_info_field(engine_info_get(info, NULL, "slave0"), "type", buf, sizeof(buf)));
    assert_string_equal(buf, "replica");
    engine_info_free(info);
    free(text);

    info = load_info("redis", "info_primary.txt", &text, &len);
    assert_null(engine_info_get(info, NULL, "availability_zone"));
    assert_false(
        engine_info_field(engine_info_get(info, NULL, "slave0"), "type", buf, sizeof(buf)));
    engine_info_free(info);
    free(text);
}

static void test_empty(void **state)
{
    size_t n = 99;

    (void)state;
    struct engine_info *info = engine_info_parse("", 0);
    engine_info_sections(info, &n);
    assert_int_equal(n, 0);
    assert_null(engine_info_get(info, NULL, "role"));
    assert_null(engine_info_section(info, "Server"));
    assert_int_equal(engine_info_skipped(info), 0);
    engine_info_free(info);

    info = engine_info_parse("\r\n\r\n\n", 5);
    engine_info_sections(info, &n);
    assert_int_equal(n, 0);
    assert_int_equal(engine_info_skipped(info), 0);
    engine_info_free(info);

    engine_info_free(NULL);
}

static void test_line_forms(void **state)
{
    /* LF and CRLF mixed, no final newline, a key before any header, a header
     * without a space, malformed lines, an empty section. */
    static const char text[] = "early:1\n"
                               "# Server\r\n"
                               "redis_version:7.0.15\r\n"
                               "no colon here\r\n"
                               ":leading colon\r\n"
                               "path:/a:b:c\n"
                               "empty:\r\n"
                               "#Empty\r\n"
                               "#  Spaced  \r\n"
                               "last:x";
    size_t n;

    (void)state;
    struct engine_info *info = engine_info_parse(text, sizeof(text) - 1);
    const struct engine_info_section *s = engine_info_sections(info, &n);

    assert_int_equal(n, 4);
    assert_string_equal(s[0].name, "");
    assert_int_equal(s[0].count, 1);
    assert_string_equal(s[0].entries[0].key, "early");
    assert_string_equal(s[1].name, "Server");
    assert_int_equal(s[1].count, 3);
    assert_string_equal(s[1].entries[0].key, "redis_version");
    assert_string_equal(s[1].entries[0].value, "7.0.15");
    assert_string_equal(s[1].entries[1].value, "/a:b:c");
    assert_string_equal(s[1].entries[2].key, "empty");
    assert_string_equal(s[1].entries[2].value, "");
    assert_string_equal(s[2].name, "Empty");
    assert_int_equal(s[2].count, 0);
    assert_string_equal(s[3].name, "Spaced");
    assert_string_equal(s[3].entries[0].value, "x");
    assert_int_equal(engine_info_skipped(info), 2);
    assert_string_equal(engine_info_get(info, "", "early"), "1");
    assert_string_equal(engine_info_get(info, "SERVER", "path"), "/a:b:c");
    assert_null(engine_info_get(info, "server", "Path")); /* keys are case-sensitive */
    assert_null(engine_info_get(info, "nosuch", "path"));
    engine_info_free(info);
}

static void test_text_not_terminated(void **state)
{
    /* The parser must read exactly len bytes: the rest is not INFO. */
    static const char text[] = "# S\nk:12\nother:3";

    (void)state;
    struct engine_info *info = engine_info_parse(text, 8); /* up to "k:12\n" less "\n" */
    long long v = 0;
    assert_true(engine_info_get_ll(info, NULL, "k", &v));
    assert_int_equal(v, 12);
    assert_null(engine_info_get(info, NULL, "other"));
    engine_info_free(info);

    info = engine_info_parse(text, 7);
    assert_true(engine_info_get_ll(info, NULL, "k", &v));
    assert_int_equal(v, 1);
    engine_info_free(info);
}

static void test_duplicates(void **state)
{
    static const char text[] = "# A\r\nk:1\r\nk:2\r\n# B\r\nk:3\r\n# a\r\nk:4\r\n";

    (void)state;
    struct engine_info *info = engine_info_parse(text, sizeof(text) - 1);
    assert_string_equal(engine_info_get(info, NULL, "k"), "1");
    assert_string_equal(engine_info_get(info, "A", "k"), "1");
    assert_string_equal(engine_info_get(info, "b", "k"), "3");
    assert_string_equal(engine_info_section(info, "a")->entries[0].value, "1");
    engine_info_free(info);
}

static void test_numbers(void **state)
{
    static const char text[] = "# N\n"
                               "zero:0\nneg:-1\nbig:9223372036854775807\nover:9223372036854775808\n"
                               "frac:1.05\nexp:2e3\npct:101.93%\nhuman:1.14M\nnan:nan\ninf:inf\n"
                               "hex:0x10\nspace: 5\ntrail:5 \nempty:\nsign:-\n";
    long long v = 777;
    double d = 7.5;

    (void)state;
    struct engine_info *info = engine_info_parse(text, sizeof(text) - 1);
    assert_true(engine_info_get_ll(info, NULL, "zero", &v));
    assert_int_equal(v, 0);
    assert_true(engine_info_get_ll(info, NULL, "neg", &v));
    assert_int_equal(v, -1);
    assert_true(engine_info_get_ll(info, NULL, "big", &v));
    assert_true(v == 9223372036854775807LL);

    v = 777;
    static const char *const not_ll[] = {"over", "frac",  "exp",   "pct",   "human", "nan",
                                         "hex",  "space", "trail", "empty", "sign",  "absent"};
    for (size_t i = 0; i < sizeof(not_ll) / sizeof(not_ll[0]); i++) {
        if (engine_info_get_ll(info, NULL, not_ll[i], &v))
            fail_msg("\"%s\" parsed as the integer %lld", not_ll[i], v);
    }
    assert_int_equal(v, 777); /* untouched on failure */

    assert_true(engine_info_get_double(info, NULL, "frac", &d));
    assert_true(d == 1.05);
    assert_true(engine_info_get_double(info, NULL, "exp", &d));
    assert_true(d == 2000.0);
    assert_true(engine_info_get_double(info, NULL, "neg", &d));
    assert_true(d == -1.0);
    d = 7.5;
    static const char *const not_double[] = {"pct",   "human", "nan",   "inf",  "hex",
                                             "space", "trail", "empty", "sign", "absent"};
    for (size_t i = 0; i < sizeof(not_double) / sizeof(not_double[0]); i++) {
        if (engine_info_get_double(info, NULL, not_double[i], &d))
            fail_msg("\"%s\" parsed as the number %g", not_double[i], d);
    }
    assert_true(d == 7.5);
    engine_info_free(info);

    /* The span forms read exactly n bytes. */
    assert_true(engine_info_span_ll("12345", 2, &v));
    assert_int_equal(v, 12);
    assert_false(engine_info_span_ll("12", 0, &v));
    assert_true(engine_info_span_double("0.25xyz", 4, &d));
    assert_true(d == 0.25);
}

static void test_fields(void **state)
{
    static const char cmdstat[] =
        "calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=2";
    char buf[16];
    long long v = 0;
    double d = 0;

    (void)state;
    /* "usec" must not match "usec_per_call", nor "calls" "rejected_calls". */
    assert_true(engine_info_field_ll(cmdstat, "usec", &v));
    assert_int_equal(v, 70);
    assert_true(engine_info_field_ll(cmdstat, "calls", &v));
    assert_int_equal(v, 7);
    assert_true(engine_info_field_double(cmdstat, "usec_per_call", &d));
    assert_true(d == 10.0);
    assert_true(engine_info_field_ll(cmdstat, "failed_calls", &v)); /* last field */
    assert_int_equal(v, 2);
    assert_false(engine_info_field_ll(cmdstat, "call", &v));
    assert_false(engine_info_field_ll(cmdstat, "", &v));
    assert_false(engine_info_field_ll(NULL, "calls", &v));
    assert_false(engine_info_field_ll(cmdstat, NULL, &v));

    /* A value that does not fit is not returned truncated. */
    assert_false(engine_info_field("ip=2001:db8:0:0:0:0:0:1,port=1", "ip", buf, sizeof(buf)));
    assert_string_equal(buf, "");
    assert_true(engine_info_field("ip=127.0.0.1,port=1", "ip", buf, 10));
    assert_string_equal(buf, "127.0.0.1");
    assert_false(engine_info_field("ip=127.0.0.1,port=1", "ip", buf, 9));

    /* Empty values, empty items, no '=' at all. */
    assert_true(engine_info_field("a=,b=1", "a", buf, sizeof(buf)));
    assert_string_equal(buf, "");
    assert_true(engine_info_field(",,b=1,", "b", buf, sizeof(buf)));
    assert_string_equal(buf, "1");
    assert_false(engine_info_field("abc", "abc", buf, sizeof(buf)));
    assert_false(engine_info_field("", "a", buf, sizeof(buf)));
    assert_false(engine_info_field_ll("a=x", "a", &v));
    assert_false(engine_info_field_double("a=1.5.5", "a", &d));
}

static void test_huge_value(void **state)
{
    const size_t big = 1 << 20;
    char *text = xmalloc(big + 64);
    size_t n = (size_t)sprintf(text, "# Big\r\nhuge:");

    (void)state;
    memset(text + n, 'v', big);
    n += big;
    n += (size_t)sprintf(text + n, "\r\nafter:1\r\n");
    struct engine_info *info = engine_info_parse(text, n);
    const char *v = engine_info_get(info, "big", "huge");
    assert_non_null(v);
    assert_int_equal(strlen(v), big);
    assert_string_equal(engine_info_get(info, NULL, "after"), "1");
    engine_info_free(info);
    free(text);
}

/* 200,000 distinct keys: every one found. A quadratic parser or lookup
 * would take minutes here, not milliseconds. */
static void test_many_keys(void **state)
{
    const int n = 200000;
    char *text = xmalloc((size_t)n * 32 + 16);
    size_t len = (size_t)sprintf(text, "# Many\r\n");

    (void)state;
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "key_%d:%d\r\n", i, i * 3);
    struct engine_info *info = engine_info_parse(text, len);
    for (int i = 0; i < n; i++) {
        char key[32];
        long long v = -1;
        snprintf(key, sizeof(key), "key_%d", i);
        if (!engine_info_get_ll(info, "many", key, &v) || v != (long long)i * 3)
            fail_msg("%s: got %lld", key, v);
    }
    assert_null(engine_info_get(info, NULL, "key_-1"));
    engine_info_free(info);
    free(text);
}

/* The engine and version an INFO reply names (engine/catalog.h): Valkey's
 * own key wins over the redis_version it also reports. */
static void test_engine_from_info(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct info_case *k = &cases[c];
        char *text;
        size_t len;
        struct engine_info *info = load_info(k->engine, "info_primary.txt", &text, &len);
        enum engine_kind kind = ENGINE_KIND_COUNT;
        const char *version = NULL;

        assert_true(engine_kind_from_info(info, &kind, &version));
        assert_string_equal(engine_kind_name(kind), k->engine);
        assert_string_equal(version, k->valkey_version ? k->valkey_version : k->redis_version);
        engine_info_free(info);
        free(text);
    }
    static const char none[] = "# Server\r\nredis_mode:standalone\r\n";
    struct engine_info *info = engine_info_parse(none, sizeof(none) - 1);
    enum engine_kind kind = ENGINE_KIND_COUNT;
    const char *version = NULL;
    assert_false(engine_kind_from_info(info, &kind, &version));
    assert_int_equal(kind, ENGINE_KIND_COUNT);
    assert_null(version);
    engine_info_free(info);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_from_info),
        cmocka_unit_test(test_primary_fixtures),
        cmocka_unit_test(test_replica_fixtures),
        cmocka_unit_test(test_valkey_only_keys),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_line_forms),
        cmocka_unit_test(test_text_not_terminated),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_huge_value),
        cmocka_unit_test(test_many_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
