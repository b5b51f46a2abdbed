/* upstream.c -- INFO replication from a replica's primary over a
 * non-blocking connection (see upstream.h). */
#include "upstream.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "xalloc.h"

struct agent_upstream {
    struct resp_options opt;
    char *host;
    char *password;
    bool numeric; /* host is an address: connecting does not resolve a name */
    struct resp_conn *conn;
    int64_t deadline_us; /* 0: nothing asked */
};

struct agent_upstream *agent_upstream_new(const char *host, int port, const char *username,
                                          const char *password, const struct resp_tls *tls)
{
    struct agent_upstream *u = xcalloc(1, sizeof(*u));

    u->host = xstrdup(host);
    u->password = password != NULL && password[0] ? xstrdup(password) : NULL;
    u->numeric = resp_host_is_address(host);
    u->opt.host = u->host;
    u->opt.port = port;
    u->opt.username = username;
    u->opt.password = u->password;
    u->opt.tls = tls;
    return u;
}

/* Close the connection; nothing is asked any more. */
static void drop(struct agent_upstream *u)
{
    resp_close(u->conn);
    u->conn = NULL;
    u->deadline_us = 0;
}

void agent_upstream_free(struct agent_upstream *u)
{
    if (u == NULL)
        return;
    drop(u);
    free(u->host);
    free(u->password);
    free(u);
}

bool agent_upstream_is(const struct agent_upstream *u, const char *host, int port)
{
    return u->opt.port == port && strcmp(u->host, host) == 0;
}

bool agent_upstream_ask(struct agent_upstream *u, int64_t now_us, char *err, size_t errsize)
{
    if (!u->numeric) {
        snprintf(err, errsize, "%s is not an IP address (names are not resolved)", u->host);
        return false;
    }
    if (u->deadline_us != 0)
        drop(u); /* the answer to the last question would come out of turn */
    if (u->conn == NULL) {
        u->conn = resp_connect_nonblock(&u->opt, err, errsize);
        if (u->conn == NULL)
            return false;
    }
    /* Written now if the socket takes it, else when poll() says POLLOUT. */
    if (!resp_append(u->conn, err, errsize, "INFO replication") ||
        resp_flush(u->conn, err, errsize) < 0) {
        drop(u);
        return false;
    }
    u->deadline_us = now_us + AGENT_UPSTREAM_TIMEOUT_US;
    return true;
}

int agent_upstream_fd(const struct agent_upstream *u)
{
    return resp_fd(u->conn);
}

short agent_upstream_events(const struct agent_upstream *u)
{
    return resp_poll_events(u->conn);
}

int64_t agent_upstream_deadline_us(const struct agent_upstream *u)
{
    return u->deadline_us != 0 ? u->deadline_us : INT64_MAX;
}

/* FAILED with the connection closed. */
static enum agent_upstream_status failed(struct agent_upstream *u)
{
    drop(u);
    return AGENT_UPSTREAM_FAILED;
}

/* Take the reply to INFO, if it is in. */
static enum agent_upstream_status take_reply(struct agent_upstream *u, struct engine_info **info,
                                             char *err, size_t errsize)
{
    redisReply *r;
    int rc = resp_next_reply(u->conn, &r, err, errsize);

    if (rc < 0)
        return failed(u);
    if (rc == 0)
        return AGENT_UPSTREAM_WAITING;
    if (u->deadline_us == 0) {
        snprintf(err, errsize, "%s:%d: a reply to nothing asked", u->host, u->opt.port);
        resp_reply_free(r);
        return failed(u);
    }
    u->deadline_us = 0;
    if (!resp_reply_is_string(r)) {
        char why[200];
        if (resp_reply_check(r, why, sizeof(why)))
            snprintf(why, sizeof(why), "not a string");
        snprintf(err, errsize, "%s:%d: INFO replication: %s", u->host, u->opt.port, why);
        resp_reply_free(r);
        return failed(u);
    }
    *info = engine_info_parse(r->str, r->len);
    resp_reply_free(r);
    return AGENT_UPSTREAM_ANSWERED;
}

enum agent_upstream_status agent_upstream_io(struct agent_upstream *u, short revents,
                                             struct engine_info **info, char *err, size_t errsize)
{
    *info = NULL;
    if (u->conn == NULL)
        return AGENT_UPSTREAM_WAITING;
    if ((revents & POLLOUT) && resp_wants_write(u->conn) && resp_flush(u->conn, err, errsize) < 0)
        return failed(u);
    if (!(revents & (POLLIN | POLLHUP | POLLERR)))
        return AGENT_UPSTREAM_WAITING;
    if (resp_read(u->conn, err, errsize) < 0) {
        char why[256];
        if (u->deadline_us == 0) {
            drop(u); /* closed while idle: the next question connects again */
            return AGENT_UPSTREAM_WAITING;
        }
        /* An answer that came before the close still counts. */
        if (take_reply(u, info, why, sizeof(why)) == AGENT_UPSTREAM_ANSWERED) {
            drop(u);
            return AGENT_UPSTREAM_ANSWERED;
        }
        return failed(u);
    }
    return take_reply(u, info, err, errsize);
}

enum agent_upstream_status agent_upstream_expire(struct agent_upstream *u, int64_t now_us,
                                                 char *err, size_t errsize)
{
    if (u->deadline_us == 0 || now_us < u->deadline_us)
        return AGENT_UPSTREAM_WAITING;
    snprintf(err, errsize, "%s:%d: no answer to INFO replication within %lld ms", u->host,
             u->opt.port, AGENT_UPSTREAM_TIMEOUT_US / 1000);
    return failed(u);
}
