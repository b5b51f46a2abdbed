/* ops_create.c -- the create operation, as idempotent steps.
 *
 * Cluster mode enabled: cairnd itself forms the cluster, never a CLI: each
 * shard's placed primary takes its slot range, every node meets the first
 * one, every replica replicates its shard's primary, and the cluster is
 * available once every node says cluster_state:ok and every replica's link
 * is up. Disabled mode: the replicas REPLICAOF the primary. Every step
 * checks the engines before acting, so a runner that resumes it after a
 * crash does no harm. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "info.h"
#include "log.h"
#include "monitor.h"
#include "nodeio.h"
#include "resp.h"
#include "store.h"
#include "timeutil.h"
#include "topology.h"
#include "xalloc.h"

/* Every engine reported running by its agent and answering PING here. A
 * node on a lost host fails the create, once this cairnd trusts the loss
 * (monitor.h); until then the host may still report, and is waited for. */
enum op_result ops_wait_engines(struct op_ctx *ctx)
{
    struct ops_topo t;
    enum op_result res = OP_NEXT;
    bool trust_losses = monitor_trusts_losses(ctx->app->monitor);

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    for (size_t i = 0; i < t.nodes.count && res == OP_NEXT; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        if (n->host_lost && trust_losses) {
            res = op_fail(ctx, PROBLEM_HOST_LOST,
                          "the host of node %s was lost before the node started", n->id);
        } else if (n->host_lost || n->port <= 0 || strcmp(n->process_state, "running") != 0) {
            res = OP_WAIT;
        } else if (!nodeio_ping(n, t.password, NODEIO_PATIENT)) {
            res = OP_WAIT;
        }
    }
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(
        ctx, "engines_since", OPS_ENGINE_WAIT_LIMIT_S, OPS_POLL_MS, PROBLEM_ENGINE_START_FAILED,
        "engines did not start within %d s; see the hosts' agent logs", OPS_ENGINE_WAIT_LIMIT_S);
}

/* Cluster mode: every node meets the first; done when each knows them all. */
enum op_result ops_meet(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    enum op_result res = OP_NEXT;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    if (!t.cluster_mode || t.nodes.count < 2) {
        ops_topo_free(&t);
        return OP_NEXT;
    }
    const struct cluster_node *first = &t.nodes.items[0];
    for (size_t i = 0; i < t.nodes.count; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (!nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err))) {
            res = OP_WAIT;
            continue;
        }
        bool knows_all = view.count == t.nodes.count;
        for (size_t k = 0; k < view.count && knows_all; k++)
            knows_all = !(view.nodes[k].flags & (ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR));
        engine_cluster_nodes_free(&view);
        if (knows_all)
            continue;
        res = OP_WAIT;
        if (i > 0 && !nodeio_cluster_meet(n, t.password, NODEIO_PATIENT, first, err, sizeof(err)))
            log_warn("CLUSTER MEET failed", "node=%s error=\"%s\"", n->id, err);
    }
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(ctx, "meet_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS,
                           PROBLEM_CLUSTER_FORMATION_FAILED,
                           "the nodes did not all meet within %d s", OPS_FORM_WAIT_LIMIT_S);
}

/* Cluster mode: each shard's placed primary serves its slot range. */
static enum op_result assign_slots(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    for (size_t i = 0; i < t.nodes.count && t.cluster_mode; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->ordinal != 0 || n->slot_first < 0)
            continue;
        if (!nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err))) {
            ops_topo_free(&t);
            return op_wait(ctx, OPS_POLL_MS);
        }
        const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
        bool has = me != NULL && engine_cluster_node_slot_count(me) > 0;
        engine_cluster_nodes_free(&view);
        if (has)
            continue;
        struct resp_conn *c = nodeio_connect(n, t.password, NODEIO_PATIENT, err, sizeof(err));
        bool added = c != NULL &&
                     engine_cluster_addslotsrange(c, n->slot_first, n->slot_last, err, sizeof(err));
        resp_close(c);
        if (!added) {
            enum op_result res =
                op_fail(ctx, PROBLEM_CLUSTER_FORMATION_FAILED, "ADDSLOTSRANGE %d %d on node %s: %s",
                        n->slot_first, n->slot_last, n->id, err);
            ops_topo_free(&t);
            return res;
        }
    }
    ops_topo_free(&t);
    return OP_NEXT;
}

/* The engine node id of shard s's placed primary, from its own view. */
static bool primary_engine_id(const struct ops_topo *t, int shard, char *id, char *err,
                              size_t errsize)
{
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->shard == shard && n->ordinal == 0)
            return nodeio_cluster_myid(n, t->password, NODEIO_PATIENT, id, err, errsize);
    }
    snprintf(err, errsize, "shard %d has no primary", shard);
    return false;
}

static const struct cluster_node *placed_primary(const struct ops_topo *t, int shard)
{
    for (size_t i = 0; i < t->nodes.count; i++) {
        if (t->nodes.items[i].shard == shard && t->nodes.items[i].ordinal == 0)
            return &t->nodes.items[i];
    }
    return NULL;
}

/* Every replica follows its shard's primary (CLUSTER REPLICATE in cluster
 * mode, REPLICAOF otherwise), unless it already does. */
enum op_result ops_replicate(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    enum op_result res = OP_NEXT;
    int first = (int)ops_context_int(ctx, "first_new_shard");

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    for (size_t i = 0; i < t.nodes.count && res == OP_NEXT; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        const struct cluster_node *p = placed_primary(&t, n->shard);
        if (n->ordinal == 0 || p == NULL || n->shard < first)
            continue;
        if (t.cluster_mode) {
            char pid[ENGINE_CLUSTER_ID_LEN + 1];
            struct engine_cluster_nodes view = {0};
            if (!primary_engine_id(&t, n->shard, pid, err, sizeof(err)) ||
                !nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err))) {
                res = OP_WAIT;
                break;
            }
            const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
            bool done = me != NULL && strcmp(me->primary_id, pid) == 0;
            engine_cluster_nodes_free(&view);
            if (!done &&
                !nodeio_cluster_replicate(n, t.password, NODEIO_PATIENT, pid, err, sizeof(err)))
                res = op_fail(ctx, PROBLEM_CLUSTER_FORMATION_FAILED,
                              "CLUSTER REPLICATE on node %s: %s", n->id, err);
        } else if (!nodeio_follow(n, t.password, NODEIO_PATIENT, p, err, sizeof(err))) {
            /* REPLICAOF to the current primary is a no-op on the engine. */
            res = op_fail(ctx, PROBLEM_REPLICATION_FAILED, "REPLICAOF on node %s: %s", n->id, err);
        }
    }
    ops_topo_free(&t);
    return res == OP_WAIT ? op_wait(ctx, OPS_POLL_MS) : res;
}

/* Record what cairnd itself read from the engines when it found them
 * ready: each node's role as placed (primary or replica, the engines having
 * confirmed it), replicas linked, nothing loading or syncing. */
struct roles_call {
    const struct cluster_nodes *nodes;
    int first; /* the first shard formed */
};

static enum db_status roles_observed(struct db_conn *conn, void *arg)
{
    const struct roles_call *c = arg;
    json_t *roles = json_array();
    for (size_t i = 0; i < c->nodes->count; i++) {
        const struct cluster_node *n = &c->nodes->items[i];
        if (n->shard >= c->first)
            json_array_append_new(roles, json_pack("{s:s, s:s}", "id", n->id, "role",
                                                   n->ordinal == 0 ? "primary" : "replica"));
    }
    char *text = json_dumps(roles, JSON_COMPACT);
    json_decref(roles);
    enum db_status st = store_nodes_set_roles(conn, text);
    free(text);
    return st;
}

/* Ready: cluster_state:ok everywhere (cluster mode) and every replica's link
 * up with its initial sync done. */
enum op_result ops_wait_ready(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    bool ready = true;
    struct roles_call roles = {&t.nodes, (int)ops_context_int(ctx, "first_new_shard")};

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    for (size_t i = 0; i < t.nodes.count && ready; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct nodeio_repl repl;
        if (n->shard < roles.first)
            continue; /* serving already, in whatever roles failovers left it */
        ready = nodeio_replication(n, t.password, NODEIO_PATIENT, &repl, err, sizeof(err)) &&
                (n->ordinal == 0 ? repl.primary : repl.in_sync) &&
                (!t.cluster_mode || nodeio_cluster_state_ok(n, t.password, NODEIO_PATIENT));
    }
    /* What cairnd just read from the engines is observed state too: record
     * it, so "available" comes with its readers listed at once rather than
     * at the agents' next report. */
    if (ready && db_tx(ctx->app->db, DB_READ_COMMITTED, roles_observed, &roles) != DB_OK)
        ready = false;
    ops_topo_free(&t);
    if (ready)
        return OP_NEXT;
    return ops_wait_within(ctx, "ready_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS,
                           PROBLEM_CLUSTER_FORMATION_FAILED,
                           "the cluster was not ready within %d s", OPS_FORM_WAIT_LIMIT_S);
}

/* Available, at the version its nodes run. */
static enum db_status mark_available(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = store_cluster_set_available(conn, ctx->cluster_id);
    if (st != DB_OK)
        return st;
    return ops_event(conn, ctx, "ClusterAvailable", "info", "the cluster is available", NULL);
}

static enum db_status create_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return ops_failed_event(conn, ctx, "create-failed");
}

/* Slots before the meeting, as valkey-cli does it: a primary that already
 * serves its slots counts as a majority while it is alone, so the engines
 * never start the rejoin delay (up to the node timeout) that a primary waits
 * out after it has been in a minority. */
static const struct op_step create_steps[] = {
    {"wait_engines", ops_wait_engines},
    {"assign_slots", assign_slots},
    {"meet", ops_meet},
    {"replicate", ops_replicate},
    {"wait_ready", ops_wait_ready},
    {"restore", ops_restore},
    {"mark_available", NULL, mark_available},
};

const struct op_kind op_cluster_create = {
    "create", create_steps, sizeof(create_steps) / sizeof(create_steps[0]), create_failed};
