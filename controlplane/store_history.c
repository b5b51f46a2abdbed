/* store_history.c -- operations and events: queued and recorded here, and
 * read as the API shows them. (The runner keeps its own lease statements:
 * runner.c.) */
#include <stdio.h>
#include <string.h>

#include "store.h"

/* The uid of the latest cluster whose id is the text parameter id: the one
 * that exists, or else the newest whose history table holds (by its column
 * order). A filter by cluster id shows one cluster's history, never that of
 * an earlier one of the same name (migrations/0009_cluster_uid.sql). */
#define LATEST_LIFE(id, table, order)                                                              \
    "coalesce((SELECT uid FROM clusters WHERE id = " id "::text), (SELECT cluster_uid FROM " table \
    " WHERE cluster_id = " id "::text ORDER BY " order " DESC LIMIT 1))"

#define OPERATION_JSON                                                                             \
    "json_build_object('id', id, 'cluster_id', cluster_id, 'cluster_uid', cluster_uid,"            \
    " 'kind', kind, 'status', status,"                                                             \
    " 'step', step, 'step_name', step_name, 'steps', steps, 'progress', progress,"                 \
    " 'error', error,"                                                                             \
    " 'created_at', " STORE_TS("created_at") ", 'started_at', " STORE_TS(                          \
        "started_at") ","                                                                          \
                      " 'finished_at', " STORE_TS("finished_at") ", 'updated_at', " STORE_TS(      \
                          "updated_at") ")"

static const struct db_stmt list_operations = {"SELECT " STORE_TS(
    "created_at") " || '|' || id, " OPERATION_JSON " FROM operations"
                  " WHERE ($1::text IS NULL OR cluster_uid = " LATEST_LIFE(
                      "$1", "operations",
                      "created_at") ")"
                                    "   AND ($2::text IS NULL OR status = $2) AND ($3::text IS "
                                    "NULL "
                                    "OR kind = $3)"
                                    "   AND ($4::timestamptz IS NULL OR (created_at, id) < "
                                    "($4::timestamptz, "
                                    "$5::uuid))"
                                    "   AND ($6::uuid IS NULL OR cluster_uid = $6::uuid)"
                                    " ORDER BY created_at DESC, id DESC LIMIT $7::int"};

static const struct db_stmt get_operation = {"SELECT " OPERATION_JSON
                                             " FROM operations WHERE id = $1::uuid"};

static const struct db_stmt list_events = {
    "SELECT id::text AS page_key, json_build_object('id', id::text, 'cluster_id', cluster_id,"
    "  'cluster_uid', cluster_uid,"
    "  'host_id', host_id, 'operation_id', operation_id, 'type', type, 'severity', severity,"
    "  'message', message, 'detail', detail, 'created_at', " STORE_TS(
        "created_at") ")"
                      " FROM events"
                      " WHERE id > $1::bigint AND ($2::text IS NULL OR cluster_uid = " LATEST_LIFE(
                          "$2", "events",
                          "id") ")"
                                "   AND ($3::uuid IS NULL OR host_id = $3::uuid)"
                                "   AND ($4::timestamptz IS NULL OR created_at >= $4::timestamptz)"
                                "   AND ($5::uuid IS NULL OR cluster_uid = $5::uuid)"
                                " ORDER BY events.id LIMIT $6::int"};

/* Split a "time|id" page key in place; both pointers NULL without a key. */
static void split_key(const struct page *page, char *buf, const char **time, const char **id)
{
    *time = *id = NULL;
    if (!page->has_after)
        return;
    strcpy(buf, page->after);
    char *bar = strchr(buf, '|');
    *bar = '\0';
    *time = buf;
    *id = bar + 1;
}

enum db_status store_operations_list(struct db_conn *conn, const struct store_operation_filter *f,
                                     const struct page *page, char **items, char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[7] = {f->cluster_id, f->status, f->kind, NULL, NULL, f->cluster_uid, NULL};

    split_key(page, key, &params[3], &params[4]);
    return store_list(conn, &list_operations, 7, params, page, items, next_key);
}

enum db_status store_operation_get(struct db_conn *conn, const char *id, char **out)
{
    const char *params[1] = {id};
    return store_get_text(conn, &get_operation, 1, params, out);
}

enum db_status store_events_list(struct db_conn *conn, const struct store_event_filter *f,
                                 const struct page *page, char **items, char *next_key)
{
    const char *params[6] = {page->has_after ? page->after : "0",
                             f->cluster_id,
                             f->host_id,
                             f->since,
                             f->cluster_uid,
                             NULL};
    return store_list(conn, &list_events, 6, params, page, items, next_key);
}

/* ---- writing ------------------------------------------------------------------ */

static const struct db_stmt insert_event = {
    "INSERT INTO events (cluster_id, operation_id, type, severity, message, detail)"
    " VALUES ($1, $2::uuid, $3, $4, $5, coalesce($6::jsonb, '{}'))"};

enum db_status store_event_add(struct db_conn *conn, const char *cluster_id, const char *op_id,
                               const char *type, const char *severity, const char *message,
                               const char *detail)
{
    const char *params[6] = {cluster_id, op_id, type, severity, message, detail};
    enum db_status st;
    PQclear(db_query(conn, &insert_event, 6, params, &st));
    return st;
}

/* operations_one_active (migration 0001) refuses a second active operation
 * of a cluster: DB_CONFLICT. */
static const struct db_stmt insert_operation = {
    "INSERT INTO operations (cluster_id, kind, context)"
    " VALUES ($1, $2, coalesce($3::jsonb, '{}')) RETURNING id"};

enum db_status store_operation_queue(struct db_conn *conn, const char *cluster_id, const char *kind,
                                     const json_t *context, char *op_id)
{
    struct db_params p = {0};
    enum db_status st;
    char *text = context != NULL ? json_dumps(context, JSON_COMPACT) : NULL;
    db_param_text(&p, cluster_id);
    db_param_text(&p, kind);
    db_param_text(&p, text);
    PGresult *res = db_query_params(conn, &insert_operation, &p, &st);
    free(text);
    if (res == NULL)
        return st;
    snprintf(op_id, STORE_UUID_SIZE, "%s", db_text(res, 0, 0));
    PQclear(res);
    return DB_OK;
}
