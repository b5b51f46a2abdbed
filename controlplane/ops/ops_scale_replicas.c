/* ops_scale_replicas.c -- scale_replicas: a PATCH of replicas_per_shard,
 * in either cluster mode.
 *
 * Up: the request places every new replica by the scheduler's rules in its
 * own transaction (no room: 409 INSUFFICIENT_CAPACITY, nothing stored);
 * the operation waits for their engines, joins each to its shard's primary
 * (ops_nodes.c) and only once it is in sync records it as a replica, so no
 * reader is offered an empty one.
 *
 * Down: the request picks each shard's most lagging replicas (not in sync
 * first, then by the offset last reported), so the replicas that stay are
 * the most in sync; the spec's own rule (automatic_failover needs a
 * replica) keeps the last one. The operation retires them -- their agents
 * stop them -- and, in cluster mode, has the rest of the cluster forget
 * them.
 *
 * The context holds what the request decided: "added" and "removed" (one
 * object per node), and what is done of it: "joined" and "forgotten"
 * (node ids), so a cairnd that resumes the operation does each only once. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "store.h"
#include "xalloc.h"

#define SPEC_KEY "replicas_per_shard" /* also the key of pending_changes */

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- steps ---------------------------------------------------------------- */

/* Every new node's engine runs and answers. */
static enum op_result wait_engines(struct op_ctx *ctx)
{
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    enum op_result res = ops_nodes_started(ctx, &t, json_object_get(ctx->context, "added"),
                                           ops_context_array(ctx, "joined"));
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(
        ctx, "engines_since", OPS_ENGINE_WAIT_LIMIT_S, OPS_POLL_MS, PROBLEM_ENGINE_START_FAILED,
        "the new replicas' engines did not start within %d s", OPS_ENGINE_WAIT_LIMIT_S);
}

/* The new replica is in sync: readers may be offered it from now on. */
static enum db_status replica_added(struct db_conn *conn, const struct op_ctx *ctx,
                                    const json_t *entry)
{
    enum db_status st = store_node_joined(conn, str(entry, "node"));
    if (st != DB_OK)
        return st;
    char *message = xasprintf("shard %s: replica %s in %s is in sync", str(entry, "shard"),
                              str(entry, "node"), str(entry, "az"));
    st = ops_event_json(conn, ctx, "ReplicaAdded", message, entry);
    free(message);
    return st;
}

/* Each new replica follows its shard's primary; each one in sync is
 * recorded with the record of this run of the step. Done when all are. */
static enum op_result join_replicas(struct op_ctx *ctx)
{
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    bool all = ops_nodes_join(ctx, &t, json_object_get(ctx->context, "added"),
                              ops_context_array(ctx, "joined"), replica_added);
    ops_topo_free(&t);
    if (all)
        return OP_NEXT;
    return ops_wait_within(
        ctx, "join_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS, PROBLEM_REPLICATION_FAILED,
        "the new replicas were not all in sync within %d s", OPS_FORM_WAIT_LIMIT_S);
}

/* The replicas chosen to go are to be deleted: their agents stop them. */
static enum db_status retire_replicas(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = DB_OK;
    size_t i;
    json_t *gone;
    json_array_foreach (json_object_get(ctx->context, "removed"), i, gone) {
        if (st != DB_OK)
            break;
        char *message =
            xasprintf("shard %s: replica %s removed", str(gone, "shard"), str(gone, "node"));
        st = store_node_retire(conn, str(gone, "node"));
        if (st == DB_OK)
            st = ops_event_json(conn, ctx, "ReplicaRemoved", message, gone);
        free(message);
    }
    return st;
}

/* Cluster mode: the nodes that stay forget each removed one. */
static enum op_result forget_removed(struct op_ctx *ctx)
{
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    bool all = ops_nodes_forget(&t, json_object_get(ctx->context, "removed"),
                                ops_context_array(ctx, "forgotten"));
    ops_topo_free(&t);
    if (all)
        return OP_NEXT;
    return ops_wait_within(ctx, "forget_since", OPS_FORM_WAIT_LIMIT_S, 200, PROBLEM_FORGET_BLOCKED,
                           "the removed replicas were still known to the cluster after %d s",
                           OPS_FORM_WAIT_LIMIT_S);
}

static enum db_status finish(struct db_conn *conn, const struct op_ctx *ctx)
{
    return store_cluster_change_ended(conn, ctx->cluster_id, SPEC_KEY, true);
}

/* Scaling up failed: the new replicas go again (joined or not, so every
 * shard has what it had) and the spec says what runs. Scaling down fails
 * only in forgetting, after the replicas went: the spec holds. */
static enum db_status failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    const json_t *added = json_object_get(ctx->context, "added");
    enum db_status st = ops_retire_nodes(conn, added);
    return st == DB_OK ? ops_change_failed(conn, ctx, SPEC_KEY, json_array_size(added) > 0) : st;
}

static const struct op_step scale_steps[] = {
    {"wait_engines", wait_engines}, {"join", join_replicas},  {"retire", NULL, retire_replicas},
    {"forget", forget_removed},     {"finish", NULL, finish},
};

const struct op_kind op_cluster_scale_replicas = {
    "scale_replicas", scale_steps, sizeof(scale_steps) / sizeof(scale_steps[0]), failed};

/* ---- the change behind PATCH replicas_per_shard (changes.h) ---------------- */

struct scale_plan {
    struct change_request *r;
    struct store_shard_nodes nodes;
    json_t *added, *removed;
    int to;
};

/* Place shard's new replicas (its nodes: [first, end) of the list). */
static enum db_status add_to_shard(struct db_conn *conn, struct scale_plan *s,
                                   struct ops_placer *pl, size_t first, size_t end,
                                   struct problem *p)
{
    const struct store_shard_node *shard = &s->nodes.items[first];
    struct ops_placing where = {s->r->cluster_id, shard->shard_id, NULL,
                                json_is_true(json_object_get(s->r->next, "multi_az")), false};
    char err[256];
    int have = (int)(end - first) - 1;

    for (int k = have; k < s->to; k++) {
        struct ops_placed placed;
        enum db_status st = ops_place_replica(conn, pl, &where, &placed, err, sizeof(err));
        if (st == DB_REFUSED) {
            problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                        "shard %s has %d replica(s) and no host may take replica %d of the %d "
                        "asked for: %s",
                        shard->shard_name, have, k + 1, s->to, err);
            return DB_REFUSED;
        }
        if (st != DB_OK)
            return st;
        json_array_append_new(s->added, json_pack("{s:s, s:s, s:s, s:s}", "node", placed.node_id,
                                                  "shard", shard->shard_name, "host_id",
                                                  placed.host_id, "az", placed.az));
    }
    return DB_OK;
}

/* The shard's replicas past the first s->to (the most lagging) go. */
static void remove_from_shard(struct scale_plan *s, size_t first, size_t end)
{
    for (size_t i = first + 1 + (size_t)s->to; i < end; i++) {
        const struct store_shard_node *n = &s->nodes.items[i];
        if (n->primary)
            continue;
        json_array_append_new(s->removed,
                              json_pack("{s:s, s:s, s:s, s:i, s:I}", "node", n->id, "shard",
                                        n->shard_name, "address", n->address, "port", n->port,
                                        "offset", (json_int_t)n->offset));
    }
}

static enum db_status plan_shards(struct db_conn *conn, struct scale_plan *s, struct problem *p)
{
    struct ops_placer pl;
    const json_t *spec = s->r->next;
    enum db_status st = ops_placer_open(conn, str(spec, "engine"), str(spec, "engine_version"),
                                        str(spec, "node_type"), &pl);
    for (size_t first = 0, end; st == DB_OK && first < s->nodes.n; first = end) {
        for (end = first + 1; end < s->nodes.n; end++)
            if (s->nodes.items[end].shard != s->nodes.items[first].shard)
                break;
        if ((int)(end - first) - 1 < s->to)
            st = add_to_shard(conn, s, &pl, first, end, p);
        else
            remove_from_shard(s, first, end);
    }
    ops_placer_close(&pl);
    return st;
}

static enum db_status scale_request(struct db_conn *conn, struct change_request *r,
                                    struct problem *p)
{
    json_t *from = json_object_get(r->stored, SPEC_KEY), *to = json_object_get(r->next, SPEC_KEY);
    struct scale_plan s = {r, {0}, json_array(), json_array(), (int)json_integer_value(to)};
    enum db_status st = store_shard_nodes(conn, r->cluster_id, &s.nodes);
    if (st == DB_OK)
        st = plan_shards(conn, &s, p);
    json_t *pending = json_pack("{s:O, s:O}", "from", from, "to", to);
    json_t *context = json_pack("{s:O, s:O, s:O, s:O}", "from", from, "to", to, "added", s.added,
                                "removed", s.removed);
    st = change_queue(conn, r, p, st, SPEC_KEY, pending, &op_cluster_scale_replicas, context);
    json_decref(context);
    json_decref(pending);
    json_decref(s.added);
    json_decref(s.removed);
    free(s.nodes.items);
    return st;
}

const struct change_op change_op_scale_replicas = {
    .kind = &op_cluster_scale_replicas,
    .what = "a change of the replicas per shard",
    .alone = true,
    .accepted = true,
    .queue = scale_request,
};
