/* auth.h -- API tokens: their format, hashing and verification.
 *
 * A token reads "cairn_<id>_<secret>": a fixed prefix so it is recognisable
 * in logs and secret scanners, a 12-hex-digit id that finds the row, and 32
 * random bytes in base64url. Only SHA-256(secret) is stored; a presented
 * token is checked by comparing hashes in constant time. */
#ifndef CAIRN_AUTH_H
#define CAIRN_AUTH_H

#include <stdbool.h>

#include "crypto.h"
#include "db.h"
#include "route.h"

#define AUTH_PREFIX     "cairn_"
#define AUTH_ID_LEN     12
#define AUTH_SECRET_LEN 43 /* base64url of 32 bytes */
#define AUTH_TOKEN_LEN  (sizeof(AUTH_PREFIX) - 1 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN)

enum token_scope { TOKEN_SCOPE_READ, TOKEN_SCOPE_ADMIN };

/* Who is calling: set by the HTTP layer for routes that need a token. */
struct auth_identity {
    bool authenticated;
    char token_id[AUTH_ID_LEN + 1];
    enum token_scope scope;
};

struct auth_token {
    char id[AUTH_ID_LEN + 1];
    char text[AUTH_TOKEN_LEN + 1]; /* the whole token, shown to the user once */
    unsigned char hash[CRYPTO_SHA256_LEN];
};

/* Generate a new random token. */
void auth_token_new(struct auth_token *out);

/* Split a presented token into its id and the hash of its secret. Returns
 * false when text is not shaped like a token. Pure. */
bool auth_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                      unsigned char hash[CRYPTO_SHA256_LEN]);

/* The credentials in an Authorization header value ("Bearer X", scheme
 * case-insensitive), or NULL when header is NULL or uses another scheme. */
const char *auth_bearer(const char *header);

/* "admin" / "read", and back; auth_scope_parse returns false for others. */
const char *auth_scope_name(enum token_scope scope);
bool auth_scope_parse(const char *s, enum token_scope *out);

/* Whether who may call a route that needs scope. */
bool auth_allows(const struct auth_identity *who, enum route_scope scope);

/* Check the Authorization header value against the stored tokens. Returns
 * DB_OK and fills who for a valid, unrevoked token; DB_NOT_FOUND for a
 * missing, malformed, unknown, revoked or wrong token; or a database error. */
enum db_status auth_verify(struct db_pool *pool, const char *header, struct auth_identity *who);

#endif
