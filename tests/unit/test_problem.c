/* test_problem.c -- the registry of API error codes (controlplane/http/problem.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "problem.h"

#define TYPE_PREFIX "urn:cairn:problem:"

/* The expected type URN of code: the prefix and the code in lower-kebab case. */
static void expected_type(const char *code, char *out, size_t size)
{
    size_t o = (size_t)snprintf(out, size, "%s", TYPE_PREFIX);
    for (const char *p = code; *p && o + 1 < size; p++)
        out[o++] = *p == '_' ? '-' : (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    out[o] = '\0';
}

/* How many codes requests answer with; an operation's own codes follow. */
#define ONE(code, status, title) +1
enum { API_CODES = 0 PROBLEM_CODES(ONE) };
#undef ONE

static void test_every_code(void **state)
{
    (void)state;
    assert_true(PROBLEM_COUNT > 0);
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        const struct problem_info *info = problem_info((enum problem_code)i);
        char want[128];

        assert_non_null(info);
        assert_non_null(info->code);
        assert_non_null(info->title);
        assert_non_null(info->type);
        assert_true(strlen(info->code) > 0);
        assert_true(strlen(info->title) > 0);
        if (strspn(info->code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(info->code))
            fail_msg("code \"%s\" is not UPPER_SNAKE_CASE", info->code);
        if (i < API_CODES && (info->status < 400 || info->status > 599))
            fail_msg("%s has status %d, outside 400..599", info->code, info->status);
        if (i >= API_CODES && info->status != 0)
            fail_msg("%s is an operation's code, yet has status %d", info->code, info->status);
        expected_type(info->code, want, sizeof(want));
        assert_string_equal(info->type, want);
    }
}

static void test_codes_and_types_unique(void **state)
{
    (void)state;
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        const struct problem_info *a = problem_info((enum problem_code)i);
        for (int j = 0; j < i; j++) {
            const struct problem_info *b = problem_info((enum problem_code)j);
            if (strcmp(a->code, b->code) == 0 || strcmp(a->type, b->type) == 0)
                fail_msg("codes %d and %d share \"%s\" / \"%s\"", j, i, a->code, a->type);
        }
    }
}

static void test_known_entries(void **state)
{
    static const struct {
        enum problem_code code;
        const char *name;
        int status;
        const char *type;
    } known[] = {
        {PROBLEM_MALFORMED_JSON, "MALFORMED_JSON", 400, TYPE_PREFIX "malformed-json"},
        {PROBLEM_VALIDATION_FAILED, "VALIDATION_FAILED", 400, TYPE_PREFIX "validation-failed"},
        {PROBLEM_UNAUTHENTICATED, "UNAUTHENTICATED", 401, TYPE_PREFIX "unauthenticated"},
        {PROBLEM_FORBIDDEN, "FORBIDDEN", 403, TYPE_PREFIX "forbidden"},
        {PROBLEM_ROUTE_NOT_FOUND, "ROUTE_NOT_FOUND", 404, TYPE_PREFIX "route-not-found"},
        {PROBLEM_METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", 405, TYPE_PREFIX "method-not-allowed"},
        {PROBLEM_PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", 413, TYPE_PREFIX "payload-too-large"},
        {PROBLEM_UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", 415,
         TYPE_PREFIX "unsupported-media-type"},
        {PROBLEM_INTERNAL_ERROR, "INTERNAL_ERROR", 500, TYPE_PREFIX "internal-error"},
        {PROBLEM_DATABASE_UNAVAILABLE, "DATABASE_UNAVAILABLE", 503,
         TYPE_PREFIX "database-unavailable"},
        {PROBLEM_NOT_READY, "NOT_READY", 503, TYPE_PREFIX "not-ready"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        const struct problem_info *info = problem_info(known[i].code);
        assert_string_equal(info->code, known[i].name);
        assert_int_equal(info->status, known[i].status);
        assert_string_equal(info->type, known[i].type);
    }
}

static void test_same_entry_every_time(void **state)
{
    (void)state;
    assert_ptr_equal(problem_info(PROBLEM_NOT_READY), problem_info(PROBLEM_NOT_READY));
    assert_ptr_not_equal(problem_info(PROBLEM_NOT_READY), problem_info(PROBLEM_FORBIDDEN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code),
        cmocka_unit_test(test_codes_and_types_unique),
        cmocka_unit_test(test_known_entries),
        cmocka_unit_test(test_same_entry_every_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
