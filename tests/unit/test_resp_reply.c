/* test_resp_reply.c -- the pure half of engine/resp.h: mapping error
 * replies to messages and reading reply trees, on replies made by
 * hiredis's redisReader (no network in unit tests), and telling addresses
 * from names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"

#include "fixtures/fixture.h"

static void test_reply_check(void **state)
{
    static const struct {
        const char *resp;
        const char *message; /* NULL: not an error reply */
    } cases[] = {
        {"-ERR unknown command 'FOO', with args beginning with: \r\n",
         "ERR unknown command 'FOO', with args beginning with: "},
        {"-LOADING Redis is loading the dataset in memory\r\n",
         "LOADING Redis is loading the dataset in memory"},
        {"-MOVED 3999 127.0.0.1:6381\r\n", "MOVED 3999 127.0.0.1:6381"},
        {"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
         "WRONGPASS invalid username-password pair or user is disabled."},
        {"-\r\n", ""},
        {"+OK\r\n", NULL},
        {":0\r\n", NULL},
        {"$-1\r\n", NULL},
        {"*0\r\n", NULL},
        {"*1\r\n-ERR nested\r\n", NULL}, /* only the top level is checked */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = fixture_reply_str(cases[i].resp);
        char err[128] = "untouched";
        bool ok = resp_reply_check(r, err, sizeof(err));
        if (cases[i].message == NULL) {
            assert_true(ok);
            assert_string_equal(err, "untouched");
        } else {
            assert_false(ok);
            assert_string_equal(err, cases[i].message);
        }
        resp_reply_free(r);
    }

    /* A long error is cut to the buffer, still terminated. */
    redisReply *r = fixture_reply_str("-ERR 0123456789abcdef\r\n");
    char small[8];
    assert_false(resp_reply_check(r, small, sizeof(small)));
    assert_string_equal(small, "ERR 012");
    resp_reply_free(r);
    resp_reply_free(NULL);
}

static void test_strings_and_integers(void **state)
{
    static const struct {
        const char *resp;
        bool is_string;
        bool is_integer;
        long long value;
        size_t len; /* 0: strlen(resp) */
    } cases[] = {
        {"+PONG\r\n", true, false, 0},
        {"$5\r\nhello\r\n", true, false, 0},
        {"$0\r\n\r\n", true, false, 0},
        {"$4\r\n6379\r\n", true, true, 6379},
        {"$2\r\n-1\r\n", true, true, -1},
        {"+42\r\n", true, true, 42},
        {":-7\r\n", false, true, -7},
        {":9223372036854775807\r\n", false, true, 9223372036854775807LL},
        {"$19\r\n9223372036854775808\r\n", true, false, 0}, /* out of range */
        {"$3\r\n1.5\r\n", true, false, 0},
        {"$3\r\n 12\r\n", true, false, 0},
        {"$3\r\n12 \r\n", true, false, 0},
        {"$3\r\n1\0002\r\n", true, false, 0, 9}, /* embedded NUL */
        {"$-1\r\n", false, false, 0},
        {"*1\r\n:1\r\n", false, false, 0},
        {"-ERR 5\r\n", false, false, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *resp = cases[i].resp;
        redisReply *r = fixture_reply_bytes(resp, cases[i].len ? cases[i].len : strlen(resp));
        long long v = 12345;

        if (resp_reply_is_string(r) != cases[i].is_string)
            fail_msg("case %zu: is_string", i);
        if (resp_reply_integer(r, &v) != cases[i].is_integer)
            fail_msg("case %zu: integer", i);
        if (cases[i].is_integer)
            assert_true(v == cases[i].value);
        else
            assert_int_equal(v, 12345);
        resp_reply_free(r);
    }
}

static void test_maps(void **state)
{
    (void)state;
    redisReply *r = fixture_reply_str("*6\r\n$2\r\nid\r\n$3\r\nabc\r\n+port\r\n:7000\r\n"
                                      "$2\r\nid\r\n$3\r\ndup\r\n");
    assert_true(resp_reply_is_map(r));
    const redisReply *v = resp_reply_map_get(r, "id");
    assert_non_null(v);
    assert_string_equal(v->str, "abc"); /* the first of equal keys */
    long long port = 0;
    assert_true(resp_reply_integer(resp_reply_map_get(r, "port"), &port));
    assert_int_equal(port, 7000);
    assert_null(resp_reply_map_get(r, "i"));
    assert_null(resp_reply_map_get(r, "ids"));
    assert_null(resp_reply_map_get(r, "abc")); /* values are not keys */
    resp_reply_free(r);

    /* Not maps: odd length, a key that is not a string, not an array. */
    static const char *const not_maps[] = {
        "*3\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n",
        "*2\r\n:1\r\n$1\r\na\r\n",
        "*2\r\n*0\r\n$1\r\na\r\n",
        "$1\r\na\r\n",
        ":2\r\n",
    };
    for (size_t i = 0; i < sizeof(not_maps) / sizeof(not_maps[0]); i++) {
        r = fixture_reply_str(not_maps[i]);
        if (resp_reply_is_map(r))
            fail_msg("case %zu is a map", i);
        assert_null(resp_reply_map_get(r, "a"));
        resp_reply_free(r);
    }

    r = fixture_reply_str("*0\r\n");
    assert_true(resp_reply_is_map(r));
    assert_null(resp_reply_map_get(r, "a"));
    resp_reply_free(r);
}

static void test_host_is_address(void **state)
{
    (void)state;
    assert_true(resp_host_is_address("127.0.0.1"));
    assert_true(resp_host_is_address("10.0.3.17"));
    assert_true(resp_host_is_address("::1"));
    assert_true(resp_host_is_address("fd00::17"));
    /* Names would be resolved, blocking, on connect. */
    assert_false(resp_host_is_address("localhost"));
    assert_false(resp_host_is_address("cache-1.internal"));
    assert_false(resp_host_is_address("10.0.3"));
    assert_false(resp_host_is_address(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_check),
        cmocka_unit_test(test_strings_and_integers),
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_host_is_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
