/* auth_token.h -- the shape of API tokens and agent credentials, shared by
 * auth (who may call) and the store (where their hashes live).
 *
 * An API token reads "cairn_<id>_<secret>", an agent credential
 * "cairn_agent_<id>_<secret>" and a host's join token (one use, for one host
 * name) "cairn_join_<id>_<secret>": a fixed prefix so they are recognisable in
 * logs and secret scanners, a 12-hex-digit id that finds the row, and 32
 * random bytes in base64url. Only SHA-256(secret) is stored. */
#ifndef CAIRN_AUTH_TOKEN_H
#define CAIRN_AUTH_TOKEN_H

#include <stdbool.h>

#include "crypto.h"

#define AUTH_PREFIX       "cairn_"
#define AUTH_AGENT_PREFIX "cairn_agent_"
#define AUTH_JOIN_PREFIX  "cairn_join_"
#define AUTH_ID_LEN       12
#define AUTH_SECRET_LEN   43 /* base64url of 32 bytes */
#define AUTH_TOKEN_LEN    (sizeof(AUTH_PREFIX) - 1 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN)
#define AUTH_AGENT_LEN    (sizeof(AUTH_AGENT_PREFIX) - 1 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN)
#define AUTH_UUID_LEN     36

enum token_scope { TOKEN_SCOPE_READ, TOKEN_SCOPE_ADMIN };

struct auth_token {
    char id[AUTH_ID_LEN + 1];
    char text[AUTH_AGENT_LEN + 1]; /* the whole secret, shown to its owner once */
    unsigned char hash[CRYPTO_SHA256_LEN];
};

/* Generate a new random API token / agent credential. */
void auth_token_new(struct auth_token *out);
void auth_agent_credential_new(struct auth_token *out);
void auth_join_token_new(struct auth_token *out);

/* Split a presented API token / agent credential into its id and the hash
 * of its secret. Returns false when text is not shaped like one. Pure. */
bool auth_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                      unsigned char hash[CRYPTO_SHA256_LEN]);
bool auth_agent_credential_parse(const char *text, char id[AUTH_ID_LEN + 1],
                                 unsigned char hash[CRYPTO_SHA256_LEN]);
bool auth_join_token_parse(const char *text, char id[AUTH_ID_LEN + 1],
                           unsigned char hash[CRYPTO_SHA256_LEN]);

/* The credentials in an Authorization header value ("Bearer X", scheme
 * case-insensitive), or NULL when header is NULL or uses another scheme. */
const char *auth_bearer(const char *header);

/* "admin" / "read", and back; auth_scope_parse returns false for others. */
const char *auth_scope_name(enum token_scope scope);
bool auth_scope_parse(const char *s, enum token_scope *out);

enum auth_kind {
    AUTH_KIND_TOKEN,     /* an API token, with a scope */
    AUTH_KIND_AGENT,     /* an agent's credential, tied to its host */
    AUTH_KIND_BOOTSTRAP, /* the shared secret agents register with */
    AUTH_KIND_JOIN,      /* a join token: one registration of one host name */
};

/* Who is calling: set by the HTTP layer for routes that need a token. */
struct auth_identity {
    bool authenticated;
    enum auth_kind kind;
    char token_id[AUTH_ID_LEN + 1];  /* API token, agent credential or join token id */
    enum token_scope scope;          /* API tokens */
    bool host_details;               /* API tokens: may see hosts' ids and names */
    char host_id[AUTH_UUID_LEN + 1]; /* agents */
};

#endif
