/* store_history.c -- operations and events: queued, leased to a runner
 * and recorded here, and read as the API shows them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* The documents come from the views operation_documents and
 * event_documents (migrations/0011_views.sql). A filter by cluster id shows
 * the history of the latest cluster of that id (cluster_latest_uid),
 * never that of an earlier one of the same name. */
static const struct db_stmt list_operations = {
    "SELECT api_time(created_at) || '|' || id, doc FROM operation_documents"
    " WHERE ($1::text IS NULL"
    "        OR cluster_uid = (SELECT uid FROM cluster_latest_uid($1, 'operations')))"
    "   AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR kind = $3)"
    "   AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))"
    "   AND ($6::uuid IS NULL OR cluster_uid = $6::uuid)"
    " ORDER BY created_at DESC, id DESC LIMIT $7::int"};

static const struct db_stmt get_operation = {
    "SELECT doc FROM operation_documents WHERE id = $1::uuid"};

/* In id order: the bigint's, which page_key (its text, named apart so
 * that ORDER BY does not take it) would put 10 before 9. */
static const struct db_stmt list_events = {
    "SELECT id::text AS page_key, CASE WHEN $6::boolean THEN doc ELSE tenant_doc END"
    " FROM event_documents"
    " WHERE id > $1::bigint AND ($6::boolean OR cluster_id IS NOT NULL)"
    "   AND ($2::text IS NULL OR cluster_uid = (SELECT uid FROM cluster_latest_uid($2, 'events')))"
    "   AND ($3::uuid IS NULL OR host_id = $3::uuid)"
    "   AND ($4::timestamptz IS NULL OR created_at >= $4::timestamptz)"
    "   AND ($5::uuid IS NULL OR cluster_uid = $5::uuid)"
    " ORDER BY id LIMIT $7::int"};

enum db_status store_operations_list(struct db_conn *conn, const struct store_operation_filter *f,
                                     const struct page *page, char **items, char *next_key)
{
    char key[PAGE_KEY_MAX];
    const char *params[7] = {f->cluster_id, f->status, f->kind, NULL, NULL, f->cluster_uid, NULL};

    store_split_key(page, key, &params[3], &params[4]);
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
    const char *params[7] = {
        page->has_after ? page->after : "0", f->cluster_id, f->host_id, f->since, f->cluster_uid,
        f->host_details ? "true" : "false",  NULL};
    return store_list(conn, &list_events, 7, params, page, items, next_key);
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
    char *text = context != NULL ? json_dumps(context, JSON_COMPACT) : NULL;
    db_param_text(&p, cluster_id);
    db_param_text(&p, kind);
    db_param_text(&p, text);
    enum db_status st = store_insert_id(conn, &insert_operation, &p, op_id);
    free(text);
    return st;
}

static const struct db_stmt cancel_operation = {
    "UPDATE operations SET status = 'cancelled', finished_at = now(), updated_at = now()"
    " WHERE id = $1::uuid"};

enum db_status store_operation_cancel(struct db_conn *conn, const char *op_id)
{
    return store_exec(conn, &cancel_operation, op_id, NULL);
}

/* A replacement still waiting for a host with room (nothing placed yet: its
 * context has no new node) between two tries (no runner holds it) gives
 * way to a delete of its cluster: it ends cancelled, with an event. */
static const struct db_stmt yield_replacement = {
    "WITH gone AS (UPDATE operations SET status = 'cancelled', finished_at = now(),"
    "   updated_at = now()"
    "   WHERE cluster_id = $1 AND kind = 'replace_node' AND status IN ('pending', 'running')"
    "   AND NOT context ? 'new' AND lease_owner IS NULL RETURNING id, context ->> 'node' AS node)"
    " INSERT INTO events (cluster_id, operation_id, type, severity, message, detail)"
    " SELECT $1, id, 'NodeReplacementCancelled', 'info',"
    "   format('the cluster is being deleted: node %s is not replaced', node),"
    "   jsonb_build_object('node_id', node) FROM gone"};

enum db_status store_operation_yield_replacement(struct db_conn *conn, const char *cluster_id)
{
    return store_exec(conn, &yield_replacement, cluster_id, NULL);
}

/* ---- the runner's lease ---------------------------------------------------------- */

/* The oldest runnable operation of a kind this runner knows, leased to us.
 * Kinds it does not know are left to a cairnd that does (one being rolled
 * out, say), never failed. */
static const struct db_stmt claim = {
    "UPDATE operations o SET lease_owner = $1,"
    "   lease_expires_at = now() + make_interval(secs => $2::int),"
    "   status = 'running', started_at = coalesce(o.started_at, now()), updated_at = now()"
    " WHERE o.id = (SELECT id FROM operations"
    "   WHERE status IN ('pending', 'running') AND kind = ANY($3::text[])"
    "     AND (lease_expires_at IS NULL OR lease_expires_at < now())"
    "     AND (wake_at IS NULL OR wake_at <= now())"
    "   ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1)"
    " RETURNING o.id, o.kind, o.step, o.context::text, o.cluster_id"};

static void read_claimed(const PGresult *res, int row, void *item)
{
    struct store_claimed *out = item;
    store_copy_text(out->id, sizeof(out->id), res, row, 0);
    store_copy_text(out->kind, sizeof(out->kind), res, row, 1);
    out->step = (int)db_int(res, row, 2);
    out->context = json_loads(db_text(res, row, 3), 0, NULL);
    if (out->context == NULL)
        out->context = json_object();
    store_copy_text(out->cluster_id, sizeof(out->cluster_id), res, row, 4);
}

enum db_status store_operation_claim(struct db_conn *conn, const char *owner, int lease_s,
                                     const char *kinds, struct store_claimed *out)
{
    struct db_params p = {0};
    db_param_text(&p, owner);
    db_param_int(&p, lease_s);
    db_param_text(&p, kinds);
    return store_read_row(conn, &claim, &p, read_claimed, out);
}

/* The moment a step is recorded, as Cairn's timestamp text. */
#define FINISHED_AT STORE_TS("now()")

/* Record a step's outcome, only while the lease is still ours. */
static const struct db_stmt record = {
    "UPDATE operations SET step = $3::int, context = $4::jsonb,"
    "   steps = CASE WHEN $5::text IS NULL THEN steps ELSE steps || jsonb_build_array("
    "     jsonb_build_object('name', $5::text, 'started_at', $6::text,"
    "       'finished_at', " FINISHED_AT "))"
    "   END,"
    "   step_name = $7, progress = $8::int, status = $9,"
    "   error = CASE WHEN $10::text IS NULL THEN NULL"
    "           ELSE jsonb_build_object('code', $10::text, 'message', $11::text) END,"
    "   wake_at = now() + make_interval(secs => $12::int / 1000.0),"
    "   finished_at = CASE WHEN $9 IN ('succeeded', 'failed', 'cancelled') THEN now() END,"
    "   lease_owner = NULL, lease_expires_at = NULL, updated_at = now()"
    " WHERE id = $1::uuid AND lease_owner = $2"};

/* An operation's end, told to every listening cairnd (notify.c) when the
 * transaction that records it commits: the payload is its id. */
#define ENDED_CHANNEL "cairn_operation_ended"

static const struct db_stmt notify_ended = {"SELECT pg_notify('" ENDED_CHANNEL "', $1::text)"};

enum db_status store_operations_listen(PGconn *pg)
{
    PGresult *res = PQexec(pg, "LISTEN " ENDED_CHANNEL);
    enum db_status st = db_classify(pg, res);
    PQclear(res);
    return st;
}

enum db_status store_operation_record(struct db_conn *conn, const struct store_step_record *r)
{
    struct db_params p = {0};
    enum db_status st;
    db_param_text(&p, r->op_id);
    db_param_text(&p, r->owner);
    db_param_int(&p, r->step);
    db_param_text(&p, r->context);
    db_param_text(&p, r->done);
    db_param_text(&p, r->started_at);
    db_param_text(&p, r->step_name);
    db_param_int(&p, r->progress);
    db_param_text(&p, r->status);
    db_param_text(&p, r->code);
    db_param_text(&p, r->error);
    db_param_int(&p, r->wait_ms);
    PGresult *res = db_query_params(conn, &record, &p, &st);
    if (res != NULL && strcmp(PQcmdTuples(res), "1") != 0)
        st = DB_NOT_FOUND;
    PQclear(res);
    if (st == DB_OK && strcmp(r->status, "running") != 0)
        st = store_exec(conn, &notify_ended, r->op_id, NULL);
    return st;
}

/* ---- counts ---------------------------------------------------------------------- */

static const struct db_stmt operations_by_status = {
    "SELECT kind, status, count(*) FROM operations GROUP BY kind, status ORDER BY kind, status"};

enum db_status store_operations_by_status(struct db_conn *conn, struct store_counts *out)
{
    return store_count_rows(conn, &operations_by_status, out);
}

/* Changed credentials (migrations/0032_credential_changes.sql). */
enum db_status store_credentials_listen(PGconn *pg)
{
    PGresult *res = PQexec(pg, "LISTEN " STORE_CREDENTIALS_CHANNEL);
    enum db_status st = db_classify(pg, res);
    PQclear(res);
    return st;
}

/* An agent's report of an engine in trouble, made to a cairnd that does not
 * lead: the leader's monitor is woken (notify.c) rather than find it at its
 * next tick. */
static const struct db_stmt announce_trouble = {"SELECT pg_notify('" STORE_TROUBLE_CHANNEL
                                                "', $1::text)"};

enum db_status store_trouble_announce(struct db_conn *conn, const char *host_id)
{
    return store_exec(conn, &announce_trouble, host_id, NULL);
}

enum db_status store_trouble_listen(PGconn *pg)
{
    PGresult *res = PQexec(pg, "LISTEN " STORE_TROUBLE_CHANNEL);
    enum db_status st = db_classify(pg, res);
    PQclear(res);
    return st;
}
