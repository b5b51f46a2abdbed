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

#define TOKENS_NAME_MAX 64

/* Body spec of POST /v1/tokens; also checks `cairnd token create` input. */
extern const struct jspec_field tokens_create_spec[];

/* Create a token; *out gets its JSON (id, name, scope, created_at, ...)
 * plus "token", the secret, which exists nowhere else afterwards. */
enum db_status tokens_create(struct db_pool *pool, const char *name, enum token_scope scope,
                             json_t **out);

/* Revoke a token by id; DB_NOT_FOUND when no unrevoked token has it. */
enum db_status tokens_revoke(struct db_pool *pool, const char *id);

#endif
