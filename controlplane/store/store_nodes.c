/* store_nodes.c -- the nodes of clusters as operations read and change
 * them: placement and last reported state, roles cairnd itself confirmed,
 * deletion, the rows of a node replacement, a node's engine during an
 * upgrade, and the nodes serving clients (for the Sentinel front). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "xalloc.h"

/* ---- a cluster's nodes ----------------------------------------------------------- */

static const struct db_stmt load_cluster = {
    "SELECT coalesce(spec ->> 'cluster_mode', 'enabled') = 'enabled', uid"
    " FROM clusters WHERE id = $1"};

static const struct db_stmt load_nodes = {
    "SELECT n.id, coalesce(n.host_id::text, ''), coalesce(h.address, ''), coalesce(n.port, 0),"
    "  s.index, n.ordinal, coalesce(lower(s.slots[1]), -1), coalesce(upper(s.slots[1]) - 1, -1),"
    "  coalesce(n.process_state, ''), coalesce(h.status = 'lost', false), coalesce(n.role, ''),"
    "  coalesce(h.az, ''), n.engine, n.engine_version, coalesce(n.running_version, ''),"
    "  coalesce((c.spec ->> 'transit_encryption')::boolean, false)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id LEFT JOIN hosts h ON h.id = n.host_id"
    " JOIN clusters c ON c.id = n.cluster_id"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted'"
    " ORDER BY s.index, n.ordinal"};

static void read_node(const PGresult *res, int r, void *item)
{
    struct cluster_node *n = item;
    store_copy_text(n->id, sizeof(n->id), res, r, 0);
    store_copy_text(n->host_id, sizeof(n->host_id), res, r, 1);
    store_copy_text(n->address, sizeof(n->address), res, r, 2);
    n->port = (int)db_int(res, r, 3);
    n->shard = (int)db_int(res, r, 4);
    n->ordinal = (int)db_int(res, r, 5);
    n->slot_first = (int)db_int(res, r, 6);
    n->slot_last = (int)db_int(res, r, 7);
    store_copy_text(n->process_state, sizeof(n->process_state), res, r, 8);
    n->host_lost = db_bool(res, r, 9);
    store_copy_text(n->role, sizeof(n->role), res, r, 10);
    store_copy_text(n->az, sizeof(n->az), res, r, 11);
    store_copy_text(n->engine, sizeof(n->engine), res, r, 12);
    store_copy_text(n->engine_version, sizeof(n->engine_version), res, r, 13);
    store_copy_text(n->running_version, sizeof(n->running_version), res, r, 14);
    n->tls = db_bool(res, r, 15);
}

enum db_status store_cluster_nodes(struct db_conn *conn, const char *cluster_id,
                                   struct cluster_nodes *out, bool *cluster_mode, char **uid)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, cluster_id);
    enum db_status st = store_query_row(conn, &load_cluster, &p, &res);
    if (st != DB_OK)
        return st;
    *cluster_mode = db_bool(res, 0, 0);
    free(*uid);
    *uid = store_dup_text(res, 0, 1);
    PQclear(res);
    free(out->items);
    out->items =
        store_read_rows(conn, &load_nodes, &p, sizeof(*out->items), read_node, &out->count, &st);
    return st;
}

/* ---- roles cairnd confirmed --------------------------------------------------------- */

/* One statement for all of them ($1: [{"id", "role"}]): it takes every node
 * row before its trigger takes the shard's host rows (AFTER triggers run at
 * the statement's end), the order an agent's report takes them in, so the
 * two cannot deadlock. */
static const struct db_stmt record_roles = {
    "UPDATE nodes n SET role = r.role, observed_role = r.role,"
    "  master_link_status = CASE WHEN r.role = 'replica' THEN 'up' END,"
    "  loading = false, sync_in_progress = false, reported_at = now(), role_observed_at = now()"
    " FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, role text) WHERE n.id = r.id"};

enum db_status store_nodes_set_roles(struct db_conn *conn, const char *roles_json)
{
    return store_exec(conn, &record_roles, roles_json, NULL);
}

static const struct db_stmt swap_roles = {
    "UPDATE nodes SET role = CASE WHEN id = $2::uuid THEN 'primary' ELSE 'replica' END,"
    "  observed_role = CASE WHEN id = $2::uuid THEN 'primary' ELSE 'replica' END,"
    "  master_link_status = CASE WHEN id = $2::uuid THEN NULL ELSE master_link_status END,"
    "  reported_at = now(), role_observed_at = now()"
    " WHERE id IN ($1::uuid, $2::uuid)"};

enum db_status store_nodes_swap_roles(struct db_conn *conn, const char *previous,
                                      const char *target)
{
    return store_exec(conn, &swap_roles, previous, target);
}

/* ---- deletion ---------------------------------------------------------------- */

static const struct db_stmt mark_deleted = {
    "UPDATE nodes SET desired_state = 'deleted', updated_at = now()"
    " WHERE cluster_id = $1 AND desired_state <> 'deleted'"};

enum db_status store_nodes_mark_deleted(struct db_conn *conn, const char *cluster_id)
{
    return store_exec(conn, &mark_deleted, cluster_id, NULL);
}

/* A deleted cluster's nodes on lost hosts cannot wait for their agents:
 * their rows go, each leaving a tombstone (migration 0021) that has its
 * agent remove the data should the host return. */
static const struct db_stmt drop_lost = {
    "WITH gone AS (DELETE FROM nodes n USING hosts h WHERE n.cluster_id = $1"
    "   AND h.id = n.host_id AND h.status = 'lost'"
    "   RETURNING n.id, n.host_id, n.engine, n.engine_version, n.port)"
    " INSERT INTO node_tombstones (node_id, host_id, engine, engine_version, port)"
    " SELECT id, host_id, engine, engine_version, port FROM gone WHERE port IS NOT NULL"
    " ON CONFLICT (node_id) DO NOTHING"};

static const struct db_stmt count_nodes = {"SELECT count(*) FROM nodes WHERE cluster_id = $1"};

enum db_status store_nodes_remaining(struct db_conn *conn, const char *cluster_id, int *left)
{
    const char *params[1] = {cluster_id};
    long long n = 0;
    enum db_status st = store_exec(conn, &drop_lost, cluster_id, NULL);
    if (st == DB_OK)
        st = store_get_int64(conn, &count_nodes, 1, params, &n);
    *left = (int)n;
    return st;
}

/* ---- replacement ------------------------------------------------------------- */

static const struct db_stmt dead_node = {
    "SELECT n.shard_id, n.node_type, n.engine, n.engine_version, coalesce(h.address, ''),"
    "  coalesce(n.port, 0), n.desired_state = 'deleted',"
    "  coalesce((c.spec ->> 'multi_az')::boolean, false), s.index,"
    "  coalesce(h.status = 'healthy' AND n.process_state = 'running', false)"
    " FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN shards s ON s.id = n.shard_id"
    " LEFT JOIN hosts h ON h.id = n.host_id WHERE n.id = $1::uuid AND n.cluster_id = $2"
    " FOR UPDATE OF n"};

enum db_status store_node_to_replace(struct db_conn *conn, const char *cluster_id,
                                     const char *node_id, struct store_node_to_replace *out)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, node_id);
    db_param_text(&p, cluster_id);
    PGresult *res = db_query_params(conn, &dead_node, &p, &st);
    if (res == NULL)
        return st;
    st = PQntuples(res) == 1 && !db_bool(res, 0, 6) ? DB_OK : DB_NOT_FOUND;
    if (st == DB_OK) {
        store_copy_text(out->shard_id, sizeof(out->shard_id), res, 0, 0);
        store_copy_text(out->node_type, sizeof(out->node_type), res, 0, 1);
        store_copy_text(out->engine, sizeof(out->engine), res, 0, 2);
        store_copy_text(out->engine_version, sizeof(out->engine_version), res, 0, 3);
        store_copy_text(out->address, sizeof(out->address), res, 0, 4);
        out->port = (int)db_int(res, 0, 5);
        out->multi_az = db_bool(res, 0, 7);
        out->shard = (int)db_int(res, 0, 8);
        out->serving = db_bool(res, 0, 9);
    }
    PQclear(res);
    return st;
}

static const struct db_stmt shard_mates = {
    "SELECT n.host_id, h.az, n.role = 'primary' FROM nodes n JOIN hosts h ON h.id = n.host_id"
    " WHERE n.shard_id = $1::uuid AND n.id IS DISTINCT FROM $2::uuid"
    "   AND n.desired_state <> 'deleted' AND ($3::text IS NULL OR n.node_type = $3)"};

enum db_status store_shard_mates(struct db_conn *conn, const char *shard_id, const char *node_id,
                                 const char *node_type, struct store_shard_mates *out)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, shard_id);
    db_param_text(&p, node_id);
    db_param_text(&p, node_type);
    PGresult *res = db_query_params(conn, &shard_mates, &p, &st);
    if (res == NULL)
        return st;
    out->n = (size_t)PQntuples(res);
    out->hosts = xcalloc(out->n + 1, sizeof(*out->hosts));
    out->azs = xcalloc(out->n + 1, sizeof(*out->azs));
    out->primary_az = NULL;
    for (size_t i = 0; i < out->n; i++) {
        out->hosts[i] = xstrdup(db_text(res, (int)i, 0));
        out->azs[i] = xstrdup(db_text(res, (int)i, 1));
        if (db_bool(res, (int)i, 2))
            out->primary_az = out->azs[i];
    }
    PQclear(res);
    return DB_OK;
}

void store_shard_mates_free(struct store_shard_mates *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->hosts[i]);
        free(m->azs[i]);
    }
    free(m->hosts);
    free(m->azs);
    memset(m, 0, sizeof(*m));
}

/* A new node is a replica from the start; while cairnd joins it (the
 * operations' limits add up to under 5 minutes), its own reading of the role
 * wins over reports: role_observed_at is in the future until the join
 * records it, so its link stays unknown and no reader is offered it. */
static const struct db_stmt insert_replica = {
    "INSERT INTO nodes (cluster_id, shard_id, host_id, engine, engine_version, node_type, ordinal,"
    "  role, role_observed_at)"
    " SELECT $1, $2::uuid, $3::uuid, $4, $5, $6, max(ordinal) + 1, 'replica',"
    "  now() + interval '5 minutes'"
    " FROM nodes WHERE shard_id = $2::uuid RETURNING id"};

enum db_status store_node_add_replica(struct db_conn *conn, const struct store_node_placed *n,
                                      char *new_id)
{
    struct db_params p = {0};
    db_param_text(&p, n->cluster_id);
    db_param_text(&p, n->shard_id);
    db_param_text(&p, n->host_id);
    db_param_text(&p, n->engine);
    db_param_text(&p, n->engine_version);
    db_param_text(&p, n->node_type);
    return store_insert_id(conn, &insert_replica, &p, new_id);
}

static const struct db_stmt retire_node = {
    "UPDATE nodes SET desired_state = 'deleted', updated_at = now() WHERE id = $1::uuid"};

enum db_status store_node_retire(struct db_conn *conn, const char *node_id)
{
    return store_exec(conn, &retire_node, node_id, NULL);
}

/* The most lagging replicas of a shard come last: not running or not in
 * sync first, then by the offset their agents last reported. */
static const struct db_stmt shard_nodes = {
    "SELECT n.id, s.id, s.index, s.name, coalesce(h.address, ''), coalesce(n.port, 0),"
    "  n.role = 'primary',"
    "  coalesce(n.process_state = 'running' AND n.master_link_status = 'up'"
    "    AND NOT coalesce(n.loading, false) AND NOT coalesce(n.sync_in_progress, false), false),"
    "  coalesce(n.replication_offset, -1)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id LEFT JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted'"
    " ORDER BY s.index, n.role = 'primary' DESC, 8 DESC, 9 DESC, n.ordinal"};

static void read_shard_node(const PGresult *res, int r, void *item)
{
    struct store_shard_node *n = item;
    store_copy_text(n->id, sizeof(n->id), res, r, 0);
    store_copy_text(n->shard_id, sizeof(n->shard_id), res, r, 1);
    n->shard = (int)db_int(res, r, 2);
    store_copy_text(n->shard_name, sizeof(n->shard_name), res, r, 3);
    store_copy_text(n->address, sizeof(n->address), res, r, 4);
    n->port = (int)db_int(res, r, 5);
    n->primary = db_bool(res, r, 6);
    n->in_sync = db_bool(res, r, 7);
    n->offset = db_int(res, r, 8);
}

enum db_status store_shard_nodes(struct db_conn *conn, const char *cluster_id,
                                 struct store_shard_nodes *out)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, cluster_id);
    out->items =
        store_read_rows(conn, &shard_nodes, &p, sizeof(*out->items), read_shard_node, &out->n, &st);
    return st;
}

static const struct db_stmt joined_node = {
    "UPDATE nodes SET role = 'replica', observed_role = 'replica', master_link_status = 'up',"
    "  sync_in_progress = false, role_observed_at = now() WHERE id = $1::uuid"};

enum db_status store_node_joined(struct db_conn *conn, const char *node_id)
{
    return store_exec(conn, &joined_node, node_id, NULL);
}

/* ---- engine upgrades -------------------------------------------------------------- */

static const struct db_stmt set_engine = {
    "UPDATE nodes SET engine = $2, engine_version = $3 WHERE id = $1::uuid"};

enum db_status store_node_set_engine(struct db_conn *conn, const char *node_id, const char *engine,
                                     const char *version)
{
    struct db_params p = {0};
    db_param_text(&p, node_id);
    db_param_text(&p, engine);
    db_param_text(&p, version);
    return db_exec_params(conn, &set_engine, &p);
}

/* ---- who serves clients ------------------------------------------------------------ */

static const struct db_stmt serving_nodes = {
    "SELECT h.address, n.port, n.role = 'primary', c.spec ->> 'cluster_mode' = 'disabled'"
    " FROM clusters c JOIN nodes n ON n.cluster_id = c.id JOIN hosts h ON h.id = n.host_id"
    " WHERE c.id = $1 AND n.process_state = 'running' AND h.status = 'healthy'"
    "   AND n.desired_state <> 'deleted' AND ("
    "   n.role = 'primary' OR (n.role = 'replica' AND n.master_link_status = 'up'"
    "   AND NOT coalesce(n.loading, false) AND NOT coalesce(n.sync_in_progress, false)))"
    " ORDER BY n.role, h.address, n.port"};

enum db_status store_cluster_serving_nodes(struct db_conn *conn, const char *cluster_id,
                                           struct store_serving_nodes *out)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, cluster_id);
    PGresult *res = db_query_params(conn, &serving_nodes, &p, &st);
    if (res == NULL)
        return st;
    out->n = (size_t)PQntuples(res);
    out->items = xcalloc(out->n + 1, sizeof(*out->items));
    out->disabled_mode = false;
    for (size_t i = 0; i < out->n; i++) {
        struct store_serving_node *s = &out->items[i];
        store_copy_text(s->address, sizeof(s->address), res, (int)i, 0);
        s->port = (int)db_int(res, (int)i, 1);
        s->primary = db_bool(res, (int)i, 2);
        out->disabled_mode = db_bool(res, (int)i, 3);
    }
    PQclear(res);
    return DB_OK;
}
