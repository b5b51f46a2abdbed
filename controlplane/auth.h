/* auth.h -- who may call: API tokens, agent credentials and the agents'
 * bootstrap token; their format, hashing and verification.
 *
 * An API token reads "cairn_<id>_<secret>" and an agent credential
 * "cairn_agent_<id>_<secret>": a fixed prefix so they are recognisable in
 * logs and secret scanners, a 12-hex-digit id that finds the row, and 32
 * random bytes in base64url. Only SHA-256(secret) is stored; a presented
 * secret is checked by comparing hashes in constant time. The two kinds are
 * never interchangeable: API tokens open the user routes, agent credentials
 * only the agent routes. */
#ifndef CAIRN_AUTH_H
#define CAIRN_AUTH_H

#include <stdbool.h>

#include "crypto.h"
#include "db.h"
#include "route.h"

#define AUTH_PREFIX       "cairn_"
#define AUTH_AGENT_PREFIX "cairn_agent_"
#define AUTH_ID_LEN       12
#define AUTH_SECRET_LEN   43 /* base64url of 32 bytes */
#define AUTH_TOKEN_LEN    (sizeof(AUTH_PREFIX) - 1 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN)
#define AUTH_AGENT_LEN    (sizeof(AUTH_AGENT_PREFIX) - 1 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN)
#define AUTH_UUID_LEN     36

enum token_scope { TOKEN_SCOPE_READ, TOKEN_SCOPE_ADMIN };

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

struct auth_token {
    char id[AUTH_ID_LEN + 1];
    char text[AUTH_AGENT_LEN + 1]; /* the whole secret, shown to its owner once */
    unsigned char hash[CRYPTO_SHA256_LEN];
};

/* Generate a new random API token / agent credential. */
void auth_token_new(struct auth_token *out);
void auth_agent_credential_new(struct auth_token *out);

/* Split a presented API token / agent credential into its id and the hash
 * of its secret. Returns false when text is not shaped like one. Pure. */
bool auth_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                      unsigned char hash[CRYPTO_SHA256_LEN]);
bool auth_agent_credential_parse(const char *text, char id[AUTH_ID_LEN + 1],
                                 unsigned char hash[CRYPTO_SHA256_LEN]);

/* The credentials in an Authorization header value ("Bearer X", scheme
 * case-insensitive), or NULL when header is NULL or uses another scheme. */
const char *auth_bearer(const char *header);

/* "admin" / "read", and back; auth_scope_parse returns false for others. */
const char *auth_scope_name(enum token_scope scope);
bool auth_scope_parse(const char *s, enum token_scope *out);

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
