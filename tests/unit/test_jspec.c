/* test_jspec.c -- request bodies checked against declared field specs (lib/jspec.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jspec.h"

/* Run jspec_check on the JSON text body against spec and compare the errors
 * it reports, as compact JSON, with want ("[]" when the body is valid). */
static void expect_errors(const struct jspec_field *spec, const char *body, const char *want)
{
    json_error_t jerr;
    json_t *value = json_loads(body, JSON_DECODE_ANY, &jerr);
    char got[2048];

    if (value == NULL)
        fail_msg("test body is not JSON: %s: %s", body, jerr.text);
    json_t *errors = json_array();
    bool ok = jspec_check(value, spec, errors);
    size_t n = json_dumpb(errors, got, sizeof(got) - 1, JSON_COMPACT);
    size_t count = json_array_size(errors);
    json_decref(errors);
    json_decref(value);
    assert_in_range(n, 2, sizeof(got) - 1);
    got[n] = '\0';
    assert_string_equal(got, want);
    assert_int_equal(ok, count == 0);
}

static const char *const scopes[] = {"admin", "read", NULL};

static const struct jspec_field token_spec[] = {
    {.name = "name", .type = JSPEC_STRING, .required = true, .min_len = 2, .max_len = 4},
    {.name = "scope", .type = JSPEC_STRING, .required = true, .one_of = scopes},
    {.name = "note", .type = JSPEC_STRING},
    {0},
};

static void test_valid_body(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"name\": \"ab\", \"scope\": \"read\"}", "[]");
    expect_errors(token_spec, "{\"name\": \"abcd\", \"scope\": \"admin\", \"note\": \"\"}", "[]");
}

static void test_required_missing(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"scope\": \"read\"}",
                  "[{\"field\":\"name\",\"message\":\"is required\"}]");
    expect_errors(token_spec, "{}",
                  "[{\"field\":\"name\",\"message\":\"is required\"},"
                  "{\"field\":\"scope\",\"message\":\"is required\"}]");
}

static const struct jspec_field every_type[] = {
    {.name = "s", .type = JSPEC_STRING},
    {.name = "i", .type = JSPEC_INTEGER},
    {.name = "n", .type = JSPEC_NUMBER},
    {.name = "b", .type = JSPEC_BOOLEAN},
    {.name = "o", .type = JSPEC_OBJECT},
    {.name = "a", .type = JSPEC_ARRAY},
    {0},
};

static void test_right_types(void **state)
{
    (void)state;
    expect_errors(every_type,
                  "{\"s\": \"x\", \"i\": -3, \"n\": 1.5, \"b\": false, \"o\": {}, \"a\": []}",
                  "[]");
    /* An integer is a number too. */
    expect_errors(every_type, "{\"n\": 2}", "[]");
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_errors(every_type,
                  "{\"s\": 1, \"i\": 1.5, \"n\": \"1\", \"b\": 0, \"o\": [], \"a\": {}}",
                  "[{\"field\":\"s\",\"message\":\"must be a string\"},"
                  "{\"field\":\"i\",\"message\":\"must be an integer\"},"
                  "{\"field\":\"n\",\"message\":\"must be a number\"},"
                  "{\"field\":\"b\",\"message\":\"must be a boolean\"},"
                  "{\"field\":\"o\",\"message\":\"must be an object\"},"
                  "{\"field\":\"a\",\"message\":\"must be an array\"}]");
    expect_errors(every_type, "{\"i\": \"7\", \"b\": \"true\", \"o\": \"{}\", \"a\": \"[]\"}",
                  "[{\"field\":\"i\",\"message\":\"must be an integer\"},"
                  "{\"field\":\"b\",\"message\":\"must be a boolean\"},"
                  "{\"field\":\"o\",\"message\":\"must be an object\"},"
                  "{\"field\":\"a\",\"message\":\"must be an array\"}]");
}

static void test_null_without_nullable(void **state)
{
    (void)state;
    expect_errors(every_type, "{\"s\": null, \"a\": null}",
                  "[{\"field\":\"s\",\"message\":\"must be a string\"},"
                  "{\"field\":\"a\",\"message\":\"must be an array\"}]");
}

static void test_string_length(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"name\": \"a\", \"scope\": \"read\"}",
                  "[{\"field\":\"name\",\"message\":\"must have at least 2 characters\"}]");
    expect_errors(token_spec, "{\"name\": \"abcde\", \"scope\": \"read\"}",
                  "[{\"field\":\"name\",\"message\":\"must have at most 4 characters\"}]");
    expect_errors(token_spec, "{\"name\": \"\", \"scope\": \"read\"}",
                  "[{\"field\":\"name\",\"message\":\"must have at least 2 characters\"}]");
}

static const struct jspec_field tags_spec[] = {
    {.name = "tags",
     .type = JSPEC_ARRAY,
     .min_len = 1,
     .max_len = 2,
     .items = &(const struct jspec_field){.type = JSPEC_STRING, .max_len = 3}},
    {0},
};

static void test_array_length(void **state)
{
    (void)state;
    expect_errors(tags_spec, "{\"tags\": [\"a\"]}", "[]");
    expect_errors(tags_spec, "{\"tags\": [\"a\", \"b\"]}", "[]");
    expect_errors(tags_spec, "{\"tags\": []}",
                  "[{\"field\":\"tags\",\"message\":\"must have at least 1 items\"}]");
    expect_errors(tags_spec, "{\"tags\": [\"a\", \"b\", \"c\"]}",
                  "[{\"field\":\"tags\",\"message\":\"must have at most 2 items\"}]");
}

static void test_array_items(void **state)
{
    (void)state;
    expect_errors(tags_spec, "{\"tags\": [\"abc\", 5]}",
                  "[{\"field\":\"tags[1]\",\"message\":\"must be a string\"}]");
    expect_errors(tags_spec, "{\"tags\": [\"abcd\", \"x\"]}",
                  "[{\"field\":\"tags[0]\",\"message\":\"must have at most 3 characters\"}]");
}

static void test_one_of(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"name\": \"ab\", \"scope\": \"write\"}",
                  "[{\"field\":\"scope\",\"message\":\"must be one of: admin, read\"}]");
    /* Matching is exact: no case folding, no prefixes. */
    expect_errors(token_spec, "{\"name\": \"ab\", \"scope\": \"Read\"}",
                  "[{\"field\":\"scope\",\"message\":\"must be one of: admin, read\"}]");
    expect_errors(token_spec, "{\"name\": \"ab\", \"scope\": \"rea\"}",
                  "[{\"field\":\"scope\",\"message\":\"must be one of: admin, read\"}]");
}

static void test_one_of_message(void **state)
{
    static const char *const one[] = {"only", NULL};
    static const char *const three[] = {"a", "b", "c", NULL};
    char msg[64];
    char tiny[10];

    (void)state;
    jspec_one_of_message(one, msg, sizeof(msg));
    assert_string_equal(msg, "must be one of: only");
    jspec_one_of_message(three, msg, sizeof(msg));
    assert_string_equal(msg, "must be one of: a, b, c");
    /* A short buffer is truncated, not overrun. */
    jspec_one_of_message(three, tiny, sizeof(tiny));
    assert_string_equal(tiny, "must be o");
}

static void test_unknown_fields(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"name\": \"ab\", \"scope\": \"read\", \"colour\": \"red\"}",
                  "[{\"field\":\"colour\",\"message\":\"is not a known field\"}]");
    /* Field names are case-sensitive. */
    expect_errors(token_spec, "{\"name\": \"ab\", \"Scope\": \"read\"}",
                  "[{\"field\":\"scope\",\"message\":\"is required\"},"
                  "{\"field\":\"Scope\",\"message\":\"is not a known field\"}]");
}

static const struct jspec_field tier_fields[] = {
    {.name = "name", .type = JSPEC_STRING, .required = true},
    {0},
};

static const struct jspec_field limits_fields[] = {
    {.name = "memory_mb", .type = JSPEC_INTEGER, .required = true},
    {.name = "tier", .type = JSPEC_OBJECT, .fields = tier_fields},
    {0},
};

static const struct jspec_field cluster_spec[] = {
    {.name = "name", .type = JSPEC_STRING, .required = true},
    {.name = "limits", .type = JSPEC_OBJECT, .required = true, .fields = limits_fields},
    {.name = "free", .type = JSPEC_OBJECT},
    {0},
};

static void test_nested_objects(void **state)
{
    (void)state;
    expect_errors(
        cluster_spec,
        "{\"name\": \"c\", \"limits\": {\"memory_mb\": 512, \"tier\": {\"name\": \"t\"}}}", "[]");
    expect_errors(cluster_spec, "{\"name\": \"c\", \"limits\": {}}",
                  "[{\"field\":\"limits.memory_mb\",\"message\":\"is required\"}]");
    expect_errors(cluster_spec,
                  "{\"name\": \"c\", \"limits\": {\"memory_mb\": \"512\", \"cpu\": 2}}",
                  "[{\"field\":\"limits.memory_mb\",\"message\":\"must be an integer\"},"
                  "{\"field\":\"limits.cpu\",\"message\":\"is not a known field\"}]");
    expect_errors(cluster_spec,
                  "{\"name\": \"c\", \"limits\": {\"memory_mb\": 1, \"tier\": {\"x\": 1}}}",
                  "[{\"field\":\"limits.tier.name\",\"message\":\"is required\"},"
                  "{\"field\":\"limits.tier.x\",\"message\":\"is not a known field\"}]");
    expect_errors(cluster_spec, "{\"name\": \"c\", \"limits\": []}",
                  "[{\"field\":\"limits\",\"message\":\"must be an object\"}]");
}

static void test_object_without_field_spec(void **state)
{
    (void)state;
    /* An object field with no .fields takes any members. */
    expect_errors(cluster_spec,
                  "{\"name\": \"c\", \"limits\": {\"memory_mb\": 1}, \"free\": {\"any\": [1]}}",
                  "[]");
}

static const struct jspec_field node_fields[] = {
    {.name = "host", .type = JSPEC_STRING, .required = true},
    {.name = "port", .type = JSPEC_INTEGER, .has_range = true, .min = 1, .max = 65535},
    {0},
};

static const struct jspec_field matrix_row = {
    .type = JSPEC_ARRAY,
    .items = &(const struct jspec_field){.type = JSPEC_INTEGER},
};

static const struct jspec_field nodes_spec[] = {
    {.name = "nodes",
     .type = JSPEC_ARRAY,
     .items = &(const struct jspec_field){.type = JSPEC_OBJECT, .fields = node_fields}},
    {.name = "matrix", .type = JSPEC_ARRAY, .items = &matrix_row},
    {0},
};

static void test_array_of_objects(void **state)
{
    (void)state;
    expect_errors(nodes_spec, "{\"nodes\": [{\"host\": \"a\"}, {\"host\": \"b\", \"port\": 6379}]}",
                  "[]");
    expect_errors(nodes_spec,
                  "{\"nodes\": [{\"host\": \"a\"}, {\"host\": \"b\"}, {\"port\": 0, \"x\": 1}, 7]}",
                  "[{\"field\":\"nodes[2].host\",\"message\":\"is required\"},"
                  "{\"field\":\"nodes[2].port\",\"message\":\"must be between 1 and 65535\"},"
                  "{\"field\":\"nodes[2].x\",\"message\":\"is not a known field\"},"
                  "{\"field\":\"nodes[3]\",\"message\":\"must be an object\"}]");
}

static void test_array_of_arrays(void **state)
{
    (void)state;
    expect_errors(nodes_spec, "{\"matrix\": [[1, 2], [], [3, \"4\"]]}",
                  "[{\"field\":\"matrix[2][1]\",\"message\":\"must be an integer\"}]");
}

static const struct jspec_field nullable_spec[] = {
    {.name = "note", .type = JSPEC_STRING, .required = true, .nullable = true, .min_len = 3},
    {.name = "ids", .type = JSPEC_ARRAY, .nullable = true},
    {0},
};

static void test_nullable(void **state)
{
    (void)state;
    expect_errors(nullable_spec, "{\"note\": null, \"ids\": null}", "[]");
    expect_errors(nullable_spec, "{\"note\": \"abc\", \"ids\": [1]}", "[]");
    /* Nullable does not make a required field optional. */
    expect_errors(nullable_spec, "{}", "[{\"field\":\"note\",\"message\":\"is required\"}]");
    /* The value's rules still apply when it is not null. */
    expect_errors(nullable_spec, "{\"note\": \"ab\", \"ids\": 1}",
                  "[{\"field\":\"note\",\"message\":\"must have at least 3 characters\"},"
                  "{\"field\":\"ids\",\"message\":\"must be an array\"}]");
}

static const struct jspec_field range_spec[] = {
    {.name = "shards", .type = JSPEC_INTEGER, .has_range = true, .min = 1, .max = 500},
    {.name = "ratio", .type = JSPEC_NUMBER, .has_range = true, .min = 0, .max = 0.5},
    {.name = "any", .type = JSPEC_NUMBER},
    {0},
};

static void test_number_ranges(void **state)
{
    (void)state;
    expect_errors(range_spec, "{\"shards\": 1, \"ratio\": 0}", "[]");
    expect_errors(range_spec, "{\"shards\": 500, \"ratio\": 0.5}", "[]");
    expect_errors(range_spec, "{\"shards\": 0, \"ratio\": -0.01}",
                  "[{\"field\":\"shards\",\"message\":\"must be between 1 and 500\"},"
                  "{\"field\":\"ratio\",\"message\":\"must be between 0 and 0.5\"}]");
    expect_errors(range_spec, "{\"shards\": 501, \"ratio\": 0.51}",
                  "[{\"field\":\"shards\",\"message\":\"must be between 1 and 500\"},"
                  "{\"field\":\"ratio\",\"message\":\"must be between 0 and 0.5\"}]");
    /* An integer value is checked against a number's range too. */
    expect_errors(range_spec, "{\"ratio\": 1}",
                  "[{\"field\":\"ratio\",\"message\":\"must be between 0 and 0.5\"}]");
    /* Without has_range any number goes. */
    expect_errors(range_spec, "{\"any\": -1e300}", "[]");
}

static int check_calls;

static bool lower_only(const json_t *value, char *msg, size_t msgsize)
{
    check_calls++;
    for (const char *p = json_string_value(value); *p; p++) {
        if (*p < 'a' || *p > 'z') {
            snprintf(msg, msgsize, "may contain only lower-case letters");
            return false;
        }
    }
    return true;
}

static const struct jspec_field check_spec[] = {
    {.name = "slug", .type = JSPEC_STRING, .nullable = true, .max_len = 8, .check = lower_only},
    {0},
};

static void test_custom_check(void **state)
{
    (void)state;
    check_calls = 0;
    expect_errors(check_spec, "{\"slug\": \"abc\"}", "[]");
    assert_int_equal(check_calls, 1);
    expect_errors(check_spec, "{\"slug\": \"aBc\"}",
                  "[{\"field\":\"slug\",\"message\":\"may contain only lower-case letters\"}]");
    assert_int_equal(check_calls, 2);
    /* The check only sees values of the right type, and never null. */
    expect_errors(check_spec, "{\"slug\": 5}",
                  "[{\"field\":\"slug\",\"message\":\"must be a string\"}]");
    expect_errors(check_spec, "{\"slug\": null}", "[]");
    expect_errors(check_spec, "{}", "[]");
    assert_int_equal(check_calls, 2);
}

static void test_several_errors_together(void **state)
{
    (void)state;
    expect_errors(token_spec, "{\"name\": \"abcdef\", \"scope\": \"root\", \"note\": 1, \"x\": 1}",
                  "[{\"field\":\"name\",\"message\":\"must have at most 4 characters\"},"
                  "{\"field\":\"scope\",\"message\":\"must be one of: admin, read\"},"
                  "{\"field\":\"note\",\"message\":\"must be a string\"},"
                  "{\"field\":\"x\",\"message\":\"is not a known field\"}]");
    /* Length, one_of and the check all report on the same value. */
    static const struct jspec_field all_rules[] = {
        {.name = "v", .type = JSPEC_STRING, .max_len = 2, .one_of = scopes, .check = lower_only},
        {0},
    };
    expect_errors(all_rules, "{\"v\": \"READ\"}",
                  "[{\"field\":\"v\",\"message\":\"must have at most 2 characters\"},"
                  "{\"field\":\"v\",\"message\":\"must be one of: admin, read\"},"
                  "{\"field\":\"v\",\"message\":\"may contain only lower-case letters\"}]");
}

static void test_non_object_body(void **state)
{
    static const char *const bodies[] = {"[]", "\"x\"", "1", "true", "null"};

    (void)state;
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
        expect_errors(token_spec, bodies[i],
                      "[{\"field\":\"\",\"message\":\"the request body must be a JSON object\"}]");
}

static void test_appends_to_existing_errors(void **state)
{
    json_t *body = json_pack("{s:s, s:s}", "name", "ab", "scope", "read");
    json_t *errors = json_array();

    (void)state;
    jspec_error(errors, "page_size", "must be an integer from 1 to 1000");
    /* Earlier entries are kept and do not count as failures of this body. */
    assert_true(jspec_check(body, token_spec, errors));
    assert_int_equal(json_array_size(errors), 1);
    json_object_del(body, "scope");
    assert_false(jspec_check(body, token_spec, errors));
    assert_int_equal(json_array_size(errors), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "field")),
                        "page_size");
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 1), "field")),
                        "scope");
    json_decref(body);
    json_decref(errors);
}

static bool latin1_message(const json_t *v, char *msg, size_t n)
{
    (void)v;
    snprintf(msg, n, "must not be caf\xe9");
    return false;
}

/* A failure whose message is not UTF-8 is still reported. */
static void test_failure_never_dropped(void **state)
{
    static const struct jspec_field spec[] = {
        {.name = "v", .type = JSPEC_STRING, .check = latin1_message},
        {0},
    };
    json_t *body = json_pack("{s:s}", "v", "x"), *errors = json_array();
    (void)state;
    bool ok = jspec_check(body, spec, errors);
    size_t n = json_array_size(errors);
    json_decref(body);
    json_decref(errors);
    assert_false(ok);
    assert_int_equal(n, 1);
}

/* JSPEC_OTHER lets every unnamed field through, while named ones are still
 * checked. */
static void test_other_fields_allowed(void **state)
{
    static const struct jspec_field spec[] = {
        {.name = "n", .type = JSPEC_INTEGER},
        {.name = JSPEC_OTHER},
        {0},
    };
    json_t *ok = json_pack("{s:i, s:s, s:n}", "n", 1, "free", "x", "gone"),
           *bad = json_pack("{s:s, s:s}", "n", "one", "free", "x"), *errors = json_array();
    (void)state;
    assert_true(jspec_check(ok, spec, errors));
    assert_int_equal(json_array_size(errors), 0);
    assert_false(jspec_check(bad, spec, errors));
    assert_int_equal(json_array_size(errors), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "field")),
                        "n");
    json_decref(ok);
    json_decref(bad);
    json_decref(errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_body),
        cmocka_unit_test(test_required_missing),
        cmocka_unit_test(test_right_types),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_null_without_nullable),
        cmocka_unit_test(test_string_length),
        cmocka_unit_test(test_array_length),
        cmocka_unit_test(test_array_items),
        cmocka_unit_test(test_one_of),
        cmocka_unit_test(test_one_of_message),
        cmocka_unit_test(test_unknown_fields),
        cmocka_unit_test(test_nested_objects),
        cmocka_unit_test(test_object_without_field_spec),
        cmocka_unit_test(test_array_of_objects),
        cmocka_unit_test(test_array_of_arrays),
        cmocka_unit_test(test_nullable),
        cmocka_unit_test(test_number_ranges),
        cmocka_unit_test(test_custom_check),
        cmocka_unit_test(test_several_errors_together),
        cmocka_unit_test(test_non_object_body),
        cmocka_unit_test(test_appends_to_existing_errors),
        cmocka_unit_test(test_failure_never_dropped),
        cmocka_unit_test(test_other_fields_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
