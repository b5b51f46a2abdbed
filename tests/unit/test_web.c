/* test_web.c -- the web console's pure parts (controlplane/http/web.h): media
 * types, which paths may name a file, ETags and If-None-Match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "web.h"

static void test_content_type(void **state)
{
    static const char *const cases[][2] = {
        {"index.html", "text/html; charset=utf-8"},
        {"css/app.css", "text/css; charset=utf-8"},
        {"js/app.js", "text/javascript; charset=utf-8"},
        {"js/page.mjs", "text/javascript; charset=utf-8"},
        {"logo.svg", "image/svg+xml"},
        {"img/logo.png", "image/png"},
        {"favicon.ico", "image/vnd.microsoft.icon"},
        {"data.json", "application/json"},
        {"fonts/inter.woff2", "font/woff2"},
        {"js/app.js.map", "application/json"},
        {"robots.txt", "text/plain; charset=utf-8"},
        {"INDEX.HTML", "text/html; charset=utf-8"},    /* any case */
        {"README", "application/octet-stream"},        /* no extension */
        {"v1.2/README", "application/octet-stream"},   /* a dot in a directory only */
        {"backup.tar.gz", "application/octet-stream"}, /* the last extension counts */
        {"page.html.bak", "application/octet-stream"},
        {"page.", "application/octet-stream"},
        {"", "application/octet-stream"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = web_content_type(cases[i][0]);
        if (strcmp(got, cases[i][1]) != 0)
            fail_msg("web_content_type(\"%s\") is \"%s\", expected \"%s\"", cases[i][0], got,
                     cases[i][1]);
    }
}

static void test_path_allowed(void **state)
{
    static const struct {
        const char *path;
        bool allowed;
    } cases[] = {
        {"", true},
        {"index.html", true},
        {"css/app.css", true},
        {"clusters/", true},
        {"a/b/c/", true},
        {"a..b", true},
        {"a/b..", true},
        {"v1.2/x", true},
        {"..", false},
        {"../etc/passwd", false},
        {"a/../b", false},
        {"a/..", false},
        {"a/../", false},
        {".", false},
        {"./a", false},
        {"a/./b", false},
        {".git/config", false},
        {"a/.env", false},
        {".well-known/x", false},
        {"a//b", false},
        {"/a", false},
        {"//", false},
        {"a/b//", false},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (web_path_allowed(cases[i].path) != cases[i].allowed)
            fail_msg("web_path_allowed(\"%s\") %s it, expected it %s", cases[i].path,
                     cases[i].allowed ? "refused" : "allowed",
                     cases[i].allowed ? "allowed" : "refused");
    }
}

static void test_etag(void **state)
{
    struct stat st = {0};
    char a[WEB_ETAG_MAX], b[WEB_ETAG_MAX];

    (void)state;
    st.st_size = 5242880;
    st.st_mtim.tv_sec = 1764491503;
    st.st_mtim.tv_nsec = 123456789;
    web_etag(&st, a);
    assert_string_equal(a, "\"500000-692c00ef.123456789\"");
    /* Rewritten within the same second, or to another size: another tag. */
    st.st_mtim.tv_nsec = 123456790;
    web_etag(&st, b);
    assert_string_not_equal(a, b);
    st.st_mtim.tv_nsec = 123456789;
    st.st_size = 5242881;
    web_etag(&st, b);
    assert_string_not_equal(a, b);
    /* The largest values fit. */
    st.st_size = INT64_MAX;
    st.st_mtim.tv_sec = INT64_MAX;
    st.st_mtim.tv_nsec = 999999999;
    web_etag(&st, b);
    assert_int_equal(b[strlen(b) - 1], '"');
}

static void test_etag_matches(void **state)
{
    const char *etag = "\"5-1a.000000001\"";
    static const struct {
        const char *if_none_match;
        bool matches;
    } cases[] = {
        {"\"5-1a.000000001\"", true},
        {"W/\"5-1a.000000001\"", true}, /* weak comparison */
        {"\"old\", \"5-1a.000000001\"", true},
        {" \"old\" ,\t W/\"5-1a.000000001\" ", true},
        {"\"a,b\", \"5-1a.000000001\"", true}, /* ',' inside a tag */
        {"*", true},
        {"", false},
        {"\"old\"", false},
        {"\"5-1a.00000000\"", false},                /* a prefix */
        {"\"5-1a.0000000012\"", false},              /* longer */
        {"5-1a.000000001", false},                   /* unquoted */
        {"\"5-1a.000000001", false},                 /* unterminated */
        {"w/\"5-1a.000000001\"", false},             /* W/ is case-sensitive */
        {"\"a,b\", bad, \"5-1a.000000001\"", false}, /* malformed */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (web_etag_matches(cases[i].if_none_match, etag) != cases[i].matches)
            fail_msg("web_etag_matches(\"%s\", %s) should be %s", cases[i].if_none_match, etag,
                     cases[i].matches ? "true" : "false");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_path_allowed),
        cmocka_unit_test(test_etag),
        cmocka_unit_test(test_etag_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
