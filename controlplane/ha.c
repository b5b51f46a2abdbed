/* ha.c -- automatic failover, fencing and cluster-mode repair (see ha.h).
 *
 * Cluster mode disabled: cairnd is the failover authority. nodes.role is its
 * designation of each group's primary, and only a designation is ever
 * published (endpoints, Sentinel discovery), so there is exactly one
 * primary to see at any moment. When the designated primary is down the
 * monitor promotes the replica with the most data (REPLICAOF NO ONE) and
 * moves the designation in one transaction, under a per-cluster advisory
 * lock so that two cairnds cannot promote two replicas. Every node's
 * desired config follows the designation: replicas name their primary
 * (replicaof), and a crashed designated primary is held down by its agent,
 * so it restarts only as a replica of the new primary. An old primary that
 * returns still calling itself primary (a frozen VM, a hung engine) is
 * demoted with REPLICAOF before anything else happens to it.
 *
 * Cluster mode: when a primary's engine exited (its agent holds it down)
 * or its host is lost, cairnd has the most advanced replica take over at
 * once (CLUSTER FAILOVER FORCE, TAKEOVER without a majority to vote) and
 * records it; otherwise the engines elect and the agents report what they
 * became. An old primary that comes back still saying it is the primary
 * (its configuration epoch is lower than the new one's) has its writes held
 * until it rejoins as a replica. If a shard stays without a serving primary for twice the node
 * timeout (too many primaries lost for a vote), cairnd forces its most
 * advanced replica to take over: CLUSTER FAILOVER FORCE, then TAKEOVER.
 *
 * Both modes: a node whose host stays lost (or whose engine stays crashed)
 * for --replace-after, once it is no longer its shard's serving primary, is
 * replaced by a replace_node operation (ops_cluster.c).
 *
 * A host lost for missing its heartbeats alone is no failover: its agent
 * died or paused, its engines may serve. Its primaries count as down only
 * once the vantage points find them silent too (watch_silent_hosts()),
 * which loses the host again, on their word.
 *
 * A host's loss is acted on only once the monitor trusts it: after this
 * cairnd has watched heartbeats for a whole timeout since it started or its
 * database came back (monitor.h). Until then a lost host may simply not have
 * had a chance to report yet, so its nodes count as neither down nor
 * serving: the queries below take that trust as a parameter.
 *
 * AZ balance (cluster mode): once a cluster has settled after failovers, a
 * shard whose primary sits in an AZ holding more primaries than the
 * scheduler allows gets a planned (lossless) failover to an in-sync replica
 * in an AZ holding fewer, one shard at a time. */
#include "ha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_nodes.h"
#include "engine_config.h"
#include "log.h"
#include "nodeio.h"
#include "ops.h"
#include "runner.h"
#include "store.h"
#include "topology.h"
#include "timeutil.h"
#include "xalloc.h"

#define UNRESPONSIVE_GRACE_MS 1000 /* beyond the agent's own 1 s without PONG */
#define TAKEOVER_AFTER_MS     1000 /* FORCE not done by then: TAKEOVER */
#define FAST_FORCE_MS         500  /* the same, when a primary's engine exited */
#define FORCE_POLL_MS         5
#define RELEASE_AFTER_MS      3000 /* replicas restarted from their disks have loaded by then */
#define FORCE_UNSYNCED_AFTER_MS                                                                    \
    60000                       /* a shard without a primary this long takes a replica             \
                                   holding only its own disk's data */
#define STALE_SLACK_MS     2500 /* the engines count a link's downtime in whole seconds */
#define WARN_EVERY_MS      30000
#define REBALANCE_SETTLE_S 5  /* quiet this long before primaries are moved back */
#define MAX_WORK           64 /* groups handled per tick; the rest next tick */

/* Throttles: when a shard was last warned about or repaired. */
struct mark {
    char cluster[48];
    int shard;
    long long at_ms;
};

/* A host some replica's agent finds its primary silent on: when its agent
 * was asked to report, and when it had last been heard from then. */
struct suspect {
    char host[40];
    long long woken_ms;      /* monotonic; 0: not yet */
    long long agent_seen_ms; /* its last_seen_at at the wake */
    long long found_ms;      /* the last tick that found it */
    bool cairnd_silent;      /* its primary did not answer cairnd's probe at the wake */
};

/* An old primary whose writes are held (hold_stale()). */
struct hold {
    char cluster[48];
    char node[40];
    long long next_ms;  /* monotonic: when to try it again */
    long long held_ms;  /* when its writes were first held; 0: not (yet) */
    bool released;      /* a replica now, and its hold ended */
    long long found_ms; /* the last tick that found it */
};

struct ha {
    struct app *app;
    struct mark marks[MAX_WORK];
    struct suspect suspects[MAX_WORK];
    struct hold holds[MAX_WORK];
};

struct ha *ha_new(struct app *app)
{
    struct ha *h = xcalloc(1, sizeof(*h));
    h->app = app;
    return h;
}

void ha_free(struct ha *h)
{
    free(h);
}

/* Whether (cluster, shard) was marked less than every_ms ago; if not, mark
 * it now. */
static bool throttled(struct ha *h, const char *cluster, int shard, long long every_ms)
{
    long long now = time_now_ms();
    struct mark *oldest = &h->marks[0];

    for (size_t i = 0; i < MAX_WORK; i++) {
        struct mark *m = &h->marks[i];
        if (m->shard == shard && strcmp(m->cluster, cluster) == 0) {
            if (now - m->at_ms < every_ms)
                return true;
            m->at_ms = now;
            return false;
        }
        if (m->at_ms < oldest->at_ms)
            oldest = m;
    }
    snprintf(oldest->cluster, sizeof(oldest->cluster), "%s", cluster);
    oldest->shard = shard;
    oldest->at_ms = now;
    return false;
}

/* ---- queries ------------------------------------------------------------ */

struct query {
    enum store_ha_finding which;
    int limit;
    bool trust;
    struct store_ha_work *rows;
    size_t n;
};

static enum db_status query_fn(struct db_conn *conn, void *arg)
{
    struct query *q = arg;
    return store_ha_find(conn, q->which, q->limit, q->trust, q->rows, MAX_WORK, &q->n);
}

static size_t run_query(struct ha *h, enum store_ha_finding which, int limit, bool trust,
                        struct store_ha_work *rows)
{
    struct query q = {which, limit, trust, rows, 0};
    return db_run(h->app->db, query_fn, &q) == DB_OK ? q.n : 0;
}

/* ---- choosing a replica ------------------------------------------------- */

/* Whether n is one of shard's replicas that could take its primary's
 * place: running, on a host not lost. */
static bool candidate(const struct cluster_node *n, int shard)
{
    return n->shard == shard && !n->host_lost && strcmp(n->role, "replica") == 0 &&
           strcmp(n->process_state, "running") == 0;
}

/* Which replicas best_replica() considers. */
enum candidates {
    HOLDS_DATA, /* completed a sync and is not loading or in a new one, and was linked to its
                   primary until that went down */
    SYNCED,     /* linked to its primary at some time since it started, however long ago (a
                   cluster-mode shard that has had no primary for long) */
    ANY,        /* any answering replica, even one holding only what it loaded from its own
                   disk: the primary's own disk is no better, or it has been gone for minutes */
};

/* The replica of shard to promote among those want allows, with the
 * highest replication offset; on a tie, one outside the lost primary's
 * zone, then the lowest ordinal. With HOLDS_DATA, a replica cut off from
 * the primary seconds before it went down (at down_ms, epoch ms, when
 * known) is left out: it lacks what the primary acknowledged since. */
static const struct cluster_node *best_replica(const struct cluster_nodes *nodes,
                                               const char *password, int shard,
                                               const struct cluster_node *old, long long down_ms,
                                               enum candidates want)
{
    long long down_for_ms = down_ms > 0 ? time_now_ms() - down_ms : -1;
    const struct cluster_node *best = NULL;
    long long best_offset = -1;
    bool best_away = false;
    char err[256];

    for (size_t i = 0; i < nodes->count; i++) {
        const struct cluster_node *n = &nodes->items[i];
        struct nodeio_repl repl;
        if (!candidate(n, shard))
            continue;
        if (!nodeio_replication(n, password, NODEIO_QUICK, &repl, err, sizeof(err))) {
            log_warn("failover candidate did not answer", "node=%s error=\"%s\"", n->id, err);
            continue;
        }
        if (repl.primary || repl.loading || (want == HOLDS_DATA && !repl.has_data) ||
            (want == SYNCED && !repl.synced))
            continue;
        if (want == HOLDS_DATA && down_for_ms >= 0 &&
            repl.link_down_s * 1000 > down_for_ms + STALE_SLACK_MS) {
            log_info("failover candidate was cut off from its primary before it went down",
                     "node=%s link_down_s=%lld primary_down_ms=%lld", n->id, repl.link_down_s,
                     down_for_ms);
            continue;
        }
        bool away = old == NULL || strcmp(n->az, old->az) != 0;
        if (best == NULL || repl.offset > best_offset ||
            (repl.offset == best_offset && away && !best_away)) {
            best = n;
            best_offset = repl.offset;
            best_away = away;
        }
    }
    return best;
}

/* ---- cluster mode: taking over -------------------------------------------- */

static bool became_primary(const struct cluster_node *n, const char *password)
{
    struct nodeio_repl repl;
    char err[256];
    return nodeio_replication(n, password, NODEIO_QUICK, &repl, err, sizeof(err)) && repl.primary;
}

/* Make replica n its shard's primary: CLUSTER FAILOVER FORCE while a
 * majority of the cluster's primaries can vote for it, then TAKEOVER (no
 * vote: the replica takes a new epoch itself) if FORCE has not won within
 * force_ms or cannot win. *how is what was sent last. */
static bool take_over(const struct cluster_node *n, const char *password, bool can_win,
                      int force_ms, enum engine_failover_mode *how, char *err, size_t errsize)
{
    if (can_win) {
        *how = ENGINE_FAILOVER_FORCE;
        bool sent = nodeio_cluster_failover(n, password, NODEIO_QUICK, *how, err, errsize);
        for (int waited = 0; sent && waited < force_ms; waited += FORCE_POLL_MS) {
            if (became_primary(n, password))
                return true;
            struct timespec pause = {0, FORCE_POLL_MS * 1000000L};
            nanosleep(&pause, NULL);
        }
        if (sent && became_primary(n, password))
            return true;
    }
    *how = ENGINE_FAILOVER_TAKEOVER;
    return nodeio_cluster_failover(n, password, NODEIO_QUICK, *how, err, errsize);
}

/* Whether an election for shard's replica can win: a majority of the
 * primaries serving slots must answer, and shard's own cannot. */
static bool majority_votes(const struct cluster_nodes *nodes, int shard)
{
    int shards = 0, voters = 0, last = -1;
    for (size_t i = 0; i < nodes->count; i++) {
        const struct cluster_node *n = &nodes->items[i];
        if (n->slot_first < 0)
            continue;
        if (n->shard != last)
            shards++;
        last = n->shard;
        if (n->shard != shard && strcmp(n->role, "primary") == 0 && !n->host_lost &&
            strcmp(n->process_state, "running") == 0)
            voters++;
    }
    return voters >= shards / 2 + 1;
}

/* ---- promotion ------------------------------------------------------------ */

/* A shard's primary is down and cannot come back as a primary: the most
 * advanced replica takes its place, and its role is recorded in the same
 * transaction, under the cluster's failover lock (two cairnds do not both
 * act).
 *
 * Cluster mode disabled: the primary's engine crashed, hung or its host
 * was lost; cairnd is the authority and promotes with REPLICAOF NO ONE.
 * Cluster mode: the primary's engine exited and its agent holds it down,
 * or its host was lost; nothing is gained by waiting for the engines to
 * notice (node timeout, then an election), so the replica takes over at
 * once (take_over()). */
struct promote {
    const struct store_ha_work *w;
    const struct cluster_node *old, *best;
    const char *password;
    bool cluster_mode;
    bool can_win;                  /* cluster mode: a majority can vote for it */
    enum engine_failover_mode how; /* cluster mode: what was sent last */
    char shard_name[16];
    bool done;
    char err[256];
};

static bool promote_engine(struct promote *p)
{
    if (p->cluster_mode)
        return take_over(p->best, p->password, p->can_win, FAST_FORCE_MS, &p->how, p->err,
                         sizeof(p->err));
    struct resp_conn *c =
        nodeio_connect(p->best, p->password, NODEIO_QUICK, p->err, sizeof(p->err));
    bool promoted = c != NULL && engine_replicaof_no_one(c, p->err, sizeof(p->err));
    resp_close(c);
    return promoted;
}

/* How the promotion was done, for its event and log. */
static const char *promote_how(const struct promote *p)
{
    return p->cluster_mode ? engine_failover_mode_name(p->how) : "REPLICAOF NO ONE";
}

static enum db_status promote_fn(struct db_conn *conn, void *arg)
{
    struct promote *p = arg;
    bool locked = false, still = false;
    enum db_status st = store_ha_try_lock(conn, p->w->cluster, &locked);
    if (st != DB_OK || !locked) /* another cairnd is at it */
        return st != DB_OK ? st : DB_REFUSED;
    st = p->cluster_mode ? store_node_still_fallen(conn, p->old->id, &still)
                         : store_node_still_primary(conn, p->old->id, &still);
    if (st != DB_OK || !still)
        return st != DB_OK ? st : DB_REFUSED; /* back, or promoted already */
    if (!promote_engine(p))
        return DB_REFUSED;
    /* The epoch it took over with marks the old primary's claim stale
     * should it come back saying it is still the primary (hold_stale()). */
    long long epoch = -1;
    if (p->cluster_mode && !nodeio_cluster_epoch(p->best, p->password, NODEIO_QUICK, &epoch))
        epoch = -1;
    if ((st = store_node_designate_primary(conn, p->best->id, epoch)) != DB_OK)
        return st;
    long long took = time_now_ms() - p->w->since_ms;
    char *message =
        p->cluster_mode
            ? xasprintf("shard %s: node %s (%s) took over by CLUSTER FAILOVER %s because the "
                        "primary's %s; %lld ms after it went down",
                        p->shard_name, p->best->id, p->best->az, promote_how(p), p->w->why, took)
            : xasprintf("shard %s: promoted node %s (%s) because the primary's %s; %lld ms "
                        "after it went down",
                        p->shard_name, p->best->id, p->best->az, p->w->why, took);
    json_t *detail = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I}", "automatic", 1, "shard",
                               p->shard_name, "from", p->old->id, "to", p->best->id, "az",
                               p->best->az, "reason", p->w->why, "duration_ms", (json_int_t)took);
    if (p->cluster_mode)
        json_object_set_new(detail, "mode", json_string(promote_how(p)));
    char *text = json_dumps(detail, JSON_COMPACT);
    st = store_event_add(conn, p->w->cluster, NULL, "FailoverComplete", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    if (st == DB_OK)
        p->done = true;
    return st;
}

/* Cluster mode disabled: the other replicas follow the new primary now;
 * those that cannot be told (or restart later) follow it from their
 * config. The old primary is told too when it can still hear it (a hung
 * engine that recovers). In cluster mode the engines see to it. */
static void repoint_replicas(const struct cluster_nodes *nodes, const char *password, int shard,
                             const struct cluster_node *old, const struct cluster_node *best)
{
    char err[256];

    for (size_t i = 0; i < nodes->count; i++) {
        const struct cluster_node *n = &nodes->items[i];
        if (n->shard != shard || n == best || n->host_lost ||
            (n == old && strcmp(n->process_state, "crashed") == 0) ||
            (n != old && strcmp(n->process_state, "running") != 0))
            continue;
        if (!nodeio_follow(n, password, NODEIO_QUICK, best, err, sizeof(err)))
            log_warn("failover: could not repoint a node; its next report will",
                     "node=%s error=\"%s\"", n->id, err);
    }
}

/* ---- no replica to promote: the primary restarts ------------------------- */

/* Whether no replica of shard can take over from its primary: each one
 * that answers holds no data from a sync with it and is not loading. So
 * it is when every engine of the shard went down at once: the replicas
 * restarted from their own disks while the primary was down and never
 * completed a sync since, and cairnd promotes none of them (they may hold
 * less than the primary's disk does). */
static bool no_replica_can_take_over(const struct cluster_nodes *nodes, const char *password,
                                     int shard)
{
    char err[256];

    for (size_t i = 0; i < nodes->count; i++) {
        const struct cluster_node *n = &nodes->items[i];
        struct nodeio_repl repl;
        if (!candidate(n, shard))
            continue;
        if (!nodeio_replication(n, password, NODEIO_QUICK, &repl, err, sizeof(err)) ||
            repl.primary || repl.has_data || repl.loading)
            return false;
    }
    return true;
}

struct release {
    const struct store_ha_work *w;
    const struct cluster_node *old;
    bool soon; /* down for less than RELEASE_AFTER_MS: not yet */
    char shard_name[16];
    bool done;   /* released now */
    bool failed; /* released in the last minute, and crashed again */
};

static enum db_status release_fn(struct db_conn *conn, void *arg)
{
    struct release *r = arg;
    bool locked = false;
    enum db_status st = store_ha_try_lock(conn, r->w->cluster, &locked);
    if (st != DB_OK || !locked)
        return st != DB_OK ? st : DB_REFUSED;
    if ((st = store_node_restart_failed(conn, r->old->id, &r->failed)) != DB_OK || r->failed ||
        r->soon)
        return st;
    if ((st = store_node_release_hold(conn, r->old->id, &r->done)) != DB_OK || !r->done)
        return st;
    long long down_ms = time_now_ms() - r->w->since_ms;
    char *message = xasprintf("shard %s: no replica holds data from a sync with primary %s (they "
                              "restarted while it was down), so it restarts from its own disk "
                              "instead of failing over; down %lld ms",
                              r->shard_name, r->old->id, down_ms);
    json_t *detail = json_pack("{s:s, s:s, s:s, s:I}", "shard", r->shard_name, "node", r->old->id,
                               "reason", r->w->why, "down_ms", (json_int_t)down_ms);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = store_event_add(conn, r->w->cluster, NULL, "PrimaryRestarted", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

enum restart {
    RESTART_NOT_NOW,
    RESTART_SENT,   /* its agent is told to start it */
    RESTART_FAILED, /* it was, and crashed again */
};

/* A crashed primary, held down by its agent for a replica to take its
 * place, when none ever can: released, it comes back as the primary it
 * still is, with its own data, and the replicas sync from it. Should that
 * restart crash too (its own data unreadable), the primary's disk is no
 * better than the replicas': RESTART_FAILED, and the caller promotes the
 * replica with the most of what it loaded from its own. */
static enum restart restart_primary(struct ha *h, const struct store_ha_work *w,
                                    const struct cluster_nodes *nodes, const char *password,
                                    const struct cluster_node *old)
{
    if (strcmp(old->process_state, "crashed") != 0 || old->host_lost ||
        !no_replica_can_take_over(nodes, password, w->shard))
        return RESTART_NOT_NOW;
    struct release r = {.w = w, .old = old, .soon = time_now_ms() - w->since_ms < RELEASE_AFTER_MS};
    snprintf(r.shard_name, sizeof(r.shard_name), "%04d", w->shard + 1);
    if (db_tx(h->app->db, DB_READ_COMMITTED, release_fn, &r) != DB_OK)
        return RESTART_NOT_NOW;
    if (r.failed)
        return RESTART_FAILED;
    if (!r.done)
        return RESTART_NOT_NOW;
    log_warn("no replica can take over; the primary restarts", "cluster=%s shard=%s node=%s",
             w->cluster, r.shard_name, old->id);
    return RESTART_SENT;
}

static void failover_shard(struct ha *h, const struct store_ha_work *w)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256];
    bool cluster_mode;

    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err,
                            sizeof(err))) {
        log_warn("failover: cannot load the cluster", "cluster=%s error=\"%s\"", w->cluster, err);
        return;
    }
    /* Without cairnd, a cluster's engines elect by themselves in the end. */
    const char *meanwhile = cluster_mode ? "the engines will elect" : "waiting";
    const struct cluster_node *old = cluster_nodes_find(&nodes, w->node);
    const struct cluster_node *best =
        old != NULL ? best_replica(&nodes, password, w->shard, old, w->since_ms, HOLDS_DATA) : NULL;
    struct store_ha_work failed;
    enum restart restart = best == NULL && old != NULL
                               ? restart_primary(h, w, &nodes, password, old)
                               : RESTART_NOT_NOW;
    if (restart == RESTART_SENT)
        goto out;
    if (restart == RESTART_FAILED) {
        best = best_replica(&nodes, password, w->shard, old, 0, ANY);
        failed = *w;
        snprintf(failed.why, sizeof(failed.why), "%s", "engine crashed, and again when restarted");
        w = &failed;
    }
    if (best == NULL) {
        if (!throttled(h, w->cluster, w->shard, WARN_EVERY_MS))
            log_warn("failover: no replica holds the data",
                     "cluster=%s shard=%04d primary=%s "
                     "reason=\"%s\" meanwhile=\"%s\"",
                     w->cluster, w->shard + 1, w->node, w->why, meanwhile);
        goto out;
    }
    struct promote p = {.w = w,
                        .old = old,
                        .best = best,
                        .password = password,
                        .cluster_mode = cluster_mode,
                        .can_win = cluster_mode && majority_votes(&nodes, w->shard)};
    snprintf(p.shard_name, sizeof(p.shard_name), "%04d", w->shard + 1);
    enum db_status st = db_tx(h->app->db, DB_READ_COMMITTED, promote_fn, &p);
    if (!p.done) {
        if (p.err[0] != '\0' && !throttled(h, w->cluster, w->shard, WARN_EVERY_MS))
            log_warn("failover: promotion refused",
                     "cluster=%s node=%s error=\"%s\" "
                     "meanwhile=\"%s\"",
                     w->cluster, best->id, p.err, meanwhile);
        else if (st != DB_REFUSED)
            log_warn("failover: could not record the promotion", "cluster=%s status=%d", w->cluster,
                     (int)st);
        goto out;
    }
    log_warn("automatic failover",
             "cluster=%s shard=%s from=%s to=%s how=\"%s\" reason=\"%s\" "
             "ms=%lld",
             w->cluster, p.shard_name, old->id, best->id, promote_how(&p), w->why,
             time_now_ms() - w->since_ms);
    if (!cluster_mode)
        repoint_replicas(&nodes, password, w->shard, old, best);
out:
    cluster_nodes_free(&nodes);
    free(password);
}

/* ---- cluster mode disabled: fencing -------------------------------------- */

struct fence {
    const char *cluster, *node, *primary;
    const char *message;
};

static enum db_status fenced_fn(struct db_conn *conn, void *arg)
{
    const struct fence *f = arg;
    enum db_status st = store_node_demoted(conn, f->node);
    if (st != DB_OK)
        return st;
    json_t *detail = json_pack("{s:s, s:s}", "node", f->node, "primary", f->primary);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = store_event_add(conn, f->cluster, NULL, "PrimaryDemoted", "warning", f->message, text);
    free(text);
    json_decref(detail);
    return st;
}

static void fence(struct ha *h, const struct store_ha_work *w)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256];
    bool cluster_mode;

    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return;
    const struct cluster_node *n = cluster_nodes_find(&nodes, w->node), *primary = NULL;
    for (size_t i = 0; n != NULL && i < nodes.count; i++) {
        if (nodes.items[i].shard == n->shard && strcmp(nodes.items[i].role, "primary") == 0)
            primary = &nodes.items[i];
    }
    if (n != NULL && primary != NULL && primary->port > 0 &&
        nodeio_follow(n, password, NODEIO_QUICK, primary, err, sizeof(err))) {
        char *message =
            xasprintf("node %s answered as a primary; made it a replica of %s", n->id, primary->id);
        struct fence f = {w->cluster, n->id, primary->id, message};
        if (db_tx(h->app->db, DB_READ_COMMITTED, fenced_fn, &f) == DB_OK)
            log_warn("stray primary demoted", "cluster=%s node=%s primary=%s", w->cluster, n->id,
                     primary->id);
        free(message);
    } else if (n != NULL && primary != NULL && !throttled(h, w->cluster, -1 - n->shard, 1000)) {
        log_warn("could not demote a stray primary", "cluster=%s node=%s error=\"%s\"", w->cluster,
                 n->id, err);
    }
    cluster_nodes_free(&nodes);
    free(password);
}

/* ---- cluster mode: an old primary's writes held -------------------------- */

/* An old primary that comes back from a cut or a freeze still says it is
 * its shard's primary until the cluster bus tells it of the takeover, which
 * takes up to a couple of seconds (its links to the other nodes connect
 * again), and meanwhile takes the writes of any client whose slot map still
 * names it -- writes that are lost when it steps down. cairnd holds its
 * writes (CLIENT PAUSE WRITE) from the moment it can reach it: the finding
 * lists it while its host is still lost, so it is tried every tick and
 * fenced within a tick of coming back. A held write runs afresh once the
 * node is a replica, and is redirected. Each hold lasts twice the node
 * timeout, renewed while the node is still a primary; it is ended as soon
 * as the node answers as a replica. */

#define HOLD_WAIT       ((struct nodeio_wait){50, 200})
#define HOLD_RECHECK_MS 200  /* a held node is asked whether it is a replica yet */
#define HOLD_SILENT_MS  1000 /* connected but unanswered (frozen): asked again then */

/* The hold entry of node (a free or the oldest one if it has none). */
static struct hold *hold_of(struct ha *h, const char *cluster, const char *node)
{
    struct hold *oldest = &h->holds[0];
    for (size_t i = 0; i < MAX_WORK; i++) {
        struct hold *e = &h->holds[i];
        if (strcmp(e->node, node) == 0)
            return e;
        if (e->found_ms < oldest->found_ms)
            oldest = e;
    }
    *oldest = (struct hold){0};
    snprintf(oldest->cluster, sizeof(oldest->cluster), "%s", cluster);
    snprintf(oldest->node, sizeof(oldest->node), "%s", node);
    return oldest;
}

struct fenced_call {
    const char *node, *primary;
};

static enum db_status held_fn(struct db_conn *conn, void *arg)
{
    const struct fenced_call *f = arg;
    return store_node_fenced(conn, f->node, f->primary);
}

/* w: a stale primary (why: its shard's primary), found this tick. */
static void hold_stale(struct ha *h, const struct store_ha_work *w, long long now)
{
    struct hold *e = hold_of(h, w->cluster, w->node);
    e->found_ms = now;
    if (e->released || now < e->next_ms)
        return;
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256] = "";
    bool cluster_mode;
    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return;
    const struct cluster_node *n = cluster_nodes_find(&nodes, w->node);
    int pause_ms = 2 * w->timeout_ms;
    enum nodeio_fenced how = n != NULL && n->port > 0
                                 ? nodeio_fence_writes(n, password, HOLD_WAIT, w->epoch, pause_ms,
                                                       e->held_ms != 0, err, sizeof(err))
                                 : NODEIO_FENCE_UNREACHED;
    switch (how) {
    case NODEIO_FENCE_UNREACHED:
        e->next_ms = now; /* still cut off: every tick */
        break;
    case NODEIO_FENCE_FAILED:
        e->next_ms = now + HOLD_SILENT_MS;
        if (!throttled(h, w->cluster, -1000 - w->shard, WARN_EVERY_MS))
            log_warn("could not hold an old primary's writes", "cluster=%s node=%s error=\"%s\"",
                     w->cluster, w->node, err);
        break;
    case NODEIO_FENCE_HELD:
        e->next_ms = now + HOLD_RECHECK_MS;
        if (e->held_ms == 0) {
            e->held_ms = now;
            struct fenced_call f = {w->node, w->why};
            (void)db_tx(h->app->db, DB_READ_COMMITTED, held_fn, &f);
            log_warn("old primary's writes held until it rejoins as a replica",
                     "cluster=%s shard=%04d node=%s primary=%s pause_ms=%d", w->cluster,
                     w->shard + 1, w->node, w->why, pause_ms);
        }
        break;
    case NODEIO_FENCE_REPLICA:
        e->released = true;
        if (e->held_ms != 0)
            log_info("old primary rejoined as a replica; its writes go on",
                     "cluster=%s node=%s held_ms=%lld", w->cluster, w->node, now - e->held_ms);
        break;
    case NODEIO_FENCE_CURRENT:
        /* The stored epochs were behind the engines; its report will say. */
        e->released = true;
        log_info("a primary's claim is not stale after all; its writes go on",
                 "cluster=%s node=%s held_ms=%lld", w->cluster, w->node,
                 e->held_ms != 0 ? now - e->held_ms : 0);
        break;
    }
    cluster_nodes_free(&nodes);
    free(password);
}

/* End a hold at once (CLIENT UNPAUSE), for a node no longer found stale
 * before cairnd saw it a replica; one that cannot be reached is let go by
 * the pause's own timeout. */
static void end_hold(struct ha *h, const struct hold *e)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256] = "";
    bool cluster_mode;
    if (!cluster_nodes_load(h->app, e->cluster, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return;
    const struct cluster_node *n = cluster_nodes_find(&nodes, e->node);
    struct resp_conn *c =
        n != NULL && n->port > 0 ? nodeio_connect(n, password, HOLD_WAIT, err, sizeof(err)) : NULL;
    if (c != NULL && engine_unpause(c, err, sizeof(err)))
        log_info("a held node is not found stale any more; its writes go on", "cluster=%s node=%s",
                 e->cluster, e->node);
    resp_close(c);
    cluster_nodes_free(&nodes);
    free(password);
}

/* Entries no tick found any more: the node's report says replica, or it
 * went away; one still held is released. */
static void forget_holds(struct ha *h, long long now)
{
    for (size_t i = 0; i < MAX_WORK; i++) {
        struct hold *e = &h->holds[i];
        if (e->found_ms == now || e->found_ms == 0)
            continue;
        if (e->held_ms != 0 && !e->released)
            end_hold(h, e);
        *e = (struct hold){0};
    }
}

/* ---- cluster mode: repair ------------------------------------------------ */

struct forced {
    const char *cluster, *message;
    json_t *detail;
};

static enum db_status forced_fn(struct db_conn *conn, void *arg)
{
    const struct forced *f = arg;
    char *text = json_dumps(f->detail, JSON_COMPACT);
    enum db_status st =
        store_event_add(conn, f->cluster, NULL, "FailoverForced", "warning", f->message, text);
    free(text);
    return st;
}

static void repair_shard(struct ha *h, const struct store_ha_work *w)
{
    long long down_ms = time_now_ms() - w->since_ms;
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256] = "";
    bool cluster_mode;

    if (down_ms < 2LL * w->timeout_ms || throttled(h, w->cluster, w->shard, 2LL * w->timeout_ms))
        return;
    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return;
    /* A replica that has not been linked since it started holds what its
     * own disk held, which may be nothing (a replica whose disk filled
     * after its sync restarts on its AOF from before it). While the
     * primary may only be frozen or cut off, the shard waits for it
     * rather than lose its data to such a replica. */
    const struct cluster_node *best = best_replica(&nodes, password, w->shard, NULL, 0, HOLDS_DATA);
    if (best == NULL)
        best = best_replica(&nodes, password, w->shard, NULL, 0, SYNCED);
    if (best == NULL && down_ms >= FORCE_UNSYNCED_AFTER_MS)
        best = best_replica(&nodes, password, w->shard, NULL, 0, ANY);
    if (best == NULL) {
        log_warn("shard without a primary and no replica to force",
                 "cluster=%s shard=%04d "
                 "down_ms=%lld unsynced_after_ms=%d",
                 w->cluster, w->shard + 1, down_ms, FORCE_UNSYNCED_AFTER_MS);
        goto out;
    }
    enum engine_failover_mode how;
    bool sent = take_over(best, password, true, TAKEOVER_AFTER_MS, &how, err, sizeof(err));
    const char *mode = engine_failover_mode_name(how);
    char shard[16];
    snprintf(shard, sizeof(shard), "%04d", w->shard + 1);
    char *message = xasprintf(
        "shard %s had no serving primary for %lld ms (more than twice the %d ms node "
        "timeout, so the engines could not elect one); %s CLUSTER FAILOVER %s to node %s%s%s",
        shard, down_ms, w->timeout_ms, sent ? "sent" : "could not send", mode, best->id,
        sent ? "" : ": ", sent ? "" : err);
    struct forced f = {w->cluster, message,
                       json_pack("{s:s, s:s, s:s, s:I, s:b}", "shard", shard, "to", best->id,
                                 "mode", mode, "down_ms", (json_int_t)down_ms, "sent", sent)};
    (void)db_tx(h->app->db, DB_READ_COMMITTED, forced_fn, &f);
    log_warn("forced a failover", "cluster=%s shard=%s to=%s mode=%s sent=%d", w->cluster, shard,
             best->id, mode, (int)sent);
    json_decref(f.detail);
    free(message);
out:
    cluster_nodes_free(&nodes);
    free(password);
}

/* ---- node replacement ------------------------------------------------------ */

static enum db_status queue_fn(struct db_conn *conn, void *arg)
{
    const struct store_ha_work *w = arg;
    char op_id[STORE_UUID_SIZE];
    json_t *context = json_pack("{s:s}", "node", w->node);
    enum db_status st =
        store_operation_queue(conn, w->cluster, op_cluster_replace_node.name, context, op_id);
    json_decref(context);
    return st;
}

static void replace(struct ha *h, const struct store_ha_work *w)
{
    enum db_status st = db_tx(h->app->db, DB_READ_COMMITTED, queue_fn, (void *)w);
    if (st == DB_OK) {
        log_warn("replacing a node", "cluster=%s node=%s", w->cluster, w->node);
        if (h->app->runner != NULL)
            runner_poke(h->app->runner);
    }
}

/* ---- AZ balance ------------------------------------------------------------ */

/* A planned failover of the shard to a replica in the AZ that holds fewer
 * primaries, with its FailoverRequested event. */
static enum db_status queue_move(struct db_conn *conn, const struct store_ha_move *m)
{
    char op_id[STORE_UUID_SIZE], shard[16];
    snprintf(shard, sizeof(shard), "%04d", m->shard + 1);
    json_t *context =
        json_pack("{s:i, s:s, s:b}", "shard", m->shard, "target_az", m->to_az, "rebalance", 1);
    enum db_status st =
        store_operation_queue(conn, m->cluster, op_cluster_failover.name, context, op_id);
    json_decref(context);
    if (st != DB_OK)
        return st;
    char *message = xasprintf("rebalancing primaries across AZs: %s holds %d; shard %s's primary "
                              "moves to %s by a planned failover",
                              m->from_az, m->primaries, shard, m->to_az);
    json_t *detail = json_pack("{s:b, s:s, s:s, s:s}", "rebalance", 1, "shard", shard, "from_az",
                               m->from_az, "to_az", m->to_az);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = store_event_add(conn, m->cluster, op_id, "FailoverRequested", "info", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

struct moves {
    struct store_ha_move items[MAX_WORK];
    size_t n;
};

static enum db_status unbalanced_fn(struct db_conn *conn, void *arg)
{
    struct moves *m = arg;
    return store_ha_unbalanced(conn, REBALANCE_SETTLE_S, m->items, MAX_WORK, &m->n);
}

static enum db_status move_fn(struct db_conn *conn, void *arg)
{
    return queue_move(conn, arg);
}

/* Each move queued on its own: one refused (its cluster busy) spares the
 * others. */
static void rebalance(struct ha *h)
{
    struct moves *m = xcalloc(1, sizeof(*m));
    if (db_run(h->app->db, unbalanced_fn, m) != DB_OK)
        m->n = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct store_ha_move *move = &m->items[i];
        if (db_tx(h->app->db, DB_READ_COMMITTED, move_fn, (void *)move) != DB_OK)
            continue;
        log_info("rebalancing primaries", "cluster=%s shard=%04d from=%s to=%s", move->cluster,
                 move->shard + 1, move->from_az, move->to_az);
        if (h->app->runner != NULL)
            runner_poke(h->app->runner);
    }
    free(m);
}

/* ---- host loss, from several vantage points ------------------------------ */

/* A frozen or cut-off host is the common real failure, and its agent's
 * heartbeat timeout (seconds) is slow to say so. The agents of the
 * replicas probe their primaries several times a second: when one reports
 * its primary silent, cairnd asks the primary's agent to report at once
 * (a live agent does within milliseconds) and probes the primary itself.
 * The host is lost when its agent stays silent and the primary answers a
 * majority of neither those agents (silent for HA_LOST_MS) nor cairnd. A
 * dead agent whose engines answer is not a failover: the engines serve,
 * and its heartbeat timeout calls the host lost for 'heartbeat' only
 * (store_hosts.c), which fails nothing over until its engines stop
 * answering those same vantage points. Nor is an engine that stalls while
 * its agent answers. */

#define WAKE_GRACE_MS 300  /* a live agent asked to report has done so by then */
#define REWAKE_MS     1000 /* an agent that answered is asked again at most this often */
#define PROBE_WAIT    ((struct nodeio_wait){200, 300})

/* The suspect entry of host (a free or the oldest one if it has none). */
static struct suspect *suspect_of(struct ha *h, const char *host)
{
    struct suspect *oldest = &h->suspects[0];
    for (size_t i = 0; i < MAX_WORK; i++) {
        struct suspect *s = &h->suspects[i];
        if (strcmp(s->host, host) == 0)
            return s;
        if (s->found_ms < oldest->found_ms)
            oldest = s;
    }
    *oldest = (struct suspect){0};
    snprintf(oldest->host, sizeof(oldest->host), "%s", host);
    return oldest;
}

/* Whether cairnd itself gets an answer from the node's engine. */
static bool answers_cairnd(struct ha *h, const char *cluster, const char *node)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256];
    bool cluster_mode, answered = false;

    if (cluster_nodes_load(h->app, cluster, &nodes, &password, &cluster_mode, err, sizeof(err))) {
        const struct cluster_node *n = cluster_nodes_find(&nodes, node);
        answered = n != NULL && n->port > 0 && nodeio_ping(n, password, PROBE_WAIT);
    } else {
        answered = true; /* no evidence either way: do not act on it */
    }
    cluster_nodes_free(&nodes);
    free(password);
    return answered;
}

struct silent_hosts {
    struct store_silent_primary rows[MAX_WORK];
    size_t n;
    int fresh_ms;
};

static enum db_status silent_fn(struct db_conn *conn, void *arg)
{
    struct silent_hosts *q = arg;
    return store_ha_silent_primaries(conn, HA_SUSPECT_MS, HA_LOST_MS, q->fresh_ms, q->rows,
                                     MAX_WORK, &q->n);
}

struct host_call {
    const char *host;
    const char *why, *detail;
    bool marked;
};

static enum db_status wake_fn(struct db_conn *conn, void *arg)
{
    return store_host_wake(conn, ((const struct host_call *)arg)->host);
}

static enum db_status lost_fn(struct db_conn *conn, void *arg)
{
    struct host_call *c = arg;
    return store_host_lost_now(conn, c->host, c->why, c->detail, &c->marked);
}

static void judge(struct ha *h, const struct store_silent_primary *sp, bool trust, long long now)
{
    struct suspect *s = suspect_of(h, sp->host);
    s->found_ms = now;
    bool answered = s->woken_ms != 0 && sp->agent_seen_ms != s->agent_seen_ms;
    if (sp->host_lost && s->woken_ms == 0) {
        /* Lost for its heartbeats: its agent is long silent, there is no
         * one to ask; only whether its engines serve is open. */
        s->woken_ms = now - WAKE_GRACE_MS;
        s->agent_seen_ms = sp->agent_seen_ms;
        s->cairnd_silent = !answers_cairnd(h, sp->cluster, sp->node);
    } else if (s->woken_ms == 0 || (answered && now - s->woken_ms >= REWAKE_MS)) {
        struct host_call c = {sp->host, NULL, NULL, false};
        if (db_tx(h->app->db, DB_READ_COMMITTED, wake_fn, &c) != DB_OK)
            return;
        if (s->woken_ms == 0)
            log_info("a primary is silent to its replica's agent; asking its host's agent",
                     "host=%s node=%s silent_ms=%lld", sp->host, sp->node, sp->silent_ms);
        s->woken_ms = now;
        s->agent_seen_ms = sp->agent_seen_ms;
        /* Probed now, while its agent has time to answer: the probe of a
         * frozen engine takes its whole timeout. */
        s->cairnd_silent = !answers_cairnd(h, sp->cluster, sp->node);
        return;
    }
    if (answered || now - s->woken_ms < WAKE_GRACE_MS || !trust)
        return; /* its agent lives (the engine stalls, or only a link is cut) */
    bool cairnd_silent = s->cairnd_silent || !answers_cairnd(h, sp->cluster, sp->node);
    int voters = sp->vantage + 1, votes = sp->silent + (cairnd_silent ? 1 : 0);
    if (2 * votes <= voters)
        return;
    long long agent_ms = time_now_ms() - sp->agent_seen_ms;
    char *why = sp->host_lost
                    ? xasprintf("its agent missed its heartbeats (silent for %lld ms), and node %s "
                                "did not answer %d of %d vantage points",
                                agent_ms, sp->node, votes, voters)
                    : xasprintf("its agent was silent for %lld ms, asked to report %lld ms ago, "
                                "and node %s did not answer %d of %d vantage points",
                                agent_ms, now - s->woken_ms, sp->node, votes, voters);
    json_t *detail = json_pack("{s:s, s:s, s:I, s:i, s:i, s:b}", "reason", "vantage", "node",
                               sp->node, "agent_silent_ms", (json_int_t)agent_ms, "vantage_points",
                               voters, "silent_to", votes, "cairnd_reached", !cairnd_silent);
    char *text = json_dumps(detail, JSON_COMPACT);
    struct host_call c = {sp->host, why, text, false};
    if (db_tx(h->app->db, DB_READ_COMMITTED, lost_fn, &c) == DB_OK && c.marked)
        log_warn("host lost", "host=%s reason=\"%s\"", sp->host, why);
    free(text);
    json_decref(detail);
    free(why);
}

static void watch_silent_hosts(struct ha *h, bool trust)
{
    struct silent_hosts *q = xcalloc(1, sizeof(*q));
    q->fresh_ms = h->app->cfg.sync_wait_ms + 1500;
    long long now = time_mono_us() / 1000;
    if (db_run(h->app->db, silent_fn, q) == DB_OK) {
        for (size_t i = 0; i < q->n; i++)
            judge(h, &q->rows[i], trust, now);
    }
    for (size_t i = 0; i < MAX_WORK; i++) {
        if (h->suspects[i].found_ms != now)
            h->suspects[i] = (struct suspect){0}; /* answering again, or lost now */
    }
    free(q);
}

/* ---- the tick ------------------------------------------------------------- */

void ha_tick(struct ha *h, bool trust_losses)
{
    struct store_ha_work *rows = xcalloc(MAX_WORK, sizeof(*rows));
    size_t n;

    watch_silent_hosts(h, trust_losses);
    n = run_query(h, STORE_HA_DOWN_PRIMARIES, UNRESPONSIVE_GRACE_MS, trust_losses, rows);
    for (size_t i = 0; i < n; i++)
        failover_shard(h, &rows[i]);
    n = run_query(h, STORE_HA_STRAY_PRIMARIES, 0, trust_losses, rows);
    for (size_t i = 0; i < n; i++)
        fence(h, &rows[i]);
    int node_timeout_ms = atoi(engine_config_managed_find("cluster-node-timeout")->fallback);
    n = run_query(h, STORE_HA_FALLEN_PRIMARIES, node_timeout_ms, trust_losses, rows);
    for (size_t i = 0; i < n; i++)
        failover_shard(h, &rows[i]);
    n = run_query(h, STORE_HA_STALE_PRIMARIES, node_timeout_ms, trust_losses, rows);
    long long now = time_mono_us() / 1000;
    for (size_t i = 0; i < n; i++)
        hold_stale(h, &rows[i], now);
    forget_holds(h, now);
    n = run_query(h, STORE_HA_LEADERLESS_SHARDS, node_timeout_ms, trust_losses, rows);
    for (size_t i = 0; i < n; i++)
        repair_shard(h, &rows[i]);
    rebalance(h);
    n = run_query(h, STORE_HA_DEAD_NODES, h->app->cfg.replace_after_s, trust_losses, rows);
    for (size_t i = 0; i < n; i++)
        replace(h, &rows[i]);
    free(rows);
}
