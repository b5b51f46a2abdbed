/* auth.c -- token generation, parsing and verification. */
#include "auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store.h"
#include "timeutil.h"
#include "token_cache.h"

bool auth_allows(const struct auth_identity *who, enum route_scope scope)
{
    bool token = who->authenticated && who->kind == AUTH_KIND_TOKEN;

    switch (scope) {
    case SCOPE_NONE:
        return true;
    case SCOPE_READ:
    case SCOPE_SIGV4:
        return token;
    case SCOPE_ADMIN:
        return token && who->scope == TOKEN_SCOPE_ADMIN;
    case SCOPE_AGENT:
        return who->authenticated && who->kind == AUTH_KIND_AGENT;
    case SCOPE_BOOTSTRAP:
        return who->authenticated &&
               (who->kind == AUTH_KIND_BOOTSTRAP || who->kind == AUTH_KIND_JOIN);
    }
    return false;
}

struct verify_args {
    enum auth_kind kind;
    const char *id;
    const unsigned char *hash;
    struct store_token_secret found;
    char host_id[AUTH_UUID_LEN + 1];
};

/* Look the secret up and compare; record an API token's use at most once a
 * minute so a busy client does not turn every read into a write. */
static enum db_status verify_fn(struct db_conn *conn, void *arg)
{
    struct verify_args *a = arg;
    enum db_status st;

    if (a->kind == AUTH_KIND_AGENT || a->kind == AUTH_KIND_JOIN) {
        st = a->kind == AUTH_KIND_AGENT
                 ? store_host_credential(conn, a->id, a->host_id, a->found.hash)
                 : store_join_token_hash(conn, a->id, a->found.hash);
        if (st != DB_OK)
            return st;
        return crypto_equal(a->found.hash, a->hash, CRYPTO_SHA256_LEN) ? DB_OK : DB_NOT_FOUND;
    }
    st = store_token_secret(conn, a->id, &a->found);
    if (st != DB_OK)
        return st;
    if (a->found.revoked || !crypto_equal(a->found.hash, a->hash, CRYPTO_SHA256_LEN))
        return DB_NOT_FOUND;
    if (a->found.stale_last_used)
        (void)store_token_touch(conn, a->id);
    return DB_OK;
}

static bool bootstrap_matches(const char *bootstrap, const char *presented)
{
    unsigned char want[CRYPTO_SHA256_LEN], got[CRYPTO_SHA256_LEN];

    /* Hash both so the comparison takes the same time whatever the lengths. */
    crypto_sha256(bootstrap, strlen(bootstrap), want);
    crypto_sha256(presented, strlen(presented), got);
    return crypto_equal(want, got, CRYPTO_SHA256_LEN);
}

enum db_status auth_verify(struct db_pool *pool, struct token_cache *cache, const char *bootstrap,
                           enum route_scope scope, const char *header, struct auth_identity *who)
{
    const char *secret = auth_bearer(header);
    unsigned char hash[CRYPTO_SHA256_LEN];
    struct verify_args args = {0};
    char id[AUTH_ID_LEN + 1];

    memset(who, 0, sizeof(*who));
    if (secret == NULL)
        return DB_NOT_FOUND;
    if (scope == SCOPE_BOOTSTRAP) {
        if (auth_join_token_parse(secret, id, hash)) {
            args.kind = AUTH_KIND_JOIN;
        } else if (bootstrap != NULL && bootstrap_matches(bootstrap, secret)) {
            who->authenticated = true;
            who->kind = AUTH_KIND_BOOTSTRAP;
            return DB_OK;
        } else {
            return DB_NOT_FOUND;
        }
    } else if (auth_agent_credential_parse(secret, id, hash)) {
        args.kind = AUTH_KIND_AGENT;
    } else if (auth_token_parse(secret, id, hash)) {
        args.kind = AUTH_KIND_TOKEN;
    } else {
        return DB_NOT_FOUND;
    }
    args.id = id;
    args.hash = hash;
    int64_t now = time_mono_us();
    if (cache != NULL && token_cache_get(cache, args.kind, id, hash, now, who))
        return DB_OK;
    uint64_t epoch = cache != NULL ? token_cache_epoch(cache) : 0;
    enum db_status st = db_run(pool, verify_fn, &args);
    if (st != DB_OK)
        return st;
    who->authenticated = true;
    who->kind = args.kind;
    memcpy(who->token_id, id, sizeof(who->token_id));
    if (args.kind == AUTH_KIND_AGENT)
        memcpy(who->host_id, args.host_id, sizeof(who->host_id));
    else if (args.kind == AUTH_KIND_TOKEN) {
        who->scope = args.found.scope;
        who->host_details = args.found.host_details;
    }
    if (cache != NULL && args.kind != AUTH_KIND_JOIN)
        token_cache_put(cache, epoch, hash, who,
                        args.kind == AUTH_KIND_TOKEN ? args.found.expires_in_us : -1, now);
    return DB_OK;
}
