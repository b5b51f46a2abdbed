/* token_cache.h -- credentials cairnd verified lately, so that a busy
 * client's requests do not each cost a database round trip.
 *
 * An entry is an API token's or agent credential's id, the SHA-256 of its
 * secret and the identity it proved. It is trusted for TOKEN_CACHE_TTL_US
 * at most (then the database is asked again, which also records the
 * token's use) and never past the token's own expiry. A revocation, an
 * agent's new credential or a host's deletion reaches every cairnd at once
 * through PostgreSQL's NOTIFY (token_cache_forget()); while cairnd cannot
 * hear those notifications the cache is off (token_cache_trust()), so a
 * revoked credential never works a moment longer than it takes the
 * notification to arrive. Thread-safe. */
#ifndef CAIRN_TOKEN_CACHE_H
#define CAIRN_TOKEN_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "auth_token.h"
#include "crypto.h"

#define TOKEN_CACHE_TTL_US  60000000LL /* then the database is asked again */
#define TOKEN_CACHE_ENTRIES 4096

struct token_cache;

struct token_cache *token_cache_new(void);
void token_cache_free(struct token_cache *c);

/* The identity id proved with a secret hashing to hash, when a trusted
 * entry says so (kind must match); false otherwise. */
bool token_cache_get(struct token_cache *c, enum auth_kind kind, const char *id,
                     const unsigned char hash[CRYPTO_SHA256_LEN], int64_t now_us,
                     struct auth_identity *who);

/* How many changes the cache has heard of: read it before asking the
 * database, and give it to token_cache_put(). */
uint64_t token_cache_epoch(struct token_cache *c);

/* Remember who, proved with hash, until now + TOKEN_CACHE_TTL_US or
 * expires_in_us (< 0: none), whichever is sooner -- unless the cache is not
 * trusted, or a change was heard of since epoch (token_cache_epoch()): the
 * database may have answered before it. */
void token_cache_put(struct token_cache *c, uint64_t epoch,
                     const unsigned char hash[CRYPTO_SHA256_LEN], const struct auth_identity *who,
                     int64_t expires_in_us, int64_t now_us);

/* The credential id changed (revoked, replaced, its host deleted). This
 * and token_cache_trust() do nothing without a cache (c NULL). */
void token_cache_forget(struct token_cache *c, const char *id);

/* Whether notifications arrive: false empties the cache and keeps it empty
 * until true again. Starts false. */
void token_cache_trust(struct token_cache *c, bool trusted);

#endif
