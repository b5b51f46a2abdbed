/* sentinel.c -- the Sentinel-compatible discovery listener: one thread, one
 * poll loop, RESP requests parsed with hiredis's reader. */
#define _GNU_SOURCE
#include "sentinel.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clusters.h"
#include "crypto.h"
#include "db.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

#define MAX_CLIENTS       1024
#define WATCH_INTERVAL_US 100000 /* how often subscribed groups are checked */
#define MAX_REQUEST       (64 * 1024)
/* What HELLO says the server is: the Sentinel protocol of this version. */
#define SENTINEL_REPORTED_VERSION "7.0.0"

struct client {
    int fd;
    redisReader *reader;
    char *out;
    size_t outlen;
    char cluster[48]; /* the cluster its AUTH opened, "" before */
    bool subscribed;
    char primary[300]; /* "ip port" last told to a subscriber, "" unknown */
};

struct sentinel {
    struct app *app;
    int listen_fd, port;
    int wake[2]; /* self-pipe: stop */
    pthread_t thread;
    struct client *clients[MAX_CLIENTS];
    size_t nclients;
};

/* ---- replies --------------------------------------------------------------- */

static void out_append(struct client *c, const char *data, size_t len)
{
    c->out = xrealloc(c->out, c->outlen + len);
    memcpy(c->out + c->outlen, data, len);
    c->outlen += len;
}

static void out_fmt(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(struct client *c, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "cairn: out of memory\n");
        abort();
    }
    out_append(c, s, (size_t)n);
    free(s);
}

static void out_bulk(struct client *c, const char *s)
{
    out_fmt(c, "$%zu\r\n%s\r\n", strlen(s), s);
}

static void out_error(struct client *c, const char *msg)
{
    out_fmt(c, "-%s\r\n", msg);
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

static const struct db_stmt group_nodes = {
    "SELECT h.address, n.port, n.role = 'primary', c.spec ->> 'cluster_mode' = 'disabled'"
    " FROM clusters c JOIN nodes n ON n.cluster_id = c.id JOIN hosts h ON h.id = n.host_id"
    " WHERE c.id = $1 AND n.process_state = 'running' AND h.status = 'healthy'"
    "   AND n.desired_state <> 'deleted' AND ("
    "   n.role = 'primary' OR (n.role = 'replica' AND n.master_link_status = 'up'"
    "   AND NOT coalesce(n.loading, false) AND NOT coalesce(n.sync_in_progress, false)))"
    " ORDER BY n.role, h.address, n.port"};

struct group_call {
    const char *id;
    struct group *g;
};

static enum db_status group_fn(struct db_conn *conn, void *arg)
{
    struct group_call *c = arg;
    const char *params[1] = {c->id};
    enum db_status st;
    PGresult *res = db_query(conn, &group_nodes, 1, params, &st);

    memset(c->g, 0, sizeof(*c->g));
    if (res == NULL)
        return st;
    for (int i = 0; i < PQntuples(res); i++) {
        struct node_addr *a = NULL;
        c->g->disabled_mode = PQgetvalue(res, i, 3)[0] == 't';
        if (PQgetvalue(res, i, 2)[0] == 't') {
            if (c->g->nprimaries++ == 0)
                a = &c->g->primary;
        } else if (c->g->nreaders < 8) {
            a = &c->g->readers[c->g->nreaders++];
        }
        if (a != NULL) {
            snprintf(a->address, sizeof(a->address), "%s", PQgetvalue(res, i, 0));
            a->port = atoi(PQgetvalue(res, i, 1));
        }
    }
    PQclear(res);
    return DB_OK;
}

/* The group's primary only when exactly one node claims it: cairnd never
 * names two primaries, so during a switch it names none. */
static bool load_group(struct sentinel *s, const char *id, struct group *g)
{
    struct group_call call = {id, g};
    return db_run(s->app->db, group_fn, &call) == DB_OK && g->disabled_mode;
}

static const struct db_stmt sealed_passwords = {
    "SELECT id, encode(auth_secret, 'hex') FROM clusters WHERE auth_secret IS NOT NULL"};

struct auth_call {
    struct app *app;
    const char *token;
    char *found;
};

static enum db_status auth_fn(struct db_conn *conn, void *arg)
{
    struct auth_call *c = arg;
    enum db_status st;
    PGresult *res = db_query(conn, &sealed_passwords, 0, NULL, &st);
    unsigned char want[CRYPTO_SHA256_LEN], got[CRYPTO_SHA256_LEN];

    if (res == NULL)
        return st;
    crypto_sha256(c->token, strlen(c->token), want);
    for (int i = 0; i < PQntuples(res) && c->found[0] == '\0'; i++) {
        char *password = cluster_open_secret(c->app, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
        if (password == NULL)
            continue;
        crypto_sha256(password, strlen(password), got);
        if (crypto_equal(want, got, CRYPTO_SHA256_LEN))
            snprintf(c->found, 48, "%s", PQgetvalue(res, i, 0));
        free(password);
    }
    PQclear(res);
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
static void cmd_sentinel(struct sentinel *s, struct client *c, int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "";
    const char *name = argc > 2 ? argv[2] : NULL;
    struct group g = {0};
    bool mine = name != NULL && strcmp(name, c->cluster) == 0;
    bool known = (mine || (name == NULL && c->cluster[0] != '\0')) &&
                 load_group(s, c->cluster, &g) && g.nprimaries == 1;

    if (strcasecmp(sub, "get-master-addr-by-name") == 0) {
        if (!known) {
            out_fmt(c, "*-1\r\n");
            return;
        }
        out_fmt(c, "*2\r\n");
        out_bulk(c, g.primary.address);
        char port[16];
        snprintf(port, sizeof(port), "%d", g.primary.port);
        out_bulk(c, port);
    } else if (strcasecmp(sub, "masters") == 0) {
        if (!known) {
            out_fmt(c, "*0\r\n");
            return;
        }
        out_fmt(c, "*1\r\n");
        reply_master(c, c->cluster, &g);
    } else if (strcasecmp(sub, "master") == 0) {
        if (known)
            reply_master(c, c->cluster, &g);
        else
            out_error(c, "ERR No such master with that name");
    } else if (strcasecmp(sub, "replicas") == 0 || strcasecmp(sub, "slaves") == 0) {
        if (known)
            reply_replicas(c, &g);
        else
            out_error(c, "ERR No such master with that name");
    } else if (strcasecmp(sub, "sentinels") == 0) {
        if (known)
            out_fmt(c, "*0\r\n");
        else
            out_error(c, "ERR No such master with that name");
    } else {
        out_error(c, "ERR unknown SENTINEL subcommand");
    }
}

/* Open the cluster whose auth token password is; false with the error
 * written to the client. */
static bool authenticate(struct sentinel *s, struct client *c, const char *password)
{
    char found[48] = "";
    struct auth_call call = {s->app, password, found};

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
static void cmd_auth(struct sentinel *s, struct client *c, int argc, char **argv)
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
static void cmd_hello(struct sentinel *s, struct client *c, int argc, char **argv)
{
    int i = 1;

    if (argc > 1) {
        if (strcmp(argv[1], "2") != 0) {
            out_error(c, "NOPROTO sorry, this protocol version is not supported");
            return;
        }
        i = 2;
    }
    for (; i < argc; i++) {
        if (strcasecmp(argv[i], "AUTH") == 0 && i + 2 < argc) {
            if (!authenticate(s, c, argv[i + 2]))
                return;
            i += 2;
        } else if (strcasecmp(argv[i], "SETNAME") == 0 && i + 1 < argc) {
            i++;
        } else {
            out_fmt(c, "-ERR Syntax error in HELLO option '%.64s'\r\n", argv[i]);
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

static void cmd_subscribe(struct client *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        out_fmt(c, "*3\r\n");
        out_bulk(c, "subscribe");
        out_bulk(c, argv[i]);
        out_fmt(c, ":%d\r\n", i);
    }
    c->subscribed = true;
}

static void dispatch(struct sentinel *s, struct client *c, int argc, char **argv)
{
    const char *cmd = argv[0];

    if (strcasecmp(cmd, "PING") == 0) {
        if (c->subscribed)
            out_fmt(c, "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
        else
            out_fmt(c, "+PONG\r\n");
    } else if (strcasecmp(cmd, "AUTH") == 0) {
        cmd_auth(s, c, argc, argv);
    } else if (strcasecmp(cmd, "HELLO") == 0) {
        cmd_hello(s, c, argc, argv);
    } else if (strcasecmp(cmd, "CLIENT") == 0) {
        out_fmt(c, "+OK\r\n"); /* SETNAME, SETINFO: nothing to keep */
    } else if (c->cluster[0] == '\0') {
        out_error(c, "NOAUTH Authentication required.");
    } else if (strcasecmp(cmd, "SENTINEL") == 0) {
        cmd_sentinel(s, c, argc, argv);
    } else if (strcasecmp(cmd, "SUBSCRIBE") == 0 && argc > 1) {
        cmd_subscribe(c, argc, argv);
    } else {
        out_fmt(c, "-ERR unknown command '%.64s'\r\n", cmd);
    }
}

/* Parse and run every complete request in the client's reader. False when
 * the client sent something that is not a request. */
static bool handle_requests(struct sentinel *s, struct client *c)
{
    for (;;) {
        redisReply *r = NULL;
        if (redisReaderGetReply(c->reader, (void **)&r) != REDIS_OK)
            return false;
        if (r == NULL)
            return true;
        bool ok = r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->elements <= 64;
        char *argv[64];
        for (size_t i = 0; ok && i < r->elements; i++) {
            ok = r->element[i]->type == REDIS_REPLY_STRING;
            argv[i] = ok ? r->element[i]->str : NULL;
        }
        if (ok)
            dispatch(s, c, (int)r->elements, argv);
        freeReplyObject(r);
        if (!ok)
            return false;
    }
}

/* ---- +switch-master -------------------------------------------------------------- */

/* Tell each subscriber when its group's primary moved. */
static void watch_primaries(struct sentinel *s)
{
    for (size_t i = 0; i < s->nclients; i++) {
        struct client *c = s->clients[i];
        struct group g = {0};
        char now[300];
        if (!c->subscribed || !load_group(s, c->cluster, &g) || g.nprimaries != 1)
            continue;
        snprintf(now, sizeof(now), "%s %d", g.primary.address, g.primary.port);
        if (c->primary[0] != '\0' && strcmp(c->primary, now) != 0) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s %s %s", c->cluster, c->primary, now);
            out_fmt(c, "*3\r\n");
            out_bulk(c, "message");
            out_bulk(c, "+switch-master");
            out_bulk(c, msg);
            log_info("published +switch-master", "cluster=%s to=\"%s\"", c->cluster, now);
        }
        snprintf(c->primary, sizeof(c->primary), "%s", now);
    }
}

/* ---- the loop ------------------------------------------------------------------ */

static void drop_client(struct sentinel *s, size_t i)
{
    struct client *c = s->clients[i];
    close(c->fd);
    redisReaderFree(c->reader);
    free(c->out);
    free(c);
    s->clients[i] = s->clients[--s->nclients];
}

static void accept_clients(struct sentinel *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (s->nclients == MAX_CLIENTS) {
            close(fd);
            continue;
        }
        struct client *c = xcalloc(1, sizeof(*c));
        c->fd = fd;
        c->reader = redisReaderCreate();
        s->clients[s->nclients++] = c;
    }
}

/* Read what arrived and answer it; false when the client is gone. */
static bool serve_client(struct sentinel *s, struct client *c, short revents)
{
    if (revents & POLLIN) {
        char buf[4096];
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n <= 0)
            return n < 0 && errno == EAGAIN;
        if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK || !handle_requests(s, c))
            return false;
        if (c->outlen > MAX_REQUEST * 16)
            return false; /* not reading its answers */
    }
    if (c->outlen > 0) {
        ssize_t n = write(c->fd, c->out, c->outlen);
        if (n < 0)
            return errno == EAGAIN;
        memmove(c->out, c->out + n, c->outlen - (size_t)n);
        c->outlen -= (size_t)n;
    }
    return !(revents & (POLLERR | POLLHUP));
}

static void *sentinel_main(void *arg)
{
    struct sentinel *s = arg;
    struct pollfd *fds = xcalloc(MAX_CLIENTS + 2, sizeof(*fds));
    int64_t next_watch = time_mono_us();

    for (;;) {
        fds[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        fds[1] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
        for (size_t i = 0; i < s->nclients; i++)
            fds[i + 2] =
                (struct pollfd){.fd = s->clients[i]->fd,
                                .events = (short)(POLLIN | (s->clients[i]->outlen ? POLLOUT : 0))};
        if (poll(fds, s->nclients + 2, WATCH_INTERVAL_US / 1000) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        size_t n = s->nclients;
        for (size_t i = n; i-- > 0;) {
            if (fds[i + 2].revents && !serve_client(s, s->clients[i], fds[i + 2].revents))
                drop_client(s, i);
        }
        if (fds[1].revents)
            accept_clients(s);
        if (time_mono_us() >= next_watch) {
            watch_primaries(s);
            next_watch = time_mono_us() + WATCH_INTERVAL_US;
        }
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
    getsockname(fd, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        snprintf(err, errsize, "could not make a pipe: %s", strerror(errno));
        close(fd);
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
    free(s);
}
