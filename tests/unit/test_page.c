/* test_page.c -- page sizes, page tokens and list envelopes (controlplane/http/page.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "crypto.h"
#include "page.h"
#include "xalloc.h"

#define UUID_LOWER "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
#define UUID_UPPER "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
#define TS         "2026-11-30T08:30:19.123456Z"

static void test_size_default(void **state)
{
    char msg[128] = "untouched";
    int size = -1;

    (void)state;
    assert_true(page_size_parse(NULL, &size, msg, sizeof(msg)));
    assert_int_equal(size, PAGE_SIZE_DEFAULT);
    assert_int_equal(size, 100);
    assert_string_equal(msg, "untouched");
}

static void test_size_valid(void **state)
{
    static const struct {
        const char *text;
        int want;
    } cases[] = {{"1", 1}, {"2", 2}, {"100", 100}, {"999", 999}, {"1000", 1000}, {"0050", 50}};
    char msg[128];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int size = -1;
        if (!page_size_parse(cases[i].text, &size, msg, sizeof(msg)))
            fail_msg("page_size_parse(\"%s\") refused it: %s", cases[i].text, msg);
        assert_int_equal(size, cases[i].want);
    }
}

static void test_size_invalid(void **state)
{
    static const char *const bad[] = {
        "0",  "1001", "-1", "abc", "",     "10x",
        " 5", "+5",   "5 ", "1e2", "0x10", "99999999999999999999",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char msg[128] = "";
        int size = -1;
        if (page_size_parse(bad[i], &size, msg, sizeof(msg)))
            fail_msg("page_size_parse(\"%s\") accepted it as %d", bad[i], size);
        assert_int_equal(size, -1);
        assert_string_equal(msg, "must be an integer from 1 to 1000");
    }
}

/* Encode key for list, check the token is URL-safe text, and decode it back
 * with shape. */
static void expect_round_trip(const char *list, const char *key, enum page_key shape)
{
    char token[PAGE_TOKEN_MAX];
    char got[PAGE_KEY_MAX];

    page_token_encode(list, key, token);
    assert_true(strlen(token) > 0);
    assert_int_equal(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789-_"),
                     strlen(token));
    if (!page_token_decode(token, list, shape, got))
        fail_msg("token %s for list %s key %s did not decode", token, list, key);
    assert_string_equal(got, key);
}

static void test_round_trip_int(void **state)
{
    (void)state;
    expect_round_trip("events", "42", PAGE_KEY_INT);
    expect_round_trip("events", "0", PAGE_KEY_INT);
    expect_round_trip("node-types", "999999999999999999", PAGE_KEY_INT);
}

static void test_round_trip_time_uuid(void **state)
{
    (void)state;
    expect_round_trip("operations", TS "|" UUID_LOWER, PAGE_KEY_TIME_UUID);
    expect_round_trip("operations", TS "|" UUID_UPPER, PAGE_KEY_TIME_UUID);
    expect_round_trip("operations", "2024-02-29T23:59:59+02:00|" UUID_LOWER, PAGE_KEY_TIME_UUID);
}

static void test_round_trip_time_hex12(void **state)
{
    (void)state;
    expect_round_trip("tokens", TS "|0123456789ab", PAGE_KEY_TIME_HEX12);
    expect_round_trip("tokens", "2026-01-01T00:00:00Z|ffffffffffff", PAGE_KEY_TIME_HEX12);
}

/* Assert that token is refused by list for shape, naming it on failure. */
static void expect_refused(const char *token, const char *list, enum page_key shape)
{
    char key[PAGE_KEY_MAX];
    if (page_token_decode(token, list, shape, key))
        fail_msg("page_token_decode(\"%s\", \"%s\") accepted it with key \"%s\"", token, list, key);
}

/* Assert that a token made of the raw text plain is refused. */
static void expect_plain_refused(const char *plain, size_t len, const char *list,
                                 enum page_key shape)
{
    char token[PAGE_TOKEN_MAX * 2];
    crypto_b64url(plain, len, token);
    expect_refused(token, list, shape);
}

static void test_other_list_refused(void **state)
{
    char token[PAGE_TOKEN_MAX];

    (void)state;
    page_token_encode("events", "42", token);
    expect_refused(token, "node-types", PAGE_KEY_INT);
    expect_refused(token, "event", PAGE_KEY_INT);
    expect_refused(token, "events2", PAGE_KEY_INT);
    expect_refused(token, "", PAGE_KEY_INT);
    page_token_encode("engine-versions", "7", token);
    expect_refused(token, "engine", PAGE_KEY_INT);
    page_token_encode("tokens", TS "|0123456789ab", token);
    expect_refused(token, "operations", PAGE_KEY_TIME_HEX12);
}

static void test_wrong_key_shape_refused(void **state)
{
    char token[PAGE_TOKEN_MAX];

    (void)state;
    page_token_encode("events", TS "|" UUID_LOWER, token);
    expect_refused(token, "events", PAGE_KEY_INT);
    page_token_encode("operations", "42", token);
    expect_refused(token, "operations", PAGE_KEY_TIME_UUID);
    page_token_encode("operations", TS "|0123456789ab", token);
    expect_refused(token, "operations", PAGE_KEY_TIME_UUID);
    page_token_encode("tokens", TS "|" UUID_LOWER, token);
    expect_refused(token, "tokens", PAGE_KEY_TIME_HEX12);

    static const struct {
        const char *key;
        enum page_key shape;
    } bad[] = {
        {"", PAGE_KEY_INT},
        {"-1", PAGE_KEY_INT},
        {"4 2", PAGE_KEY_INT},
        {"1234567890123456789", PAGE_KEY_INT}, /* 19 digits */
        {"42; DROP TABLE events", PAGE_KEY_INT},
        {TS, PAGE_KEY_TIME_UUID},
        {TS "|", PAGE_KEY_TIME_UUID},
        {"|" UUID_LOWER, PAGE_KEY_TIME_UUID},
        {"2026-02-30T08:30:19Z|" UUID_LOWER, PAGE_KEY_TIME_UUID},
        {"yesterday|" UUID_LOWER, PAGE_KEY_TIME_UUID},
        {TS "|3f2504e04f8941d39a0c0305e82c3301", PAGE_KEY_TIME_UUID},
        {TS "|" UUID_LOWER "|x", PAGE_KEY_TIME_UUID},
        {TS "|0123456789AB", PAGE_KEY_TIME_HEX12},
        {TS "|0123456789a", PAGE_KEY_TIME_HEX12},
        {TS "|0123456789abc", PAGE_KEY_TIME_HEX12},
        {TS "|0123456789ag", PAGE_KEY_TIME_HEX12},
        {TS "'--|0123456789ab", PAGE_KEY_TIME_HEX12},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        page_token_encode("list", bad[i].key, token);
        expect_refused(token, "list", bad[i].shape);
    }
}

static void test_key_postgres_cannot_read_refused(void **state)
{
    char token[PAGE_TOKEN_MAX];
    (void)state;
    page_token_encode("tokens", "0000-01-01T00:00:00.000000Z|0123456789ab", token);
    expect_refused(token, "tokens", PAGE_KEY_TIME_HEX12);
    page_token_encode("operations", "2026-01-01T00:00:00+20:00|" UUID_LOWER, token);
    expect_refused(token, "operations", PAGE_KEY_TIME_UUID);
}

static void test_round_trip_long_key(void **state)
{
    char key[PAGE_KEY_MAX];
    (void)state;
    snprintf(key, sizeof(key), "2026-11-30T08:30:19.%09dZ|%s", 0, UUID_LOWER);
    expect_round_trip("operations", key, PAGE_KEY_TIME_UUID);
    memset(key, '7', PAGE_KEY_MAX - 1);
    key[18] = '\0'; /* the longest integer key */
    expect_round_trip("events", key, PAGE_KEY_INT);
}

static void test_garbage_refused(void **state)
{
    char longtoken[PAGE_TOKEN_MAX + 8];

    (void)state;
    expect_refused("", "events", PAGE_KEY_INT);
    expect_refused("a", "events", PAGE_KEY_INT);
    expect_refused("!!!!", "events", PAGE_KEY_INT);
    expect_refused("cDE6ZXZlbnRzOjQy!", "events", PAGE_KEY_INT);
    expect_refused("cDE6ZXZlbnRz OjQy", "events", PAGE_KEY_INT);
    expect_refused("cDE+ZXZlbnRzOjQy", "events", PAGE_KEY_INT);
    expect_refused("42", "events", PAGE_KEY_INT);
    memset(longtoken, 'A', sizeof(longtoken) - 1);
    longtoken[sizeof(longtoken) - 1] = '\0';
    expect_refused(longtoken, "events", PAGE_KEY_INT);
}

static void test_wrong_plaintext_refused(void **state)
{
    static const char nul[] = "p1:events:4\0"
                              "2";
    char big[PAGE_TOKEN_MAX];

    (void)state;
    /* Well-formed base64url whose text is not "p1:<list>:<key>". */
    expect_plain_refused("p1:events:", 10, "events", PAGE_KEY_INT);
    expect_plain_refused("p2:events:42", 12, "events", PAGE_KEY_INT);
    expect_plain_refused("events:42", 9, "events", PAGE_KEY_INT);
    expect_plain_refused("p1events42", 10, "events", PAGE_KEY_INT);
    expect_plain_refused("p1:events", 9, "events", PAGE_KEY_INT);
    expect_plain_refused("p1:events:4a", 12, "events", PAGE_KEY_INT);
    expect_plain_refused(nul, sizeof(nul) - 1, "events", PAGE_KEY_INT);
    expect_plain_refused("\xff\xfe\xfd", 3, "events", PAGE_KEY_INT);
    /* A key of PAGE_KEY_MAX bytes or more never reaches the caller's buffer. */
    strcpy(big, "p1:events:");
    size_t at = strlen(big);
    memset(big + at, '1', PAGE_KEY_MAX);
    expect_plain_refused(big, at + PAGE_KEY_MAX, "events", PAGE_KEY_INT);
}

static void test_is_uuid(void **state)
{
    static const struct {
        const char *s;
        bool uuid;
    } cases[] = {
        {UUID_LOWER, true},
        {UUID_UPPER, true},
        {"00000000-0000-0000-0000-000000000000", true},
        {"", false},
        {"3f2504e04f8941d39a0c0305e82c3301", false},
        {"3f2504e0-4f89-41d3-9a0c-0305e82c330", false},
        {"3f2504e0-4f89-41d3-9a0c-0305e82c33011", false},
        {"3f2504e0-4f8941d3-9a0c-0305e82c3301-", false},
        {"3f2504e0_4f89_41d3_9a0c_0305e82c3301", false},
        {"3f2504e0-4f89-41d3-9a0c-0305e82c330g", false},
        {"{3f2504e0-4f89-41d3-9a0c-0305e82c3301}", false},
        {" 3f2504e0-4f89-41d3-9a0c-0305e82c3301", false},
        {"3f2504e0-4f89-41d3-9a0c-0305e82c3301 ", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (page_is_uuid(cases[i].s) != cases[i].uuid)
            fail_msg("page_is_uuid(\"%s\") is %s", cases[i].s, cases[i].uuid ? "false" : "true");
    }
}

/* Parse the envelope text, freeing it; fail naming the text if it is not JSON. */
static json_t *parse_envelope(char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, 0, &err);
    if (v == NULL)
        fail_msg("page_envelope made invalid JSON: %s: %s", text, err.text);
    free(text);
    return v;
}

static void test_envelope_with_next(void **state)
{
    char key[PAGE_KEY_MAX];

    (void)state;
    char *text = page_envelope("tokens", xstrdup("[{\"id\":\"a\"},{\"id\":\"b\"}]"), "tokens",
                               TS "|0123456789ab");
    json_t *env = parse_envelope(text);
    assert_int_equal(json_object_size(env), 2);
    json_t *items = json_object_get(env, "tokens");
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 1), "id")), "b");
    const char *next = json_string_value(json_object_get(env, "next_page_token"));
    assert_non_null(next);
    assert_true(page_token_decode(next, "tokens", PAGE_KEY_TIME_HEX12, key));
    assert_string_equal(key, TS "|0123456789ab");
    json_decref(env);
}

static void test_envelope_last_page(void **state)
{
    (void)state;
    /* The items key and the list name may differ (node_types vs node-types). */
    char *text = page_envelope("node_types", xstrdup("[]"), "node-types", NULL);
    assert_string_equal(text, "{\"node_types\":[]}");
    json_t *env = parse_envelope(text);
    assert_int_equal(json_object_size(env), 1);
    assert_int_equal(json_array_size(json_object_get(env, "node_types")), 0);
    assert_null(json_object_get(env, "next_page_token"));
    json_decref(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_default),
        cmocka_unit_test(test_size_valid),
        cmocka_unit_test(test_size_invalid),
        cmocka_unit_test(test_round_trip_int),
        cmocka_unit_test(test_round_trip_time_uuid),
        cmocka_unit_test(test_round_trip_time_hex12),
        cmocka_unit_test(test_other_list_refused),
        cmocka_unit_test(test_wrong_key_shape_refused),
        cmocka_unit_test(test_garbage_refused),
        cmocka_unit_test(test_wrong_plaintext_refused),
        cmocka_unit_test(test_is_uuid),
        cmocka_unit_test(test_envelope_with_next),
        cmocka_unit_test(test_envelope_last_page),
        cmocka_unit_test(test_key_postgres_cannot_read_refused),
        cmocka_unit_test(test_round_trip_long_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
