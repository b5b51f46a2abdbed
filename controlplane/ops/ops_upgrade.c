/* ops_upgrade.c -- the in-place engine upgrade (ARCHITECTURE.md §6), shard
 * by shard:
 *
 *   1. every replica in turn gets the new engine as its desired engine; its
 *      agent stops it and starts the new binary on the same data directory
 *      and port; done when the engine answers as the new version, has loaded
 *      and is linked with its offset caught up with the primary's;
 *   2. a lossless planned failover to an upgraded replica (the failover
 *      operation's steps, ops_failover_run);
 *   3. the old primary, now a replica, is upgraded like the others.
 *   A shard without replicas restarts its only node on the new binary, from
 *   its persistence: the downtime the precheck announced.
 *
 * A node that does not come up healthy on the new version within
 * --upgrade-node-timeout, while its shard's primary still runs the old
 * version, is rolled back to the old binary and the operation fails with
 * the cause; the cluster is as it was. Once a shard's primary runs the new
 * version there is no way back (the old engine cannot read what the new one
 * wrote), and the operation says so if a node fails then.
 *
 * The context holds where the upgrade is: "shard", the node in flight
 * ("node", "node_since"), a "rollback", or a "failover" in progress; every
 * decision is made again from the nodes' desired and observed state, so a
 * cairnd that resumes the operation after a crash picks up where it was. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "changes.h"
#include "cluster_nodes.h"
#include "info.h"
#include "log.h"
#include "nodeio.h"
#include "resp.h"
#include "store.h"
#include "upgrades.h"
#include "timeutil.h"
#include "xalloc.h"

#define POLL_MS 200

static const char *ctx_str(struct op_ctx *ctx, const char *object, const char *key)
{
    json_t *o = object != NULL ? json_object_get(ctx->context, object) : ctx->context;
    return json_string_value(json_object_get(o, key));
}

static bool on(const struct cluster_node *n, const char *engine, const char *version)
{
    return strcmp(n->engine, engine) == 0 && strcmp(n->engine_version, version) == 0;
}

/* The shard's designated primary (cairnd's designation follows failovers). */
static const struct cluster_node *primary_of(const struct ops_topo *t, int shard)
{
    for (size_t i = 0; i < t->nodes.count; i++)
        if (t->nodes.items[i].shard == shard && strcmp(t->nodes.items[i].role, "primary") == 0)
            return &t->nodes.items[i];
    return NULL;
}

static int shard_size(const struct ops_topo *t, int shard)
{
    int n = 0;
    for (size_t i = 0; i < t->nodes.count; i++)
        n += t->nodes.items[i].shard == shard;
    return n;
}

/* What the engine itself says it is (engine_kind_from_info()): an engine,
 * a version ("8.0.1") and its line ("8.0"). */
struct identity {
    char engine[16], version[ENGINE_VERSION_MAX], line[ENGINE_LINE_MAX];
};

static bool engine_identity(const struct ops_topo *t, const struct cluster_node *n,
                            struct identity *id, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, t->password, NODEIO_QUICK, err, errsize);
    struct engine_info *info = c != NULL ? resp_info(c, "server", err, errsize) : NULL;
    resp_close(c);
    if (info == NULL)
        return false;
    enum engine_kind kind;
    const char *v;
    bool known = engine_kind_from_info(info, &kind, &v);
    if (known) {
        snprintf(id->engine, sizeof(id->engine), "%s", engine_kind_name(kind));
        snprintf(id->version, sizeof(id->version), "%s", v);
        if (!engine_version_line(id->version, id->line))
            id->line[0] = '\0';
    } else {
        snprintf(err, errsize, "its INFO reports no engine version");
    }
    engine_info_free(info);
    return known;
}

/* A node is healthy on engine/version: it says so itself, has loaded, and
 * (a replica) is linked to its primary with its offset where the primary's
 * was a moment before. *why says what is missing; id (may be NULL) gets
 * what it said it is. */
static bool healthy_on(const struct ops_topo *t, const struct cluster_node *n, const char *engine,
                       const char *version, char *why, size_t whysize, struct identity *id)
{
    struct identity got;
    char err[256];
    struct nodeio_repl repl, prepl;

    if (n->host_lost || strcmp(n->process_state, "running") != 0) {
        snprintf(why, whysize, "its agent reports it %s",
                 n->host_lost          ? "on a lost host"
                 : n->process_state[0] ? n->process_state
                                       : "not started");
        return false;
    }
    if (!engine_identity(t, n, &got, err, sizeof(err))) {
        snprintf(why, whysize, "it does not answer: %s", err);
        return false;
    }
    if (id != NULL)
        *id = got;
    if (strcmp(got.engine, engine) != 0 || strcmp(got.line, version) != 0) {
        snprintf(why, whysize, "it runs %s %s", got.engine, got.version);
        return false;
    }
    /* A replica's offset is read after its primary's, so that reaching it
     * means the replica has everything the primary had a moment ago. */
    bool replica = strcmp(n->role, "primary") != 0;
    const struct cluster_node *p = replica ? primary_of(t, n->shard) : NULL;
    if (replica && (p == NULL ||
                    !nodeio_replication(p, t->password, NODEIO_QUICK, &prepl, err, sizeof(err)))) {
        snprintf(why, whysize, "its primary cannot be asked");
        return false;
    }
    if (!nodeio_replication(n, t->password, NODEIO_QUICK, &repl, err, sizeof(err))) {
        snprintf(why, whysize, "%s", err);
        return false;
    }
    if (repl.loading) {
        snprintf(why, whysize, "it is loading its data");
        return false;
    }
    if (!replica)
        return true;
    if (!repl.in_sync) {
        snprintf(why, whysize, "it is not linked and in sync with its primary yet");
        return false;
    }
    if (repl.offset < prepl.offset) {
        snprintf(why, whysize, "it is %lld bytes behind its primary", prepl.offset - repl.offset);
        return false;
    }
    return true;
}

static enum db_status engine_set(struct db_conn *conn, const struct op_ctx *ctx, const json_t *arg)
{
    (void)ctx;
    return store_node_set_engine(conn, json_string_value(json_object_get(arg, "node")),
                                 json_string_value(json_object_get(arg, "engine")),
                                 json_string_value(json_object_get(arg, "engine_version")));
}

/* Node n is to run context's which ("to", "from") engine: its agent
 * restarts it so. Written with the record that puts the node in flight, so
 * a cairnd that dies in between leaves the node as it was (op_defer()). */
static void set_engine(struct op_ctx *ctx, const struct cluster_node *n, const char *which)
{
    op_defer(ctx, engine_set,
             json_pack("{s:s, s:s, s:s}", "node", n->id, "engine", ctx_str(ctx, which, "engine"),
                       "engine_version", ctx_str(ctx, which, "engine_version")));
}

static long long since_s(struct op_ctx *ctx, const char *key)
{
    return time_now_s() - json_integer_value(json_object_get(ctx->context, key));
}

static void start_node(struct op_ctx *ctx, const char *node_id, const char *key)
{
    json_object_set_new(ctx->context, key, json_string(node_id));
    json_object_set_new(ctx->context, "node_since", json_integer(time_now_s()));
}

static int timeout_s(struct op_ctx *ctx)
{
    return ctx->app->cfg.upgrade_node_timeout_s;
}

/* ---- steps ----------------------------------------------------------------- */

struct precheck_call {
    const char *cluster_id, *engine, *version;
    struct problem refusal;
};

static enum db_status precheck_fn(struct db_conn *conn, void *arg)
{
    struct precheck_call *c = arg;
    problem_clear(&c->refusal);
    return upgrade_check(conn, c->cluster_id, c->engine, c->version, &c->refusal, NULL);
}

/* Things change between a request and its window: the checks again. */
static enum op_result precheck(struct op_ctx *ctx)
{
    struct precheck_call c = {
        ctx->cluster_id, ctx_str(ctx, "to", "engine"), ctx_str(ctx, "to", "engine_version"), {0}};
    if (!json_is_true(json_object_get(ctx->context, "checked"))) {
        enum db_status st = db_run(ctx->app->db, precheck_fn, &c);
        if (st == DB_REFUSED) {
            enum op_result r = op_fail(ctx, c.refusal.code, "%s", c.refusal.detail);
            problem_clear(&c.refusal);
            return r;
        }
        if (st != DB_OK)
            return op_wait(ctx, POLL_MS);
        json_object_set_new(ctx->context, "checked", json_true());
        json_object_set_new(ctx->context, "started_ms", json_integer(time_now_ms()));
    }
    return OP_NEXT;
}

static enum db_status announce(struct db_conn *conn, const struct op_ctx *ctx)
{
    return upgrade_started(conn, ctx->cluster_id, ctx->op_id, ctx->context);
}

/* A NodeUpgraded event, recorded with the step that counts the node done. */
static void node_upgraded(struct op_ctx *ctx, const char *node_id, const char *running,
                          long long seconds)
{
    char *message = xasprintf("node %s runs %s (%llds)", node_id, running, seconds);
    json_t *detail = json_pack("{s:s, s:s, s:I}", "node_id", node_id, "running_version", running,
                               "seconds", (json_int_t)seconds);
    op_event(ctx, "NodeUpgraded", "info", message, detail);
    json_decref(detail);
    free(message);
}

/* The node in flight: healthy on the new version, or rolled back. */
static enum op_result node_in_flight(struct op_ctx *ctx, struct ops_topo *t)
{
    const struct cluster_node *n = cluster_nodes_find(&t->nodes, ctx_str(ctx, NULL, "node"));
    struct identity id;
    char why[320];

    if (n == NULL) { /* replaced meanwhile: the replacement is placed with the spec's engine */
        json_object_del(ctx->context, "node");
        return op_wait(ctx, 0);
    }
    if (healthy_on(t, n, ctx_str(ctx, "to", "engine"), ctx_str(ctx, "to", "engine_version"), why,
                   sizeof(why), &id)) {
        node_upgraded(ctx, n->id, id.version, since_s(ctx, "node_since"));
        json_object_set_new(
            ctx->context, "nodes_done",
            json_integer(json_integer_value(json_object_get(ctx->context, "nodes_done")) + 1));
        json_object_del(ctx->context, "node");
        return op_wait(ctx, 0);
    }
    if (since_s(ctx, "node_since") <= timeout_s(ctx))
        return op_wait(ctx, POLL_MS);
    const struct cluster_node *p = primary_of(t, n->shard);
    if (p != NULL && p != n &&
        on(p, ctx_str(ctx, "to", "engine"), ctx_str(ctx, "to", "engine_version")))
        return op_fail(ctx, PROBLEM_NODE_UPGRADE_FAILED,
                       "node %s (%s:%d) did not come up healthy on %s %s within %d s: %s. Its "
                       "shard's primary already runs %s %s, so the upgrade cannot roll back; "
                       "the node stays on the new version for its agent to retry or for cairnd "
                       "to replace",
                       n->id, n->address, n->port, ctx_str(ctx, "to", "engine"),
                       ctx_str(ctx, "to", "engine_version"), timeout_s(ctx), why,
                       ctx_str(ctx, "to", "engine"), ctx_str(ctx, "to", "engine_version"));
    /* Roll it back: the old binary on the same data. */
    set_engine(ctx, n, "from");
    json_object_set_new(ctx->context, "cause", json_string_nocheck(why));
    json_object_del(ctx->context, "node");
    start_node(ctx, n->id, "rollback");
    return op_wait(ctx, POLL_MS);
}

static enum op_result rollback_in_flight(struct op_ctx *ctx, struct ops_topo *t)
{
    const struct cluster_node *n = cluster_nodes_find(&t->nodes, ctx_str(ctx, NULL, "rollback"));
    char why[320] = "";
    bool back =
        n == NULL || healthy_on(t, n, ctx_str(ctx, "from", "engine"),
                                ctx_str(ctx, "from", "engine_version"), why, sizeof(why), NULL);
    if (!back && since_s(ctx, "node_since") <= timeout_s(ctx))
        return op_wait(ctx, POLL_MS);
    return op_fail(ctx, PROBLEM_ENGINE_UPGRADE_ROLLED_BACK,
                   "node %s did not come up healthy on %s %s within %d s (%s); it was %s to %s %s "
                   "and the upgrade stopped, the cluster runs %s %s as before",
                   ctx_str(ctx, NULL, "rollback"), ctx_str(ctx, "to", "engine"),
                   ctx_str(ctx, "to", "engine_version"), timeout_s(ctx),
                   ctx_str(ctx, NULL, "cause"),
                   back ? "restarted" : "being restarted (not healthy yet)",
                   ctx_str(ctx, "from", "engine"), ctx_str(ctx, "from", "engine_version"),
                   ctx_str(ctx, "from", "engine"), ctx_str(ctx, "from", "engine_version"));
}

static enum op_result failover_in_flight(struct op_ctx *ctx)
{
    json_t *sub = json_object_get(ctx->context, "failover");
    enum op_result r = ops_failover_run(ctx, sub);
    if (r != OP_NEXT)
        return r;
    json_t *pauses = json_object_get(ctx->context, "write_pauses");
    if (pauses == NULL) {
        pauses = json_array();
        json_object_set_new(ctx->context, "write_pauses", pauses);
    }
    json_array_append_new(
        pauses, json_pack("{s:I, s:O, s:O, s:O}", "shard",
                          json_integer_value(json_object_get(sub, "shard")), "write_pause_ms",
                          json_object_get(sub, "write_pause_ms"), "from",
                          json_object_get(sub, "previous"), "to", json_object_get(sub, "target")));
    json_object_del(ctx->context, "failover");
    return op_wait(ctx, 0);
}

/* One step of a shard's upgrade, ctx->context being its lane: the node in
 * flight, a rollback, a failover, or the next node. *done when the shard
 * has every node on the new engine, healthy. */
static enum op_result lane_step(struct op_ctx *ctx, struct ops_topo *t, int shard, bool *done)
{
    const char *engine = ctx_str(ctx, "to", "engine"),
               *version = ctx_str(ctx, "to", "engine_version");
    char why[320];

    *done = false;
    if (json_object_get(ctx->context, "failover") != NULL)
        return failover_in_flight(ctx);
    if (json_object_get(ctx->context, "rollback") != NULL)
        return rollback_in_flight(ctx, t);
    if (json_object_get(ctx->context, "node") != NULL)
        return node_in_flight(ctx, t);

    const struct cluster_node *primary = primary_of(t, shard), *next = NULL;
    /* The replicas first; one that already has the new engine as its
     * desired one but was never seen healthy (a cairnd that crashed right
     * after asking) is waited for again. */
    for (size_t i = 0; i < t->nodes.count && next == NULL; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        if (n->shard != shard || n == primary)
            continue;
        if (!on(n, engine, version) || !healthy_on(t, n, engine, version, why, sizeof(why), NULL))
            next = n;
    }
    if (next == NULL && primary != NULL && !on(primary, engine, version)) {
        if (shard_size(t, shard) > 1) {
            json_object_set_new(ctx->context, "failover",
                                json_pack("{s:i, s:s, s:s}", "shard", shard, "engine", engine,
                                          "engine_version", version));
            return op_wait(ctx, 0);
        }
        next = primary; /* alone: a restart from persistence */
    }
    if (next == NULL) {
        *done = true;
        return OP_NEXT;
    }
    if (!on(next, engine, version))
        set_engine(ctx, next, "to");
    start_node(ctx, next->id, "node");
    return op_wait(ctx, POLL_MS);
}

/* What a finished lane adds to the operation's totals. */
static void lane_totals(json_t *into, const json_t *lane)
{
    json_object_set_new(into, "nodes_done",
                        json_integer(json_integer_value(json_object_get(into, "nodes_done")) +
                                     json_integer_value(json_object_get(lane, "nodes_done"))));
    json_t *pauses = json_object_get(into, "write_pauses");
    if (pauses == NULL) {
        pauses = json_array();
        json_object_set_new(into, "write_pauses", pauses);
    }
    json_array_extend(pauses, json_object_get(lane, "write_pauses"));
}

/* Shards in lanes, up to --upgrade-parallel-shards at once (1: one shard
 * after the other), each lane one node at a time: its replicas, a
 * failover, its old primary. context.lanes holds a lane per shard in
 * progress by its index; context.next_shard the next to start. */
static enum op_result upgrade_shards(struct op_ctx *ctx)
{
    json_t *outer = ctx->context, *lanes = json_object_get(outer, "lanes");
    struct ops_topo t;

    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    if (lanes == NULL) {
        lanes = json_object();
        json_object_set_new(outer, "lanes", lanes);
    }
    int last = -1, next = (int)json_integer_value(json_object_get(outer, "next_shard"));
    for (size_t i = 0; i < t.nodes.count; i++)
        last = t.nodes.items[i].shard > last ? t.nodes.items[i].shard : last;
    while ((int)json_object_size(lanes) < ctx->app->cfg.upgrade_parallel_shards && next <= last) {
        char key[16];
        snprintf(key, sizeof(key), "%d", next++);
        json_object_set_new(lanes, key,
                            json_pack("{s:O, s:O}", "from", json_object_get(outer, "from"), "to",
                                      json_object_get(outer, "to")));
        json_object_set_new(outer, "next_shard", json_integer(next));
    }

    enum op_result r = OP_NEXT;
    int wait = -1;
    const char *key;
    json_t *lane, *tmp;
    json_object_foreach_safe(lanes, tmp, key, lane)
    {
        bool done = false;
        ctx->context = lane;
        enum op_result lr = lane_step(ctx, &t, atoi(key), &done);
        ctx->context = outer;
        if (lr == OP_FAILED) {
            r = OP_FAILED;
            break;
        }
        if (done) {
            lane_totals(outer, lane);
            json_object_del(lanes, key);
            wait = 0; /* the next shard can start */
        } else if (lr == OP_WAIT && (wait < 0 || ctx->wait_ms < wait)) {
            wait = ctx->wait_ms;
        }
    }
    ops_topo_free(&t);
    if (r == OP_FAILED)
        return r;
    if (json_object_size(lanes) == 0 && next > last)
        return OP_NEXT;
    return op_wait(ctx, wait < 0 ? 0 : wait);
}

static enum op_result measure(struct op_ctx *ctx)
{
    long long took =
        time_now_ms() - json_integer_value(json_object_get(ctx->context, "started_ms"));
    json_object_set_new(ctx->context, "duration_ms", json_integer(took));
    return OP_NEXT;
}

static enum db_status finish(struct db_conn *conn, const struct op_ctx *ctx)
{
    return upgrade_done(conn, ctx->cluster_id, ctx->op_id, ctx->context);
}

/* Nothing upgraded yet (a failed check, the first node rolled back): the
 * spec goes back to what runs, so the cluster is as it was. */
static enum db_status failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    json_int_t upgraded = json_integer_value(json_object_get(ctx->context, "nodes_done"));
    const char *key;
    json_t *lane;
    json_object_foreach (json_object_get(ctx->context, "lanes"), key, lane) {
        upgraded += json_integer_value(json_object_get(lane, "nodes_done"));
    }
    return upgrade_failed(conn, ctx->cluster_id, ctx->op_id, ctx->code, ctx->error, ctx->context,
                          upgraded == 0);
}

static const struct op_step upgrade_steps[] = {
    {"precheck", precheck, announce},
    {"upgrade_shards", upgrade_shards},
    {"finish", measure, finish},
};

const struct op_kind op_cluster_upgrade_engine = {
    "upgrade_engine", upgrade_steps, sizeof(upgrade_steps) / sizeof(upgrade_steps[0]), failed};

/* ---- the change behind PATCH engine / engine_version (changes.h) ---------------- */

static json_t *engine_of(const json_t *spec)
{
    return json_pack("{s:O, s:O}", "engine", json_object_get(spec, "engine"), "engine_version",
                     json_object_get(spec, "engine_version"));
}

/* The catalog's path, then the cluster's state. */
static enum db_status upgrade_precheck(struct db_conn *conn, struct change_request *r,
                                       struct problem *p)
{
    const char *from_engine = json_string_value(json_object_get(r->stored, "engine"));
    const char *from_version = json_string_value(json_object_get(r->stored, "engine_version"));
    const char *to_engine = json_string_value(json_object_get(r->next, "engine"));
    const char *to_version = json_string_value(json_object_get(r->next, "engine_version"));
    char allowed[256];
    bool ok = false;
    json_t *downtime = NULL;
    enum db_status st = store_upgrade_path(conn, from_engine, from_version, to_engine, to_version,
                                           &ok, allowed, sizeof(allowed));
    if (st != DB_OK)
        return st;
    if (!ok) {
        char *msg =
            xasprintf("cannot go from %s %s to %s %s: %s%s", from_engine, from_version, to_engine,
                      to_version, allowed[0] ? "the upgrades allowed are to " : "it is the newest",
                      allowed[0] ? allowed : "; engines are never downgraded");
        problem_field(p, "engine_version", msg);
        free(msg);
        return DB_REFUSED;
    }
    st = upgrade_check(conn, r->cluster_id, to_engine, to_version, p, &downtime);
    if (downtime != NULL)
        json_object_set_new(r->facts, "downtime", downtime);
    return st;
}

static enum db_status upgrade_request(struct db_conn *conn, struct change_request *r,
                                      struct problem *p)
{
    (void)p;
    json_t *from = engine_of(r->stored), *to = engine_of(r->next);
    enum db_status st =
        upgrade_queue(r->app, conn, r->cluster_id, from, to, r->apply_now,
                      json_string_value(json_object_get(r->next, "maintenance_window")),
                      json_object_get(r->facts, "downtime"), r->op_id);
    json_decref(from);
    json_decref(to);
    r->poke = r->apply_now;
    return st;
}

const struct change_op change_op_upgrade_engine = {
    .kind = &op_cluster_upgrade_engine,
    .what = "an engine upgrade",
    .alone = true,
    .accepted = true,
    .precheck = upgrade_precheck,
    .queue = upgrade_request,
};
