/* ops_replace.c -- replace_node: a node whose host stays lost (or whose
 * engine stays crashed) gets a new replica in its shard, placed by the
 * scheduler's rules; it joins and syncs, and the dead node is forgotten by
 * the cluster. Queued by the failover authority (ha.c). */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>

#include "store.h"
#include "xalloc.h"

/* Where the new node went, and what the steps need of the dead one. */
struct replacement {
    char new_id[40];
    char dead_address[256];
    int dead_port;
    int shard; /* index */
};

struct replace_call {
    const char *cluster_id, *dead_id, *op_id;
    struct replacement *out;
    char *err;
    size_t errsize;
    bool placed;
    bool no_room; /* the scheduler found no host for it */
    bool back;    /* the node serves again: nothing to replace */
};

/* The replacement's NodeReplacing event. */
static enum db_status replacing_event(struct db_conn *conn, const struct replace_call *c,
                                      const struct ops_placed *host)
{
    char *message = xasprintf("shard %04d: replacing node %s with node %s in %s", c->out->shard + 1,
                              c->dead_id, c->out->new_id, host->az);
    json_t *detail = json_pack("{s:s, s:s, s:s, s:s}", "replaced", c->dead_id, "node_id",
                               c->out->new_id, "host_id", host->host_id, "az", host->az);
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st =
        store_event_add(conn, c->cluster_id, c->op_id, "NodeReplacing", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

/* The NodeReplacementCancelled event: the node came back first. */
static enum db_status back_event(struct db_conn *conn, const struct replace_call *c)
{
    char *message = xasprintf("node %s serves again, before a replacement could be placed; "
                              "nothing was replaced",
                              c->dead_id);
    json_t *detail = json_pack("{s:s}", "node_id", c->dead_id);
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st = store_event_add(conn, c->cluster_id, c->op_id, "NodeReplacementCancelled",
                                        "info", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

static enum db_status replace_fn(struct db_conn *conn, void *arg)
{
    struct replace_call *c = arg;
    struct store_node_to_replace dead;
    struct ops_placer pl;
    struct ops_placed placed;

    c->placed = false;
    enum db_status st = store_node_to_replace(conn, c->cluster_id, c->dead_id, &dead);
    if (st == DB_NOT_FOUND)
        snprintf(c->err, c->errsize, "node %s is not a live node of cluster %s", c->dead_id,
                 c->cluster_id);
    if (st != DB_OK)
        return st;
    if (dead.serving) {
        c->back = true;
        return back_event(conn, c);
    }
    snprintf(c->out->dead_address, sizeof(c->out->dead_address), "%s", dead.address);
    c->out->dead_port = dead.port;
    c->out->shard = dead.shard;
    st = ops_placer_open(conn, dead.engine, dead.engine_version, dead.node_type, &pl);
    struct ops_placing where = {c->cluster_id, dead.shard_id, c->dead_id, dead.multi_az, false};
    if (st == DB_OK)
        st = ops_place_replica(conn, &pl, &where, &placed, c->err, c->errsize);
    c->no_room = st == DB_REFUSED;
    if (st == DB_OK) {
        snprintf(c->out->new_id, sizeof(c->out->new_id), "%s", placed.node_id);
        st = store_node_retire(conn, c->dead_id);
    }
    if (st == DB_OK)
        st = replacing_event(conn, c, &placed);
    c->placed = st == DB_OK;
    ops_placer_close(&pl);
    return st;
}

/* How long a replacement waits for a host with room (an AZ that is down
 * may come back, with the node itself) before it fails and the failover
 * authority tries again later. */
#define ROOM_WAIT_S  60
#define ROOM_POLL_MS 2000

enum placing { PLACED, NO_ROOM, BACK, NOT_PLACED };

/* Place a new replica in the dead node's shard by the scheduler's rules, on
 * a healthy host, and mark the dead node deleted (its agent removes it if
 * its host ever returns); a message in err when it was not placed. */
static enum placing place(struct app *app, const char *cluster_id, const char *op_id,
                          const char *dead_id, struct replacement *out, char *err, size_t errsize)
{
    struct replace_call c = {.cluster_id = cluster_id,
                             .dead_id = dead_id,
                             .op_id = op_id,
                             .out = out,
                             .err = err,
                             .errsize = errsize};
    err[0] = '\0';
    enum db_status st = db_tx(app->db, DB_READ_COMMITTED, replace_fn, &c);
    if (st == DB_OK && c.back)
        return BACK;
    if (st == DB_OK && c.placed)
        return PLACED;
    if (err[0] == '\0')
        snprintf(err, errsize, "could not store the replacement");
    return c.no_room ? NO_ROOM : NOT_PLACED;
}

/* Place the new node once (a resumed runner finds it in the context). With
 * no room, wait for some -- or for the node itself to come back, which makes
 * the replacement needless: it ends cancelled, with a
 * NodeReplacementCancelled event. */
static enum op_result place_replacement(struct op_ctx *ctx)
{
    struct replacement r = {0};
    const char *dead = ops_context_str(ctx, "node");

    if (ops_context_str(ctx, "new") != NULL)
        return OP_NEXT;
    switch (
        place(ctx->app, ctx->cluster_id, ctx->op_id, dead, &r, ctx->error, sizeof(ctx->error))) {
    case PLACED:
        break;
    case BACK:
        snprintf(ctx->error, sizeof(ctx->error), "node %s serves again; it needs no replacement",
                 dead);
        return OP_CANCELLED;
    case NO_ROOM:
        return ops_wait_within(ctx, "room_since", ROOM_WAIT_S, ROOM_POLL_MS,
                               PROBLEM_INSUFFICIENT_CAPACITY, "%s (waited %d s for room)",
                               ctx->error, ROOM_WAIT_S);
    case NOT_PLACED:
        return op_fail(ctx, PROBLEM_INSUFFICIENT_CAPACITY, "%s", ctx->error);
    }
    json_object_set_new(ctx->context, "new", json_string(r.new_id));
    json_object_set_new(ctx->context, "dead_address", json_string(r.dead_address));
    json_object_set_new(ctx->context, "dead_port", json_integer(r.dead_port));
    json_object_set_new(ctx->context, "shard", json_integer(r.shard));
    return OP_NEXT;
}

/* The new engine runs and answers. Its host's loss fails the replacement
 * only once this cairnd trusts it, as in wait_engines(). */
static enum op_result wait_new_engine(struct op_ctx *ctx)
{
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    enum op_result res = ops_node_started(ctx, &t, ops_context_str(ctx, "new"));
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(ctx, "engine_since", OPS_ENGINE_WAIT_LIMIT_S, OPS_POLL_MS,
                           PROBLEM_ENGINE_START_FAILED, "the replacement did not start within %d s",
                           OPS_ENGINE_WAIT_LIMIT_S);
}

/* The new node follows the shard's primary (its config names the primary
 * already; this covers a primary that changed since). Done when it is in
 * sync. */
static enum op_result join_replacement(struct op_ctx *ctx)
{
    struct ops_topo t;
    bool in_sync = false;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    const struct cluster_node *n = cluster_nodes_find(&t.nodes, ops_context_str(ctx, "new"));
    if (n != NULL)
        in_sync = ops_node_join(&t, n);
    ops_topo_free(&t);
    if (in_sync)
        return OP_NEXT;
    return ops_wait_within(
        ctx, "join_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS, PROBLEM_REPLICATION_FAILED,
        "the replacement was not in sync with its primary within %d s", OPS_FORM_WAIT_LIMIT_S);
}

/* Cluster mode: every live node forgets the dead one, once none replicates
 * from it (ops_node_forget()). Until then it stays, and the step waits. */
static enum op_result forget_dead(struct op_ctx *ctx)
{
    const char *address = ops_context_str(ctx, "dead_address");
    int port = (int)ops_context_int(ctx, "dead_port");
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    enum ops_forget f = ops_node_forget(&t, address, port);
    ops_topo_free(&t);
    if (f == OPS_FORGOTTEN)
        return OP_NEXT;
    return ops_wait_within(
        ctx, "forget_since", OPS_FORM_WAIT_LIMIT_S, 200, PROBLEM_FORGET_BLOCKED,
        "the dead node %s:%d was still %s after %d s; it stays in the cluster", address, port,
        f == OPS_FORGET_BLOCKED ? "followed by a replica or owning slots" : "known",
        OPS_FORM_WAIT_LIMIT_S);
}

/* The new node is in sync: its role and a NodeReplaced event. */
static enum db_status finish_replacement(struct db_conn *conn, const struct op_ctx *ctx)
{
    const char *dead_id = ops_context_str(ctx, "node"), *new_id = ops_context_str(ctx, "new");
    enum db_status st = store_node_joined(conn, new_id);
    if (st != DB_OK)
        return st;
    char *message =
        xasprintf("node %s replaced node %s and is in sync with its primary", new_id, dead_id);
    json_t *detail = json_pack("{s:s, s:s}", "replaced", dead_id, "node_id", new_id);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = ops_event(conn, ctx, "NodeReplaced", "info", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

/* The cluster serves on with one node fewer; the monitor tries again. */
static enum db_status replacement_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return ops_failed_event(conn, ctx, NULL);
}

static const struct op_step replace_steps[] = {
    {"place", place_replacement}, {"wait_engine", wait_new_engine},     {"join", join_replacement},
    {"forget_dead", forget_dead}, {"finish", NULL, finish_replacement},
};

const struct op_kind op_cluster_replace_node = {"replace_node", replace_steps,
                                                sizeof(replace_steps) / sizeof(replace_steps[0]),
                                                replacement_failed};
