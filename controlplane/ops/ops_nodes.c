/* ops_nodes.c -- nodes joining a shard and leaving it, for every operation
 * that changes a shard's nodes (replace_node, scale_replicas,
 * change_node_type): a new node placed by the scheduler's rules, its engine
 * waited for, joined to its shard's primary until in sync; a node that
 * leaves forgotten by the cluster. */
#include "ops.h"

#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "log.h"
#include "monitor.h"
#include "nodeio.h"
#include "resp.h"
#include "scheduler.h"
#include "store.h"
#include "topology.h"

/* ---- placing -------------------------------------------------------------- */

enum db_status ops_placer_open(struct db_conn *conn, const char *engine, const char *version,
                               const char *node_type, struct ops_placer *pl)
{
    memset(pl, 0, sizeof(*pl));
    pl->engine = engine;
    pl->version = version;
    pl->node_type = node_type;
    return store_placement_read(conn, engine, version, node_type, &pl->hosts);
}

void ops_placer_close(struct ops_placer *pl)
{
    store_placement_free(&pl->hosts);
}

/* The scheduler's pick among the hosts left, away from the mates. */
static int pick(struct db_conn *conn, struct ops_placer *pl, const struct ops_placing *w,
                const char *node_type, enum db_status *st, char *err, size_t errsize)
{
    struct store_shard_mates mates = {0};
    if ((*st = store_shard_mates(conn, w->shard_id, w->leaving_id, node_type, &mates)) != DB_OK)
        return -1;
    struct sched_replacement r = {.vcpus = pl->hosts.vcpus,
                                  .memory_mib = pl->hosts.memory_mib,
                                  .multi_az = w->multi_az,
                                  .shard_hosts = (const char **)mates.hosts,
                                  .shard_azs = (const char **)mates.azs,
                                  .n_shard = mates.n,
                                  .primary_az = mates.primary_az};
    int i = sched_pick_replacement(pl->hosts.hosts, pl->hosts.nhosts, &r, err, errsize);
    store_shard_mates_free(&mates);
    return i;
}

enum db_status ops_place_replica(struct db_conn *conn, struct ops_placer *pl,
                                 const struct ops_placing *w, struct ops_placed *out, char *err,
                                 size_t errsize)
{
    enum db_status st;
    int i = pick(conn, pl, w, NULL, &st, err, errsize);
    /* A surge may share a host with a node that is about to leave: the rules
     * hold for the shard it leaves behind. */
    if (i < 0 && st == DB_OK && w->among_own_type)
        i = pick(conn, pl, w, pl->node_type, &st, err, errsize);
    if (st != DB_OK)
        return st;
    if (i < 0)
        return DB_REFUSED;
    struct sched_host *h = &pl->hosts.hosts[i];
    struct store_node_placed n = {w->cluster_id, w->shard_id,   h->id, pl->engine,
                                  pl->version,   pl->node_type, 0};
    if ((st = store_node_add_replica(conn, &n, out->node_id)) != DB_OK ||
        (st = store_host_assign_ports(conn, h->id)) != DB_OK)
        return st;
    /* The next pick of this transaction sees what this one took. */
    h->free_vcpus -= pl->hosts.vcpus;
    h->free_memory_mib -= pl->hosts.memory_mib;
    snprintf(out->host_id, sizeof(out->host_id), "%s", h->id);
    snprintf(out->az, sizeof(out->az), "%s", h->az);
    return DB_OK;
}

/* ---- joining -------------------------------------------------------------- */

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

enum op_result ops_node_started(struct op_ctx *ctx, const struct ops_topo *t, const char *node_id)
{
    const struct cluster_node *n = cluster_nodes_find(&t->nodes, node_id);
    if (n != NULL && n->host_lost && monitor_trusts_losses(ctx->app->monitor))
        return op_fail(ctx, PROBLEM_HOST_LOST, "the host of new node %s was lost", n->id);
    if (n != NULL && !n->host_lost && n->port > 0 && strcmp(n->process_state, "running") == 0 &&
        nodeio_ping(n, t->password, NODEIO_PATIENT))
        return OP_NEXT;
    return OP_WAIT;
}

/* Cluster mode: n meets the primary until it knows it, then replicates it. */
static void cluster_join(const struct ops_topo *t, const struct cluster_node *n,
                         const struct cluster_node *p)
{
    char err[256], primary_id[ENGINE_CLUSTER_ID_LEN + 1];
    struct engine_cluster_nodes view = {0};
    bool knows = nodeio_cluster_view(n, t->password, NODEIO_PATIENT, &view, err, sizeof(err)) &&
                 nodeio_cluster_myid(p, t->password, NODEIO_PATIENT, primary_id, err, sizeof(err));
    const struct engine_cluster_node *known = NULL;
    for (size_t i = 0; knows && i < view.count; i++) {
        if (strcmp(view.nodes[i].id, primary_id) == 0 &&
            !(view.nodes[i].flags & (ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR)))
            known = &view.nodes[i];
    }
    if (knows && known == NULL)
        (void)nodeio_cluster_meet(n, t->password, NODEIO_PATIENT, p, err, sizeof(err));
    else if (known != NULL && !nodeio_cluster_replicate(n, t->password, NODEIO_PATIENT, primary_id,
                                                        err, sizeof(err)))
        log_warn("CLUSTER REPLICATE failed", "node=%s error=\"%s\"", n->id, err);
    engine_cluster_nodes_free(&view);
}

/* Cluster mode: every primary lists n, out of its handshake, as a replica
 * of p. Until then a primary that does not know n would not vote for it in
 * a failover. (Replicas learn it by gossip too; new nodes still joining do
 * not know anyone yet, so only the voters are asked.) */
static bool known_everywhere(const struct ops_topo *t, const struct cluster_node *n,
                             const struct cluster_node *p)
{
    char err[256], id[ENGINE_CLUSTER_ID_LEN + 1], pid[ENGINE_CLUSTER_ID_LEN + 1];
    if (!nodeio_cluster_myid(n, t->password, NODEIO_PATIENT, id, err, sizeof(err)) ||
        !nodeio_cluster_myid(p, t->password, NODEIO_PATIENT, pid, err, sizeof(err)))
        return false;
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *m = &t->nodes.items[i];
        struct engine_cluster_nodes view = {0};
        bool known = false;
        if (m == n || m->host_lost || strcmp(m->process_state, "running") != 0 ||
            strcmp(m->role, "primary") != 0)
            continue;
        if (!nodeio_cluster_view(m, t->password, NODEIO_PATIENT, &view, err, sizeof(err)))
            return false;
        for (size_t k = 0; k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            if (strcmp(v->id, id) == 0 && strcmp(v->primary_id, pid) == 0 &&
                !(v->flags & (ENGINE_CLUSTER_HANDSHAKE | ENGINE_CLUSTER_NOADDR)))
                known = true;
        }
        engine_cluster_nodes_free(&view);
        if (!known)
            return false;
    }
    return true;
}

bool ops_node_join(const struct ops_topo *t, const struct cluster_node *n)
{
    char err[256];
    struct nodeio_repl repl;
    const struct cluster_node *p = shard_primary(t, n->shard);

    if (p == NULL || p == n)
        return false; /* no primary yet (a failover under way): wait for one */
    if (!nodeio_replication(n, t->password, NODEIO_PATIENT, &repl, err, sizeof(err)))
        return false;
    if (repl.in_sync)
        return !t->cluster_mode || known_everywhere(t, n, p);
    if (!repl.primary) {
        /* linked or linking: the sync runs */
    } else if (!t->cluster_mode) {
        if (!nodeio_follow(n, t->password, NODEIO_PATIENT, p, err, sizeof(err)))
            log_warn("REPLICAOF failed", "node=%s error=\"%s\"", n->id, err);
    } else {
        cluster_join(t, n, p);
    }
    return false;
}

/* ---- leaving -------------------------------------------------------------- */

enum ops_forget ops_node_forget(const struct ops_topo *t, const char *address, int port)
{
    char gone[ENGINE_CLUSTER_ID_LEN + 1] = "", err[256];
    bool blocked = false;

    if (!t->cluster_mode || address == NULL || port <= 0)
        return OPS_FORGOTTEN;
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        if (!nodeio_cluster_view(n, t->password, NODEIO_PATIENT, &view, err, sizeof(err)))
            return OPS_FORGET_UNKNOWN;
        for (size_t k = 0; k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            if (!(v->flags & ENGINE_CLUSTER_MYSELF) && v->port == port &&
                strcmp(v->ip, address) == 0)
                snprintf(gone, sizeof(gone), "%s", v->id);
        }
        for (size_t k = 0; gone[0] != '\0' && k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            if (strcmp(v->primary_id, gone) == 0 && !(v->flags & ENGINE_CLUSTER_FAIL))
                blocked = true; /* a live replica follows it */
            if (strcmp(v->id, gone) == 0 && v->nranges > 0)
                blocked = true; /* it still owns slots: no failover yet */
        }
        engine_cluster_nodes_free(&view);
    }
    if (gone[0] == '\0')
        return OPS_FORGOTTEN; /* nobody knows it any more */
    if (blocked)
        return OPS_FORGET_BLOCKED;
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        /* "Unknown node" from one that forgot it already is fine. */
        struct resp_conn *c = nodeio_connect(n, t->password, NODEIO_PATIENT, err, sizeof(err));
        if (c != NULL)
            (void)engine_cluster_forget(c, gone, err, sizeof(err));
        resp_close(c);
    }
    return OPS_FORGET_KNOWN;
}

/* ---- lists of nodes in an operation's context ------------------------------ */

static const char *entry_node(const json_t *entry)
{
    return json_string_value(json_object_get(entry, "node"));
}

enum op_result ops_nodes_started(struct op_ctx *ctx, const struct ops_topo *t,
                                 const json_t *entries, const json_t *done)
{
    enum op_result res = OP_NEXT;
    size_t i;
    json_t *entry;
    json_array_foreach (entries, i, entry) {
        if (ops_listed(done, entry_node(entry)))
            continue;
        enum op_result r = ops_node_started(ctx, t, entry_node(entry));
        if (r == OP_FAILED)
            return r;
        if (r == OP_WAIT)
            res = OP_WAIT;
    }
    return res;
}

bool ops_nodes_join(struct op_ctx *ctx, const struct ops_topo *t, const json_t *entries,
                    json_t *joined, op_deferred_fn on_join)
{
    bool all = true;
    size_t i;
    json_t *entry;
    json_array_foreach (entries, i, entry) {
        const char *id = entry_node(entry);
        const struct cluster_node *n = cluster_nodes_find(&t->nodes, id);
        if (ops_listed(joined, id))
            continue;
        if (n != NULL && ops_node_join(t, n)) {
            json_array_append_new(joined, json_string(id));
            op_defer(ctx, on_join, json_incref(entry));
        } else {
            all = false;
        }
    }
    return all;
}

bool ops_nodes_forget(const struct ops_topo *t, const json_t *entries, json_t *forgotten)
{
    bool all = true;
    size_t i;
    json_t *entry;
    json_array_foreach (entries, i, entry) {
        const char *id = entry_node(entry);
        if (ops_listed(forgotten, id))
            continue;
        if (ops_node_forget(t, json_string_value(json_object_get(entry, "address")),
                            (int)json_integer_value(json_object_get(entry, "port"))) ==
            OPS_FORGOTTEN)
            json_array_append_new(forgotten, json_string(id));
        else
            all = false;
    }
    return all;
}
