/* ops_parameters.c -- apply_parameters: a PATCH of a cluster's parameters
 * is queued as this operation (its change_op), which CONFIG SETs each on
 * every node; what an engine cannot change live, and the settings Cairn
 * manages itself, wait for each node's next restart. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_config.h"
#include "nodeio.h"
#include "changes.h"
#include "store.h"
#include "topology.h"
#include "xalloc.h"

/* Settings Cairn manages itself (they shape maxmemory, persistence, the
 * cluster bus) that reach the engines through their config at restart. */
static bool applied_at_restart(const char *name)
{
    const struct engine_config_managed *m = engine_config_managed_find(name);
    return m != NULL && m->at_restart;
}

static void note_restart(json_t *list, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach (list, i, v) {
        if (strcmp(json_string_value(v), name) == 0)
            return;
    }
    json_array_append_new(list, json_string(name));
}

/* CONFIG SET every parameter on every node; those an engine refuses to
 * change live, the managed ones and removed ones wait for a restart. */
static enum op_result config_set(struct op_ctx *ctx)
{
    json_t *params = json_object_get(ctx->context, "parameters");
    json_t *later = json_array(), *value, *removed;
    const char *name;
    struct ops_topo t;
    char err[256];
    size_t i;

    if (!ops_topo_load(ctx, &t)) {
        json_decref(later);
        return op_wait(ctx, OPS_POLL_MS);
    }
    json_t *gone = json_object_get(ctx->context, "removed");
    json_array_foreach (gone, i, removed) {
        note_restart(later, json_string_value(removed));
    }
    for (size_t k = 0; k < t.nodes.count; k++) {
        struct resp_conn *c =
            nodeio_connect(&t.nodes.items[k], t.password, NODEIO_PATIENT, err, sizeof(err));
        if (c == NULL) {
            char node[sizeof(t.nodes.items[k].id)];
            snprintf(node, sizeof(node), "%s", t.nodes.items[k].id);
            ops_topo_free(&t);
            json_decref(later);
            if (ops_elapsed_s(ctx, "config_since") > OPS_FORM_WAIT_LIMIT_S)
                return op_fail(ctx, PROBLEM_NODE_UNREACHABLE, "node %s: %s", node, err);
            return op_wait(ctx, OPS_POLL_MS);
        }
        json_object_foreach (params, name, value) {
            if (applied_at_restart(name)) {
                note_restart(later, name);
                continue;
            }
            if (!engine_config_set(c, name, json_string_value(value), err, sizeof(err)))
                note_restart(later, name);
        }
        resp_close(c);
    }
    ops_topo_free(&t);
    json_object_set_new(ctx->context, "restart_needed", later);
    return OP_NEXT;
}

/* Available again; pending_changes keeps only the parameters that wait
 * for each node's next restart. */
static enum db_status finish_parameters(struct db_conn *conn, const struct op_ctx *ctx)
{
    json_t *later = json_object_get(ctx->context, "restart_needed");
    char *text = later != NULL ? json_dumps(later, JSON_COMPACT) : xstrdup("[]");
    enum db_status st = store_cluster_parameters_applied(conn, ctx->cluster_id, text);
    if (st == DB_OK) {
        char *detail = xasprintf("{\"restart_needed\": %s}", text);
        st = ops_event(conn, ctx, "ParametersApplied", "info",
                       "the cluster's parameters were applied", detail);
        free(detail);
    }
    free(text);
    return st;
}

static const struct op_step parameter_steps[] = {
    {"config_set", config_set},
    {"finish", NULL, finish_parameters},
};

/* PATCH of parameters (changes.h): the cluster is modifying, and
 * pending_changes says what is on its way. */
static enum db_status parameters_request(struct db_conn *conn, struct change_request *r,
                                         struct problem *p)
{
    const json_t *now = json_object_get(r->next, "parameters");
    json_t *pending = json_pack("{s:O, s:s}", "values", now, "applies",
                                "now, where the engine can change them live");
    json_t *removed = json_array();
    const char *name;
    json_t *value;
    json_object_foreach (json_object_get(r->stored, "parameters"), name, value) {
        if (json_object_get(now, name) == NULL)
            json_array_append_new(removed, json_string(name));
    }
    json_t *context = json_pack("{s:O, s:o}", "parameters", now, "removed", removed);
    enum db_status st = change_queue(conn, r, p, DB_OK, "parameters", pending,
                                     &op_cluster_apply_parameters, context);
    json_decref(context);
    json_decref(pending);
    return st;
}

const struct change_op change_op_apply_parameters = {
    .kind = &op_cluster_apply_parameters,
    .what = "a change of parameters",
    .queue = parameters_request,
};

const struct op_kind op_cluster_apply_parameters = {
    "apply_parameters", parameter_steps, sizeof(parameter_steps) / sizeof(parameter_steps[0]),
    ops_back_to_available};
