/* ratelimit.h -- requests per API token: a token bucket each, refilled at
 * a steady rate up to a burst, shared by cairnd's HTTP threads. A token
 * over its rate is answered 429 with Retry-After (REST) or Throttling (the
 * ElastiCache endpoint) instead of reaching the database.
 *
 * Buckets live in a fixed table; when it is full the bucket least recently
 * used gives way (a token coming back after that starts with a full
 * bucket, which only errs towards letting it through). */
#ifndef CAIRN_RATELIMIT_H
#define CAIRN_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RATELIMIT_BUCKETS 4096 /* tokens tracked at once */

struct ratelimit;

/* A limiter of per_s requests a second, in bursts of up to burst
 * (rounded up to 1); per_s <= 0: one that never refuses. */
struct ratelimit *ratelimit_new(double per_s, double burst);
void ratelimit_free(struct ratelimit *r);

/* One request of key (a token's id) at now_us (monotonic): true when it
 * may go on (always, with r NULL: no limiter); false when key's bucket is
 * empty, with *retry_after_s the whole seconds until it holds a request
 * again (at least 1). */
bool ratelimit_take(struct ratelimit *r, const char *key, int64_t now_us, int *retry_after_s);

#endif
