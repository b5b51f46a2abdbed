/* test_timeutil.c -- Cairn's timestamp text, RFC 3339 validation and the
 * clocks (lib/timeutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "timeutil.h"

/* Check every string in list against want, naming the first that differs. */
static void expect_all(const char *const *list, size_t n, bool want)
{
    for (size_t i = 0; i < n; i++) {
        if (time_is_rfc3339(list[i]) != want)
            fail_msg("time_is_rfc3339(\"%s\") is %s, expected %s", list[i], want ? "false" : "true",
                     want ? "true" : "false");
    }
}

#define EXPECT_ALL(list, want) expect_all(list, sizeof(list) / sizeof(list[0]), want)

static void test_valid(void **state)
{
    static const char *const valid[] = {
        "2026-11-30T08:30:00Z",        "2026-11-30T08:30:19.123456Z",
        "2026-11-30T08:30:19.1Z",      "2026-11-30T08:30:19.123456789Z",
        "2026-11-30t08:30:00z",        "2026-11-30 08:30:00Z",
        "2026-11-30T08:30:00+00:00",   "2026-11-30T08:30:00-00:00",
        "2026-11-30T08:30:00+05:30",   "2026-11-30T08:30:00-15:59",
        "2026-11-30T08:30:00.5+01:00", "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",        "2024-02-29T12:00:00Z", /* leap year */
        "2000-02-29T12:00:00Z",                                /* divisible by 400: leap */
        "2026-04-30T00:00:00Z",        "2026-01-31T00:00:00Z",
        "2016-12-31T23:59:60Z", /* leap second */
    };

    (void)state;
    EXPECT_ALL(valid, true);
}

static void test_invalid_dates(void **state)
{
    static const char *const invalid[] = {
        "2023-02-29T12:00:00Z", /* not a leap year */
        "1900-02-29T12:00:00Z", /* divisible by 100, not by 400 */
        "2024-02-30T12:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
        "2026-1-01T00:00:00Z",  "26-01-01T00:00:00Z",   "2026/01/01T00:00:00Z",
        "20260101T000000Z",
    };

    (void)state;
    EXPECT_ALL(invalid, false);
}

static void test_invalid_times(void **state)
{
    static const char *const invalid[] = {
        "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:61Z",
        "2026-01-01T1:00:00Z",  "2026-01-01T01:00Z",    "2026-01-01T01:00:0Z",
        "2026-01-01X01:00:00Z", "2026-01-0101:00:00Z",  "2026-01-01T01-00-00Z",
    };

    (void)state;
    EXPECT_ALL(invalid, false);
}

static void test_invalid_fractions(void **state)
{
    static const char *const invalid[] =
        {
            "2026-01-01T00:00:00.Z",           "2026-01-01T00:00:00,5Z",
            "2026-01-01T00:00:00.5.5Z",        "2026-01-01T00:00:00.x5Z",
            "2026-01-01T00:00:00.1234567890Z", /* PostgreSQL reads at most 9 digits */
        };

    (void)state;
    EXPECT_ALL(invalid, false);
}

static void test_invalid_zones(void **state)
{
    static const char *const invalid[] = {
        "2026-01-01T00:00:00",        /* missing zone */
        "2026-01-01T00:00:00.123456", /* missing zone after a fraction */
        "2026-01-01T00:00:00+0100",   "2026-01-01T00:00:00+01",       "2026-01-01T00:00:00+1:00",
        "2026-01-01T00:00:00+24:00",  "2026-01-01T00:00:00+01:60",    "2026-01-01T00:00:00 +01:00",
        "2026-01-01T00:00:00UTC",     "2026-01-01T00:00:00ZZ",        "2026-01-01T00:00:00Z ",
        "2026-01-01T00:00:00+01:00Z", "2026-01-01T00:00:00+01:00:00", "2026-01-01T00:00:00+16:00",
        "2026-01-01T00:00:00-23:00", /* beyond PostgreSQL */
        "0000-01-01T00:00:00Z",
    };

    (void)state;
    EXPECT_ALL(invalid, false);
}

static void test_not_a_time(void **state)
{
    static const char *const invalid[] = {
        "", "2026", "2026-01-01", "2026-01-01T", "now", " 2026-01-01T00:00:00Z", "yesterday",
    };

    (void)state;
    EXPECT_ALL(invalid, false);
}

static void test_mono_clock(void **state)
{
    (void)state;
    int64_t a = time_mono_us();
    int64_t b = time_mono_us();
    assert_true(a > 0);
    assert_true(b >= a);
}

/* ---- time_format ---------------------------------------------------- */

static void expect_format(int64_t us, int digits, const char *want)
{
    char out[TIME_TEXT_SIZE];
    memset(out, 'x', sizeof(out));
    if (strcmp(time_format(us, digits, out), want) != 0)
        fail_msg("time_format(%lld, %d) is \"%s\", expected \"%s\"", (long long)us, digits, out,
                 want);
}

static void test_format_known_instants(void **state)
{
    (void)state;
    expect_format(0, TIME_US, "1970-01-01T00:00:00.000000Z");
    expect_format(1796027419123456LL, TIME_US, "2026-11-30T08:30:19.123456Z");
    expect_format(1796027419123456LL, TIME_MS, "2026-11-30T08:30:19.123Z");
    expect_format(1796027419999999LL, TIME_MS, "2026-11-30T08:30:19.999Z"); /* cut, not rounded */
    expect_format(1796027419123456LL, TIME_SECONDS, "2026-11-30T08:30:19Z");
    expect_format(951825600000000LL, TIME_US, "2000-02-29T12:00:00.000000Z"); /* leap day */
    expect_format(-1, TIME_US, "1969-12-31T23:59:59.999999Z");
    expect_format(-62135596800LL * 1000000, TIME_US, "0001-01-01T00:00:00.000000Z");
    expect_format(253402300799999999LL, TIME_US, "9999-12-31T23:59:59.999999Z");
    /* Beyond the years the format has room for: clamped, never longer. */
    expect_format(INT64_MIN, TIME_US, "0001-01-01T00:00:00.000000Z");
    expect_format(INT64_MAX, TIME_US, "9999-12-31T23:59:59.999999Z");
}

/* The shape TIME_SQL_FORMAT gives in to_char(): each template pattern
 * becomes that many digits ('9'), a double-quoted run and any other
 * character stand for themselves. */
static void sql_shape(char *shape, size_t size)
{
    static const struct {
        const char *pattern;
        int digits;
    } patterns[] = {{"YYYY", 4}, {"HH24", 2}, {"MM", 2}, {"DD", 2},
                    {"MI", 2},   {"SS", 2},   {"US", 6}};
    const char *p = TIME_SQL_FORMAT;
    size_t o = 0;

    while (*p != '\0' && o + 7 < size) {
        if (*p == '"') {
            for (p++; *p != '\0' && *p != '"'; p++)
                shape[o++] = *p;
            p += *p == '"';
            continue;
        }
        size_t i = 0, n = sizeof(patterns) / sizeof(patterns[0]);
        while (i < n && strncmp(p, patterns[i].pattern, strlen(patterns[i].pattern)) != 0)
            i++;
        if (i == n) {
            shape[o++] = *p++;
            continue;
        }
        for (int d = 0; d < patterns[i].digits; d++)
            shape[o++] = '9';
        p += strlen(patterns[i].pattern);
    }
    shape[o] = '\0';
}

/* What the C formatter writes has the documented shape, the shape the SQL
 * format gives PostgreSQL's timestamps, and reads back as RFC 3339. */
static void test_format_is_the_sql_format(void **state)
{
    static const int64_t instants[] = {0, 1796027419123456LL, -62135596800LL * 1000000,
                                       253402300799999999LL, 4102444800000001LL};
    char shape[64], out[TIME_TEXT_SIZE];

    (void)state;
    sql_shape(shape, sizeof(shape));
    assert_string_equal(shape, "9999-99-99T99:99:99.999999Z");
    assert_int_equal(strlen(shape), TIME_TEXT_LEN);
    for (size_t i = 0; i < sizeof(instants) / sizeof(instants[0]); i++) {
        time_format(instants[i], TIME_US, out);
        assert_int_equal(strlen(out), TIME_TEXT_LEN);
        for (size_t c = 0; c < TIME_TEXT_LEN; c++) {
            bool digit = out[c] >= '0' && out[c] <= '9';
            if (shape[c] == '9' ? !digit : out[c] != shape[c])
                fail_msg("\"%s\" does not have the shape %s (character %zu)", out, shape, c);
        }
        if (!time_is_rfc3339(out))
            fail_msg("time_format wrote \"%s\", which time_is_rfc3339() refuses", out);
    }
}

/* Against the C library's calendar, on instants spread over the years the
 * format covers (a fixed seed: the same instants every run). */
static void test_format_agrees_with_gmtime(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    char out[TIME_TEXT_SIZE], want[64];

    (void)state;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* 0001-01-01 .. 9999-12-31, in microseconds */
        int64_t us = -62135596800LL * 1000000 + (int64_t)(x % 315537897600000000ULL);
        int64_t s = us >= 0 ? us / 1000000 : -1 - (-us - 1) / 1000000;
        time_t t = (time_t)s;
        struct tm tm;
        assert_non_null(gmtime_r(&t, &tm));
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long long)(us - s * 1000000));
        if (strcmp(time_format(us, TIME_US, out), want) != 0)
            fail_msg("time_format(%lld) is \"%s\", gmtime says \"%s\"", (long long)us, out, want);
    }
}

static void test_wall_clock(void **state)
{
    (void)state;
    int64_t before = (int64_t)time(NULL) * 1000000;
    int64_t wall = time_wall_us();
    assert_true(wall >= before);
    assert_true(wall - before < 5 * 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid_dates),
        cmocka_unit_test(test_invalid_times),
        cmocka_unit_test(test_invalid_fractions),
        cmocka_unit_test(test_invalid_zones),
        cmocka_unit_test(test_not_a_time),
        cmocka_unit_test(test_mono_clock),
        cmocka_unit_test(test_format_known_instants),
        cmocka_unit_test(test_format_is_the_sql_format),
        cmocka_unit_test(test_format_agrees_with_gmtime),
        cmocka_unit_test(test_wall_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
