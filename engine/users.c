/* users.c -- see users.h. */
#include "users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "topology.h"
#include "xalloc.h"

/* Append the space-separated words of text to argv. */
static void add_words(const char **argv, int *argc, int max, char *text)
{
    char *save = NULL;
    for (char *w = strtok_r(text, " ", &save); w != NULL && *argc < max;
         w = strtok_r(NULL, " ", &save))
        argv[(*argc)++] = w;
}

/* ACL SETUSER name reset on <password rules> <access> <cap>: the user as a
 * whole, in one command, which the engine applies all or nothing. */
static bool setuser(struct resp_conn *c, const char *name, const char *const *passwords,
                    int npasswords, const char *access, const char *cap, char *err, size_t errsize)
{
    char *rules = xstrdup(access), *capped = xstrdup(cap != NULL ? cap : "");
    int max = 6 + npasswords + (int)strlen(rules) / 2 + 1 + (int)strlen(capped) / 2 + 1, argc = 0;
    const char **argv = xcalloc((size_t)max, sizeof(*argv));

    argv[argc++] = "ACL";
    argv[argc++] = "SETUSER";
    argv[argc++] = name;
    argv[argc++] = "reset";
    argv[argc++] = "on";
    for (int i = 0; i < npasswords; i++)
        argv[argc++] = passwords[i];
    add_words(argv, &argc, max, rules);
    add_words(argv, &argc, max, capped);
    redisReply *r = resp_command_argv(c, argc, argv, NULL, err, errsize);
    bool ok = r != NULL && engine_reply_ok(r);
    if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to ACL SETUSER");
    resp_reply_free(r);
    free(argv);
    free(rules);
    free(capped);
    return ok;
}

/* One of Cairn's users, or the default one. */
static bool set_user(struct resp_conn *c, const struct engine_user *u, char *err, size_t errsize)
{
    char rules[2][ENGINE_USER_RULE_LEN + 1];
    const char *passwords[2] = {rules[0], rules[1]};
    int n = 1;

    engine_user_password_rule(u->password, rules[0]);
    if (u->second_password != NULL && u->second_password[0] != '\0')
        engine_user_password_rule(u->second_password, rules[n++]);
    return setuser(c, u->name, passwords, n, u->access, NULL, err, errsize);
}

/* A tenant user, capped; its passwords are hashes already. */
static bool set_tenant_user(struct resp_conn *c, const struct engine_tenant_user *u,
                            const char *cap, char *err, size_t errsize)
{
    char rules[2][ENGINE_USER_RULE_LEN + 1];
    const char *passwords[2] = {rules[0], rules[1]};
    int n = 0;

    for (int i = 0; i < 2; i++) {
        if (u->password_hashes[i] != NULL)
            snprintf(rules[n++], sizeof(rules[0]), "#%.64s", u->password_hashes[i]);
    }
    if (n == 0) {
        snprintf(err, errsize, "user %s has no password", u->name);
        return false;
    }
    return setuser(c, u->name, passwords, n, u->access, cap, err, errsize);
}

static bool ours(const char *name, const struct engine_user users[ENGINE_USERS])
{
    for (int i = 0; i < ENGINE_USERS; i++) {
        if (strcmp(name, users[i].name) == 0)
            return true;
    }
    return false;
}

static bool tenants(const char *name, const struct engine_config_spec *spec)
{
    for (size_t i = 0; i < spec->n_tenant_users; i++) {
        if (strcmp(name, spec->tenant_users[i].name) == 0)
            return true;
    }
    return false;
}

/* Delete every user but spec's. */
static bool delete_others(struct resp_conn *c, const struct engine_config_spec *spec,
                          const struct engine_user users[ENGINE_USERS], char *err, size_t errsize)
{
    redisReply *r = resp_command(c, err, errsize, "ACL USERS");
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY;

    if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to ACL USERS");
    for (size_t i = 0; ok && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!resp_reply_is_string(e) || ours(e->str, users) || tenants(e->str, spec))
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

/* The tenant users, each capped; one the engine refuses (a command it does
 * not have) is left out, with the first refusal in warn. */
static bool set_tenant_users(struct resp_conn *c, const struct engine_config_spec *spec,
                             const struct engine_user users[ENGINE_USERS], char *warn,
                             size_t warnsize, char *err, size_t errsize)
{
    char *cap = spec->n_tenant_users > 0 ? engine_access_cap(c, err, errsize) : NULL;

    if (spec->n_tenant_users > 0 && cap == NULL)
        return false;
    for (size_t i = 0; i < spec->n_tenant_users; i++) {
        const struct engine_tenant_user *u = &spec->tenant_users[i];
        char why[256];
        if (ours(u->name, users)) {
            snprintf(why, sizeof(why), "the name is Cairn's");
        } else if (set_tenant_user(c, u, cap, why, sizeof(why))) {
            continue;
        } else if (resp_last_error(c) != RESP_ERR_REPLY) {
            snprintf(err, errsize, "%s", why);
            free(cap);
            return false;
        }
        if (warn[0] == '\0')
            snprintf(warn, warnsize, "tenant user %s: %s", u->name, why);
    }
    free(cap);
    return true;
}

bool engine_users_apply(struct resp_conn *c, const struct engine_config_spec *spec, char *warn,
                        size_t warnsize, char *err, size_t errsize)
{
    struct engine_user users[ENGINE_USERS];

    warn[0] = '\0';
    engine_users_of(spec, users);
    if (!delete_others(c, spec, users, err, errsize))
        return false;
    for (int i = 0; i < ENGINE_USERS - 1; i++) {
        if (!set_user(c, &users[i], err, errsize))
            return false;
    }
    if (!engine_config_set(c, "masteruser", ENGINE_REPLICATION_USER, err, errsize) ||
        !engine_config_set(c, "masterauth", spec->replication_password, err, errsize) ||
        !set_tenant_users(c, spec, users, warn, warnsize, err, errsize))
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
