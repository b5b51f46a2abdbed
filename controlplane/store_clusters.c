/* store_clusters.c -- the cluster resource as the API shows it: the spec
 * exactly as sent or defaulted, plus what is computed, kept apart (status,
 * engine_version_actual, endpoints, shards, pending_changes,
 * current_operation, generation, timestamps). */
#include "store.h"

/* Roles come from the engines' reports, never from placement. A reader is a
 * replica that is linked and neither loading nor in a full sync. */
#define CLUSTER_JSON                                                                               \
    "(c.spec || jsonb_build_object("                                                               \
    "  'uid', c.uid, 'status', c.status, 'engine_version_actual', CASE WHEN "                      \
    "c.engine_version_actual IS NULL"                                                              \
    "    THEN NULL ELSE coalesce((SELECT string_agg(DISTINCT n.running_version, ', ')"             \
    "      FROM nodes n WHERE n.cluster_id = c.id AND n.desired_state <> 'deleted'),"              \
    "      c.engine_version_actual) END,"                                                          \
    "  'generation', c.generation, 'pending_changes', c.pending_changes,"                          \
    "  'created_at', " STORE_TS("c.created_at") ", 'updated_at', " STORE_TS(                       \
        "c.updated_at") ","                                                                        \
                        "  'current_operation', (SELECT jsonb_build_object('id', o.id, 'kind', "   \
                        "o.kind,"                                                                  \
                        "      'status', o.status, 'step_name', o.step_name, 'progress', "         \
                        "o.progress)"                                                              \
                        "    FROM operations o WHERE o.cluster_id = c.id AND o.status IN "         \
                        "('pending', 'running')"                                                   \
                        "    ORDER BY o.created_at DESC LIMIT 1),"                                 \
                        "  'shards', coalesce((SELECT jsonb_agg(jsonb_build_object('id', s.name,"  \
                        "      'slots', coalesce((SELECT jsonb_agg(lower(r) || '-' || (upper(r) "  \
                        "- 1))"                                                                    \
                        "        FROM unnest(s.slots) r), '[]'::jsonb),"                           \
                        "      'nodes', coalesce((SELECT jsonb_agg(jsonb_build_object('id', "      \
                        "n.id, 'role', n.role,"                                                    \
                        "          'host_id', n.host_id, 'az', h.az, 'address', h.address, "       \
                        "'port', n.port,"                                                          \
                        "          'engine', n.engine, 'engine_version', n.running_version, "      \
                        "'status', "                                                               \
                        "coalesce(n.process_state,"                                                \
                        "          'pending')) ORDER BY n.ordinal)"                                \
                        "        FROM nodes n LEFT JOIN hosts h ON h.id = n.host_id WHERE "        \
                        "n.shard_id = s.id AND n.desired_state <> 'deleted'),"                     \
                        "        '[]'::jsonb)) ORDER BY s.index)"                                  \
                        "    FROM shards s WHERE s.cluster_id = c.id), '[]'::jsonb),"              \
                        "  'endpoints', CASE WHEN c.spec ->> 'cluster_mode' = 'disabled' THEN "    \
                        "jsonb_build_object("                                                      \
                        "      'primary', (SELECT jsonb_build_object('address', h.address, "       \
                        "'port', n.port)"                                                          \
                        "        FROM nodes n JOIN hosts h ON h.id = n.host_id WHERE "             \
                        "n.cluster_id = c.id"                                                      \
                        "        AND n.role = 'primary' AND n.process_state = 'running' LIMIT 1)," \
                        "      'readers', coalesce((SELECT "                                       \
                        "jsonb_agg(jsonb_build_object('address', h.address,"                       \
                        "          'port', n.port) ORDER BY n.port)"                               \
                        "        FROM nodes n JOIN hosts h ON h.id = n.host_id WHERE "             \
                        "n.cluster_id = c.id"                                                      \
                        "        AND n.role = 'replica' AND n.process_state = 'running'"           \
                        "        AND h.status = 'healthy' AND n.desired_state <> 'deleted'"        \
                        "        AND n.master_link_status = 'up' AND NOT coalesce(n.loading, "     \
                        "false)"                                                                   \
                        "        AND NOT coalesce(n.sync_in_progress, false)), '[]'::jsonb))"      \
                        "    ELSE jsonb_build_object('configuration', coalesce((SELECT jsonb_agg(" \
                        "      jsonb_build_object('address', h.address, 'port', n.port) ORDER BY " \
                        "h.address, n.port)"                                                       \
                        "      FROM nodes n JOIN hosts h ON h.id = n.host_id WHERE n.cluster_id "  \
                        "= c.id"                                                                   \
                        "      AND n.process_state = 'running' AND h.status = 'healthy'"           \
                        "      AND n.desired_state <> 'deleted'), '[]'::jsonb)) END))"

static const struct db_stmt get_cluster = {"SELECT " CLUSTER_JSON "::text FROM clusters c"
                                           " WHERE c.id = $1"};

static const struct db_stmt list_clusters = {
    "SELECT c.id AS page_key, " CLUSTER_JSON "::text FROM clusters c"
    " WHERE c.id > $1 AND ($2::text IS NULL OR c.status = $2)"
    "   AND ($3::text IS NULL OR c.spec ->> 'engine' = $3)"
    "   AND ($4::text IS NULL OR c.spec -> 'tags' ->> split_part($4, ':', 1)"
    "        = substr($4, length(split_part($4, ':', 1)) + 2))"
    " ORDER BY c.id LIMIT $5::int"};

static const struct db_stmt cluster_etag = {"SELECT generation FROM clusters WHERE id = $1"};

enum db_status store_cluster_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_cluster, 1, params, out);
}

enum db_status store_cluster_generation(struct db_conn *conn, const char *id, long long *out)
{
    const char *params[1] = {id};
    return store_get_int64(conn, &cluster_etag, 1, params, out);
}

enum db_status store_clusters_list(struct db_conn *conn, const struct store_cluster_filter *f,
                                   const struct page *page, char **items, char *next_key)
{
    const char *params[5] = {page->has_after ? page->after : "", f->status, f->engine, f->tag,
                             NULL};
    return store_list(conn, &list_clusters, 5, params, page, items, next_key);
}
