/* cluster_failover.c -- POST /v1/clusters/{id}/failover: a planned failover
 * of one shard is queued when a replica of it is in sync; the operation
 * (ops_cluster.c) does the switch. */
#include "clusters.h"

#include "ops.h"
#include "runner.h"
#include "store.h"

struct failover_call {
    const char *id, *shard;
    char *op_id;
    struct problem *p;
};

/* Which shard: the one named, or in cluster mode disabled the only one. */
static enum db_status pick_shard(struct db_conn *conn, struct failover_call *c,
                                 struct store_shard_pick *pick)
{
    enum db_status st = store_shard_pick(conn, c->id, c->shard, pick);
    if (st != DB_OK)
        return st;
    if (!pick->found || (pick->cluster_mode && c->shard == NULL)) {
        problem_field(c->p, "shard_id",
                      c->shard == NULL ? "is required in cluster mode"
                                       : "names no shard of this cluster");
        problem_set(c->p, PROBLEM_VALIDATION_FAILED, "which shard should fail over?");
        return DB_REFUSED;
    }
    if (!pick->in_sync_replica) {
        problem_set(c->p, PROBLEM_NO_IN_SYNC_REPLICA,
                    "no replica of this shard is linked and in sync: a planned failover would "
                    "lose writes");
        return DB_REFUSED;
    }
    return DB_OK;
}

static enum db_status failover_fn(struct db_conn *conn, void *arg)
{
    struct failover_call *c = arg;
    struct store_cluster_locked row = {0};
    struct store_shard_pick pick;

    problem_clear(c->p);
    enum db_status st = store_cluster_lock(conn, c->id, &row);
    json_decref(row.spec);
    if (st == DB_NOT_FOUND)
        return problem_no_cluster(c->p, c->id);
    if (st != DB_OK || (st = pick_shard(conn, c, &pick)) != DB_OK)
        return st;
    json_t *context = json_pack("{s:i}", "shard", pick.index);
    st = store_operation_queue(conn, c->id, op_cluster_failover.name, context, c->op_id);
    json_decref(context);
    if (st == DB_CONFLICT)
        return problem_busy(c->p, c->id);
    if (st != DB_OK)
        return st;
    return store_event_add(conn, c->id, c->op_id, "FailoverRequested", "info",
                           "a planned failover was requested", NULL);
}

bool cluster_failover(struct app *app, const char *cluster_id, const char *shard, char *op_id,
                      struct problem *p)
{
    struct failover_call c = {cluster_id, shard, op_id, p};
    if (!problem_db(p, db_tx(app->db, DB_READ_COMMITTED, failover_fn, &c)))
        return false;
    if (app->runner != NULL)
        runner_poke(app->runner);
    return true;
}
