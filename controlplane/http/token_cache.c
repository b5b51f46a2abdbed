/* token_cache.c -- see token_cache.h. An open-addressed table keyed by the
 * credential id; a full table evicts the entry in the id's slot. */
#include "token_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct entry {
    bool used;
    struct auth_identity who;
    unsigned char hash[CRYPTO_SHA256_LEN];
    int64_t until_us;
};

struct token_cache {
    pthread_mutex_t lock;
    bool trusted;
    uint64_t epoch; /* changes heard of: forgets and trust */
    struct entry slots[TOKEN_CACHE_ENTRIES];
};

struct token_cache *token_cache_new(void)
{
    struct token_cache *c = xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void token_cache_free(struct token_cache *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* FNV-1a of the id: its slot. */
static size_t slot_of(const char *id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p != '\0'; p++)
        h = (h ^ *p) * 16777619u;
    return h % TOKEN_CACHE_ENTRIES;
}

bool token_cache_get(struct token_cache *c, enum auth_kind kind, const char *id,
                     const unsigned char hash[CRYPTO_SHA256_LEN], int64_t now_us,
                     struct auth_identity *who)
{
    bool hit = false;

    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(id)];
    if (c->trusted && e->used && e->who.kind == kind && strcmp(e->who.token_id, id) == 0 &&
        now_us < e->until_us && crypto_equal(e->hash, hash, CRYPTO_SHA256_LEN)) {
        *who = e->who;
        hit = true;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

uint64_t token_cache_epoch(struct token_cache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t epoch = c->epoch;
    pthread_mutex_unlock(&c->lock);
    return epoch;
}

void token_cache_put(struct token_cache *c, uint64_t epoch,
                     const unsigned char hash[CRYPTO_SHA256_LEN], const struct auth_identity *who,
                     int64_t expires_in_us, int64_t now_us)
{
    int64_t ttl = expires_in_us >= 0 && expires_in_us < TOKEN_CACHE_TTL_US ? expires_in_us
                                                                           : TOKEN_CACHE_TTL_US;

    pthread_mutex_lock(&c->lock);
    if (c->trusted && c->epoch == epoch) {
        struct entry *e = &c->slots[slot_of(who->token_id)];
        e->used = true;
        e->who = *who;
        memcpy(e->hash, hash, CRYPTO_SHA256_LEN);
        e->until_us = now_us + ttl;
    }
    pthread_mutex_unlock(&c->lock);
}

void token_cache_forget(struct token_cache *c, const char *id)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(id)];
    if (e->used && strcmp(e->who.token_id, id) == 0)
        memset(e, 0, sizeof(*e));
    c->epoch++;
    pthread_mutex_unlock(&c->lock);
}

void token_cache_trust(struct token_cache *c, bool trusted)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    c->trusted = trusted;
    c->epoch++;
    if (!trusted)
        memset(c->slots, 0, sizeof(c->slots));
    pthread_mutex_unlock(&c->lock);
}
