/* cluster_rebalance.c -- POST /v1/clusters/{id}/rebalance: move hash slots
 * only, so that each shard carries a fair share of the slots' load (the
 * imbalance the hot-slot advice finds, or keys piled up by hash tags). A
 * preview reads the slots live and lists the moves with their keys and
 * bytes; otherwise the rebalance operation (ops_reshard.c) is queued. */
#include "clusters.h"

#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "reshard.h"
#include "runner.h"
#include "slot_view.h"
#include "store.h"

struct rebalance_call {
    const char *id;
    double tolerance;
    bool dry_run;
    bool cluster_mode;
    char *op_id;
    struct problem *p;
};

/* The cluster is there, runs in cluster mode and, unless previewing, is
 * free: the operation is queued with the cluster modifying. */
static enum db_status rebalance_fn(struct db_conn *conn, void *arg)
{
    struct rebalance_call *c = arg;
    struct store_cluster_locked row = {0};

    problem_clear(c->p);
    enum db_status st = store_cluster_lock(conn, c->id, &row);
    if (st == DB_NOT_FOUND)
        return problem_no_cluster(c->p, c->id);
    c->cluster_mode =
        st == DB_OK && strcmp(json_string_value(json_object_get(row.spec, "cluster_mode")) != NULL
                                  ? json_string_value(json_object_get(row.spec, "cluster_mode"))
                                  : "enabled",
                              "disabled") != 0;
    json_decref(row.spec);
    if (st != DB_OK)
        return st;
    if (!c->cluster_mode) {
        problem_set(c->p, PROBLEM_NOT_SUPPORTED_BY_ENGINE,
                    "cluster %s runs with cluster mode disabled: it has one shard and no hash "
                    "slots to move",
                    c->id);
        return DB_REFUSED;
    }
    if (c->dry_run)
        return DB_REFUSED; /* nothing to store; checked only */
    if (row.busy)
        return problem_busy(c->p, c->id);
    json_t *context = json_pack("{s:f}", "tolerance", c->tolerance);
    st = store_cluster_mark_modifying(conn, c->id, "rebalance", context);
    if (st == DB_OK)
        st = store_operation_queue(conn, c->id, op_cluster_rebalance.name, context, c->op_id);
    json_decref(context);
    if (st == DB_CONFLICT)
        return problem_busy(c->p, c->id);
    return st;
}

/* What a rebalance would move now. */
static json_t *preview(struct app *app, const char *id, double tolerance, struct problem *p)
{
    struct slot_view v;
    struct reshard_plan plan;
    char err[512];
    json_t *out = NULL;

    if (!slot_view_load(app, id, true, &v, err, sizeof(err))) {
        problem_set(p, PROBLEM_CLUSTER_UNHEALTHY, "the slots could not be read: %s", err);
    } else {
        struct reshard_input in = {v.nshards, v.owner, v.weight, NULL, tolerance};
        if (!reshard_plan(&in, &plan)) {
            problem_set(p, PROBLEM_CLUSTER_UNHEALTHY,
                        "some slot is served by no shard (CLUSTER NODES of the primaries)");
        } else {
            out = slot_view_preview_json(&v, &plan);
            json_object_set_new(out, "dry_run", json_true());
            json_object_set_new(out, "tolerance_percent", json_real(tolerance * 100));
            /* Moves left open (a cairnd killed mid-move, another tool) are
             * finished first, before the plan is made again. */
            json_t *open = json_array();
            for (size_t i = 0; i < v.nopen; i++) {
                char from[16], to[16];
                slot_view_shard_name(v.open[i].from, from);
                slot_view_shard_name(v.open[i].to, to);
                json_array_append_new(open, json_pack("{s:i, s:s, s:s}", "slot", v.open[i].slot,
                                                      "from_shard", from, "to_shard", to));
            }
            json_object_set_new(out, "open_moves", open);
            reshard_plan_free(&plan);
        }
    }
    slot_view_free(&v);
    return out;
}

bool cluster_rebalance(struct app *app, const char *cluster_id, double tolerance, bool dry_run,
                       json_t **out, char *op_id, struct problem *p)
{
    struct rebalance_call c = {cluster_id, tolerance, dry_run, true, op_id, p};
    *out = NULL;
    op_id[0] = '\0';
    enum db_status st = db_tx(app->db, DB_READ_COMMITTED, rebalance_fn, &c);
    if (st == DB_REFUSED && dry_run && !p->set)
        return (*out = preview(app, cluster_id, tolerance, p)) != NULL;
    if (!problem_db(p, st))
        return false;
    if (app->runner != NULL)
        runner_poke(app->runner);
    return true;
}
