/* store_audit.c -- the audit log: one row per call that changes something
 * or tries to (migrations/0023_audit_log.sql), and its pages. */
#include <stdio.h>

#include "store.h"

static const struct db_stmt insert_entry = {
    "INSERT INTO audit_log (request_id, caller_kind, token_id, token_scope, remote_address,"
    "  method, path, action, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::int)"};

enum db_status store_audit_add(struct db_conn *conn, const struct store_audit_entry *e)
{
    char status[16];
    snprintf(status, sizeof(status), "%d", e->status);
    const char *params[9] = {e->request_id,  e->caller_kind,    e->token_id,
                             e->token_scope, e->remote_address, e->method,
                             e->path,        e->action,         status};
    enum db_status st;
    PQclear(db_query(conn, &insert_entry, 9, params, &st));
    return st;
}

/* In id order, as events are (store_history.c says why the key is apart). */
static const struct db_stmt list_entries = {
    "SELECT id::text AS page_key, json_build_object('id', id, 'time', api_time(at),"
    "  'request_id', request_id, 'caller', json_build_object('kind', caller_kind,"
    "    'token_id', token_id, 'scope', token_scope),"
    "  'remote_address', remote_address, 'method', method, 'path', path, 'action', action,"
    "  'status', status)::text"
    " FROM audit_log WHERE id > $1::bigint"
    "   AND ($2::timestamptz IS NULL OR at >= $2::timestamptz)"
    "   AND ($3::text IS NULL OR token_id = $3)"
    " ORDER BY id LIMIT $4::int"};

enum db_status store_audit_list(struct db_conn *conn, const struct store_audit_filter *f,
                                const struct page *page, char **items, char *next_key)
{
    const char *params[4] = {page->has_after ? page->after : "0", f->since, f->token_id, NULL};
    return store_list(conn, &list_entries, 4, params, page, items, next_key);
}
