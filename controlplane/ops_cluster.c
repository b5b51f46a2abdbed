/* ops_cluster.c -- create and delete, as idempotent steps.
 *
 * Create, cluster mode enabled: cairnd itself forms the cluster, never a
 * CLI: each shard's placed primary takes its slot range, every node meets
 * the first one, every replica replicates its shard's primary, and the cluster
 * is available once every node says cluster_state:ok and every replica's link
 * is up. Disabled mode: the replicas REPLICAOF the primary. Every step checks
 * the engines before acting, so a runner that resumes it after a crash does
 * no harm. */
#include "ops_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusters.h"
#include "cluster.h"
#include "info.h"
#include "log.h"
#include "monitor.h"
#include "nodeio.h"
#include "resp.h"
#include "store.h"
#include "topology.h"
#include "xalloc.h"

#define ENGINE_WAIT_LIMIT_S 90 /* engines not up by then: the create fails */
#define FORM_WAIT_LIMIT_S   60 /* topology not settled by then: the create fails */
#define POLL_MS             100

/* ---- what the steps work on -------------------------------------------- */

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

static struct resp_conn *connect_node(const struct ops_topo *t, const struct cluster_node *n,
                                      char *err, size_t errsize)
{
    return nodeio_connect(n, t->password, NODEIO_PATIENT, err, errsize);
}

static bool answers_ping(const struct ops_topo *t, const struct cluster_node *n)
{
    char err[256];
    struct resp_conn *c = connect_node(t, n, err, sizeof(err));
    bool ok = c != NULL && resp_ping(c, err, sizeof(err));
    resp_close(c);
    return ok;
}

/* Node n meets node to (CLUSTER MEET to's address and port). */
static bool meet_node(const struct ops_topo *t, const struct cluster_node *n,
                      const struct cluster_node *to, char *err, size_t errsize)
{
    struct resp_conn *c = connect_node(t, n, err, errsize);
    bool ok = c != NULL && engine_cluster_meet(c, to->address, to->port, err, errsize);
    resp_close(c);
    return ok;
}

/* Node n replicates the primary whose engine node id is primary_id. */
static bool replicate_node(const struct ops_topo *t, const struct cluster_node *n,
                           const char *primary_id, char *err, size_t errsize)
{
    struct resp_conn *c = connect_node(t, n, err, errsize);
    bool ok = c != NULL && engine_cluster_replicate(c, primary_id, err, errsize);
    resp_close(c);
    return ok;
}

/* Node n follows primary (cluster mode disabled). */
static bool follow(const struct ops_topo *t, const struct cluster_node *n,
                   const struct cluster_node *primary, char *err, size_t errsize)
{
    return nodeio_follow(n, t->password, NODEIO_PATIENT, primary, err, errsize);
}

/* A node's own view of the cluster, parsed; false with err when not had. */
static bool node_view(const struct ops_topo *t, const struct cluster_node *n,
                      struct engine_cluster_nodes *view, char *err, size_t errsize)
{
    struct resp_conn *c = connect_node(t, n, err, errsize);
    bool ok = c != NULL && engine_cluster_nodes(c, view, err, errsize);
    resp_close(c);
    return ok;
}

/* Whether the node says cluster_state:ok. */
static bool node_cluster_ok(const struct ops_topo *t, const struct cluster_node *n)
{
    char err[256];
    bool ok = false;
    struct resp_conn *c = connect_node(t, n, err, sizeof(err));
    bool asked = c != NULL && engine_cluster_info_state(c, &ok, err, sizeof(err));
    resp_close(c);
    return asked && ok;
}

static long long elapsed_s(struct op_ctx *ctx, const char *key)
{
    json_t *since = json_object_get(ctx->context, key);
    long long now = cluster_now_s();
    if (!json_is_integer(since)) {
        json_object_set_new(ctx->context, key, json_integer(now));
        return 0;
    }
    return now - json_integer_value(since);
}

/* ---- create -------------------------------------------------------------- */

/* Every engine reported running by its agent and answering PING here. A
 * node on a lost host fails the create, once this cairnd trusts the loss
 * (monitor.h); until then the host may still report, and is waited for. */
static enum op_result wait_engines(struct op_ctx *ctx)
{
    struct ops_topo t;
    enum op_result res = OP_NEXT;
    bool trust_losses = monitor_trusts_losses(ctx->app->monitor);

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    for (size_t i = 0; i < t.nodes.count && res == OP_NEXT; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        if (n->host_lost && trust_losses) {
            res = op_fail(ctx, "HOST_LOST", "host %s of node %s was lost before the node started",
                          n->host_id, n->id);
        } else if (n->host_lost || n->port <= 0 || strcmp(n->process_state, "running") != 0) {
            res = OP_WAIT;
        } else if (!answers_ping(&t, n)) {
            res = OP_WAIT;
        }
    }
    ops_topo_free(&t);
    if (res == OP_WAIT && elapsed_s(ctx, "engines_since") > ENGINE_WAIT_LIMIT_S)
        return op_fail(ctx, "ENGINE_START_FAILED",
                       "engines did not start within %d s; see the hosts' agent logs",
                       ENGINE_WAIT_LIMIT_S);
    return res == OP_WAIT ? op_wait(ctx, POLL_MS) : res;
}

/* Cluster mode: every node meets the first; done when each knows them all. */
static enum op_result meet(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    enum op_result res = OP_NEXT;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    if (!t.cluster_mode || t.nodes.count < 2) {
        ops_topo_free(&t);
        return OP_NEXT;
    }
    const struct cluster_node *first = &t.nodes.items[0];
    for (size_t i = 0; i < t.nodes.count; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (!node_view(&t, n, &view, err, sizeof(err))) {
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
        if (i > 0 && !meet_node(&t, n, first, err, sizeof(err)))
            log_warn("CLUSTER MEET failed", "node=%s error=\"%s\"", n->id, err);
    }
    ops_topo_free(&t);
    if (res == OP_WAIT && elapsed_s(ctx, "meet_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "CLUSTER_FORMATION_FAILED", "the nodes did not all meet within %d s",
                       FORM_WAIT_LIMIT_S);
    return res == OP_WAIT ? op_wait(ctx, POLL_MS) : res;
}

/* Cluster mode: each shard's placed primary serves its slot range. */
static enum op_result assign_slots(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    for (size_t i = 0; i < t.nodes.count && t.cluster_mode; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->ordinal != 0 || n->slot_first < 0)
            continue;
        if (!node_view(&t, n, &view, err, sizeof(err))) {
            ops_topo_free(&t);
            return op_wait(ctx, POLL_MS);
        }
        const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
        bool has = me != NULL && engine_cluster_node_slot_count(me) > 0;
        engine_cluster_nodes_free(&view);
        if (has)
            continue;
        struct resp_conn *c = connect_node(&t, n, err, sizeof(err));
        bool added = c != NULL &&
                     engine_cluster_addslotsrange(c, n->slot_first, n->slot_last, err, sizeof(err));
        resp_close(c);
        if (!added) {
            enum op_result res =
                op_fail(ctx, "CLUSTER_FORMATION_FAILED", "ADDSLOTSRANGE %d %d on node %s: %s",
                        n->slot_first, n->slot_last, n->id, err);
            ops_topo_free(&t);
            return res;
        }
    }
    ops_topo_free(&t);
    return OP_NEXT;
}

/* The engine node id of node n, from its own view. */
static bool engine_id_of(const struct ops_topo *t, const struct cluster_node *n, char *id,
                         char *err, size_t errsize)
{
    struct engine_cluster_nodes view = {0};
    if (!node_view(t, n, &view, err, errsize))
        return false;
    const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
    bool ok = me != NULL;
    if (ok)
        snprintf(id, ENGINE_CLUSTER_ID_LEN + 1, "%s", me->id);
    engine_cluster_nodes_free(&view);
    return ok;
}

/* The engine node id of shard s's placed primary, from its own view. */
static bool primary_engine_id(const struct ops_topo *t, int shard, char *id, char *err,
                              size_t errsize)
{
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->shard == shard && n->ordinal == 0)
            return engine_id_of(t, n, id, err, errsize);
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
static enum op_result replicate(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    enum op_result res = OP_NEXT;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    for (size_t i = 0; i < t.nodes.count && res == OP_NEXT; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        const struct cluster_node *p = placed_primary(&t, n->shard);
        if (n->ordinal == 0 || p == NULL)
            continue;
        if (t.cluster_mode) {
            char pid[ENGINE_CLUSTER_ID_LEN + 1];
            struct engine_cluster_nodes view = {0};
            if (!primary_engine_id(&t, n->shard, pid, err, sizeof(err)) ||
                !node_view(&t, n, &view, err, sizeof(err))) {
                res = OP_WAIT;
                break;
            }
            const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
            bool done = me != NULL && strcmp(me->primary_id, pid) == 0;
            engine_cluster_nodes_free(&view);
            if (!done && !replicate_node(&t, n, pid, err, sizeof(err)))
                res = op_fail(ctx, "CLUSTER_FORMATION_FAILED", "CLUSTER REPLICATE on node %s: %s",
                              n->id, err);
        } else if (!follow(&t, n, p, err, sizeof(err))) {
            /* REPLICAOF to the current primary is a no-op on the engine. */
            res = op_fail(ctx, "REPLICATION_FAILED", "REPLICAOF on node %s: %s", n->id, err);
        }
    }
    ops_topo_free(&t);
    return res == OP_WAIT ? op_wait(ctx, POLL_MS) : res;
}

/* Ready: cluster_state:ok everywhere (cluster mode) and every replica's link
 * up with its initial sync done. */
static enum op_result wait_ready(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256];
    bool ready = true;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    for (size_t i = 0; i < t.nodes.count && ready; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct nodeio_repl repl;
        ready = nodeio_replication(n, t.password, NODEIO_PATIENT, &repl, err, sizeof(err)) &&
                (n->ordinal == 0 ? repl.primary : repl.in_sync) &&
                (!t.cluster_mode || node_cluster_ok(&t, n));
    }
    /* What cairnd just read from the engines is observed state too: record
     * it, so "available" comes with its readers listed at once rather than
     * at the agents' next report. */
    if (ready && !cluster_roles_observed(ctx->app, &t.nodes))
        ready = false;
    ops_topo_free(&t);
    if (ready)
        return OP_NEXT;
    if (elapsed_s(ctx, "ready_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "CLUSTER_FORMATION_FAILED", "the cluster was not ready within %d s",
                       FORM_WAIT_LIMIT_S);
    return op_wait(ctx, POLL_MS);
}

static enum db_status mark_available(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_mark_available(conn, ctx->cluster_id, ctx->op_id);
}

static enum db_status create_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_mark_failed(conn, ctx->cluster_id, ctx->op_id, ctx->code, ctx->error,
                               "create-failed");
}

/* A delete that cannot finish leaves the cluster deleting; a new DELETE
 * tries again. */
static enum db_status delete_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_mark_failed(conn, ctx->cluster_id, ctx->op_id, ctx->code, ctx->error, NULL);
}

/* Slots before the meeting, as valkey-cli does it: a primary that already
 * serves its slots counts as a majority while it is alone, so the engines
 * never start the rejoin delay (up to the node timeout) that a primary waits
 * out after it has been in a minority. */
static const struct op_step create_steps[] = {
    {"wait_engines", wait_engines},
    {"assign_slots", assign_slots},
    {"meet", meet},
    {"replicate", replicate},
    {"wait_ready", wait_ready},
    {"mark_available", NULL, mark_available},
};

const struct op_kind op_cluster_create = {
    "create", create_steps, sizeof(create_steps) / sizeof(create_steps[0]), create_failed};

/* ---- delete -------------------------------------------------------------- */

static enum db_status stop_nodes(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_nodes_mark_deleted(conn, ctx->cluster_id);
}

/* The agents stop the engines and remove their data; cairnd drops a node's
 * row when its agent no longer reports it. Nodes on lost hosts cannot wait
 * for that: their rows go at once (the agent removes the data when it
 * returns and finds the node unknown... kept, as it keeps unknown data). */
static enum op_result wait_removed(struct op_ctx *ctx)
{
    int left = cluster_nodes_remaining(ctx->app, ctx->cluster_id);
    if (left == 0)
        return OP_NEXT;
    if (left < 0 || elapsed_s(ctx, "removal_since") <= FORM_WAIT_LIMIT_S)
        return op_wait(ctx, POLL_MS);
    return op_fail(ctx, "DELETE_STUCK", "%d node(s) were not removed within %d s", left,
                   FORM_WAIT_LIMIT_S);
}

static enum db_status drop_cluster(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_drop(conn, ctx->cluster_id, ctx->op_id);
}

static const struct op_step delete_steps[] = {
    {"stop_nodes", NULL, stop_nodes},
    {"wait_removed", wait_removed},
    {"drop_cluster", NULL, drop_cluster},
};

const struct op_kind op_cluster_delete = {
    "delete", delete_steps, sizeof(delete_steps) / sizeof(delete_steps[0]), delete_failed};

/* ---- apply_parameters -------------------------------------------------------- */

/* Settings Cairn manages itself (they shape maxmemory, persistence, the
 * cluster bus): they reach the engines through their config at restart. */
static bool applied_at_restart(const char *name)
{
    static const char *const names[] = {"reserved-memory-percent", "appendonly",
                                        "cluster-node-timeout", NULL};
    for (const char *const *n = names; *n != NULL; n++) {
        if (strcmp(*n, name) == 0)
            return true;
    }
    return false;
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
        return op_wait(ctx, POLL_MS);
    }
    json_t *gone = json_object_get(ctx->context, "removed");
    json_array_foreach (gone, i, removed) {
        note_restart(later, json_string_value(removed));
    }
    for (size_t k = 0; k < t.nodes.count; k++) {
        struct resp_conn *c = connect_node(&t, &t.nodes.items[k], err, sizeof(err));
        if (c == NULL) {
            char node[sizeof(t.nodes.items[k].id)];
            snprintf(node, sizeof(node), "%s", t.nodes.items[k].id);
            ops_topo_free(&t);
            json_decref(later);
            if (elapsed_s(ctx, "config_since") > FORM_WAIT_LIMIT_S)
                return op_fail(ctx, "NODE_UNREACHABLE", "node %s: %s", node, err);
            return op_wait(ctx, POLL_MS);
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

static enum db_status finish_parameters(struct db_conn *conn, const struct op_ctx *ctx)
{
    json_t *later = json_object_get(ctx->context, "restart_needed");
    json_t *none = json_array();
    enum db_status st =
        cluster_parameters_applied(conn, ctx->cluster_id, ctx->op_id, later != NULL ? later : none);
    json_decref(none);
    return st;
}

/* The cluster serves on as before; its status goes back to available. */
static enum db_status back_to_available(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_mark_failed(conn, ctx->cluster_id, ctx->op_id, ctx->code, ctx->error,
                               "available");
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
    enum db_status st = store_cluster_mark_modifying(conn, r->cluster_id, "parameters", pending);
    if (st == DB_OK)
        st = store_operation_queue(conn, r->cluster_id, op_cluster_apply_parameters.name, context,
                                   r->op_id);
    if (st == DB_CONFLICT)
        st = problem_busy(p, r->cluster_id);
    json_decref(context);
    json_decref(pending);
    r->poke = true;
    return st;
}

const struct change_op change_op_apply_parameters = {
    .kind = &op_cluster_apply_parameters,
    .what = "a change of parameters",
    .queue = parameters_request,
};

const struct op_kind op_cluster_apply_parameters = {
    "apply_parameters", parameter_steps, sizeof(parameter_steps) / sizeof(parameter_steps[0]),
    back_to_available};

/* ---- planned failover ---------------------------------------------------------- */

/* What one node of the shard says about itself right now. A shard has at
 * most 6 nodes (1 + 5 replicas), and one more while one is replaced. */
#define OBSERVE_MAX 8
struct observed {
    const struct cluster_node *node;
    struct nodeio_repl repl;
};

/* Ask each node of shard what it is; false when one cannot be asked. */
static bool observe_shard(const struct ops_topo *t, int shard, struct observed *out, size_t *n,
                          char *err, size_t errsize)
{
    *n = 0;
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *node = &t->nodes.items[i];
        if (node->shard != shard || *n == OBSERVE_MAX)
            continue;
        struct observed *o = &out[*n];
        o->node = node;
        if (!nodeio_replication(node, t->password, NODEIO_PATIENT, &o->repl, err, errsize))
            return false;
        (*n)++;
    }
    return true;
}

static const char *context_str(const struct op_ctx *ctx, const char *key)
{
    return json_string_value(json_object_get(ctx->context, key));
}

static int context_shard(struct op_ctx *ctx)
{
    return (int)json_integer_value(json_object_get(ctx->context, "shard"));
}

/* FAILOVER pauses writes and waits until the target has acknowledged the
 * primary's whole replication stream; replicas acknowledge once a second,
 * so left alone the pause lasts up to a second. Asking the target for its
 * acknowledgement right away (again until the primary stops waiting, since
 * the last writes may still be on their way) makes it a few milliseconds. */
static void hurry_failover(const struct ops_topo *t, const struct cluster_node *primary,
                           const struct cluster_node *target)
{
    char err[256];

    for (int i = 0; i < 20; i++) {
        if (!nodeio_request_ack(target, t->password, err, sizeof(err)))
            log_warn("could not ask for a replication ack", "node=%s error=\"%s\"", target->id,
                     err);
        struct resp_conn *c = nodeio_connect(primary, t->password, NODEIO_QUICK, err, sizeof(err));
        struct engine_info *info = c != NULL ? resp_info(c, "replication", err, sizeof(err)) : NULL;
        const char *state =
            info != NULL ? engine_info_get(info, "replication", "master_failover_state") : NULL;
        bool waiting = state != NULL && strcmp(state, "waiting-for-sync") == 0;
        engine_info_free(info);
        resp_close(c);
        if (!waiting)
            return;
        struct timespec pause = {0, 5 * 1000000L};
        nanosleep(&pause, NULL);
    }
}

/* Start the failover once: CLUSTER FAILOVER (default, lossless mode) on the
 * chosen replica in cluster mode; FAILOVER TO it on the primary otherwise.
 * Both pause writes on the primary until the replica has caught up. */
static enum op_result start_failover(struct op_ctx *ctx)
{
    struct observed seen[OBSERVE_MAX];
    size_t n = 0;
    struct ops_topo t;
    char err[256];

    if (json_object_get(ctx->context, "target") != NULL)
        return OP_NEXT; /* already sent: a resumed runner must not send it twice */
    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    if (!observe_shard(&t, context_shard(ctx), seen, &n, err, sizeof(err))) {
        ops_topo_free(&t);
        return op_fail(ctx, "NODE_UNREACHABLE", "%s", err);
    }
    /* A rebalance names the AZ the primary should move to: its replicas
     * there come first. */
    const char *target_az = context_str(ctx, "target_az");
    const char *engine = context_str(ctx, "engine"), *version = context_str(ctx, "engine_version");
    const struct observed *primary = NULL, *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!seen[i].repl.primary && engine != NULL && version != NULL &&
            (strcmp(seen[i].node->engine, engine) != 0 ||
             strcmp(seen[i].node->engine_version, version) != 0))
            continue; /* an upgrade fails over only to a replica on the new version */
        bool there = target_az == NULL || strcmp(seen[i].node->az, target_az) == 0;
        bool best_there =
            best != NULL && (target_az == NULL || strcmp(best->node->az, target_az) == 0);
        if (seen[i].repl.primary)
            primary = &seen[i];
        else if (seen[i].repl.in_sync &&
                 (best == NULL || (there && !best_there) ||
                  (there == best_there && seen[i].repl.offset > best->repl.offset)))
            best = &seen[i];
    }
    if (primary == NULL || best == NULL) {
        ops_topo_free(&t);
        return op_fail(ctx, "NO_IN_SYNC_REPLICA",
                       "shard %04d has %s; a planned failover needs a primary and an in-sync "
                       "replica",
                       context_shard(ctx) + 1,
                       primary == NULL ? "no primary" : "no in-sync replica");
    }
    long long started = cluster_now_ms();
    bool ok;
    if (t.cluster_mode) {
        ok = nodeio_cluster_failover(best->node, t.password, NODEIO_PATIENT,
                                     ENGINE_FAILOVER_DEFAULT, err, sizeof(err));
    } else {
        struct resp_conn *c = connect_node(&t, primary->node, err, sizeof(err));
        ok = c != NULL &&
             engine_failover_to(c, best->node->address, best->node->port, 5000, err, sizeof(err));
        resp_close(c);
    }
    if (!ok) {
        ops_topo_free(&t);
        return op_fail(ctx, "FAILOVER_REFUSED", "the engine refused the failover: %s", err);
    }
    if (!t.cluster_mode)
        hurry_failover(&t, primary->node, best->node);
    json_object_set_new(ctx->context, "target", json_string(best->node->id));
    json_object_set_new(ctx->context, "previous", json_string(primary->node->id));
    json_object_set_new(ctx->context, "started_ms", json_integer(started));
    ops_topo_free(&t);
    return OP_NEXT;
}

/* Done when the target says it is the primary and every other node of the
 * shard follows it. */
static enum op_result wait_switch(struct op_ctx *ctx)
{
    const char *target = json_string_value(json_object_get(ctx->context, "target"));
    struct observed seen[OBSERVE_MAX];
    size_t n = 0;
    struct ops_topo t;
    char err[256];
    bool switched = false;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, 20);
    const struct cluster_node *to = cluster_nodes_find(&t.nodes, target);
    if (to != NULL && observe_shard(&t, context_shard(ctx), seen, &n, err, sizeof(err))) {
        /* Switched: the target is the only primary. The write pause ends
         * there; in cluster mode it ends once every node agrees the
         * cluster is ok again. */
        switched = true;
        for (size_t i = 0; i < n && switched; i++) {
            bool is_target = seen[i].node == to;
            switched = is_target ? seen[i].repl.primary : !seen[i].repl.primary;
            if (switched && t.cluster_mode)
                switched = node_cluster_ok(&t, seen[i].node);
        }
    }
    ops_topo_free(&t);
    if (switched) {
        if (json_object_get(ctx->context, "switched_ms") == NULL)
            json_object_set_new(ctx->context, "switched_ms", json_integer(cluster_now_ms()));
        return OP_NEXT;
    }
    if (elapsed_s(ctx, "switch_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "FAILOVER_TIMEOUT", "the roles did not switch within %d s",
                       FORM_WAIT_LIMIT_S);
    return op_wait(ctx, 20);
}

/* Cluster mode disabled: FAILOVER TO moves only the old primary under the
 * target; the other replicas would stay chained behind the old primary.
 * Done when every replica follows the target (cluster mode: at once). */
static enum op_result repoint_replicas(struct op_ctx *ctx)
{
    const char *target = json_string_value(json_object_get(ctx->context, "target"));
    struct observed seen[OBSERVE_MAX];
    size_t n = 0;
    struct ops_topo t;
    char err[256];
    bool done = false;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    const struct cluster_node *to = cluster_nodes_find(&t.nodes, target);
    if (t.cluster_mode || to == NULL) {
        done = true;
    } else if (observe_shard(&t, context_shard(ctx), seen, &n, err, sizeof(err))) {
        done = true;
        for (size_t i = 0; i < n; i++) {
            if (seen[i].node == to || (seen[i].repl.master_port == to->port &&
                                       strcmp(seen[i].repl.master_host, to->address) == 0))
                continue;
            done = false;
            if (!follow(&t, seen[i].node, to, err, sizeof(err)))
                log_warn("REPLICAOF failed", "node=%s error=\"%s\"", seen[i].node->id, err);
        }
    }
    ops_topo_free(&t);
    if (done)
        return OP_NEXT;
    if (elapsed_s(ctx, "repoint_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "REPLICATION_FAILED",
                       "the replicas did not all follow the new primary within %d s",
                       FORM_WAIT_LIMIT_S);
    return op_wait(ctx, 20);
}

static enum op_result measure_pause(struct op_ctx *ctx)
{
    long long pause = json_integer_value(json_object_get(ctx->context, "switched_ms")) -
                      json_integer_value(json_object_get(ctx->context, "started_ms"));
    json_object_set_new(ctx->context, "write_pause_ms", json_integer(pause));
    return OP_NEXT;
}

static enum db_status record_failover(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_failover_done(
        conn, ctx->cluster_id, ctx->op_id,
        json_string_value(json_object_get(ctx->context, "previous")),
        json_string_value(json_object_get(ctx->context, "target")),
        json_integer_value(json_object_get(ctx->context, "write_pause_ms")));
}

static const struct op_step failover_steps[] = {
    {"start_failover", start_failover},
    {"wait_switch", wait_switch},
    {"record", measure_pause, record_failover},
    {"repoint_replicas", repoint_replicas},
};

const struct op_kind op_cluster_failover = {"failover", failover_steps,
                                            sizeof(failover_steps) / sizeof(failover_steps[0]),
                                            back_to_available};

enum op_result ops_failover_run(struct op_ctx *ctx, json_t *sub)
{
    json_t *outer = ctx->context;
    enum op_result r = OP_NEXT;
    int n = (int)(sizeof(failover_steps) / sizeof(failover_steps[0]));

    ctx->context = sub;
    for (int step = (int)json_integer_value(json_object_get(sub, "step")); step < n;) {
        if ((r = op_run_nested(ctx, &failover_steps[step])) != OP_NEXT)
            break;
        json_object_set_new(sub, "step", json_integer(++step));
    }
    ctx->context = outer;
    return r;
}

/* ---- node replacement ---------------------------------------------------------- */

/* The shard's primary as cairnd knows it, running on a healthy host. */
static const struct cluster_node *shard_primary(const struct ops_topo *t, int shard)
{
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->shard == shard && strcmp(n->role, "primary") == 0 && !n->host_lost &&
            strcmp(n->process_state, "running") == 0)
            return n;
    }
    return NULL;
}

/* Place the new node once (a resumed runner finds it in the context). */
static enum op_result place_replacement(struct op_ctx *ctx)
{
    struct cluster_replacement r = {0};

    if (context_str(ctx, "new") != NULL)
        return OP_NEXT;
    if (!cluster_replacement_place(ctx->app, ctx->cluster_id, ctx->op_id, context_str(ctx, "node"),
                                   &r, ctx->error, sizeof(ctx->error)))
        return op_fail(ctx, "NO_CAPACITY", "%s", ctx->error);
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
    enum op_result res = OP_WAIT;
    bool trust_losses = monitor_trusts_losses(ctx->app->monitor);

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    const struct cluster_node *n = cluster_nodes_find(&t.nodes, context_str(ctx, "new"));
    if (n != NULL && n->host_lost && trust_losses) {
        res = op_fail(ctx, "HOST_LOST", "the replacement's host %s was lost", n->host_id);
    } else if (n != NULL && !n->host_lost && n->port > 0 &&
               strcmp(n->process_state, "running") == 0 && answers_ping(&t, n)) {
        res = OP_NEXT;
    }
    ops_topo_free(&t);
    if (res == OP_WAIT && elapsed_s(ctx, "engine_since") > ENGINE_WAIT_LIMIT_S)
        return op_fail(ctx, "ENGINE_START_FAILED", "the replacement did not start within %d s",
                       ENGINE_WAIT_LIMIT_S);
    return res == OP_WAIT ? op_wait(ctx, POLL_MS) : res;
}

/* The new node follows the shard's primary: CLUSTER MEET and CLUSTER
 * REPLICATE in cluster mode, REPLICAOF otherwise (its config names the
 * primary already; this covers a primary that changed since). Done when it
 * is in sync. */
static enum op_result join_replacement(struct op_ctx *ctx)
{
    struct ops_topo t;
    char err[256], primary_id[ENGINE_CLUSTER_ID_LEN + 1];
    struct nodeio_repl repl;
    enum op_result res = OP_WAIT;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    const struct cluster_node *n = cluster_nodes_find(&t.nodes, context_str(ctx, "new"));
    const struct cluster_node *p = shard_primary(&t, context_shard(ctx));
    if (n == NULL || p == NULL) {
        /* no primary yet (a failover under way): wait for one */
    } else if (nodeio_replication(n, t.password, NODEIO_PATIENT, &repl, err, sizeof(err)) &&
               repl.in_sync) {
        res = OP_NEXT;
    } else if (!t.cluster_mode) {
        if (repl.primary && !follow(&t, n, p, err, sizeof(err)))
            log_warn("REPLICAOF failed", "node=%s error=\"%s\"", n->id, err);
    } else if (repl.primary) {
        struct engine_cluster_nodes view = {0};
        bool knows = node_view(&t, n, &view, err, sizeof(err)) &&
                     engine_id_of(&t, p, primary_id, err, sizeof(err));
        const struct engine_cluster_node *known = NULL;
        for (size_t i = 0; knows && i < view.count; i++) {
            if (strcmp(view.nodes[i].id, primary_id) == 0 &&
                !(view.nodes[i].flags & (ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR)))
                known = &view.nodes[i];
        }
        if (knows && known == NULL)
            (void)meet_node(&t, n, p, err, sizeof(err));
        else if (known != NULL && !replicate_node(&t, n, primary_id, err, sizeof(err)))
            log_warn("CLUSTER REPLICATE failed", "node=%s error=\"%s\"", n->id, err);
        engine_cluster_nodes_free(&view);
    }
    ops_topo_free(&t);
    if (res == OP_WAIT && elapsed_s(ctx, "join_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "REPLICATION_FAILED",
                       "the replacement was not in sync with its primary within %d s",
                       FORM_WAIT_LIMIT_S);
    return res == OP_WAIT ? op_wait(ctx, POLL_MS) : res;
}

/* Cluster mode: every live node forgets the dead one, once none replicates
 * from it (it serves no slots and has no replicas, so nobody waits for its
 * vote either). Until then it stays, and the step waits. */
static enum op_result forget_dead(struct op_ctx *ctx)
{
    const char *address = context_str(ctx, "dead_address");
    int port = (int)json_integer_value(json_object_get(ctx->context, "dead_port"));
    char dead[ENGINE_CLUSTER_ID_LEN + 1] = "", err[256];
    bool blocked = false, ok = true;
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    if (!t.cluster_mode || address == NULL || port <= 0) {
        ops_topo_free(&t);
        return OP_NEXT;
    }
    for (size_t i = 0; i < t.nodes.count && ok; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        if (!node_view(&t, n, &view, err, sizeof(err))) {
            ok = false;
            break;
        }
        for (size_t k = 0; k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            if (!(v->flags & ENGINE_CLUSTER_MYSELF) && v->port == port &&
                strcmp(v->ip, address) == 0)
                snprintf(dead, sizeof(dead), "%s", v->id);
        }
        for (size_t k = 0; dead[0] != '\0' && k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            if (strcmp(v->primary_id, dead) == 0 && !(v->flags & ENGINE_CLUSTER_FAIL))
                blocked = true; /* a live replica follows it */
            if (strcmp(v->id, dead) == 0 && v->nranges > 0)
                blocked = true; /* it still owns slots: no failover yet */
        }
        engine_cluster_nodes_free(&view);
    }
    for (size_t i = 0; ok && !blocked && dead[0] != '\0' && i < t.nodes.count; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        /* "Unknown node" from one that forgot it already is fine. */
        struct resp_conn *c = connect_node(&t, n, err, sizeof(err));
        if (c != NULL)
            (void)engine_cluster_forget(c, dead, err, sizeof(err));
        resp_close(c);
    }
    ops_topo_free(&t);
    if (ok && !blocked && dead[0] == '\0')
        return OP_NEXT; /* nobody knows it any more */
    if (elapsed_s(ctx, "forget_since") > FORM_WAIT_LIMIT_S)
        return op_fail(ctx, "FORGET_BLOCKED",
                       "the dead node %s:%d was still %s after %d s; it stays in the cluster",
                       address, port, blocked ? "followed by a replica or owning slots" : "known",
                       FORM_WAIT_LIMIT_S);
    return op_wait(ctx, 200);
}

static enum db_status finish_replacement(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_replacement_done(conn, ctx->cluster_id, ctx->op_id, context_str(ctx, "node"),
                                    context_str(ctx, "new"));
}

/* The cluster serves on with one node fewer; the monitor tries again. */
static enum db_status replacement_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return cluster_mark_failed(conn, ctx->cluster_id, ctx->op_id, ctx->code, ctx->error, NULL);
}

static const struct op_step replace_steps[] = {
    {"place", place_replacement}, {"wait_engine", wait_new_engine},     {"join", join_replacement},
    {"forget_dead", forget_dead}, {"finish", NULL, finish_replacement},
};

const struct op_kind op_cluster_replace_node = {"replace_node", replace_steps,
                                                sizeof(replace_steps) / sizeof(replace_steps[0]),
                                                replacement_failed};
