/* ops_delete.c -- the delete operation: a final snapshot when one was
 * asked for (ops_snapshot.c), then the nodes are marked deleted, their
 * agents stop the engines and remove their data, and the cluster's rows go
 * once none is left. */
#include "ops.h"

#include "store.h"

static enum db_status stop_nodes(struct db_conn *conn, const struct op_ctx *ctx)
{
    return store_nodes_mark_deleted(conn, ctx->cluster_id);
}

struct remaining {
    const char *cluster_id;
    int left;
};

static enum db_status remaining_fn(struct db_conn *conn, void *arg)
{
    struct remaining *r = arg;
    return store_nodes_remaining(conn, r->cluster_id, &r->left);
}

/* The agents stop the engines and remove their data; cairnd drops a node's
 * row when its agent no longer reports it. Nodes on lost hosts cannot wait
 * for that: their rows go with the cluster, each leaving a tombstone that
 * has its agent remove the data when the host returns (store_nodes_remaining()). */
static enum op_result wait_removed(struct op_ctx *ctx)
{
    struct remaining r = {ctx->cluster_id, -1};
    int left = db_tx(ctx->app->db, DB_READ_COMMITTED, remaining_fn, &r) == DB_OK ? r.left : -1;
    if (left == 0)
        return OP_NEXT;
    if (left < 0 || ops_elapsed_s(ctx, "removal_since") <= OPS_FORM_WAIT_LIMIT_S)
        return op_wait(ctx, OPS_POLL_MS);
    return op_fail(ctx, PROBLEM_DELETE_STUCK, "%d node(s) were not removed within %d s", left,
                   OPS_FORM_WAIT_LIMIT_S);
}

static enum db_status drop_cluster(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = store_cluster_drop(conn, ctx->cluster_id);
    if (st != DB_OK)
        return st;
    return ops_event(conn, ctx, "ClusterDeleted", "info", "the cluster was deleted", NULL);
}

/* A delete that cannot finish leaves the cluster deleting; a new DELETE
 * tries again. One whose final snapshot failed has touched nothing yet:
 * the cluster serves on, available. */
static enum db_status delete_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    if (ctx->step >= OPS_SNAPSHOT_NSTEPS)
        return ops_failed_event(conn, ctx, NULL);
    enum db_status st = ops_snapshot_failed(conn, ctx);
    return st == DB_OK ? ops_back_to_available(conn, ctx) : st;
}

static const struct op_step delete_steps[] = {
    OPS_SNAPSHOT_STEPS,
    {"stop_nodes", NULL, stop_nodes},
    {"wait_removed", wait_removed},
    {"drop_cluster", NULL, drop_cluster},
};

const struct op_kind op_cluster_delete = {
    "delete", delete_steps, sizeof(delete_steps) / sizeof(delete_steps[0]), delete_failed};
