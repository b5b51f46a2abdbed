/* test_timeutil.c -- RFC 3339 validation and the monotonic clock (lib/timeutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),         cmocka_unit_test(test_invalid_dates),
        cmocka_unit_test(test_invalid_times), cmocka_unit_test(test_invalid_fractions),
        cmocka_unit_test(test_invalid_zones), cmocka_unit_test(test_not_a_time),
        cmocka_unit_test(test_mono_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
