/* ops_replace.c -- replace_node: a node whose host stays lost (or whose
 * engine stays crashed) gets a new replica in its shard, placed by the
 * scheduler's rules; it joins and syncs, and the dead node is forgotten by
 * the cluster. Queued by the failover authority (ha.c). */
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
#include "scheduler.h"

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
};

/* The replacement's NodeReplacing event. */
static enum db_status replacing_event(struct db_conn *conn, const struct replace_call *c,
                                      const struct sched_host *host)
{
    char *message = xasprintf("shard %04d: replacing node %s with node %s on host %s in %s",
                              c->out->shard + 1, c->dead_id, c->out->new_id, host->id, host->az);
    json_t *detail = json_pack("{s:s, s:s, s:s, s:s}", "replaced", c->dead_id, "node_id",
                               c->out->new_id, "host_id", host->id, "az", host->az);
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st =
        store_event_add(conn, c->cluster_id, c->op_id, "NodeReplacing", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

/* Pick a host by the scheduler's rules for a replica of dead's shard. */
static int pick_host(struct db_conn *conn, struct replace_call *c,
                     const struct store_node_to_replace *dead, const struct store_placement *p,
                     enum db_status *st)
{
    struct store_shard_mates mates = {0};
    if ((*st = store_shard_mates(conn, dead->shard_id, c->dead_id, &mates)) != DB_OK)
        return -1;
    struct sched_replacement r = {.vcpus = p->vcpus,
                                  .memory_mib = p->memory_mib,
                                  .multi_az = dead->multi_az,
                                  .shard_hosts = (const char **)mates.hosts,
                                  .shard_azs = (const char **)mates.azs,
                                  .n_shard = mates.n,
                                  .primary_az = mates.primary_az};
    int pick = sched_pick_replacement(p->hosts, p->nhosts, &r, c->err, c->errsize);
    store_shard_mates_free(&mates);
    return pick;
}

static enum db_status replace_fn(struct db_conn *conn, void *arg)
{
    struct replace_call *c = arg;
    struct store_node_to_replace dead;
    struct store_placement p = {0};

    c->placed = false;
    enum db_status st = store_node_to_replace(conn, c->cluster_id, c->dead_id, &dead);
    if (st == DB_NOT_FOUND)
        snprintf(c->err, c->errsize, "node %s is not a live node of cluster %s", c->dead_id,
                 c->cluster_id);
    if (st != DB_OK)
        return st;
    snprintf(c->out->dead_address, sizeof(c->out->dead_address), "%s", dead.address);
    c->out->dead_port = dead.port;
    c->out->shard = dead.shard;
    st = store_placement_read(conn, dead.engine, dead.engine_version, dead.node_type, &p);
    if (st != DB_OK)
        return st;
    int pick = pick_host(conn, c, &dead, &p, &st);
    if (pick < 0 && st == DB_OK)
        st = DB_REFUSED;
    if (st == DB_OK)
        st = store_node_replace(conn, c->cluster_id, c->dead_id, &dead, p.hosts[pick].id,
                                c->out->new_id);
    if (st == DB_OK)
        st = store_host_assign_ports(conn, p.hosts[pick].id);
    if (st == DB_OK)
        st = replacing_event(conn, c, &p.hosts[pick]);
    c->placed = st == DB_OK;
    store_placement_free(&p);
    return st;
}

/* Place a new replica in the dead node's shard by the scheduler's rules, on
 * a healthy host, and mark the dead node deleted (its agent removes it if
 * its host ever returns); false with a message when there is no room or
 * the node is not live. */
static bool place(struct app *app, const char *cluster_id, const char *op_id, const char *dead_id,
                  struct replacement *out, char *err, size_t errsize)
{
    struct replace_call c = {cluster_id, dead_id, op_id, out, err, errsize, false};
    err[0] = '\0';
    if (db_tx(app->db, DB_READ_COMMITTED, replace_fn, &c) == DB_OK && c.placed)
        return true;
    if (err[0] == '\0')
        snprintf(err, errsize, "could not store the replacement");
    return false;
}

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
    struct replacement r = {0};

    if (ops_context_str(ctx, "new") != NULL)
        return OP_NEXT;
    if (!place(ctx->app, ctx->cluster_id, ctx->op_id, ops_context_str(ctx, "node"), &r, ctx->error,
               sizeof(ctx->error)))
        return op_fail(ctx, PROBLEM_INSUFFICIENT_CAPACITY, "%s", ctx->error);
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
        return op_wait(ctx, OPS_POLL_MS);
    const struct cluster_node *n = cluster_nodes_find(&t.nodes, ops_context_str(ctx, "new"));
    if (n != NULL && n->host_lost && trust_losses) {
        res = op_fail(ctx, PROBLEM_HOST_LOST, "the replacement's host %s was lost", n->host_id);
    } else if (n != NULL && !n->host_lost && n->port > 0 &&
               strcmp(n->process_state, "running") == 0 &&
               nodeio_ping(n, t.password, NODEIO_PATIENT)) {
        res = OP_NEXT;
    }
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(ctx, "engine_since", OPS_ENGINE_WAIT_LIMIT_S, OPS_POLL_MS,
                           PROBLEM_ENGINE_START_FAILED, "the replacement did not start within %d s",
                           OPS_ENGINE_WAIT_LIMIT_S);
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
        return op_wait(ctx, OPS_POLL_MS);
    const struct cluster_node *n = cluster_nodes_find(&t.nodes, ops_context_str(ctx, "new"));
    const struct cluster_node *p = shard_primary(&t, (int)ops_context_int(ctx, "shard"));
    if (n == NULL || p == NULL) {
        /* no primary yet (a failover under way): wait for one */
    } else if (nodeio_replication(n, t.password, NODEIO_PATIENT, &repl, err, sizeof(err)) &&
               repl.in_sync) {
        res = OP_NEXT;
    } else if (!t.cluster_mode) {
        if (repl.primary && !nodeio_follow(n, t.password, NODEIO_PATIENT, p, err, sizeof(err)))
            log_warn("REPLICAOF failed", "node=%s error=\"%s\"", n->id, err);
    } else if (repl.primary) {
        struct engine_cluster_nodes view = {0};
        bool knows =
            nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err)) &&
            nodeio_cluster_myid(p, t.password, NODEIO_PATIENT, primary_id, err, sizeof(err));
        const struct engine_cluster_node *known = NULL;
        for (size_t i = 0; knows && i < view.count; i++) {
            if (strcmp(view.nodes[i].id, primary_id) == 0 &&
                !(view.nodes[i].flags & (ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR)))
                known = &view.nodes[i];
        }
        if (knows && known == NULL)
            (void)nodeio_cluster_meet(n, t.password, NODEIO_PATIENT, p, err, sizeof(err));
        else if (known != NULL && !nodeio_cluster_replicate(n, t.password, NODEIO_PATIENT,
                                                            primary_id, err, sizeof(err)))
            log_warn("CLUSTER REPLICATE failed", "node=%s error=\"%s\"", n->id, err);
        engine_cluster_nodes_free(&view);
    }
    ops_topo_free(&t);
    if (res != OP_WAIT)
        return res;
    return ops_wait_within(
        ctx, "join_since", OPS_FORM_WAIT_LIMIT_S, OPS_POLL_MS, PROBLEM_REPLICATION_FAILED,
        "the replacement was not in sync with its primary within %d s", OPS_FORM_WAIT_LIMIT_S);
}

/* Cluster mode: every live node forgets the dead one, once none replicates
 * from it (it serves no slots and has no replicas, so nobody waits for its
 * vote either). Until then it stays, and the step waits. */
static enum op_result forget_dead(struct op_ctx *ctx)
{
    const char *address = ops_context_str(ctx, "dead_address");
    int port = (int)json_integer_value(json_object_get(ctx->context, "dead_port"));
    char dead[ENGINE_CLUSTER_ID_LEN + 1] = "", err[256];
    bool blocked = false, ok = true;
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    if (!t.cluster_mode || address == NULL || port <= 0) {
        ops_topo_free(&t);
        return OP_NEXT;
    }
    for (size_t i = 0; i < t.nodes.count && ok; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        if (!nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err))) {
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
        struct resp_conn *c = nodeio_connect(n, t.password, NODEIO_PATIENT, err, sizeof(err));
        if (c != NULL)
            (void)engine_cluster_forget(c, dead, err, sizeof(err));
        resp_close(c);
    }
    ops_topo_free(&t);
    if (ok && !blocked && dead[0] == '\0')
        return OP_NEXT; /* nobody knows it any more */
    return ops_wait_within(
        ctx, "forget_since", OPS_FORM_WAIT_LIMIT_S, 200, PROBLEM_FORGET_BLOCKED,
        "the dead node %s:%d was still %s after %d s; it stays in the cluster", address, port,
        blocked ? "followed by a replica or owning slots" : "known", OPS_FORM_WAIT_LIMIT_S);
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
