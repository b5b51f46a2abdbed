/* sentinel.c -- the Sentinel-compatible discovery listener: one thread, one
 * poll loop, requests read by the bounded RESP reader.
 *
 * Anyone who reaches the port may connect, so nothing a client sends can
 * cost cairnd more than a small, fixed amount, and a turn of the loop does
 * at most one request per client (the stop pipe is seen between turns):
 *
 *   - a request is at most SENTINEL_MAX_ARGS arguments of SENTINEL_MAX_ARG
 *     bytes, SENTINEL_MAX_REQUEST in all; the reader refuses more before
 *     allocating it, and the client is closed;
 *   - a client has one request answered per turn, and nothing more is read
 *     from it while a complete request waits: no client starves the others,
 *     and none makes its reader hold more than one request;
 *   - answers a client leaves unread are at most SENTINEL_MAX_OUTPUT bytes;
 *   - at most --sentinel-max-clients connections, of which at most
 *     SENTINEL_MAX_UNAUTHENTICATED (and never more than half) have not sent
 *     a valid AUTH; a connection beyond either cap closes the oldest
 *     unauthenticated one, so strangers holding connections never lock out
 *     a client with a token;
 *   - a connection has SENTINEL_AUTH_TIMEOUT_US to authenticate, then may
 *     stay silent for SENTINEL_IDLE_TIMEOUT_US unless it subscribed (a
 *     subscriber waits for +switch-master by design, and still answers
 *     PING; TCP keepalive finds one whose host is gone). */
#define _GNU_SOURCE
#include "sentinel.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster_nodes.h"
#include "crypto.h"
#include "db.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

/* How often subscribed groups are checked; also the longest a turn of the
 * loop waits when nothing happens. */
#define WATCH_INTERVAL_US 100000
/* The longest command answered, HELLO 2 AUTH user pass SETNAME name, has 7
 * arguments; SUBSCRIBE takes a few channels. */
#define SENTINEL_MAX_ARGS 64
/* Arguments are cluster ids (40 bytes at most), auth tokens and client
 * names: tens of bytes. */
#define SENTINEL_MAX_ARG 4096
/* One request in all, and what may wait unparsed: real ones are under 1 KB. */
#define SENTINEL_MAX_REQUEST (16 * 1024)
/* Bytes read from a client at a time. */
#define SENTINEL_READ_CHUNK 4096
/* The longest answer (SENTINEL replicas: 8 replicas on 255-byte addresses)
 * is under 8 KB; a client leaving eight of those unread is not reading. */
#define SENTINEL_MAX_OUTPUT (64 * 1024)
/* Real clients authenticate in their first round trip, so a few at a time
 * wait for it; this caps what strangers can hold: each at most a request
 * buffered, one being parsed and SENTINEL_MAX_OUTPUT unread, ~120 KB. */
#define SENTINEL_MAX_UNAUTHENTICATED 128
/* Time to authenticate: a client does it within a round trip of
 * connecting. */
#define SENTINEL_AUTH_TIMEOUT_US (10 * 1000000LL)
/* An authenticated client silent this long is closed; clients open a new
 * connection when they next need one (redis-py's pool does so by itself). */
#define SENTINEL_IDLE_TIMEOUT_US (300 * 1000000LL)
/* Connections taken per turn, so a flood of connects cannot starve the
 * clients already served. */
#define SENTINEL_ACCEPT_BATCH 64
/* After accept() fails for want of descriptors or memory, the listening
 * socket stays readable: stop polling it this long rather than spin. */
#define SENTINEL_ACCEPT_PAUSE_US 100000
/* Warnings about refused or closed connections: one a minute at most, so
 * that a flood of connects cannot flood the log. */
#define SENTINEL_WARN_INTERVAL_US (60 * 1000000LL)
/* An error reply quotes at most this much of a client's argument. */
#define SENTINEL_QUOTE_MAX 64
/* TCP keepalive as Redis's tcp-keepalive 300 sets it: a peer whose host is
 * gone is found within ten minutes. */
#define SENTINEL_KEEPALIVE_IDLE_S  300
#define SENTINEL_KEEPALIVE_INTVL_S 100
#define SENTINEL_KEEPALIVE_COUNT   3
/* What HELLO says the server is: the Sentinel protocol of this version. */
#define SENTINEL_REPORTED_VERSION "7.0.0"

const struct resp_limits sentinel_request_limits = {
    .max_elements = SENTINEL_MAX_ARGS,
    .max_depth = 1,
    .max_string = SENTINEL_MAX_ARG,
    .max_reply = SENTINEL_MAX_REQUEST,
    .max_buffered = SENTINEL_MAX_REQUEST,
};

struct client {
    int fd;
    redisReader *reader; /* bounded by sentinel_request_limits */
    char *out;
    size_t outlen;
    int64_t connected_us; /* when it was accepted */
    int64_t active_us;    /* when its last request was answered */
    bool more;            /* a complete request may wait in its reader */
    char cluster[48];     /* the cluster its AUTH opened, "" before */
    bool subscribed;
    char primary[300]; /* "ip port" last told to a subscriber, "" unknown */
};

/* A group's primary as read once in a round of watch_primaries(). */
struct watched {
    const char *cluster;
    bool known;
    char primary[300];
};

struct sentinel {
    struct app *app;
    int listen_fd, port;
    int wake[2]; /* self-pipe: stop */
    pthread_t thread;
    size_t max_clients, max_unauthenticated;
    struct client **clients; /* max_clients of them */
    size_t nclients;
    struct watched *watched; /* max_clients of them, for watch_primaries() */
    int64_t accept_paused_until_us;
    int64_t warned_us; /* when the last warning about refusals was logged */
};

/* Whether c has sent a valid AUTH: it may then ask about its cluster. */
static bool authenticated(const struct client *c)
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
static void out_error_quoting(struct client *c, const char *before, const char *text, size_t len,
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

static enum db_status auth_fn(struct db_conn *conn, void *arg)
{
    struct auth_call *c = arg;
    struct store_cluster_secrets sealed;
    enum db_status st = store_cluster_secrets(conn, &sealed);
    unsigned char want[CRYPTO_SHA256_LEN], got[CRYPTO_SHA256_LEN];

    if (st != DB_OK)
        return st;
    crypto_sha256(c->token, c->token_len, want);
    for (size_t i = 0; i < sealed.n && c->found[0] == '\0'; i++) {
        char *password = cluster_open_secret(c->app, sealed.items[i].id, sealed.items[i].hex);
        if (password == NULL)
            continue;
        crypto_sha256(password, strlen(password), got);
        if (crypto_equal(want, got, CRYPTO_SHA256_LEN))
            snprintf(c->found, 48, "%s", sealed.items[i].id);
        free(password);
    }
    store_cluster_secrets_free(&sealed);
    return DB_OK;
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
            out_error_quoting(c, "ERR Syntax error in HELLO option '", argv[i]->str, argv[i]->len,
                              "'");
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

static void dispatch(struct sentinel *s, struct client *c, size_t argc, redisReply **argv)
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
    } else if (!authenticated(c)) {
        out_error(c, "NOAUTH Authentication required.");
    } else if (arg_is(cmd, "SENTINEL")) {
        cmd_sentinel(s, c, argc, argv);
    } else if (arg_is(cmd, "SUBSCRIBE") && argc > 1) {
        cmd_subscribe(c, argc, argv);
    } else {
        out_error_quoting(c, "ERR unknown command '", cmd->str, cmd->len, "'");
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
static void watch_primaries(struct sentinel *s)
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

/* ---- clients ---------------------------------------------------------------------- */

/* A warning about refused or closed connections, at most one a minute;
 * detail is logfmt pairs. */
static void warn_refusing(struct sentinel *s, int64_t now, const char *msg, const char *detail)
{
    if (s->warned_us != 0 && now - s->warned_us < SENTINEL_WARN_INTERVAL_US)
        return;
    s->warned_us = now;
    log_warn(msg, "%s", detail);
}

static void drop_client(struct sentinel *s, size_t i)
{
    struct client *c = s->clients[i];
    close(c->fd);
    resp_reader_free(c->reader);
    free(c->out);
    free(c);
    s->clients[i] = s->clients[--s->nclients];
}

/* When c is closed unless it sends something: an unauthenticated client
 * when its time to authenticate is up, an authenticated one when it has
 * been silent too long, a subscriber never. */
static int64_t client_deadline(const struct client *c)
{
    if (!authenticated(c))
        return c->connected_us + SENTINEL_AUTH_TIMEOUT_US;
    if (c->subscribed)
        return INT64_MAX;
    return c->active_us + SENTINEL_IDLE_TIMEOUT_US;
}

/* Close the clients whose deadline has passed or that leave too many
 * answers unread. */
static void reap_clients(struct sentinel *s, int64_t now)
{
    for (size_t i = s->nclients; i-- > 0;) {
        const struct client *c = s->clients[i];
        if (now >= client_deadline(c) || c->outlen > SENTINEL_MAX_OUTPUT)
            drop_client(s, i);
    }
}

/* Make room for one more connection: true when there is room or the oldest
 * unauthenticated connection was closed for it; false when every
 * connection is authenticated and the total cap is reached. */
static bool make_room(struct sentinel *s, int64_t now)
{
    size_t unauthenticated = 0, oldest = SIZE_MAX;
    char detail[96];

    for (size_t i = 0; i < s->nclients; i++) {
        const struct client *c = s->clients[i];
        if (authenticated(c))
            continue;
        unauthenticated++;
        if (oldest == SIZE_MAX || c->connected_us < s->clients[oldest]->connected_us)
            oldest = i;
    }
    if (s->nclients < s->max_clients && unauthenticated < s->max_unauthenticated)
        return true;
    snprintf(detail, sizeof(detail), "clients=%zu unauthenticated=%zu max_clients=%zu", s->nclients,
             unauthenticated, s->max_clients);
    if (oldest == SIZE_MAX) {
        warn_refusing(s, now, "sentinel refused a connection: all are in use", detail);
        return false;
    }
    warn_refusing(s, now, "sentinel closed its oldest unauthenticated connection for a new one",
                  detail);
    drop_client(s, oldest);
    return true;
}

static void keep_alive(int fd)
{
    static const int on = 1, idle = SENTINEL_KEEPALIVE_IDLE_S, intvl = SENTINEL_KEEPALIVE_INTVL_S,
                     count = SENTINEL_KEEPALIVE_COUNT;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

static void admit(struct sentinel *s, int fd, int64_t now)
{
    static const char full[] = "-ERR max number of clients reached\r\n";

    if (!make_room(s, now)) {
        (void)!send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        return;
    }
    keep_alive(fd);
    struct client *c = xcalloc(1, sizeof(*c));
    c->fd = fd;
    c->reader = resp_reader_new(&sentinel_request_limits);
    c->connected_us = c->active_us = now;
    s->clients[s->nclients++] = c;
}

static void accept_clients(struct sentinel *s, int64_t now)
{
    for (int k = 0; k < SENTINEL_ACCEPT_BATCH; k++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(s, fd, now);
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            char detail[128];
            snprintf(detail, sizeof(detail), "error=\"%s\"", strerror(errno));
            s->accept_paused_until_us = now + SENTINEL_ACCEPT_PAUSE_US;
            warn_refusing(s, now, "sentinel cannot accept connections", detail);
            return;
        } else if (errno != ECONNABORTED && errno != EINTR && errno != EPROTO) {
            return; /* EAGAIN: none left */
        }
    }
}

/* Read what arrived; false when the client is gone. */
static bool read_client(struct client *c)
{
    char buf[SENTINEL_READ_CHUNK];
    ssize_t n = read(c->fd, buf, sizeof(buf));

    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    return n > 0 && redisReaderFeed(c->reader, buf, (size_t)n) == REDIS_OK;
}

/* Write what the socket takes; false when the client is gone. */
static bool write_client(struct client *c)
{
    ssize_t n = send(c->fd, c->out, c->outlen, MSG_NOSIGNAL);

    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    memmove(c->out, c->out + n, c->outlen - (size_t)n);
    c->outlen -= (size_t)n;
    if (c->outlen == 0) {
        free(c->out); /* a subscriber may wait for days: keep nothing */
        c->out = NULL;
    }
    return true;
}

/* Answer the next complete request, if one is there. False when the client
 * sent something that is not a request or breaks a limit: it is told why,
 * if its socket takes it, and must be closed. */
static bool answer_one(struct sentinel *s, struct client *c, int64_t now)
{
    redisReply *req = NULL;
    char why[128];
    int rc = resp_reader_next_request(c->reader, &req, why, sizeof(why));

    if (rc < 0) {
        out_error_quoting(c, "ERR Protocol error: ", why, strlen(why), "");
        write_client(c);
        return false;
    }
    c->more = rc == 1;
    if (rc == 1) {
        c->active_us = now;
        dispatch(s, c, req->elements, req->element);
        freeReplyObject(req);
    }
    return true;
}

/* One turn for one client: read (unless a request already waits), answer
 * one request, write. False when the client is gone or must go. */
static bool serve_client(struct sentinel *s, struct client *c, short revents, int64_t now)
{
    if (revents & (POLLERR | POLLHUP))
        return false;
    if ((revents & POLLIN) && !c->more && !read_client(c))
        return false;
    if (!answer_one(s, c, now))
        return false;
    return c->outlen == 0 || write_client(c);
}

/* ---- the loop ------------------------------------------------------------------ */

/* Fill fds for this turn: the stop pipe, the listening socket (unless
 * accepts are paused), and each client. Returns whether some client has a
 * request waiting, so the turn must not sleep. */
static bool poll_set(const struct sentinel *s, struct pollfd *fds, int64_t now)
{
    bool busy = false;

    fds[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    fds[1] = (struct pollfd){.fd = now >= s->accept_paused_until_us ? s->listen_fd : -1,
                             .events = POLLIN};
    for (size_t i = 0; i < s->nclients; i++) {
        const struct client *c = s->clients[i];
        short events = (short)((c->more ? 0 : POLLIN) | (c->outlen > 0 ? POLLOUT : 0));
        fds[i + 2] = (struct pollfd){.fd = c->fd, .events = events};
        busy |= c->more;
    }
    return busy;
}

static void *sentinel_main(void *arg)
{
    struct sentinel *s = arg;
    struct pollfd *fds = xcalloc(s->max_clients + 2, sizeof(*fds));
    int64_t next_watch = time_mono_us();

    for (;;) {
        bool busy = poll_set(s, fds, time_mono_us());
        if (poll(fds, s->nclients + 2, busy ? 0 : WATCH_INTERVAL_US / 1000) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        int64_t now = time_mono_us();
        for (size_t i = s->nclients; i-- > 0;) {
            struct client *c = s->clients[i];
            short revents = fds[i + 2].revents;
            if ((revents != 0 || c->more) && !serve_client(s, c, revents, now))
                drop_client(s, i);
        }
        if (fds[1].revents & POLLIN)
            accept_clients(s, now);
        if (now >= next_watch) {
            watch_primaries(s);
            next_watch = now + WATCH_INTERVAL_US;
        }
        reap_clients(s, now);
    }
    free(fds);
    return NULL;
}

struct sentinel *sentinel_start(struct app *app, const char *host, int port, char *err,
                                size_t errsize)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char service[16];
    int one = 1;

    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errsize, "cannot resolve sentinel address %s: %s", host, gai_strerror(rc));
        return NULL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
        snprintf(err, errsize, "could not listen for sentinel clients on %s:%d: %s", host, port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return NULL;
    }
    freeaddrinfo(ai);
    struct sentinel *s = xcalloc(1, sizeof(*s));
    struct sockaddr_storage bound;
    socklen_t len = sizeof(bound);
    s->app = app;
    s->listen_fd = fd;
    s->max_clients = (size_t)app->cfg.sentinel_max_clients;
    s->max_unauthenticated = s->max_clients / 2 < SENTINEL_MAX_UNAUTHENTICATED
                                 ? s->max_clients / 2
                                 : SENTINEL_MAX_UNAUTHENTICATED;
    s->clients = xcalloc(s->max_clients, sizeof(*s->clients));
    s->watched = xcalloc(s->max_clients, sizeof(*s->watched));
    getsockname(fd, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        snprintf(err, errsize, "could not make a pipe: %s", strerror(errno));
        close(fd);
        free(s->clients);
        free(s->watched);
        free(s);
        return NULL;
    }
    pthread_create(&s->thread, NULL, sentinel_main, s);
    return s;
}

int sentinel_port(const struct sentinel *s)
{
    return s->port;
}

void sentinel_stop(struct sentinel *s)
{
    (void)!write(s->wake[1], "x", 1);
    pthread_join(s->thread, NULL);
    while (s->nclients > 0)
        drop_client(s, s->nclients - 1);
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    free(s->clients);
    free(s->watched);
    free(s);
}
