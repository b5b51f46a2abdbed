/* loop.c -- the agent's one thread: a curl_multi_poll() loop over cairnd's
 * HTTP channels (the sync, and the metrics push of telemetry.h), the
 * signalfd, every engine's pidfd, every engine's health connection and
 * the connections to replicas' primaries (the watch that PINGs them,
 * agent/watch.h, and the metrics' reading of them) (see loop.h).
 *
 * The sync channel carries one request at a time. Without an identity it
 * registers; with one it syncs: the report goes out with wait_ms, cairnd
 * holds it until the desired set changes or wait_ms passes, the answer is
 * applied, and the next sync leaves at once. So a change in cairnd reaches
 * the agent as soon as cairnd answers, and the agent is heard from at least
 * every wait_ms. When an engine changes state while a sync waits, that
 * long-poll is dropped and a fresh report sent, so cairnd hears of a crash
 * within milliseconds; so it does when a replica's primary has been silent
 * for 500 ms, and when it answers again (agent/watch.h). Transport errors
 * and 5xx back off (100 ms doubling to 5 s) while supervision carries on. */
#include "loop.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cp.h"
#include "desired.h"
#include "upload.h"
#include "files.h"
#include "identity.h"
#include "log.h"
#include "report.h"
#include "supervise.h"
#include "telemetry.h"
#include "timeutil.h"
#include "xalloc.h"

/* Longest a poll waits even with nothing due, so a missed wakeup costs at
 * most this much. */
#define LOOP_MAX_WAIT_MS 1000

/* The curl_waitfd that waits on p's descriptor for its poll(2) events
 * (POLLIN, POLLOUT), and the poll(2) flags of the revents
 * curl_multi_poll() set in one: the modules below the loop speak poll(2),
 * the loop waits with curl. */
static struct curl_waitfd waitfd_of(const struct pollfd *p)
{
    return (struct curl_waitfd){.fd = p->fd,
                                .events = (short)(((p->events & POLLIN) ? CURL_WAIT_POLLIN : 0) |
                                                  ((p->events & POLLOUT) ? CURL_WAIT_POLLOUT : 0))};
}

static short revents_of(short waitfd_revents)
{
    return (short)(((waitfd_revents & CURL_WAIT_POLLIN) ? POLLIN : 0) |
                   ((waitfd_revents & CURL_WAIT_POLLOUT) ? POLLOUT : 0) |
                   ((waitfd_revents & CURL_WAIT_POLLPRI) ? POLLPRI : 0));
}

int agent_loop_signalfd(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -1;
    signal(SIGPIPE, SIG_IGN); /* a closed engine connection is an error, not a death */
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* ---- the control-plane channel ---------------------------------------- */

/* Count one more failure in a row and hold the channel for its backoff. */
static void cp_backoff(struct agent *a, int64_t now_us)
{
    a->cp_failures++;
    a->cp_retry_at_us = now_us + agent_cp_backoff_us(a->cp_failures, a->heartbeat_timeout_s);
}

static void cp_failed(struct agent *a, int64_t now_us, const char *what, const char *detail)
{
    cp_backoff(a, now_us);
    /* Say it once when cairnd goes away, then quietly keep trying. */
    if (a->cp_failures == 1)
        log_warn("cairnd request failed; retrying with backoff", "request=%s error=\"%s\"", what,
                 detail);
    else
        log_debug("cairnd request failed", "request=%s error=\"%s\" retry_in_ms=%lld", what, detail,
                  (long long)(a->cp_retry_at_us - now_us) / 1000);
}

/* A sync went through: cairnd is reachable and knows this agent. */
static void cp_succeeded(struct agent *a)
{
    if (a->cp_failures > 0)
        log_info("cairnd reachable again", "failed_attempts=%u", a->cp_failures);
    a->cp_failures = 0;
    a->cp_retry_at_us = 0;
}

/* Whether the agent registers with its join token: one registration opens
 * with it; after it (or its refusal), only the bootstrap token, should
 * cairnd forget this host. Unchanged between a request and its answer. */
static bool joining(const struct agent *a)
{
    return a->cfg->join_token != NULL && !a->join_token_spent;
}

static void on_register(struct agent *a, const struct agent_cp_result *r, int64_t now_us)
{
    char err[512];
    json_t *j;
    const char *host, *cred;

    if (r->status != 200) {
        agent_cp_problem(r, err, sizeof(err));
        if (r->status == 401 || r->status == 403 || r->status == 409)
            log_error("cairnd refused registration; check the join or bootstrap token",
                      "status=%ld error=\"%s\"", r->status, err);
        if (r->status == 401 && joining(a))
            a->join_token_spent = true; /* used or expired: fall back to the bootstrap token */
        cp_failed(a, now_us, "register", err);
        return;
    }
    j = json_loadb(r->body, r->len, 0, NULL);
    host = json_string_value(json_object_get(j, "host_id"));
    cred = json_string_value(json_object_get(j, "credential"));
    if (host == NULL || cred == NULL || strlen(host) >= sizeof(a->id.host_id) ||
        strlen(cred) >= sizeof(a->id.credential)) {
        json_decref(j);
        cp_failed(a, now_us, "register", "answer without host_id and credential");
        return;
    }
    strcpy(a->id.host_id, host);
    strcpy(a->id.credential, cred);
    json_int_t wait = json_integer_value(json_object_get(j, "sync_wait_ms"));
    json_int_t heartbeat = json_integer_value(json_object_get(j, "heartbeat_timeout_s"));
    const char *status = json_string_value(json_object_get(j, "status"));
    bool pending = status != NULL && strcmp(status, "pending") == 0;
    if (wait > 0 && wait <= 10000)
        a->sync_wait_ms = (int)wait;
    if (heartbeat > 0 && heartbeat < 86400)
        a->heartbeat_timeout_s = (int)heartbeat;
    json_decref(j);
    if (!agent_identity_save(a->cfg->data_dir, &a->id, err, sizeof(err)))
        log_error("could not save identity; a restart will register again", "error=\"%s\"", err);
    a->have_id = true;
    if (joining(a))
        a->join_token_spent = true;
    log_info("registered", "host_id=%s name=%s az=%s status=%s", a->id.host_id, a->cfg->name,
             a->cfg->az, pending ? "pending" : "healthy");
    if (pending)
        log_warn("this host waits for an admin to approve it; nothing is placed on it until then",
                 "host_id=%s approve=\"POST /v1/hosts/%s/approve\"", a->id.host_id, a->id.host_id);
    /* Sync at once, but keep the failure count until a sync succeeds, so
     * a credential refused again and again still backs off. */
    a->cp_retry_at_us = 0;
    a->generation = 0; /* maybe a new host row: take its whole desired set */
    a->synced = false;
    agent_report_changed(a);
}

/* Keep the desired set on disk so a restarted agent can supervise by it
 * before cairnd answers (or while cairnd is down). */
static void save_desired(const struct agent *a, const struct agent_cp_result *r)
{
    char *path = xasprintf("%s/desired.json", a->cfg->data_dir);
    char err[512];

    if (!agent_files_write_atomic(path, r->body, r->len, 0600, err, sizeof(err)))
        log_warn("could not save the desired set", "error=\"%s\"", err);
    free(path);
}

static void on_sync(struct agent *a, const struct agent_cp_result *r, int64_t now_us)
{
    char err[512];
    struct agent_desired d;
    json_t *j;

    if (r->status == 401) {
        log_warn("cairnd no longer knows this agent's credential; registering again", "host_id=%s",
                 a->id.host_id);
        a->have_id = false;
        cp_backoff(a, now_us);
        return;
    }
    if (r->status != 200) {
        agent_cp_problem(r, err, sizeof(err));
        cp_failed(a, now_us, "sync", err);
        return;
    }
    j = json_loadb(r->body, r->len, 0, NULL);
    if (!agent_desired_parse(j, &d, err, sizeof(err))) {
        json_decref(j);
        log_error("cairnd sent a desired set the agent cannot read", "error=\"%s\"", err);
        cp_failed(a, now_us, "sync", err);
        return;
    }
    json_decref(j);
    cp_succeeded(a);
    if (d.heartbeat_timeout_s > 0)
        a->heartbeat_timeout_s = d.heartbeat_timeout_s;
    if (a->synced && d.generation == a->generation) {
        agent_desired_free(&d); /* a heartbeat answer: nothing new */
        return;
    }
    log_info("desired set received", "generation=%lld nodes=%zu", (long long)d.generation,
             d.n_nodes);
    agent_desired_free(&a->desired);
    a->desired = d;
    a->have_desired = true;
    a->synced = true;
    a->generation = d.generation;
    save_desired(a, r);
    agent_sup_apply(a, now_us);
    agent_uploads_apply(a);
    agent_report_changed(a); /* tell cairnd the generation is applied */
}

/* Start the next request when one is due; drop a waiting long-poll when
 * there is news to report. */
static void cp_kick(struct agent *a, int64_t now_us)
{
    if (agent_cp_busy(&a->cp)) {
        if (a->cp_kind != AGENT_CP_SYNC || !a->report_dirty)
            return;
        agent_cp_abort(&a->cp);
    }
    if (now_us < a->cp_retry_at_us)
        return;
    if (!a->have_id) {
        const char *token = joining(a) ? a->cfg->join_token : a->cfg->bootstrap_token;
        if (token == NULL) {
            cp_failed(a, now_us, "register",
                      "no join token or bootstrap token left to register with");
            return;
        }
        a->cp_kind = AGENT_CP_REGISTER;
        a->cp_started_us = now_us;
        agent_cp_start(&a->cp, "/v1/agent/register", token, agent_report_register(a), 10000, false);
        return;
    }
    /* cairnd records the report at once and answers at once when the
     * desired set moved on; only an unchanged one is held for wait_ms. */
    int wait_ms = a->sync_wait_ms;
    a->cp_kind = AGENT_CP_SYNC;
    a->report_dirty = false;
    a->cp_started_us = now_us;
    agent_cp_start(&a->cp, "/v1/agent/sync", a->id.credential,
                   agent_report_sync(a, wait_ms, now_us), wait_ms + 10000L, agent_report_urgent(a));
}

static void cp_done(struct agent *a, const struct agent_cp_result *r, int64_t now_us)
{
    const char *what = a->cp_kind == AGENT_CP_REGISTER ? "register" : "sync";

    if (r->code != CURLE_OK) {
        cp_failed(a, now_us, what, r->error);
        return;
    }
    log_debug("cairnd answered", "request=%s status=%ld ms=%lld", what, r->status,
              (long long)(now_us - a->cp_started_us) / 1000);
    if (a->cp_kind == AGENT_CP_REGISTER)
        on_register(a, r, now_us);
    else
        on_sync(a, r, now_us);
}

/* ---- signals ----------------------------------------------------------- */

static void on_signals(struct agent *a, int64_t now_us)
{
    struct signalfd_siginfo si;

    while (read(a->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGCHLD:
            agent_sup_reap(a, now_us);
            break;
        case SIGTERM:
        case SIGINT:
            log_info("signal received; exiting and leaving the engines running", "signal=%u",
                     si.ssi_signo);
            a->quit = true;
            break;
        case SIGHUP: {
            char err[512];
            log_info("signal received; looking for engine binaries again", "signal=%u",
                     si.ssi_signo);
            if (!agent_sup_find_engines(a, err, sizeof(err)))
                log_error("engine binaries unchanged", "error=\"%s\"", err);
            else if (a->have_desired)
                agent_sup_apply(a, now_us); /* a new binary may make a node startable */
            break;
        }
        default:
            break;
        }
    }
}

/* ---- the loop ---------------------------------------------------------- */

int agent_loop_run(struct agent *a)
{
    struct curl_waitfd *fds = NULL;
    struct pollfd *pfds = NULL; /* the modules' descriptors, fds[1] onwards */
    size_t cap = 0;

    while (!a->quit) {
        int64_t now = time_mono_us();

        agent_sup_tick(a, now);
        cp_kick(a, now);
        agent_telemetry_tick(a, now);

        int64_t next = agent_sup_next_us(a);
        if (!agent_cp_busy(&a->cp) && a->cp_retry_at_us > now && a->cp_retry_at_us < next)
            next = a->cp_retry_at_us;
        int64_t metrics_next = agent_telemetry_next_us(a, now);
        if (metrics_next < next)
            next = metrics_next;
        now = time_mono_us();
        int64_t wait_us = next == INT64_MAX ? LOOP_MAX_WAIT_MS * 1000LL : next - now;
        if (wait_us < 0)
            wait_us = 0;
        if (wait_us > LOOP_MAX_WAIT_MS * 1000LL)
            wait_us = LOOP_MAX_WAIT_MS * 1000LL;

        /* The signalfd, 3 per node from supervise, 1 from telemetry. */
        if (cap < 1 + 4 * a->n_nodes) {
            cap = 1 + 4 * a->n_nodes + 16;
            fds = xrealloc(fds, cap * sizeof(*fds));
            pfds = xrealloc(pfds, cap * sizeof(*pfds));
        }
        unsigned n_sup = agent_sup_pollfds(a, pfds);
        unsigned n_tm = agent_telemetry_pollfds(a, pfds + n_sup);
        unsigned n = 1 + n_sup + n_tm;
        fds[0] = (struct curl_waitfd){.fd = a->sigfd, .events = CURL_WAIT_POLLIN};
        for (unsigned i = 1; i < n; i++)
            fds[i] = waitfd_of(&pfds[i - 1]);
        /* Round up so a timer due in 0.4 ms does not spin at 0 ms waits. */
        CURLMcode mc = curl_multi_poll(a->multi, fds, n, (int)((wait_us + 999) / 1000), NULL);
        if (mc != CURLM_OK) {
            log_error("curl_multi_poll failed", "error=\"%s\"", curl_multi_strerror(mc));
            usleep(100000);
        }
        for (unsigned i = 1; i < n; i++)
            pfds[i - 1].revents = revents_of(fds[i].revents);

        now = time_mono_us();
        if (fds[0].revents)
            on_signals(a, now);
        agent_sup_ready(a, pfds, n_sup, now);
        agent_telemetry_ready(a, pfds + n_sup, n_tm, now);
        agent_cp_perform(a->multi);
        const struct agent_cp_result *r = agent_cp_take(&a->cp);
        if (r != NULL)
            cp_done(a, r, now);
        agent_telemetry_perform(a, now);
    }
    free(fds);
    free(pfds);
    return 0;
}
