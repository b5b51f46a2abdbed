/* sentinel_commands.c -- what the Sentinel-compatible listener answers:
 * AUTH (an engine password opens its cluster), HELLO, PING, SUBSCRIBE and
 * SENTINEL get-master-addr-by-name / master / replicas, as Sentinel clients
 * send them, from what the store says of each group; and +switch-master to
 * subscribers when a primary moves. */
#define _GNU_SOURCE
#include "sentinel_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster_nodes.h"
#include "crypto.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

/* Whether c has sent a valid AUTH: it may then ask about its cluster. */
bool sentinel__authenticated(const struct client *c)
{
    return c->cluster[0] != '\0';
}

/* ---- replies --------------------------------------------------------------- */

static void out_append(struct client *c, const void *data, size_t len)
{
    c->out = xrealloc(c->out, c->outlen + len);
    memcpy(c->out + c->outlen, data, len);
    c->outlen += len;
}

/* Our own short replies and headers; a longer one is a bug here. */
static void out_fmt(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(struct client *c, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    assert(n >= 0 && (size_t)n < sizeof(buf));
    out_append(c, buf, (size_t)n);
}

static void out_bulk_len(struct client *c, const char *s, size_t len)
{
    out_fmt(c, "$%zu\r\n", len);
    out_append(c, s, len);
    out_append(c, "\r\n", 2);
}

static void out_bulk(struct client *c, const char *s)
{
    out_bulk_len(c, s, strlen(s));
}

/* An error reply of our own words. */
static void out_error(struct client *c, const char *msg)
{
    out_append(c, "-", 1);
    out_append(c, msg, strlen(msg));
    out_append(c, "\r\n", 2);
}

/* An error reply quoting text a client sent: at most SENTINEL_QUOTE_MAX
 * bytes of it, each byte that is not printable ASCII shown as '?', so that
 * no CR or LF of the client's ends the line and forges a reply. */
void sentinel__out_error_quoting(struct client *c, const char *before, const char *text, size_t len,
                                 const char *after)
{
    char quoted[SENTINEL_QUOTE_MAX];
    size_t n = len < sizeof(quoted) ? len : sizeof(quoted);

    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)text[i];
        quoted[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out_append(c, "-", 1);
    out_append(c, before, strlen(before));
    out_append(c, quoted, n);
    out_append(c, after, strlen(after));
    out_append(c, "\r\n", 2);
}

/* ---- arguments ------------------------------------------------------------- */

/* Whether arg (NULL: absent) is word, ignoring case. The whole argument
 * counts, by its length: "PING\0x" is not PING. */
static bool arg_is(const redisReply *arg, const char *word)
{
    size_t n = strlen(word);
    return arg != NULL && arg->len == n && strncasecmp(arg->str, word, n) == 0;
}

/* Whether arg is exactly the C string s. */
static bool arg_equals(const redisReply *arg, const char *s)
{
    size_t n = strlen(s);
    return arg != NULL && arg->len == n && memcmp(arg->str, s, n) == 0;
}

/* ---- what the store says ------------------------------------------------------ */

struct node_addr {
    char address[256];
    int port;
};

struct group {
    bool disabled_mode;
    int nprimaries;
    struct node_addr primary;
    struct node_addr readers[8];
    int nreaders;
};

struct group_call {
    const char *id;
    struct group *g;
};

static enum db_status group_fn(struct db_conn *conn, void *arg)
{
    struct group_call *c = arg;
    struct store_serving_nodes serving;
    enum db_status st = store_cluster_serving_nodes(conn, c->id, &serving);

    memset(c->g, 0, sizeof(*c->g));
    if (st != DB_OK)
        return st;
    c->g->disabled_mode = serving.disabled_mode;
    for (size_t i = 0; i < serving.n; i++) {
        const struct store_serving_node *n = &serving.items[i];
        struct node_addr *a = NULL;
        if (n->primary) {
            if (c->g->nprimaries++ == 0)
                a = &c->g->primary;
        } else if (c->g->nreaders < 8) {
            a = &c->g->readers[c->g->nreaders++];
        }
        if (a != NULL) {
            snprintf(a->address, sizeof(a->address), "%s", n->address);
            a->port = n->port;
        }
    }
    free(serving.items);
    return DB_OK;
}

/* The group's primary only when exactly one node claims it: cairnd never
 * names two primaries, so during a switch it names none. */
static bool load_group(struct sentinel *s, const char *id, struct group *g)
{
    struct group_call call = {id, g};
    return db_run(s->app->db, group_fn, &call) == DB_OK && g->disabled_mode;
}

struct auth_call {
    struct app *app;
    const char *token; /* token_len bytes, any of them NUL */
    size_t token_len;
    char *found;
};

/* Whether sealed (hex, or NULL) is cluster id's token, the offered one,
 * whose SHA-256 is want; *lookup (when lookup is given) gets its keyed
 * hash. */
static bool opens(struct app *app, const char *id, const char *sealed, const unsigned char *want,
                  char **lookup)
{
    unsigned char got[CRYPTO_SHA256_LEN];
    char *password = sealed != NULL ? cluster_open_secret(app, id, sealed) : NULL;

    if (password == NULL)
        return false;
    crypto_sha256(password, strlen(password), got);
    if (lookup != NULL)
        *lookup = cluster_auth_lookup(app, password, strlen(password));
    free(password);
    return crypto_equal(want, got, CRYPTO_SHA256_LEN);
}

/* The cluster whose token was offered: found by the token's keyed hash,
 * then opened to be sure. A cluster sealed before the hashes were kept
 * (migration 0034) is opened in turn, once: its hashes are recorded on the
 * way, so the first AUTH after an upgrade pays for all of them. */
static enum db_status auth_fn(struct db_conn *conn, void *arg)
{
    struct auth_call *c = arg;
    struct store_cluster_secrets sealed;
    unsigned char want[CRYPTO_SHA256_LEN];
    char *lookup = cluster_auth_lookup(c->app, c->token, c->token_len);

    if (lookup == NULL)
        return DB_OK; /* no secret key: no token can be opened */
    enum db_status st = store_cluster_secrets(conn, lookup, &sealed);
    free(lookup);
    if (st != DB_OK)
        return st;
    crypto_sha256(c->token, c->token_len, want);
    for (size_t i = 0; i < sealed.n && c->found[0] == '\0'; i++) {
        const struct store_cluster_secret *s = &sealed.items[i];
        if (opens(c->app, s->id, s->hex, want, NULL) ||
            opens(c->app, s->id, s->previous_hex, want, NULL))
            snprintf(c->found, 48, "%s", s->id);
    }
    store_cluster_secrets_free(&sealed);
    if (c->found[0] != '\0' || (st = store_cluster_secrets(conn, NULL, &sealed)) != DB_OK)
        return st;
    for (size_t i = 0; i < sealed.n && st == DB_OK; i++) {
        const struct store_cluster_secret *s = &sealed.items[i];
        char *current = NULL, *previous = NULL;
        bool is_current = opens(c->app, s->id, s->hex, want, &current),
             is_previous = opens(c->app, s->id, s->previous_hex, want, &previous);
        if (is_current || is_previous)
            snprintf(c->found, 48, "%s", s->id);
        if (current != NULL)
            st = store_cluster_auth_lookup_fill(conn, s, current, previous);
        free(current);
        free(previous);
    }
    store_cluster_secrets_free(&sealed);
    return st;
}

/* ---- commands ------------------------------------------------------------------ */

static void reply_master(struct client *c, const char *name, const struct group *g)
{
    char port[16], slaves[16];
    snprintf(port, sizeof(port), "%d", g->primary.port);
    snprintf(slaves, sizeof(slaves), "%d", g->nreaders);
    const char *kv[] = {"name",
                        name,
                        "ip",
                        g->primary.address,
                        "port",
                        port,
                        "runid",
                        "",
                        "flags",
                        "master",
                        "num-slaves",
                        slaves,
                        "num-other-sentinels",
                        "0",
                        "quorum",
                        "1"};
    size_t n = sizeof(kv) / sizeof(kv[0]);
    out_fmt(c, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        out_bulk(c, kv[i]);
}

static void reply_replicas(struct client *c, const struct group *g)
{
    out_fmt(c, "*%d\r\n", g->nreaders);
    for (int i = 0; i < g->nreaders; i++) {
        char name[300], port[16], mport[16];
        snprintf(name, sizeof(name), "%s:%d", g->readers[i].address, g->readers[i].port);
        snprintf(port, sizeof(port), "%d", g->readers[i].port);
        snprintf(mport, sizeof(mport), "%d", g->primary.port);
        const char *kv[] = {"name",
                            name,
                            "ip",
                            g->readers[i].address,
                            "port",
                            port,
                            "flags",
                            "slave",
                            "master-link-status",
                            "ok",
                            "master-host",
                            g->primary.address,
                            "master-port",
                            mport};
        size_t n = sizeof(kv) / sizeof(kv[0]);
        out_fmt(c, "*%zu\r\n", n);
        for (size_t k = 0; k < n; k++)
            out_bulk(c, kv[k]);
    }
}

/* SENTINEL <sub> [name]: only the cluster the client's AUTH opened. */
static void cmd_sentinel(struct sentinel *s, struct client *c, size_t argc, redisReply **argv)
{
    const redisReply *sub = argc > 1 ? argv[1] : NULL;
    const redisReply *name = argc > 2 ? argv[2] : NULL;
    struct group g = {0};
    bool mine = arg_equals(name, c->cluster);
    bool known = (mine || name == NULL) && load_group(s, c->cluster, &g) && g.nprimaries == 1;

    if (arg_is(sub, "get-master-addr-by-name")) {
        if (!known) {
            out_fmt(c, "*-1\r\n");
            return;
        }
        out_fmt(c, "*2\r\n");
        out_bulk(c, g.primary.address);
        char port[16];
        snprintf(port, sizeof(port), "%d", g.primary.port);
        out_bulk(c, port);
    } else if (arg_is(sub, "masters")) {
        if (!known) {
            out_fmt(c, "*0\r\n");
            return;
        }
        out_fmt(c, "*1\r\n");
        reply_master(c, c->cluster, &g);
    } else if (arg_is(sub, "master")) {
        if (known)
            reply_master(c, c->cluster, &g);
        else
            out_error(c, "ERR No such master with that name");
    } else if (arg_is(sub, "replicas") || arg_is(sub, "slaves")) {
        if (known)
            reply_replicas(c, &g);
        else
            out_error(c, "ERR No such master with that name");
    } else if (arg_is(sub, "sentinels")) {
        if (known)
            out_fmt(c, "*0\r\n");
        else
            out_error(c, "ERR No such master with that name");
    } else {
        out_error(c, "ERR unknown SENTINEL subcommand");
    }
}

/* Open the cluster whose auth token password is (all of its bytes); false
 * with the error written to the client. */
static bool authenticate(struct sentinel *s, struct client *c, const redisReply *password)
{
    char found[48] = "";
    struct auth_call call = {s->app, password->str, password->len, found};

    if (db_run(s->app->db, auth_fn, &call) != DB_OK) {
        out_error(c, "ERR cairnd cannot reach its database; retry");
        return false;
    }
    if (found[0] == '\0') {
        out_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
        return false;
    }
    snprintf(c->cluster, sizeof(c->cluster), "%s", found);
    return true;
}

/* AUTH [username] password */
static void cmd_auth(struct sentinel *s, struct client *c, size_t argc, redisReply **argv)
{
    if (argc < 2 || argc > 3) {
        out_error(c, "ERR wrong number of arguments for 'auth' command");
        return;
    }
    if (authenticate(s, c, argv[argc - 1]))
        out_fmt(c, "+OK\r\n");
}

/* HELLO [protover [AUTH username password] [SETNAME name]]: RESP2 only, so
 * a client asking for 3 is told NOPROTO and carries on with RESP2 (as
 * clients do with servers before Redis 6). */
static void cmd_hello(struct sentinel *s, struct client *c, size_t argc, redisReply **argv)
{
    size_t i = 1;

    if (argc > 1) {
        if (!arg_is(argv[1], "2")) {
            out_error(c, "NOPROTO sorry, this protocol version is not supported");
            return;
        }
        i = 2;
    }
    for (; i < argc; i++) {
        if (arg_is(argv[i], "AUTH") && i + 2 < argc) {
            if (!authenticate(s, c, argv[i + 2]))
                return;
            i += 2;
        } else if (arg_is(argv[i], "SETNAME") && i + 1 < argc) {
            i++;
        } else {
            sentinel__out_error_quoting(c, "ERR Syntax error in HELLO option '", argv[i]->str,
                                        argv[i]->len, "'");
            return;
        }
    }
    out_fmt(c, "*14\r\n");
    out_bulk(c, "server");
    out_bulk(c, "redis");
    out_bulk(c, "version");
    out_bulk(c, SENTINEL_REPORTED_VERSION);
    out_bulk(c, "proto");
    out_fmt(c, ":2\r\n");
    out_bulk(c, "id");
    out_fmt(c, ":%d\r\n", c->fd);
    out_bulk(c, "mode");
    out_bulk(c, "sentinel");
    out_bulk(c, "role");
    out_bulk(c, "master");
    out_bulk(c, "modules");
    out_fmt(c, "*0\r\n");
}

static void cmd_subscribe(struct client *c, size_t argc, redisReply **argv)
{
    for (size_t i = 1; i < argc; i++) {
        out_fmt(c, "*3\r\n");
        out_bulk(c, "subscribe");
        out_bulk_len(c, argv[i]->str, argv[i]->len);
        out_fmt(c, ":%zu\r\n", i);
    }
    c->subscribed = true;
}

void sentinel__dispatch(struct sentinel *s, struct client *c, size_t argc, redisReply **argv)
{
    const redisReply *cmd = argv[0];

    if (arg_is(cmd, "PING")) {
        if (c->subscribed)
            out_fmt(c, "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
        else
            out_fmt(c, "+PONG\r\n");
    } else if (arg_is(cmd, "AUTH")) {
        cmd_auth(s, c, argc, argv);
    } else if (arg_is(cmd, "HELLO")) {
        cmd_hello(s, c, argc, argv);
    } else if (arg_is(cmd, "CLIENT")) {
        out_fmt(c, "+OK\r\n"); /* SETNAME, SETINFO: nothing to keep */
    } else if (!sentinel__authenticated(c)) {
        out_error(c, "NOAUTH Authentication required.");
    } else if (arg_is(cmd, "SENTINEL")) {
        cmd_sentinel(s, c, argc, argv);
    } else if (arg_is(cmd, "SUBSCRIBE") && argc > 1) {
        cmd_subscribe(c, argc, argv);
    } else {
        sentinel__out_error_quoting(c, "ERR unknown command '", cmd->str, cmd->len, "'");
    }
}

/* ---- +switch-master -------------------------------------------------------------- */

/* The primary of cluster as read in this round, reading it (once per round
 * however many subscribe to it) when not yet read. */
static const struct watched *watch(struct sentinel *s, size_t *nwatched, const char *cluster)
{
    for (size_t k = 0; k < *nwatched; k++) {
        if (strcmp(s->watched[k].cluster, cluster) == 0)
            return &s->watched[k];
    }
    struct watched *w = &s->watched[(*nwatched)++];
    struct group g = {0};
    w->cluster = cluster;
    w->known = load_group(s, cluster, &g) && g.nprimaries == 1;
    if (w->known)
        snprintf(w->primary, sizeof(w->primary), "%s %d", g.primary.address, g.primary.port);
    return w;
}

/* Tell each subscriber when its group's primary moved. */
void sentinel__watch_primaries(struct sentinel *s)
{
    size_t nwatched = 0;

    for (size_t i = 0; i < s->nclients; i++) {
        struct client *c = s->clients[i];
        if (!c->subscribed)
            continue;
        const struct watched *w = watch(s, &nwatched, c->cluster);
        if (!w->known)
            continue;
        if (c->primary[0] != '\0' && strcmp(c->primary, w->primary) != 0) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s %s %s", c->cluster, c->primary, w->primary);
            out_fmt(c, "*3\r\n");
            out_bulk(c, "message");
            out_bulk(c, "+switch-master");
            out_bulk(c, msg);
            log_info("published +switch-master", "cluster=%s to=\"%s\"", c->cluster, w->primary);
        }
        snprintf(c->primary, sizeof(c->primary), "%s", w->primary);
    }
}
