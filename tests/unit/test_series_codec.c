/* test_series_codec.c -- compacted metric series (controlplane/store/series_codec.h):
 * every value comes back bit for bit, whatever it is; decimals and
 * constants are small; damaged input is refused, never read past. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "series_codec.h"

#define DAY 1440

static float values[DAY], back[DAY];
static bool present[DAY], back_present[DAY];

/* Encode values/present (n slots), decode, compare bits; returns the size. */
static size_t round_trip(size_t n)
{
    size_t len = 0;
    unsigned char *buf = series_encode(values, present, n, &len);

    memset(back_present, 1, sizeof(back_present));
    assert_int_equal(series_decode(buf, len, back, back_present, DAY), (long)n);
    for (size_t i = 0; i < DAY; i++) {
        assert_int_equal(back_present[i], i < n && present[i]);
        if (i < n && present[i])
            assert_memory_equal(&back[i], &values[i], sizeof(float));
    }
    free(buf);
    return len;
}

static void fill(bool all)
{
    for (size_t i = 0; i < DAY; i++)
        present[i] = all;
}

static void test_constant_series_is_a_few_bytes(void **state)
{
    (void)state;
    fill(true);
    for (size_t i = 0; i < DAY; i++)
        values[i] = 0;
    assert_true(round_trip(DAY) < 24);
    for (size_t i = 0; i < DAY; i++)
        values[i] = 3.5f;
    assert_true(round_trip(DAY) < 24);
}

static void test_counter_around_a_rate_takes_under_two_bytes(void **state)
{
    (void)state;
    srand(7);
    fill(true);
    for (size_t i = 0; i < DAY; i++) /* 50,000 a minute, +-3% */
        values[i] = (float)(50000 + rand() % 3001 - 1500);
    size_t len = round_trip(DAY);
    assert_true(len < 2 * DAY);
}

static void test_two_decimal_gauge_is_exact_and_small(void **state)
{
    (void)state;
    srand(8);
    fill(true);
    double v = 40.0;
    for (size_t i = 0; i < DAY; i++) {
        v = round((v + (rand() % 201 - 100) / 100.0) * 100) / 100;
        values[i] = (float)v;
    }
    assert_true(round_trip(DAY) < DAY * 5 / 4); /* steps of up to 100 hundredths: 7.7 bits */
}

static void test_arbitrary_floats_are_kept_bit_for_bit(void **state)
{
    (void)state;
    srand(9);
    fill(true);
    for (size_t i = 0; i < DAY; i++)
        values[i] = (float)rand() / (float)RAND_MAX * 100.0f; /* CPU % from clock ticks */
    values[3] = -0.0f;
    values[4] = NAN;
    values[5] = INFINITY;
    values[6] = -INFINITY;
    values[7] = 1e-40f; /* subnormal */
    values[8] = 3.4e38f;
    assert_true(round_trip(DAY) <= 4 * DAY + 16);
}

static void test_decimals_where_a_later_value_needs_more_places(void **state)
{
    (void)state;
    fill(true);
    for (size_t i = 0; i < DAY; i++)
        values[i] = (float)(i % 7) / 10.0f;
    values[100] = 1.234567f;
    values[200] = -17.5f;
    values[300] = 4294967296.0f;
    round_trip(DAY);
}

static void test_missing_slots_and_empty_series(void **state)
{
    (void)state;
    for (size_t i = 0; i < DAY; i++) {
        present[i] = i % 3 != 0 && (i < 500 || i > 900);
        values[i] = present[i] ? (float)i : 12345.0f;
    }
    round_trip(DAY);
    fill(false);
    assert_true(round_trip(DAY) < 24);
    fill(true);
    for (size_t i = 0; i < 60; i++)
        values[i] = (float)i;
    round_trip(60); /* fewer slots than the caller's room */
}

static void test_damaged_input_is_refused(void **state)
{
    (void)state;
    srand(10);
    fill(true);
    for (size_t i = 0; i < DAY; i++)
        values[i] = (float)(rand() % 100000);
    size_t len = 0;
    unsigned char *buf = series_encode(values, present, DAY, &len);

    assert_int_equal(series_decode(buf, len, back, back_present, DAY - 1), -1); /* no room */
    assert_int_equal(series_decode(buf, 0, back, back_present, DAY), -1);
    for (size_t cut = 1; cut < len; cut += 37)
        assert_int_equal(series_decode(buf, cut, back, back_present, DAY), -1);
    unsigned char junk[] = {SERIES_RAW, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    assert_int_equal(series_decode(junk, sizeof(junk), back, back_present, DAY), -1);
    unsigned char bad_mode[] = {SERIES_RAW, 4, 0, 9};
    assert_int_equal(series_decode(bad_mode, sizeof(bad_mode), back, back_present, DAY), -1);
    unsigned char short_xor[] = {SERIES_RAW, 2, 0, SERIES_XOR, 1, 2, 3};
    assert_int_equal(series_decode(short_xor, sizeof(short_xor), back, back_present, DAY), -1);
    buf[0] = 9;
    assert_int_equal(series_decode(buf, len, back, back_present, DAY), -1);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_series_is_a_few_bytes),
        cmocka_unit_test(test_counter_around_a_rate_takes_under_two_bytes),
        cmocka_unit_test(test_two_decimal_gauge_is_exact_and_small),
        cmocka_unit_test(test_arbitrary_floats_are_kept_bit_for_bit),
        cmocka_unit_test(test_decimals_where_a_later_value_needs_more_places),
        cmocka_unit_test(test_missing_slots_and_empty_series),
        cmocka_unit_test(test_damaged_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
