/* test_prefer.c -- the Prefer header's wait preference and delta-seconds
 * (controlplane/http/prefer.h), from what clients send to what must be
 * ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prefer.h"

/* Assert that value asks for a wait of want seconds. */
static void expect_wait(const char *value, long long want)
{
    long long got = -1;
    enum prefer_result r = prefer_wait(value, &got);
    if (r != PREFER_WAIT)
        fail_msg("Prefer: %s gave result %d, expected a wait of %lld", value, (int)r, want);
    if (got != want)
        fail_msg("Prefer: %s gave a wait of %lld, expected %lld", value, got, want);
}

/* Assert that value gives want (PREFER_NO_WAIT or PREFER_INVALID). */
static void expect_result(const char *value, enum prefer_result want)
{
    long long got = -1;
    enum prefer_result r = prefer_wait(value, &got);
    if (r != want)
        fail_msg("Prefer: %s gave result %d, expected %d", value, (int)r, (int)want);
    assert_int_equal(got, -1); /* *seconds is left alone */
}

static void test_wait_as_clients_send_it(void **state)
{
    (void)state;
    expect_wait("wait=60", 60);
    expect_wait("wait=0", 0);
    expect_wait("WAIT=5", 5);
    expect_wait("respond-async, wait=100", 100);
    expect_wait("wait=10, respond-async", 10);
    expect_wait("  wait = 7  ", 7);               /* BWS around "=", OWS around the list */
    expect_wait("return=minimal;foo, wait=3", 3); /* parameters of another preference */
    expect_wait("wait=3;x=\"a;b, c\"", 3);        /* a parameter with a quoted value */
    expect_wait(",, wait=4 ,", 4);                /* empty list elements */
    expect_wait("wait=4;", 4);                    /* an empty parameter */
    expect_wait("wait=0007", 7);
    expect_wait("handling=lenient\t,\twait=9", 9);
}

static void test_first_wait_counts(void **state)
{
    (void)state;
    expect_wait("wait=5, wait=10", 5);
    /* The first wait is not delta-seconds: it is ignored, and so is the
     * second (RFC 7240 §2: only the first instance is considered). */
    expect_result("wait=soon, wait=10", PREFER_NO_WAIT);
    expect_result("wait=\"5\"", PREFER_NO_WAIT);
    expect_result("wait=-1", PREFER_NO_WAIT);
    expect_result("wait", PREFER_NO_WAIT);
    expect_result("wait=1.5", PREFER_NO_WAIT);
}

static void test_no_wait(void **state)
{
    (void)state;
    expect_result("", PREFER_NO_WAIT);
    expect_result("respond-async", PREFER_NO_WAIT);
    expect_result("return=representation", PREFER_NO_WAIT);
    expect_result("waiting=5", PREFER_NO_WAIT);
    expect_result("wai=5", PREFER_NO_WAIT);
    expect_result("x;wait=5", PREFER_NO_WAIT); /* a parameter, not a preference */
}

static void test_malformed_values_are_ignored(void **state)
{
    (void)state;
    expect_result("wait=", PREFER_INVALID);
    expect_result("=5", PREFER_INVALID);
    expect_result("wait=5 6", PREFER_INVALID);
    expect_result("wait=5; =x", PREFER_INVALID);
    expect_result("wait=5, x=\"open", PREFER_INVALID);
    expect_result("wait=5, x=\"a\\\001\"", PREFER_INVALID); /* a quoted control */
    expect_result("wait=5, (x)", PREFER_INVALID);
    expect_result("wait=5, x=\"bad\001\"", PREFER_INVALID);
    expect_result("wait=5 garbage", PREFER_INVALID);
    expect_result("{\"wait\": 5}", PREFER_INVALID);
}

static void test_seconds(void **state)
{
    long long s = -1;
    (void)state;
    assert_true(prefer_seconds("0", &s));
    assert_int_equal(s, 0);
    assert_true(prefer_seconds("300", &s));
    assert_int_equal(s, 300);
    assert_true(prefer_seconds("2147483647", &s));
    assert_int_equal(s, 2147483647);
    assert_true(prefer_seconds("2147483648", &s));
    assert_int_equal(s, PREFER_SECONDS_MAX);
    assert_true(prefer_seconds("99999999999999999999999999999999", &s));
    assert_int_equal(s, PREFER_SECONDS_MAX);
    s = -1;
    assert_false(prefer_seconds("", &s));
    assert_false(prefer_seconds("-1", &s));
    assert_false(prefer_seconds("+1", &s));
    assert_false(prefer_seconds(" 1", &s));
    assert_false(prefer_seconds("1 ", &s));
    assert_false(prefer_seconds("1s", &s));
    assert_false(prefer_seconds("0x10", &s));
    assert_int_equal(s, -1);
    expect_wait("wait=99999999999999999999999999", PREFER_SECONDS_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_as_clients_send_it),
        cmocka_unit_test(test_first_wait_counts),
        cmocka_unit_test(test_no_wait),
        cmocka_unit_test(test_malformed_values_are_ignored),
        cmocka_unit_test(test_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
