/* test_auth.c -- API token format, parsing, bearer headers and scopes (controlplane/http/auth.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"

#define PREFIX_LEN (sizeof(AUTH_PREFIX) - 1)

/* A well-shaped token, the example in api/openapi.yaml. */
static const char example[] = "cairn_3f9c0a1b2d4e_q0Yb8y3Jm1vT5xkW9rLr2c7HnAeZ4uPdG6sFhKjN0oI";

/* Assert that auth_token_parse refuses text, naming it on failure. */
static void expect_rejected(const char *text)
{
    char id[AUTH_ID_LEN + 1];
    unsigned char hash[CRYPTO_SHA256_LEN];
    if (auth_token_parse(text, id, hash))
        fail_msg("auth_token_parse(\"%s\") accepted it, expected it refused", text);
}

/* A copy of example with the byte at index i replaced by c, in buf. */
static const char *mutate(char *buf, size_t i, char c)
{
    strcpy(buf, example);
    buf[i] = c;
    return buf;
}

static void test_lengths(void **state)
{
    (void)state;
    assert_int_equal(AUTH_TOKEN_LEN, 62);
    assert_int_equal(strlen(example), AUTH_TOKEN_LEN);
    assert_int_equal(crypto_b64url_len(32), AUTH_SECRET_LEN);
}

static void test_new_token_shape(void **state)
{
    struct auth_token t;
    unsigned char want[CRYPTO_SHA256_LEN];

    (void)state;
    auth_token_new(&t);
    assert_int_equal(strlen(t.text), AUTH_TOKEN_LEN);
    assert_memory_equal(t.text, AUTH_PREFIX, PREFIX_LEN);
    assert_int_equal(strlen(t.id), AUTH_ID_LEN);
    assert_int_equal(strspn(t.id, "0123456789abcdef"), AUTH_ID_LEN);
    assert_memory_equal(t.text + PREFIX_LEN, t.id, AUTH_ID_LEN);
    assert_int_equal(t.text[PREFIX_LEN + AUTH_ID_LEN], '_');
    /* The stored hash is SHA-256 of the secret part only. */
    const char *secret = t.text + PREFIX_LEN + AUTH_ID_LEN + 1;
    assert_int_equal(strlen(secret), AUTH_SECRET_LEN);
    crypto_sha256(secret, AUTH_SECRET_LEN, want);
    assert_memory_equal(t.hash, want, CRYPTO_SHA256_LEN);
}

static void test_new_token_parses(void **state)
{
    char id[AUTH_ID_LEN + 1];
    unsigned char hash[CRYPTO_SHA256_LEN];

    (void)state;
    for (int i = 0; i < 64; i++) {
        struct auth_token t;
        auth_token_new(&t);
        if (!auth_token_parse(t.text, id, hash))
            fail_msg("auth_token_parse refused a new token: %s", t.text);
        assert_string_equal(id, t.id);
        assert_memory_equal(hash, t.hash, CRYPTO_SHA256_LEN);
    }
}

static void test_new_tokens_differ(void **state)
{
    struct auth_token a, b;

    (void)state;
    auth_token_new(&a);
    auth_token_new(&b);
    assert_string_not_equal(a.text, b.text);
    assert_string_not_equal(a.id, b.id);
    assert_memory_not_equal(a.hash, b.hash, CRYPTO_SHA256_LEN);
}

static void test_parse_example(void **state)
{
    char id[AUTH_ID_LEN + 1];
    unsigned char hash[CRYPTO_SHA256_LEN], want[CRYPTO_SHA256_LEN];

    (void)state;
    assert_true(auth_token_parse(example, id, hash));
    assert_string_equal(id, "3f9c0a1b2d4e");
    crypto_sha256("q0Yb8y3Jm1vT5xkW9rLr2c7HnAeZ4uPdG6sFhKjN0oI", AUTH_SECRET_LEN, want);
    assert_memory_equal(hash, want, CRYPTO_SHA256_LEN);
}

static void test_parse_wrong_length(void **state)
{
    char buf[AUTH_TOKEN_LEN + 2];

    (void)state;
    expect_rejected("");
    expect_rejected("cairn_");
    strcpy(buf, example);
    buf[AUTH_TOKEN_LEN - 1] = '\0';
    expect_rejected(buf);
    strcpy(buf, example);
    strcat(buf, "A");
    expect_rejected(buf);
}

static void test_parse_wrong_prefix(void **state)
{
    char buf[AUTH_TOKEN_LEN + 1];

    (void)state;
    expect_rejected(mutate(buf, 0, 'C'));
    expect_rejected(mutate(buf, 4, 'N'));
    expect_rejected(mutate(buf, 5, '-'));
    expect_rejected(mutate(buf, 0, 'x'));
}

static void test_parse_bad_id(void **state)
{
    char buf[AUTH_TOKEN_LEN + 1];

    (void)state;
    /* Only lower-case hex: the id is compared as text. */
    expect_rejected(mutate(buf, PREFIX_LEN, 'F'));
    expect_rejected(mutate(buf, PREFIX_LEN + 3, 'C'));
    expect_rejected(mutate(buf, PREFIX_LEN + 11, 'g'));
    expect_rejected(mutate(buf, PREFIX_LEN + 5, '_'));
    expect_rejected(mutate(buf, PREFIX_LEN + 5, '-'));
}

static void test_parse_missing_underscore(void **state)
{
    char buf[AUTH_TOKEN_LEN + 1];

    (void)state;
    expect_rejected(mutate(buf, PREFIX_LEN + AUTH_ID_LEN, '-'));
    expect_rejected(mutate(buf, PREFIX_LEN + AUTH_ID_LEN, 'a'));
    /* Right length, but the separator one place early. */
    expect_rejected("cairn_3f9c0a1b2d4_eq0Yb8y3Jm1vT5xkW9rLr2c7HnAeZ4uPdG6sFhKjN0oI");
}

static void test_parse_bad_secret(void **state)
{
    static const char bad[] = {'+', '/', '=', '.', ' ', '!', '~', '\t'};
    const size_t at = PREFIX_LEN + AUTH_ID_LEN + 1;
    char buf[AUTH_TOKEN_LEN + 1];

    (void)state;
    for (size_t i = 0; i < sizeof(bad); i++) {
        expect_rejected(mutate(buf, at, bad[i]));
        expect_rejected(mutate(buf, at + 20, bad[i]));
        expect_rejected(mutate(buf, AUTH_TOKEN_LEN - 1, bad[i]));
    }
    /* '-' and '_' are base64url. */
    char id[AUTH_ID_LEN + 1];
    unsigned char hash[CRYPTO_SHA256_LEN];
    assert_true(auth_token_parse(mutate(buf, at + 1, '-'), id, hash));
    assert_true(auth_token_parse(mutate(buf, at + 1, '_'), id, hash));
}

static void test_bearer(void **state)
{
    (void)state;
    assert_string_equal(auth_bearer("Bearer abc"), "abc");
    assert_string_equal(auth_bearer("bearer abc"), "abc");
    assert_string_equal(auth_bearer("BEARER abc"), "abc");
    assert_string_equal(auth_bearer("BeArEr abc"), "abc");
    assert_string_equal(auth_bearer("Bearer    abc"), "abc");
    char header[16 + AUTH_TOKEN_LEN];
    snprintf(header, sizeof(header), "Bearer %s", example);
    assert_string_equal(auth_bearer(header), example);
    assert_null(auth_bearer(NULL));
    assert_null(auth_bearer(""));
    assert_null(auth_bearer("Basic dXNlcjpwYXNz"));
    assert_null(auth_bearer("Token abc"));
    assert_null(auth_bearer("Bearer"));
    assert_null(auth_bearer("Bearerabc"));
    assert_null(auth_bearer("abc"));
    assert_null(auth_bearer(" Bearer abc"));
}

static void test_allows(void **state)
{
    static const struct auth_identity nobody = {.authenticated = false};
    static const struct auth_identity reader = {
        .authenticated = true, .token_id = "0123456789ab", .scope = TOKEN_SCOPE_READ};
    static const struct auth_identity admin = {
        .authenticated = true, .token_id = "ba9876543210", .scope = TOKEN_SCOPE_ADMIN};
    /* An identity that is not authenticated gains nothing from its scope field. */
    static const struct auth_identity stale = {.authenticated = false, .scope = TOKEN_SCOPE_ADMIN};
    static const struct {
        const char *who_name;
        const struct auth_identity *who;
        enum route_scope scope;
        bool want;
    } cases[] = {
        {"nobody", &nobody, SCOPE_NONE, true},   {"nobody", &nobody, SCOPE_READ, false},
        {"nobody", &nobody, SCOPE_ADMIN, false}, {"reader", &reader, SCOPE_NONE, true},
        {"reader", &reader, SCOPE_READ, true},   {"reader", &reader, SCOPE_ADMIN, false},
        {"admin", &admin, SCOPE_NONE, true},     {"admin", &admin, SCOPE_READ, true},
        {"admin", &admin, SCOPE_ADMIN, true},    {"stale", &stale, SCOPE_READ, false},
        {"stale", &stale, SCOPE_ADMIN, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = auth_allows(cases[i].who, cases[i].scope);
        if (got != cases[i].want)
            fail_msg("auth_allows(%s, %s) is %d, expected %d", cases[i].who_name,
                     route_scope_name(cases[i].scope), got, cases[i].want);
    }
}

/* API tokens, agent credentials and join tokens each parse as their own
 * kind only, and a join token opens the registration route alone. */
static void test_kinds_never_mix(void **state)
{
    char id[AUTH_ID_LEN + 1];
    unsigned char hash[CRYPTO_SHA256_LEN];
    struct auth_token api, agent, join;

    (void)state;
    auth_token_new(&api);
    auth_agent_credential_new(&agent);
    auth_join_token_new(&join);
    assert_memory_equal(join.text, AUTH_JOIN_PREFIX, strlen(AUTH_JOIN_PREFIX));
    assert_true(auth_join_token_parse(join.text, id, hash));
    assert_string_equal(id, join.id);
    assert_memory_equal(hash, join.hash, CRYPTO_SHA256_LEN);
    assert_false(auth_token_parse(join.text, id, hash));
    assert_false(auth_agent_credential_parse(join.text, id, hash));
    assert_false(auth_join_token_parse(api.text, id, hash));
    assert_false(auth_join_token_parse(agent.text, id, hash));

    const struct auth_identity joiner = {.authenticated = true, .kind = AUTH_KIND_JOIN};
    assert_true(auth_allows(&joiner, SCOPE_BOOTSTRAP));
    assert_false(auth_allows(&joiner, SCOPE_AGENT));
    assert_false(auth_allows(&joiner, SCOPE_READ));
    assert_false(auth_allows(&joiner, SCOPE_ADMIN));
}

static void test_scope_parse_and_name(void **state)
{
    enum token_scope s = TOKEN_SCOPE_READ;

    (void)state;
    assert_true(auth_scope_parse("admin", &s));
    assert_int_equal(s, TOKEN_SCOPE_ADMIN);
    assert_true(auth_scope_parse("read", &s));
    assert_int_equal(s, TOKEN_SCOPE_READ);
    assert_string_equal(auth_scope_name(TOKEN_SCOPE_ADMIN), "admin");
    assert_string_equal(auth_scope_name(TOKEN_SCOPE_READ), "read");
    /* Others are refused and leave *out alone. */
    static const char *const bad[] = {"", "Admin", "READ", "write", "none", "admin ", "rea"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = TOKEN_SCOPE_ADMIN;
        if (auth_scope_parse(bad[i], &s))
            fail_msg("auth_scope_parse(\"%s\") accepted it", bad[i]);
        assert_int_equal(s, TOKEN_SCOPE_ADMIN);
    }
    /* Names round-trip. */
    assert_true(auth_scope_parse(auth_scope_name(TOKEN_SCOPE_READ), &s));
    assert_int_equal(s, TOKEN_SCOPE_READ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_kinds_never_mix),
        cmocka_unit_test(test_new_token_shape),
        cmocka_unit_test(test_new_token_parses),
        cmocka_unit_test(test_new_tokens_differ),
        cmocka_unit_test(test_parse_example),
        cmocka_unit_test(test_parse_wrong_length),
        cmocka_unit_test(test_parse_wrong_prefix),
        cmocka_unit_test(test_parse_bad_id),
        cmocka_unit_test(test_parse_missing_underscore),
        cmocka_unit_test(test_parse_bad_secret),
        cmocka_unit_test(test_bearer),
        cmocka_unit_test(test_allows),
        cmocka_unit_test(test_scope_parse_and_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
