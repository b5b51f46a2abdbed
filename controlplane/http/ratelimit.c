/* ratelimit.c -- see ratelimit.h. */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_token.h"
#include "xalloc.h"

struct bucket {
    char key[AUTH_ID_LEN + 1]; /* "" for a free slot */
    double level;              /* requests it holds */
    int64_t at_us;             /* when level was last brought up to date */
};

struct ratelimit {
    double per_us, burst;
    pthread_mutex_t lock;
    struct bucket *buckets;
};

struct ratelimit *ratelimit_new(double per_s, double burst)
{
    struct ratelimit *r = xcalloc(1, sizeof(*r));
    r->per_us = per_s > 0 ? per_s / 1e6 : 0;
    r->burst = burst < 1 ? 1 : burst;
    pthread_mutex_init(&r->lock, NULL);
    if (r->per_us > 0)
        r->buckets = xcalloc(RATELIMIT_BUCKETS, sizeof(*r->buckets));
    return r;
}

void ratelimit_free(struct ratelimit *r)
{
    if (r == NULL)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->buckets);
    free(r);
}

/* FNV-1a: where key's search starts. */
static size_t slot_of(const char *key)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
        h = (h ^ *p) * 16777619u;
    return h % RATELIMIT_BUCKETS;
}

/* key's bucket, or a new full one in a free slot or the least recently
 * used of the slots searched. Called under the lock. */
static struct bucket *find(struct ratelimit *r, const char *key, int64_t now_us)
{
    enum { PROBES = 16 };
    size_t start = slot_of(key);
    struct bucket *oldest = NULL;

    for (size_t i = 0; i < PROBES; i++) {
        struct bucket *b = &r->buckets[(start + i) % RATELIMIT_BUCKETS];
        if (strcmp(b->key, key) == 0)
            return b;
        if (b->key[0] == '\0' || oldest == NULL || b->at_us < oldest->at_us)
            oldest = b;
        if (b->key[0] == '\0')
            break;
    }
    snprintf(oldest->key, sizeof(oldest->key), "%s", key);
    oldest->level = r->burst;
    oldest->at_us = now_us;
    return oldest;
}

bool ratelimit_take(struct ratelimit *r, const char *key, int64_t now_us, int *retry_after_s)
{
    if (r == NULL || r->per_us <= 0)
        return true;
    pthread_mutex_lock(&r->lock);
    struct bucket *b = find(r, key, now_us);
    if (now_us > b->at_us)
        b->level = fmin(r->burst, b->level + (double)(now_us - b->at_us) * r->per_us);
    b->at_us = now_us;
    bool ok = b->level >= 1;
    if (ok)
        b->level -= 1;
    else
        *retry_after_s = (int)fmax(1, ceil((1 - b->level) / r->per_us / 1e6));
    pthread_mutex_unlock(&r->lock);
    return ok;
}
