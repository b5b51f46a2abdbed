/* store_ha.c -- what the failover authority (ha.c) finds and records:
 * groups whose primary is down, stray primaries, leaderless shards, nodes
 * to replace, shards to rebalance across AZs; the per-cluster lock and the
 * designation of a new primary. */
#include <stdio.h>
#include <string.h>

#include "store.h"

/* A host whose engines are gone as far as failover goes (hosts h): lost on
 * the vantage points' word. A host lost for missing its heartbeats alone
 * may still serve (its agent died), and its primaries count as serving
 * until the vantage points find them silent too (migration 0017). */
#define HOST_DOWN "(h.status = 'lost' AND h.lost_reason = 'vantage')"

/* Clusters whose topology an operation is changing are left to it. */
#define HA_CLUSTER_IDLE                                                                            \
    "c.status IN ('available', 'modifying', 'degraded')"                                           \
    " AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"                        \
    "   AND o.status IN ('pending', 'running') AND o.kind IN ('create', 'delete', 'failover'))"

/* Cluster mode disabled, automatic failover on: groups whose designated
 * primary is down while a replica runs on a healthy host. A primary on a
 * lost host is left alone while losses are not trusted ($2), whatever its
 * last report said; one on a host lost for its heartbeats alone, until the
 * vantage points find it silent (HOST_DOWN). */
static const struct db_stmt down_primaries = {
    "SELECT c.id, s.index, p.id,"
    "  CASE WHEN " HOST_DOWN " THEN 'host was lost'"
    "       WHEN p.process_state = 'crashed' THEN 'engine crashed'"
    "       ELSE 'engine stopped answering' END,"
    "  (extract(epoch FROM CASE WHEN " HOST_DOWN " THEN h.last_seen_at"
    "     ELSE coalesce(p.state_since, now()) END) * 1000)::bigint, 0"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id"
    " JOIN nodes p ON p.shard_id = s.id AND p.role = 'primary' AND p.desired_state = 'running'"
    " JOIN hosts h ON h.id = p.host_id"
    " WHERE c.spec ->> 'cluster_mode' = 'disabled'"
    "   AND coalesce((c.spec ->> 'automatic_failover')::boolean, false) AND " HA_CLUSTER_IDLE
    "   AND ((h.status = 'healthy' AND (p.process_state = 'crashed'"
    "     OR (p.process_state = 'unresponsive'"
    "       AND p.state_since < now() - make_interval(secs => $1::int / 1000.0))))"
    "     OR " HOST_DOWN ")"
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
 * a lost one while losses are not trusted, $1, or one lost for its
 * heartbeats alone), with the moment the last
 * one went down and the node timeout (the cluster's, or the default, $2). */
static const struct db_stmt leaderless_shards = {
    "SELECT c.id, s.index, '', '',"
    "  (extract(epoch FROM coalesce((SELECT max(CASE WHEN " HOST_DOWN " THEN h.last_seen_at"
    "      ELSE n.state_since END) FROM nodes n JOIN hosts h ON h.id = n.host_id"
    "    WHERE n.shard_id = s.id AND n.role = 'primary'), now())) * 1000)::bigint,"
    "  coalesce((c.spec #>> '{parameters,cluster-node-timeout}')::int, $2::int)"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id AND s.removed_at IS NULL"
    " WHERE coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled' AND " HA_CLUSTER_IDLE
    "   AND NOT EXISTS (SELECT 1 FROM nodes n JOIN hosts h ON h.id = n.host_id"
    "     WHERE n.shard_id = s.id AND n.role = 'primary' AND n.process_state = 'running'"
    "     AND (h.status = 'healthy' OR (h.status = 'lost' AND NOT ($1::boolean AND " HOST_DOWN
    "))))"
    "   AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "     WHERE r.shard_id = s.id AND r.role = 'replica' AND r.process_state = 'running'"
    "     AND rh.status = 'healthy')"
    " ORDER BY c.id, s.index LIMIT 64"};

/* Cluster mode: shards whose primary's engine exited, or whose host was
 * found lost (while losses are trusted, $2), while a replica runs on a
 * healthy host. Its agent holds an exited primary down (the desired set's
 * hold_after_crash: automatic failover, which cluster mode always has, and
 * a running shard-mate), and a lost host's engines answer no one; either
 * way it takes no writes as a primary again: restarted, it rejoins as a
 * replica; a lost host's engine that comes back still calling itself the
 * primary has a lower epoch than the new one, and cairnd holds its writes
 * until the cluster bus makes it a replica (stale_primaries). So the
 * failover need not wait for the engines to notice: cairnd starts it at
 * once. The node timeout is the cluster's, or the default ($1). */
static const struct db_stmt fallen_primaries = {
    "SELECT c.id, s.index, p.id,"
    "  CASE WHEN " HOST_DOWN " THEN 'host was lost' ELSE 'engine exited' END,"
    "  (extract(epoch FROM CASE WHEN " HOST_DOWN " THEN h.updated_at"
    "     ELSE coalesce(p.state_since, now()) END) * 1000)::bigint,"
    "  coalesce((c.spec #>> '{parameters,cluster-node-timeout}')::int, $1::int)"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id AND s.removed_at IS NULL"
    " JOIN nodes p ON p.shard_id = s.id AND p.role = 'primary' AND p.desired_state = 'running'"
    " JOIN hosts h ON h.id = p.host_id"
    " WHERE ((p.process_state = 'crashed' AND h.status = 'healthy') OR ($2::boolean AND " HOST_DOWN
    "))"
    "   AND coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled'"
    "   AND coalesce((c.spec ->> 'automatic_failover')::boolean, false) AND " HA_CLUSTER_IDLE
    "   AND NOT EXISTS (SELECT 1 FROM nodes o WHERE o.shard_id = s.id AND o.id <> p.id"
    "     AND o.role = 'primary' AND o.process_state = 'running')"
    "   AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "     WHERE r.shard_id = s.id AND r.role = 'replica' AND r.process_state = 'running'"
    "     AND rh.status = 'healthy')"
    " ORDER BY c.id, s.index LIMIT 64"};

/* Cluster mode: nodes whose last word is that they are their shard's
 * primary while a shard-mate recorded primary holds a higher configuration
 * epoch -- an old primary that has not heard of the failover yet (a host
 * back from a cut or a freeze, before the cluster bus reaches it), or that
 * is still cut off: its host's status does not matter, so that its writes
 * are held the moment it can be reached again. The why column is the
 * shard's primary, the last its epoch; the node timeout is the cluster's,
 * or the default ($1). */
static const struct db_stmt stale_primaries = {
    "SELECT n.cluster_id, s.index, n.id, m.id::text, 0,"
    "  coalesce((c.spec #>> '{parameters,cluster-node-timeout}')::int, $1::int), m.config_epoch"
    " FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN shards s ON s.id = n.shard_id"
    " JOIN nodes m ON m.shard_id = n.shard_id AND m.id <> n.id AND m.role = 'primary'"
    "   AND m.desired_state <> 'deleted' AND m.config_epoch > n.config_epoch"
    " WHERE coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled'"
    "   AND n.role = 'replica' AND n.observed_role = 'primary' AND n.desired_state = 'running'"
    "   AND n.process_state IN ('running', 'unresponsive')"
    " ORDER BY n.cluster_id, n.id LIMIT 64"};

/* Nodes to replace: their host lost (while losses are trusted, $2), or (a
 * replica's) engine not serving -- crashed, or restarted again and again
 * without ever coming up (down_since spans the restarts) -- for the
 * replace-after time, and no longer a serving shard's only primary (a
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
    "     OR (n.process_state IN ('crashed', 'starting') AND n.role = 'replica'"
    "       AND n.down_since < now() - make_interval(secs => $1::int)))"
    "   AND (n.role IS DISTINCT FROM 'primary' OR EXISTS (SELECT 1 FROM nodes p"
    "     JOIN hosts ph ON ph.id = p.host_id WHERE p.shard_id = n.shard_id AND p.id <> n.id"
    "     AND p.role = 'primary' AND p.process_state = 'running' AND ph.status = 'healthy'))"
    "   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "     AND o.kind = 'replace_node' AND o.context ->> 'node' = n.id::text"
    "     AND o.finished_at > now() - make_interval(secs => $1::int))"
    " ORDER BY c.id, n.id LIMIT 64"};

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
    "     WHERE s.cluster_id = p.cluster_id AND s.removed_at IS NULL)::numeric / count(*))::int"
    "   AS most"
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

static const struct db_stmt lock_cluster = {
    "SELECT pg_try_advisory_xact_lock(hashtext('cairn-ha:' || $1))"};

static const struct db_stmt still_primary = {
    "SELECT role = 'primary' FROM nodes WHERE id = $1::uuid FOR UPDATE"};

/* Locks every node of the shard, so that no report records the engines'
 * view of it while cairnd changes it. */
static const struct db_stmt still_fallen = {
    "SELECT coalesce(bool_or(id = $1::uuid AND role = 'primary' AND (process_state = 'crashed'"
    "  OR (SELECT " HOST_DOWN " FROM hosts h WHERE h.id = shard.host_id))), false)"
    " FROM (SELECT id, role, process_state, host_id FROM nodes"
    "  WHERE shard_id = (SELECT shard_id FROM nodes WHERE id = $1::uuid) FOR UPDATE) shard"};

static const struct db_stmt designate = {
    "UPDATE nodes SET role = CASE WHEN id = $1::uuid THEN 'primary' ELSE 'replica' END,"
    "  config_epoch = CASE WHEN id = $1::uuid THEN coalesce($2::bigint, config_epoch)"
    "    ELSE config_epoch END,"
    "  observed_role = CASE WHEN id = $1::uuid THEN 'primary' ELSE observed_role END,"
    "  master_link_status = CASE WHEN id = $1::uuid THEN NULL ELSE master_link_status END,"
    "  role_observed_at = CASE WHEN id = $1::uuid THEN now() ELSE role_observed_at END"
    " WHERE shard_id = (SELECT shard_id FROM nodes WHERE id = $1::uuid)"
    "   AND desired_state <> 'deleted'"};

/* Let the crashed primary's agent restart it (migration 0018), telling
 * the agent at once; none when it is no longer a crashed primary, was let
 * go already, or was let go in the last minute and crashed again. */
static const struct db_stmt release_hold = {
    "WITH r AS (UPDATE nodes SET hold_released_at = now() WHERE id = $1::uuid"
    "   AND role = 'primary' AND process_state = 'crashed'"
    "   AND NOT coalesce(hold_released_at > least(state_since, now() - interval '60 s'), false)"
    "   RETURNING host_id)"
    " SELECT hosts_bump_desired(host_id) FROM r"};

/* Whether the primary was let go in the last minute and crashed again. */
static const struct db_stmt restart_failed = {
    "SELECT coalesce(hold_released_at > now() - interval '60 s'"
    "  AND hold_released_at < state_since AND process_state = 'crashed', false)"
    " FROM nodes WHERE id = $1::uuid"};

/* The event of an old primary's writes held, naming the epochs. */
static const struct db_stmt fenced_event = {
    "INSERT INTO events (cluster_id, type, severity, message, detail)"
    " SELECT n.cluster_id, 'PrimaryFenced', 'warning',"
    "   format('shard %s: node %s still says it is the primary, with configuration epoch %s;"
    " node %s is, with %s. Its writes are held until it rejoins as a replica',"
    "     s.name, n.id, n.config_epoch, m.id, m.config_epoch),"
    "   jsonb_build_object('shard', s.name, 'node', n.id, 'config_epoch', n.config_epoch,"
    "     'primary', m.id, 'primary_config_epoch', m.config_epoch)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id, nodes m"
    " WHERE n.id = $1::uuid AND m.id = $2::uuid"};

static const struct db_stmt demoted = {
    "UPDATE nodes SET observed_role = 'replica', master_link_status = 'down',"
    "  role_observed_at = now() WHERE id = $1::uuid"};

/* Primaries on healthy hosts, or on hosts lost for their heartbeats alone,
 * that a replica's agent reports silent for at least $1 ms, with what the
 * vantage points say: how many agents of the shard's replicas watch it
 * (running, on another healthy host heard from in the last $3 ms), how
 * many of them find it silent for $2 ms, when its own agent was last heard
 * from (epoch ms, its identity across reads: a live agent asked to report
 * moves it), and whether its host is lost already. Run every monitor tick,
 * so it starts from the few silent replicas (migration 0016's index). */
static const struct db_stmt silent_primaries = {
    "SELECT h.id, p.id, p.cluster_id, count(*),"
    "  count(*) FILTER (WHERE r.primary_silent_since < now() - make_interval(secs => $2 / 1000.0)),"
    "  (extract(epoch FROM h.last_seen_at) * 1000)::bigint,"
    "  (extract(epoch FROM now() - min(r.primary_silent_since)) * 1000)::bigint,"
    "  h.status = 'lost'"
    " FROM (SELECT DISTINCT shard_id FROM nodes WHERE primary_silent_since"
    "   < now() - make_interval(secs => $1 / 1000.0)) quiet"
    " JOIN nodes p ON p.shard_id = quiet.shard_id AND p.role = 'primary'"
    "   AND p.desired_state = 'running'"
    " JOIN hosts h ON h.id = p.host_id"
    " JOIN nodes r ON r.shard_id = p.shard_id AND r.id <> p.id AND r.role = 'replica'"
    "   AND r.desired_state = 'running' AND r.process_state = 'running'"
    " JOIN hosts rh ON rh.id = r.host_id AND rh.id <> h.id AND rh.status = 'healthy'"
    "   AND rh.last_seen_at > now() - make_interval(secs => $3 / 1000.0)"
    " WHERE h.status = 'healthy' OR (h.status = 'lost' AND h.lost_reason = 'heartbeat')"
    " GROUP BY h.id, p.id, p.cluster_id, h.last_seen_at, h.status"
    " HAVING count(*) FILTER (WHERE r.primary_silent_since"
    "   < now() - make_interval(secs => $1 / 1000.0)) > 0"
    " ORDER BY h.id, p.id LIMIT 64"};

/* The host is lost now, on the vantage points' word (the heartbeat rule is
 * store_hosts_mark_lost()'s), or was lost for its heartbeats and its
 * engines are now found silent too. */
static const struct db_stmt mark_host_lost = {
    "WITH lost AS (UPDATE hosts SET status = 'lost', lost_reason = 'vantage', updated_at = now()"
    "   WHERE id = $1::uuid AND (status = 'healthy'"
    "     OR (status = 'lost' AND lost_reason IS DISTINCT FROM 'vantage'))"
    "   RETURNING id, name, az, address, last_seen_at)"
    " INSERT INTO events (host_id, type, severity, message, detail)"
    " SELECT id, 'HostLost', 'warning', format('host %s in %s: %s', name, az, $2::text),"
    "   jsonb_build_object('host_id', id, 'name', name, 'az', az, 'address', address,"
    "     'last_seen_at', " STORE_TS("last_seen_at") ") || $3::jsonb"
                                                     " FROM lost RETURNING host_id"};

/* Ask the host's agent to report now: its parked sync is answered. */
static const struct db_stmt wake_host = {"SELECT hosts_bump_desired($1::uuid)"};

/* A cluster that is available but has a node down -- its engine not
 * running, or its host lost -- runs without the redundancy it was built
 * with: it is degraded until every node runs again (on its own, by a
 * failover and the old primary's return, or by a replacement). Only these
 * two statuses change here; an operation's own statuses are left to it.
 * Each change is an event. */
static const struct db_stmt track_health = {
    "WITH health AS (SELECT c.id, c.status,"
    "     count(*) FILTER (WHERE n.process_state IS DISTINCT FROM 'running'"
    "       OR h.status <> 'healthy') AS down, count(*) AS total,"
    "     string_agg(s.name || ' ' || n.id || ' ' || coalesce(n.process_state, 'pending')"
    "       || CASE WHEN h.status <> 'healthy' THEN ' (host ' || h.status || ')' ELSE '' END,"
    "       ', ' ORDER BY s.index, n.id) FILTER (WHERE n.process_state IS DISTINCT FROM"
    "       'running' OR h.status <> 'healthy') AS which"
    "   FROM clusters c JOIN nodes n ON n.cluster_id = c.id AND n.desired_state = 'running'"
    "   JOIN shards s ON s.id = n.shard_id JOIN hosts h ON h.id = n.host_id"
    "   WHERE c.status IN ('available', 'degraded') GROUP BY c.id, c.status),"
    " changed AS (UPDATE clusters c SET status = CASE WHEN hl.down > 0 THEN 'degraded'"
    "     ELSE 'available' END, updated_at = now()"
    "   FROM health hl WHERE c.id = hl.id"
    "     AND c.status <> CASE WHEN hl.down > 0 THEN 'degraded' ELSE 'available' END"
    "   RETURNING c.id, c.status, hl.down, hl.total, hl.which)"
    " INSERT INTO events (cluster_id, type, severity, message, detail)"
    " SELECT id, CASE WHEN status = 'degraded' THEN 'ClusterDegraded' ELSE 'ClusterRecovered' END,"
    "   CASE WHEN status = 'degraded' THEN 'warning' ELSE 'info' END,"
    "   CASE WHEN status = 'degraded' THEN format('%s of %s nodes down: %s', down, total, which)"
    "     ELSE format('all %s nodes running again', total) END,"
    "   jsonb_build_object('nodes_down', down, 'nodes', total)"
    " FROM changed RETURNING cluster_id"};

/* In the order of enum store_ha_finding. */
static const struct db_stmt *const findings[] = {&down_primaries,    &stray_primaries,
                                                 &leaderless_shards, &fallen_primaries,
                                                 &dead_nodes,        &stale_primaries};

static void read_work(const PGresult *res, int row, void *item)
{
    struct store_ha_work *w = item;
    store_copy_text(w->cluster, sizeof(w->cluster), res, row, 0);
    w->shard = (int)db_int(res, row, 1);
    store_copy_text(w->node, sizeof(w->node), res, row, 2);
    store_copy_text(w->why, sizeof(w->why), res, row, 3);
    w->since_ms = db_int(res, row, 4);
    w->timeout_ms = (int)db_int(res, row, 5);
    w->epoch = PQnfields(res) > 6 ? db_int(res, row, 6) : 0;
}

enum db_status store_ha_find(struct db_conn *conn, enum store_ha_finding which, int limit,
                             bool trust_losses, struct store_ha_work *rows, size_t max, size_t *n)
{
    struct db_params p = {0};
    if (which == STORE_HA_DOWN_PRIMARIES || which == STORE_HA_DEAD_NODES)
        db_param_int(&p, limit);
    if (which == STORE_HA_FALLEN_PRIMARIES || which == STORE_HA_STALE_PRIMARIES)
        db_param_int(&p, limit);
    if (which != STORE_HA_STRAY_PRIMARIES && which != STORE_HA_STALE_PRIMARIES)
        db_param_bool(&p, trust_losses);
    if (which == STORE_HA_LEADERLESS_SHARDS)
        db_param_int(&p, limit);
    return store_read_into(conn, findings[which], &p, read_work, rows, sizeof(*rows), max, n);
}

static void read_move(const PGresult *res, int row, void *item)
{
    struct store_ha_move *m = item;
    store_copy_text(m->cluster, sizeof(m->cluster), res, row, 0);
    m->shard = (int)db_int(res, row, 1);
    store_copy_text(m->to_az, sizeof(m->to_az), res, row, 2);
    store_copy_text(m->from_az, sizeof(m->from_az), res, row, 3);
    m->primaries = (int)db_int(res, row, 4);
}

enum db_status store_ha_unbalanced(struct db_conn *conn, int settle_s, struct store_ha_move *moves,
                                   size_t max, size_t *n)
{
    struct db_params p = {0};
    db_param_int(&p, settle_s);
    return store_read_into(conn, &unbalanced, &p, read_move, moves, sizeof(*moves), max, n);
}

static void read_bool(const PGresult *res, int row, void *item)
{
    *(bool *)item = db_bool(res, row, 0);
}

/* The boolean in the single row stmt returns for arg; false without one. */
static enum db_status one_bool(struct db_conn *conn, const struct db_stmt *stmt, const char *arg,
                               bool *out)
{
    struct db_params p = {0};
    db_param_text(&p, arg);
    *out = false;
    enum db_status st = store_read_row(conn, stmt, &p, read_bool, out);
    return st == DB_NOT_FOUND ? DB_OK : st;
}

enum db_status store_ha_try_lock(struct db_conn *conn, const char *cluster_id, bool *locked)
{
    return one_bool(conn, &lock_cluster, cluster_id, locked);
}

enum db_status store_node_still_primary(struct db_conn *conn, const char *node_id, bool *still)
{
    return one_bool(conn, &still_primary, node_id, still);
}

enum db_status store_node_still_fallen(struct db_conn *conn, const char *node_id, bool *still)
{
    return one_bool(conn, &still_fallen, node_id, still);
}

enum db_status store_node_designate_primary(struct db_conn *conn, const char *node_id,
                                            long long config_epoch)
{
    struct db_params p = {0};
    db_param_text(&p, node_id);
    if (config_epoch >= 0)
        db_param_int(&p, config_epoch);
    else
        db_param_text(&p, NULL);
    return db_exec_params(conn, &designate, &p);
}

enum db_status store_node_fenced(struct db_conn *conn, const char *node_id, const char *primary_id)
{
    return store_exec(conn, &fenced_event, node_id, primary_id);
}

enum db_status store_node_release_hold(struct db_conn *conn, const char *node_id, bool *released)
{
    const char *params[1] = {node_id};
    enum db_status st;
    PGresult *res = db_query(conn, &release_hold, 1, params, &st);
    if (res == NULL)
        return st;
    *released = PQntuples(res) > 0;
    PQclear(res);
    return DB_OK;
}

enum db_status store_node_restart_failed(struct db_conn *conn, const char *node_id, bool *failed)
{
    return one_bool(conn, &restart_failed, node_id, failed);
}

enum db_status store_node_demoted(struct db_conn *conn, const char *node_id)
{
    return store_exec(conn, &demoted, node_id, NULL);
}

enum db_status store_clusters_track_health(struct db_conn *conn, int *changed)
{
    enum db_status st;
    PGresult *res = db_query(conn, &track_health, 0, NULL, &st);
    if (res == NULL)
        return st;
    *changed = PQntuples(res);
    PQclear(res);
    return DB_OK;
}

static void read_silent(const PGresult *res, int row, void *item)
{
    struct store_silent_primary *sp = item;
    store_copy_text(sp->host, sizeof(sp->host), res, row, 0);
    store_copy_text(sp->node, sizeof(sp->node), res, row, 1);
    store_copy_text(sp->cluster, sizeof(sp->cluster), res, row, 2);
    sp->vantage = (int)db_int(res, row, 3);
    sp->silent = (int)db_int(res, row, 4);
    sp->agent_seen_ms = db_int(res, row, 5);
    sp->silent_ms = db_int(res, row, 6);
    sp->host_lost = db_bool(res, row, 7);
}

enum db_status store_ha_silent_primaries(struct db_conn *conn, int suspect_ms, int lost_ms,
                                         int fresh_ms, struct store_silent_primary *rows,
                                         size_t max, size_t *n)
{
    struct db_params p = {0};
    db_param_int(&p, suspect_ms);
    db_param_int(&p, lost_ms);
    db_param_int(&p, fresh_ms);
    return store_read_into(conn, &silent_primaries, &p, read_silent, rows, sizeof(*rows), max, n);
}

enum db_status store_host_wake(struct db_conn *conn, const char *host_id)
{
    return store_exec(conn, &wake_host, host_id, NULL);
}

enum db_status store_host_lost_now(struct db_conn *conn, const char *host_id, const char *why,
                                   const char *detail, bool *marked)
{
    const char *params[3] = {host_id, why, detail};
    enum db_status st;
    PGresult *res = db_query(conn, &mark_host_lost, 3, params, &st);
    if (res == NULL)
        return st;
    *marked = PQntuples(res) > 0;
    PQclear(res);
    return DB_OK;
}
