/* store_hosts.c -- hosts (the VMs running cairn-agent), the engines each has,
 * what the agents report, the desired set each agent pulls, and the LISTEN
 * that hears when one changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_config.h"
#include "scheduler.h"
#include "store.h"
#include "xalloc.h"

/* ---- registration and credentials ---------------------------------------- */

/* A new host is 'pending' until approved ($11), unless it is approved at
 * once; a name that exists is taken over only when $12 says so (a join
 * token for it): same id, a new credential, fresh capacity and engines,
 * and healthy again whatever it was. */
static const struct db_stmt upsert_host = {
    "INSERT INTO hosts (name, az, address, vcpus, memory_mib, port_min, port_max,"
    "                   credential_id, credential_hash, agent_version, last_seen_at, status,"
    "                   approved_at)"
    " VALUES ($1, $2, $3, $4::int, $5::bigint, $6::int, $7::int, $8, $9::bytea, $10, now(),"
    "         CASE WHEN $11::boolean THEN 'healthy' ELSE 'pending' END,"
    "         CASE WHEN $11::boolean THEN now() END)"
    " ON CONFLICT (name) DO UPDATE SET az = EXCLUDED.az, address = EXCLUDED.address,"
    "   vcpus = EXCLUDED.vcpus, memory_mib = EXCLUDED.memory_mib,"
    "   port_min = EXCLUDED.port_min, port_max = EXCLUDED.port_max,"
    "   credential_id = EXCLUDED.credential_id, credential_hash = EXCLUDED.credential_hash,"
    "   agent_version = EXCLUDED.agent_version, last_seen_at = now(), status = 'healthy',"
    "   approved_at = coalesce(hosts.approved_at, now()), lost_reason = NULL, updated_at = now()"
    "   WHERE $12::boolean"
    " RETURNING id, (xmax = 0), status"};

static const struct db_stmt pending_hosts = {"SELECT count(*) FROM hosts WHERE status = 'pending'"};

static const struct db_stmt approve_host = {
    "UPDATE hosts SET status = 'healthy', approved_at = now(), updated_at = now()"
    " WHERE id = $1::uuid AND status = 'pending'"};

static const struct db_stmt delete_host = {
    "WITH gone AS (DELETE FROM hosts h WHERE id = $1::uuid"
    "   AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.host_id = h.id)"
    "   RETURNING id, name, az, address)"
    " INSERT INTO events (host_id, type, severity, message, detail)"
    " SELECT id, 'HostDeleted', 'info',"
    "   format('host %s in %s deleted: its agent credential opens nothing', name, az),"
    "   json_build_object('host_id', id, 'name', name, 'az', az, 'address', address)"
    " FROM gone"};

static const struct db_stmt host_exists = {"SELECT 1 FROM hosts WHERE id = $1::uuid"};

/* Engines: upsert what the agent has, drop what it no longer has; nothing
 * is written when nothing changed. */
static const struct db_stmt upsert_engines = {
    "INSERT INTO host_engines (host_id, engine, version, full_version, path)"
    " SELECT DISTINCT ON (e.engine, e.line) $1::uuid, e.engine, e.line, e.version, e.path"
    " FROM jsonb_to_recordset($2::jsonb) AS e(engine text, line text, version text, path text)"
    " ORDER BY e.engine, e.line, e.version DESC"
    " ON CONFLICT (host_id, engine, version) DO UPDATE"
    "   SET full_version = EXCLUDED.full_version, path = EXCLUDED.path"
    "   WHERE host_engines.full_version <> EXCLUDED.full_version"
    "      OR host_engines.path <> EXCLUDED.path"};

static const struct db_stmt prune_engines = {
    "DELETE FROM host_engines h WHERE h.host_id = $1::uuid AND NOT EXISTS ("
    "  SELECT 1 FROM jsonb_to_recordset($2::jsonb) AS e(engine text, line text)"
    "  WHERE e.engine = h.engine AND e.line = h.version)"};

static const struct db_stmt host_event = {
    "INSERT INTO events (host_id, type, severity, message, detail)"
    " SELECT id, $2, $3, format($4, name, az), json_build_object('host_id', id, 'name', name,"
    "        'az', az, 'address', address)"
    " FROM hosts WHERE id = $1::uuid"};

static const struct db_stmt host_credential = {
    "SELECT id, encode(credential_hash, 'hex') FROM hosts WHERE credential_id = $1"};

static enum db_status exec_stmt(struct db_conn *conn, const struct db_stmt *stmt, int n,
                                const char *const *params)
{
    enum db_status st;
    PGresult *res = db_query(conn, stmt, n, params, &st);
    PQclear(res);
    return st;
}

static enum db_status record_engines(struct db_conn *conn, const char *host_id, const char *engines)
{
    const char *params[2] = {host_id, engines};
    enum db_status st = exec_stmt(conn, &upsert_engines, 2, params);
    return st == DB_OK ? exec_stmt(conn, &prune_engines, 2, params) : st;
}

enum db_status store_host_event(struct db_conn *conn, const char *host_id, const char *type,
                                const char *severity, const char *message_fmt)
{
    const char *params[4] = {host_id, type, severity, message_fmt};
    return exec_stmt(conn, &host_event, 4, params);
}

enum db_status store_host_register(struct db_conn *conn, const struct store_host_registration *r,
                                   const struct auth_token *credential, char *host_id, char *status)
{
    char vcpus[16], memory[24], pmin[16], pmax[16];
    char hash[2 + 2 * CRYPTO_SHA256_LEN + 1] = "\\x";
    const char *params[12] = {r->name,
                              r->az,
                              r->address,
                              vcpus,
                              memory,
                              pmin,
                              pmax,
                              credential->id,
                              hash,
                              r->agent_version,
                              r->approved ? "true" : "false",
                              r->takeover ? "true" : "false"};
    enum db_status st;

    snprintf(vcpus, sizeof(vcpus), "%d", r->vcpus);
    snprintf(memory, sizeof(memory), "%lld", r->memory_mib);
    snprintf(pmin, sizeof(pmin), "%d", r->port_min);
    snprintf(pmax, sizeof(pmax), "%d", r->port_max);
    crypto_hex(credential->hash, CRYPTO_SHA256_LEN, hash + 2);
    PGresult *res = db_query(conn, &upsert_host, 12, params, &st);
    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_CONFLICT; /* the name is registered, and this is no takeover */
    }
    snprintf(host_id, AUTH_UUID_LEN + 1, "%s", PQgetvalue(res, 0, 0));
    bool inserted = PQgetvalue(res, 0, 1)[0] == 't';
    snprintf(status, 16, "%s", PQgetvalue(res, 0, 2));
    PQclear(res);
    if ((st = record_engines(conn, host_id, r->engines)) != DB_OK)
        return st;
    if (!inserted)
        return store_host_event(conn, host_id, "HostReregistered", "info",
                                "host %s in %s registered again with a join token for its name "
                                "(a new agent credential)");
    return store_host_event(conn, host_id, "HostRegistered", r->approved ? "info" : "warning",
                            r->approved ? "host %s in %s registered"
                                        : "host %s in %s registered and waits for an admin "
                                          "to approve it (POST /v1/hosts/{id}/approve)");
}

enum db_status store_hosts_pending(struct db_conn *conn, long long *count)
{
    return store_get_int64(conn, &pending_hosts, 0, NULL, count);
}

/* After a change to host id that changed nothing: DB_CONFLICT when the
 * host exists (it was not in a state the change applies to), else
 * DB_NOT_FOUND. */
static enum db_status unchanged(struct db_conn *conn, const char *id)
{
    const char *params[1] = {id};
    long long one;
    enum db_status st = store_get_int64(conn, &host_exists, 1, params, &one);
    return st == DB_OK ? DB_CONFLICT : st;
}

enum db_status store_host_approve(struct db_conn *conn, const char *id)
{
    enum db_status st = store_change(conn, &approve_host, id, NULL);

    if (st == DB_NOT_FOUND)
        return unchanged(conn, id);
    if (st != DB_OK)
        return st;
    return store_host_event(conn, id, "HostApproved", "info",
                            "host %s in %s approved: nodes may be placed on it");
}

enum db_status store_host_delete(struct db_conn *conn, const char *id)
{
    enum db_status st = store_change(conn, &delete_host, id, NULL);
    return st == DB_NOT_FOUND ? unchanged(conn, id) : st;
}

enum db_status store_host_credential(struct db_conn *conn, const char *credential_id, char *host_id,
                                     unsigned char *hash)
{
    const char *params[1] = {credential_id};
    enum db_status st;
    PGresult *res = db_query(conn, &host_credential, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0 || PQgetlength(res, 0, 1) != 2 * CRYPTO_SHA256_LEN) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    snprintf(host_id, AUTH_UUID_LEN + 1, "%s", PQgetvalue(res, 0, 0));
    st = crypto_unhex(PQgetvalue(res, 0, 1), CRYPTO_SHA256_LEN, hash) ? DB_OK : DB_ERROR;
    PQclear(res);
    return st;
}

/* ---- sync: heartbeat, report, desired set -------------------------------- */

/* The heartbeat, returning the status the host had before it. */
static const struct db_stmt heartbeat = {
    "WITH prev AS (SELECT status FROM hosts WHERE id = $1::uuid FOR UPDATE)"
    " UPDATE hosts h SET last_seen_at = now(),"
    "   status = CASE WHEN prev.status = 'lost' THEN 'healthy' ELSE prev.status END,"
    "   lost_reason = NULL,"
    "   updated_at = CASE WHEN prev.status = 'lost' THEN now() ELSE h.updated_at END"
    " FROM prev WHERE h.id = $1::uuid RETURNING prev.status"};

/* Roles and links that cairnd read from node x's engine itself after the
 * agent read the INFO behind its report win over that report: the report
 * says how old its reading is (observed_ms_ago; 3 s, longer than an agent's
 * INFO period, when it does not say). */
#define CAIRND_READ_SINCE(x)                                                                       \
    "coalesce(" x ".role_observed_at > now() - make_interval(secs =>"                              \
    " coalesce(r.observed_ms_ago, 3000) / 1000.0), false)"
#define CAIRND_READ_IT         CAIRND_READ_SINCE("n")
#define CAIRND_READ_SHARD_MATE CAIRND_READ_SINCE("o")

/* Cluster mode: the report's claim that node n is its shard's primary is
 * stale -- a shard-mate recorded primary holds a higher configuration epoch,
 * and the engines side with that one. An old primary back from a cut or a
 * freeze says so until the cluster bus tells it otherwise; it is recorded a
 * replica, and ha.c holds its writes meanwhile. */
#define STALE_CLAIM                                                                                \
    "(r.role = 'primary' AND EXISTS (SELECT 1 FROM nodes m WHERE m.shard_id = n.shard_id"          \
    "   AND m.id <> n.id AND m.role = 'primary' AND m.desired_state <> 'deleted'"                  \
    "   AND m.config_epoch > r.config_epoch))"

/* In cluster mode disabled cairnd designates the primary (nodes.role), so
 * a report changes only observed_role there; in cluster mode the engines
 * elect, and their reported role is the role, unless the claim is stale.
 * A crashed engine reports no role, and keeps the one it had. */
static const struct db_stmt record_nodes = {
    "UPDATE nodes n SET pid = r.pid, process_state = r.status,"
    "   state_since = CASE WHEN n.process_state IS DISTINCT FROM r.status THEN now()"
    "     ELSE n.state_since END,"
    "   down_since = CASE WHEN r.status IN ('running', 'loading', 'unresponsive') THEN NULL"
    "     ELSE coalesce(n.down_since, now()) END,"
    "   observed_role = CASE WHEN " CAIRND_READ_IT " THEN n.observed_role ELSE r.role END,"
    "   role = CASE WHEN " CAIRND_READ_IT " OR c.spec ->> 'cluster_mode' = 'disabled' THEN n.role"
    "     WHEN " STALE_CLAIM " THEN 'replica' ELSE coalesce(r.role, n.role) END,"
    "   config_epoch = CASE WHEN " CAIRND_READ_IT " THEN n.config_epoch"
    "     ELSE coalesce(r.config_epoch, n.config_epoch) END,"
    "   running_version = r.version, replication_offset = r.replication_offset,"
    "   master_link_status = CASE WHEN " CAIRND_READ_IT " THEN n.master_link_status"
    "     ELSE r.master_link_status END,"
    "   sync_in_progress = CASE WHEN " CAIRND_READ_IT " THEN n.sync_in_progress"
    "     ELSE r.sync_in_progress END,"
    "   loading = r.loading, restarts = coalesce(r.restarts, 0), reported_at = now(),"
    "   users_repairs = coalesce(r.users_repairs, 0), repoints = coalesce(r.repoints, 0),"
    "   config_repairs = coalesce(r.config_repairs, 0),"
    "   login_repairs = coalesce(r.login_repairs, 0),"
    "   primary_silent_since = CASE WHEN r.primary_silent_ms > 0 THEN "
    "coalesce(n.primary_silent_since,"
    "     now() - make_interval(secs => r.primary_silent_ms / 1000.0)) END"
    " FROM jsonb_to_recordset($2::jsonb) AS r(node_id uuid, pid int, status text, role text,"
    "   version text, replication_offset bigint, master_link_status text,"
    "   sync_in_progress boolean, loading boolean, restarts int, observed_ms_ago int,"
    "   primary_silent_ms int, config_epoch bigint, users_repairs int, repoints int,"
    "   config_repairs int, login_repairs int), clusters c"
    " WHERE n.id = r.node_id AND n.host_id = $1::uuid AND c.id = n.cluster_id"};

/* What a node's agent put back since its last report, each kind counted
 * apart: its engine's users changed behind Cairn's back (someone holding
 * Cairn's own engine password: a tenant cannot), its engine following
 * another primary than the designated one (cluster mode disabled), its
 * guarded settings changed, or Cairn's login refused (put back by a
 * restart). An
 * event per kind whose count grew; recorded before the report is, while
 * the stored counts are the last ones. An agent that restarts counts from
 * 0 again. */
static const struct db_stmt record_repairs = {
    "INSERT INTO events (cluster_id, type, severity, message, detail)"
    " SELECT n.cluster_id, k.type, 'warning', format(k.message, n.id),"
    "   jsonb_build_object('node', n.id, 'repairs', k.now - k.before)"
    " FROM nodes n JOIN jsonb_to_recordset($2::jsonb) AS r(node_id uuid, users_repairs int,"
    "   repoints int, config_repairs int, login_repairs int) ON r.node_id = n.id"
    " CROSS JOIN LATERAL (VALUES"
    "   ('EngineUsersRepaired', 'node %s: its engine''s users were changed behind Cairn''s back;"
    " its agent put them back', coalesce(r.users_repairs, 0), n.users_repairs),"
    "   ('ReplicaRepointed', 'node %s followed another primary than the designated one; its"
    " agent pointed it back', coalesce(r.repoints, 0), n.repoints),"
    "   ('EngineConfigRepaired', 'node %s: settings Cairn manages were changed on its engine"
    " behind Cairn''s back; its agent put them back', coalesce(r.config_repairs, 0),"
    " n.config_repairs),"
    "   ('EngineLoginRepaired', 'node %s: its engine refused Cairn''s own login (its users were"
    " changed behind Cairn''s back); its agent restarted it with Cairn''s users',"
    " coalesce(r.login_repairs, 0), n.login_repairs))"
    "   AS k(type, message, now, before)"
    " WHERE n.host_id = $1::uuid AND k.now > k.before"};

/* Cluster mode: a replica that reports itself primary was elected by the
 * engines (cairnd's own failovers record their own events). Recorded before
 * the report is, while the stored role still says replica. */
static const struct db_stmt record_elections = {
    "INSERT INTO events (cluster_id, type, severity, message, detail)"
    " SELECT n.cluster_id, 'FailoverComplete', 'warning',"
    "   format('shard %s: the engines elected node %s (%s) primary', s.name, n.id, h.az),"
    "   jsonb_build_object('automatic', true, 'elected', true, 'shard', s.name, 'to', n.id,"
    "     'az', h.az)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id JOIN clusters c ON c.id = n.cluster_id"
    " JOIN hosts h ON h.id = n.host_id"
    " JOIN jsonb_to_recordset($2::jsonb) AS r(node_id uuid, role text, observed_ms_ago int,"
    "   config_epoch bigint) ON r.node_id = n.id"
    " WHERE n.host_id = $1::uuid AND c.spec ->> 'cluster_mode' <> 'disabled'"
    "   AND n.role = 'replica' AND r.role = 'primary' AND NOT " CAIRND_READ_IT
    "   AND NOT " STALE_CLAIM
    "   AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "     AND o.status IN ('pending', 'running') AND o.kind = 'failover')"};

/* Cluster mode: once a node's engine reports that it serves as its
 * shard's primary, a shard-mate still recorded primary whose engine does
 * not run, or whose last known epoch is lower (its host lost or frozen
 * while the engines elected), is no longer one: it can only rejoin as a
 * replica, and meanwhile it must be neither published as a primary nor
 * spared replacement as one. Not on a reading older than what cairnd read
 * from either engine itself: a replica's report from before it was told to
 * replicate (a create resumed after a restart of cairnd, an agent's sync
 * held up) still says primary, with the epoch it had as an empty primary. */
static const struct db_stmt demote_fallen = {
    "UPDATE nodes o SET role = 'replica'"
    " FROM nodes n JOIN clusters c ON c.id = n.cluster_id"
    " JOIN jsonb_to_recordset($2::jsonb) AS r(node_id uuid, role text, status text,"
    "   config_epoch bigint, observed_ms_ago int) ON r.node_id = n.id"
    " WHERE n.host_id = $1::uuid AND coalesce(c.spec ->> 'cluster_mode', 'enabled') = 'enabled'"
    "   AND r.role = 'primary' AND r.status = 'running' AND NOT " STALE_CLAIM
    "   AND NOT " CAIRND_READ_IT " AND NOT " CAIRND_READ_SHARD_MATE
    "   AND o.shard_id = n.shard_id AND o.id <> n.id AND o.role = 'primary'"
    "   AND (o.process_state IS DISTINCT FROM 'running' OR o.config_epoch < r.config_epoch)"};

/* A deleted node's row goes once its agent no longer reports it: the
 * engine is stopped and its data removed. */
static const struct db_stmt purge_deleted = {
    "DELETE FROM nodes WHERE host_id = $1::uuid AND desired_state = 'deleted'"
    " AND id NOT IN (SELECT r.node_id FROM jsonb_to_recordset($2::jsonb) AS r(node_id uuid))"};

/* A deleted cluster's node on this host (node_tombstones) goes once its
 * agent no longer reports it. */
static const struct db_stmt purge_tombstones = {
    "DELETE FROM node_tombstones WHERE host_id = $1::uuid"
    " AND node_id NOT IN (SELECT r.node_id FROM jsonb_to_recordset($2::jsonb) AS r(node_id uuid))"};

/* And a removed shard's row once its last node's is gone. */
static const struct db_stmt purge_removed_shards = {
    "DELETE FROM shards s WHERE s.removed_at IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.shard_id = s.id)"};

static const struct db_stmt host_ports = {
    "SELECT h.port_min, h.port_max, n.port, n.id FROM hosts h"
    " LEFT JOIN nodes n ON n.host_id = h.id WHERE h.id = $1::uuid FOR UPDATE OF h"};

static const struct db_stmt set_port = {"UPDATE nodes SET port = $2::int WHERE id = $1::uuid"};

/* Ports a deleted cluster's engines may still hold there. */
static const struct db_stmt tombstone_ports = {
    "SELECT port FROM node_tombstones WHERE host_id = $1::uuid"};

static const struct db_stmt desired_generation = {
    "SELECT desired_generation FROM hosts WHERE id = $1::uuid"};

enum db_status store_host_assign_ports(struct db_conn *conn, const char *host_id)
{
    const char *params[1] = {host_id};
    enum db_status st;
    PGresult *res = db_query(conn, &host_ports, 1, params, &st);

    if (res == NULL)
        return st;
    PGresult *held = db_query(conn, &tombstone_ports, 1, params, &st);
    if (held == NULL) {
        PQclear(res);
        return st;
    }
    int rows = PQntuples(res), nheld = PQntuples(held);
    int *used = xcalloc((size_t)rows + (size_t)nheld + 1, sizeof(int));
    size_t nused = 0;
    for (int i = 0; i < rows; i++) {
        if (!PQgetisnull(res, i, 2))
            used[nused++] = atoi(PQgetvalue(res, i, 2));
    }
    for (int i = 0; i < nheld; i++)
        used[nused++] = atoi(PQgetvalue(held, i, 0));
    PQclear(held);
    for (int i = 0; i < rows && st == DB_OK; i++) {
        if (PQgetisnull(res, i, 3) || !PQgetisnull(res, i, 2))
            continue;
        int port =
            sched_pick_port(atoi(PQgetvalue(res, i, 0)), atoi(PQgetvalue(res, i, 1)), used, nused);
        if (port < 0)
            break; /* the range is full; the node waits without a port */
        char text[16];
        snprintf(text, sizeof(text), "%d", port);
        const char *set[2] = {PQgetvalue(res, i, 3), text};
        st = exec_stmt(conn, &set_port, 2, set);
        used[nused++] = port;
    }
    free(used);
    PQclear(res);
    return st;
}

enum db_status store_host_generation(struct db_conn *conn, const char *host_id,
                                     long long *generation)
{
    const char *params[1] = {host_id};
    return store_get_int64(conn, &desired_generation, 1, params, generation);
}

enum db_status store_shards_purge_removed(struct db_conn *conn)
{
    return exec_stmt(conn, &purge_removed_shards, 0, NULL);
}

enum db_status store_host_sync(struct db_conn *conn, const char *host_id, const char *engines,
                               const char *nodes, const struct store_report_facts *facts,
                               long long *generation)
{
    const char *params[2] = {host_id, nodes}, *engine_params[2] = {host_id, engines};
    struct db_batch_item report[7];
    size_t n = 0;

    /* Node rows first, then the host row: the order in which a change to a
     * node's desired state takes them (its trigger bumps the host's
     * generation), so the two cannot deadlock. A statement that finds
     * nothing to do without a primary (or a repair) in the report is not
     * sent, and those that are go in one round trip: a fleet syncs a
     * thousand times a second. */
    if (facts->primaries)
        report[n++] = (struct db_batch_item){&record_elections, 2, params, NULL};
    if (facts->repairs)
        report[n++] = (struct db_batch_item){&record_repairs, 2, params, NULL};
    report[n++] = (struct db_batch_item){&record_nodes, 2, params, NULL};
    if (facts->primaries)
        report[n++] = (struct db_batch_item){&demote_fallen, 2, params, NULL};
    report[n++] = (struct db_batch_item){&purge_deleted, 2, params, NULL};
    report[n++] = (struct db_batch_item){&purge_tombstones, 2, params, NULL};
    report[n++] = (struct db_batch_item){&heartbeat, 1, params, NULL};
    enum db_status st = db_batch(conn, report, n);
    if (st != DB_OK)
        return st;
    PGresult *beat = report[n - 1].result;
    bool found = PQntuples(beat) == 1,
         was_lost = found && strcmp(PQgetvalue(beat, 0, 0), "lost") == 0;
    for (size_t i = 0; i < n; i++)
        PQclear(report[i].result);
    if (!found)
        return DB_NOT_FOUND;
    if (was_lost && (st = store_host_event(conn, host_id, "HostRecovered", "info",
                                           "host %s in %s is reporting again")) != DB_OK)
        return st;
    /* The host is there: its engines, and the generation to answer with. */
    struct db_batch_item rest[3] = {{&upsert_engines, 2, engine_params, NULL},
                                    {&prune_engines, 2, engine_params, NULL},
                                    {&desired_generation, 1, params, NULL}};
    if ((st = db_batch(conn, rest, 3)) != DB_OK)
        return st;
    *generation = PQntuples(rest[2].result) == 1 ? db_int(rest[2].result, 0, 0) : 0;
    for (size_t i = 0; i < 3; i++)
        PQclear(rest[i].result);
    return DB_OK;
}

/* The desired set in the agent protocol's shape: host_desired_set
 * (migrations/0011_views.sql) says what goes into it. $3: the managed
 * settings' defaults. */
static const struct db_stmt desired_set = {
    "SELECT * FROM host_desired_set($1::uuid, $2::int, $3::jsonb)"};

/* Every managed setting's default by its parameter name, as JSON text (free it). */
static char *managed_defaults(void)
{
    json_t *obj = json_object();
    const struct engine_config_managed *m;

    for (size_t i = 0; (m = engine_config_managed_at(i)) != NULL; i++)
        json_object_set_new(obj, m->param, json_string(m->fallback));
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    return text;
}

enum db_status store_host_desired(struct db_conn *conn, const char *host_id,
                                  int heartbeat_timeout_s, char **out)
{
    char timeout[16];
    char *defaults = managed_defaults();
    const char *params[3] = {host_id, timeout, defaults};

    snprintf(timeout, sizeof(timeout), "%d", heartbeat_timeout_s);
    enum db_status st = store_get_text(conn, &desired_set, 3, params, out);
    free(defaults);
    return st;
}

/* ---- the host monitor ------------------------------------------------------ */

/* The loss rule. A healthy host is lost once it has been silent for the
 * heartbeat timeout ($1, seconds) on a clock that starts at the later of its
 * last heartbeat (last_seen_at) and the moment the deciding cairnd began to
 * watch: $2 seconds ago, the later of when it started listening and when
 * its database connection came back after an outage (monitor.h keeps that
 * clock). A heartbeat could not have been recorded while that cairnd was
 * not listening or could not reach this database, so silence from before
 * then is no evidence: after a restart or an outage every host has a whole
 * timeout to report. Several cairnds sharing the database run this on the
 * same rows, each with its own $2: one that was up all along decides on
 * last_seen_at alone, one that just started waits; "status = 'healthy'"
 * makes each loss recorded once, with its event, by whichever decides
 * first. Durations only cross from cairnd to the database, never instants,
 * so the two clocks need not agree.
 *
 * Such a host is lost for 'heartbeat' only: cairnd cannot manage it, but
 * its engines may be serving (the agent died or was paused), so its
 * primaries fail over only once the vantage points find them silent too
 * (ha.c). */
static const struct db_stmt mark_lost = {
    "WITH lost AS (UPDATE hosts SET status = 'lost', lost_reason = 'heartbeat', updated_at = now()"
    "   WHERE status = 'healthy'"
    "     AND greatest(last_seen_at, now() - make_interval(secs => $2::float8))"
    "       < now() - make_interval(secs => $1::int)"
    "   RETURNING id, name, az, address, last_seen_at)"
    " INSERT INTO events (host_id, type, severity, message, detail)"
    " SELECT id, 'HostLost', 'warning',"
    "   format('host %s in %s missed its heartbeats for %s s; its primaries fail over only"
    " if they stop answering their replicas and cairnd too', name, az, $1::int),"
    "   json_build_object('host_id', id, 'name', name, 'az', az, 'address', address,"
    "                     'last_seen_at', " STORE_TS(
        "last_seen_at") ")"
                        " FROM lost RETURNING host_id"};

enum db_status store_hosts_mark_lost(struct db_conn *conn, int timeout_s, double watched_s,
                                     int *marked)
{
    char timeout[16], watched[32];
    const char *params[2] = {timeout, watched};
    enum db_status st;

    snprintf(timeout, sizeof(timeout), "%d", timeout_s);
    snprintf(watched, sizeof(watched), "%.3f", watched_s);
    PGresult *res = db_query(conn, &mark_lost, 2, params, &st);
    if (res == NULL)
        return st;
    *marked = PQntuples(res);
    PQclear(res);
    return DB_OK;
}

/* ---- reads for the API ------------------------------------------------------ */

/* The documents come from the view host_documents (migrations/0011_views.sql);
 * one host's adds the nodes placed on it. */
static const struct db_stmt list_hosts = {
    "SELECT name, doc FROM host_documents"
    " WHERE name > $1 AND ($2::text IS NULL OR az = $2) AND ($3::text IS NULL OR status = $3)"
    " ORDER BY name LIMIT $4::int"};

static const struct db_stmt get_host = {
    "SELECT (doc::jsonb || jsonb_build_object('nodes', nodes))::text FROM host_documents"
    " WHERE id = $1::uuid"};

enum db_status store_hosts_list(struct db_conn *conn, const struct store_host_filter *f,
                                const struct page *page, char **items, char *next_key)
{
    const char *params[4] = {page->has_after ? page->after : "", f->az, f->status, NULL};
    return store_list(conn, &list_hosts, 4, params, page, items, next_key);
}

enum db_status store_host_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_host, 1, params, out);
}

static const struct db_stmt hosts_by_status = {
    "SELECT status, count(*) FROM hosts GROUP BY status ORDER BY status"};

enum db_status store_hosts_by_status(struct db_conn *conn, struct store_counts *out)
{
    return store_count_rows(conn, &hosts_by_status, out);
}

/* ---- desired-set notifications ------------------------------------------------- */

/* Migration 0003's triggers NOTIFY this channel with the host's id. */
#define DESIRED_CHANNEL "cairn_desired"

enum db_status store_hosts_listen(PGconn *pg)
{
    PGresult *res = PQexec(pg, "LISTEN " DESIRED_CHANNEL);
    enum db_status st = db_classify(pg, res);
    PQclear(res);
    return st;
}

/* ---- the host's certificate (transit encryption) ----------------------------- */

/* Due: the host runs a node of a cluster with transit encryption and has no
 * certificate, or one that ends within 30 days. */
static const struct db_stmt host_tls_due = {
    "SELECT h.address FROM hosts h WHERE h.id = $1::uuid"
    " AND (h.tls_not_after IS NULL OR h.tls_not_after < now() + interval '30 days')"
    " AND EXISTS (SELECT 1 FROM nodes n JOIN clusters c ON c.id = n.cluster_id"
    "   WHERE n.host_id = h.id AND n.desired_state <> 'deleted'"
    "     AND coalesce((c.spec ->> 'transit_encryption')::boolean, false))"};

/* The new certificate is a new desired set: as hosts_bump_desired() does. */
static const struct db_stmt host_tls_set = {
    "UPDATE hosts SET tls_cert_pem = $2, tls_key_sealed = $3::bytea,"
    "  tls_not_after = to_timestamp($4::bigint), desired_generation = desired_generation + 1"
    " WHERE id = $1::uuid"};

static const struct db_stmt host_wake = {"SELECT pg_notify('cairn_desired', $1)"};

enum db_status store_host_tls_due(struct db_conn *conn, const char *host_id, char **address)
{
    const char *params[1] = {host_id};
    return store_get_text(conn, &host_tls_due, 1, params, address);
}

enum db_status store_host_tls_set(struct db_conn *conn, const char *host_id, const char *cert_pem,
                                  const char *key_sealed, long long not_after)
{
    char until[32];
    const char *params[4] = {host_id, cert_pem, key_sealed, until};
    enum db_status st;

    snprintf(until, sizeof(until), "%lld", not_after);
    PQclear(db_query(conn, &host_tls_set, 4, params, &st));
    if (st == DB_OK)
        PQclear(db_query(conn, &host_wake, 1, params, &st));
    return st;
}
