/* test_utf8.c -- checking and scrubbing UTF-8 (lib/utf8.h), and the log's
 * quoting built on it (lib/log.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "utf8.h"

static bool valid(const char *s)
{
    return utf8_valid(s, strlen(s));
}

static void test_valid(void **state)
{
    (void)state;
    assert_true(valid(""));
    assert_true(valid("plain ascii"));
    assert_true(valid("caf\xc3\xa9"));       /* U+00E9 */
    assert_true(valid("\xe2\x82\xac"));      /* U+20AC */
    assert_true(valid("\xef\xbf\xbd"));      /* U+FFFD */
    assert_true(valid("\xf0\x9f\x98\x80"));  /* U+1F600 */
    assert_true(valid("\xf4\x8f\xbf\xbf"));  /* U+10FFFF, the last */
    assert_true(utf8_valid("a\0b", 3));      /* NUL is a character */
    assert_false(valid("\xff"));             /* never in UTF-8 */
    assert_false(valid("\xc0\xaf"));         /* overlong '/' */
    assert_false(valid("\xc1\xbf"));         /* overlong */
    assert_false(valid("\xe0\x80\xaf"));     /* overlong, three bytes */
    assert_false(valid("\xf0\x80\x80\xaf")); /* overlong, four bytes */
    assert_false(valid("\xed\xa0\x80"));     /* U+D800, a surrogate */
    assert_false(valid("\xed\xbf\xbf"));     /* U+DFFF */
    assert_false(valid("\xf4\x90\x80\x80")); /* U+110000 */
    assert_false(valid("\xf5\x80\x80\x80")); /* past every plane */
    assert_false(valid("\x80"));             /* a lone continuation */
    assert_false(valid("\xe2\x82"));         /* cut short */
    assert_false(valid("\xe2\x82"
                       "a"));                /* interrupted */
    assert_false(utf8_valid("\xc3\xa9", 1)); /* cut by the length */
}

static void test_scrub(void **state)
{
    char out[16];

    (void)state;
    assert_string_equal(utf8_scrub("ok", out, sizeof(out)), "ok");
    assert_string_equal(utf8_scrub("a\xff"
                                   "b",
                                   out, sizeof(out)),
                        "a\xef\xbf\xbd"
                        "b");
    assert_string_equal(utf8_scrub("\xc0\xaf", out, sizeof(out)), "\xef\xbf\xbd\xef\xbf\xbd");
    /* Cut at a character boundary, never inside one. */
    assert_string_equal(utf8_scrub("abc\xe2\x82\xac", out, 6), "abc");
    assert_string_equal(utf8_scrub("abc\xe2\x82\xac", out, 7), "abc\xe2\x82\xac");
    assert_string_equal(utf8_scrub("\xff\xff\xff\xff\xff\xff", out, 8), "\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(utf8_scrub("x", out, 1), "");
    assert_true(valid(utf8_scrub("\xe2\x82\xe2\x82\xac\xed\xa0\x80", out, sizeof(out))));
}

static void test_log_quote(void **state)
{
    char out[64];

    (void)state;
    assert_string_equal(log_quote(out, sizeof(out), "/v1/clusters"), "\"/v1/clusters\"");
    assert_string_equal(log_quote(out, sizeof(out), "a \"b\" \\"), "\"a \\\"b\\\" \\\\\"");
    assert_string_equal(log_quote(out, sizeof(out), "/\xff"), "\"/\\xff\"");
    assert_string_equal(log_quote(out, sizeof(out), "a\nb\x7f"), "\"a\\x0ab\\x7f\"");
    assert_string_equal(log_quote(out, sizeof(out), "caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    assert_string_equal(log_quote(out, sizeof(out), NULL), "\"\"");
    /* Cut whole: no half escape, no half character. */
    assert_string_equal(log_quote(out, 7, "ab\xff"), "\"ab\"");
    assert_string_equal(log_quote(out, 8, "ab\xff"), "\"ab\"");
    assert_string_equal(log_quote(out, 9, "ab\xff"), "\"ab\\xff\"");
    assert_string_equal(log_quote(out, 5, "a\xc3\xa9"), "\"a\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_log_quote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
