/* auth_token.c -- the shape of API tokens and agent credentials (see
 * auth_token.h): making, reading and naming them; pure but for the random
 * bytes. */
#include "auth_token.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static void secret_new(const char *prefix, struct auth_token *out)
{
    unsigned char id[AUTH_ID_LEN / 2], secret[32];
    char secret_text[AUTH_SECRET_LEN + 1];

    crypto_random(id, sizeof(id));
    crypto_random(secret, sizeof(secret));
    crypto_hex(id, sizeof(id), out->id);
    crypto_b64url(secret, sizeof(secret), secret_text);
    snprintf(out->text, sizeof(out->text), "%s%s_%s", prefix, out->id, secret_text);
    crypto_sha256(secret_text, AUTH_SECRET_LEN, out->hash);
}

void auth_token_new(struct auth_token *out)
{
    secret_new(AUTH_PREFIX, out);
}

void auth_agent_credential_new(struct auth_token *out)
{
    secret_new(AUTH_AGENT_PREFIX, out);
}

void auth_join_token_new(struct auth_token *out)
{
    secret_new(AUTH_JOIN_PREFIX, out);
}

static bool secret_parse(const char *text, const char *prefix, char id[AUTH_ID_LEN + 1],
                         unsigned char hash[CRYPTO_SHA256_LEN])
{
    const size_t plen = strlen(prefix);
    unsigned char scratch[AUTH_SECRET_LEN];

    if (strlen(text) != plen + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN ||
        strncmp(text, prefix, plen) != 0 || text[plen + AUTH_ID_LEN] != '_')
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

bool auth_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                      unsigned char hash[CRYPTO_SHA256_LEN])
{
    return secret_parse(text, AUTH_PREFIX, id, hash);
}

bool auth_agent_credential_parse(const char *text, char id[AUTH_ID_LEN + 1],
                                 unsigned char hash[CRYPTO_SHA256_LEN])
{
    return secret_parse(text, AUTH_AGENT_PREFIX, id, hash);
}

bool auth_join_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                           unsigned char hash[CRYPTO_SHA256_LEN])
{
    return secret_parse(text, AUTH_JOIN_PREFIX, id, hash);
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
