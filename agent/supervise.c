/* supervise.c -- engine nodes: adoption, convergence, start, stop, exit,
 * removal, health and the watch of replicas' primaries (see supervise.h). */
#define _GNU_SOURCE
#include "supervise.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "cluster.h"
#include "converge.h"
#include "desired.h"
#include "engine_config.h"
#include "files.h"
#include "guarded.h"
#include "info.h"
#include "log.h"
#include "pinger.h"
#include "proc.h"
#include "report.h"
#include "resp.h"
#include "telemetry.h"
#include "topology.h"
#include "upstream.h"
#include "users.h"
#include "watch.h"
#include "xalloc.h"

/* What the agent asks an engine when it re-adopts it. */
#define INFO_ADOPT_SECTIONS "server replication persistence"

/* ---- the node table ---------------------------------------------------- */

static struct agent_node *find_node(const struct agent *a, const char *id)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        if (strcmp(a->nodes[i]->id, id) == 0)
            return a->nodes[i];
    }
    return NULL;
}

static struct agent_node *add_node(struct agent *a, const char *id)
{
    struct agent_node *n = xcalloc(1, sizeof(*n));

    snprintf(n->id, sizeof(n->id), "%s", id);
    n->dir = xasprintf("%s/nodes/%s", a->cfg->data_dir, id);
    n->conf_path = xasprintf("%s/engine.conf", n->dir);
    n->pid_path = xasprintf("%s/engine.pid", n->dir);
    n->log_path = xasprintf("%s/engine.log", n->dir);
    n->run_path = xasprintf("%s/node.json", n->dir);
    n->data_dir = xasprintf("%s/data", n->dir);
    n->tls_cert_path = xasprintf("%s/tls-cert.pem", n->dir);
    n->tls_key_path = xasprintf("%s/tls-key.pem", n->dir);
    n->tls_ca_path = xasprintf("%s/tls-ca.pem", n->dir);
    n->pidfd = -1;
    n->state = AGENT_NODE_STOPPED;
    if (a->n_nodes == a->cap_nodes) {
        a->cap_nodes = a->cap_nodes ? a->cap_nodes * 2 : 16;
        a->nodes = xrealloc(a->nodes, a->cap_nodes * sizeof(*a->nodes));
    }
    a->nodes[a->n_nodes++] = n;
    return n;
}

static void clear_run(struct agent_node *n)
{
    free(n->run.binary);
    free(n->run.password);
    free(n->run.spec);
    memset(&n->run, 0, sizeof(n->run));
    n->has_run = false;
}

/* Free a node and close its descriptors. Its engine, if one runs, is not
 * touched, and neither are its files. */
static void drop_node(struct agent *a, struct agent_node *n)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        if (a->nodes[i] != n)
            continue;
        memmove(&a->nodes[i], &a->nodes[i + 1], (a->n_nodes - i - 1) * sizeof(a->nodes[0]));
        a->n_nodes--;
        break;
    }
    agent_pinger_free(n->pinger);
    agent_watch_free(n->watch);
    agent_telemetry_node_free(n);
    if (n->pidfd >= 0)
        close(n->pidfd);
    if (n->wanted)
        agent_desired_node_clear(&n->want);
    clear_run(n);
    free(n->dir);
    free(n->conf_path);
    free(n->pid_path);
    free(n->log_path);
    free(n->run_path);
    free(n->data_dir);
    free(n->tls_cert_path);
    free(n->tls_key_path);
    free(n->tls_ca_path);
    free(n);
}

static void set_state(struct agent *a, struct agent_node *n, enum agent_node_state state,
                      int64_t now_us)
{
    if (n->state == state)
        return;
    log_info("engine state", "node=%s pid=%d from=%s to=%s", n->id, (int)n->pid,
             agent_converge_state_name(n->state), agent_converge_state_name(state));
    n->state = state;
    if (state == AGENT_NODE_RUNNING && n->healthy_since_us == 0)
        n->healthy_since_us = now_us;
    else if (state != AGENT_NODE_RUNNING)
        n->healthy_since_us = 0;
    agent_report_changed(a);
}

/* ---- binaries ---------------------------------------------------------- */

bool agent_sup_find_engines(struct agent *a, char *err, size_t errsize)
{
    const struct agent_settings *c = a->cfg;
    struct engine_binary *bins;
    size_t n;
    char real[PATH_MAX];

    if (!engine_discover(NULL, (const char *const *)c->engine_paths, c->n_engine_paths,
                         ENGINE_PROBE_TIMEOUT_MS, &bins, &n, err, errsize))
        return false;
    for (size_t i = 0; i < a->n_bins; i++)
        free(a->bin_real[i]);
    free(a->bin_real);
    engine_binaries_free(a->bins, a->n_bins);
    json_decref(a->engines);
    a->bins = bins;
    a->n_bins = n;
    a->bin_real = xcalloc(n + 1, sizeof(*a->bin_real));
    for (size_t i = 0; i < n; i++) {
        if (realpath(bins[i].path, real) != NULL)
            a->bin_real[i] = xstrdup(real);
        log_info("engine binary", "engine=%s version=%s line=%s path=\"%s\"",
                 engine_kind_name(bins[i].kind), bins[i].version, bins[i].line, bins[i].path);
    }
    if (n == 0)
        log_warn("no engine binary found; set --engine-path", NULL);
    if (n > AGENT_REPORT_MAX_ENGINES)
        log_warn("more engine binaries than the protocol can report; cairnd hears of the first",
                 "found=%zu reported=%d", n, AGENT_REPORT_MAX_ENGINES);
    a->engines = agent_report_engines(bins, n);
    agent_report_changed(a);
    return true;
}

/* The installed binary for an engine and line, or NULL. */
static const struct engine_binary *find_binary(const struct agent *a, enum engine_kind kind,
                                               const char *line)
{
    for (size_t i = 0; i < a->n_bins; i++) {
        if (a->bins[i].kind == kind && strcmp(a->bins[i].line, line) == 0)
            return &a->bins[i];
    }
    return NULL;
}

/* Whether exe (resolved) is one of the engine binaries, or the binary the
 * node was started from. */
static bool is_engine_exe(const struct agent *a, const struct agent_node *n, const char *exe)
{
    char real[PATH_MAX];

    for (size_t i = 0; i < a->n_bins; i++) {
        if (a->bin_real[i] != NULL && strcmp(a->bin_real[i], exe) == 0)
            return true;
    }
    return n->has_run && realpath(n->run.binary, real) != NULL && strcmp(real, exe) == 0;
}

/* ---- node.json: what runs ---------------------------------------------- */

/* How the last process ended, by enum agent_exit: kept in node.json so a
 * restarted agent still honours the restart policy (an engine shut down on
 * purpose under on-failure stays down). */
static const char *const exit_names[] = {"none", "clean", "failure"};

static bool save_run(const struct agent_node *n, char *err, size_t errsize)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s?, s:s?, s:s, s:s?}", "engine",
                          engine_kind_name(n->run.kind), "version", n->run.version, "line",
                          n->run.line, "port", n->run.port, "binary", n->run.binary, "password",
                          n->run.password, "user", n->run.admin ? ENGINE_ADMIN_USER : NULL,
                          "last_exit", exit_names[n->last_exit], "spec", n->run.spec);
    char *text = j != NULL ? json_dumps(j, JSON_INDENT(2)) : NULL;
    bool ok;

    if (text == NULL) {
        fprintf(stderr, "cairn-agent: out of memory encoding node.json\n");
        abort();
    }
    ok = agent_files_write_atomic(n->run_path, text, strlen(text), 0600, err, errsize);
    free(text);
    json_decref(j);
    return ok;
}

static bool load_run(struct agent_node *n)
{
    char *text = agent_files_read(n->run_path, 64 * 1024, NULL);
    json_t *j = text != NULL ? json_loads(text, 0, NULL) : NULL;
    const char *engine = json_string_value(json_object_get(j, "engine"));
    const char *version = json_string_value(json_object_get(j, "version"));
    const char *line = json_string_value(json_object_get(j, "line"));
    const char *binary = json_string_value(json_object_get(j, "binary"));
    const char *password = json_string_value(json_object_get(j, "password"));
    const char *last_exit = json_string_value(json_object_get(j, "last_exit"));
    const char *spec = json_string_value(json_object_get(j, "spec"));
    json_int_t port = json_integer_value(json_object_get(j, "port"));
    bool ok = engine != NULL && version != NULL && line != NULL && binary != NULL &&
              engine_kind_from_name(engine, &n->run.kind) && port > 0 && port < 65536 &&
              strlen(version) < sizeof(n->run.version) && strlen(line) < sizeof(n->run.line);

    if (ok) {
        strcpy(n->run.version, version);
        strcpy(n->run.line, line);
        n->run.port = (int)port;
        n->run.binary = xstrdup(binary);
        n->run.password = password != NULL ? xstrdup(password) : NULL;
        n->run.admin = json_is_string(json_object_get(j, "user"));
        n->run.spec = spec != NULL ? xstrdup(spec) : NULL;
        n->has_run = true;
        for (int i = 0; last_exit != NULL && i < 3; i++) {
            if (strcmp(last_exit, exit_names[i]) == 0)
                n->last_exit = (enum agent_exit)i;
        }
        n->state = n->last_exit == AGENT_EXIT_FAILURE ? AGENT_NODE_CRASHED : AGENT_NODE_STOPPED;
    }
    json_decref(j);
    free(text);
    return ok;
}

/* ---- transit encryption ------------------------------------------------ */

/* The "tls" object of a desired config ({"cert", "key", "ca"}), or NULL
 * for a node of a cluster without transit encryption. */
static const json_t *config_tls(const json_t *cfg)
{
    const json_t *tls = json_object_get(cfg, "tls");
    return json_is_object(tls) ? tls : NULL;
}

/* What the agent's connections to n's engine check its certificate by,
 * from its desired entry or, before that is known (an engine adopted at the
 * agent's start), the entry its process was started from; NULL for plain
 * TCP. */
static const struct resp_tls *engine_tls(struct agent *a, const struct agent_node *n)
{
    json_t *started =
        !n->wanted && n->has_run && n->run.spec != NULL ? json_loads(n->run.spec, 0, NULL) : NULL;
    const json_t *cfg = n->wanted ? n->want.config : json_object_get(started, "config");
    const char *ca = json_string_value(json_object_get(config_tls(cfg), "ca"));
    char err[256];

    if (ca != NULL && a->engine_tls == NULL &&
        (a->engine_tls = resp_tls_new(ca, err, sizeof(err))) == NULL)
        log_error("the desired set's certificate authority is unusable", "node=%s error=\"%s\"",
                  n->id, err);
    json_decref(started);
    return ca != NULL ? a->engine_tls : NULL;
}

/* Point spec at n's TLS files when cfg (the desired config it is rendered
 * from) has transit encryption. */
static void tls_paths(const struct agent_node *n, const json_t *cfg,
                      struct engine_config_spec *spec)
{
    if (config_tls(cfg) == NULL)
        return;
    spec->tls_cert_file = n->tls_cert_path;
    spec->tls_key_file = n->tls_key_path;
    spec->tls_ca_file = n->tls_ca_path;
}

/* Write the certificate, key and authority of the desired config into n's
 * directory (nothing without transit encryption), readable by the engine
 * and no one else. */
static bool write_tls(const struct agent *a, const struct agent_node *n, char *err, size_t errsize)
{
    const json_t *tls = config_tls(n->want.config);
    const char *texts[3] = {json_string_value(json_object_get(tls, "cert")),
                            json_string_value(json_object_get(tls, "key")),
                            json_string_value(json_object_get(tls, "ca"))};
    const char *paths[3] = {n->tls_cert_path, n->tls_key_path, n->tls_ca_path};
    const struct agent_proc_user *u = &a->engine_user;

    if (tls == NULL)
        return true;
    for (int i = 0; i < 3; i++) {
        if (texts[i] == NULL) {
            snprintf(err, errsize, "the desired config has transit encryption but no %s",
                     i == 0   ? "certificate"
                     : i == 1 ? "key"
                              : "certificate authority");
            return false;
        }
        if (!agent_files_write_atomic(paths[i], texts[i], strlen(texts[i]), 0600, err, errsize))
            return false;
        if (u->switch_user &&
            (chown(paths[i], geteuid(), u->gid) != 0 || chmod(paths[i], 0640) != 0)) {
            snprintf(err, errsize, "could not open \"%s\" to the engine user: %s", paths[i],
                     strerror(errno));
            return false;
        }
    }
    return true;
}

/* ---- health ------------------------------------------------------------ */

static void watch_health(struct agent *a, struct agent_node *n, int64_t now_us)
{
    n->tls = engine_tls(a, n);
    agent_pinger_free(n->pinger);
    n->pinger = agent_pinger_new(a->cfg->address, n->run.port, agent_run_user(&n->run),
                                 n->run.password, n->tls);
    agent_pinger_set_interval(n->pinger,
                              n->state == AGENT_NODE_STARTING ? AGENT_PING_STARTING_INTERVAL_US
                                                              : AGENT_PING_INTERVAL_US,
                              now_us);
    memset(&n->seen, 0, sizeof(n->seen));
    n->users_set = false;
    agent_telemetry_new_process(n);
}

/* Whether INFO changed something cairnd acts on. The replication offset
 * moves all the time and rides along with the next sync instead. */
static bool observed_news(const struct agent_observed *a, const struct agent_observed *b)
{
    return a->valid != b->valid || a->replica != b->replica || a->link_up != b->link_up ||
           a->loading != b->loading || a->sync_in_progress != b->sync_in_progress ||
           strcmp(a->version, b->version) != 0;
}

static void stop_engine(struct agent_node *n, int64_t now_us);

/* The engine answers but refuses the agent's login: Cairn's own user was
 * changed behind its back (someone holding its password; a tenant cannot).
 * Nothing can put the user back over a connection that cannot log in, so
 * after AGENT_LOGIN_REFUSALS_MAX refusals of the pinger's in a row (a
 * second apart), or at once when the users' repair was refused (certain:
 * its digest saw them change), the agent restarts the engine, from a
 * config file rendered afresh, which has Cairn's users as they should be
 * (EngineLoginRepaired). The pinger's own connection, logged in before the
 * change, may never be refused. */
static void login_refused(struct agent *a, struct agent_node *n, bool certain, int64_t now_us)
{
    if (n->stopping || (++n->login_refusals < AGENT_LOGIN_REFUSALS_MAX && !certain))
        return;
    n->login_refusals = 0;
    n->login_repairs++;
    agent_report_changed(a);
    log_warn("the engine refuses Cairn's login: its users were changed behind Cairn's back; "
             "restarting it from its config file",
             "node=%s pid=%d repairs=%u", n->id, (int)n->pid, n->login_repairs);
    stop_engine(n, now_us);
}

static void on_probe(struct agent *a, struct agent_node *n, const struct agent_observed *before,
                     const struct agent_pinger_result *res, int64_t now_us)
{
    if (res->commands != NULL)
        agent_telemetry_on_commands(n, res->commands);
    if (res->metrics != NULL)
        agent_telemetry_on_info(a, n, res->metrics, now_us);
    if (res->observed && observed_news(before, &n->seen))
        agent_report_changed(a);
    if (!res->probed || n->pid == 0)
        return;
    if (res->probe == AGENT_PROBE_REFUSED) {
        login_refused(a, n, false, now_us);
        return;
    }
    n->login_refusals = 0;
    /* An answer on the node's port proves nothing until INFO says it came
     * from this node's process: a leftover engine may hold the port while
     * the one just started fails to bind it. */
    if (res->probe != AGENT_PROBE_FAILED && n->seen.process_id != n->pid)
        return;
    enum agent_node_state next = agent_converge_probe(n->state, res->probe, now_us - n->started_us);
    if (next == n->state)
        return;
    if (n->state == AGENT_NODE_STARTING)
        agent_pinger_set_interval(n->pinger, AGENT_PING_INTERVAL_US, now_us);
    if (next == AGENT_NODE_UNRESPONSIVE)
        log_warn("engine unresponsive", "node=%s pid=%d port=%d", n->id, (int)n->pid, n->run.port);
    set_state(a, n, next, now_us);
}

/* ---- a replica's primary, watched from here ---------------------------- */

/* With cluster mode disabled, the primary cairnd designates for n's group:
 * its desired config names it (replicaof) while n is to be a replica. */
static bool designated_primary(const struct agent_node *n, const char **host, int *port)
{
    const json_t *of = json_object_get(n->want.config, "replicaof");
    json_int_t p = json_integer_value(json_object_get(of, "port"));

    *host = json_string_value(json_object_get(of, "address"));
    *port = (int)p;
    return *host != NULL && p > 0 && p < 65536;
}

/* The primary the INFO of n's very process says it follows. */
static bool followed_primary(const struct agent_node *n, const char **host, int *port)
{
    const struct agent_observed *s = &n->seen;

    *host = s->master_host;
    *port = s->master_port;
    return s->valid && s->process_id == n->pid && s->replica && s->master_port != 0;
}

/* The primary n's watch should PING while n's engine runs and is not being
 * stopped. With cluster mode disabled it is the one cairnd designates,
 * whose hosts cairnd asks the vantage points about: the watch moves the
 * moment a failover's desired set arrives, rather than at the replica's
 * next INFO (up to 2 s later), and a designated primary watches nothing.
 * In cluster mode the engines choose: the one the replica follows. Only an
 * address: a name would be resolved, blocking the loop. */
static bool primary_to_watch(const struct agent_node *n, const char **host, int *port)
{
    /* A node cairnd has not described yet: only its engine can tell. */
    bool designated =
        n->wanted && !json_is_true(json_object_get(n->want.config, "cluster_enabled"));

    if (n->pid == 0 || n->stopping)
        return false;
    if (!(designated ? designated_primary(n, host, port) : followed_primary(n, host, port)))
        return false;
    return resp_host_is_address(*host);
}

static void unwatch_primary(struct agent *a, struct agent_node *n)
{
    log_debug("primary no longer watched", "node=%s", n->id);
    agent_watch_free(n->watch);
    n->watch = NULL;
    /* cairnd was told of a silence that the next report no longer shows. */
    if (n->primary_silent)
        agent_report_changed(a);
    n->primary_silent = false;
}

/* Give n the watch it should have now: none, or one of the primary it
 * follows (a failover names another). */
static void follow_primary(struct agent *a, struct agent_node *n, int64_t now_us)
{
    const char *host = NULL;
    int port = 0;
    bool want = primary_to_watch(n, &host, &port);

    if (n->watch != NULL && (!want || !agent_watch_is(n->watch, host, port)))
        unwatch_primary(a, n);
    if (!want || n->watch != NULL)
        return;
    n->watch =
        agent_watch_new(host, port, agent_run_user(&n->run), n->run.password, engine_tls(a, n));
    agent_watch_began(&n->heard, now_us); /* until the first answer, silence counts from here */
    log_info("watching the replica's primary", "node=%s primary=%s:%d", n->id, host, port);
}

/* Tell cairnd at once (a fresh sync) when n's primary has just been silent
 * for AGENT_WATCH_SILENT_MS, or answers again after that; ended_ms is the
 * silence an answer at now_us has just ended, for the log. */
static void primary_news(struct agent *a, struct agent_node *n, int64_t now_us, long long ended_ms)
{
    long long silent_ms = agent_watch_silent_ms(&n->heard, now_us);

    switch (agent_watch_news(n->primary_silent, silent_ms)) {
    case AGENT_WATCH_NEWS_NONE:
        return;
    case AGENT_WATCH_NEWS_SILENT:
        log_info("primary not answering", "node=%s silent_ms=%lld", n->id, silent_ms);
        n->primary_silent = true;
        break;
    case AGENT_WATCH_NEWS_ANSWERING:
        log_info("primary answering again", "node=%s silent_ms=%lld", n->id, ended_ms);
        n->primary_silent = false;
        break;
    }
    agent_report_changed(a);
}

/* Keep n's watch in step with its engine, PING when due, and see whether
 * the silence has become news. */
static void watch_tick(struct agent *a, struct agent_node *n, int64_t now_us)
{
    follow_primary(a, n, now_us);
    if (n->watch == NULL)
        return;
    if (now_us >= agent_watch_next_us(n->watch) && agent_watch_tick(n->watch, now_us))
        agent_watch_asked(&n->heard, now_us);
    primary_news(a, n, now_us, 0);
}

static void on_primary_answer(struct agent *a, struct agent_node *n, int64_t now_us)
{
    long long ended_ms = agent_watch_silent_ms(&n->heard, now_us);

    agent_watch_answered(&n->heard, now_us);
    primary_news(a, n, now_us, ended_ms);
}

/* ---- a replica's primary, as designated --------------------------------- */

/* How long a replica may follow another primary than the designated one
 * before its agent repoints it: five INFO periods. cairnd repoints the
 * replicas itself within milliseconds of a failover, and an operation
 * that moves the primary within seconds; this is for when nobody did. */
#define AGENT_ASTRAY_US (5 * AGENT_INFO_INTERVAL_US)

static bool same_primary(const char *host, int port, const char *other_host, int other_port)
{
    return port == other_port && strcmp(host, other_host) == 0;
}

/* A blocking connection to n's engine as user (NULL: default), with
 * timeout_ms to connect and to answer each command: the agent's loop
 * waits meanwhile. */
static struct resp_conn *connect_engine(struct agent *a, const struct agent_node *n,
                                        const char *user, const char *password, int timeout_ms,
                                        bool *refused, char *err, size_t errsize)
{
    struct resp_options o = {.host = a->cfg->address,
                             .port = n->run.port,
                             .connect_timeout_ms = timeout_ms,
                             .command_timeout_ms = timeout_ms,
                             .username = user,
                             .password = password,
                             .tls = engine_tls(a, n)};
    return resp_connect_login(&o, refused, err, errsize);
}

/* With cluster mode disabled, a replica whose engine has followed another
 * primary than the designated one for AGENT_ASTRAY_US is told to follow
 * the designated one. Its desired config is the designation (a node that
 * restarts follows it anyway); this is for an engine that keeps running
 * while the designation moved without it hearing: a cairnd killed between
 * a failover's promotion and its REPLICAOF to the other replicas, or that
 * REPLICAOF lost on the way, would leave it following the old primary, a
 * replica itself by then, for ever. Tried again every AGENT_ASTRAY_US
 * while it still follows the wrong one; each repoint is counted in the
 * report (ReplicaRepointed). */
static void keep_following(struct agent *a, struct agent_node *n, int64_t now_us)
{
    const char *want_host, *host;
    int want_port, port;
    bool designated =
        n->wanted && !json_is_true(json_object_get(n->want.config, "cluster_enabled"));

    if (!designated || n->state != AGENT_NODE_RUNNING || n->stopping ||
        !designated_primary(n, &want_host, &want_port) || !followed_primary(n, &host, &port) ||
        same_primary(host, port, want_host, want_port)) {
        n->astray_since_us = 0;
        return;
    }
    if (n->astray_since_us == 0)
        n->astray_since_us = now_us;
    if (now_us - n->astray_since_us < AGENT_ASTRAY_US)
        return;
    n->astray_since_us = now_us;

    char err[256] = "";
    struct resp_conn *c =
        connect_engine(a, n, agent_run_user(&n->run), n->run.password, 500, NULL, err, sizeof(err));
    bool ok = c != NULL && engine_replicaof(c, want_host, want_port, err, sizeof(err));
    resp_close(c);
    if (ok) {
        n->repoints++;
        agent_report_changed(a);
        log_warn("replica followed another primary than the designated one; repointed",
                 "node=%s followed=%s:%d primary=%s:%d", n->id, host, port, want_host, want_port);
    } else {
        log_warn("could not repoint a replica to the designated primary",
                 "node=%s followed=%s:%d primary=%s:%d error=\"%s\"", n->id, host, port, want_host,
                 want_port, err);
    }
}

/* ---- start, stop, exit, remove ----------------------------------------- */

/* Copy the desired config object into spec; strings stay borrowed from
 * the JSON, parameter arrays are allocated into *params (free it). */
static bool spec_from_config(const json_t *cfg, struct engine_config_spec *spec,
                             struct engine_config_param **params, char **texts, char *err,
                             size_t errsize)
{
    const json_t *v;
    const char *key;
    size_t i = 0;

    if ((v = json_object_get(cfg, "memory_mib")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            snprintf(err, errsize, "config.memory_mib is not a positive integer");
            return false;
        }
        spec->memory_mib = (uint64_t)json_integer_value(v);
    }
    if (json_is_integer(v = json_object_get(cfg, "reserved_memory_percent")))
        spec->reserved_memory_percent = (int)json_integer_value(v);
    if (json_is_string(v = json_object_get(cfg, "maxmemory_policy")))
        spec->maxmemory_policy = json_string_value(v);
    if (json_is_boolean(v = json_object_get(cfg, "appendonly")))
        spec->appendonly = json_is_true(v);
    if (json_is_boolean(v = json_object_get(cfg, "cluster_enabled")))
        spec->cluster_enabled = json_is_true(v);
    if (json_is_integer(v = json_object_get(cfg, "cluster_node_timeout_ms")))
        spec->cluster_node_timeout_ms = (int)json_integer_value(v);
    if (json_is_string(v = json_object_get(cfg, "password")))
        spec->password = json_string_value(v);
    if (json_is_string(v = json_object_get(cfg, "previous_password")))
        spec->previous_password = json_string_value(v);
    if (json_is_string(v = json_object_get(cfg, "admin_password")))
        spec->admin_password = json_string_value(v);
    if (json_is_string(v = json_object_get(cfg, "replication_password")))
        spec->replication_password = json_string_value(v);
    const json_t *of = json_object_get(cfg, "replicaof");
    if (json_is_object(of)) {
        spec->replicaof_host = json_string_value(json_object_get(of, "address"));
        spec->replicaof_port = (int)json_integer_value(json_object_get(of, "port"));
        if (spec->replicaof_host == NULL) {
            snprintf(err, errsize, "config.replicaof.address is not a string");
            return false;
        }
    }
    const json_t *obj = json_object_get(cfg, "parameters");
    if (!json_is_object(obj))
        return true;
    *params = xcalloc(json_object_size(obj), sizeof(**params));
    json_object_foreach ((json_t *)obj, key, v) {
        (*params)[i].name = key;
        if (json_is_string(v)) {
            (*params)[i].value = json_string_value(v);
        } else if (json_is_integer(v)) {
            texts[i] = xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
            (*params)[i].value = texts[i];
        } else {
            snprintf(err, errsize, "config.parameters.%s is not a string", key);
            return false;
        }
        i++;
    }
    spec->params = *params;
    spec->n_params = i;
    return true;
}

/* The spec n's engine is rendered from, for a process of kind, line and
 * port on cfg (a desired config): what every render and its checks share.
 * Strings stay borrowed; the parameter arrays are the struct's own. */
struct node_spec {
    struct engine_config_spec spec;
    struct engine_config_param *params;
    char **texts;
    size_t n_texts;
};

static bool node_spec_make(const struct agent *a, const struct agent_node *n, enum engine_kind kind,
                           const char *line, int port, const json_t *cfg, struct node_spec *out,
                           char *err, size_t errsize)
{
    const json_t *parameters = json_object_get(cfg, "parameters");

    out->params = NULL;
    out->n_texts = json_is_object(parameters) ? json_object_size(parameters) : 0;
    out->texts = xcalloc(out->n_texts + 1, sizeof(*out->texts));
    engine_config_defaults(&out->spec);
    out->spec.kind = kind;
    out->spec.line = line;
    out->spec.node_id = n->id;
    out->spec.port = port;
    out->spec.bind = a->cfg->address;
    out->spec.data_dir = n->data_dir;
    /* An engine run as another user cannot write in the node's directory;
     * the agent writes the pidfile for it. */
    out->spec.pidfile = a->engine_user.switch_user ? NULL : n->pid_path;
    out->spec.logfile = NULL; /* standard output, which goes to engine.log */
    out->spec.availability_zone = a->cfg->az;
    tls_paths(n, cfg, &out->spec);
    if (json_is_object(cfg))
        return spec_from_config(cfg, &out->spec, &out->params, out->texts, err, errsize);
    snprintf(err, errsize, "the node's config is not an object");
    return false;
}

static void node_spec_free(struct node_spec *s)
{
    free(s->params);
    for (size_t i = 0; i < s->n_texts; i++)
        free(s->texts[i]);
    free(s->texts);
}

/* Render the engine's config file for the desired node into its directory. */
static bool write_config(struct agent *a, struct agent_node *n, char *err, size_t errsize)
{
    struct node_spec s;
    char *text = NULL;
    bool ok = false;

    if (node_spec_make(a, n, n->want.kind, n->want.line, n->want.port, n->want.config, &s, err,
                       errsize) &&
        write_tls(a, n, err, errsize)) {
        text = engine_config_render(&s.spec, err, errsize);
        ok = text != NULL &&
             agent_files_write_atomic(n->conf_path, text, strlen(text), 0600, err, errsize);
    }
    free(text);
    node_spec_free(&s);
    return ok;
}

/* Before a cluster-mode engine loads nodes.conf: replicas' lines made to
 * carry their primaries' shard ids (engine_nodes_conf_heal()), or Valkey
 * 8.0 would refuse to start at all. The file is the engine's; only that
 * field changes, atomically. */
static void heal_nodes_conf(const struct agent_node *n)
{
    if (!json_is_true(json_object_get(n->want.config, "cluster_enabled")))
        return;
    char *path = xasprintf("%s/nodes.conf", n->data_dir), err[256];
    size_t len = 0, healed = 0;
    char *text = agent_files_read(path, 16 << 20, &len);
    char *fixed = text != NULL ? engine_nodes_conf_heal(text, len, &healed) : NULL;
    if (fixed != NULL) {
        if (agent_files_write_atomic(path, fixed, len, 0600, err, sizeof(err)))
            log_warn("nodes.conf: replicas given their primaries' shard ids", "node=%s lines=%zu",
                     n->id, healed);
        else
            log_warn("could not heal nodes.conf", "node=%s error=\"%s\"", n->id, err);
    }
    free(fixed);
    free(text);
    free(path);
}

/* An engine run as another user owns its data directory (what an engine
 * of the agent's user left there included) and may read its configuration
 * and pass through the node's directory, both the agent's: it can change
 * neither, nor read node.json, the agent's login. */
static bool open_to_engine(const struct agent *a, const struct agent_node *n, char *err,
                           size_t errsize)
{
    const struct agent_proc_user *u = &a->engine_user;

    if (!u->switch_user)
        return true;
    if (chown(n->dir, geteuid(), u->gid) != 0 || chmod(n->dir, 0750) != 0 ||
        chown(n->conf_path, geteuid(), u->gid) != 0 || chmod(n->conf_path, 0640) != 0) {
        snprintf(err, errsize, "could not open \"%s\" to the engine user: %s", n->dir,
                 strerror(errno));
        return false;
    }
    return agent_files_chown_tree(n->data_dir, u->uid, u->gid, err, errsize);
}

static bool start_engine(struct agent *a, struct agent_node *n, int64_t now_us, char *err,
                         size_t errsize)
{
    const struct engine_binary *bin = find_binary(a, n->want.kind, n->want.line);
    const char *admin = json_string_value(json_object_get(n->want.config, "admin_password"));
    const char *password =
        admin != NULL ? admin : json_string_value(json_object_get(n->want.config, "password"));
    char why[256];

    if (!agent_files_mkdirs(n->data_dir, 0700, err, errsize) || !write_config(a, n, err, errsize))
        return false;
    clear_run(n);
    n->run.kind = bin->kind;
    snprintf(n->run.version, sizeof(n->run.version), "%s", bin->version);
    snprintf(n->run.line, sizeof(n->run.line), "%s", bin->line);
    n->run.port = n->want.port;
    n->run.binary = xstrdup(bin->path);
    n->run.password = password != NULL && password[0] ? xstrdup(password) : NULL;
    n->run.admin = admin != NULL;
    n->run.spec = xstrdup(n->want.spec);
    n->has_run = true;
    if (!save_run(n, err, errsize))
        return false;
    heal_nodes_conf(n);
    if (!open_to_engine(a, n, err, errsize) ||
        !agent_proc_spawn(bin->path, n->conf_path, n->log_path, &a->engine_user, &n->pid, &n->pidfd,
                          err, errsize))
        return false;
    /* The engine writes the pidfile too, but only once it has started. */
    if (!agent_proc_write_pidfile(n->pid_path, n->pid, why, sizeof(why)))
        log_warn("could not write pidfile", "node=%s error=\"%s\"", n->id, why);
    n->child = true;
    n->stopping = n->killed = false;
    n->started_us = now_us;
    n->healthy_since_us = 0;
    log_info("engine started", "node=%s pid=%d engine=%s version=%s port=%d", n->id, (int)n->pid,
             engine_kind_name(bin->kind), bin->version, n->run.port);
    set_state(a, n, AGENT_NODE_STARTING, now_us);
    watch_health(a, n, now_us);
    return true;
}

static void stop_engine(struct agent_node *n, int64_t now_us)
{
    log_info("stopping engine", "node=%s pid=%d", n->id, (int)n->pid);
    n->stopping = true;
    n->killed = false;
    n->stop_deadline_us = now_us + AGENT_STOP_DEADLINE_US;
    if (!agent_proc_signal(n->pidfd, SIGTERM))
        log_debug("engine already gone", "node=%s pid=%d", n->id, (int)n->pid);
}

/* SIGKILL the engine's process group; why says so in the log. */
static void kill_engine(struct agent_node *n, const char *why)
{
    log_warn(why, "node=%s pid=%d", n->id, (int)n->pid);
    n->killed = true;
    if (getpgid(n->pid) == n->pid && !agent_proc_exited(n->pidfd))
        agent_proc_signal_group(n->pid, SIGKILL);
    else
        agent_proc_signal(n->pidfd, SIGKILL);
}

static void converge(struct agent *a, struct agent_node *n, int64_t now_us);

static bool holds_after_crash(const struct agent_desired_node *d)
{
    return json_is_true(json_object_get(d->config, "hold_after_crash"));
}

/* The process of n has ended (status known only for children). */
static void on_exit_of(struct agent *a, struct agent_node *n, bool have_status, int wstatus,
                       int64_t now_us)
{
    char how[64], why[512];
    enum agent_exit kind = have_status ? agent_proc_exit_kind(wstatus) : AGENT_EXIT_FAILURE;

    if (!have_status)
        snprintf(how, sizeof(how), "unknown (not our child)");
    else
        agent_proc_describe(wstatus, how, sizeof(how));
    close(n->pidfd);
    n->pidfd = -1;
    /* An engine killed from outside leaves its fork children behind (an
     * AOF rewrite, a snapshot for a replica) in its process group, and one
     * of them still holds nodes.conf's lock and the data files: the engine
     * could not start again until it ends. Nothing needs them now. */
    agent_proc_signal_group(n->pid, SIGKILL);
    agent_pinger_free(n->pinger);
    n->pinger = NULL;
    (void)unlink(n->pid_path);
    if (n->stopping) {
        log_info("engine stopped", "node=%s pid=%d how=\"%s\"", n->id, (int)n->pid, how);
        n->last_exit = AGENT_EXIT_NONE;
        n->pid = 0;
        n->stopping = false;
        set_state(a, n, AGENT_NODE_STOPPED, now_us);
    } else {
        n->attempts = agent_converge_attempts_after(n->attempts, n->healthy_since_us, now_us);
        n->restart_at_us = now_us + agent_converge_backoff_us(n->attempts);
        n->attempts++;
        n->last_exit = kind;
        if (kind == AGENT_EXIT_FAILURE && n->wanted && holds_after_crash(&n->want))
            log_warn("primary engine exited; held down until cairnd fails over",
                     "node=%s pid=%d how=\"%s\"", n->id, (int)n->pid, how);
        else
            log_warn("engine exited", "node=%s pid=%d how=\"%s\" backoff_ms=%lld", n->id,
                     (int)n->pid, how, (long long)(n->restart_at_us - now_us) / 1000);
        n->pid = 0;
        set_state(a, n, kind == AGENT_EXIT_CLEAN ? AGENT_NODE_STOPPED : AGENT_NODE_CRASHED, now_us);
    }
    if (!save_run(n, why, sizeof(why)))
        log_warn("could not record the exit", "node=%s error=\"%s\"", n->id, why);
    converge(a, n, now_us);
}

/* ---- convergence ------------------------------------------------------- */

static void converge(struct agent *a, struct agent_node *n, int64_t now_us)
{
    struct agent_facts f = {
        .wanted = n->wanted,
        .run = n->wanted && n->want.run,
        .deleted = n->wanted && n->want.deleted,
        .policy = n->want.policy,
        .hold_after_crash = n->wanted && holds_after_crash(&n->want),
        .startable = n->wanted && find_binary(a, n->want.kind, n->want.line) != NULL,
        .alive = n->pid != 0,
        .stopping = n->stopping,
        .mismatch = n->wanted && n->has_run &&
                    (n->run.kind != n->want.kind || strcmp(n->run.line, n->want.line) != 0 ||
                     n->run.port != n->want.port),
        .last_exit = n->last_exit,
        .restart_at_us = n->restart_at_us,
        .now_us = now_us,
    };
    char err[512];
    int64_t wake = 0;

    n->wake_us = 0;
    if (n->wanted && f.run && !f.deleted && !f.startable && !n->warned_unstartable) {
        log_warn("no binary installed for the desired engine", "node=%s engine=%s version=%s",
                 n->id, engine_kind_name(n->want.kind), n->want.line);
        n->warned_unstartable = true;
    }
    switch (agent_converge_decide(&f, &wake)) {
    case AGENT_ACT_NONE:
        break;
    case AGENT_ACT_WAIT:
        n->wake_us = wake;
        break;
    case AGENT_ACT_START:
        if (n->last_exit != AGENT_EXIT_NONE)
            n->restarts++;
        n->last_exit = AGENT_EXIT_NONE;
        if (!start_engine(a, n, now_us, err, sizeof(err))) {
            log_error("could not start engine", "node=%s error=\"%s\"", n->id, err);
            n->pid = 0;
            n->restart_at_us = now_us + agent_converge_backoff_us(n->attempts++);
            n->last_exit = AGENT_EXIT_FAILURE;
            n->wake_us = n->restart_at_us;
            set_state(a, n, AGENT_NODE_CRASHED, now_us);
        }
        break;
    case AGENT_ACT_STOP:
        if (f.mismatch && f.run && !f.deleted)
            log_info("engine changes version or port; restarting it",
                     "node=%s from=%s/%s:%d "
                     "to=%s/%s:%d",
                     n->id, engine_kind_name(n->run.kind), n->run.line, n->run.port,
                     engine_kind_name(n->want.kind), n->want.line, n->want.port);
        stop_engine(n, now_us);
        /* Its data is about to be removed: nothing to save, and an engine
         * busy writing its first AOF would refuse SIGTERM until done. */
        if (f.deleted)
            kill_engine(n, "node deleted; killing its engine at once");
        break;
    case AGENT_ACT_REMOVE:
        if (!agent_files_remove_tree(n->dir, err, sizeof(err))) {
            log_error("could not remove node directory", "node=%s error=\"%s\"", n->id, err);
            break;
        }
        log_info("node removed", "node=%s", n->id);
        drop_node(a, n);
        agent_report_changed(a);
        break;
    }
}

/* Whether two desired configs give the engine the same users. */
static bool same_users(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"password", "previous_password", "admin_password",
                                       "replication_password", "users"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])) &&
            (json_object_get(a, keys[i]) != NULL || json_object_get(b, keys[i]) != NULL))
            return false;
    }
    return true;
}

void agent_sup_apply(struct agent *a, int64_t now_us)
{
    struct stat st;

    for (size_t i = 0; i < a->desired.n_nodes; i++) {
        const struct agent_desired_node *d = &a->desired.nodes[i];
        struct agent_node *n = find_node(a, d->node_id);
        if (n == NULL) {
            char *dir = xasprintf("%s/nodes/%s", a->cfg->data_dir, d->node_id);
            bool exists = stat(dir, &st) == 0;
            free(dir);
            if (d->deleted && !exists)
                continue; /* nothing here to delete */
            n = add_node(a, d->node_id);
        }
        /* The instruction the node follows now: its desired entry, or for
         * a node this agent has not been told about yet, the entry its
         * last process was started from (node.json). */
        const char *prev = n->wanted ? n->want.spec : n->has_run ? n->run.spec : NULL;
        bool same = prev != NULL && strcmp(prev, d->spec) == 0;
        if (n->wanted && same)
            continue;
        /* New passwords (an AUTH token rotation) are given to the running
         * engine at once; nothing else about it changes. */
        if (n->wanted && !same_users(n->want.config, d->config))
            n->users_set = false;
        /* So is a new certificate (one renewed before the last ends). */
        const json_t *had = n->wanted ? config_tls(n->want.config) : NULL;
        if (had != NULL && !json_equal(had, config_tls(d->config)) && n->pid != 0)
            n->tls_reload = true;
        if (n->wanted)
            agent_desired_node_clear(&n->want);
        agent_desired_node_copy(&n->want, d);
        n->wanted = true;
        /* A process adopted before its entry was known was probed in plain
         * TCP: its entry may say it serves TLS. */
        if (n->pinger != NULL && n->tls != engine_tls(a, n))
            watch_health(a, n, now_us);
        if (same)
            continue;
        /* A new instruction: earlier exits no longer hold the node back,
         * unless it is a crashed primary that cairnd still wants held. */
        n->attempts = 0;
        n->restart_at_us = 0;
        n->warned_unstartable = false;
        if (n->pid == 0 && !(n->last_exit == AGENT_EXIT_FAILURE && holds_after_crash(d)))
            n->last_exit = AGENT_EXIT_NONE;
    }
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        if (n->wanted && agent_desired_find(&a->desired, n->id) == NULL) {
            agent_desired_node_clear(&n->want);
            n->wanted = false;
        }
    }
    /* converge() may drop a node: walk a snapshot of the ids. */
    size_t count = a->n_nodes;
    char(*ids)[AGENT_NODE_ID_MAX] = xcalloc(count + 1, sizeof(*ids));
    for (size_t i = 0; i < count; i++)
        memcpy(ids[i], a->nodes[i]->id, AGENT_NODE_ID_MAX);
    for (size_t i = 0; i < count; i++) {
        struct agent_node *n = find_node(a, ids[i]);
        if (n != NULL)
            converge(a, n, now_us);
    }
    free(ids);
}

/* ---- discovery and adoption -------------------------------------------- */

/* Check, over a blocking connection, that the engine on the node's port
 * is process pid running from the node's config file. Returns 1 when it
 * is, 0 when it says otherwise, -1 when it does not answer (then it cannot
 * tell). */
static int info_confirms(struct agent *a, struct agent_node *n, pid_t pid, char *why,
                         size_t whysize, struct agent_observed *seen)
{
    struct resp_conn *c =
        connect_engine(a, n, agent_run_user(&n->run), n->run.password, 1000, NULL, why, whysize);
    struct engine_info *info;
    long long ipid = 0, iport = 0;
    int rc;

    if (c == NULL)
        return -1;
    info = resp_info(c, INFO_ADOPT_SECTIONS, why, whysize);
    if (info == NULL) {
        rc = resp_last_error(c) == RESP_ERR_REPLY ? 0 : -1;
        resp_close(c);
        return rc;
    }
    engine_info_get_ll(info, "server", "process_id", &ipid);
    engine_info_get_ll(info, "server", "tcp_port", &iport);
    const char *conf = engine_info_get(info, "server", "config_file");
    rc = ipid == pid && iport == n->run.port && conf != NULL && strcmp(conf, n->conf_path) == 0;
    if (!rc)
        snprintf(why, whysize, "INFO says process_id=%lld tcp_port=%lld config_file=%s", ipid,
                 iport, conf != NULL ? conf : "(none)");
    agent_pinger_observe(info, seen);
    engine_info_free(info);
    resp_close(c);
    return rc;
}

static void adopt(struct agent *a, struct agent_node *n, int64_t now_us)
{
    char exe[PATH_MAX], why[512];
    struct agent_observed seen = {0};
    pid_t pid;
    int pidfd;

    if (!agent_proc_read_pidfile(n->pid_path, &pid))
        return;
    if (!n->has_run) {
        log_warn("not adopting engine: node.json missing", "node=%s pid=%d", n->id, (int)pid);
        return;
    }
    pidfd = agent_proc_pidfd_open(pid);
    if (pidfd < 0) {
        log_info("engine not running", "node=%s stale_pid=%d", n->id, (int)pid);
        (void)unlink(n->pid_path);
        return;
    }
    if (!agent_proc_exe(pid, exe, sizeof(exe)) || !is_engine_exe(a, n, exe) ||
        !agent_proc_runs_in(pid, n->data_dir, n->conf_path)) {
        log_warn("not adopting: pid is not this node's engine", "node=%s pid=%d", n->id, (int)pid);
        close(pidfd);
        (void)unlink(n->pid_path);
        return;
    }
    int rc = info_confirms(a, n, pid, why, sizeof(why), &seen);
    seen.at_us = now_us;
    if (rc == 0) {
        log_warn("not adopting: engine does not confirm", "node=%s pid=%d reason=\"%s\"", n->id,
                 (int)pid, why);
        close(pidfd);
        return;
    }
    n->pid = pid;
    n->pidfd = pidfd;
    n->child = false;
    n->started_us = now_us;
    if (seen.version[0] != '\0')
        snprintf(n->run.version, sizeof(n->run.version), "%s", seen.version);
    /* /proc already shows it is the engine in this node's directory: one
     * that does not answer now is adopted as unresponsive, not restarted. */
    n->state = rc != 1        ? AGENT_NODE_UNRESPONSIVE
               : seen.loading ? AGENT_NODE_LOADING
                              : AGENT_NODE_RUNNING;
    n->healthy_since_us = rc == 1 ? now_us : 0;
    log_info("engine adopted", "node=%s pid=%d port=%d state=%s", n->id, (int)pid, n->run.port,
             agent_converge_state_name(n->state));
    watch_health(a, n, now_us);
    n->seen = seen;
}

void agent_sup_discover(struct agent *a, int64_t now_us)
{
    char *root = xasprintf("%s/nodes", a->cfg->data_dir);
    DIR *d = opendir(root);
    struct dirent *e;

    if (d == NULL) {
        if (errno != ENOENT)
            log_error("could not open nodes directory", "path=\"%s\" error=\"%s\"", root,
                      strerror(errno));
        free(root);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (!agent_desired_valid_id(e->d_name) || find_node(a, e->d_name) != NULL)
            continue;
        struct agent_node *n = add_node(a, e->d_name);
        load_run(n);
        adopt(a, n, now_us);
    }
    closedir(d);
    free(root);
    agent_report_changed(a);
}

/* ---- Cairn's engine users ---------------------------------------------- */

#define USERS_RETRY_US 5000000LL

/* The tenant users of a desired config ("users": [{"name",
 * "password_hashes", "access_string"}]), borrowed from it; entries of
 * another shape are skipped. The caller frees the array. */
static struct engine_tenant_user *tenant_users(const json_t *list, size_t *n)
{
    struct engine_tenant_user *out = xcalloc(json_array_size(list) + 1, sizeof(*out));
    const json_t *u;
    size_t i;

    *n = 0;
    json_array_foreach (list, i, u) {
        const json_t *hashes = json_object_get(u, "password_hashes");
        struct engine_tenant_user *t = &out[*n];
        t->name = json_string_value(json_object_get(u, "name"));
        t->access = json_string_value(json_object_get(u, "access_string"));
        t->password_hashes[0] = json_string_value(json_array_get(hashes, 0));
        t->password_hashes[1] = json_string_value(json_array_get(hashes, 1));
        if (t->name != NULL && t->access != NULL && t->password_hashes[0] != NULL)
            (*n)++;
    }
    return out;
}

/* Give the engine the users of its desired config (logged in as the
 * agent is, which may be the default user that loses the right to read
 * them back) and read back, as Cairn's user, the digest of what it then
 * has. */
static bool set_users(struct agent *a, struct agent_node *n, const char *admin, bool *refused,
                      char *err, size_t errsize)
{
    struct engine_config_spec spec;
    const json_t *cfg = n->want.config;

    engine_config_defaults(&spec);
    spec.password = json_string_value(json_object_get(cfg, "password"));
    spec.previous_password = json_string_value(json_object_get(cfg, "previous_password"));
    spec.admin_password = admin;
    spec.replication_password = json_string_value(json_object_get(cfg, "replication_password"));
    if (spec.replication_password == NULL) {
        snprintf(err, errsize, "the desired config has no replication_password");
        return false;
    }
    struct engine_tenant_user *tenants =
        tenant_users(json_object_get(cfg, "users"), &spec.n_tenant_users);
    spec.tenant_users = tenants;
    char warn[256];
    struct resp_conn *c =
        connect_engine(a, n, agent_run_user(&n->run), n->run.password, 1000, refused, err, errsize);
    bool ok = c != NULL && engine_users_apply(c, &spec, warn, sizeof(warn), err, errsize);
    resp_close(c);
    free(tenants);
    if (ok && warn[0] != '\0')
        log_warn("the engine refused a tenant user; the others are set", "node=%s error=\"%s\"",
                 n->id, warn);
    c = ok ? connect_engine(a, n, ENGINE_ADMIN_USER, admin, 1000, refused, err, errsize) : NULL;
    redisReply *r = c != NULL ? resp_command(c, err, errsize, "ACL LIST") : NULL;
    ok = r != NULL && engine_users_digest(r, n->users_digest);
    if (r != NULL && !ok)
        snprintf(err, errsize, "unexpected reply to ACL LIST");
    resp_reply_free(r);
    resp_close(c);
    return ok;
}

/* Log in as Cairn's own user from now on (the engine has it now). */
static void become_admin(struct agent *a, struct agent_node *n, const char *admin, int64_t now_us)
{
    char err[256];

    free(n->run.password);
    n->run.password = xstrdup(admin);
    n->run.admin = true;
    if (!save_run(n, err, sizeof(err)) || !write_config(a, n, err, sizeof(err)))
        log_warn("could not save the engine's new login", "node=%s error=\"%s\"", n->id, err);
    agent_pinger_free(n->pinger);
    n->pinger =
        agent_pinger_new(a->cfg->address, n->run.port, ENGINE_ADMIN_USER, admin, engine_tls(a, n));
    agent_pinger_set_interval(n->pinger, AGENT_PING_INTERVAL_US, now_us);
    agent_watch_free(n->watch); /* both come back with the new login */
    n->watch = NULL;
    agent_upstream_free(n->upstream);
    n->upstream = NULL;
}

/* Cairn's engine users on a running engine. At the agent's first look at
 * a process it sets them (idempotent: the config it was started from says
 * the same) -- which gives them to an engine an older cairnd rendered,
 * whose one password was everyone's, the agent logging in as Cairn's user
 * from then on. After that, an INFO round whose ACL LIST digest differs
 * from the one the agent left is a change made behind Cairn's back (by
 * someone holding Cairn's password: a tenant cannot): the users are set
 * again and the report counts it (EngineUsersRepaired). */
static void keep_users(struct agent *a, struct agent_node *n, int64_t now_us)
{
    const char *admin =
        n->wanted ? json_string_value(json_object_get(n->want.config, "admin_password")) : NULL;
    char err[256] = "";

    if (admin == NULL || n->state != AGENT_NODE_RUNNING || n->stopping || n->pid == 0 ||
        now_us < n->users_retry_us)
        return;
    bool changed = n->users_set && n->seen.has_users && n->seen.process_id == n->pid &&
                   memcmp(n->seen.users_digest, n->users_digest, sizeof(n->users_digest)) != 0;
    if (n->users_set && !changed)
        return;
    bool refused = false;
    if (!set_users(a, n, admin, &refused, err, sizeof(err))) {
        n->users_retry_us = now_us + USERS_RETRY_US;
        log_warn("could not set the engine's users", "node=%s error=\"%s\"", n->id, err);
        if (refused)
            login_refused(a, n, true, now_us);
        return;
    }
    n->users_set = true;
    n->seen.has_users = false; /* the next INFO round reads them afresh */
    if (!n->run.admin) {
        become_admin(a, n, admin, now_us);
        log_info("engine users set up; the agent logs in as Cairn's own user", "node=%s", n->id);
    } else if (changed) {
        n->users_repairs++;
        agent_report_changed(a);
        log_warn("engine users were changed behind Cairn's back; put back", "node=%s repairs=%u",
                 n->id, n->users_repairs);
    }
}

/* ---- a renewed certificate ----------------------------------------------- */

#define TLS_RETRY_US 5000000LL

/* Give a running TLS engine the certificate its desired config now has:
 * the files rewritten, then CONFIG SET of their paths, which makes the
 * engine load them (new connections get the new certificate; open ones
 * keep theirs). */
static void keep_certificate(struct agent *a, struct agent_node *n, int64_t now_us)
{
    char err[256];

    if (!n->tls_reload || n->state != AGENT_NODE_RUNNING || n->stopping || n->pid == 0 ||
        !n->run.admin || now_us < n->tls_retry_us)
        return;
    struct resp_conn *c =
        write_tls(a, n, err, sizeof(err))
            ? connect_engine(a, n, ENGINE_ADMIN_USER, n->run.password, 1000, NULL, err, sizeof(err))
            : NULL;
    redisReply *r = c != NULL ? resp_command(c, err, sizeof(err),
                                             "CONFIG SET tls-cert-file %s tls-key-file %s"
                                             " tls-ca-cert-file %s",
                                             n->tls_cert_path, n->tls_key_path, n->tls_ca_path)
                              : NULL;
    resp_reply_free(r);
    resp_close(c);
    if (r == NULL) {
        n->tls_retry_us = now_us + TLS_RETRY_US;
        log_warn("could not give the engine its new certificate", "node=%s error=\"%s\"", n->id,
                 err);
        return;
    }
    n->tls_reload = false;
    log_info("engine certificate renewed", "node=%s", n->id);
}

/* ---- the guarded settings ----------------------------------------------- */

/* The guarded settings the running process should have: those it was
 * rendered with at its start (a change that waits for a restart still
 * waits), but the maxmemory policy of the desired config, which cairnd
 * changes live. 0 when they cannot be told. */
static size_t expected_settings(const struct agent *a, const struct agent_node *n,
                                struct engine_setting out[ENGINE_GUARDED_MAX])
{
    json_t *entry = n->has_run && n->run.spec != NULL ? json_loads(n->run.spec, 0, NULL) : NULL;
    struct node_spec s;
    size_t count = 0;
    char err[256];

    if (node_spec_make(a, n, n->run.kind, n->run.line, n->run.port,
                       json_object_get(entry, "config"), &s, err, sizeof(err))) {
        const char *policy = json_string_value(json_object_get(n->want.config, "maxmemory_policy"));
        if (n->wanted && policy != NULL)
            s.spec.maxmemory_policy = policy;
        count = engine_config_guarded(&s.spec, out, err, sizeof(err));
    }
    node_spec_free(&s);
    json_decref(entry);
    return count;
}

/* Each INFO round of an engine logged in to as Cairn's user reads the
 * digest of its guarded settings. One that differs from the expected, in
 * two rounds in a row (a change cairnd made itself reaches the desired
 * config within the first), is a change behind Cairn's back: the settings
 * that differ are set back and the report counts it (EngineConfigRepaired). */
static void keep_settings(struct agent *a, struct agent_node *n)
{
    struct engine_setting want[ENGINE_GUARDED_MAX];
    unsigned char digest[CRYPTO_SHA256_LEN];
    char err[256], changed[512];

    if (n->state != AGENT_NODE_RUNNING || n->stopping || n->pid == 0 || !n->run.admin ||
        !n->users_set || !n->seen.has_settings || n->seen.process_id != n->pid ||
        n->seen.at_us == n->settings_seen_us)
        return;
    n->settings_seen_us = n->seen.at_us;
    size_t count = expected_settings(a, n, want);
    engine_guarded_digest(want, count, digest);
    if (count == 0 || memcmp(digest, n->seen.settings_digest, sizeof(digest)) == 0) {
        n->settings_differ_us = 0;
        return;
    }
    if (n->settings_differ_us == 0) {
        n->settings_differ_us = n->seen.at_us;
        return;
    }
    n->settings_differ_us = 0;
    struct resp_conn *c =
        connect_engine(a, n, ENGINE_ADMIN_USER, n->run.password, 1000, NULL, err, sizeof(err));
    int set = c != NULL ? engine_guarded_restore(c, want, count, changed, sizeof(changed), err,
                                                 sizeof(err))
                        : -1;
    resp_close(c);
    if (set < 0) {
        log_warn("could not put the engine's settings back", "node=%s error=\"%s\"", n->id, err);
    } else if (set > 0) {
        n->config_repairs++;
        agent_report_changed(a);
        log_warn("engine settings were changed behind Cairn's back; put back",
                 "node=%s settings=\"%s\" repairs=%u", n->id, changed, n->config_repairs);
    }
    n->seen.has_settings = false; /* the next INFO round reads them afresh */
}

/* ---- the loop's hooks -------------------------------------------------- */

void agent_sup_tick(struct agent *a, int64_t now_us)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        if (n->pid != 0 && n->stopping && !n->killed && now_us >= n->stop_deadline_us)
            kill_engine(n, "engine did not stop in time; killing its process group");
        if (n->pinger != NULL && now_us >= agent_pinger_next_us(n->pinger)) {
            struct agent_pinger_result res = {0};
            struct agent_observed before = n->seen;
            agent_pinger_tick(n->pinger, now_us, &res);
            on_probe(a, n, &before, &res, now_us);
        }
        watch_tick(a, n, now_us);
        keep_following(a, n, now_us);
        keep_users(a, n, now_us);
        keep_settings(a, n);
        keep_certificate(a, n, now_us);
    }
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        if (n->wake_us != 0 && now_us >= n->wake_us) {
            converge(a, n, now_us);
            break; /* the table may have changed; the loop comes back at once */
        }
    }
}

int64_t agent_sup_next_us(const struct agent *a)
{
    int64_t next = INT64_MAX;

    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct agent_node *n = a->nodes[i];
        if (n->wake_us != 0 && n->wake_us < next)
            next = n->wake_us;
        if (n->pid != 0 && n->stopping && !n->killed && n->stop_deadline_us < next)
            next = n->stop_deadline_us;
        if (n->pinger != NULL && agent_pinger_next_us(n->pinger) < next)
            next = agent_pinger_next_us(n->pinger);
        if (n->watch != NULL && agent_watch_next_us(n->watch) < next)
            next = agent_watch_next_us(n->watch);
        /* The moment the primary's silence becomes news, PING or not. */
        if (n->watch != NULL && !n->primary_silent && agent_watch_silent_at_us(&n->heard) < next)
            next = agent_watch_silent_at_us(&n->heard);
    }
    return next;
}

unsigned agent_sup_pollfds(const struct agent *a, struct pollfd *fds)
{
    unsigned k = 0;

    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct agent_node *n = a->nodes[i];
        if (n->pidfd >= 0)
            fds[k++] = (struct pollfd){.fd = n->pidfd, .events = POLLIN};
        int fd = n->pinger != NULL ? agent_pinger_fd(n->pinger) : -1;
        if (fd >= 0)
            fds[k++] = (struct pollfd){.fd = fd, .events = agent_pinger_events(n->pinger)};
        fd = n->watch != NULL ? agent_watch_fd(n->watch) : -1;
        if (fd >= 0)
            fds[k++] = (struct pollfd){.fd = fd, .events = agent_watch_events(n->watch)};
    }
    return k;
}

void agent_sup_ready(struct agent *a, const struct pollfd *fds, unsigned nfds, int64_t now_us)
{
    for (unsigned k = 0; k < nfds; k++) {
        if (fds[k].revents == 0)
            continue;
        /* Look the descriptor up again: handling an earlier one may have
         * closed it, dropped its node, or reused its number. */
        for (size_t i = 0; i < a->n_nodes; i++) {
            struct agent_node *n = a->nodes[i];
            if (n->pidfd == fds[k].fd) {
                int st = 0;
                if (!agent_proc_exited(n->pidfd))
                    break;
                bool have = n->child && agent_proc_reap(n->pid, &st);
                on_exit_of(a, n, have, st, now_us);
                break;
            }
            if (n->pinger != NULL && agent_pinger_fd(n->pinger) == fds[k].fd) {
                struct agent_pinger_result res = {0};
                struct agent_observed before = n->seen;
                agent_pinger_io(n->pinger, fds[k].revents, now_us, &n->seen, &res);
                on_probe(a, n, &before, &res, now_us);
                break;
            }
            if (n->watch != NULL && agent_watch_fd(n->watch) == fds[k].fd) {
                if (agent_watch_io(n->watch, fds[k].revents))
                    on_primary_answer(a, n, now_us);
                break;
            }
        }
    }
}

void agent_sup_reap(struct agent *a, int64_t now_us)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        struct agent_node *n = a->nodes[i];
        int st;
        if (n->pid != 0 && n->child && agent_proc_reap(n->pid, &st)) {
            on_exit_of(a, n, true, st, now_us);
            i = (size_t)-1; /* the table may have changed: start over */
        }
    }
}

void agent_sup_release(struct agent *a)
{
    while (a->n_nodes > 0)
        drop_node(a, a->nodes[a->n_nodes - 1]);
    free(a->nodes);
    a->nodes = NULL;
    a->cap_nodes = 0;
    for (size_t i = 0; i < a->n_bins && a->bin_real != NULL; i++)
        free(a->bin_real[i]);
    free(a->bin_real);
    a->bin_real = NULL;
    engine_binaries_free(a->bins, a->n_bins);
    a->bins = NULL;
    a->n_bins = 0;
    json_decref(a->engines);
    a->engines = NULL;
    resp_tls_free(a->engine_tls);
    a->engine_tls = NULL;
}
