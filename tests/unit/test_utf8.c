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

/* Whole strings that are or are not UTF-8, each named for the failure
 * message by what it shows. */
static const struct {
    const char *what;
    const char *s;
    bool valid;
} valid_cases[] = {
    {"empty", "", true},
    {"plain ascii", "plain ascii", true},
    {"U+00E9", "caf\xc3\xa9", true},
    {"U+20AC", "\xe2\x82\xac", true},
    {"U+FFFD", "\xef\xbf\xbd", true},
    {"U+1F600", "\xf0\x9f\x98\x80", true},
    {"U+10FFFF, the last", "\xf4\x8f\xbf\xbf", true},
    {"0xff, never in UTF-8", "\xff", false},
    {"overlong '/'", "\xc0\xaf", false},
    {"overlong", "\xc1\xbf", false},
    {"overlong, three bytes", "\xe0\x80\xaf", false},
    {"overlong, four bytes", "\xf0\x80\x80\xaf", false},
    {"U+D800, a surrogate", "\xed\xa0\x80", false},
    {"U+DFFF", "\xed\xbf\xbf", false},
    {"U+110000", "\xf4\x90\x80\x80", false},
    {"past every plane", "\xf5\x80\x80\x80", false},
    {"a lone continuation", "\x80", false},
    {"cut short", "\xe2\x82", false},
    {"interrupted",
     "\xe2\x82"
     "a",
     false},
};

static void test_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++)
        if (valid(valid_cases[i].s) != valid_cases[i].valid)
            fail_msg("%s: utf8_valid should say %s", valid_cases[i].what,
                     valid_cases[i].valid ? "true" : "false");
    assert_true(utf8_valid("a\0b", 3));      /* NUL is a character */
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
