/* test_http_check.c -- the request line and header checks before routing
 * (controlplane/http/http_check.h), with the requests that once broke cairnd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_check.h"

/* Assert that target decodes to want. */
static void expect_path(const char *target, const char *want)
{
    char *path = NULL, err[160] = "";
    if (!http_check_target(target, &path, err, sizeof(err)))
        fail_msg("target \"%s\" refused (%s), expected path \"%s\"", target, err, want);
    if (strcmp(path, want) != 0)
        fail_msg("target \"%s\" decoded to \"%s\", expected \"%s\"", target, path, want);
    free(path);
}

/* Assert that target is refused with a reason containing why. */
static void expect_refused(const char *target, const char *why)
{
    char *path = NULL, err[160] = "";
    if (http_check_target(target, &path, err, sizeof(err)))
        fail_msg("target \"%s\" accepted as \"%s\", expected a refusal", target, path);
    assert_null(path);
    if (strstr(err, why) == NULL)
        fail_msg("target \"%s\" refused with \"%s\", expected \"%s\" in it", target, err, why);
}

static void test_target_plain_and_encoded(void **state)
{
    (void)state;
    expect_path("/healthz", "/healthz");
    expect_path("/v1/clusters/orders?page_size=5&tag=a%3Db", "/v1/clusters/orders");
    expect_path("/v1/clusters/caf%C3%A9", "/v1/clusters/caf\xc3\xa9");
    expect_path("/a%20b", "/a b");
    expect_path("/", "/");
    expect_path("/x?", "/x");
    expect_path("/x?a&&b=", "/x");
    expect_path("/x?q=%E2%82%AC+1", "/x");
}

/* What killed cairnd or rerouted a request: each is a 400 now. */
static void test_target_hostile(void **state)
{
    (void)state;
    expect_refused("/%ff", "not UTF-8");
    expect_refused("/%c0%af", "not UTF-8");    /* overlong '/' */
    expect_refused("/%ed%a0%80", "not UTF-8"); /* a surrogate */
    expect_refused("/\xff", "byte (0xff)");
    expect_refused("/v1/clusters/NAME%00/pending-changes", "control character (%00)");
    expect_refused("/v1/clusters/x%00/auth", "control character");
    expect_refused("/a%0d%0aSet-Cookie:x", "control character (%0D)");
    expect_refused("/a%7f", "control character (%7F)");
    expect_refused("/v1/clusters/a%2Fb", "encoded '/'");
    expect_refused("/v1/clusters/a%2fb", "encoded '/'");
    expect_refused("/%", "two hex digits");
    expect_refused("/%f", "two hex digits");
    expect_refused("/%zz", "two hex digits");
    expect_refused("/a b", "byte (0x20)");
    expect_refused("/a\tb", "byte (0x09)");
    expect_refused("*", "must be a path");
    expect_refused("http://127.0.0.1/healthz", "must be a path");
    expect_refused("", "must be a path");
}

static void test_query_hostile(void **state)
{
    (void)state;
    expect_refused("/healthz?x=%ff", "query is not UTF-8");
    expect_refused("/healthz?%ff=1", "query is not UTF-8");
    expect_refused("/healthz?x=%00", "control character");
    expect_refused("/healthz?x=\xc3\xa9", "byte (0xc3)");
    expect_refused("/healthz?x=%e2%82", "not UTF-8"); /* a character cut short */
    /* A character split across '=' is two broken halves. */
    expect_refused("/healthz?%e2%82=%ac", "not UTF-8");
    /* %2F is an ordinary character in a query. */
    expect_path("/v1/events?since=a%2Fb", "/v1/events");
}

static void test_method(void **state)
{
    (void)state;
    assert_true(http_check_method("GET"));
    assert_true(http_check_method("DELETE"));
    assert_true(http_check_method("FOO"));
    assert_false(http_check_method(""));
    assert_false(http_check_method("FO\xff"));
    assert_false(http_check_method("G T"));
    assert_false(http_check_method("GET/"));
    assert_false(http_check_method("AVERYLONGMETHODNAME"));
}

static void test_header(void **state)
{
    (void)state;
    assert_true(http_check_header("Content-Type", "application/json; charset=utf-8"));
    assert_true(http_check_header("X-A", "tab\there"));
    assert_true(http_check_header("X-A", "")); /* empty values are allowed */
    /* obs-text is allowed in a value: cairnd scrubs it wherever shown. */
    assert_true(http_check_header("Content-Type", "app\xff"));
    assert_false(http_check_header("X-A", "a\x01"
                                          "b"));
    assert_false(http_check_header("X-A", "a\x7f"));
    assert_false(http_check_header("X-A", "a\rb"));
    assert_false(http_check_header("X A", "v"));
    assert_false(http_check_header("", "v"));
    assert_false(http_check_header("X-\xff", "v"));
}

static int framing(const char *const *lengths, size_t nl, const char *const *codings, size_t nc)
{
    char err[160];
    return http_check_framing(lengths, nl, codings, nc, err, sizeof(err));
}

static void test_framing(void **state)
{
    const char *one[] = {"12"}, *same[] = {"12", "012"}, *differ[] = {"12", "13"};
    const char *negative[] = {"-1"}, *spaced[] = {"1 2"}, *empty[] = {""};
    const char *huge[] = {"99999999999999999999999"};
    const char *chunked[] = {"chunked"}, *chunked_upper[] = {"Chunked"};
    const char *gzip[] = {"gzip"}, *twice[] = {"chunked", "chunked"}, *list[] = {"gzip, chunked"};

    (void)state;
    assert_int_equal(framing(NULL, 0, NULL, 0), 0);
    assert_int_equal(framing(one, 1, NULL, 0), 0);
    assert_int_equal(framing(same, 2, NULL, 0), 0);
    assert_int_equal(framing(huge, 1, NULL, 0), 0); /* a length; too large is for later */
    assert_int_equal(framing(differ, 2, NULL, 0), 400);
    assert_int_equal(framing(negative, 1, NULL, 0), 400);
    assert_int_equal(framing(spaced, 1, NULL, 0), 400);
    assert_int_equal(framing(empty, 1, NULL, 0), 400);
    assert_int_equal(framing(NULL, 0, chunked, 1), 0);
    assert_int_equal(framing(NULL, 0, chunked_upper, 1), 0);
    assert_int_equal(framing(NULL, 0, gzip, 1), 501);
    assert_int_equal(framing(NULL, 0, list, 1), 501);
    assert_int_equal(framing(NULL, 0, twice, 2), 501);
    assert_int_equal(framing(one, 1, chunked, 1), 400); /* both: smuggling */
}

static void test_json_type(void **state)
{
    (void)state;
    assert_true(http_check_json_type("application/json"));
    assert_true(http_check_json_type("Application/JSON; charset=utf-8"));
    assert_true(http_check_json_type("application/merge-patch+json"));
    assert_false(http_check_json_type(NULL));
    assert_false(http_check_json_type("application/jsonx"));
    assert_false(http_check_json_type("text/plain"));
}

static void test_coding(void **state)
{
    bool gzip = true;
    (void)state;
    assert_true(http_check_coding(NULL, &gzip));
    assert_false(gzip);
    assert_true(http_check_coding("GZIP", &gzip));
    assert_true(gzip);
    assert_true(http_check_coding("identity", &gzip));
    assert_false(gzip);
    assert_false(http_check_coding("br", &gzip));
    assert_false(http_check_coding("gzip, br", &gzip));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_plain_and_encoded),
        cmocka_unit_test(test_target_hostile),
        cmocka_unit_test(test_query_hostile),
        cmocka_unit_test(test_method),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_json_type),
        cmocka_unit_test(test_coding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
