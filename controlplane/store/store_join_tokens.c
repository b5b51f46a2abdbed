/* store_join_tokens.c -- host_join_tokens: an operator's pre-authorisation
 * of one host by name (migrations/0025_host_enrolment.sql). Only SHA-256 of
 * the secret is kept; a token opens one registration, of its host name,
 * before it expires. */
#include <stdio.h>
#include <string.h>

#include "store.h"

#define JOIN_TOKEN_JSON                                                                            \
    "json_build_object('id', id, 'host_name', host_name, 'created_by', created_by,"                \
    " 'created_at', api_time(created_at), 'expires_at', api_time(expires_at),"                     \
    " 'used_at', api_time(used_at), 'host_id', host_id,"                                           \
    " 'status', CASE WHEN used_at IS NOT NULL THEN 'used'"                                         \
    "   WHEN expires_at <= now() THEN 'expired' ELSE 'active' END)"

static const struct db_stmt insert_join_token = {
    "INSERT INTO host_join_tokens (id, secret_hash, host_name, created_by, expires_at)"
    " VALUES ($1, $2::bytea, $3, $4, now() + make_interval(mins => $5::int))"
    " RETURNING " JOIN_TOKEN_JSON};

static const struct db_stmt list_join_tokens = {
    "SELECT api_time(created_at) || '|' || id, " JOIN_TOKEN_JSON " FROM host_join_tokens"
    " WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1::timestamptz, $2)"
    " ORDER BY created_at, id LIMIT $3::int"};

static const struct db_stmt delete_join_token = {
    "DELETE FROM host_join_tokens WHERE id = $1 AND used_at IS NULL"};

static const struct db_stmt join_token_hash = {
    "SELECT encode(secret_hash, 'hex') FROM host_join_tokens"
    " WHERE id = $1 AND used_at IS NULL AND expires_at > now()"};

/* The UPDATE locks the row: of two registrations with one token, the second
 * finds it used. */
static const struct db_stmt spend_join_token = {
    "UPDATE host_join_tokens SET used_at = now()"
    " WHERE id = $1 AND host_name = $2 AND used_at IS NULL AND expires_at > now()"};

static const struct db_stmt join_token_used_by = {
    "UPDATE host_join_tokens SET host_id = $2::uuid WHERE id = $1"};

/* Spent and expired tokens are kept a week, for the record. */
static const struct db_stmt prune_join_tokens = {
    "DELETE FROM host_join_tokens WHERE greatest(used_at, expires_at) < now() - interval '7 days'"};

enum db_status store_join_token_insert(struct db_conn *conn, const struct auth_token *token,
                                       const char *host_name, int expires_in_minutes,
                                       const char *created_by, json_t **out)
{
    char hash[2 + 2 * CRYPTO_SHA256_LEN + 1] = "\\x", minutes[16];
    const char *params[5] = {token->id, hash, host_name, created_by, minutes};
    enum db_status st;

    crypto_hex(token->hash, CRYPTO_SHA256_LEN, hash + 2);
    snprintf(minutes, sizeof(minutes), "%d", expires_in_minutes);
    PQclear(db_query(conn, &prune_join_tokens, 0, NULL, &st));
    if (st != DB_OK)
        return st;
    return store_get_json(conn, &insert_join_token, 5, params, out);
}

enum db_status store_join_tokens_list(struct db_conn *conn, const struct page *page, char **items,
                                      char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[3] = {NULL, NULL, NULL};

    store_split_key(page, key, &params[0], &params[1]);
    return store_list(conn, &list_join_tokens, 3, params, page, items, next_key);
}

enum db_status store_join_token_delete(struct db_conn *conn, const char *id)
{
    return store_change(conn, &delete_join_token, id, NULL);
}

enum db_status store_join_token_hash(struct db_conn *conn, const char *id, unsigned char *hash)
{
    const char *params[1] = {id};
    enum db_status st;
    PGresult *res = db_query(conn, &join_token_hash, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0 || PQgetlength(res, 0, 0) != 2 * CRYPTO_SHA256_LEN) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    st = crypto_unhex(PQgetvalue(res, 0, 0), CRYPTO_SHA256_LEN, hash) ? DB_OK : DB_ERROR;
    PQclear(res);
    return st;
}

enum db_status store_join_token_spend(struct db_conn *conn, const char *id, const char *host_name)
{
    return store_change(conn, &spend_join_token, id, host_name);
}

enum db_status store_join_token_used_by(struct db_conn *conn, const char *id, const char *host_id)
{
    return store_change(conn, &join_token_used_by, id, host_id);
}
