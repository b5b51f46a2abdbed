/* auth.h -- who may call: the identity behind a request's token, checked
 * against the stored API tokens, agent credentials or the agents'
 * bootstrap token. A presented secret is checked by comparing hashes in
 * constant time. The two kinds (auth_token.h) are never interchangeable:
 * API tokens open the user routes, agent credentials only the agent
 * routes. */
#ifndef CAIRN_AUTH_H
#define CAIRN_AUTH_H

#include <stdbool.h>

#include "auth_token.h"
#include "db.h"
#include "route.h"

enum auth_kind {
    AUTH_KIND_TOKEN,     /* an API token, with a scope */
    AUTH_KIND_AGENT,     /* an agent's credential, tied to its host */
    AUTH_KIND_BOOTSTRAP, /* the shared secret agents register with */
};

/* Who is calling: set by the HTTP layer for routes that need a token. */
struct auth_identity {
    bool authenticated;
    enum auth_kind kind;
    char token_id[AUTH_ID_LEN + 1];  /* API token or agent credential id */
    enum token_scope scope;          /* API tokens */
    char host_id[AUTH_UUID_LEN + 1]; /* agents */
};

/* Whether who may call a route that needs scope. */
bool auth_allows(const struct auth_identity *who, enum route_scope scope);

/* Check the Authorization header value: against bootstrap (the configured
 * agent bootstrap token, may be NULL) for SCOPE_BOOTSTRAP routes, else
 * against the stored API tokens or agent credentials, by prefix. Returns
 * DB_OK and fills who for a valid one; DB_NOT_FOUND for a missing,
 * malformed, unknown, revoked or wrong one; or a database error. Whether
 * who may call the route is auth_allows()'s question. */
enum db_status auth_verify(struct db_pool *pool, const char *bootstrap, enum route_scope scope,
                           const char *header, struct auth_identity *who);

#endif
