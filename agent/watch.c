/* watch.c -- PINGs to a replica's primary over a non-blocking connection,
 * and what its silence means (see watch.h). */
#include "watch.h"

#include <assert.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "resp.h"
#include "xalloc.h"

struct agent_watch {
    struct resp_options opt;
    char *host;
    char *password;
    struct resp_conn *conn;
    int64_t ping_sent_us; /* 0: no PING awaits its answer */
    int64_t next_ping_us;
};

struct agent_watch *agent_watch_new(const char *host, int port, const char *username,
                                    const char *password, const struct resp_tls *tls)
{
    struct agent_watch *w = xcalloc(1, sizeof(*w));

    assert(resp_host_is_address(host));
    w->host = xstrdup(host);
    w->password = password != NULL && password[0] ? xstrdup(password) : NULL;
    w->opt.host = w->host;
    w->opt.port = port;
    w->opt.username = username;
    w->opt.password = w->password;
    w->opt.tls = tls;
    return w;
}

/* Close the connection (why says why, for debugging); the next PING
 * connects again. */
static void drop(struct agent_watch *w, const char *why)
{
    char q[256];

    log_debug("primary watch: connection closed", "primary=%s:%d error=%s", w->host, w->opt.port,
              log_quote(q, sizeof(q), why));
    resp_close(w->conn);
    w->conn = NULL;
    w->ping_sent_us = 0;
}

void agent_watch_free(struct agent_watch *w)
{
    if (w == NULL)
        return;
    resp_close(w->conn);
    free(w->host);
    free(w->password);
    free(w);
}

bool agent_watch_is(const struct agent_watch *w, const char *host, int port)
{
    return w->opt.port == port && strcmp(w->host, host) == 0;
}

int agent_watch_fd(const struct agent_watch *w)
{
    return resp_fd(w->conn);
}

short agent_watch_events(const struct agent_watch *w)
{
    return resp_poll_events(w->conn);
}

int64_t agent_watch_next_us(const struct agent_watch *w)
{
    return w->ping_sent_us != 0 ? w->ping_sent_us + AGENT_WATCH_RECONNECT_US : w->next_ping_us;
}

static void send_ping(struct agent_watch *w, int64_t now_us)
{
    char err[256];

    if (w->conn == NULL) {
        w->conn = resp_connect_nonblock(&w->opt, err, sizeof(err));
        if (w->conn == NULL) {
            log_debug("primary watch: could not connect", "primary=%s:%d error=\"%s\"", w->host,
                      w->opt.port, err);
            return;
        }
    }
    /* Written now if the socket takes it, else when poll() says POLLOUT. */
    if (!resp_append(w->conn, err, sizeof(err), "PING") ||
        resp_flush(w->conn, err, sizeof(err)) < 0) {
        drop(w, err);
        return;
    }
    w->ping_sent_us = now_us;
}

bool agent_watch_tick(struct agent_watch *w, int64_t now_us)
{
    if (w->ping_sent_us != 0) {
        if (now_us - w->ping_sent_us < AGENT_WATCH_RECONNECT_US)
            return false;
        drop(w, "no answer to PING within 1 s");
    }
    if (now_us < w->next_ping_us)
        return false;
    /* Keep the cadence, but never try to catch up on missed rounds. */
    w->next_ping_us += AGENT_WATCH_INTERVAL_US;
    if (w->next_ping_us <= now_us)
        w->next_ping_us = now_us + AGENT_WATCH_INTERVAL_US;
    send_ping(w, now_us); /* a failure to connect or send is a question unanswered too */
    return true;
}

/* Take the replies read: each is the answer to the one PING outstanding.
 * An AUTH the engine refused is an answer too; resp has failed that
 * connection, and the next PING makes another. */
static bool take_answers(struct agent_watch *w)
{
    redisReply *r;
    char err[256];
    bool answered = false;
    int rc;

    while ((rc = resp_next_reply(w->conn, &r, err, sizeof(err))) == 1) {
        resp_reply_free(r);
        w->ping_sent_us = 0;
        answered = true;
    }
    if (rc < 0) {
        answered = answered || resp_last_error(w->conn) == RESP_ERR_REPLY ||
                   resp_last_error(w->conn) == RESP_ERR_AUTH;
        drop(w, err);
    }
    return answered;
}

bool agent_watch_io(struct agent_watch *w, short revents)
{
    char err[256];

    if (w->conn == NULL)
        return false;
    if ((revents & POLLOUT) && resp_wants_write(w->conn) &&
        resp_flush(w->conn, err, sizeof(err)) < 0) {
        drop(w, err);
        return false;
    }
    if (!(revents & (POLLIN | POLLHUP | POLLERR)))
        return false;
    int rc = resp_read(w->conn, err, sizeof(err));
    /* Replies that arrived before a close still count. */
    bool answered = take_answers(w);
    if (rc < 0 && w->conn != NULL)
        drop(w, err);
    return answered;
}

/* ---- what the silence means (pure) ----------------------------------- */

void agent_watch_began(struct agent_watch_times *t, int64_t now_us)
{
    t->answered_us = now_us;
    t->asked_us = 0;
}

void agent_watch_asked(struct agent_watch_times *t, int64_t now_us)
{
    if (t->asked_us == 0)
        t->asked_us = now_us;
}

void agent_watch_answered(struct agent_watch_times *t, int64_t now_us)
{
    t->answered_us = now_us;
    t->asked_us = 0;
}

/* Where the silence of t begins: the last answer, or one interval before
 * the first question after it when the agent was slow to ask. */
static int64_t silent_since_us(const struct agent_watch_times *t)
{
    int64_t due_us = t->asked_us - AGENT_WATCH_INTERVAL_US;

    return due_us > t->answered_us ? due_us : t->answered_us;
}

long long agent_watch_silent_ms(const struct agent_watch_times *t, int64_t now_us)
{
    if (t->asked_us == 0)
        return 0;
    int64_t silent_us = now_us - silent_since_us(t);

    if (silent_us <= AGENT_WATCH_INTERVAL_US + AGENT_WATCH_SLACK_US)
        return 0;
    if (silent_us / 1000 > AGENT_WATCH_SILENT_MAX_MS)
        return AGENT_WATCH_SILENT_MAX_MS;
    return (long long)(silent_us / 1000);
}

enum agent_watch_news agent_watch_news(bool told_silent, long long silent_ms)
{
    bool silent = silent_ms >= AGENT_WATCH_SILENT_MS;

    if (silent && !told_silent)
        return AGENT_WATCH_NEWS_SILENT;
    if (!silent && told_silent)
        return AGENT_WATCH_NEWS_ANSWERING;
    return AGENT_WATCH_NEWS_NONE;
}

int64_t agent_watch_silent_at_us(const struct agent_watch_times *t)
{
    if (t->asked_us == 0)
        return INT64_MAX;
    return silent_since_us(t) + AGENT_WATCH_SILENT_MS * 1000LL;
}
