/* auth.c -- token generation, parsing and verification. */
#include "auth.h"

#include <string.h>
#include <strings.h>

#include "store.h"

void auth_token_new(struct auth_token *out)
{
    unsigned char id[AUTH_ID_LEN / 2], secret[32];
    char secret_text[AUTH_SECRET_LEN + 1];

    crypto_random(id, sizeof(id));
    crypto_random(secret, sizeof(secret));
    crypto_hex(id, sizeof(id), out->id);
    crypto_b64url(secret, sizeof(secret), secret_text);
    strcpy(out->text, AUTH_PREFIX);
    strcat(out->text, out->id);
    strcat(out->text, "_");
    strcat(out->text, secret_text);
    crypto_sha256(secret_text, AUTH_SECRET_LEN, out->hash);
}

bool auth_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                      unsigned char hash[CRYPTO_SHA256_LEN])
{
    const size_t plen = sizeof(AUTH_PREFIX) - 1;
    unsigned char scratch[AUTH_SECRET_LEN];

    if (strlen(text) != AUTH_TOKEN_LEN || strncmp(text, AUTH_PREFIX, plen) != 0 ||
        text[plen + AUTH_ID_LEN] != '_')
        return false;
    for (size_t i = 0; i < AUTH_ID_LEN; i++) {
        char c = text[plen + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    const char *secret = text + plen + AUTH_ID_LEN + 1;
    if (crypto_b64url_decode(secret, AUTH_SECRET_LEN, scratch) != 32)
        return false;
    memcpy(id, text + plen, AUTH_ID_LEN);
    id[AUTH_ID_LEN] = '\0';
    crypto_sha256(secret, AUTH_SECRET_LEN, hash);
    return true;
}

const char *auth_bearer(const char *header)
{
    if (header == NULL || strncasecmp(header, "Bearer ", 7) != 0)
        return NULL;
    header += 7;
    while (*header == ' ')
        header++;
    return header;
}

const char *auth_scope_name(enum token_scope scope)
{
    return scope == TOKEN_SCOPE_ADMIN ? "admin" : "read";
}

bool auth_scope_parse(const char *s, enum token_scope *out)
{
    if (strcmp(s, "admin") == 0)
        *out = TOKEN_SCOPE_ADMIN;
    else if (strcmp(s, "read") == 0)
        *out = TOKEN_SCOPE_READ;
    else
        return false;
    return true;
}

bool auth_allows(const struct auth_identity *who, enum route_scope scope)
{
    switch (scope) {
    case SCOPE_NONE:
        return true;
    case SCOPE_READ:
        return who->authenticated;
    case SCOPE_ADMIN:
        return who->authenticated && who->scope == TOKEN_SCOPE_ADMIN;
    }
    return false;
}

struct verify_args {
    const char *id;
    const unsigned char *hash;
    struct store_token_secret found;
};

/* Look the token up and compare; record its use at most once a minute so a
 * busy client does not turn every read into a write. */
static enum db_status verify_fn(struct db_conn *conn, void *arg)
{
    struct verify_args *a = arg;
    enum db_status st = store_token_secret(conn, a->id, &a->found);

    if (st != DB_OK)
        return st;
    if (a->found.revoked || !crypto_equal(a->found.hash, a->hash, CRYPTO_SHA256_LEN))
        return DB_NOT_FOUND;
    if (a->found.stale_last_used)
        (void)store_token_touch(conn, a->id);
    return DB_OK;
}

enum db_status auth_verify(struct db_pool *pool, const char *header, struct auth_identity *who)
{
    const char *token = auth_bearer(header);
    unsigned char hash[CRYPTO_SHA256_LEN];
    struct verify_args args;
    char id[AUTH_ID_LEN + 1];

    memset(who, 0, sizeof(*who));
    if (token == NULL || !auth_token_parse(token, id, hash))
        return DB_NOT_FOUND;
    args.id = id;
    args.hash = hash;
    enum db_status st = db_run(pool, verify_fn, &args);
    if (st != DB_OK)
        return st;
    who->authenticated = true;
    memcpy(who->token_id, id, sizeof(who->token_id));
    who->scope = args.found.scope;
    return DB_OK;
}
