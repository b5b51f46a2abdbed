/* cluster_delete.c -- DELETE of a cluster: it is marked deleting and its
 * delete operation queued, in one transaction; the operation does the rest
 * (ops_cluster.c). */
#include "clusters.h"

#include <string.h>

#include "ops.h"
#include "runner.h"
#include "snapshots.h"
#include "store.h"

struct delete_call {
    struct app *app;
    const char *id, *final_snapshot;
    char *op_id;
    struct problem *p;
};

static enum db_status delete_fn(struct db_conn *conn, void *arg)
{
    struct delete_call *c = arg;
    struct store_cluster_locked row = {0};

    problem_clear(c->p);
    enum db_status st = store_cluster_lock(conn, c->id, &row);
    json_decref(row.spec);
    if (st == DB_NOT_FOUND)
        return problem_no_cluster(c->p, c->id);
    if (st == DB_OK)
        st = store_operation_yield_replacement(conn, c->id);
    if (st == DB_OK && c->final_snapshot != NULL && strcmp(row.status, "available") != 0 &&
        strcmp(row.status, "degraded") != 0) {
        problem_set(c->p, PROBLEM_CLUSTER_UNHEALTHY,
                    "a final snapshot is taken of a cluster that serves, and %s is %s: delete it "
                    "without final_snapshot",
                    c->id, row.status);
        return DB_REFUSED;
    }
    if (st == DB_OK && c->final_snapshot != NULL) {
        char snapshot_id[STORE_UUID_SIZE];
        st = snapshot_begin(c->app, conn, c->id, c->final_snapshot, "final", 0,
                            op_cluster_delete.name, snapshot_id, c->op_id, c->p);
    } else if (st == DB_OK) {
        st = store_operation_queue(conn, c->id, op_cluster_delete.name, NULL, c->op_id);
    }
    if (st == DB_CONFLICT)
        return problem_busy(c->p, c->id);
    if (st == DB_OK)
        st = store_cluster_set_status(conn, c->id, "deleting");
    if (st == DB_OK)
        st = store_event_add(conn, c->id, c->op_id, "ClusterDeleting", "info",
                             "deleting the cluster", NULL);
    return st;
}

bool cluster_delete(struct app *app, const char *cluster_id, const char *final_snapshot,
                    char *op_id, struct problem *p)
{
    struct delete_call c = {app, cluster_id, final_snapshot, op_id, p};
    if (!problem_db(p, db_tx(app->db, DB_READ_COMMITTED, delete_fn, &c)))
        return false;
    if (app->runner != NULL)
        runner_poke(app->runner);
    return true;
}
