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
#include "sigv4.h"

/* Whether who may call a route that needs scope. */
bool auth_allows(const struct auth_identity *who, enum route_scope scope);

/* Check the Authorization header value: on SCOPE_BOOTSTRAP routes, a join
 * token (unused and unexpired; it is spent by the registration itself) or
 * bootstrap (the configured agent bootstrap token, may be NULL); else
 * against the stored API tokens or agent credentials, by prefix. Returns
 * DB_OK and fills who for a valid one; DB_NOT_FOUND for a missing,
 * malformed, unknown, revoked or wrong one; or a database error. Whether
 * who may call the route is auth_allows()'s question. API tokens and agent
 * credentials verified lately are found in cache (token_cache.h; NULL:
 * none) without the database. */
struct token_cache;
enum db_status auth_verify(struct db_pool *pool, struct token_cache *cache, const char *bootstrap,
                           enum route_scope scope, const char *header, struct auth_identity *who);

/* A request signed with AWS Signature Version 4 (sigv4.h), as the AWS tools
 * sign them: the access key is an API token's id, the secret access key the
 * secret part of the token, which cairnd keeps sealed with its key (see
 * tokens.h). What auth_verify_sigv4() decides, each refusal as AWS names it. */
enum auth_sigv4_result {
    AUTH_SIGV4_OK,
    AUTH_SIGV4_MISSING,     /* no Authorization header: MissingAuthenticationToken */
    AUTH_SIGV4_MALFORMED,   /* not a SigV4 header, or no X-Amz-Date: IncompleteSignature */
    AUTH_SIGV4_UNKNOWN_KEY, /* no such token, revoked, or its secret not kept:
                               InvalidClientTokenId */
    AUTH_SIGV4_EXPIRED,     /* signed over 15 minutes from now: SignatureDoesNotMatch */
    AUTH_SIGV4_MISMATCH,    /* another signature than the secret gives: SignatureDoesNotMatch */
};

#define AUTH_SIGV4_SKEW_S (15 * 60)

struct auth_sigv4 {
    const struct sigv4_request *req; /* the request as it arrived */
    const char *authorization;       /* its Authorization header, or NULL */
    const char *amz_date;            /* its X-Amz-Date header, or NULL */
    const char *service;             /* the service the scope must name: "elasticache" */
    int64_t now_s;                   /* the wall clock, epoch seconds */
    enum auth_sigv4_result result;   /* out */
    char detail[256];                /* out: why, for the refusal's message */
    char region[64];                 /* out: the scope's region, once parsed */
};

/* Check a SigV4 request against the stored API tokens, opening their sealed
 * secrets with key (SECRETBOX_KEY_LEN bytes; NULL: none can be opened).
 * Returns DB_OK with a->result set (and who filled for AUTH_SIGV4_OK), or a
 * database error. */
enum db_status auth_verify_sigv4(struct db_pool *pool, const unsigned char *key,
                                 struct auth_sigv4 *a, struct auth_identity *who);

#endif
