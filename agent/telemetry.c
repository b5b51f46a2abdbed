/* telemetry.c -- metric ticks, periods and the push to cairnd (see
 * telemetry.h). */
#include "telemetry.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "collect.h"
#include "cp.h"
#include "info.h"
#include "log.h"
#include "outbox.h"
#include "pinger.h"
#include "resp.h"
#include "timeutil.h"
#include "upstream.h"
#include "xalloc.h"

/* The primary's answer and then the replica's must both fit in the time a
 * tick waits. */
_Static_assert(AGENT_UPSTREAM_TIMEOUT_US < AGENT_METRICS_GRACE_US / 2,
               "a replica's INFO needs time after its primary's");

/* The metrics of the agent (a->tm). */
struct agent_telemetry {
    int interval_s, period_s;
    int64_t tick;    /* epoch s of the last tick taken */
    bool collecting; /* the engines' answers for tick are awaited */
    int64_t collect_end_us;
    bool have_host;
    struct agent_host_snap host;
    struct agent_values host_values; /* the host's values for tick's interval */

    struct agent_outbox outbox;
    struct agent_cp chan;
    unsigned failures; /* pushes in a row that failed for a reason worth retrying */
    int64_t retry_at_us;
    int64_t sent_us;
    long refused_status; /* the last refusal logged at warn level (0: none since a success) */
};

/* The latest tick at or before wall time w (epoch s). */
static int64_t tick_at(const struct agent_telemetry *t, int64_t w_us)
{
    int64_t s = w_us / 1000000LL;

    return s - s % t->interval_s;
}

void agent_telemetry_init(struct agent *a, CURLM *multi)
{
    struct agent_telemetry *t = xcalloc(1, sizeof(*t));

    a->tm = t;
    t->interval_s = a->cfg->metrics_interval_s;
    t->period_s = a->cfg->metrics_period_s;
    t->tick = tick_at(t, time_wall_us()); /* the first sample comes at the next one */
    agent_outbox_init(&t->outbox, AGENT_OUTBOX_MAX);
    agent_cp_init(&t->chan, multi, a->cfg->control_plane, a->cfg->control_plane_ca, AGENT_CP_GZIP);
}

void agent_telemetry_close(struct agent *a)
{
    agent_cp_close(&a->tm->chan);
    agent_outbox_free(&a->tm->outbox);
    free(a->tm);
    a->tm = NULL;
}

/* ---- the host ------------------------------------------------------------ */

/* Read a /proc file (whose size stat() does not tell) into buf, at most
 * size - 1 bytes, NUL-terminated. A file longer than that is cut after its
 * last whole line. Returns buf, or NULL when it cannot be read. */
static const char *read_proc(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;

    if (fd < 0)
        return NULL;
    while (n < size - 1) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (n == size - 1) {
        char *nl = strrchr(buf, '\n');
        if (nl != NULL)
            nl[1] = '\0';
    }
    return buf;
}

static void read_host(struct agent_host_snap *out)
{
    /* Only the first line of /proc/stat is read; /proc/net/dev has a line
     * per interface. */
    char stat[1024], meminfo[8192], netdev[65536];

    agent_collect_host(read_proc("/proc/stat", stat, sizeof(stat)),
                       read_proc("/proc/meminfo", meminfo, sizeof(meminfo)),
                       read_proc("/proc/net/dev", netdev, sizeof(netdev)), out);
}

/* ---- a replica's primary ------------------------------------------------- */

/* Stop reading n's primary: n is not a running replica, or follows
 * another primary. */
static void upstream_close(struct agent_node *n)
{
    agent_upstream_free(n->upstream);
    n->upstream = NULL;
    n->upstream_failures = 0;
}

/* Said once at warn level until a reading succeeds again. */
static void upstream_failed(struct agent_node *n, const char *err)
{
    char q[300];

    if (n->upstream_failures++ == 0)
        log_warn("could not read the primary's replication offset; no ReplicationLag for the "
                 "replica until it can",
                 "node=%s error=%s", n->id, log_quote(q, sizeof(q), err));
    else
        log_debug("could not read the primary's replication offset", "node=%s error=%s", n->id,
                  log_quote(q, sizeof(q), err));
}

/* Ask the primary that n follows, by n's last sample, for its offset.
 * Returns whether it was asked: n's own INFO then waits for primary_done(). */
static bool ask_primary(struct agent_node *n, int64_t now_us)
{
    const struct agent_replica_link *l = &n->snap.link;
    char err[256];

    if (!n->have_snap || n->snap.primary || l->host[0] == '\0' || l->port == 0) {
        upstream_close(n);
        return false;
    }
    if (n->upstream != NULL && !agent_upstream_is(n->upstream, l->host, l->port))
        upstream_close(n); /* a failover: another primary */
    if (n->upstream == NULL)
        n->upstream =
            agent_upstream_new(l->host, l->port, agent_run_user(&n->run), n->run.password, n->tls);
    if (agent_upstream_ask(n->upstream, now_us, err, sizeof(err)))
        return true;
    upstream_failed(n, err);
    return false;
}

/* n's primary answered (info, taken over) or will not (info NULL): keep its
 * reading, and ask n's own INFO if the tick still waits for it. */
static void primary_done(struct agent *a, struct agent_node *n, struct engine_info *info,
                         int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    const struct agent_replica_link *l = &n->snap.link;
    struct agent_primary_snap snap;

    if (info != NULL) {
        if (agent_collect_primary(info, l->host, l->port, now_us,
                                  n->have_primary ? &n->primary : NULL, &snap)) {
            if (n->upstream_failures > 0)
                log_info("the primary's replication offset is read again", "node=%s", n->id);
            n->upstream_failures = 0;
            n->primary = snap;
            n->have_primary = true;
            n->primary_tick = t->tick;
        } else {
            upstream_failed(n, "INFO replication without master_replid or master_repl_offset");
        }
        engine_info_free(info);
    }
    if (!t->collecting || n->sample_tick != t->tick)
        return;
    if (n->pinger == NULL || !agent_pinger_want_metrics(n->pinger, now_us))
        n->sample_tick = 0;
}

/* Give up on primaries that did not answer in time. */
static void expire_primaries(struct agent *a, int64_t now_us)
{
    char err[256];

    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        if (n->upstream != NULL &&
            agent_upstream_expire(n->upstream, now_us, err, sizeof(err)) == AGENT_UPSTREAM_FAILED) {
            upstream_failed(n, err);
            primary_done(a, n, NULL, now_us);
        }
    }
}

unsigned agent_telemetry_pollfds(const struct agent *a, struct pollfd *fds)
{
    unsigned k = 0;

    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct agent_node *n = a->nodes[i];
        int fd = n->upstream != NULL ? agent_upstream_fd(n->upstream) : -1;
        if (fd >= 0)
            fds[k++] = (struct pollfd){.fd = fd, .events = agent_upstream_events(n->upstream)};
    }
    return k;
}

void agent_telemetry_ready(struct agent *a, const struct pollfd *fds, unsigned nfds, int64_t now_us)
{
    char err[256];

    for (unsigned k = 0; k < nfds; k++) {
        if (fds[k].revents == 0)
            continue;
        /* Look the descriptor up again: handling the engines' descriptors
         * may have dropped a node and closed its connections. */
        for (size_t i = 0; i < a->n_nodes; i++) {
            struct agent_node *n = a->nodes[i];
            if (n->upstream == NULL || agent_upstream_fd(n->upstream) != fds[k].fd)
                continue;
            struct engine_info *info;
            enum agent_upstream_status st =
                agent_upstream_io(n->upstream, fds[k].revents, &info, err, sizeof(err));
            if (st == AGENT_UPSTREAM_FAILED)
                upstream_failed(n, err);
            if (st != AGENT_UPSTREAM_WAITING)
                primary_done(a, n, info, now_us);
            break;
        }
    }
}

/* ---- ticks and periods --------------------------------------------------- */

/* Queue n's period (it has ended) for cairnd. */
static void emit(struct agent *a, struct agent_node *n)
{
    struct agent_telemetry *t = a->tm;
    struct agent_values v;

    agent_period_result(&n->period, &v);
    n->have_period = false;
    struct agent_sample *s = agent_sample_new(n->id, n->period.start, &v);
    if (s == NULL)
        return;
    if (agent_outbox_add(&t->outbox, s) && t->outbox.dropped == 1)
        log_warn("metrics outbox full; dropping the oldest samples until cairnd takes them",
                 "limit=%d", AGENT_OUTBOX_MAX);
}

static void take_tick(struct agent *a, int64_t tick, int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    struct agent_host_snap host;
    unsigned asked = 0;

    read_host(&host);
    memset(&t->host_values, 0, sizeof(t->host_values));
    agent_collect_host_interval(t->have_host ? &t->host : NULL, &host, &t->host_values);
    t->host = host;
    t->have_host = true;
    t->tick = tick;
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        n->sample_tick = 0;
        if (n->pid == 0 || n->pinger == NULL) {
            upstream_close(n);
            continue;
        }
        /* A replica's own INFO goes once its primary has answered. */
        if ((agent_pinger_fd(n->pinger) >= 0 && ask_primary(n, now_us)) ||
            agent_pinger_want_metrics(n->pinger, now_us)) {
            n->sample_tick = tick;
            asked++;
        }
    }
    t->collecting = true;
    t->collect_end_us = now_us + AGENT_METRICS_GRACE_US;
    log_debug("metrics tick", "at=%lld engines=%u", (long long)tick, asked);
}

static bool awaiting(const struct agent *a)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        if (a->nodes[i]->sample_tick == a->tm->tick)
            return true;
    }
    return false;
}

/* The samples of the tick are in (or late): queue every period that has
 * ended by it. */
static void close_periods(struct agent *a)
{
    struct agent_telemetry *t = a->tm;

    t->collecting = false;
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        n->sample_tick = 0;
        if (n->have_period && n->period.start + t->period_s <= t->tick)
            emit(a, n);
    }
}

/* The wall clock went back: periods already open lie in the future now,
 * and would stay open for as long. Drop them and start again from here. */
static void clock_went_back(struct agent *a, int64_t tick)
{
    log_warn("wall clock went back; dropping the open metric periods", "from=%lld to=%lld",
             (long long)a->tm->tick, (long long)tick);
    a->tm->collecting = false;
    a->tm->tick = tick;
    for (size_t i = 0; i < a->n_nodes; i++) {
        a->nodes[i]->have_period = false;
        a->nodes[i]->sample_tick = 0;
    }
}

/* ---- the push ------------------------------------------------------------ */

static void push_kick(struct agent *a, int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    char *body;

    if (agent_cp_busy(&t->chan) || !a->have_id || now_us < t->retry_at_us)
        return;
    body =
        agent_outbox_begin(&t->outbox, t->period_s, AGENT_PUSH_MAX_SAMPLES, AGENT_PUSH_MAX_BYTES);
    if (body == NULL)
        return;
    t->sent_us = now_us;
    agent_cp_start(&t->chan, "/v1/agent/metrics", a->id.credential, body, AGENT_PUSH_TIMEOUT_MS,
                   false);
}

/* Keep the samples and try again after the backoff. */
static void push_failed(struct agent *a, int64_t now_us, const char *detail)
{
    struct agent_telemetry *t = a->tm;

    agent_outbox_end(&t->outbox, AGENT_OUTBOX_FAILED);
    t->failures++;
    /* Pushes are not heartbeats: up to the full 5 s apart. */
    t->retry_at_us = now_us + agent_cp_backoff_us(t->failures, 0);
    if (t->failures == 1)
        log_warn("metrics push failed; keeping the samples and retrying with backoff",
                 "waiting=%zu error=\"%s\"", agent_outbox_count(&t->outbox), detail);
    else
        log_debug("metrics push failed", "waiting=%zu error=\"%s\" retry_in_ms=%lld",
                  agent_outbox_count(&t->outbox), detail,
                  (long long)(t->retry_at_us - now_us) / 1000);
}

void agent_telemetry_perform(struct agent *a, int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    const struct agent_cp_result *r = agent_cp_take(&t->chan);
    char err[512];

    if (r == NULL)
        return;
    size_t sent = t->outbox.inflight;
    unsigned long long dropped = t->outbox.dropped_out;
    if (r->code != CURLE_OK) {
        push_failed(a, now_us, r->error);
        return;
    }
    if (r->status >= 200 && r->status < 300) {
        agent_outbox_end(&t->outbox, AGENT_OUTBOX_ACCEPTED);
        if (t->failures > 0)
            log_info("metrics reach cairnd again", "failed_attempts=%u", t->failures);
        if (dropped > 0)
            log_warn("metric samples were dropped while cairnd could not take them", "dropped=%llu",
                     dropped);
        log_debug("metrics pushed", "samples=%zu body_bytes=%zu sent_bytes=%zu ms=%lld", sent,
                  r->body_len, r->sent_len, (long long)(now_us - t->sent_us) / 1000);
        t->failures = 0;
        t->retry_at_us = 0;
        t->refused_status = 0;
        return;
    }
    agent_cp_problem(r, err, sizeof(err));
    /* Worth another try: a credential being replaced (the sync registers
     * again), an overloaded or failing cairnd. */
    if (r->status == 401 || r->status == 408 || r->status == 429 || r->status >= 500) {
        push_failed(a, now_us, err);
        return;
    }
    /* Anything else will not get better by sending the same samples again
     * (a bad body, or a cairnd without the route yet): drop them. Said
     * once at warn level until a push succeeds or the answer changes. */
    if (t->refused_status != r->status)
        log_warn("cairnd refused metric samples; dropping them", "samples=%zu error=\"%s\"", sent,
                 err);
    else
        log_debug("cairnd refused metric samples; dropping them", "samples=%zu error=\"%s\"", sent,
                  err);
    t->refused_status = r->status;
    agent_outbox_end(&t->outbox, AGENT_OUTBOX_REFUSED);
    t->failures = 0;
    t->retry_at_us = 0;
}

/* ---- the loop's hooks ---------------------------------------------------- */

void agent_telemetry_tick(struct agent *a, int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    int64_t tick = tick_at(t, time_wall_us());

    expire_primaries(a, now_us);
    if (t->collecting && (now_us >= t->collect_end_us || !awaiting(a)))
        close_periods(a);
    if (tick + t->interval_s < t->tick)
        clock_went_back(a, tick);
    if (tick > t->tick) {
        if (t->collecting)
            close_periods(a); /* the loop fell behind by a whole interval */
        take_tick(a, tick, now_us);
    }
    push_kick(a, now_us);
}

int64_t agent_telemetry_next_us(const struct agent *a, int64_t now_us)
{
    const struct agent_telemetry *t = a->tm;
    int64_t next = now_us + ((t->tick + t->interval_s) * 1000000LL - time_wall_us());

    if (t->collecting && t->collect_end_us < next)
        next = t->collect_end_us;
    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct agent_upstream *u = a->nodes[i]->upstream;
        if (u != NULL && agent_upstream_deadline_us(u) < next)
            next = agent_upstream_deadline_us(u);
    }
    /* A push due now has been started by agent_telemetry_tick(): only a
     * retry still ahead is a time to wake for. */
    if (!agent_cp_busy(&t->chan) && agent_outbox_count(&t->outbox) > 0 && t->retry_at_us > now_us &&
        t->retry_at_us < next)
        next = t->retry_at_us;
    return next;
}

/* What the agent knows of the process that snap (read at now_us) is of,
 * for when it is the node's first: the interval of the tick began
 * interval_s before it (on the wall clock), and the agent spawned the
 * process when it is its child and snap shows its pid (not a leftover
 * engine holding the port). */
static void engine_first(const struct agent *a, const struct agent_node *n,
                         const struct agent_engine_snap *snap, int64_t now_us,
                         struct agent_engine_first *out)
{
    const struct agent_telemetry *t = a->tm;

    out->since_us = now_us - (time_wall_us() - (t->tick - t->interval_s) * 1000000LL);
    out->started = n->child && n->pid != 0 && snap->process_id == (long long)n->pid;
    out->started_us = n->started_us;
}

void agent_telemetry_on_info(struct agent *a, struct agent_node *n, struct engine_info *info,
                             int64_t now_us)
{
    struct agent_telemetry *t = a->tm;
    struct agent_engine_snap snap;
    struct agent_values v;
    const char *run_id = engine_info_get(info, "server", "run_id");

    if (!t->collecting || n->sample_tick != t->tick) {
        log_debug("late metrics answer ignored", "node=%s", n->id);
        engine_info_free(info);
        return;
    }
    n->sample_tick = 0;
    /* The table belongs to one run; a restart the agent did not see (its
     * pid stayed) shows in run_id. */
    if (n->cmds != NULL && run_id != NULL) {
        if (n->cmds_run_id[0] == '\0') {
            snprintf(n->cmds_run_id, sizeof(n->cmds_run_id), "%s", run_id);
        } else if (strcmp(n->cmds_run_id, run_id) != 0) {
            agent_telemetry_new_process(n);
        }
    }
    bool ok = agent_collect_engine(info, n->cmds, now_us, &snap);
    engine_info_free(info);
    if (!ok)
        return;
    v = t->host_values;
    struct agent_engine_first first;
    engine_first(a, n, &snap, now_us, &first);
    agent_collect_engine_interval(n->have_snap ? &n->snap : NULL, &snap, &first, &v);
    agent_collect_lag(&snap, n->have_primary && n->primary_tick == t->tick ? &n->primary : NULL,
                      &v);
    n->snap = snap;
    n->have_snap = true;
    int64_t start = agent_collect_period_of(t->tick, t->interval_s, t->period_s);
    if (n->have_period && n->period.start != start)
        emit(a, n); /* left open by ticks that were skipped */
    if (!n->have_period) {
        agent_period_init(&n->period, start);
        n->have_period = true;
    }
    agent_period_add(&n->period, &v);
}

void agent_telemetry_on_commands(struct agent_node *n, struct redisReply *reply)
{
    char err[256], q[300];

    agent_cmdtable_free(n->cmds);
    n->cmds = agent_cmdtable_parse(reply, err, sizeof(err));
    n->cmds_run_id[0] = '\0';
    resp_reply_free(reply);
    /* COMMAND's answer is some 90 kB, read into some 10,000 reply objects
     * at once: give that memory back rather than keep it for the agent's
     * life (glibc keeps freed heap pages otherwise). */
    malloc_trim(0);
    if (n->cmds != NULL) {
        log_debug("engine commands read", "node=%s commands=%zu", n->id,
                  agent_cmdtable_size(n->cmds));
    } else if (!n->cmds_refused) {
        log_warn("engine did not list its commands; no command family metrics for it",
                 "node=%s error=%s", n->id, log_quote(q, sizeof(q), err));
        n->cmds_refused = true;
    }
}

void agent_telemetry_new_process(struct agent_node *n)
{
    agent_cmdtable_free(n->cmds);
    n->cmds = NULL;
    n->cmds_run_id[0] = '\0';
    n->cmds_refused = false;
    if (n->pinger != NULL)
        agent_pinger_want_commands(n->pinger);
}

void agent_telemetry_node_free(struct agent_node *n)
{
    agent_cmdtable_free(n->cmds);
    n->cmds = NULL;
    upstream_close(n);
}
