/* test_token_cache.c -- the cache of verified credentials
 * (controlplane/http/token_cache.h): what it trusts, and for how long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "token_cache.h"

static const unsigned char HASH[CRYPTO_SHA256_LEN] = {1, 2, 3};
static const unsigned char OTHER[CRYPTO_SHA256_LEN] = {9};

static struct auth_identity token(const char *id, enum token_scope scope)
{
    struct auth_identity who = {.authenticated = true, .kind = AUTH_KIND_TOKEN, .scope = scope};
    strcpy(who.token_id, id);
    return who;
}

static void test_trusted_entries_answer(void **state)
{
    (void)state;
    struct token_cache *c = token_cache_new();
    struct auth_identity who = token("0123456789ab", TOKEN_SCOPE_ADMIN), got;

    /* Not trusted until notifications arrive: nothing is kept. */
    token_cache_put(c, token_cache_epoch(c), HASH, &who, -1, 0);
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ab", HASH, 1, &got));
    token_cache_trust(c, true);
    token_cache_put(c, token_cache_epoch(c), HASH, &who, -1, 0);
    assert_true(token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ab", HASH, 1, &got));
    assert_int_equal(got.scope, TOKEN_SCOPE_ADMIN);
    /* Another secret, another kind, another id: no. */
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ab", OTHER, 1, &got));
    assert_false(token_cache_get(c, AUTH_KIND_AGENT, "0123456789ab", HASH, 1, &got));
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ac", HASH, 1, &got));
    /* A minute at most: then the database is asked again. */
    assert_true(
        token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ab", HASH, TOKEN_CACHE_TTL_US - 1, &got));
    assert_false(
        token_cache_get(c, AUTH_KIND_TOKEN, "0123456789ab", HASH, TOKEN_CACHE_TTL_US, &got));
    token_cache_free(c);
}

static void test_expiry_changes_and_lost_notifications(void **state)
{
    (void)state;
    struct token_cache *c = token_cache_new();
    struct auth_identity who = token("aaaaaaaaaaaa", TOKEN_SCOPE_READ), got;

    token_cache_trust(c, true);
    /* Never past the token's own expiry. */
    token_cache_put(c, token_cache_epoch(c), HASH, &who, 1000, 0);
    assert_true(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 999, &got));
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 1000, &got));
    /* A change heard of drops it. */
    token_cache_put(c, token_cache_epoch(c), HASH, &who, -1, 0);
    token_cache_forget(c, "aaaaaaaaaaaa");
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 1, &got));
    /* An answer the database gave before a change was heard of is not kept. */
    uint64_t before = token_cache_epoch(c);
    token_cache_forget(c, "aaaaaaaaaaaa");
    token_cache_put(c, before, HASH, &who, -1, 0);
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 1, &got));
    /* Notifications lost: everything goes, and nothing is kept until they are back. */
    token_cache_put(c, token_cache_epoch(c), HASH, &who, -1, 0);
    token_cache_trust(c, false);
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 1, &got));
    token_cache_put(c, token_cache_epoch(c), HASH, &who, -1, 0);
    assert_false(token_cache_get(c, AUTH_KIND_TOKEN, "aaaaaaaaaaaa", HASH, 1, &got));
    token_cache_forget(NULL, "x"); /* no cache: nothing to do */
    token_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trusted_entries_answer),
        cmocka_unit_test(test_expiry_changes_and_lost_notifications),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
