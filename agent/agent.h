/* agent.h -- the state of one cairn-agent: its settings, its channel to
 * cairnd, the desired set it last received, and the engine nodes it
 * supervises. Shared by the modules of agent/; one instance per process.
 *
 * On disk, under the data directory:
 *
 *     identity.json            host id and credential (0600)
 *     desired.json             the last desired set received (0600), so the
 *                              agent supervises by it when it restarts while
 *                              cairnd is unreachable
 *     nodes/<node_id>/
 *         engine.conf          rendered by engine/engine_config.h (0600)
 *         engine.pid           the engine's pid (written by the agent and
 *                              the engine)
 *         engine.log           the engine's standard output and error
 *         node.json            what runs: engine, version, line, port,
 *                              binary, the agent's login to it (user
 *                              cairn's password: a restarted agent must
 *                              reach the engine before cairnd answers),
 *                              the desired entry it was
 *                              started from and how it last ended (0600),
 *                              for re-adoption and the restart policy
 *         data/                the engine's working directory (RDB, AOF)
 *
 * This header includes none of the modules that work on this state
 * (supervise, telemetry, report, loop), so each of them includes it
 * without including the others; telemetry's own state hangs here by an
 * opaque pointer. */
#ifndef CAIRN_AGENT_AGENT_H
#define CAIRN_AGENT_AGENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "catalog.h"
#include "collect.h"
#include "converge.h"
#include "cp.h"
#include "desired.h"
#include "engine_config.h"
#include "identity.h"
#include "pinger.h"
#include "proc.h"
#include "settings.h"
#include "version.h"
#include "watch.h"

#define AGENT_VERSION CAIRN_VERSION

/* An engine's word on its own role counts only from readings taken this
 * long into a run: a cluster-mode replica calls itself master from its
 * start until its cluster cron (every 100 ms once loaded) points it at its
 * primary again, and reported, that word makes cairnd take it for one. */
#define AGENT_ROLE_SETTLE_US 1000000LL

/* Graceful stop: SIGTERM, then SIGKILL to the process group after this. */
#define AGENT_STOP_DEADLINE_US 10000000LL

/* Sync: how long cairnd may hold a sync (until registration says
 * otherwise). When cairnd cannot be reached, agent_cp_backoff_us(). */
#define AGENT_SYNC_WAIT_MS 2000

/* The user an agent running as root starts engines as, unless told. */
#define AGENT_ENGINE_USER "cairn-engine"

struct agent_telemetry;
struct agent_upstream;

/* The process that runs for a node, as started or adopted (node.json). */
struct agent_run {
    enum engine_kind kind;
    char version[ENGINE_VERSION_MAX]; /* "8.0.1" */
    char line[ENGINE_LINE_MAX];       /* "8.0" */
    int port;
    char *binary;   /* path it was started from */
    char *password; /* the agent's own login to the engine; NULL: none */
    bool admin;     /* password is ENGINE_ADMIN_USER's, not (for a node
                     * rendered by an older cairnd) the default user's */
    char *spec;     /* the desired entry it was started from (canonical JSON) */
};

/* The engine user the agent logs in as (NULL: the default user). */
static inline const char *agent_run_user(const struct agent_run *run)
{
    return run->admin ? ENGINE_ADMIN_USER : NULL;
}

struct agent_node {
    char id[AGENT_NODE_ID_MAX];
    char *dir, *conf_path, *pid_path, *log_path, *run_path, *data_dir;
    char *tls_cert_path, *tls_key_path, *tls_ca_path; /* transit encryption's files */
    bool tls_reload;            /* the engine is to load new certificate files */
    int64_t tls_retry_us;       /* a failed reload is tried again then */
    const struct resp_tls *tls; /* TLS of its engine's connections (the agent's engine_tls),
                                   NULL: plain; set with each new process */

    /* Desired: a copy of this node's entry of the desired set. */
    bool wanted;
    struct agent_desired_node want;

    /* The process, when alive. */
    pid_t pid;     /* 0: none */
    int pidfd;     /* -1: none */
    bool child;    /* started by this agent (else adopted) */
    bool stopping; /* SIGTERM sent */
    bool killed;   /* SIGKILL sent after the deadline */
    int64_t stop_deadline_us;
    bool has_run; /* run describes the process (or the last one) */
    struct agent_run run;

    /* Supervision. */
    enum agent_node_state state;
    enum agent_exit last_exit;
    unsigned attempts; /* unplanned exits in a row */
    unsigned restarts; /* restarts after unplanned exits, reported */
    int64_t restart_at_us;
    int64_t wake_us; /* decide again at this time (0: no timer) */
    int64_t started_us;
    int64_t healthy_since_us; /* 0 while not running */
    bool warned_unstartable;

    struct agent_pinger *pinger;
    struct agent_observed seen;

    /* The primary this node follows as a replica, watched from this host
     * (watch.h) so cairnd can tell a lost host from a lost agent: the one
     * its desired config names (cluster mode disabled) or its INFO does
     * (cluster mode). NULL while the node's engine is not running as such
     * a replica; a failover (another address) gets a new watch. */
    struct agent_watch *watch;
    struct agent_watch_times heard; /* when the primary answered, and was asked since */
    bool primary_silent; /* cairnd was told it is silent, and not since that it answers */
    int64_t
        astray_since_us; /* its engine follows another primary than designated; 0: it does not */

    /* Cairn's engine users (engine/users.h), set on each process at the
     * agent's first look at it; the digest of its ACL LIST right after.
     * A later INFO round's other digest is a change behind Cairn's back. */
    bool users_set;
    unsigned char users_digest[CRYPTO_SHA256_LEN];
    int64_t users_retry_us; /* a failed attempt is tried again then */
    unsigned users_repairs; /* changes put back, reported (EngineUsersRepaired) */
    unsigned repoints;      /* keep_following()'s repoints, reported (ReplicaRepointed) */

    /* The guarded settings (engine/guarded.h): an INFO round whose digest
     * differs from what the process was rendered with marks the round;
     * another one still differing, a round later, has them put back. */
    int64_t settings_seen_us;   /* seen.at_us of the round last compared */
    int64_t settings_differ_us; /* seen.at_us of the first such round; 0: none */
    unsigned config_repairs;    /* put back, reported (EngineConfigRepaired) */
    /* Logins the engine refused in a row; at AGENT_LOGIN_REFUSALS_MAX the
     * agent restarts it, from its config file, which has Cairn's users. */
#define AGENT_LOGIN_REFUSALS_MAX 3
    unsigned login_refusals;
    unsigned login_repairs; /* such restarts, reported (EngineLoginRepaired) */

    /* Metrics (telemetry.c). */
    struct agent_cmdtable *cmds; /* the process's command families; NULL until COMMAND answers */
    char cmds_run_id[48];        /* the run they were read from ("" until a sample says) */
    bool cmds_refused;           /* COMMAND failed: no families for this process */
    int64_t sample_tick;         /* the tick (epoch s) whose INFO is awaited; 0: none */
    bool have_snap;
    struct agent_engine_snap snap; /* what the last sample said */
    bool have_period;
    struct agent_period period;      /* the period being added up */
    struct agent_upstream *upstream; /* a replica's primary, read for ReplicationLag; NULL: none */
    unsigned upstream_failures;      /* readings of it in a row that failed */
    bool have_primary;
    struct agent_primary_snap primary; /* its last reading */
    int64_t primary_tick;              /* the tick that reading was taken for */
};

struct agent {
    struct agent_settings *cfg;
    struct agent_proc_user engine_user; /* who the engines run as */
    struct engine_binary *bins;
    size_t n_bins;
    char **bin_real; /* realpath of each binary, for recognising processes */
    json_t *engines; /* the "engines" array of register and sync */
    CURLM *multi;    /* every HTTP transfer to cairnd: the sync channel and the metrics push */

    struct agent_identity id;
    bool have_id;
    bool join_token_spent; /* it opened a registration, or was refused */
    struct agent_cp cp;
    enum { AGENT_CP_IDLE, AGENT_CP_REGISTER, AGENT_CP_SYNC } cp_kind;
    unsigned cp_failures;
    int64_t cp_retry_at_us;
    int64_t cp_started_us;   /* when the request in flight was sent */
    int sync_wait_ms;        /* AGENT_SYNC_WAIT_MS, or cairnd's sync_wait_ms */
    int heartbeat_timeout_s; /* cairnd's, as it last said (or the saved desired set); 0: unknown */
    bool report_dirty;       /* something changed since the sync in flight was sent */

    struct agent_desired desired;
    bool have_desired;  /* from cairnd, or saved by an earlier run */
    bool synced;        /* desired came from cairnd since start or registration */
    int64_t generation; /* reported back: the generation applied */

    struct agent_node **nodes;
    size_t n_nodes, cap_nodes;

    struct agent_telemetry *tm; /* the metrics (telemetry.h) */

    /* How TLS engines' certificates are checked (transit encryption): made
     * from the authority the first TLS node's desired config names, the
     * one of the whole installation. NULL until then. */
    struct resp_tls *engine_tls;

    int sigfd;
    bool quit;
};

/* Mark that cairnd should hear about a change now (the loop aborts a
 * waiting long-poll and syncs). Here rather than in loop.c: supervise,
 * which sits below the loop, calls it. */
static inline void agent_report_changed(struct agent *a)
{
    a->report_dirty = true;
}

#endif
