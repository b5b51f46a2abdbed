/* guarded.c -- see guarded.h. */
#include "guarded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "topology.h"
#include "xalloc.h"

struct pair {
    const char *name, *value;
    size_t name_len, value_len;
};

static int by_name(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c != 0 ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* SHA-256 of "name=value\n" for each pair, sorted by name. */
static void digest_pairs(struct pair *p, size_t n, unsigned char out[CRYPTO_SHA256_LEN])
{
    struct strbuf text;

    qsort(p, n, sizeof(*p), by_name);
    strbuf_init(&text, 512);
    for (size_t i = 0; i < n; i++)
        strbuf_printf(&text, "%.*s=%.*s\n", (int)p[i].name_len, p[i].name, (int)p[i].value_len,
                      p[i].value);
    crypto_sha256(text.p, text.len, out);
    free(text.p);
}

void engine_guarded_digest(const struct engine_setting *s, size_t n,
                           unsigned char out[CRYPTO_SHA256_LEN])
{
    struct pair *p = xcalloc(n + 1, sizeof(*p));

    for (size_t i = 0; i < n; i++)
        p[i] = (struct pair){s[i].name, s[i].value, strlen(s[i].name), strlen(s[i].value)};
    digest_pairs(p, n, out);
    free(p);
}

bool engine_guarded_reply_digest(const redisReply *reply, unsigned char out[CRYPTO_SHA256_LEN])
{
    if (reply == NULL || (reply->type != REDIS_REPLY_ARRAY && !resp_reply_is_map(reply)) ||
        reply->elements % 2 != 0)
        return false;
    size_t n = reply->elements / 2;
    struct pair *p = xcalloc(n + 1, sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = reply->element[2 * i], *v = reply->element[2 * i + 1];
        if (!resp_reply_is_string(k) || !resp_reply_is_string(v)) {
            free(p);
            return false;
        }
        p[i] = (struct pair){k->str, v->str, k->len, v->len};
    }
    digest_pairs(p, n, out);
    free(p);
    return true;
}

/* The value reply gives name, or NULL. */
static const redisReply *value_of(const redisReply *reply, const char *name)
{
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i];
        if (resp_reply_is_string(k) && k->len == strlen(name) && memcmp(k->str, name, k->len) == 0)
            return reply->element[i + 1];
    }
    return NULL;
}

int engine_guarded_restore(struct resp_conn *c, const struct engine_setting *want, size_t n,
                           char *changed, size_t changedsize, char *err, size_t errsize)
{
    const char **argv = xcalloc(n + 2, sizeof(*argv));
    int argc = 0, set = 0;

    argv[argc++] = "CONFIG";
    argv[argc++] = "GET";
    for (size_t i = 0; i < n; i++)
        argv[argc++] = want[i].name;
    redisReply *now = resp_command_argv(c, argc, argv, NULL, err, errsize);
    free(argv);
    if (now == NULL)
        return -1;
    if (now->type != REDIS_REPLY_ARRAY && !resp_reply_is_map(now)) {
        resp_fail_reply(c, err, errsize, "unexpected reply to CONFIG GET");
        resp_reply_free(now);
        return -1;
    }
    changed[0] = '\0';
    for (size_t i = 0; i < n && set >= 0; i++) {
        const redisReply *v = value_of(now, want[i].name);
        if (v != NULL && resp_reply_is_string(v) && v->len == strlen(want[i].value) &&
            memcmp(v->str, want[i].value, v->len) == 0)
            continue;
        if (!engine_config_set(c, want[i].name, want[i].value, err, errsize)) {
            set = -1;
            break;
        }
        size_t used = strlen(changed);
        snprintf(changed + used, changedsize - used, "%s%s", used > 0 ? " " : "", want[i].name);
        set++;
    }
    resp_reply_free(now);
    return set;
}
