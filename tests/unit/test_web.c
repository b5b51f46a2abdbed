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
    static const char *const allowed[] = {
        "", "index.html", "css/app.css", "clusters/", "a/b/c/", "a..b", "a/b..", "v1.2/x",
    };
    static const char *const refused[] = {
        "..",          "../etc/passwd", "a/../b",        "a/..", "a/../", ".",  "./a",   "a/./b",
        ".git/config", "a/.env",        ".well-known/x", "a//b", "/a",    "//", "a/b//",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        if (!web_path_allowed(allowed[i]))
            fail_msg("web_path_allowed(\"%s\") refused it, expected it allowed", allowed[i]);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (web_path_allowed(refused[i]))
            fail_msg("web_path_allowed(\"%s\") allowed it, expected it refused", refused[i]);
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
