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

/* A function of text written into a buffer of size bytes gives want. */
struct into_case {
    const char *in;
    size_t size;
    const char *want;
};

/* Fail naming case i of what unless got is its want. */
static void expect_into(const char *what, size_t i, const struct into_case *c, const char *got)
{
    if (strcmp(got, c->want) != 0)
        fail_msg("%s case %zu (into %zu bytes): got \"%s\", want \"%s\"", what, i, c->size, got,
                 c->want);
}

/* utf8_scrub(in) into a buffer of size bytes gives want. */
static const struct into_case scrub_cases[] = {
    {"ok", 16, "ok"},
    {"a\xff"
     "b",
     16,
     "a\xef\xbf\xbd"
     "b"},
    {"\xc0\xaf", 16, "\xef\xbf\xbd\xef\xbf\xbd"},
    /* Cut at a character boundary, never inside one. */
    {"abc\xe2\x82\xac", 6, "abc"},
    {"abc\xe2\x82\xac", 7, "abc\xe2\x82\xac"},
    {"\xff\xff\xff\xff\xff\xff", 8, "\xef\xbf\xbd\xef\xbf\xbd"},
    {"x", 1, ""},
};

static void test_scrub(void **state)
{
    char out[16];

    (void)state;
    for (size_t i = 0; i < sizeof(scrub_cases) / sizeof(scrub_cases[0]); i++)
        expect_into("utf8_scrub", i, &scrub_cases[i],
                    utf8_scrub(scrub_cases[i].in, out, scrub_cases[i].size));
    assert_true(valid(utf8_scrub("\xe2\x82\xe2\x82\xac\xed\xa0\x80", out, sizeof(out))));
}

/* log_quote(in) into a buffer of size bytes gives want. */
static const struct into_case quote_cases[] = {
    {"/v1/clusters", 64, "\"/v1/clusters\""},
    {"a \"b\" \\", 64, "\"a \\\"b\\\" \\\\\""},
    {"/\xff", 64, "\"/\\xff\""},
    {"a\nb\x7f", 64, "\"a\\x0ab\\x7f\""},
    {"caf\xc3\xa9", 64, "\"caf\xc3\xa9\""},
    {NULL, 64, "\"\""},
    /* Cut whole: no half escape, no half character. */
    {"ab\xff", 7, "\"ab\""},
    {"ab\xff", 8, "\"ab\""},
    {"ab\xff", 9, "\"ab\\xff\""},
    {"a\xc3\xa9", 5, "\"a\""},
};

static void test_log_quote(void **state)
{
    char out[64];

    (void)state;
    for (size_t i = 0; i < sizeof(quote_cases) / sizeof(quote_cases[0]); i++)
        expect_into("log_quote", i, &quote_cases[i],
                    log_quote(out, quote_cases[i].size, quote_cases[i].in));
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
