/* store_snapshots.c -- snapshots and their shards (migration 0035): the
 * API's reads and writes, the snapshot operation's record of each shard,
 * the agents' uploads, and what the scheduler removes. */
#include <stdio.h>
#include <stdlib.h>

#include "store.h"

/* A snapshot named by its id or by its name. */
#define BY_ID_OR_NAME(param)                                                                       \
    "(s.name = " param " OR s.id = CASE WHEN " param " ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"   \
    "[0-9a-f]{4}-[0-9a-f]{12}$' THEN " param "::uuid END)"

/* ---- the API ------------------------------------------------------------------- */

static const struct db_stmt insert_snapshot = {
    "INSERT INTO snapshots (name, cluster_id, cluster_uid, source, engine, engine_version,"
    " node_type, cluster_mode, num_shards, replicas_per_shard, retention_days)"
    " SELECT $1, c.id, c.uid, $3, c.spec ->> 'engine', c.spec ->> 'engine_version',"
    "  c.spec ->> 'node_type', coalesce(c.spec ->> 'cluster_mode', 'enabled'),"
    "  (SELECT count(*) FROM shards WHERE cluster_id = c.id),"
    "  (c.spec ->> 'replicas_per_shard')::int, nullif($4::int, 0)"
    " FROM clusters c WHERE c.id = $2 RETURNING id"};

enum db_status store_snapshot_insert(struct db_conn *conn, const struct store_snapshot_new *s,
                                     char *id)
{
    struct db_params p = {0};
    db_param_text(&p, s->name);
    db_param_text(&p, s->cluster_id);
    db_param_text(&p, s->source);
    db_param_int(&p, s->retention_days);
    return store_insert_id(conn, &insert_snapshot, &p, id);
}

static const struct db_stmt set_operation = {
    "UPDATE snapshots SET operation_id = $2::uuid WHERE id = $1::uuid"};

enum db_status store_snapshot_set_operation(struct db_conn *conn, const char *id, const char *op_id)
{
    return store_exec(conn, &set_operation, id, op_id);
}

static const struct db_stmt name_taken = {"SELECT count(*) FROM snapshots WHERE name = $1"};

enum db_status store_snapshot_name_taken(struct db_conn *conn, const char *name, bool *taken)
{
    const char *params[1] = {name};
    long long n = 0;
    enum db_status st = store_get_int64(conn, &name_taken, 1, params, &n);
    *taken = n > 0;
    return st;
}

/* Newest first, paged by (created_at, id). */
static const struct db_stmt list_snapshots = {
    "SELECT api_time(created_at) || '|' || id, doc FROM snapshot_documents"
    " WHERE ($1::timestamptz IS NULL OR (created_at, id) < ($1::timestamptz, $2::uuid))"
    "  AND ($3::text IS NULL OR cluster_id = $3)"
    " ORDER BY created_at DESC, id DESC LIMIT $4::int"};

enum db_status store_snapshots_list(struct db_conn *conn, const char *cluster_id,
                                    const struct page *page, char **items, char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[4] = {NULL, NULL, cluster_id, NULL};

    store_split_key(page, key, &params[0], &params[1]);
    return store_list(conn, &list_snapshots, 4, params, page, items, next_key);
}

static const struct db_stmt get_snapshot = {
    "SELECT s.doc FROM snapshot_documents s WHERE " BY_ID_OR_NAME("$1")};

enum db_status store_snapshot_get(struct db_conn *conn, const char *id_or_name, char **out)
{
    const char *params[1] = {id_or_name};
    return store_get_text(conn, &get_snapshot, 1, params, out);
}

/* Its status, and whether a cluster is being restored from it now. */
static const struct db_stmt lock_snapshot = {
    "SELECT s.id, s.status, EXISTS (SELECT 1 FROM operations o WHERE o.kind = 'create'"
    "  AND o.status IN ('pending', 'running') AND o.context ->> 'restore_from' = s.id::text)"
    " FROM snapshots s WHERE " BY_ID_OR_NAME("$1") " FOR UPDATE OF s"};

static void read_locked(const PGresult *res, int row, void *item)
{
    struct store_snapshot_locked *out = item;
    store_copy_text(out->id, sizeof(out->id), res, row, 0);
    store_copy_text(out->status, sizeof(out->status), res, row, 1);
    out->restoring = db_bool(res, row, 2);
}

enum db_status store_snapshot_lock(struct db_conn *conn, const char *id_or_name,
                                   struct store_snapshot_locked *out)
{
    struct db_params p = {0};
    db_param_text(&p, id_or_name);
    return store_read_row(conn, &lock_snapshot, &p, read_locked, out);
}

static const struct db_stmt set_status = {"UPDATE snapshots SET status = $2 WHERE id = $1::uuid"};

enum db_status store_snapshot_set_status(struct db_conn *conn, const char *id, const char *status)
{
    return store_change(conn, &set_status, id, status);
}

/* ---- the snapshot operation ------------------------------------------------------ */

/* shards: [{"shard", "node_id"}]; each shard's slots as the cluster has
 * them now. A shard begun again (another node, after its first failed)
 * starts over. */
static const struct db_stmt begin_shards = {
    "INSERT INTO snapshot_shards (snapshot_id, shard, node_id, slots)"
    " SELECT s.id, x.shard, x.node_id,"
    "  (SELECT jsonb_agg(jsonb_build_array(lower(r), upper(r) - 1) ORDER BY lower(r))"
    "   FROM shards sh CROSS JOIN unnest(sh.slots) r"
    "   WHERE sh.cluster_id = s.cluster_id AND sh.index = x.shard)"
    " FROM jsonb_to_recordset($2::jsonb) AS x(shard int, node_id uuid)"
    " JOIN snapshots s ON s.id = $1::uuid"
    " ON CONFLICT (snapshot_id, shard) DO UPDATE SET node_id = EXCLUDED.node_id,"
    "  slots = EXCLUDED.slots, status = 'saving', keys = NULL, databases = NULL,"
    "  memory_bytes = NULL, size_bytes = NULL, sha256 = NULL, stored_bytes = 0,"
    "  upload_id = NULL, parts = 0, part_tags = '[]', error = NULL"};

enum db_status store_snapshot_shards_begin(struct db_conn *conn, const char *snapshot_id,
                                           const char *shards_json)
{
    return store_exec(conn, &begin_shards, snapshot_id, shards_json);
}

/* What the engine said of the shard's data when it saved it; its agent is
 * asked for the file (the host's desired set lists it). */
static const struct db_stmt shard_saved = {
    "UPDATE snapshot_shards SET status = 'uploading', keys = $3::bigint,"
    " databases = $4::jsonb, memory_bytes = $5::bigint, stored_bytes = 0, parts = 0,"
    " size_bytes = NULL,"
    " part_tags = '[]', upload_id = NULL, error = NULL"
    " WHERE snapshot_id = $1::uuid AND shard = $2::int AND status = 'saving'"};

enum db_status store_snapshot_shard_saved(struct db_conn *conn, const char *snapshot_id, int shard,
                                          long long keys, const char *databases_json,
                                          long long memory_bytes)
{
    struct db_params p = {0};
    db_param_text(&p, snapshot_id);
    db_param_int(&p, shard);
    db_param_int(&p, keys);
    db_param_text(&p, databases_json);
    db_param_int(&p, memory_bytes);
    return db_exec_params(conn, &shard_saved, &p);
}

static const struct db_stmt shards_state = {
    "SELECT coalesce(json_agg(json_build_object('shard', shard, 'node_id', node_id,"
    "  'status', status, 'parts', parts, 'stored_bytes', stored_bytes,"
    "  'size_bytes', size_bytes, 'sha256', sha256, 'error', error) ORDER BY shard), '[]')"
    " FROM snapshot_shards WHERE snapshot_id = $1::uuid"};

enum db_status store_snapshot_shards_state(struct db_conn *conn, const char *snapshot_id,
                                           json_t **out)
{
    const char *params[1] = {snapshot_id};
    return store_get_json(conn, &shards_state, 1, params, out);
}

/* The snapshot ends: available, or failed with error ({"code", "message"});
 * no upload is asked of an agent any more. */
static const struct db_stmt end_snapshot = {
    "WITH s AS (UPDATE snapshots SET status = $2, error = $3::jsonb,"
    "  completed_at = CASE WHEN $2 = 'available' THEN now() END"
    "  WHERE id = $1::uuid AND status = 'creating' RETURNING id)"
    " UPDATE snapshot_shards x SET status = 'saving' FROM s"
    " WHERE x.snapshot_id = s.id AND x.status = 'uploading'"};

enum db_status store_snapshot_end(struct db_conn *conn, const char *snapshot_id, const char *status,
                                  const char *error_json)
{
    struct db_params p = {0};
    db_param_text(&p, snapshot_id);
    db_param_text(&p, status);
    db_param_text(&p, error_json);
    return db_exec_params(conn, &end_snapshot, &p);
}

/* ---- the agents' uploads --------------------------------------------------------- */

/* The shard's upload, locked, when the agent of host_id is asked for it. */
static const struct db_stmt lock_upload = {
    "SELECT coalesce(s.upload_id, ''), s.parts, s.stored_bytes, s.part_tags::text,"
    " coalesce(s.size_bytes, 0)"
    " FROM snapshot_shards s JOIN nodes n ON n.id = s.node_id"
    " WHERE s.snapshot_id = $1::uuid AND s.shard = $2::int AND s.status = 'uploading'"
    "  AND n.host_id = $3::uuid FOR UPDATE OF s"};

static void read_upload(const PGresult *res, int row, void *item)
{
    struct store_snapshot_upload *out = item;
    store_copy_text(out->upload_id, sizeof(out->upload_id), res, row, 0);
    out->parts = atoi(db_text(res, row, 1));
    out->stored_bytes = atoll(db_text(res, row, 2));
    out->tags = json_loads(db_text(res, row, 3), 0, NULL);
    out->raw_bytes = atoll(db_text(res, row, 4));
}

enum db_status store_snapshot_upload_lock(struct db_conn *conn, const char *snapshot_id, int shard,
                                          const char *host_id, struct store_snapshot_upload *out)
{
    struct db_params p = {0};
    db_param_text(&p, snapshot_id);
    db_param_int(&p, shard);
    db_param_text(&p, host_id);
    json_decref(out->tags);
    out->tags = NULL;
    enum db_status st = store_read_row(conn, &lock_upload, &p, read_upload, out);
    if (st == DB_OK && !json_is_array(out->tags))
        return DB_ERROR;
    return st;
}

static const struct db_stmt record_part = {
    "UPDATE snapshot_shards SET upload_id = $3, parts = $4::int, stored_bytes = $5::bigint,"
    " part_tags = $6::jsonb, size_bytes = $7::bigint"
    " WHERE snapshot_id = $1::uuid AND shard = $2::int"};

enum db_status store_snapshot_upload_part(struct db_conn *conn, const char *snapshot_id, int shard,
                                          const struct store_snapshot_upload *u)
{
    struct db_params p = {0};
    char *tags = json_dumps(u->tags, JSON_COMPACT);
    db_param_text(&p, snapshot_id);
    db_param_int(&p, shard);
    db_param_text(&p, u->upload_id);
    db_param_int(&p, u->parts);
    db_param_int(&p, u->stored_bytes);
    db_param_text(&p, tags);
    db_param_int(&p, u->raw_bytes);
    enum db_status st = db_exec_params(conn, &record_part, &p);
    free(tags);
    return st;
}

static const struct db_stmt upload_done = {
    "UPDATE snapshot_shards SET status = 'uploaded', size_bytes = $3::bigint, sha256 = $4"
    " WHERE snapshot_id = $1::uuid AND shard = $2::int"};

enum db_status store_snapshot_upload_done(struct db_conn *conn, const char *snapshot_id, int shard,
                                          long long size_bytes, const char *sha256)
{
    struct db_params p = {0};
    db_param_text(&p, snapshot_id);
    db_param_int(&p, shard);
    db_param_int(&p, size_bytes);
    db_param_text(&p, sha256);
    return db_exec_params(conn, &upload_done, &p);
}

static const struct db_stmt upload_failed = {
    "UPDATE snapshot_shards SET error = $3 WHERE snapshot_id = $1::uuid AND shard = $2::int"};

enum db_status store_snapshot_upload_failed(struct db_conn *conn, const char *snapshot_id,
                                            int shard, const char *error)
{
    struct db_params p = {0};
    db_param_text(&p, snapshot_id);
    db_param_int(&p, shard);
    db_param_text(&p, error);
    return db_exec_params(conn, &upload_failed, &p);
}

/* ---- the schedule ------------------------------------------------------------ */

/* Clusters that take automatic snapshots: their window, when the last
 * automatic one began (epoch seconds; null: never) and whether an
 * operation runs on them. */
static const struct db_stmt automatic = {
    "SELECT coalesce(json_agg(json_build_object('cluster_id', c.id,"
    "  'window', c.spec ->> 'snapshot_window',"
    "  'retention_days', (c.spec ->> 'snapshot_retention_days')::int,"
    "  'last', (SELECT extract(epoch FROM max(s.created_at))::bigint FROM snapshots s"
    "           WHERE s.cluster_uid = c.uid AND s.source = 'automatic'),"
    "  'busy', EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id"
    "                  AND o.status IN ('pending', 'running')))), '[]')"
    " FROM clusters c WHERE c.status = 'available'"
    "  AND coalesce((c.spec ->> 'snapshot_retention_days')::int, 0) > 0"};

enum db_status store_snapshots_automatic(struct db_conn *conn, json_t **out)
{
    return store_get_json(conn, &automatic, 0, NULL, out);
}

/* Automatic snapshots past their retention, by a clock offset_s ahead of
 * the database's (tests), are to be deleted. */
static const struct db_stmt expire = {
    "UPDATE snapshots SET status = 'deleting'"
    " WHERE source = 'automatic' AND status IN ('available', 'failed')"
    "  AND retention_days IS NOT NULL"
    "  AND created_at + make_interval(days => retention_days)"
    "      < now() + make_interval(secs => $1::int)"};

enum db_status store_snapshots_expire(struct db_conn *conn, int offset_s)
{
    struct db_params p = {0};
    db_param_int(&p, offset_s);
    return db_exec_params(conn, &expire, &p);
}

/* ---- removal ------------------------------------------------------------------- */

/* Snapshots being deleted, and failed ones whose files may remain: their
 * ids and shard counts. */
static const struct db_stmt to_remove = {
    "SELECT coalesce(json_agg(json_build_object('id', s.id, 'status', s.status,"
    "  'shards', (SELECT coalesce(json_agg(json_build_object('shard', x.shard,"
    "     'upload_id', x.upload_id) ORDER BY x.shard), '[]')"
    "   FROM snapshot_shards x WHERE x.snapshot_id = s.id))), '[]')"
    " FROM (SELECT * FROM snapshots WHERE status = 'deleting'"
    "  OR (status = 'failed' AND EXISTS (SELECT 1 FROM snapshot_shards x"
    "      WHERE x.snapshot_id = snapshots.id))"
    "  ORDER BY created_at LIMIT 20) s"};

enum db_status store_snapshots_to_remove(struct db_conn *conn, json_t **out)
{
    return store_get_json(conn, &to_remove, 0, NULL, out);
}

/* A snapshot whose files are gone: a deleted one's row goes, a failed one
 * keeps its row (what went wrong) without shards. */
static const struct db_stmt removed = {
    "WITH gone AS (DELETE FROM snapshots WHERE id = $1::uuid AND status = 'deleting'"
    "  RETURNING id)"
    " DELETE FROM snapshot_shards WHERE snapshot_id = $1::uuid"};

enum db_status store_snapshot_removed(struct db_conn *conn, const char *snapshot_id)
{
    return store_exec(conn, &removed, snapshot_id, NULL);
}
