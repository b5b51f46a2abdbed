/* store_catalog.c -- node types, engine versions and the upgrade paths
 * between them: read-only catalogs. */
#include "store.h"

/* Numbers go out as float8 so the JSON reads 0.017, not 0.0170. */
#define NODE_TYPE_JSON                                                                             \
    "json_build_object('name', name, 'family', family, 'size', size, 'vcpus', vcpus,"              \
    " 'memory_gib', memory_gib::float8, 'burstable', burstable,"                                   \
    " 'network_gbps', json_build_object('baseline', network_baseline_gbps::float8,"                \
    "                                   'burst', network_burst_gbps::float8),"                     \
    " 'price_usd_per_hour', json_build_object('redis', price_redis_usd_hour::float8,"              \
    "                                         'valkey', price_valkey_usd_hour::float8))"

static const struct db_stmt list_node_types = {
    "SELECT sort_order::text AS page_key, " NODE_TYPE_JSON " FROM node_types"
    " WHERE sort_order > $1::int ORDER BY sort_order LIMIT $2::int"};

/* An engine line is schedulable when some healthy host has its binary. */
static const struct db_stmt list_engine_versions = {
    "SELECT v.release_order::text AS page_key, json_build_object("
    "  'engine', v.engine, 'version', v.version, 'status', v.status,"
    "  'upgrade_targets', coalesce((SELECT json_agg(json_build_object('engine', t.engine,"
    "        'version', t.version) ORDER BY t.release_order)"
    "      FROM engine_upgrade_paths p JOIN engine_versions t"
    "        ON t.engine = p.to_engine AND t.version = p.to_version"
    "      WHERE p.from_engine = v.engine AND p.from_version = v.version), '[]'::json),"
    "  'schedulable', h.n > 0, 'hosts_available', h.n,"
    "  'note', CASE WHEN h.n > 0 THEN"
    "      format('%s healthy host(s) report %s %s', h.n, v.engine, v.version)"
    "    ELSE format('no healthy registered host reports %s %s yet; clusters on it cannot be"
    " scheduled until an agent with that engine registers', v.engine, v.version) END)"
    " FROM engine_versions v"
    " CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM host_engines e JOIN hosts ho"
    "     ON ho.id = e.host_id AND ho.status = 'healthy'"
    "   WHERE e.engine = v.engine AND e.version = v.version) h"
    " WHERE v.release_order > $1::int AND ($2::text IS NULL OR v.engine = $2)"
    " ORDER BY v.release_order LIMIT $3::int"};

/* What sizing reads, in one round trip: every node type, and the engine's
 * lines, oldest first, each with whether a healthy host runs it. */
static const struct db_stmt sizing_catalog = {
    "SELECT json_build_object("
    " 'node_types', (SELECT json_agg(" NODE_TYPE_JSON " ORDER BY sort_order) FROM node_types),"
    " 'lines', (SELECT coalesce(json_agg(json_build_object('version', v.version,"
    "     'schedulable', EXISTS (SELECT 1 FROM host_engines e JOIN hosts h"
    "         ON h.id = e.host_id AND h.status = 'healthy'"
    "       WHERE e.engine = v.engine AND e.version = v.version))"
    "     ORDER BY v.release_order), '[]'::json)"
    "   FROM engine_versions v WHERE v.engine = $1))"};

enum db_status store_sizing_catalog(struct db_conn *conn, const char *engine, char **out)
{
    const char *params[1] = {engine};
    return store_get_text(conn, &sizing_catalog, 1, params, out);
}

static const struct db_stmt all_node_types = {"SELECT sort_order::text, name, " NODE_TYPE_JSON
                                              "::text FROM node_types ORDER BY sort_order"};

static void read_node_type_row(const PGresult *res, int row, void *item)
{
    struct store_node_type_row *r = item;
    r->key = store_dup_text(res, row, 0);
    r->name = store_dup_text(res, row, 1);
    r->doc = store_dup_text(res, row, 2);
}

enum db_status store_node_types_all(struct db_conn *conn, struct store_node_type_row **rows,
                                    size_t *n)
{
    enum db_status st;
    *rows =
        store_read_rows(conn, &all_node_types, NULL, sizeof(**rows), read_node_type_row, n, &st);
    return st;
}

void store_node_type_rows_free(struct store_node_type_row *rows, size_t n)
{
    for (size_t i = 0; rows != NULL && i < n; i++) {
        free(rows[i].key);
        free(rows[i].name);
        free(rows[i].doc);
    }
    free(rows);
}

enum db_status store_node_types_list(struct db_conn *conn, const struct page *page, char **items,
                                     char *next_key)
{
    const char *params[2] = {page->has_after ? page->after : "-1", NULL};
    return store_list(conn, &list_node_types, 2, params, page, items, next_key);
}

enum db_status store_engine_versions_list(struct db_conn *conn, const char *engine,
                                          const struct page *page, char **items, char *next_key)
{
    const char *params[3] = {page->has_after ? page->after : "-1", engine, NULL};
    return store_list(conn, &list_engine_versions, 3, params, page, items, next_key);
}

/* The catalog checks that need the database: the engine line exists and the
 * node type is known. */
static const struct db_stmt catalog_has = {
    "SELECT EXISTS (SELECT 1 FROM engine_versions WHERE engine = $1 AND version = $2),"
    "       EXISTS (SELECT 1 FROM node_types WHERE name = $3)"};

enum db_status store_catalog_has(struct db_conn *conn, const char *engine, const char *version,
                                 const char *node_type, bool *version_ok, bool *node_type_ok)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, engine);
    db_param_text(&p, version);
    db_param_text(&p, node_type);
    enum db_status st = store_query_row(conn, &catalog_has, &p, &res);
    if (st != DB_OK)
        return st;
    *version_ok = db_bool(res, 0, 0);
    *node_type_ok = db_bool(res, 0, 1);
    PQclear(res);
    return DB_OK;
}

static const struct db_stmt upgrade_path = {
    "SELECT EXISTS (SELECT 1 FROM engine_upgrade_paths WHERE from_engine = $1"
    "   AND from_version = $2 AND to_engine = $3 AND to_version = $4),"
    " coalesce((SELECT string_agg(to_engine || ' ' || to_version, ', '"
    "   ORDER BY to_engine, to_version) FROM engine_upgrade_paths"
    "   WHERE from_engine = $1 AND from_version = $2), '')"};

enum db_status store_upgrade_path(struct db_conn *conn, const char *from_engine,
                                  const char *from_version, const char *to_engine,
                                  const char *to_version, bool *ok, char *allowed,
                                  size_t allowed_size)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, from_engine);
    db_param_text(&p, from_version);
    db_param_text(&p, to_engine);
    db_param_text(&p, to_version);
    enum db_status st = store_query_row(conn, &upgrade_path, &p, &res);
    if (st != DB_OK)
        return st;
    *ok = db_bool(res, 0, 0);
    store_copy_text(allowed, allowed_size, res, 0, 1);
    PQclear(res);
    return DB_OK;
}

static const struct db_stmt node_type_memory = {
    "SELECT round(memory_gib * 1073741824)::bigint FROM node_types WHERE name = $1"};

enum db_status store_node_type_memory(struct db_conn *conn, const char *name, long long *bytes)
{
    const char *params[1] = {name};
    return store_get_int64(conn, &node_type_memory, 1, params, bytes);
}
