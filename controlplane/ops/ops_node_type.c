/* ops_node_type.c -- change_node_type: a PATCH of node_type, carried out
 * as ElastiCache does it, by a surge of new nodes, shard after shard:
 *
 *   1. the shard's new nodes (as many as it has, of the new type; placed by
 *      the request, in its transaction) start, and join its primary as
 *      replicas until in sync;
 *   2. a lossless planned failover to one of them (ops_failover_run(), its
 *      "candidates" the new nodes), which records the write pause;
 *   3. the old nodes are retired (their agents stop them) and, in cluster
 *      mode, forgotten by the rest.
 * In cluster mode disabled the primary endpoint and the Sentinel front
 * follow the failover's new primary; in cluster mode every node that
 * serves stays a configuration endpoint.
 *
 * The request refuses a type whose memory, less the reserve, cannot hold
 * the data of the fullest shard as its primary's agent last reported it.
 * The context holds the plan -- "shards", each with its "old" and "new"
 * nodes -- "next", the shard under way, and "lane", how far it is. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "metrics.h"
#include "sizing.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define SPEC_KEY "node_type" /* also the key of pending_changes */

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static json_t *current_shard(const struct op_ctx *ctx)
{
    return json_array_get(json_object_get(ctx->context, "shards"),
                          (size_t)ops_context_int(ctx, "next"));
}

/* ---- steps ---------------------------------------------------------------- */

static enum op_result start(struct op_ctx *ctx)
{
    if (json_object_get(ctx->context, "started_ms") == NULL) {
        json_object_set_new(ctx->context, "started_ms", json_integer(time_now_ms()));
        json_object_set_new(ctx->context, "write_pauses", json_array());
    }
    return OP_NEXT;
}

static enum db_status announce(struct db_conn *conn, const struct op_ctx *ctx)
{
    char *message = xasprintf("changing the node type from %s to %s, shard by shard",
                              ops_context_str(ctx, "from"), ops_context_str(ctx, "to"));
    json_t *detail = json_pack("{s:O, s:O}", "from", json_object_get(ctx->context, "from"), "to",
                               json_object_get(ctx->context, "to"));
    enum db_status st = ops_event_json(conn, ctx, "NodeTypeChanging", message, detail);
    json_decref(detail);
    free(message);
    return st;
}

static enum db_status node_joined(struct db_conn *conn, const struct op_ctx *ctx,
                                  const json_t *entry)
{
    (void)ctx;
    return store_node_joined(conn, str(entry, "node"));
}

static enum db_status retire_old(struct db_conn *conn, const struct op_ctx *ctx,
                                 const json_t *shard)
{
    (void)ctx;
    return ops_retire_nodes(conn, json_object_get(shard, "old"));
}

/* The lane's phase is done: the next one starts afresh (its own limits). */
static enum op_result advance(struct op_ctx *ctx, json_t *lane, const char *phase)
{
    json_object_set_new(lane, "phase", json_string(phase));
    return op_wait(ctx, 0);
}

/* The failover of the shard to one of its new nodes; once switched, its
 * write pause is kept and its old nodes are retired. */
static enum op_result switch_shard(struct op_ctx *ctx, json_t *lane, json_t *shard)
{
    json_t *sub = json_object_get(lane, "failover");
    if (sub == NULL) {
        json_t *candidates = json_array();
        size_t i;
        json_t *entry;
        json_array_foreach (json_object_get(shard, "new"), i, entry) {
            json_array_append(candidates, json_object_get(entry, "node"));
        }
        sub = json_pack("{s:O, s:o}", "shard", json_object_get(shard, "shard"), "candidates",
                        candidates);
        json_object_set_new(lane, "failover", sub);
    }
    enum op_result r = ops_failover_run(ctx, sub);
    if (r != OP_NEXT)
        return r;
    json_object_set_new(lane, "write_pause",
                        json_pack("{s:O, s:O, s:O, s:O}", "shard", json_object_get(shard, "name"),
                                  "write_pause_ms", json_object_get(sub, "write_pause_ms"), "from",
                                  json_object_get(sub, "previous"), "to",
                                  json_object_get(sub, "target")));
    op_defer(ctx, retire_old, json_incref(shard));
    return advance(ctx, lane, "forget");
}

/* One run of the shard under way, lane being its progress (and, for the
 * limits, ctx->context); *done once its old nodes are gone. */
static enum op_result shard_step(struct op_ctx *ctx, const struct ops_topo *t, json_t *lane,
                                 json_t *shard, bool *done)
{
    const char *phase = str(lane, "phase");
    const json_t *fresh = json_object_get(shard, "new");
    enum op_result r;

    *done = false;
    if (strcmp(phase, "start") == 0) {
        r = ops_nodes_started(ctx, t, fresh, ops_context_array(ctx, "joined"));
        if (r == OP_NEXT)
            return advance(ctx, lane, "join");
        if (r == OP_WAIT)
            r = ops_wait_within(ctx, "engines_since", OPS_ENGINE_WAIT_LIMIT_S, OPS_POLL_MS,
                                PROBLEM_ENGINE_START_FAILED,
                                "shard %s: the new nodes did not start within %d s",
                                str(shard, "name"), OPS_ENGINE_WAIT_LIMIT_S);
        return r;
    }
    if (strcmp(phase, "join") == 0) {
        if (ops_nodes_join(ctx, t, fresh, ops_context_array(ctx, "joined"), node_joined))
            return advance(ctx, lane, "failover");
        return ops_wait_within(ctx, "join_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS,
                               PROBLEM_REPLICATION_FAILED,
                               "shard %s: the new nodes were not all in sync within %d s",
                               str(shard, "name"), OPS_FORM_WAIT_LIMIT_S);
    }
    if (strcmp(phase, "failover") == 0)
        return switch_shard(ctx, lane, shard);
    if (ops_nodes_forget(t, json_object_get(shard, "old"), ops_context_array(ctx, "forgotten"))) {
        *done = true;
        return OP_NEXT;
    }
    return ops_wait_within(ctx, "forget_since", OPS_FORM_WAIT_LIMIT_S, 200, PROBLEM_FORGET_BLOCKED,
                           "shard %s: the old nodes were still known to the cluster after %d s",
                           str(shard, "name"), OPS_FORM_WAIT_LIMIT_S);
}

/* Shard after shard, each through its phases; context.lane is the one
 * under way, begun afresh for each. */
static enum op_result change_shards(struct op_ctx *ctx)
{
    json_t *outer = ctx->context, *shard = current_shard(ctx);
    struct ops_topo t;
    bool done = false;

    if (shard == NULL)
        return OP_NEXT;
    json_t *lane = json_object_get(outer, "lane");
    if (lane == NULL) {
        lane = json_pack("{s:s}", "phase", "start");
        json_object_set_new(outer, "lane", lane);
    }
    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    ctx->context = lane;
    enum op_result r = shard_step(ctx, &t, lane, shard, &done);
    ctx->context = outer;
    ops_topo_free(&t);
    if (!done)
        return r;
    json_array_append(json_object_get(outer, "write_pauses"), json_object_get(lane, "write_pause"));
    json_object_set_new(outer, "next", json_integer(ops_context_int(ctx, "next") + 1));
    json_object_del(outer, "lane");
    return op_wait(ctx, 0);
}

static enum op_result measure(struct op_ctx *ctx)
{
    json_object_set_new(ctx->context, "duration_ms",
                        json_integer(time_now_ms() - ops_context_int(ctx, "started_ms")));
    return OP_NEXT;
}

static enum db_status finish(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = store_cluster_change_ended(conn, ctx->cluster_id, SPEC_KEY, true);
    if (st != DB_OK)
        return st;
    char *message = xasprintf("every node runs as %s (%lld ms)", ops_context_str(ctx, "to"),
                              ops_context_int(ctx, "duration_ms"));
    json_t *detail =
        json_pack("{s:O, s:O, s:O, s:O}", "from", json_object_get(ctx->context, "from"), "to",
                  json_object_get(ctx->context, "to"), "duration_ms",
                  json_object_get(ctx->context, "duration_ms"), "write_pauses",
                  json_object_get(ctx->context, "write_pauses"));
    st = ops_event_json(conn, ctx, "NodeTypeChanged", message, detail);
    json_decref(detail);
    free(message);
    return st;
}

/* The shard under way keeps its old nodes unless its failover was sent
 * (then both stay: which one serves is for the engines to say); its new
 * ones go. With no shard switched yet, the spec says what runs again. */
static enum db_status failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    const json_t *lane = json_object_get(ctx->context, "lane");
    const json_t *shards = json_object_get(ctx->context, "shards");
    size_t next = (size_t)ops_context_int(ctx, "next");
    bool sent = json_object_get(json_object_get(lane, "failover"), "sent") != NULL ||
                (lane != NULL && strcmp(str(lane, "phase"), "forget") == 0);
    enum db_status st = DB_OK;

    /* The shards not begun keep their old nodes too; their new ones go. */
    for (size_t i = sent ? next + 1 : next; i < json_array_size(shards) && st == DB_OK; i++)
        st = ops_retire_nodes(conn, json_object_get(json_array_get(shards, i), "new"));
    return st == DB_OK ? ops_change_failed(conn, ctx, SPEC_KEY, next == 0 && !sent) : st;
}

static const struct op_step node_type_steps[] = {
    {"start", start, announce},
    {"change_shards", change_shards},
    {"finish", measure, finish},
};

const struct op_kind op_cluster_change_node_type = {
    "change_node_type", node_type_steps, sizeof(node_type_steps) / sizeof(node_type_steps[0]),
    failed};

/* ---- the change behind PATCH node_type (changes.h) ------------------------- */

/* The new type holds the fullest shard's data with the reserve kept free. */
static enum db_status memory_check(struct db_conn *conn, struct change_request *r,
                                   struct problem *p)
{
    const char *to = str(r->next, SPEC_KEY);
    struct store_data_peak peak;
    enum db_status st = store_cluster_data_peak(conn, r->cluster_id,
                                                metric_index("BytesUsedForCache") + 1, to, &peak);
    if (st == DB_NOT_FOUND) {
        problem_field(p, SPEC_KEY, "is not in the catalog (see GET /v1/node-types)");
        return DB_REFUSED;
    }
    long long usable = (long long)((double)peak.type_bytes * (1.0 - SIZING_RESERVED_FRACTION));
    if (st != DB_OK || !peak.found || peak.used_bytes <= usable)
        return st;
    problem_set(p, PROBLEM_INSUFFICIENT_MEMORY,
                "shard %s holds %lld bytes (as its primary last reported) and %s keeps %lld of "
                "its %lld bytes for data (%.0f%% is reserved): choose a larger node type or "
                "free memory first",
                peak.shard, peak.used_bytes, to, usable, peak.type_bytes,
                SIZING_RESERVED_FRACTION * 100.0);
    return DB_REFUSED;
}

/* Place one new node for each node of the shard [first, end) of nodes. */
static enum db_status surge_shard(struct db_conn *conn, struct change_request *r,
                                  struct ops_placer *pl, const struct store_shard_nodes *nodes,
                                  size_t first, size_t end, json_t *shards, struct problem *p)
{
    const struct store_shard_node *s = &nodes->items[first];
    struct ops_placing where = {r->cluster_id, s->shard_id, NULL,
                                json_is_true(json_object_get(r->next, "multi_az")), true};
    json_t *old = json_array(), *fresh = json_array();
    char err[256];
    enum db_status st = DB_OK;

    json_array_append_new(shards, json_pack("{s:i, s:s, s:o, s:o}", "shard", s->shard, "name",
                                            s->shard_name, "old", old, "new", fresh));
    for (size_t i = first; i < end && st == DB_OK; i++) {
        struct ops_placed placed;
        json_array_append_new(old,
                              json_pack("{s:s, s:s, s:i}", "node", nodes->items[i].id, "address",
                                        nodes->items[i].address, "port", nodes->items[i].port));
        st = ops_place_replica(conn, pl, &where, &placed, err, sizeof(err));
        if (st == DB_REFUSED)
            problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                        "shard %s needs %zu new node(s) of %s beside its old ones and no host "
                        "may take node %zu: %s",
                        s->shard_name, end - first, pl->node_type, i - first + 1, err);
        if (st == DB_OK)
            json_array_append_new(fresh, json_pack("{s:s, s:s, s:s}", "node", placed.node_id,
                                                   "host_id", placed.host_id, "az", placed.az));
    }
    return st;
}

static enum db_status surge(struct db_conn *conn, struct change_request *r, json_t *shards,
                            struct problem *p)
{
    struct store_shard_nodes nodes = {0};
    struct ops_placer pl = {0};
    enum db_status st = store_shard_nodes(conn, r->cluster_id, &nodes);
    if (st == DB_OK)
        st = ops_placer_open(conn, str(r->next, "engine"), str(r->next, "engine_version"),
                             str(r->next, SPEC_KEY), &pl);
    for (size_t first = 0, end; st == DB_OK && first < nodes.n; first = end) {
        for (end = first + 1; end < nodes.n; end++)
            if (nodes.items[end].shard != nodes.items[first].shard)
                break;
        st = surge_shard(conn, r, &pl, &nodes, first, end, shards, p);
    }
    ops_placer_close(&pl);
    free(nodes.items);
    return st;
}

static enum db_status node_type_request(struct db_conn *conn, struct change_request *r,
                                        struct problem *p)
{
    json_t *from = json_object_get(r->stored, SPEC_KEY), *to = json_object_get(r->next, SPEC_KEY);
    json_t *shards = json_array();
    enum db_status st = surge(conn, r, shards, p);
    json_t *pending = json_pack("{s:O, s:O}", "from", from, "to", to);
    json_t *context =
        json_pack("{s:O, s:O, s:o, s:i}", "from", from, "to", to, "shards", shards, "next", 0);
    st = change_queue(conn, r, p, st, SPEC_KEY, pending, &op_cluster_change_node_type, context);
    json_decref(context);
    json_decref(pending);
    return st;
}

const struct change_op change_op_change_node_type = {
    .kind = &op_cluster_change_node_type,
    .what = "a change of the node type",
    .alone = true,
    .accepted = true,
    .precheck = memory_check,
    .queue = node_type_request,
};
