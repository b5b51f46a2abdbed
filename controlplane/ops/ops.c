/* ops.c -- the list of every kind of operation, and what the operations'
 * steps share (see ops.h). */
#include "ops.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "timeutil.h"

const struct op_kind *const op_kinds[] = {
    &op_cluster_create,
    &op_cluster_delete,
    &op_cluster_scale_shards,
    &op_cluster_scale_replicas,
    &op_cluster_change_node_type,
    &op_cluster_upgrade_engine,
    &op_cluster_failover,
    &op_cluster_replace_node,
    &op_cluster_apply_parameters,
    &op_calibrate,
    &op_cluster_rebalance,
    &op_cluster_snapshot,
    NULL,
};

#define NKINDS (sizeof(op_kinds) / sizeof(op_kinds[0]) - 1)

static const char *names[NKINDS + 1];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
    for (size_t i = 0; i < NKINDS; i++)
        names[i] = op_kinds[i]->name;
}

const char *const *op_kind_names(void)
{
    pthread_once(&names_once, build_names);
    return names;
}

/* A step that reads a cluster's whole topology to see whether it may go on
 * polls it no more often than once per OPS_POLL_NODES_PER_MS nodes: ten
 * times a second for up to 100 nodes, once a second for 1,000. */
#define OPS_POLL_NODES_PER_MS 1

bool ops_topo_load(struct op_ctx *ctx, struct ops_topo *t)
{
    memset(t, 0, sizeof(*t));
    bool ok = cluster_nodes_load(ctx->app, ctx->cluster_id, &t->nodes, &t->password,
                                 &t->cluster_mode, ctx->error, sizeof(ctx->error));
    if (ok && (int)t->nodes.count / OPS_POLL_NODES_PER_MS > ctx->min_wait_ms)
        ctx->min_wait_ms = (int)t->nodes.count / OPS_POLL_NODES_PER_MS;
    return ok;
}

void ops_topo_free(struct ops_topo *t)
{
    cluster_nodes_free(&t->nodes);
    free(t->password);
}

long long ops_elapsed_s(struct op_ctx *ctx, const char *key)
{
    json_t *since = json_object_get(ctx->context, key);
    long long now = time_now_s();
    if (!json_is_integer(since)) {
        json_object_set_new(ctx->context, key, json_integer(now));
        return 0;
    }
    return now - json_integer_value(since);
}

enum op_result ops_wait_within(struct op_ctx *ctx, const char *key, int limit_s, int wait_ms,
                               enum problem_code code, const char *fmt, ...)
{
    if (ops_elapsed_s(ctx, key) <= limit_s)
        return op_wait(ctx, wait_ms);
    va_list ap;
    va_start(ap, fmt);
    enum op_result r = op_failv(ctx, code, fmt, ap);
    va_end(ap);
    return r;
}

enum db_status ops_event(struct db_conn *conn, const struct op_ctx *ctx, const char *type,
                         const char *severity, const char *message, const char *detail)
{
    return store_event_add(conn, ctx->cluster_id, ctx->op_id, type, severity, message, detail);
}

const char *ops_context_str(const struct op_ctx *ctx, const char *key)
{
    return json_string_value(json_object_get(ctx->context, key));
}

long long ops_context_int(const struct op_ctx *ctx, const char *key)
{
    return json_integer_value(json_object_get(ctx->context, key));
}

json_t *ops_context_array(struct op_ctx *ctx, const char *key)
{
    json_t *a = json_object_get(ctx->context, key);
    if (a == NULL) {
        a = json_array();
        json_object_set_new(ctx->context, key, a);
    }
    return a;
}

bool ops_listed(const json_t *ids, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach (ids, i, v) {
        if (strcmp(json_string_value(v), id) == 0)
            return true;
    }
    return false;
}

enum db_status ops_event_json(struct db_conn *conn, const struct op_ctx *ctx, const char *type,
                              const char *message, const json_t *detail)
{
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st = ops_event(conn, ctx, type, "info", message, text);
    free(text);
    return st;
}

enum db_status ops_retire_nodes(struct db_conn *conn, const json_t *entries)
{
    enum db_status st = DB_OK;
    size_t i;
    json_t *entry;
    json_array_foreach (entries, i, entry) {
        if (st == DB_OK)
            st = store_node_retire(conn, json_string_value(json_object_get(entry, "node")));
    }
    return st;
}

enum db_status ops_change_failed(struct db_conn *conn, const struct op_ctx *ctx, const char *key,
                                 bool revert)
{
    enum db_status st = DB_OK;
    if (revert) {
        char *from = json_dumps(json_object_get(ctx->context, "from"), JSON_ENCODE_ANY);
        st = store_cluster_spec_revert(conn, ctx->cluster_id, key, from);
        free(from);
    }
    if (st == DB_OK)
        st = store_cluster_change_ended(conn, ctx->cluster_id, key, false);
    return st == DB_OK ? ops_failed_event(conn, ctx, NULL) : st;
}

enum db_status ops_failed_event(struct db_conn *conn, const struct op_ctx *ctx, const char *status)
{
    enum db_status st = DB_OK;
    if (status != NULL)
        st = store_cluster_set_status(conn, ctx->cluster_id, status);
    if (st != DB_OK)
        return st;
    json_t *d = json_pack("{s:s, s:s}", "code", ctx->code, "message", ctx->error);
    char *detail = json_dumps(d, JSON_COMPACT);
    st = ops_event(conn, ctx, "OperationFailed", "error", ctx->error, detail);
    free(detail);
    json_decref(d);
    return st;
}

enum db_status ops_back_to_available(struct db_conn *conn, const struct op_ctx *ctx)
{
    return ops_failed_event(conn, ctx, "available");
}
