/* ops.c -- what the operations' steps share (see ops.h). */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "timeutil.h"

bool ops_topo_load(struct op_ctx *ctx, struct ops_topo *t)
{
    memset(t, 0, sizeof(*t));
    return cluster_nodes_load(ctx->app, ctx->cluster_id, &t->nodes, &t->password, &t->cluster_mode,
                              ctx->error, sizeof(ctx->error));
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

const char *ops_context_str(const struct op_ctx *ctx, const char *key)
{
    return json_string_value(json_object_get(ctx->context, key));
}

long long ops_context_int(const struct op_ctx *ctx, const char *key)
{
    return json_integer_value(json_object_get(ctx->context, key));
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
    st = store_event_add(conn, ctx->cluster_id, ctx->op_id, "OperationFailed", "error", ctx->error,
                         detail);
    free(detail);
    json_decref(d);
    return st;
}

enum db_status ops_back_to_available(struct db_conn *conn, const struct op_ctx *ctx)
{
    return ops_failed_event(conn, ctx, "available");
}
