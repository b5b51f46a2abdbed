/* pinger.c -- PING and INFO for one engine over a non-blocking connection
 * (see pinger.h). */
#include "pinger.h"

#include <assert.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "collect.h"
#include "guarded.h"
#include "log.h"
#include "resp.h"
#include "topology.h"
#include "users.h"
#include "xalloc.h"

#define INFO_SECTIONS "server replication persistence cluster"

/* Replies are taken in the order the commands were sent. At most one of
 * each kind is outstanding, except that a PING may follow an INFO still
 * unanswered. */
enum sent {
    SENT_PING,
    SENT_INFO,
    SENT_METRICS,
    SENT_COMMANDS,
    SENT_EPOCH,
    SENT_USERS,
    SENT_SETTINGS,
};
#define SENT_MAX 8

struct agent_pinger {
    struct resp_options opt;
    char *host;
    char *password;
    struct resp_conn *conn;
    enum sent sent[SENT_MAX];
    unsigned n_sent;
    bool info_outstanding;
    bool metrics_outstanding;
    bool commands_wanted, commands_outstanding;
    bool cluster_enabled; /* an INFO said cluster_enabled:1 */
    bool epoch_outstanding;
    bool users_outstanding;
    bool settings_outstanding;
    int64_t ping_sent_us; /* 0: no PING awaits its reply */
    int64_t next_ping_us;
    int64_t next_info_us;
    int64_t interval_us;
    unsigned link_failures; /* refused or dropped connections in a row */
};

/* A refused or dropped connection is retried this soon before it counts. */
#define PINGER_RETRY_US 100000LL

struct agent_pinger *agent_pinger_new(const char *host, int port, const char *username,
                                      const char *password, const struct resp_tls *tls)
{
    struct agent_pinger *p = xcalloc(1, sizeof(*p));

    p->host = xstrdup(host);
    p->password = password != NULL && password[0] ? xstrdup(password) : NULL;
    p->opt.host = p->host;
    p->opt.port = port;
    p->opt.username = username;
    p->opt.password = p->password;
    p->opt.tls = tls;
    p->interval_us = AGENT_PING_INTERVAL_US;
    return p;
}

void agent_pinger_free(struct agent_pinger *p)
{
    if (p == NULL)
        return;
    resp_close(p->conn);
    free(p->host);
    free(p->password);
    free(p);
}

void agent_pinger_set_interval(struct agent_pinger *p, int64_t interval_us, int64_t now_us)
{
    p->interval_us = interval_us;
    if (p->next_ping_us > now_us + interval_us || p->next_ping_us == 0)
        p->next_ping_us = now_us;
}

int agent_pinger_fd(const struct agent_pinger *p)
{
    return resp_fd(p->conn);
}

short agent_pinger_events(const struct agent_pinger *p)
{
    return resp_poll_events(p->conn);
}

int64_t agent_pinger_next_us(const struct agent_pinger *p)
{
    if (p->ping_sent_us != 0 && p->ping_sent_us + AGENT_PING_TIMEOUT_US < p->next_ping_us)
        return p->ping_sent_us + AGENT_PING_TIMEOUT_US;
    return p->next_ping_us;
}

/* The engine did not answer: drop the connection (it is out of step); the
 * next PING connects again. A timeout is a failed probe at once. A refused
 * or dropped connection counts only when the retry PINGER_RETRY_US later
 * fails too: an engine that dies closes its sockets an instant before its
 * pidfd reports the exit, and the exit, not "unresponsive", is the news. */
static void fail(struct agent_pinger *p, const char *why, bool timed_out, int64_t now_us,
                 struct agent_pinger_result *res)
{
    char q[256];

    log_debug("engine probe failed", "port=%d error=%s", p->opt.port, log_quote(q, sizeof(q), why));
    resp_close(p->conn);
    p->conn = NULL;
    p->n_sent = 0;
    if (p->info_outstanding)
        p->next_info_us = 0; /* ask again with the next PING */
    p->info_outstanding = false;
    p->metrics_outstanding = false; /* that sample is lost */
    p->epoch_outstanding = false;
    p->users_outstanding = false;
    p->settings_outstanding = false;
    if (p->commands_outstanding)
        p->commands_wanted = true;
    p->commands_outstanding = false;
    p->ping_sent_us = 0;
    if (!timed_out && p->link_failures++ == 0) {
        if (p->next_ping_us > now_us + PINGER_RETRY_US)
            p->next_ping_us = now_us + PINGER_RETRY_US;
        return;
    }
    res->probed = true;
    res->probe = AGENT_PROBE_FAILED;
}

/* Queue one command (no arguments that need quoting) whose reply is of
 * kind; false with err set when the connection has failed. */
static bool queue(struct agent_pinger *p, enum sent kind, const char *command, char *err,
                  size_t errsize)
{
    assert(p->n_sent < SENT_MAX);
    if (!resp_append(p->conn, err, errsize, command))
        return false;
    p->sent[p->n_sent++] = kind;
    return true;
}

/* What goes with each INFO on the same connection: a cluster-mode
 * engine's epoch, so that the two readings go together, and, logged in as
 * Cairn's own user (who alone may), the engine's users. */
static bool queue_after_info(struct agent_pinger *p, char *err, size_t errsize)
{
    if (p->cluster_enabled && !p->epoch_outstanding) {
        if (!queue(p, SENT_EPOCH, "CLUSTER INFO", err, errsize))
            return false;
        p->epoch_outstanding = true;
    }
    if (p->opt.username != NULL && !p->users_outstanding) {
        if (!queue(p, SENT_USERS, "ACL LIST", err, errsize))
            return false;
        p->users_outstanding = true;
    }
    if (p->opt.username != NULL && !p->settings_outstanding) {
        if (!queue(p, SENT_SETTINGS,
                   p->cluster_enabled ? "CONFIG GET " ENGINE_GUARDED_NAMES
                                        " " ENGINE_GUARDED_CLUSTER_NAMES
                                      : "CONFIG GET " ENGINE_GUARDED_NAMES,
                   err, errsize))
            return false;
        p->settings_outstanding = true;
    }
    return true;
}

static void send_round(struct agent_pinger *p, int64_t now_us, struct agent_pinger_result *res)
{
    char err[256];

    if (p->conn == NULL) {
        p->conn = resp_connect_nonblock(&p->opt, err, sizeof(err));
        if (p->conn == NULL) {
            fail(p, err, false, now_us, res);
            return;
        }
    }
    if (!queue(p, SENT_PING, "PING", err, sizeof(err))) {
        fail(p, err, false, now_us, res);
        return;
    }
    p->ping_sent_us = now_us;
    if (p->commands_wanted && !p->commands_outstanding) {
        if (!queue(p, SENT_COMMANDS, "COMMAND", err, sizeof(err))) {
            fail(p, err, false, now_us, res);
            return;
        }
        p->commands_wanted = false;
        p->commands_outstanding = true;
    }
    if (!p->info_outstanding && now_us >= p->next_info_us) {
        if (!queue(p, SENT_INFO, "INFO " INFO_SECTIONS, err, sizeof(err)) ||
            !queue_after_info(p, err, sizeof(err))) {
            fail(p, err, false, now_us, res);
            return;
        }
        p->info_outstanding = true;
        p->next_info_us = now_us + AGENT_INFO_INTERVAL_US;
    }
    if (resp_flush(p->conn, err, sizeof(err)) < 0)
        fail(p, err, false, now_us, res);
}

bool agent_pinger_want_metrics(struct agent_pinger *p, int64_t now_us)
{
    char err[256];

    if (p->conn == NULL || p->metrics_outstanding)
        return false;
    /* Written by the next agent_pinger_io(): the loop polls for POLLOUT
     * while bytes wait. A failed connection shows up there too. */
    if (!queue(p, SENT_METRICS, "INFO " AGENT_COLLECT_INFO_SECTIONS, err, sizeof(err)) ||
        !queue_after_info(p, err, sizeof(err)))
        return false;
    p->metrics_outstanding = true;
    p->next_info_us = now_us + AGENT_INFO_INTERVAL_US; /* this INFO says what that one would */
    return true;
}

void agent_pinger_want_commands(struct agent_pinger *p)
{
    if (!p->commands_outstanding)
        p->commands_wanted = true;
}

void agent_pinger_tick(struct agent_pinger *p, int64_t now_us, struct agent_pinger_result *res)
{
    if (p->ping_sent_us != 0 && now_us - p->ping_sent_us >= AGENT_PING_TIMEOUT_US)
        fail(p, "no reply to PING within 1 s", true, now_us, res);
    if (now_us < p->next_ping_us)
        return;
    /* Keep the cadence, but never try to catch up on missed rounds. */
    p->next_ping_us += p->interval_us;
    if (p->next_ping_us <= now_us)
        p->next_ping_us = now_us + p->interval_us;
    if (p->ping_sent_us == 0)
        send_round(p, now_us, res);
}

/* Read one reply to PING: PONG (or any answer but LOADING) means it serves. */
static enum agent_probe ping_outcome(const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR && r->str != NULL && strncmp(r->str, "LOADING", 7) == 0)
        return AGENT_PROBE_LOADING;
    return AGENT_PROBE_PONG;
}

static void take_replies(struct agent_pinger *p, int64_t now_us, struct agent_observed *seen,
                         struct agent_pinger_result *res)
{
    redisReply *r;
    char err[256];
    int rc;

    while ((rc = resp_next_reply(p->conn, &r, err, sizeof(err))) == 1) {
        if (p->n_sent == 0) {
            resp_reply_free(r);
            fail(p, "reply to a command never sent", false, now_us, res);
            return;
        }
        enum sent kind = p->sent[0];
        p->link_failures = 0;
        memmove(p->sent, p->sent + 1, (p->n_sent - 1) * sizeof(p->sent[0]));
        p->n_sent--;
        switch (kind) {
        case SENT_PING:
            p->ping_sent_us = 0;
            res->probed = true;
            res->probe = ping_outcome(r);
            break;
        case SENT_COMMANDS:
            p->commands_outstanding = false;
            assert(res->commands == NULL);
            res->commands = r; /* handed over */
            r = NULL;
            break;
        case SENT_EPOCH:
            p->epoch_outstanding = false;
            seen->has_epoch = resp_reply_is_string(r) &&
                              engine_cluster_info_epoch_parse(r->str, r->len, &seen->config_epoch);
            break;
        case SENT_USERS:
            p->users_outstanding = false;
            seen->has_users = engine_users_digest(r, seen->users_digest);
            break;
        case SENT_SETTINGS:
            p->settings_outstanding = false;
            seen->has_settings = engine_guarded_reply_digest(r, seen->settings_digest);
            break;
        case SENT_INFO:
        case SENT_METRICS:
            if (kind == SENT_INFO)
                p->info_outstanding = false;
            else
                p->metrics_outstanding = false;
            if (resp_reply_is_string(r)) {
                struct engine_info *info = engine_info_parse(r->str, r->len);
                const char *enabled = engine_info_get(info, "cluster", "cluster_enabled");
                agent_pinger_observe(info, seen);
                if (enabled != NULL)
                    p->cluster_enabled = strcmp(enabled, "1") == 0;
                seen->at_us = now_us;
                res->observed = true;
                if (kind == SENT_METRICS) {
                    assert(res->metrics == NULL);
                    res->metrics = info; /* handed over */
                } else {
                    engine_info_free(info);
                }
            }
            break;
        }
        resp_reply_free(r);
    }
    if (rc < 0 && resp_last_error(p->conn) == RESP_ERR_AUTH) {
        fail(p, err, true, now_us, res);
        res->probe = AGENT_PROBE_REFUSED;
    } else if (rc < 0) {
        fail(p, err, false, now_us, res);
    }
}

void agent_pinger_io(struct agent_pinger *p, short revents, int64_t now_us,
                     struct agent_observed *seen, struct agent_pinger_result *res)
{
    char err[256];

    if (p->conn == NULL)
        return;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        if (resp_read(p->conn, err, sizeof(err)) < 0) {
            /* Replies that arrived before the close still count. */
            take_replies(p, now_us, seen, res);
            if (p->conn != NULL)
                fail(p, err, false, now_us, res);
            return;
        }
        take_replies(p, now_us, seen, res);
        if (p->conn == NULL)
            return;
    }
    if ((revents & POLLOUT) && resp_wants_write(p->conn) &&
        resp_flush(p->conn, err, sizeof(err)) < 0)
        fail(p, err, false, now_us, res);
}

/* A replica's primary, as its INFO names it; left "" and 0 unless both
 * parts are there and fit. */
static void observe_primary(const struct engine_info *info, struct agent_observed *out)
{
    const char *host = engine_info_get(info, "replication", "master_host");
    long long port;

    if (!out->replica || host == NULL || strlen(host) >= sizeof(out->master_host) ||
        !engine_info_get_ll(info, "replication", "master_port", &port) || port <= 0 || port > 65535)
        return;
    strcpy(out->master_host, host);
    out->master_port = (int)port;
}

void agent_pinger_observe(const struct engine_info *info, struct agent_observed *out)
{
    const char *version = NULL;
    const char *role = engine_info_get(info, "replication", "role");
    const char *link = engine_info_get(info, "replication", "master_link_status");
    long long v, pid;
    long long epoch = out->config_epoch;
    bool has_epoch = out->has_epoch;
    long long was = out->process_id;

    memset(out, 0, sizeof(*out));
    if (engine_kind_from_info(info, NULL, &version))
        snprintf(out->version, sizeof(out->version), "%s", version);
    out->replica = role != NULL && strcmp(role, "slave") == 0;
    out->has_offset = engine_info_get_ll(info, "replication", "master_repl_offset", &out->offset);
    out->link_up = link == NULL ? -1 : strcmp(link, "up") == 0;
    observe_primary(info, out);
    out->loading = engine_info_get_ll(info, "persistence", "loading", &v) && v != 0;
    out->sync_in_progress =
        (engine_info_get_ll(info, "replication", "master_sync_in_progress", &v) && v != 0) ||
        (engine_info_get_ll(info, "persistence", "rdb_bgsave_in_progress", &v) && v != 0);
    if (!engine_info_get_ll(info, "server", "process_id", &out->process_id))
        out->process_id = 0;
    pid = out->process_id;
    if (has_epoch && pid != 0 && pid == was) {
        out->has_epoch = true;
        out->config_epoch = epoch;
    }
    out->valid = role != NULL;
}
