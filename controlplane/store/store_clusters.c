/* store_clusters.c -- clusters: the resource as the API shows it (the spec
 * exactly as sent or defaulted, plus what is computed, kept apart), read
 * from the view cluster_documents (migrations/0011_views.sql), and the
 * cluster's row as requests and operations change it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "xalloc.h"

static const struct db_stmt get_cluster = {
    "SELECT doc_for(doc, $2::boolean)::text FROM cluster_documents WHERE id = $1"};

/* The same with its generation (the ETag), in one round trip. */
static const struct db_stmt get_cluster_versioned = {
    "SELECT doc_for(d.doc, $2::boolean)::text, c.generation FROM cluster_documents d"
    " JOIN clusters c ON c.id = d.id WHERE d.id = $1"};

static const struct db_stmt list_clusters = {
    "SELECT id, doc_for(doc, $5::boolean)::text FROM cluster_documents"
    " WHERE id > $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR engine = $3)"
    "   AND ($4::text IS NULL"
    "        OR tags ->> split_part($4, ':', 1) = substr($4, length(split_part($4, ':', 1)) + 2))"
    " ORDER BY id LIMIT $6::int"};

static const struct db_stmt cluster_etag = {"SELECT generation FROM clusters WHERE id = $1"};

enum db_status store_cluster_get(struct db_conn *conn, const char *id, bool host_details,
                                 char **out)
{
    const char *params[2] = {id, host_details ? "true" : "false"};
    return store_get_text(conn, &get_cluster, 2, params, out);
}

struct versioned {
    char **text;
    long long *generation;
};

static void read_versioned(const PGresult *res, int row, void *item)
{
    struct versioned *v = item;
    *v->text = store_dup_text(res, row, 0);
    *v->generation = db_int(res, row, 1);
}

enum db_status store_cluster_get_versioned(struct db_conn *conn, const char *id, bool host_details,
                                           char **out, long long *generation)
{
    struct db_params p = {0};
    struct versioned v = {out, generation};
    db_param_text(&p, id);
    db_param_text(&p, host_details ? "true" : "false");
    return store_read_row(conn, &get_cluster_versioned, &p, read_versioned, &v);
}

enum db_status store_cluster_generation(struct db_conn *conn, const char *id, long long *out)
{
    const char *params[1] = {id};
    return store_get_int64(conn, &cluster_etag, 1, params, out);
}

enum db_status store_clusters_list(struct db_conn *conn, const struct store_cluster_filter *f,
                                   const struct page *page, char **items, char *next_key)
{
    const char *params[6] = {page->has_after ? page->after : "", f->status, f->engine, f->tag,
                             f->host_details ? "true" : "false", NULL};
    return store_list(conn, &list_clusters, 6, params, page, items, next_key);
}

/* ---- the request side: spec, status ---------------------------------------- */

static const struct db_stmt lock_spec = {
    "SELECT spec::text, generation, EXISTS (SELECT 1 FROM operations o"
    "  WHERE o.cluster_id = c.id AND o.status IN ('pending', 'running')), status"
    " FROM clusters c WHERE id = $1 FOR UPDATE"};

static void read_locked(const PGresult *res, int row, void *item)
{
    struct store_cluster_locked *out = item;
    out->spec = json_loads(db_text(res, row, 0), 0, NULL);
    out->generation = db_int(res, row, 1);
    out->busy = db_bool(res, row, 2);
    store_copy_text(out->status, sizeof(out->status), res, row, 3);
}

enum db_status store_cluster_lock(struct db_conn *conn, const char *id,
                                  struct store_cluster_locked *out)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    enum db_status st = store_read_row(conn, &lock_spec, &p, read_locked, out);
    return st == DB_OK && out->spec == NULL ? DB_ERROR : st;
}

static const struct db_stmt set_spec = {
    "UPDATE clusters SET spec = $2::jsonb, generation = generation + 1, updated_at = now()"
    " WHERE id = $1"};

enum db_status store_cluster_set_spec(struct db_conn *conn, const char *id, const json_t *spec)
{
    struct db_params p = {0};
    enum db_status st;
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    db_param_text(&p, id);
    db_param_text(&p, text);
    PQclear(db_query_params(conn, &set_spec, &p, &st));
    free(text);
    return st;
}

static const struct db_stmt set_status = {
    "UPDATE clusters SET status = $2, updated_at = now() WHERE id = $1"};

enum db_status store_cluster_set_status(struct db_conn *conn, const char *id, const char *status)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, status);
    return db_exec_params(conn, &set_status, &p);
}

static const struct db_stmt mark_modifying = {
    "UPDATE clusters SET status = 'modifying', updated_at = now(),"
    "  pending_changes = pending_changes || jsonb_build_object($2::text, $3::jsonb)"
    " WHERE id = $1"};

enum db_status store_cluster_mark_modifying(struct db_conn *conn, const char *id, const char *key,
                                            const json_t *pending)
{
    struct db_params p = {0};
    enum db_status st;
    char *text = json_dumps(pending, JSON_COMPACT);
    db_param_text(&p, id);
    db_param_text(&p, key);
    db_param_text(&p, text);
    PQclear(db_query_params(conn, &mark_modifying, &p, &st));
    free(text);
    return st;
}

/* A shard with a replica in its primary's AZ, which multi_az forbids. */
static const struct db_stmt multi_az_breach = {
    "SELECT s.name, h.az FROM shards s"
    " JOIN nodes p ON p.shard_id = s.id AND p.role = 'primary' AND p.desired_state <> 'deleted'"
    " JOIN hosts h ON h.id = p.host_id"
    " WHERE s.cluster_id = $1 AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "   WHERE r.shard_id = s.id AND r.id <> p.id AND r.desired_state <> 'deleted'"
    "   AND rh.az = h.az)"
    " ORDER BY s.index LIMIT 1"};

enum db_status store_cluster_multi_az_breach(struct db_conn *conn, const char *id, bool *breach,
                                             char *shard, size_t shard_size, char *az,
                                             size_t az_size)
{
    struct db_params p = {0};
    PGresult *res;
    db_param_text(&p, id);
    enum db_status st = store_query_row(conn, &multi_az_breach, &p, &res);
    *breach = st == DB_OK;
    if (!*breach)
        return st == DB_NOT_FOUND ? DB_OK : st;
    store_copy_text(shard, shard_size, res, 0, 0);
    store_copy_text(az, az_size, res, 0, 1);
    PQclear(res);
    return DB_OK;
}

static const struct db_stmt shard_pick = {
    "SELECT s.index, c.spec ->> 'cluster_mode' <> 'disabled',"
    "  EXISTS (SELECT 1 FROM nodes n WHERE n.shard_id = s.id AND n.role = 'replica'"
    "    AND n.process_state = 'running' AND n.master_link_status = 'up'"
    "    AND NOT coalesce(n.loading, false) AND NOT coalesce(n.sync_in_progress, false))"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id"
    " WHERE c.id = $1 AND ($2::text IS NULL OR s.name = $2) AND s.removed_at IS NULL"
    " ORDER BY s.index"};

enum db_status store_shard_pick(struct db_conn *conn, const char *cluster_id, const char *name,
                                struct store_shard_pick *out)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, cluster_id);
    db_param_text(&p, name);
    PGresult *res = db_query_params(conn, &shard_pick, &p, &st);
    if (res == NULL)
        return st;
    /* Unnamed, a cluster of several shards has no one to pick. */
    out->found = PQntuples(res) == 1;
    out->index = out->found ? (int)db_int(res, 0, 0) : -1;
    out->cluster_mode = PQntuples(res) > 0 && db_bool(res, 0, 1);
    out->in_sync_replica = out->found && db_bool(res, 0, 2);
    PQclear(res);
    return DB_OK;
}

/* ---- the operation side ------------------------------------------------------- */

static const struct db_stmt set_available = {
    "UPDATE clusters SET status = 'available', observed_generation = generation,"
    "  engine_version_actual = (SELECT max(running_version) FROM nodes WHERE cluster_id = $1),"
    "  updated_at = now() WHERE id = $1"};

enum db_status store_cluster_set_available(struct db_conn *conn, const char *id)
{
    return store_exec(conn, &set_available, id, NULL);
}

static const struct db_stmt drop = {"DELETE FROM clusters WHERE id = $1"};

enum db_status store_cluster_drop(struct db_conn *conn, const char *id)
{
    return store_exec(conn, &drop, id, NULL);
}

static const struct db_stmt sealed_secret = {
    "SELECT encode(auth_secret, 'hex') FROM clusters WHERE id = $1"};

/* A text column that may be NULL, into the char * at item. */
static void read_text_or_null(const PGresult *res, int row, void *item)
{
    *(char **)item = store_dup_text(res, row, 0);
}

enum db_status store_cluster_secret(struct db_conn *conn, const char *id, char **hex)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    free(*hex);
    *hex = NULL;
    return store_read_row(conn, &sealed_secret, &p, read_text_or_null, hex);
}

static const struct db_stmt auth_state = {
    "SELECT encode(auth_secret, 'hex'), auth_secret_previous IS NOT NULL,"
    " api_time(auth_token_updated_at) FROM clusters WHERE id = $1"};

static void read_auth(const PGresult *res, int row, void *item)
{
    struct store_cluster_auth *a = item;
    a->hex = store_dup_text(res, row, 0);
    a->rotating = db_bool(res, row, 1);
    a->updated_at = store_dup_text(res, row, 2);
}

enum db_status store_cluster_auth(struct db_conn *conn, const char *id,
                                  struct store_cluster_auth *out)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    store_cluster_auth_free(out);
    return store_read_row(conn, &auth_state, &p, read_auth, out);
}

void store_cluster_auth_free(struct store_cluster_auth *a)
{
    free(a->hex);
    free(a->updated_at);
    memset(a, 0, sizeof(*a));
}

static const struct db_stmt auth_update = {
    "UPDATE clusters SET auth_secret_previous = CASE WHEN $3::boolean THEN auth_secret END,"
    " auth_lookup_previous = CASE WHEN $3::boolean THEN auth_lookup END,"
    " auth_secret = coalesce($2::bytea, auth_secret),"
    " auth_lookup = CASE WHEN $2 IS NULL THEN auth_lookup ELSE $4::bytea END,"
    " auth_token_updated_at = now() WHERE id = $1"};

enum db_status store_cluster_auth_update(struct db_conn *conn, const char *id, const char *sealed,
                                         const char *lookup, bool keep_current)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, sealed);
    db_param_text(&p, keep_current ? "true" : "false");
    db_param_text(&p, lookup);
    return db_exec_params(conn, &auth_update, &p);
}

static const struct db_stmt parameters_done = {
    "UPDATE clusters SET status = 'available', updated_at = now(),"
    "  pending_changes = CASE WHEN jsonb_array_length($2::jsonb) = 0"
    "    THEN pending_changes - 'parameters'"
    "    ELSE pending_changes || jsonb_build_object('parameters', jsonb_build_object("
    "      'values', spec -> 'parameters', 'restart_needed', $2::jsonb,"
    "      'applies', 'at each node''s next restart')) END"
    " WHERE id = $1"};

enum db_status store_cluster_parameters_applied(struct db_conn *conn, const char *id,
                                                const char *restart_needed)
{
    const char *params[2] = {id, restart_needed};
    enum db_status st;
    PQclear(db_query(conn, &parameters_done, 2, params, &st));
    return st;
}

static const struct db_stmt change_ended = {
    "UPDATE clusters SET status = 'available', updated_at = now(),"
    "  observed_generation = CASE WHEN $3::boolean THEN generation ELSE observed_generation END,"
    "  pending_changes = pending_changes - $2::text WHERE id = $1"};

enum db_status store_cluster_change_ended(struct db_conn *conn, const char *id, const char *key,
                                          bool succeeded)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, key);
    db_param_bool(&p, succeeded);
    return db_exec_params(conn, &change_ended, &p);
}

static const struct db_stmt spec_revert = {
    "UPDATE clusters SET spec = spec || jsonb_build_object($2::text, $3::jsonb),"
    "  generation = generation + 1, updated_at = now() WHERE id = $1"};

enum db_status store_cluster_spec_revert(struct db_conn *conn, const char *id, const char *field,
                                         const char *value)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, field);
    db_param_text(&p, value);
    return db_exec_params(conn, &spec_revert, &p);
}

/* Samples are per node and minute (metric_samples); a primary's newest is
 * what its shard holds now. */
static const struct db_stmt data_peak = {
    "SELECT x.name, x.used::bigint, round(t.memory_gib * 1073741824)::bigint"
    " FROM node_types t LEFT JOIN LATERAL ("
    "   SELECT DISTINCT ON (n.id) s.name, m.vals[$2::int] AS used"
    "   FROM nodes n JOIN shards s ON s.id = n.shard_id"
    "   JOIN metric_samples m ON m.cluster_id = n.cluster_id AND m.node_id = n.id"
    "   WHERE n.cluster_id = $1 AND n.role = 'primary' AND n.desired_state <> 'deleted'"
    "     AND m.at > now() - interval '15 minutes' AND m.vals[$2::int] IS NOT NULL"
    "   ORDER BY n.id, m.at DESC) x ON true"
    " WHERE t.name = $3 ORDER BY x.used DESC NULLS LAST LIMIT 1"};

static void read_peak(const PGresult *res, int row, void *item)
{
    struct store_data_peak *out = item;
    out->found = !PQgetisnull(res, row, 0);
    store_copy_text(out->shard, sizeof(out->shard), res, row, 0);
    out->used_bytes = out->found ? db_int(res, row, 1) : 0;
    out->type_bytes = db_int(res, row, 2);
}

enum db_status store_cluster_data_peak(struct db_conn *conn, const char *id, int used_at,
                                       const char *node_type, struct store_data_peak *out)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_int(&p, used_at);
    db_param_text(&p, node_type);
    memset(out, 0, sizeof(*out));
    return store_read_row(conn, &data_peak, &p, read_peak, out);
}

/* ---- what other readers ask ------------------------------------------------------ */

static const struct db_stmt cluster_live = {
    "SELECT count(*) FROM clusters WHERE id = $1 AND status <> 'deleting'"};

enum db_status store_cluster_live(struct db_conn *conn, const char *id, bool *live)
{
    struct db_params p = {0};
    long long n = 0;
    db_param_text(&p, id);
    enum db_status st = store_get_int64(conn, &cluster_live, p.n, p.values, &n);
    *live = n > 0;
    return st;
}

/* The version is what the nodes run as their agents last saw it (the
 * oldest, while an upgrade is under way), as engine_version_actual shows
 * it; the column keeps the version of when the cluster became available. */
static const struct db_stmt engine_of = {
    "SELECT spec ->> 'engine', coalesce(spec ->> 'cluster_mode', 'enabled') = 'enabled',"
    " coalesce((SELECT min(n.running_version) FROM nodes n"
    "           WHERE n.cluster_id = c.id AND n.desired_state <> 'deleted'),"
    "          engine_version_actual, spec ->> 'engine_version', '')"
    " FROM clusters c WHERE id = $1"};

static void read_engine(const PGresult *res, int row, void *item)
{
    struct store_cluster_engine *out = item;
    store_copy_text(out->engine, sizeof(out->engine), res, row, 0);
    out->cluster_mode = db_bool(res, row, 1);
    store_copy_text(out->version, sizeof(out->version), res, row, 2);
}

enum db_status store_cluster_engine(struct db_conn *conn, const char *id,
                                    struct store_cluster_engine *out)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    return store_read_row(conn, &engine_of, &p, read_engine, out);
}

/* The clusters one of whose AUTH tokens has the keyed hash $1 (normally
 * one), with both their sealed tokens. */
static const struct db_stmt secrets_by_lookup = {
    "SELECT id, encode(auth_secret, 'hex'), encode(auth_secret_previous, 'hex') FROM clusters"
    " WHERE auth_lookup = $1::bytea OR auth_lookup_previous = $1::bytea"};

/* Those sealed before migration 0034, whose hashes are not known yet. */
static const struct db_stmt secrets_unindexed = {
    "SELECT id, encode(auth_secret, 'hex'), encode(auth_secret_previous, 'hex') FROM clusters"
    " WHERE (auth_secret IS NOT NULL AND auth_lookup IS NULL)"
    "    OR (auth_secret_previous IS NOT NULL AND auth_lookup_previous IS NULL)"};

static void read_secret(const PGresult *res, int row, void *item)
{
    struct store_cluster_secret *s = item;
    s->id = store_dup_text(res, row, 0);
    s->hex = store_dup_text(res, row, 1);
    s->previous_hex = store_dup_text(res, row, 2);
}

enum db_status store_cluster_secrets(struct db_conn *conn, const char *lookup,
                                     struct store_cluster_secrets *out)
{
    enum db_status st;
    struct db_params p = {0};
    db_param_text(&p, lookup);
    out->items =
        store_read_rows(conn, lookup != NULL ? &secrets_by_lookup : &secrets_unindexed,
                        lookup != NULL ? &p : NULL, sizeof(*out->items), read_secret, &out->n, &st);
    return st;
}

/* Only while the tokens are still the ones the hashes were made of. */
static const struct db_stmt fill_lookup = {
    "UPDATE clusters SET auth_lookup = $4::bytea, auth_lookup_previous = $5::bytea"
    " WHERE id = $1 AND auth_secret IS NOT DISTINCT FROM decode($2, 'hex')"
    "   AND auth_secret_previous IS NOT DISTINCT FROM decode($3, 'hex')"};

enum db_status store_cluster_auth_lookup_fill(struct db_conn *conn,
                                              const struct store_cluster_secret *s,
                                              const char *lookup, const char *previous_lookup)
{
    struct db_params p = {0};
    db_param_text(&p, s->id);
    db_param_text(&p, s->hex);
    db_param_text(&p, s->previous_hex);
    db_param_text(&p, lookup);
    db_param_text(&p, previous_lookup);
    return db_exec_params(conn, &fill_lookup, &p);
}

void store_cluster_secrets_free(struct store_cluster_secrets *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i].id);
        free(s->items[i].hex);
        free(s->items[i].previous_hex);
    }
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static const struct db_stmt clusters_by_status = {
    "SELECT status, count(*) FROM clusters GROUP BY status ORDER BY status"};

enum db_status store_clusters_by_status(struct db_conn *conn, struct store_counts *out)
{
    return store_count_rows(conn, &clusters_by_status, out);
}
