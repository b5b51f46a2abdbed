/* role.c -- parsing the ROLE reply of a primary, a replica or a sentinel. */
#include "role.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "xalloc.h"

/* ROLE's state names, indexed by enum engine_role_state. */
static const char *const state_names[] = {
    [ENGINE_ROLE_STATE_UNKNOWN] = "unknown",     [ENGINE_ROLE_STATE_NONE] = "none",
    [ENGINE_ROLE_STATE_CONNECT] = "connect",     [ENGINE_ROLE_STATE_CONNECTING] = "connecting",
    [ENGINE_ROLE_STATE_HANDSHAKE] = "handshake", [ENGINE_ROLE_STATE_SYNC] = "sync",
    [ENGINE_ROLE_STATE_CONNECTED] = "connected",
};

const char *engine_role_state_name(enum engine_role_state state)
{
    if ((size_t)state >= sizeof(state_names) / sizeof(state_names[0]))
        return "unknown";
    return state_names[state];
}

const char *engine_role_kind_name(enum engine_role_kind kind)
{
    switch (kind) {
    case ENGINE_ROLE_PRIMARY:
        return "primary";
    case ENGINE_ROLE_REPLICA:
        return "replica";
    case ENGINE_ROLE_SENTINEL:
        return "sentinel";
    }
    return "unknown";
}

static bool is_word(const redisReply *r, const char *word)
{
    return resp_reply_is_string(r) && r->len == strlen(word) && memcmp(r->str, word, r->len) == 0;
}

static enum engine_role_state parse_state(const redisReply *r)
{
    for (size_t i = 1; i < sizeof(state_names) / sizeof(state_names[0]); i++) {
        if (is_word(r, state_names[i]))
            return (enum engine_role_state)i;
    }
    return ENGINE_ROLE_STATE_UNKNOWN;
}

static bool get_port(const redisReply *r, int *port)
{
    long long v;
    if (!resp_reply_integer(r, &v) || v < 0 || v > 65535)
        return false;
    *port = (int)v;
    return true;
}

/* ["master", offset, [[host, "port", "offset"], ...]] */
static bool parse_primary(const redisReply *r, struct engine_role *out, char *err, size_t errsize)
{
    if (r->elements != 3 || !resp_reply_integer(r->element[1], &out->offset) ||
        r->element[2]->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errsize, "ROLE: malformed primary reply");
        return false;
    }
    const redisReply *list = r->element[2];
    out->replicas = xcalloc(list->elements, sizeof(*out->replicas));
    for (size_t i = 0; i < list->elements; i++) {
        const redisReply *e = list->element[i];
        struct engine_role_replica *rep = &out->replicas[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            !resp_reply_is_string(e->element[0]) || !get_port(e->element[1], &rep->port) ||
            !resp_reply_integer(e->element[2], &rep->offset)) {
            snprintf(err, errsize, "ROLE: malformed replica entry %zu", i);
            return false;
        }
        rep->host = xstrndup(e->element[0]->str, e->element[0]->len);
        out->nreplicas++;
    }
    return true;
}

/* ["slave", host, port, state, offset] */
static bool parse_replica(const redisReply *r, struct engine_role *out, char *err, size_t errsize)
{
    if (r->elements != 5 || !resp_reply_is_string(r->element[1]) ||
        !get_port(r->element[2], &out->primary_port) || !resp_reply_is_string(r->element[3]) ||
        !resp_reply_integer(r->element[4], &out->offset)) {
        snprintf(err, errsize, "ROLE: malformed replica reply");
        return false;
    }
    out->primary_host = xstrndup(r->element[1]->str, r->element[1]->len);
    out->state = parse_state(r->element[3]);
    return true;
}

/* ["sentinel", [name, ...]] */
static bool parse_sentinel(const redisReply *r, struct engine_role *out, char *err, size_t errsize)
{
    if (r->elements != 2 || r->element[1]->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errsize, "ROLE: malformed sentinel reply");
        return false;
    }
    const redisReply *list = r->element[1];
    out->masters = xcalloc(list->elements, sizeof(*out->masters));
    for (size_t i = 0; i < list->elements; i++) {
        if (!resp_reply_is_string(list->element[i])) {
            snprintf(err, errsize, "ROLE: malformed sentinel entry %zu", i);
            return false;
        }
        out->masters[i] = xstrndup(list->element[i]->str, list->element[i]->len);
        out->nmasters++;
    }
    return true;
}

bool engine_role_parse(const redisReply *reply, struct engine_role *out, char *err, size_t errsize)
{
    char why[256];
    bool ok;

    memset(out, 0, sizeof(*out));
    if (!resp_reply_check(reply, why, sizeof(why))) {
        snprintf(err, errsize, "ROLE: %s", why);
        return false;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
        snprintf(err, errsize, "ROLE: expected a non-empty array");
        return false;
    }
    const redisReply *kind = reply->element[0];
    if (is_word(kind, "master")) {
        out->kind = ENGINE_ROLE_PRIMARY;
        ok = parse_primary(reply, out, err, errsize);
    } else if (is_word(kind, "slave") || is_word(kind, "replica")) {
        out->kind = ENGINE_ROLE_REPLICA;
        ok = parse_replica(reply, out, err, errsize);
    } else if (is_word(kind, "sentinel")) {
        out->kind = ENGINE_ROLE_SENTINEL;
        ok = parse_sentinel(reply, out, err, errsize);
    } else {
        snprintf(err, errsize, "ROLE: unknown role \"%.64s\"",
                 resp_reply_is_string(kind) ? kind->str : "(not a string)");
        ok = false;
    }
    if (!ok)
        engine_role_free(out);
    return ok;
}

void engine_role_free(struct engine_role *role)
{
    for (size_t i = 0; i < role->nreplicas; i++)
        free(role->replicas[i].host);
    free(role->replicas);
    free(role->primary_host);
    for (size_t i = 0; i < role->nmasters; i++)
        free(role->masters[i]);
    free(role->masters);
    memset(role, 0, sizeof(*role));
}
