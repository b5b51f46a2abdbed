/* access.c -- see access.h. */
#include "access.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine_config.h"
#include "strbuf.h"
#include "xalloc.h"

#define PATTERN_MAX 512 /* bytes in one key or channel pattern */

/* The next rule of *s (NULL after the last): its start, its length in *len. */
static const char *next_rule(const char **s, size_t *len)
{
    const char *p = *s;

    while (*p == ' ')
        p++;
    if (*p == '\0')
        return NULL;
    *len = strcspn(p, " ");
    *s = p + *len;
    return p;
}

static bool rule_is(const char *w, size_t len, const char *word)
{
    return strlen(word) == len && strncasecmp(w, word, len) == 0;
}

/* A command, subcommand or category name: letters, digits, '_', '-', '.'. */
static bool name_ok(const char *s, size_t len)
{
    if (len == 0 || len > ENGINE_ACCESS_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

/* What follows + or -: @category, command or command|subcommand. */
static bool command_rule_ok(const char *s, size_t len)
{
    if (len > 0 && s[0] == '@')
        return name_ok(s + 1, len - 1);
    const char *bar = memchr(s, '|', len);
    if (bar == NULL)
        return name_ok(s, len);
    size_t head = (size_t)(bar - s);
    return name_ok(s, head) && name_ok(bar + 1, len - head - 1);
}

/* The pattern after a selector's prefix ("~", "%RW~", "&"). */
static bool pattern_ok(size_t len, size_t prefix)
{
    return len > prefix && len - prefix <= PATTERN_MAX;
}

/* How a rule may fail: NULL when it is a rule a tenant may have. */
static const char *rule_problem(const char *w, size_t len)
{
    static const char *const plain[] = {"on",          "off",         "allkeys",
                                        "resetkeys",   "allchannels", "resetchannels",
                                        "allcommands", "nocommands",  NULL};
    for (size_t i = 0; plain[i] != NULL; i++) {
        if (rule_is(w, len, plain[i]))
            return NULL;
    }
    switch (w[0]) {
    case '~':
    case '&':
        return pattern_ok(len, 1) ? NULL : "a key or channel pattern of 1 to 512 characters";
    case '%': {
        const char *tilde = memchr(w, '~', len);
        size_t prefix = tilde != NULL ? (size_t)(tilde - w) + 1 : 0;
        bool perms = prefix > 0 && (rule_is(w, prefix, "%R~") || rule_is(w, prefix, "%W~") ||
                                    rule_is(w, prefix, "%RW~"));
        return perms && pattern_ok(len, prefix)
                   ? NULL
                   : "a key pattern with read or write permissions is %R~, %W~ or %RW~ "
                     "followed by the pattern";
    }
    case '+':
    case '-':
        return command_rule_ok(w + 1, len - 1)
                   ? NULL
                   : "+ or - must be followed by a command, command|subcommand or @category";
    case '>':
    case '<':
    case '#':
    case '!':
        return "passwords are given in the user's passwords, never in its access string";
    case '(':
    case ')':
        return "selectors are not supported";
    default:
        break;
    }
    if (rule_is(w, len, "nopass") || rule_is(w, len, "resetpass"))
        return "a tenant user always has a password; give it in the user's passwords";
    if (rule_is(w, len, "reset"))
        return "reset is implied: the access string replaces the user's rules as a whole";
    if (rule_is(w, len, "clearselectors"))
        return "selectors are not supported";
    return "not an ACL rule (on, off, ~pattern, %R~pattern, &pattern, allkeys, allchannels, "
           "+@category, -@category, +command, -command, +command|subcommand, ...)";
}

bool engine_access_check(const char *access, char *msg, size_t msgsize)
{
    size_t n = strlen(access), len, words = 0;
    const char *s = access, *w;

    if (n > ENGINE_ACCESS_MAX) {
        snprintf(msg, msgsize, "must be at most %d characters", ENGINE_ACCESS_MAX);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)access[i];
        if (ch < 0x20 || ch > 0x7e) {
            snprintf(msg, msgsize,
                     "may contain only printable ASCII characters, rules separated by spaces");
            return false;
        }
    }
    while ((w = next_rule(&s, &len)) != NULL) {
        const char *problem = rule_problem(w, len);
        if (problem != NULL) {
            snprintf(msg, msgsize, "rule \"%.*s\": %s", (int)(len > 80 ? 80 : len), w, problem);
            return false;
        }
        if (++words > ENGINE_ACCESS_WORDS) {
            snprintf(msg, msgsize, "may hold at most %d rules", ENGINE_ACCESS_WORDS);
            return false;
        }
    }
    return true;
}

/* ---- against a live engine --------------------------------------------- */

static bool reply_has(const redisReply *r, const char *name, size_t len)
{
    for (size_t i = 0; r != NULL && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (resp_reply_is_string(e) && e->len == len && strncasecmp(e->str, name, len) == 0)
            return true;
    }
    return false;
}

/* An array reply to cmd, or NULL with msg. */
static redisReply *array_reply(struct resp_conn *c, redisReply *r, const char *cmd, char *msg,
                               size_t msgsize)
{
    if (r != NULL && r->type != REDIS_REPLY_ARRAY) {
        resp_fail_reply(c, msg, msgsize, "unexpected reply to %s", cmd);
        resp_reply_free(r);
        return NULL;
    }
    return r;
}

enum engine_access_known engine_access_known(struct resp_conn *c, const char *access, char *msg,
                                             size_t msgsize)
{
    redisReply *cats =
        array_reply(c, resp_command(c, msg, msgsize, "ACL CAT"), "ACL CAT", msg, msgsize);
    const char *s = access, *w;
    size_t len;
    enum engine_access_known known = cats != NULL ? ENGINE_ACCESS_KNOWN : ENGINE_ACCESS_UNCHECKED;

    while (known == ENGINE_ACCESS_KNOWN && (w = next_rule(&s, &len)) != NULL) {
        if ((w[0] != '+' && w[0] != '-') || len < 2)
            continue;
        const char *name = w + 1;
        size_t n = len - 1;
        if (name[0] == '@') {
            /* @all is every command; ACL CAT lists the others. */
            if (!rule_is(name + 1, n - 1, "all") && !reply_has(cats, name + 1, n - 1)) {
                snprintf(msg, msgsize, "rule \"%.*s\": the engine has no category \"%.*s\"",
                         (int)len, w, (int)(n - 1), name + 1);
                known = ENGINE_ACCESS_UNKNOWN;
            }
            continue;
        }
        redisReply *info = array_reply(c, resp_command(c, msg, msgsize, "COMMAND INFO %b", name, n),
                                       "COMMAND INFO", msg, msgsize);
        if (info == NULL) {
            known = ENGINE_ACCESS_UNCHECKED;
        } else if (info->elements != 1 || info->element[0]->type != REDIS_REPLY_ARRAY) {
            snprintf(msg, msgsize, "rule \"%.*s\": the engine has no %s \"%.*s\"", (int)len, w,
                     memchr(name, '|', n) != NULL ? "subcommand" : "command", (int)n, name);
            known = ENGINE_ACCESS_UNKNOWN;
        }
        resp_reply_free(info);
    }
    resp_reply_free(cats);
    return known;
}

/* Whether ENGINE_TENANT_ACCESS gives name (of @admin or @dangerous) back. */
static bool given_back(const char *name, size_t len)
{
    const char *s = ENGINE_TENANT_ACCESS, *w;
    size_t n;

    while ((w = next_rule(&s, &n)) != NULL) {
        if (w[0] == '+' && n == len + 1 && strncasecmp(w + 1, name, len) == 0)
            return true;
    }
    return false;
}

char *engine_access_cap(struct resp_conn *c, char *err, size_t errsize)
{
    redisReply *admin = array_reply(c, resp_command(c, err, errsize, "ACL CAT admin"),
                                    "ACL CAT admin", err, errsize);
    redisReply *dangerous = admin != NULL
                                ? array_reply(c, resp_command(c, err, errsize, "ACL CAT dangerous"),
                                              "ACL CAT dangerous", err, errsize)
                                : NULL;
    struct strbuf cap;

    if (dangerous == NULL) {
        resp_reply_free(admin);
        return NULL;
    }
    strbuf_init(&cap, 2048);
    const redisReply *lists[2] = {admin, dangerous};
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < lists[l]->elements; i++) {
            const redisReply *e = lists[l]->element[i];
            if (!resp_reply_is_string(e) || given_back(e->str, e->len) ||
                (l == 1 && reply_has(admin, e->str, e->len)))
                continue;
            strbuf_printf(&cap, "%s-%.*s", cap.len > 0 ? " " : "", (int)e->len, e->str);
        }
    }
    resp_reply_free(admin);
    resp_reply_free(dangerous);
    return cap.p;
}
