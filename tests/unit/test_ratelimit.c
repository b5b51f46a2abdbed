/* test_ratelimit.c -- the per-token token buckets (controlplane/http/ratelimit.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ratelimit.h"

#define S 1000000LL /* one second, in µs */

/* Requests of key allowed at now_us, up to n tried. */
static int allowed(struct ratelimit *r, const char *key, int64_t now_us, int n)
{
    int ok = 0, retry;
    for (int i = 0; i < n; i++)
        ok += ratelimit_take(r, key, now_us, &retry);
    return ok;
}

static void test_burst_then_rate(void **state)
{
    (void)state;
    struct ratelimit *r = ratelimit_new(10, 20);
    int retry = 0;

    assert_int_equal(allowed(r, "aaaaaaaaaaaa", 5 * S, 25), 20); /* the burst */
    assert_false(ratelimit_take(r, "aaaaaaaaaaaa", 5 * S, &retry));
    assert_int_equal(retry, 1); /* 0.1 s to the next: rounded up */
    assert_int_equal(allowed(r, "aaaaaaaaaaaa", 5 * S + S / 2, 10), 5); /* 10/s for 0.5 s */
    assert_int_equal(allowed(r, "aaaaaaaaaaaa", 100 * S, 50), 20);      /* full again, no more */
    ratelimit_free(r);
}

static void test_tokens_apart(void **state)
{
    (void)state;
    struct ratelimit *r = ratelimit_new(1, 3);

    assert_int_equal(allowed(r, "aaaaaaaaaaaa", S, 5), 3);
    assert_int_equal(allowed(r, "bbbbbbbbbbbb", S, 5), 3); /* its own bucket */
    ratelimit_free(r);
}

static void test_retry_after(void **state)
{
    (void)state;
    struct ratelimit *r = ratelimit_new(0.25, 1); /* one request every 4 s */
    int retry = 0;

    assert_true(ratelimit_take(r, "aaaaaaaaaaaa", S, &retry));
    assert_false(ratelimit_take(r, "aaaaaaaaaaaa", S, &retry));
    assert_int_equal(retry, 4);
    assert_false(ratelimit_take(r, "aaaaaaaaaaaa", 2 * S, &retry));
    assert_int_equal(retry, 3);
    assert_true(ratelimit_take(r, "aaaaaaaaaaaa", 5 * S, &retry));
    ratelimit_free(r);
}

static void test_off(void **state)
{
    (void)state;
    struct ratelimit *r = ratelimit_new(0, 1);
    assert_int_equal(allowed(r, "aaaaaaaaaaaa", S, 10000), 10000);
    ratelimit_free(r);
}

/* More tokens than the table holds: each still gets its burst, the least
 * recently used giving way. */
static void test_table_full(void **state)
{
    (void)state;
    struct ratelimit *r = ratelimit_new(1, 2);
    char key[16];

    for (int i = 0; i < 3 * RATELIMIT_BUCKETS; i++) {
        snprintf(key, sizeof(key), "%012d", i);
        assert_int_equal(allowed(r, key, S + i, 3), 2);
    }
    /* The latest one is still known: its bucket is empty. */
    assert_int_equal(allowed(r, key, S + 3 * RATELIMIT_BUCKETS, 1), 0);
    ratelimit_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_rate), cmocka_unit_test(test_tokens_apart),
        cmocka_unit_test(test_retry_after),     cmocka_unit_test(test_off),
        cmocka_unit_test(test_table_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
