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
 * Cluster mode: the engines elect; the agents report what they became. If a
 * shard stays without a serving primary for twice the node timeout (too
 * many primaries lost for a vote), cairnd forces its most advanced replica
 * to take over: CLUSTER FAILOVER FORCE, then TAKEOVER.
 *
 * Both modes: a node whose host stays lost (or whose engine stays crashed)
 * for --replace-after, once it is no longer its shard's serving primary, is
 * replaced by a replace_node operation (ops_cluster.c).
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

#include "clusters.h"
#include "engine_config.h"
#include "log.h"
#include "nodeio.h"
#include "runner.h"
#include "store.h"
#include "xalloc.h"

#define UNRESPONSIVE_GRACE_MS 1000 /* beyond the agent's own 1 s without PONG */
#define TAKEOVER_AFTER_MS     1000 /* FORCE not done by then: TAKEOVER */
#define WARN_EVERY_MS         30000
#define REBALANCE_SETTLE_S    5  /* quiet this long before primaries are moved back */
#define MAX_WORK              64 /* groups handled per tick; the rest next tick */

/* Clusters whose topology an operation is changing are left to it. */
#define HA_CLUSTER_IDLE                                                                            \
    "c.status IN ('available', 'modifying', 'degraded')"                                           \
    " AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"                        \
    "   AND o.status IN ('pending', 'running') AND o.kind IN ('create', 'delete', 'failover'))"

/* Cluster mode disabled, automatic failover on: groups whose designated
 * primary is down while a replica runs on a healthy host. A primary on a
 * lost host is left alone while losses are not trusted ($2), whatever its
 * last report said. */
static const struct db_stmt down_primaries = {
    "SELECT c.id, s.index, p.id,"
    "  CASE WHEN h.status = 'lost' THEN 'host was lost'"
    "       WHEN p.process_state = 'crashed' THEN 'engine crashed'"
    "       ELSE 'engine stopped answering' END,"
    "  (extract(epoch FROM CASE WHEN h.status = 'lost' THEN h.last_seen_at"
    "     ELSE coalesce(p.state_since, now()) END) * 1000)::bigint, 0"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id"
    " JOIN nodes p ON p.shard_id = s.id AND p.role = 'primary' AND p.desired_state = 'running'"
    " JOIN hosts h ON h.id = p.host_id"
    " WHERE c.spec ->> 'cluster_mode' = 'disabled'"
    "   AND coalesce((c.spec ->> 'automatic_failover')::boolean, false) AND " HA_CLUSTER_IDLE
    "   AND (h.status = 'lost' OR p.process_state = 'crashed' OR (p.process_state = 'unresponsive'"
    "     AND p.state_since < now() - make_interval(secs => $1::int / 1000.0)))"
    "   AND (h.status <> 'lost' OR $2::boolean)"
    "   AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "     WHERE r.shard_id = s.id AND r.role = 'replica' AND r.process_state = 'running'"
    "     AND rh.status = 'healthy')"
    " ORDER BY c.id, s.index LIMIT 64"};

/* Cluster mode disabled: replicas by designation whose engine reports it is
 * a primary, on a healthy host, in a report newer than cairnd's own last
 * reading of it. */
static const struct db_stmt stray_primaries = {
    "SELECT c.id, s.index, n.id, '', 0, 0 FROM nodes n JOIN clusters c ON c.id = n.cluster_id"
    " JOIN shards s ON s.id = n.shard_id JOIN hosts h ON h.id = n.host_id"
    " WHERE c.spec ->> 'cluster_mode' = 'disabled' AND " HA_CLUSTER_IDLE
    "   AND n.role = 'replica' AND n.observed_role = 'primary' AND n.process_state = 'running'"
    "   AND h.status = 'healthy' AND n.desired_state = 'running'"
    "   AND n.reported_at > coalesce(n.role_observed_at, '-infinity')"
    " ORDER BY c.id LIMIT 64"};

/* Cluster mode: shards without a primary serving on a healthy host (or on
 * a lost one while losses are not trusted, $1), with the moment the last
 * one went down and the node timeout (the cluster's, or the default, $2). */
static const struct db_stmt leaderless_shards = {
    "SELECT c.id, s.index, '', '',"
    "  (extract(epoch FROM coalesce((SELECT max(CASE WHEN h.status = 'lost' THEN h.last_seen_at"
    "      ELSE n.state_since END) FROM nodes n JOIN hosts h ON h.id = n.host_id"
    "    WHERE n.shard_id = s.id AND n.role = 'primary'), now())) * 1000)::bigint,"
    "  coalesce((c.spec #>> '{parameters,cluster-node-timeout}')::int, $2::int)"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id"
    " WHERE coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled' AND " HA_CLUSTER_IDLE
    "   AND NOT EXISTS (SELECT 1 FROM nodes n JOIN hosts h ON h.id = n.host_id"
    "     WHERE n.shard_id = s.id AND n.role = 'primary' AND n.process_state = 'running'"
    "     AND (h.status = 'healthy' OR (h.status = 'lost' AND NOT $1::boolean)))"
    "   AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "     WHERE r.shard_id = s.id AND r.role = 'replica' AND r.process_state = 'running'"
    "     AND rh.status = 'healthy')"
    " ORDER BY c.id, s.index LIMIT 64"};

/* Nodes to replace: their host lost (while losses are trusted, $2), or (a
 * replica's) engine crashed, for the replace-after time, and no longer a
 * serving shard's only primary (a
 * failover comes first). A crashed primary is not counted: its agent holds
 * it down until a replica took over and then restarts it as a replica. One
 * replacement per cluster at a time; one that failed (no room) is tried
 * again after the same time. */
static const struct db_stmt dead_nodes = {
    "SELECT c.id, s.index, n.id, '', 0, 0 FROM nodes n JOIN clusters c ON c.id = n.cluster_id"
    " JOIN shards s ON s.id = n.shard_id JOIN hosts h ON h.id = n.host_id"
    " WHERE c.status IN ('available', 'modifying', 'degraded') AND n.desired_state = 'running'"
    "   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "     AND o.status IN ('pending', 'running'))"
    "   AND ((h.status = 'lost' AND $2::boolean"
    "       AND h.updated_at < now() - make_interval(secs => $1::int))"
    "     OR (n.process_state = 'crashed' AND n.role = 'replica'"
    "       AND n.state_since < now() - make_interval(secs => $1::int)))"
    "   AND (n.role IS DISTINCT FROM 'primary' OR EXISTS (SELECT 1 FROM nodes p"
    "     JOIN hosts ph ON ph.id = p.host_id WHERE p.shard_id = n.shard_id AND p.id <> n.id"
    "     AND p.role = 'primary' AND p.process_state = 'running' AND ph.status = 'healthy'))"
    "   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "     AND o.kind = 'replace_node' AND o.context ->> 'node' = n.id::text"
    "     AND o.finished_at > now() - make_interval(secs => $1::int))"
    " ORDER BY c.id, n.id LIMIT 64"};

static const struct db_stmt queue_replacement = {
    "INSERT INTO operations (cluster_id, kind, context)"
    " VALUES ($1, 'replace_node', jsonb_build_object('node', $2::text))"};

/* Cluster mode, settled (available, no operation, every node running on a
 * healthy host for a while, no failover or replacement just now): the first
 * shard whose primary sits in an AZ holding more than ceil(shards / AZs)
 * primaries -- the scheduler's rule -- with an in-sync replica in an AZ
 * holding fewer, one per cluster. */
static const struct db_stmt unbalanced = {
    "WITH settled AS (SELECT c.id FROM clusters c"
    "   WHERE coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled'"
    "   AND c.status = 'available'"
    "   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "     AND o.status IN ('pending', 'running'))"
    "   AND NOT EXISTS (SELECT 1 FROM nodes n LEFT JOIN hosts h ON h.id = n.host_id"
    "     WHERE n.cluster_id = c.id AND n.desired_state = 'running'"
    "     AND (n.process_state IS DISTINCT FROM 'running' OR h.status IS DISTINCT FROM 'healthy'"
    "       OR n.state_since > now() - make_interval(secs => $1::int)))"
    "   AND NOT EXISTS (SELECT 1 FROM events e WHERE e.cluster_id = c.id"
    "     AND e.type IN ('FailoverComplete', 'NodeReplaced')"
    "     AND e.created_at > now() - make_interval(secs => $1::int))),"
    " live AS (SELECT n.cluster_id, n.shard_id, n.role, h.az, n.master_link_status,"
    "     n.sync_in_progress, n.loading FROM nodes n JOIN hosts h ON h.id = n.host_id"
    "   JOIN settled s ON s.id = n.cluster_id WHERE n.desired_state = 'running'),"
    " per_az AS (SELECT cluster_id, az, count(*) FILTER (WHERE role = 'primary') AS primaries"
    "   FROM live GROUP BY cluster_id, az),"
    " lim AS (SELECT p.cluster_id, ceil((SELECT count(*) FROM shards s"
    "     WHERE s.cluster_id = p.cluster_id)::numeric / count(*))::int AS most"
    "   FROM per_az p GROUP BY p.cluster_id)"
    " SELECT DISTINCT ON (p.cluster_id) p.cluster_id, s.index, r.az, p.az, pa.primaries"
    " FROM live p JOIN per_az pa ON pa.cluster_id = p.cluster_id AND pa.az = p.az"
    " JOIN lim ON lim.cluster_id = p.cluster_id JOIN shards s ON s.id = p.shard_id"
    " JOIN live r ON r.shard_id = p.shard_id AND r.role = 'replica'"
    "   AND r.master_link_status = 'up' AND NOT coalesce(r.sync_in_progress, false)"
    "   AND NOT coalesce(r.loading, false)"
    " JOIN per_az ra ON ra.cluster_id = r.cluster_id AND ra.az = r.az"
    " WHERE p.role = 'primary' AND pa.primaries > lim.most AND ra.primaries < lim.most"
    " ORDER BY p.cluster_id, s.index, ra.primaries, r.az"};

static const struct db_stmt queue_rebalance = {
    "WITH op AS (INSERT INTO operations (cluster_id, kind, context)"
    "   VALUES ($1, 'failover', jsonb_build_object('shard', $2::int, 'target_az', $3::text,"
    "     'rebalance', true)) RETURNING id)"
    " INSERT INTO events (cluster_id, operation_id, type, severity, message, detail)"
    " SELECT $1, op.id, 'FailoverRequested', 'info', $4::text,"
    "   jsonb_build_object('rebalance', true, 'shard', lpad(($2::int + 1)::text, 4, '0'),"
    "     'from_az', $5::text, 'to_az', $3::text) FROM op"};

static const struct db_stmt lock_cluster = {
    "SELECT pg_try_advisory_xact_lock(hashtext('cairn-ha:' || $1))"};

static const struct db_stmt still_primary = {
    "SELECT role = 'primary' FROM nodes WHERE id = $1::uuid FOR UPDATE"};

static const struct db_stmt designate = {
    "UPDATE nodes SET role = CASE WHEN id = $1::uuid THEN 'primary' ELSE 'replica' END,"
    "  observed_role = CASE WHEN id = $1::uuid THEN 'primary' ELSE observed_role END,"
    "  master_link_status = CASE WHEN id = $1::uuid THEN NULL ELSE master_link_status END,"
    "  role_observed_at = CASE WHEN id = $1::uuid THEN now() ELSE role_observed_at END"
    " WHERE shard_id = (SELECT shard_id FROM nodes WHERE id = $1::uuid)"
    "   AND desired_state <> 'deleted'"};

static const struct db_stmt demoted = {
    "UPDATE nodes SET observed_role = 'replica', master_link_status = 'down',"
    "  role_observed_at = now() WHERE id = $1::uuid"};

static const struct db_stmt ha_event = {
    "INSERT INTO events (cluster_id, type, severity, message, detail)"
    " VALUES ($1, $2, $3, $4, $5::jsonb)"};

/* One row of a query above; each returns these columns, in this order
 * ('' or 0 where one does not apply). */
struct work {
    char cluster[48];
    int shard;
    char node[40];
    char why[48];
    long long since_ms;
    int timeout_ms;
};

/* Throttles: when a shard was last warned about or repaired. */
struct mark {
    char cluster[48];
    int shard;
    long long at_ms;
};

struct ha {
    struct app *app;
    struct mark marks[MAX_WORK];
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
    long long now = cluster_now_ms();
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
    const struct db_stmt *stmt;
    const char *const *params;
    int nparams;
    struct work *rows;
    size_t n;
};

static enum db_status query_fn(struct db_conn *conn, void *arg)
{
    struct query *q = arg;
    enum db_status st;
    PGresult *res = db_query(conn, q->stmt, q->nparams, q->params, &st);

    if (res == NULL)
        return st;
    q->n = (size_t)PQntuples(res);
    if (q->n > MAX_WORK)
        q->n = MAX_WORK;
    for (size_t i = 0; i < q->n; i++) {
        struct work *w = &q->rows[i];
        int r = (int)i;
        snprintf(w->cluster, sizeof(w->cluster), "%s", PQgetvalue(res, r, 0));
        w->shard = atoi(PQgetvalue(res, r, 1));
        snprintf(w->node, sizeof(w->node), "%s", PQgetvalue(res, r, 2));
        snprintf(w->why, sizeof(w->why), "%s", PQgetvalue(res, r, 3));
        w->since_ms = atoll(PQgetvalue(res, r, 4));
        w->timeout_ms = atoi(PQgetvalue(res, r, 5));
    }
    PQclear(res);
    return DB_OK;
}

static size_t run_query(struct ha *h, const struct db_stmt *stmt, const char *const *params,
                        int nparams, struct work *rows)
{
    struct query q = {stmt, params, nparams, rows, 0};
    return db_run(h->app->db, query_fn, &q) == DB_OK ? q.n : 0;
}

static enum db_status event_fn(struct db_conn *conn, const char *cluster, const char *type,
                               const char *severity, const char *message, const char *detail)
{
    const char *params[5] = {cluster, type, severity, message, detail};
    enum db_status st;
    PQclear(db_query(conn, &ha_event, 5, params, &st));
    return st;
}

/* ---- choosing a replica ------------------------------------------------- */

/* The replica of shard to promote: one that holds the group's data (it
 * completed a sync and is not loading or in a new one), with the highest
 * replication offset; on a tie, one outside the lost primary's zone, then
 * the lowest ordinal. With relaxed, any answering replica will do (a
 * cluster-mode shard that has had no primary for long). */
static const struct cluster_node *best_replica(const struct cluster_nodes *nodes,
                                               const char *password, int shard,
                                               const struct cluster_node *old, bool relaxed)
{
    const struct cluster_node *best = NULL;
    long long best_offset = -1;
    bool best_away = false;
    char err[256];

    for (size_t i = 0; i < nodes->count; i++) {
        const struct cluster_node *n = &nodes->items[i];
        struct nodeio_repl repl;
        if (n->shard != shard || n->host_lost || strcmp(n->role, "replica") != 0 ||
            strcmp(n->process_state, "running") != 0)
            continue;
        if (!nodeio_replication(n, password, NODEIO_QUICK, &repl, err, sizeof(err))) {
            log_warn("failover candidate did not answer", "node=%s error=\"%s\"", n->id, err);
            continue;
        }
        if (repl.primary || repl.loading || !(repl.has_data || relaxed))
            continue;
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

/* ---- cluster mode disabled: promotion ----------------------------------- */

struct promote {
    const struct work *w;
    const struct cluster_node *old, *best;
    const char *password;
    char shard_name[16];
    bool done;
    char err[256];
};

static enum db_status promote_fn(struct db_conn *conn, void *arg)
{
    struct promote *p = arg;
    const char *lock[1] = {p->w->cluster};
    const char *old[1] = {p->old->id};
    const char *best[1] = {p->best->id};
    enum db_status st;
    PGresult *res = db_query(conn, &lock_cluster, 1, lock, &st);

    if (res == NULL)
        return st;
    bool locked = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!locked)
        return DB_NOT_FOUND; /* another cairnd is at it */
    if ((res = db_query(conn, &still_primary, 1, old, &st)) == NULL)
        return st;
    bool still = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!still)
        return DB_NOT_FOUND; /* promoted already */
    if (!nodeio_command(p->best, p->password, NODEIO_QUICK, p->err, sizeof(p->err),
                        "REPLICAOF NO ONE", "", 0))
        return DB_NOT_FOUND;
    PQclear(db_query(conn, &designate, 1, best, &st));
    if (st != DB_OK)
        return st;
    long long took = cluster_now_ms() - p->w->since_ms;
    char *message = xasprintf("shard %s: promoted node %s (%s) because the primary's %s; %lld ms "
                              "after it went down",
                              p->shard_name, p->best->id, p->best->az, p->w->why, took);
    json_t *detail = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I}", "automatic", 1, "shard",
                               p->shard_name, "from", p->old->id, "to", p->best->id, "az",
                               p->best->az, "reason", p->w->why, "duration_ms", (json_int_t)took);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = event_fn(conn, p->w->cluster, "FailoverComplete", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    if (st == DB_OK)
        p->done = true;
    return st;
}

static void failover_group(struct ha *h, const struct work *w)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256];
    bool cluster_mode;

    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err,
                            sizeof(err))) {
        log_warn("failover: cannot load the cluster", "cluster=%s error=\"%s\"", w->cluster, err);
        return;
    }
    const struct cluster_node *old = cluster_nodes_find(&nodes, w->node);
    const struct cluster_node *best =
        old != NULL ? best_replica(&nodes, password, w->shard, old, false) : NULL;
    if (best == NULL) {
        if (!throttled(h, w->cluster, w->shard, WARN_EVERY_MS))
            log_warn("failover: no replica holds the data; waiting",
                     "cluster=%s shard=%04d primary=%s reason=\"%s\"", w->cluster, w->shard + 1,
                     w->node, w->why);
        goto out;
    }
    struct promote p = {.w = w, .old = old, .best = best, .password = password};
    snprintf(p.shard_name, sizeof(p.shard_name), "%04d", w->shard + 1);
    enum db_status st = db_tx(h->app->db, DB_READ_COMMITTED, promote_fn, &p);
    if (!p.done) {
        if (p.err[0] != '\0')
            log_warn("failover: promotion refused", "cluster=%s node=%s error=\"%s\"", w->cluster,
                     best->id, p.err);
        else if (st != DB_NOT_FOUND)
            log_warn("failover: could not record the promotion", "cluster=%s status=%d", w->cluster,
                     (int)st);
        goto out;
    }
    log_warn("automatic failover", "cluster=%s shard=%s from=%s to=%s reason=\"%s\" ms=%lld",
             w->cluster, p.shard_name, old->id, best->id, w->why, cluster_now_ms() - w->since_ms);
    /* The other replicas follow the new primary now; those that cannot be
     * told (or restart later) follow it from their config. The old primary
     * is told too when it can still hear it (a hung engine that recovers). */
    for (size_t i = 0; i < nodes.count; i++) {
        const struct cluster_node *n = &nodes.items[i];
        if (n->shard != w->shard || n == best || n->host_lost ||
            (n == old && strcmp(n->process_state, "crashed") == 0) ||
            (n != old && strcmp(n->process_state, "running") != 0))
            continue;
        if (!nodeio_command(n, password, NODEIO_QUICK, err, sizeof(err), "REPLICAOF %s %d",
                            best->address, best->port))
            log_warn("failover: could not repoint a node; its next report will",
                     "node=%s "
                     "error=\"%s\"",
                     n->id, err);
    }
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
    const char *params[1] = {f->node};
    enum db_status st;

    PQclear(db_query(conn, &demoted, 1, params, &st));
    if (st != DB_OK)
        return st;
    json_t *detail = json_pack("{s:s, s:s}", "node", f->node, "primary", f->primary);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = event_fn(conn, f->cluster, "PrimaryDemoted", "warning", f->message, text);
    free(text);
    json_decref(detail);
    return st;
}

static void fence(struct ha *h, const struct work *w)
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
        nodeio_command(n, password, NODEIO_QUICK, err, sizeof(err), "REPLICAOF %s %d",
                       primary->address, primary->port)) {
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

/* ---- cluster mode: repair ------------------------------------------------ */

struct forced {
    const char *cluster, *message;
    json_t *detail;
};

static enum db_status forced_fn(struct db_conn *conn, void *arg)
{
    const struct forced *f = arg;
    char *text = json_dumps(f->detail, JSON_COMPACT);
    enum db_status st = event_fn(conn, f->cluster, "FailoverForced", "warning", f->message, text);
    free(text);
    return st;
}

static bool became_primary(const struct cluster_node *n, const char *password)
{
    struct nodeio_repl repl;
    char err[256];
    return nodeio_replication(n, password, NODEIO_QUICK, &repl, err, sizeof(err)) && repl.primary;
}

static void repair_shard(struct ha *h, const struct work *w)
{
    long long down_ms = cluster_now_ms() - w->since_ms;
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256] = "";
    bool cluster_mode;

    if (down_ms < 2LL * w->timeout_ms || throttled(h, w->cluster, w->shard, 2LL * w->timeout_ms))
        return;
    if (!cluster_nodes_load(h->app, w->cluster, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return;
    const struct cluster_node *best = best_replica(&nodes, password, w->shard, NULL, false);
    if (best == NULL)
        best = best_replica(&nodes, password, w->shard, NULL, true);
    if (best == NULL) {
        log_warn("shard without a primary and no replica to force", "cluster=%s shard=%04d",
                 w->cluster, w->shard + 1);
        goto out;
    }
    const char *how = "FORCE";
    bool sent = nodeio_command(best, password, NODEIO_QUICK, err, sizeof(err),
                               "CLUSTER FAILOVER FORCE", "", 0);
    for (int i = 0; sent && i < TAKEOVER_AFTER_MS / 100 && !became_primary(best, password); i++) {
        struct timespec pause = {0, 100 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (!sent || !became_primary(best, password)) {
        how = "TAKEOVER";
        sent = nodeio_command(best, password, NODEIO_QUICK, err, sizeof(err),
                              "CLUSTER FAILOVER TAKEOVER", "", 0);
    }
    char shard[16];
    snprintf(shard, sizeof(shard), "%04d", w->shard + 1);
    char *message = xasprintf(
        "shard %s had no serving primary for %lld ms (more than twice the %d ms node "
        "timeout, so the engines could not elect one); %s CLUSTER FAILOVER %s to node %s%s%s",
        shard, down_ms, w->timeout_ms, sent ? "sent" : "could not send", how, best->id,
        sent ? "" : ": ", sent ? "" : err);
    struct forced f = {w->cluster, message,
                       json_pack("{s:s, s:s, s:s, s:I, s:b}", "shard", shard, "to", best->id,
                                 "mode", how, "down_ms", (json_int_t)down_ms, "sent", sent)};
    (void)db_tx(h->app->db, DB_READ_COMMITTED, forced_fn, &f);
    log_warn("forced a failover", "cluster=%s shard=%s to=%s mode=%s sent=%d", w->cluster, shard,
             best->id, how, (int)sent);
    json_decref(f.detail);
    free(message);
out:
    cluster_nodes_free(&nodes);
    free(password);
}

/* ---- node replacement ------------------------------------------------------ */

static enum db_status queue_fn(struct db_conn *conn, void *arg)
{
    const struct work *w = arg;
    const char *params[2] = {w->cluster, w->node};
    enum db_status st;
    PQclear(db_query(conn, &queue_replacement, 2, params, &st));
    return st;
}

static void replace(struct ha *h, const struct work *w)
{
    enum db_status st = db_run(h->app->db, queue_fn, (void *)w);
    if (st == DB_OK) {
        log_warn("replacing a node", "cluster=%s node=%s", w->cluster, w->node);
        if (h->app->runner != NULL)
            runner_poke(h->app->runner);
    }
}

/* ---- AZ balance ------------------------------------------------------------ */

static enum db_status rebalance_fn(struct db_conn *conn, void *arg)
{
    struct ha *h = arg;
    char settle[16];
    const char *params[1] = {settle};
    enum db_status st;

    snprintf(settle, sizeof(settle), "%d", REBALANCE_SETTLE_S);
    PGresult *res = db_query(conn, &unbalanced, 1, params, &st);
    if (res == NULL)
        return st;
    /* Each row: cluster, shard index, to AZ, from AZ, its primaries. */
    for (int r = 0; r < PQntuples(res); r++) {
        const char *cluster = PQgetvalue(res, r, 0), *shard = PQgetvalue(res, r, 1);
        const char *to_az = PQgetvalue(res, r, 2), *from_az = PQgetvalue(res, r, 3);
        int index = atoi(shard);
        char *message = xasprintf("rebalancing primaries across AZs: %s holds %s; shard %04d's "
                                  "primary moves to %s by a planned failover",
                                  from_az, PQgetvalue(res, r, 4), index + 1, to_az);
        const char *qp[5] = {cluster, shard, to_az, message, from_az};
        enum db_status qst;
        PQclear(db_query(conn, &queue_rebalance, 5, qp, &qst));
        free(message);
        if (qst == DB_OK) {
            log_info("rebalancing primaries", "cluster=%s shard=%04d from=%s to=%s", cluster,
                     index + 1, from_az, to_az);
            if (h->app->runner != NULL)
                runner_poke(h->app->runner);
        }
    }
    PQclear(res);
    return DB_OK;
}

/* ---- the tick ------------------------------------------------------------- */

void ha_tick(struct ha *h, bool trust_losses)
{
    struct work *rows = xcalloc(MAX_WORK, sizeof(*rows));
    const char *trust = trust_losses ? "true" : "false";
    char grace[16];
    const char *params[2] = {grace, trust};
    size_t n;

    snprintf(grace, sizeof(grace), "%d", UNRESPONSIVE_GRACE_MS);
    n = run_query(h, &down_primaries, params, 2, rows);
    for (size_t i = 0; i < n; i++)
        failover_group(h, &rows[i]);
    n = run_query(h, &stray_primaries, NULL, 0, rows);
    for (size_t i = 0; i < n; i++)
        fence(h, &rows[i]);
    const char *leaderless[2] = {trust,
                                 engine_config_managed_find("cluster-node-timeout")->fallback};
    n = run_query(h, &leaderless_shards, leaderless, 2, rows);
    for (size_t i = 0; i < n; i++)
        repair_shard(h, &rows[i]);
    (void)db_run(h->app->db, rebalance_fn, h);
    snprintf(grace, sizeof(grace), "%d", h->app->cfg.replace_after_s);
    n = run_query(h, &dead_nodes, params, 2, rows);
    for (size_t i = 0; i < n; i++)
        replace(h, &rows[i]);
    free(rows);
}
