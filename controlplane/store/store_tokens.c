/* store_tokens.c -- api_tokens: the hash of a token's secret, and the secret
 * sealed with cairnd's key when it has one (for signed requests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define TOKEN_JSON                                                                                 \
    "json_build_object('id', id, 'name', name, 'scope', scope, 'host_details', host_details,"      \
    " 'created_at', " STORE_TS("created_at") ", 'last_used_at', " STORE_TS(                        \
        "last_used_at") ","                                                                        \
                        " 'revoked_at', " STORE_TS("revoked_at") ","                               \
                                                                 " 'expires_at', " STORE_TS(       \
                                                                     "expires_at") ")"

static const struct db_stmt insert_token = {
    "INSERT INTO api_tokens (id, name, scope, secret_hash, secret_sealed, expires_at,"
    "   host_details)"
    " VALUES ($1, $2, $3, $4::bytea, $5::bytea,"
    "   now() + make_interval(days => $6::int), $3 = 'admin' OR $7::boolean)"
    " RETURNING " TOKEN_JSON};

static const struct db_stmt list_tokens = {"SELECT " STORE_TS(
    "created_at") " || '|' || id, " TOKEN_JSON " FROM api_tokens"
                  " WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1::timestamptz, $2)"
                  " ORDER BY created_at, id LIMIT $3::int"};

static const struct db_stmt get_token = {"SELECT " TOKEN_JSON " FROM api_tokens WHERE id = $1"};

static const struct db_stmt token_secret = {
    "SELECT scope, encode(secret_hash, 'hex'), revoked_at IS NOT NULL OR expires_at <= now(),"
    " last_used_at IS NULL OR last_used_at < now() - interval '1 minute',"
    " encode(secret_sealed, 'hex'), host_details,"
    " coalesce(floor(extract(epoch FROM expires_at - now()) * 1000000)::bigint, -1)"
    " FROM api_tokens WHERE id = $1"};

static const struct db_stmt touch_token = {"UPDATE api_tokens SET last_used_at = now()"
                                           " WHERE id = $1"};

static const struct db_stmt revoke_token = {"UPDATE api_tokens SET revoked_at = now()"
                                            " WHERE id = $1 AND revoked_at IS NULL"};

enum db_status store_token_insert(struct db_conn *conn, const struct auth_token *token,
                                  const struct store_token_grant *grant,
                                  const unsigned char *sealed, json_t **out)
{
    char hash[2 + 2 * CRYPTO_SHA256_LEN + 1] = "\\x";
    char box[2 + 2 * STORE_TOKEN_SEALED_LEN + 1] = "\\x";
    char days[16];
    snprintf(days, sizeof(days), "%d", grant->expires_in_days);
    const char *params[7] = {token->id,
                             grant->name,
                             auth_scope_name(grant->scope),
                             hash,
                             sealed != NULL ? box : NULL,
                             grant->expires_in_days > 0 ? days : NULL,
                             grant->host_details ? "true" : "false"};

    crypto_hex(token->hash, CRYPTO_SHA256_LEN, hash + 2);
    if (sealed != NULL)
        crypto_hex(sealed, STORE_TOKEN_SEALED_LEN, box + 2);
    return store_get_json(conn, &insert_token, 7, params, out);
}

enum db_status store_tokens_list(struct db_conn *conn, const struct page *page, char **items,
                                 char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[3] = {NULL, NULL, NULL};

    store_split_key(page, key, &params[0], &params[1]);
    return store_list(conn, &list_tokens, 3, params, page, items, next_key);
}

enum db_status store_token_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_token, 1, params, out);
}

enum db_status store_token_secret(struct db_conn *conn, const char *id,
                                  struct store_token_secret *out)
{
    const char *params[1] = {id};
    enum db_status st;
    PGresult *res = db_query(conn, &token_secret, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    const char *hex = PQgetvalue(res, 0, 1);
    if (strlen(hex) != 2 * CRYPTO_SHA256_LEN ||
        !auth_scope_parse(PQgetvalue(res, 0, 0), &out->scope) ||
        !crypto_unhex(hex, CRYPTO_SHA256_LEN, out->hash)) {
        PQclear(res);
        return DB_ERROR;
    }
    out->revoked = PQgetvalue(res, 0, 2)[0] == 't';
    out->host_details = PQgetvalue(res, 0, 5)[0] == 't';
    out->stale_last_used = PQgetvalue(res, 0, 3)[0] == 't';
    out->expires_in_us = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
    const char *box = PQgetvalue(res, 0, 4);
    out->has_sealed = strlen(box) == 2 * STORE_TOKEN_SEALED_LEN &&
                      crypto_unhex(box, STORE_TOKEN_SEALED_LEN, out->sealed);
    PQclear(res);
    return DB_OK;
}

enum db_status store_token_touch(struct db_conn *conn, const char *id)
{
    return store_change(conn, &touch_token, id, NULL);
}

enum db_status store_token_revoke(struct db_conn *conn, const char *id)
{
    return store_change(conn, &revoke_token, id, NULL);
}
