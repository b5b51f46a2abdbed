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
#include "sentinel_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen_addr.h"
#include "log.h"
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
/* TCP keepalive as Redis's tcp-keepalive 300 sets it: a peer whose host is
 * gone is found within ten minutes. */
#define SENTINEL_KEEPALIVE_IDLE_S  300
#define SENTINEL_KEEPALIVE_INTVL_S 100
#define SENTINEL_KEEPALIVE_COUNT   3

const struct resp_limits sentinel_request_limits = {
    .max_elements = SENTINEL_MAX_ARGS,
    .max_depth = 1,
    .max_string = SENTINEL_MAX_ARG,
    .max_reply = SENTINEL_MAX_REQUEST,
    .max_buffered = SENTINEL_MAX_REQUEST,
};

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
    if (!sentinel__authenticated(c))
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
        if (sentinel__authenticated(c))
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
        sentinel__out_error_quoting(c, "ERR Protocol error: ", why, strlen(why), "");
        write_client(c);
        return false;
    }
    c->more = rc == 1;
    if (rc == 1) {
        c->active_us = now;
        sentinel__dispatch(s, c, req->elements, req->element);
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
            sentinel__watch_primaries(s);
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
    struct addrinfo *ai = listen_addr_resolve(host, port, "sentinel", err, errsize);
    int one = 1;

    if (ai == NULL)
        return NULL;
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
