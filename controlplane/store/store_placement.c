/* store_placement.c -- what placing nodes reads and writes: the placement
 * lock, the hosts with what they have left, and the shards and nodes of a
 * cluster as the scheduler (scheduler.c) placed them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "store.h"
#include "xalloc.h"

/* pg_advisory_xact_lock key for placements ("place" in ASCII): two
 * placements must not both count the same free capacity. */
static const struct db_stmt placement_lock = {"SELECT pg_advisory_xact_lock(482184995685)"};

static const struct db_stmt node_type_shape = {
    "SELECT vcpus, round(memory_gib * 1024)::bigint FROM node_types WHERE name = $1"};

/* Every host with what it has left, and whether it can run engine/line:
 * placement_hosts (migrations/0011_views.sql). */
static const struct db_stmt placement_hosts = {
    "SELECT id, az, free_vcpus, free_memory_mib, eligible FROM placement_hosts($1, $2)"
    " ORDER BY name"};

static void read_shape(const PGresult *res, int row, void *item)
{
    struct store_placement *out = item;
    out->vcpus = (int)db_int(res, row, 0);
    out->memory_mib = db_int(res, row, 1);
}

static void read_host(const PGresult *res, int row, void *item)
{
    struct sched_host *h = item;
    h->id = store_dup_text(res, row, 0);
    h->az = store_dup_text(res, row, 1);
    h->free_vcpus = (int)db_int(res, row, 2);
    h->free_memory_mib = db_int(res, row, 3);
    h->eligible = db_bool(res, row, 4);
}

enum db_status store_placement_read(struct db_conn *conn, const char *engine, const char *line,
                                    const char *node_type, struct store_placement *out)
{
    struct db_params shape = {0}, hosts = {0};
    enum db_status st;

    memset(out, 0, sizeof(*out));
    PQclear(db_query(conn, &placement_lock, 0, NULL, &st));
    db_param_text(&shape, node_type);
    if (st != DB_OK ||
        (st = store_read_row(conn, &node_type_shape, &shape, read_shape, out)) != DB_OK)
        return st;
    db_param_text(&hosts, engine);
    db_param_text(&hosts, line);
    out->hosts = store_read_rows(conn, &placement_hosts, &hosts, sizeof(*out->hosts), read_host,
                                 &out->nhosts, &st);
    return st;
}

void store_placement_free(struct store_placement *p)
{
    for (size_t i = 0; i < p->nhosts; i++) {
        free((char *)p->hosts[i].id);
        free((char *)p->hosts[i].az);
    }
    free(p->hosts);
    memset(p, 0, sizeof(*p));
}

/* ---- a new cluster's rows ------------------------------------------------------ */

static const struct db_stmt spec_equal = {
    "SELECT spec = $2::jsonb FROM clusters WHERE id = $1 FOR UPDATE"};

enum db_status store_cluster_same_spec(struct db_conn *conn, const char *id, const char *spec,
                                       bool *exists, bool *same)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, id);
    db_param_text(&p, spec);
    enum db_status st = store_query_row(conn, &spec_equal, &p, &res);
    *exists = st == DB_OK;
    *same = *exists && db_bool(res, 0, 0);
    PQclear(res);
    return st == DB_NOT_FOUND ? DB_OK : st;
}

static const struct db_stmt insert_cluster = {
    "INSERT INTO clusters (id, spec, auth_secret, auth_lookup, status)"
    " VALUES ($1, $2::jsonb, $3::bytea, $4::bytea, 'creating')"};

enum db_status store_cluster_insert(struct db_conn *conn, const char *id, const char *spec,
                                    const char *sealed_secret, const char *auth_lookup)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, spec);
    db_param_text(&p, sealed_secret);
    db_param_text(&p, auth_lookup);
    return db_exec_params(conn, &insert_cluster, &p);
}

static const struct db_stmt insert_shard = {
    "INSERT INTO shards (cluster_id, index, name, slots) VALUES ($1, $2::int,"
    " lpad(($2::int + 1)::text, 4, '0'),"
    " CASE WHEN $3::int < 0 THEN '{}'::int4range[]"
    "      ELSE ARRAY[int4range($3::int, $4::int, '[]')] END) RETURNING id"};

enum db_status store_shard_insert(struct db_conn *conn, const char *cluster_id, int index,
                                  int slot_first, int slot_last, char *shard_id)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, index);
    db_param_int(&p, slot_first);
    db_param_int(&p, slot_last);
    return store_insert_id(conn, &insert_shard, &p, shard_id);
}

static const struct db_stmt insert_node = {
    "INSERT INTO nodes (cluster_id, shard_id, host_id, engine, engine_version, node_type, ordinal)"
    " VALUES ($1, $2::uuid, $3::uuid, $4, $5, $6, $7::int)"};

enum db_status store_node_insert(struct db_conn *conn, const struct store_node_placed *n)
{
    struct db_params p = {0};
    db_param_text(&p, n->cluster_id);
    db_param_text(&p, n->shard_id);
    db_param_text(&p, n->host_id);
    db_param_text(&p, n->engine);
    db_param_text(&p, n->engine_version);
    db_param_text(&p, n->node_type);
    db_param_int(&p, n->ordinal);
    return db_exec_params(conn, &insert_node, &p);
}

static const struct db_stmt placed_events = {
    "INSERT INTO events (cluster_id, operation_id, host_id, type, message, detail)"
    " SELECT n.cluster_id, $2::uuid, n.host_id, 'NodePlaced',"
    "   format('node %s of shard %s placed in %s, port %s', n.id, s.name, h.az, n.port),"
    "   json_build_object('node_id', n.id, 'shard', s.name, 'host_id', h.id, 'az', h.az,"
    "                     'port', n.port, 'placed_as', CASE WHEN n.ordinal = 0 THEN 'primary'"
    "                     ELSE 'replica' END)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 AND s.index >= $3::int AND s.removed_at IS NULL"
    "   AND n.desired_state <> 'deleted'"
    " ORDER BY s.index, n.ordinal"};

enum db_status store_events_nodes_placed(struct db_conn *conn, const char *cluster_id,
                                         const char *op_id, int first_shard)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_text(&p, op_id);
    db_param_int(&p, first_shard);
    return db_exec_params(conn, &placed_events, &p);
}
