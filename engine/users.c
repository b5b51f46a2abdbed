/* users.c -- see users.h. */
#include "users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"
#include "xalloc.h"

#define MAX_WORDS 64 /* ACL SETUSER name reset on <password>, then the access rules */

/* ACL SETUSER u->name reset on <password rule> [<second>] <access rules...>. */
static bool set_user(struct resp_conn *c, const struct engine_user *u, char *err, size_t errsize)
{
    const char *argv[MAX_WORDS];
    size_t lens[MAX_WORDS];
    char rule[ENGINE_USER_RULE_LEN + 1], second[ENGINE_USER_RULE_LEN + 1];
    char *rules = xstrdup(u->access), *save = NULL;
    int argc = 0;

    engine_user_password_rule(u->password, rule);
    argv[argc++] = "ACL";
    argv[argc++] = "SETUSER";
    argv[argc++] = u->name;
    argv[argc++] = "reset";
    argv[argc++] = "on";
    argv[argc++] = rule;
    if (u->second_password != NULL && u->second_password[0] != '\0') {
        engine_user_password_rule(u->second_password, second);
        argv[argc++] = second;
    }
    for (char *w = strtok_r(rules, " ", &save); w != NULL && argc < MAX_WORDS;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = resp_command_argv(c, argc, argv, lens, err, errsize);
    bool ok = r != NULL && engine_reply_ok(r);
    if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to ACL SETUSER");
    resp_reply_free(r);
    free(rules);
    return ok;
}

static bool ours(const char *name, const struct engine_user users[ENGINE_USERS])
{
    for (int i = 0; i < ENGINE_USERS; i++) {
        if (strcmp(name, users[i].name) == 0)
            return true;
    }
    return false;
}

/* Delete every user but spec's. */
static bool delete_others(struct resp_conn *c, const struct engine_user users[ENGINE_USERS],
                          char *err, size_t errsize)
{
    redisReply *r = resp_command(c, err, errsize, "ACL USERS");
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY;

    if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to ACL USERS");
    for (size_t i = 0; ok && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!resp_reply_is_string(e) || ours(e->str, users))
            continue;
        redisReply *d = resp_command(c, err, errsize, "ACL DELUSER %b", e->str, e->len);
        ok = d != NULL && d->type == REDIS_REPLY_INTEGER;
        if (d != NULL && !ok)
            resp_fail_reply(c, err, errsize, "unexpected reply to ACL DELUSER");
        resp_reply_free(d);
    }
    resp_reply_free(r);
    return ok;
}

bool engine_users_apply(struct resp_conn *c, const struct engine_config_spec *spec, char *err,
                        size_t errsize)
{
    struct engine_user users[ENGINE_USERS];

    engine_users_of(spec, users);
    if (!delete_others(c, users, err, errsize))
        return false;
    for (int i = 0; i < ENGINE_USERS - 1; i++) {
        if (!set_user(c, &users[i], err, errsize))
            return false;
    }
    if (!engine_config_set(c, "masteruser", ENGINE_REPLICATION_USER, err, errsize) ||
        !engine_config_set(c, "masterauth", spec->replication_password, err, errsize))
        return false;
    return set_user(c, &users[ENGINE_USERS - 1], err, errsize); /* the default user, last */
}

bool engine_users_digest(const redisReply *reply, unsigned char out[CRYPTO_SHA256_LEN])
{
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        return false;
    size_t total = 0;
    for (size_t i = 0; i < reply->elements; i++) {
        if (!resp_reply_is_string(reply->element[i]))
            return false;
        total += reply->element[i]->len + 1;
    }
    char *text = xmalloc(total + 1), *p = text;
    for (size_t i = 0; i < reply->elements; i++) {
        memcpy(p, reply->element[i]->str, reply->element[i]->len);
        p += reply->element[i]->len;
        *p++ = '\n';
    }
    crypto_sha256(text, total, out);
    free(text);
    return true;
}
