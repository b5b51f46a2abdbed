/* store_calibrations.c -- calibrations of the sizing model (migration
 * 0014): what a new one chooses from, its row, its figures, the API's
 * reads, and the latest figures per node type that sizing uses. */
#include "store.h"

/* Every host with what it has free (placement_hosts, asked for no engine)
 * and the engine lines it runs; every node type; the catalog's lines. */
static const struct db_stmt choices = {
    "SELECT json_build_object("
    " 'hosts', coalesce((SELECT json_agg(json_build_object('id', h.id, 'name', h.name,"
    "     'status', h.status, 'vcpus', h.vcpus, 'free_vcpus', p.free_vcpus,"
    "     'free_memory_mib', p.free_memory_mib,"
    "     'lines', coalesce((SELECT json_object_agg(e.engine, e.lines) FROM ("
    "         SELECT engine, json_agg(version ORDER BY version) AS lines FROM host_engines"
    "         WHERE host_id = h.id GROUP BY engine) e), '{}'::json))"
    "     ORDER BY h.name)"
    "   FROM hosts h JOIN placement_hosts(NULL, NULL) p ON p.id = h.id), '[]'::json),"
    " 'node_types', (SELECT json_agg(json_build_object('name', name, 'vcpus', vcpus,"
    "     'memory_gib', memory_gib::float8, 'memory_mib', round(memory_gib * 1024)::bigint,"
    "     'burstable', burstable) ORDER BY sort_order) FROM node_types),"
    " 'lines', (SELECT coalesce(json_object_agg(engine, lines), '{}'::json) FROM ("
    "     SELECT engine, json_agg(version ORDER BY release_order) AS lines"
    "     FROM engine_versions GROUP BY engine) v))"};

enum db_status store_calibration_choices(struct db_conn *conn, char **out)
{
    return store_get_text(conn, &choices, 0, NULL, out);
}

static const struct db_stmt insert_calibration = {
    "INSERT INTO calibrations (id, operation_id, cluster_id, host_id, host_name, host_vcpus,"
    " node_type, engine, engine_version, value_bytes, read_ratio, pipeline, clients, duration_s)"
    " VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5, $6::int, $7, $8, $9, $10::int, $11::float8,"
    "         $12::int, $13::int, $14::int)"};

enum db_status store_calibration_insert(struct db_conn *conn, const struct store_calibration *c)
{
    struct db_params p = {0};
    db_param_text(&p, c->id);
    db_param_text(&p, c->op_id);
    db_param_text(&p, c->cluster_id);
    db_param_text(&p, c->host_id);
    db_param_text(&p, c->host_name);
    db_param_int(&p, c->host_vcpus);
    db_param_text(&p, c->node_type);
    db_param_text(&p, c->engine);
    db_param_text(&p, c->engine_version);
    db_param_int(&p, c->value_bytes);
    db_param_double(&p, c->read_ratio);
    db_param_int(&p, c->pipeline);
    db_param_int(&p, c->clients);
    db_param_int(&p, c->duration_s);
    return db_exec_params(conn, &insert_calibration, &p);
}

static const struct db_stmt record_results = {
    "UPDATE calibrations SET results = $2::jsonb WHERE operation_id = $1::uuid"};

enum db_status store_calibration_record(struct db_conn *conn, const char *op_id,
                                        const char *results)
{
    return store_exec(conn, &record_results, op_id, results);
}

/* Newest first, paged by (created_at, id). */
static const struct db_stmt list_calibrations = {
    "SELECT api_time(created_at) || '|' || id, CASE WHEN $3::boolean THEN doc ELSE tenant_doc END"
    " FROM calibration_documents"
    " WHERE ($1::timestamptz IS NULL OR (created_at, id) < ($1::timestamptz, $2::uuid))"
    " ORDER BY created_at DESC, id DESC LIMIT $4::int"};

static const struct db_stmt get_calibration = {
    "SELECT doc FROM calibration_documents WHERE id = $1::uuid"};

static const struct db_stmt get_calibration_without_host = {
    "SELECT tenant_doc FROM calibration_documents WHERE id = $1::uuid"};

enum db_status store_calibrations_list(struct db_conn *conn, bool host_details,
                                       const struct page *page, char **items, char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[4] = {NULL, NULL, host_details ? "true" : "false", NULL};

    store_split_key(page, key, &params[0], &params[1]);
    return store_list(conn, &list_calibrations, 4, params, page, items, next_key);
}

enum db_status store_calibration_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_calibration, 1, params, out);
}

enum db_status store_calibration_get_without_host(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_calibration_without_host, 1, params, out);
}

/* Per node type, the calibration of engine that ended last among those
 * that succeeded. */
static const struct db_stmt sizing_calibrations = {
    "SELECT coalesce(json_object_agg(node_type, doc), '{}'::json) FROM ("
    " SELECT DISTINCT ON (c.node_type) c.node_type, json_build_object('id', c.id,"
    "     'requests_per_second', (c.results ->> 'requests_per_second')::float8,"
    "     'pipeline', c.pipeline, 'read_ratio', c.read_ratio, 'value_bytes', c.value_bytes,"
    "     'clients', c.clients, 'host_name', c.host_name, 'engine_version', c.engine_version,"
    "     'finished_at', api_time(o.finished_at)) AS doc"
    " FROM calibrations c JOIN operations o ON o.id = c.operation_id"
    " WHERE c.engine = $1 AND o.status = 'succeeded' AND c.results IS NOT NULL"
    " ORDER BY c.node_type, o.finished_at DESC, c.id) latest"};

enum db_status store_sizing_calibrations(struct db_conn *conn, const char *engine, char **out)
{
    const char *params[1] = {engine};
    return store_get_text(conn, &sizing_calibrations, 1, params, out);
}
