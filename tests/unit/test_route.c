/* test_route.c -- path pattern matching and route lookup (controlplane/http/route.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "route.h"

/* Assert that path does not match pattern, naming both on failure. */
static void expect_no_match(const char *pattern, const char *path)
{
    struct route_params p = {0};
    if (route_match(pattern, path, &p))
        fail_msg("route_match(\"%s\", \"%s\") matched, expected no match", pattern, path);
    assert_int_equal(p.count, 0);
}

static void test_match_literal(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/v1/tokens", "/v1/tokens", &p));
    assert_int_equal(p.count, 0);
    assert_true(route_match("/healthz", "/healthz", &p));
    expect_no_match("/v1/tokens", "/v1/token");
    expect_no_match("/v1/tokens", "/v1/tokensx");
    expect_no_match("/v1/tokens", "/V1/tokens");
    expect_no_match("/v1/tokens", "");
    route_params_clear(&p);
}

static void test_match_captures_param(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/v1/node-types/{name}", "/v1/node-types/cache.r7-large", &p));
    assert_int_equal(p.count, 1);
    assert_int_equal(p.name_lens[0], 4);
    assert_memory_equal(p.names[0], "name", 4);
    assert_string_equal(p.values[0], "cache.r7-large");
    assert_string_equal(route_param(&p, "name"), "cache.r7-large");
    route_params_clear(&p);
}

static void test_match_several_params(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/v1/clusters/{id}/nodes/{node}", "/v1/clusters/c1/nodes/n-2", &p));
    assert_int_equal(p.count, 2);
    assert_string_equal(route_param(&p, "id"), "c1");
    assert_string_equal(route_param(&p, "node"), "n-2");
    /* Adjacent parameters. */
    assert_true(route_match("/{a}/{b}/{c}/{d}", "/1/2/3/4", &p));
    assert_int_equal(p.count, ROUTE_MAX_PARAMS);
    assert_string_equal(route_param(&p, "a"), "1");
    assert_string_equal(route_param(&p, "d"), "4");
    route_params_clear(&p);
}

static void test_match_resets_count(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/v1/operations/{id}", "/v1/operations/x", &p));
    assert_int_equal(p.count, 1);
    assert_true(route_match("/v1/operations", "/v1/operations", &p));
    assert_int_equal(p.count, 0);
    assert_null(route_param(&p, "id"));
    route_params_clear(&p);
}

static void test_match_trailing_slash(void **state)
{
    (void)state;
    expect_no_match("/v1/tokens", "/v1/tokens/");
    expect_no_match("/v1/tokens/{id}", "/v1/tokens/abc/");
    expect_no_match("/v1/tokens/{id}", "/v1/tokens/");
}

static void test_match_extra_or_missing_segments(void **state)
{
    (void)state;
    expect_no_match("/v1/tokens/{id}", "/v1/tokens/abc/def");
    expect_no_match("/v1/tokens/{id}", "/v1/tokens");
    expect_no_match("/v1/clusters/{id}/nodes", "/v1/clusters/abc");
    expect_no_match("/v1/clusters/{id}/nodes", "/v1/clusters/abc/nodes/x");
    expect_no_match("/v1/tokens", "/v1/tokens/abc");
}

static void test_match_empty_segment(void **state)
{
    (void)state;
    expect_no_match("/v1/clusters/{id}/nodes", "/v1/clusters//nodes");
    expect_no_match("/v1/tokens/{id}", "/v1/tokens//");
    expect_no_match("/v1/tokens/{id}", "/v1//tokens/x");
}

/* Values of any length are captured whole: a long id is a resource that
 * does not exist, not a route that does not exist. */
static void test_match_param_length(void **state)
{
    char path[16 + 4000 + 1];
    struct route_params p = {0};

    (void)state;
    strcpy(path, "/v1/tokens/");
    size_t at = strlen(path);
    memset(path + at, 'x', 4000);
    path[at + 4000] = '\0';
    assert_true(route_match("/v1/tokens/{id}", path, &p));
    assert_int_equal(strlen(route_param(&p, "id")), 4000);
    route_params_clear(&p);
    assert_int_equal(p.count, 0);
    route_params_clear(&p);
}

static void test_route_param(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/a/{id}/b/{idx}", "/a/one/b/two", &p));
    assert_string_equal(route_param(&p, "id"), "one");
    assert_string_equal(route_param(&p, "idx"), "two");
    /* Names are matched whole, not by prefix. */
    assert_null(route_param(&p, "i"));
    assert_null(route_param(&p, "id}"));
    assert_null(route_param(&p, "name"));
    assert_null(route_param(&p, ""));
    route_params_clear(&p);
}

static void test_match_tail(void **state)
{
    struct route_params p = {0};

    (void)state;
    assert_true(route_match("/*", "/", &p));
    assert_string_equal(route_param(&p, "*"), "");
    assert_true(route_match("/*", "/app.js", &p));
    assert_string_equal(route_param(&p, "*"), "app.js");
    /* Any number of segments, empty ones and dots included: the tail is
     * taken as it is, for its handler to judge. */
    assert_true(route_match("/*", "/a/b//../c/", &p));
    assert_string_equal(route_param(&p, "*"), "a/b//../c/");
    assert_int_equal(p.count, 1);
    assert_true(route_match("/console/*", "/console/", &p));
    assert_string_equal(route_param(&p, "*"), "");
    assert_true(route_match("/console/{v}/*", "/console/2/x/y", &p));
    assert_string_equal(route_param(&p, "v"), "2");
    assert_string_equal(route_param(&p, "*"), "x/y");
    route_params_clear(&p);
    expect_no_match("/*", "");
    expect_no_match("/console/*", "/console");
    expect_no_match("/console/*", "/consolex/a");
    expect_no_match("/console/{v}/*", "/console//x");
    /* '*' only ends a pattern; elsewhere it is a character like any other. */
    expect_no_match("/a*b", "/axb");
    assert_true(route_match("/a*b", "/a*b", &p));
    assert_int_equal(p.count, 0);
}

static const struct route table[] = {
    {"GET", "/v1/tokens", SCOPE_ADMIN, NULL, NULL, NULL},
    {"POST", "/v1/tokens", SCOPE_ADMIN, NULL, NULL, NULL},
    {"DELETE", "/v1/tokens/{id}", SCOPE_ADMIN, NULL, NULL, NULL},
    {"GET", "/v1/node-types/{name}", SCOPE_READ, NULL, NULL, NULL},
    {"GET", "/healthz", SCOPE_NONE, NULL, NULL, NULL},
};
static const size_t table_len = sizeof(table) / sizeof(table[0]);

static void test_find_found(void **state)
{
    struct route_params p = {0};
    char allow[64];

    (void)state;
    assert_ptr_equal(route_find(table, table_len, "GET", "/v1/tokens", &p, allow, sizeof(allow)),
                     &table[0]);
    assert_ptr_equal(route_find(table, table_len, "POST", "/v1/tokens", &p, allow, sizeof(allow)),
                     &table[1]);
    assert_ptr_equal(
        route_find(table, table_len, "DELETE", "/v1/tokens/ab12", &p, allow, sizeof(allow)),
        &table[2]);
    assert_string_equal(route_param(&p, "id"), "ab12");
    assert_ptr_equal(
        route_find(table, table_len, "GET", "/v1/node-types/m1", &p, allow, sizeof(allow)),
        &table[3]);
    assert_string_equal(route_param(&p, "name"), "m1");
    route_params_clear(&p);
}

static void test_find_method_not_allowed(void **state)
{
    struct route_params p = {0};
    char allow[64];

    (void)state;
    assert_null(route_find(table, table_len, "DELETE", "/v1/tokens", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "GET, POST");
    assert_null(route_find(table, table_len, "GET", "/v1/tokens/ab12", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "DELETE");
    /* Methods are case-sensitive. */
    assert_null(route_find(table, table_len, "get", "/healthz", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "GET");
    route_params_clear(&p);
}

static void test_find_not_found(void **state)
{
    struct route_params p = {0};
    char allow[64];

    (void)state;
    strcpy(allow, "stale");
    assert_null(route_find(table, table_len, "GET", "/v1/nothing", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "");
    strcpy(allow, "stale");
    assert_null(route_find(table, table_len, "GET", "/v1/tokens/", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "");
    route_params_clear(&p);
}

/* The table's rows with a tail wildcard: they come first here, yet give
 * way to every other row. */
static const struct route with_tail[] = {
    {"GET", "/*", SCOPE_NONE, NULL, .console = true},
    {"HEAD", "/*", SCOPE_NONE, NULL, .console = true},
    {"GET", "/healthz", SCOPE_NONE, NULL, NULL, NULL},
    {"GET", "/v1/tokens", SCOPE_ADMIN, NULL, NULL, NULL},
};
static const size_t with_tail_len = sizeof(with_tail) / sizeof(with_tail[0]);

/* route_find(with_tail) for method and path is row want (-1: none), with
 * allow_want in allow. */
static void expect_tail_find(const char *method, const char *path, int want, const char *allow_want)
{
    struct route_params p = {0};
    char allow[64];
    const struct route *r =
        route_find(with_tail, with_tail_len, method, path, &p, allow, sizeof(allow));

    if (r != (want < 0 ? NULL : &with_tail[want]))
        fail_msg("%s %s found row %td, expected %d", method, path, r != NULL ? r - with_tail : -1,
                 want);
    if (r == NULL && strcmp(allow, allow_want) != 0)
        fail_msg("%s %s: allow \"%s\", expected \"%s\"", method, path, allow, allow_want);
    route_params_clear(&p);
}

static void test_find_tail_gives_way(void **state)
{
    (void)state;
    expect_tail_find("GET", "/healthz", 2, "");
    expect_tail_find("POST", "/healthz", -1, "GET");
    expect_tail_find("PUT", "/v1/tokens", -1, "GET");
    expect_tail_find("GET", "/", 0, "");
    expect_tail_find("HEAD", "/app.js", 1, "");
    expect_tail_find("GET", "/healthz/x", 0, "");
    expect_tail_find("POST", "/index.html", -1, "GET, HEAD");
    /* Never into the API's namespace. */
    expect_tail_find("GET", "/v1", -1, "");
    expect_tail_find("GET", "/v1/", -1, "");
    expect_tail_find("GET", "/v1/nothing", -1, "");
    expect_tail_find("HEAD", "/v1/tokens", -1, "GET");
    /* Paths that only look like it. */
    expect_tail_find("GET", "/v1x", 0, "");
    expect_tail_find("GET", "/V1/tokens", 0, "");
    expect_tail_find("GET", "/v2/tokens", 0, "");
}

static void test_find_small_allow_buffer(void **state)
{
    struct route_params p = {0};
    char allow[8];

    (void)state;
    /* What does not fit is left out; the text stays terminated. */
    memset(allow, 'z', sizeof(allow));
    assert_null(route_find(table, table_len, "PUT", "/v1/tokens", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "GET");
    route_params_clear(&p);
}

static void test_find_in_api_routes(void **state)
{
    struct route_params p = {0};
    char allow[64];

    (void)state;
    const struct route *r =
        route_find(api_routes, api_route_count, "GET", "/v1/tokens", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_string_equal(r->pattern, "/v1/tokens");
    assert_int_equal(r->scope, SCOPE_ADMIN);
    assert_null(
        route_find(api_routes, api_route_count, "PUT", "/v1/tokens", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "GET, POST");
    r = route_find(api_routes, api_route_count, "GET", "/healthz", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_int_equal(r->scope, SCOPE_NONE);
    assert_null(
        route_find(api_routes, api_route_count, "GET", "/v1/unknown", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "");
    /* "/" is the console's index and, posted to, the ElastiCache endpoint. */
    r = route_find(api_routes, api_route_count, "GET", "/", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_true(r->console);
    assert_null(route_param(&p, "*"));
    r = route_find(api_routes, api_route_count, "POST", "/", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_int_equal(r->scope, SCOPE_SIGV4);
    assert_null(route_find(api_routes, api_route_count, "DELETE", "/", &p, allow, sizeof(allow)));
    assert_string_equal(allow, "POST, GET, HEAD");
    /* Outside /v1, what no other row names is the console's. */
    r = route_find(api_routes, api_route_count, "GET", "/index.html", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_true(r->console);
    assert_string_equal(route_param(&p, "*"), "index.html");
    r = route_find(api_routes, api_route_count, "HEAD", "/css/app.css", &p, allow, sizeof(allow));
    assert_non_null(r);
    assert_true(r->console);
    assert_string_equal(route_param(&p, "*"), "css/app.css");
    route_params_clear(&p);
}

static void test_api_routes_well_formed(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_route_count; i++) {
        const struct route *r = &api_routes[i];
        assert_non_null(r->handler);
        assert_int_equal(r->pattern[0], '/');
        /* The console's rows, and only they, take the paths the API leaves
         * (and GET and HEAD of "/", its index, which the ElastiCache endpoint
         * shares): they need no token, and nothing under /v1 is theirs. */
        size_t len = strlen(r->pattern);
        bool index = strcmp(r->pattern, "/") == 0 && strcmp(r->method, "POST") != 0;
        assert_int_equal(r->console, r->pattern[len - 1] == '*' || index);
        if (r->console) {
            assert_int_equal(r->scope, SCOPE_NONE);
            assert_true(strncmp(r->pattern, "/v1/", 4) != 0);
        }
        /* Every (method, pattern) pair appears once. */
        for (size_t j = 0; j < i; j++) {
            if (strcmp(r->method, api_routes[j].method) == 0 &&
                strcmp(r->pattern, api_routes[j].pattern) == 0)
                fail_msg("route %s %s is listed twice", r->method, r->pattern);
        }
    }
}

static void test_scope_name(void **state)
{
    (void)state;
    assert_string_equal(route_scope_name(SCOPE_NONE), "none");
    assert_string_equal(route_scope_name(SCOPE_READ), "read");
    assert_string_equal(route_scope_name(SCOPE_ADMIN), "admin");
    assert_string_equal(route_scope_name(SCOPE_SIGV4), "sigv4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_literal),
        cmocka_unit_test(test_match_captures_param),
        cmocka_unit_test(test_match_several_params),
        cmocka_unit_test(test_match_resets_count),
        cmocka_unit_test(test_match_trailing_slash),
        cmocka_unit_test(test_match_extra_or_missing_segments),
        cmocka_unit_test(test_match_empty_segment),
        cmocka_unit_test(test_match_param_length),
        cmocka_unit_test(test_match_tail),
        cmocka_unit_test(test_route_param),
        cmocka_unit_test(test_find_found),
        cmocka_unit_test(test_find_method_not_allowed),
        cmocka_unit_test(test_find_not_found),
        cmocka_unit_test(test_find_tail_gives_way),
        cmocka_unit_test(test_find_small_allow_buffer),
        cmocka_unit_test(test_find_in_api_routes),
        cmocka_unit_test(test_api_routes_well_formed),
        cmocka_unit_test(test_scope_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
