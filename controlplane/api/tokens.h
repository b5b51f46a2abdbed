/* tokens.h -- creating and revoking API tokens, shared by the REST API and
 * the `cairnd token` commands so both follow one set of rules. */
#ifndef CAIRN_TOKENS_H
#define CAIRN_TOKENS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "db.h"
#include "jspec.h"
#include "store.h"

#define TOKENS_NAME_MAX 64

/* A token may expire after at most ten years. */
#define TOKENS_EXPIRY_DAYS_MAX 3650

/* Body spec of POST /v1/tokens; also checks `cairnd token create` input. */
extern const struct jspec_field tokens_create_spec[];

/* What a body that passed tokens_create_spec asks for, in *out (borrowing
 * its strings); false, with why in msg, for a combination the spec cannot
 * refuse alone (an admin token without host details). */
bool tokens_grant_parse(const json_t *body, struct store_token_grant *out, char *msg,
                        size_t msgsize);

/* Create a token as grant says; *out gets its
 * JSON (id, name, scope, host_details, created_at, expires_at, ...)
 * plus "token", the secret, which exists nowhere else afterwards. With key
 * (cairnd's secret key, SECRETBOX_KEY_LEN bytes; NULL when it has none) the
 * secret is also kept sealed, so the token can sign requests with AWS
 * Signature Version 4; *out then also has "access_key_id" (the id) and
 * "secret_access_key" (the secret part of the token), what the AWS tools
 * take. */
enum db_status tokens_create(struct db_pool *pool, const unsigned char *key,
                             const struct store_token_grant *grant, json_t **out);

/* The secret part of a token's text (after "cairn_<id>_"): AUTH_SECRET_LEN
 * characters, borrowed from token. */
const char *tokens_secret_part(const struct auth_token *token);

/* The label a token's secret is sealed with (secretbox.h): "api-token:<id>". */
void tokens_seal_label(const char *id, char out[AUTH_ID_LEN + 11]);

/* Revoke a token by id; DB_NOT_FOUND when no unrevoked token has it. */
enum db_status tokens_revoke(struct db_pool *pool, const char *id);

#endif
