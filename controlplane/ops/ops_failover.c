/* ops_failover.c -- a planned, lossless failover of one shard: the chosen
 * in-sync replica takes over while the primary pauses writes until it has
 * caught up (CLUSTER FAILOVER in cluster mode, FAILOVER TO otherwise); the
 * new roles are recorded and the other replicas follow the new primary.
 * Also run inside an engine upgrade (ops_failover_run()). */
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

/* What one node of the shard says about itself right now. A shard has at
 * most 6 nodes (1 + 5 replicas), twice that while a node type change has
 * new nodes beside the old. */
#define OBSERVE_MAX 12

#define FAILOVER_ENGINE_TIMEOUT_MS 5000
#define FAILOVER_RETRY_S           10
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

/* Whether the context's "candidates" (when it names some) include node. */
static bool candidate(const struct op_ctx *ctx, const struct cluster_node *node)
{
    const json_t *candidates = json_object_get(ctx->context, "candidates");
    size_t i;
    json_t *id;
    if (candidates == NULL)
        return true;
    json_array_foreach (candidates, i, id) {
        if (strcmp(json_string_value(id), node->id) == 0)
            return true;
    }
    return false;
}

/* The shard's primary and the replica to take over: in sync, on the
 * version an upgrade moves to (when it names one), one of the candidates
 * of a node type change (when it names them), in the AZ a rebalance moves
 * the primary to (when it names one), with the most data. */
static void choose(const struct op_ctx *ctx, const struct observed *seen, size_t n,
                   const struct observed **primary, const struct observed **best)
{
    const char *target_az = ops_context_str(ctx, "target_az");
    const char *engine = ops_context_str(ctx, "engine");
    const char *version = ops_context_str(ctx, "engine_version");
    for (size_t i = 0; i < n; i++) {
        if (!seen[i].repl.primary && engine != NULL && version != NULL &&
            (strcmp(seen[i].node->engine, engine) != 0 ||
             strcmp(seen[i].node->engine_version, version) != 0))
            continue; /* an upgrade fails over only to a replica on the new version */
        if (!seen[i].repl.primary && !candidate(ctx, seen[i].node))
            continue;
        bool there = target_az == NULL || strcmp(seen[i].node->az, target_az) == 0;
        bool best_there =
            *best != NULL && (target_az == NULL || strcmp((*best)->node->az, target_az) == 0);
        if (seen[i].repl.primary)
            *primary = &seen[i];
        else if (seen[i].repl.in_sync &&
                 (*best == NULL || (there && !best_there) ||
                  (there == best_there && seen[i].repl.offset > (*best)->repl.offset)))
            *best = &seen[i];
    }
}

/* CLUSTER FAILOVER (default, lossless mode) on the target in cluster mode;
 * FAILOVER TO it on the primary otherwise, hurried along. */
static bool send_failover(const struct ops_topo *t, const struct cluster_node *primary,
                          const struct cluster_node *target, char *err, size_t errsize)
{
    if (t->cluster_mode)
        return nodeio_cluster_failover(target, t->password, NODEIO_PATIENT, ENGINE_FAILOVER_DEFAULT,
                                       err, errsize);
    struct resp_conn *c = nodeio_connect(primary, t->password, NODEIO_PATIENT, err, errsize);
    bool ok = c != NULL && engine_failover_to(c, target->address, target->port,
                                              FAILOVER_ENGINE_TIMEOUT_MS, err, errsize);
    resp_close(c);
    if (ok)
        hurry_failover(t, primary, target);
    return ok;
}

/* The node of the topology at the address and port a view lists, or NULL. */
static const struct cluster_node *node_at(const struct ops_topo *t,
                                          const struct engine_cluster_node *v)
{
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->port == v->port && strcmp(n->address, v->ip) == 0)
            return n;
    }
    return NULL;
}

#define VIEW_UNSURE                                                                                \
    (ENGINE_CLUSTER_PFAIL | ENGINE_CLUSTER_FAIL | ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR)

/* Whether the primary seen as m (in the target's view) counts the target,
 * whose engine id is tid, as a healthy, linked replica of pid: its vote
 * depends on it. A primary cairnd cannot find or ask is left out. */
static bool votes_for(const struct ops_topo *t, const struct engine_cluster_node *m,
                      const char *tid, const char *pid, char *why, size_t whysize)
{
    struct engine_cluster_nodes view = {0};
    char err[256];
    const struct cluster_node *n = node_at(t, m);
    if (n == NULL || !nodeio_cluster_view(n, t->password, NODEIO_QUICK, &view, err, sizeof(err)))
        return true;
    const struct engine_cluster_node *r = engine_cluster_nodes_find(&view, tid);
    bool ok = r != NULL && strcmp(r->primary_id, pid) == 0 && r->connected &&
              (r->flags & VIEW_UNSURE) == 0;
    if (!ok)
        snprintf(why, whysize, "node %s does not yet count the target as a linked replica", n->id);
    engine_cluster_nodes_free(&view);
    return ok;
}

/* Cluster mode: a replica that has just joined (a node type change's new
 * node, a replacement) is in sync with its primary before the cluster
 * agrees on it. Elected then, it falls short of votes from primaries that
 * do not count it as a replica yet -- and a failed election holds off the
 * next one for four node timeouts -- or it counts its quorum among the few
 * primaries it knows. So the failover is sent once the target knows a
 * primary for every slot and every one of those primaries that answers
 * counts the target as a linked replica of the shard's primary. Outside
 * cluster mode there is no election: ready. */
static bool ready_to_elect(const struct ops_topo *t, const struct cluster_node *primary,
                           const struct cluster_node *target, char *why, size_t whysize)
{
    struct engine_cluster_nodes tview = {0};
    char pid[ENGINE_CLUSTER_ID_LEN + 1], err[256];

    if (!t->cluster_mode)
        return true;
    if (!nodeio_cluster_myid(primary, t->password, NODEIO_QUICK, pid, err, sizeof(err)) ||
        !nodeio_cluster_view(target, t->password, NODEIO_QUICK, &tview, err, sizeof(err))) {
        snprintf(why, whysize, "%s", err);
        return false;
    }
    const struct engine_cluster_node *me = engine_cluster_nodes_myself(&tview);
    bool ok = me != NULL && strcmp(me->primary_id, pid) == 0;
    if (!ok)
        snprintf(why, whysize, "the target does not yet follow the primary in its own view");
    int slots = 0;
    for (size_t i = 0; ok && i < tview.count; i++) {
        const struct engine_cluster_node *m = &tview.nodes[i];
        int count = engine_cluster_node_slot_count(m);
        if ((m->flags & ENGINE_CLUSTER_PRIMARY) == 0 || count == 0)
            continue;
        slots += count;
        ok = votes_for(t, m, me->id, pid, why, whysize);
    }
    if (ok && slots < ENGINE_CLUSTER_SLOTS) {
        snprintf(why, whysize, "the target knows the primaries of %d slots", slots);
        ok = false;
    }
    engine_cluster_nodes_free(&tview);
    return ok;
}

/* How long a failover waits for the cluster to be ready to elect its
 * target before it is sent regardless (the engine may still manage). */
#define READY_WAIT_LIMIT_S 10

/* Whether to send the failover now: the cluster is ready to elect its
 * target, or has been waited for READY_WAIT_LIMIT_S (said once, and not
 * asked again when a refused failover is retried). */
static bool send_now(struct op_ctx *ctx, const struct ops_topo *t, const struct cluster_node *from,
                     const struct cluster_node *to)
{
    char why[256] = "";
    if (json_object_get(ctx->context, "ready_waived") != NULL ||
        ready_to_elect(t, from, to, why, sizeof(why)))
        return true;
    bool waiting = json_object_get(ctx->context, "ready_since") != NULL;
    if (ops_elapsed_s(ctx, "ready_since") <= READY_WAIT_LIMIT_S) {
        if (!waiting)
            log_info("a planned failover waits for the cluster to agree on its target",
                     "node=%s why=\"%s\"", to->id, why);
        return false;
    }
    log_warn("sending a planned failover the cluster is not ready for", "node=%s why=\"%s\"",
             to->id, why);
    json_object_set_new(ctx->context, "ready_waived", json_true());
    return true;
}

/* Whether the node the failover chose already serves as the primary: a
 * failover sent by a cairnd that died before recording so. */
static bool target_primary(const struct observed *seen, size_t n, const char *target)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(seen[i].node->id, target) == 0)
            return seen[i].repl.primary;
    return false;
}

/* Start the failover once: CLUSTER FAILOVER (default, lossless mode) on the
 * chosen replica in cluster mode; FAILOVER TO it on the primary otherwise.
 * Both pause writes on the primary until the replica has caught up. The
 * choice is recorded before anything is sent (the step waits once), so a
 * cairnd killed around the sending resumes with the same target: choosing
 * again could find the failover already done and no replica left to
 * choose (an upgrade fails over only to a replica on the new version). */
/* How often a FAILOVER refused because the primary does not count the
 * target online yet is asked again, OPS_POLL_MS apart: 5 s. */
#define FAILOVER_NOT_ONLINE_RETRIES 50

static enum op_result start_failover(struct op_ctx *ctx)
{
    struct observed seen[OBSERVE_MAX];
    size_t n = 0;
    struct ops_topo t;
    char err[256];

    if (json_object_get(ctx->context, "sent") != NULL)
        return OP_NEXT; /* a resumed runner must not send it twice */
    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    if (!observe_shard(&t, (int)ops_context_int(ctx, "shard"), seen, &n, err, sizeof(err))) {
        ops_topo_free(&t);
        return op_fail(ctx, PROBLEM_NODE_UNREACHABLE, "%s", err);
    }
    const char *target = ops_context_str(ctx, "target");
    if (target == NULL) {
        const struct observed *primary = NULL, *best = NULL;
        choose(ctx, seen, n, &primary, &best);
        if (primary != NULL && best != NULL) {
            json_object_set_new(ctx->context, "target", json_string(best->node->id));
            json_object_set_new(ctx->context, "previous", json_string(primary->node->id));
        }
        ops_topo_free(&t);
        if (primary == NULL || best == NULL)
            return op_fail(ctx, PROBLEM_NO_IN_SYNC_REPLICA,
                           "shard %04d has %s; a planned failover needs a primary and an in-sync "
                           "replica",
                           (int)ops_context_int(ctx, "shard") + 1,
                           primary == NULL ? "no primary" : "no in-sync replica");
        return op_wait(ctx, 0); /* recorded; sent on the next run */
    }
    const struct cluster_node *to = cluster_nodes_find(&t.nodes, target);
    const struct cluster_node *from =
        cluster_nodes_find(&t.nodes, ops_context_str(ctx, "previous"));
    if (to == NULL || from == NULL) {
        ops_topo_free(&t);
        return op_fail(ctx, PROBLEM_NODE_UNREACHABLE, "node %s or %s is gone from the shard",
                       target, ops_context_str(ctx, "previous"));
    }
    bool done = target_primary(seen, n, target);
    if (!done && !send_now(ctx, &t, from, to)) {
        ops_topo_free(&t);
        return op_wait(ctx, OPS_POLL_MS);
    }
    json_object_set_new(ctx->context, "started_ms", json_integer(time_now_ms()));
    if (!done && !send_failover(&t, from, to, err, sizeof(err))) {
        ops_topo_free(&t);
        /* A replica that has just (re)connected -- after an earlier
         * failover, say -- is in sync by its own account before its
         * primary counts it online: ask again for a few seconds. */
        long long refusals = ops_context_int(ctx, "refusals");
        if (strstr(err, "not online") != NULL && refusals < FAILOVER_NOT_ONLINE_RETRIES) {
            json_object_set_new(ctx->context, "refusals", json_integer(refusals + 1));
            return op_wait(ctx, OPS_POLL_MS);
        }
        return op_fail(ctx, PROBLEM_FAILOVER_REFUSED, "the engine refused the failover: %s", err);
    }
    json_object_set_new(ctx->context, "sent", json_true());
    ops_topo_free(&t);
    return OP_NEXT;
}

/* The failover's shard as its nodes describe themselves now, and the node
 * that is to be its primary (to: NULL when it is gone). */
struct shard_view {
    struct ops_topo t;
    const struct cluster_node *to;
    struct observed seen[OBSERVE_MAX];
    size_t n;
    bool observed; /* every node answered */
};

/* False when the topology cannot be read (nothing to free then). */
static bool view_shard(struct op_ctx *ctx, struct shard_view *v)
{
    char err[256];
    if (!ops_topo_load(ctx, &v->t))
        return false;
    v->to = cluster_nodes_find(&v->t.nodes, ops_context_str(ctx, "target"));
    v->n = 0;
    v->observed = v->to != NULL && observe_shard(&v->t, (int)ops_context_int(ctx, "shard"), v->seen,
                                                 &v->n, err, sizeof(err));
    return true;
}

/* Switched: the target is the only primary. The write pause ends there; in
 * cluster mode it ends once every node agrees the cluster is ok again. */
static bool switched(const struct shard_view *v)
{
    bool done = v->observed;
    for (size_t i = 0; i < v->n && done; i++) {
        bool is_target = v->seen[i].node == v->to;
        done = is_target ? v->seen[i].repl.primary : !v->seen[i].repl.primary;
        if (done && v->t.cluster_mode)
            done = nodeio_cluster_state_ok(v->seen[i].node, v->t.password, NODEIO_PATIENT);
    }
    return done;
}

/* An engine gives a planned failover FAILOVER_ENGINE_TIMEOUT_MS (5 s for
 * CLUSTER FAILOVER) for the target to catch up, then gives up and leaves
 * the roles as they were; nothing would switch then. Every
 * FAILOVER_RETRY_S the step sees no switch, it asks again, as long as the
 * old primary still is one. */
static void retry_failover(struct op_ctx *ctx, const struct shard_view *v)
{
    long long retries = ops_context_int(ctx, "retries");
    const struct cluster_node *primary = NULL;
    char err[256];

    if (!v->observed || ops_elapsed_s(ctx, "switch_since") < FAILOVER_RETRY_S * (retries + 1))
        return;
    for (size_t i = 0; i < v->n; i++)
        if (v->seen[i].repl.primary && v->seen[i].node != v->to)
            primary = v->seen[i].node;
    json_object_set_new(ctx->context, "retries", json_integer(retries + 1));
    if (primary == NULL)
        return; /* switched at the engines; the cluster is settling */
    log_warn("a planned failover did not switch; asking again", "node=%s primary=%s", v->to->id,
             primary->id);
    if (!send_failover(&v->t, primary, v->to, err, sizeof(err)))
        log_warn("the failover was refused again", "node=%s error=\"%s\"", v->to->id, err);
}

static const char ON_LOST_HOST[] = "is on a lost host";

/* Why node n, one of the two a failover switches, can take no part in it
 * now (its agent reports it down, or its host lost); NULL when it can. */
static const char *gone(const struct cluster_node *n)
{
    if (n == NULL)
        return "is gone from the shard";
    if (n->host_lost)
        return ON_LOST_HOST;
    if (strcmp(n->process_state, "crashed") == 0 || strcmp(n->process_state, "stopped") == 0 ||
        strcmp(n->process_state, "unresponsive") == 0)
        return n->process_state;
    return NULL;
}

/* Done when the target says it is the primary and every other node of the
 * shard follows it. A failover operation of its own (alone) holds the
 * failover authority (ha.c) off the cluster while it runs, so when the
 * primary or the target goes down before the roles switch, it ends at once
 * instead of waiting out the step's minute with a shard whose primary may
 * be down; a primary gone after the switch (the target says it took over)
 * counts as switched. Inside another operation (an upgrade) the authority
 * acts meanwhile, and the step waits. */
static enum op_result await_switch(struct op_ctx *ctx, bool alone)
{
    struct shard_view v;
    struct nodeio_repl repl;
    const char *who = NULL, *why = NULL;
    char err[256];

    if (!view_shard(ctx, &v))
        return op_wait(ctx, 20);
    bool done = switched(&v);
    if (!done && alone) {
        if ((why = gone(cluster_nodes_find(&v.t.nodes, ops_context_str(ctx, "previous")))) !=
            NULL) {
            who = "previous";
            done = v.to != NULL &&
                   nodeio_replication(v.to, v.t.password, NODEIO_QUICK, &repl, err, sizeof(err)) &&
                   repl.primary;
        } else if ((why = gone(v.to)) != NULL) {
            who = "target";
        }
    }
    if (!done && why == NULL)
        retry_failover(ctx, &v);
    ops_topo_free(&v.t);
    if (done) {
        if (json_object_get(ctx->context, "switched_ms") == NULL)
            json_object_set_new(ctx->context, "switched_ms", json_integer(time_now_ms()));
        return OP_NEXT;
    }
    if (why != NULL)
        return op_fail(ctx, why == ON_LOST_HOST ? PROBLEM_HOST_LOST : PROBLEM_NODE_UNREACHABLE,
                       "node %s (the %s) %s before the roles switched; the planned failover is "
                       "called off, and automatic failover acts",
                       ops_context_str(ctx, who), strcmp(who, "target") == 0 ? "target" : "primary",
                       why);
    return ops_wait_within(ctx, "switch_since", OPS_FORM_WAIT_LIMIT_S, 20, PROBLEM_FAILOVER_TIMEOUT,
                           "the roles did not switch within %d s", OPS_FORM_WAIT_LIMIT_S);
}

static enum op_result wait_switch(struct op_ctx *ctx)
{
    return await_switch(ctx, false);
}

static enum op_result wait_switch_alone(struct op_ctx *ctx)
{
    return await_switch(ctx, true);
}

/* Whether every replica follows the target; tell those that do not. */
static bool all_follow(const struct shard_view *v)
{
    char err[256];
    bool done = true;
    if (!v->observed)
        return false;
    for (size_t i = 0; i < v->n; i++) {
        const struct observed *o = &v->seen[i];
        if (o->node == v->to || (o->repl.master_port == v->to->port &&
                                 strcmp(o->repl.master_host, v->to->address) == 0))
            continue;
        done = false;
        if (!nodeio_follow(o->node, v->t.password, NODEIO_PATIENT, v->to, err, sizeof(err)))
            log_warn("REPLICAOF failed", "node=%s error=\"%s\"", o->node->id, err);
    }
    return done;
}

/* Cluster mode disabled: FAILOVER TO moves only the old primary under the
 * target; the other replicas would stay chained behind the old primary.
 * Done when every replica follows the target (cluster mode: at once). */
static enum op_result repoint_replicas(struct op_ctx *ctx)
{
    struct shard_view v;
    if (!view_shard(ctx, &v))
        return op_wait(ctx, OPS_POLL_MS);
    bool done = v.t.cluster_mode || v.to == NULL || all_follow(&v);
    ops_topo_free(&v.t);
    if (done)
        return OP_NEXT;
    return ops_wait_within(
        ctx, "repoint_since", OPS_FORM_WAIT_LIMIT_S, 20, PROBLEM_REPLICATION_FAILED,
        "the replicas did not all follow the new primary within %d s", OPS_FORM_WAIT_LIMIT_S);
}

static enum op_result measure_pause(struct op_ctx *ctx)
{
    long long pause = json_integer_value(json_object_get(ctx->context, "switched_ms")) -
                      json_integer_value(json_object_get(ctx->context, "started_ms"));
    json_object_set_new(ctx->context, "write_pause_ms", json_integer(pause));
    return OP_NEXT;
}

/* The roles the engines confirmed, and a FailoverComplete event with the
 * write pause. */
static enum db_status record_failover(struct db_conn *conn, const struct op_ctx *ctx)
{
    const char *previous = ops_context_str(ctx, "previous"),
               *target = ops_context_str(ctx, "target");
    long long pause_ms = json_integer_value(json_object_get(ctx->context, "write_pause_ms"));
    enum db_status st = store_nodes_swap_roles(conn, previous, target);
    if (st != DB_OK)
        return st;
    char *detail = xasprintf("{\"from\": \"%s\", \"to\": \"%s\", \"write_pause_ms\": %lld, "
                             "\"planned\": true}",
                             previous, target, pause_ms);
    char *message = xasprintf("planned failover done; writes paused for %lld ms", pause_ms);
    st = ops_event(conn, ctx, "FailoverComplete", "info", message, detail);
    free(detail);
    free(message);
    return st;
}

static const struct op_step failover_steps[] = {
    {"start_failover", start_failover},
    {"wait_switch", wait_switch},
    {"record", measure_pause, record_failover},
    {"repoint_replicas", repoint_replicas},
};

/* The same steps, run as an operation of its own. */
static const struct op_step failover_alone_steps[] = {
    {"start_failover", start_failover},
    {"wait_switch", wait_switch_alone},
    {"record", measure_pause, record_failover},
    {"repoint_replicas", repoint_replicas},
};

const struct op_kind op_cluster_failover = {
    "failover", failover_alone_steps,
    sizeof(failover_alone_steps) / sizeof(failover_alone_steps[0]), ops_back_to_available};

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
