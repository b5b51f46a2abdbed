/* ops_reshard.c -- online shard scaling (scale_shards, a PATCH of
 * num_shards) and rebalancing (rebalance, POST /v1/clusters/{id}/rebalance):
 * hash slots move between primaries under traffic, each slot by the
 * engines' own protocol (engine/slot_move.h), several at once, each
 * journalled (store_scaling.c) before the engines are touched.
 *
 * Scaling out places the new shards in the request's transaction, so no
 * room answers at once; the operation forms them with the create's own
 * steps, then moves slots until each shard carries a fair share (reshard.h,
 * weighed as slot_view.h says). Scaling in drains the leaving shards -- the
 * highest-numbered ones -- onto the others, after checking at the request
 * that the others can hold their data with the reserve; then every node
 * that stays forgets their nodes and their agents stop them.
 *
 * Resuming. A runner that dies mid-move leaves the journal saying which
 * slots were begun; the next runner moves those first, and a move is safe
 * to run again from any point (slot_move.h). Before planning, moves some
 * earlier run or another tool left open on the engines are finished the
 * same way, so no slot stays MIGRATING or IMPORTING.
 *
 * Cancelling (POST /v1/operations/{id}/cancel) takes effect between two
 * runs of the move step, so at a slot boundary: a cluster scaling out keeps
 * its new shards with the slots they got, one scaling in keeps every shard
 * (the spec's num_shards goes back), and a rebalance stops where it is. */
#include "ops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "clusters.h"
#include "engine_config.h"
#include "log.h"
#include "nodeio.h"
#include "reshard.h"
#include "resp.h"
#include "scheduler.h"
#include "sizing.h"
#include "slot_move.h"
#include "slot_view.h"
#include "store.h"
#include "strbuf.h"
#include "timeutil.h"
#include "topology.h"
#include "xalloc.h"

/* Engine work per run of the move step: well inside the runner's lease, so
 * progress is recorded (and a cancel seen) about once a second. */
#define MOVE_BUDGET_US (1000 * 1000)
#define MOVES_PER_RUN  1024
/* Keys per MIGRATE: MIGRATE blocks the source while the batch travels, so a
 * batch is kept to about this many bytes for clients' latency. */
#define BATCH_BYTES        (64 * 1024)
#define BATCH_KEYS_MAX     500
#define MIGRATE_TIMEOUT_MS 2000
#define BIG_KEY_TIMEOUT_MS 60000
#define MOVE_RETRY_LIMIT_S 60
/* A shard within share * (1 + this) is left alone when scaling; a
 * rebalance takes the request's (REBALANCE_TOLERANCE_PERCENT by default). */
#define SCALE_TOLERANCE 0.02

/* ---- planning ----------------------------------------------------------------- */

/* Finish the moves the engines show open; false with err when one fails. */
static bool finish_open_moves(struct op_ctx *ctx, struct slot_view *v, char *err, size_t errsize);

/* Which shards leave: scale_shards's context has from and to, and shards
 * to and up leave; a rebalance keeps the shards it has. */
static void leaving_shards(const struct op_ctx *ctx, int nshards, bool *leaving)
{
    int to = json_is_integer(json_object_get(ctx->context, "to")) ? (int)ops_context_int(ctx, "to")
                                                                  : nshards;
    for (int s = 0; s < nshards; s++)
        leaving[s] = s >= to;
}

static enum db_status journal_plan(struct db_conn *conn, const struct op_ctx *ctx,
                                   const json_t *moves)
{
    char *text = json_dumps(moves, JSON_COMPACT);
    enum db_status st = store_slot_moves_plan(conn, ctx->op_id, text);
    free(text);
    return st;
}

/* Read the slots live, finish open moves, plan, and journal the plan with
 * the step's record. Planned once: a resumed runner finds it journalled. */
static enum op_result plan_moves(struct op_ctx *ctx)
{
    struct slot_view v;
    struct reshard_plan plan;
    char err[512];

    if (json_is_integer(json_object_get(ctx->context, "slots_planned")))
        return OP_NEXT;
    if (!slot_view_load(ctx->app, ctx->cluster_id, true, &v, err, sizeof(err))) {
        slot_view_free(&v);
        return ops_wait_within(ctx, "plan_since", OPS_FORM_WAIT_LIMIT_S, 500,
                               PROBLEM_CLUSTER_UNHEALTHY, "the slots could not be read: %s", err);
    }
    if (v.nopen > 0) {
        bool ok = finish_open_moves(ctx, &v, err, sizeof(err));
        slot_view_free(&v);
        if (!ok)
            return ops_wait_within(ctx, "plan_since", OPS_FORM_WAIT_LIMIT_S, 500,
                                   PROBLEM_SLOT_MIGRATION_FAILED,
                                   "a slot left half moved could not be finished: %s", err);
        return op_wait(ctx, 0); /* read them again, settled */
    }
    bool *leaving = xcalloc((size_t)v.nshards, sizeof(bool));
    leaving_shards(ctx, v.nshards, leaving);
    double tolerance = json_is_number(json_object_get(ctx->context, "tolerance"))
                           ? json_number_value(json_object_get(ctx->context, "tolerance"))
                           : SCALE_TOLERANCE;
    struct reshard_input in = {v.nshards, v.owner, v.weight, leaving, tolerance};
    bool planned = reshard_plan(&in, &plan);
    free(leaving);
    if (!planned) {
        slot_view_free(&v);
        return op_fail(ctx, PROBLEM_CLUSTER_UNHEALTHY,
                       "no plan: some slot is served by no shard (CLUSTER NODES of the "
                       "primaries), or no shard would stay");
    }
    json_t *moves = slot_view_moves_json(&v, &plan);
    op_defer(ctx, journal_plan, moves);
    json_object_set_new(ctx->context, "slots_planned", json_integer((json_int_t)plan.nmoves));
    json_object_set_new(ctx->context, "load_measure", json_string(v.load_measure));
    json_object_set_new(ctx->context, "slots_moved", json_integer(0));
    log_info("slot moves planned", "operation=%s cluster=%s slots=%zu load_measure=%s", ctx->op_id,
             ctx->cluster_id, plan.nmoves, v.load_measure);
    reshard_plan_free(&plan);
    slot_view_free(&v);
    return OP_NEXT;
}

/* ---- moving ------------------------------------------------------------------- */

/* The connections of one run of the move step, one per primary (and one
 * more, with a long timeout, for big keys), opened as moves need them. */
struct movers {
    struct slot_view *v;
    struct resp_conn **conn, **big;
    struct resp_options *addr;
};

static struct resp_conn *mover_conn(struct movers *m, int s, bool big, char *err, size_t errsize)
{
    struct resp_conn **slot = big ? &m->big[s] : &m->conn[s];
    if (*slot == NULL) {
        struct nodeio_wait wait = NODEIO_PATIENT;
        if (big)
            wait.command_ms = BIG_KEY_TIMEOUT_MS + 5000;
        *slot = nodeio_connect(m->v->shards[s].primary, m->v->password, wait, err, errsize);
    }
    return *slot;
}

static void movers_open(struct movers *m, struct slot_view *v)
{
    m->v = v;
    m->conn = xcalloc((size_t)v->nshards + 1, sizeof(*m->conn));
    m->big = xcalloc((size_t)v->nshards + 1, sizeof(*m->big));
    m->addr = xcalloc((size_t)v->nshards + 1, sizeof(*m->addr));
    for (int s = 0; s < v->nshards; s++) {
        m->addr[s].host = v->shards[s].primary->address;
        m->addr[s].port = v->shards[s].primary->port;
        m->addr[s].username = ENGINE_ADMIN_USER;
        m->addr[s].password = v->password;
    }
}

static void movers_close(struct movers *m)
{
    for (int s = 0; m->v != NULL && s < m->v->nshards; s++) {
        resp_close(m->conn[s]);
        resp_close(m->big[s]);
    }
    free(m->conn);
    free(m->big);
    free(m->addr);
}

/* Keys per MIGRATE for the source's data: about BATCH_BYTES a batch. */
static int batch_keys(const struct slot_shard *from)
{
    long long per_key = from->keys > 0 ? from->data_bytes / from->keys : 0;
    long long n = per_key > 0 ? BATCH_BYTES / per_key : BATCH_KEYS_MAX;
    return n < 1 ? 1 : n > BATCH_KEYS_MAX ? BATCH_KEYS_MAX : (int)n;
}

/* Move one slot between two shards' primaries; false with err. */
static bool move_one(struct movers *m, int slot, int from, int to, long long *keys, char *err,
                     size_t errsize)
{
    if (from < 0 || to < 0 || from >= m->v->nshards || to >= m->v->nshards) {
        snprintf(err, errsize, "slot %d: shard %d or %d is gone", slot, from + 1, to + 1);
        return false;
    }
    struct resp_conn *src = mover_conn(m, from, false, err, errsize);
    struct resp_conn *dst = src != NULL ? mover_conn(m, to, false, err, errsize) : NULL;
    if (dst == NULL)
        return false;
    struct engine_slot_end a = {src, &m->addr[from], m->v->shards[from].id};
    struct engine_slot_end b = {dst, &m->addr[to], m->v->shards[to].id};
    struct engine_slot_move_opts opts = {batch_keys(&m->v->shards[from]), MIGRATE_TIMEOUT_MS,
                                         BIG_KEY_TIMEOUT_MS};
    struct engine_slot_moved moved = {0};
    char ignored[256];
    struct resp_conn *big = mover_conn(m, from, true, ignored, sizeof(ignored));
    bool ok = engine_slot_move(&a, &b, big, slot, &opts, &moved, err, errsize);
    *keys = moved.keys;
    if (!ok && resp_last_error(src) != RESP_ERR_REPLY) {
        resp_close(src); /* broken: the next move opens it again */
        m->conn[from] = NULL;
    }
    if (!ok && resp_last_error(dst) != RESP_ERR_REPLY) {
        resp_close(dst);
        m->conn[to] = NULL;
    }
    return ok;
}

static bool finish_open_moves(struct op_ctx *ctx, struct slot_view *v, char *err, size_t errsize)
{
    struct movers m;
    bool ok = true;
    movers_open(&m, v);
    for (size_t i = 0; i < v->nopen && ok; i++) {
        long long keys = 0;
        ok = move_one(&m, v->open[i].slot, v->open[i].from, v->open[i].to, &keys, err, errsize);
        if (ok)
            log_info("finished a slot left half moved",
                     "operation=%s slot=%d from=%d to=%d keys=%lld", ctx->op_id, v->open[i].slot,
                     v->open[i].from + 1, v->open[i].to + 1, keys);
    }
    movers_close(&m);
    return ok;
}

static enum db_status journal_begin(struct db_conn *conn, void *arg)
{
    const char *const *a = arg;
    return store_slot_moves_begin(conn, a[0], a[1]);
}

static enum db_status journal_done(struct db_conn *conn, const struct op_ctx *ctx,
                                   const json_t *done)
{
    char *text = json_dumps(done, JSON_COMPACT);
    enum db_status st = store_slot_moves_done(conn, ctx->op_id, text);
    free(text);
    return st;
}

/* A shard's slots as its primary now says, for the store. */
static enum db_status shard_slots(struct db_conn *conn, const struct op_ctx *ctx, const json_t *arg)
{
    return store_shard_set_slots(conn, ctx->cluster_id,
                                 (int)json_integer_value(json_object_get(arg, "shard")),
                                 json_string_value(json_object_get(arg, "ranges")));
}

/* Record the slots of the shards a run touched, as their primaries say. */
static void note_shard_slots(struct op_ctx *ctx, struct movers *m, const bool *touched)
{
    char err[256];
    for (int s = 0; s < m->v->nshards; s++) {
        struct engine_cluster_nodes view = {0};
        struct resp_conn *c = touched[s] ? mover_conn(m, s, false, err, sizeof(err)) : NULL;
        if (c == NULL || !engine_cluster_nodes(c, &view, err, sizeof(err)))
            continue;
        const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
        struct strbuf ranges; /* an int4range[] literal: {"[0,5460]","[5470,5470]"} */
        strbuf_init(&ranges, 64);
        strbuf_printf(&ranges, "{");
        for (size_t r = 0; me != NULL && r < me->nranges; r++)
            strbuf_printf(&ranges, "%s\"[%d,%d]\"", r > 0 ? "," : "", me->ranges[r].start,
                          me->ranges[r].end);
        strbuf_printf(&ranges, "}");
        op_defer(ctx, shard_slots, json_pack("{s:i, s:s}", "shard", s, "ranges", ranges.p));
        free(ranges.p);
        engine_cluster_nodes_free(&view);
    }
}

struct cancel_call {
    const char *op_id;
    bool asked;
};

static enum db_status cancel_fn(struct db_conn *conn, void *arg)
{
    struct cancel_call *c = arg;
    return store_operation_cancel_requested(conn, c->op_id, &c->asked);
}

static bool cancel_asked(struct op_ctx *ctx)
{
    struct cancel_call c = {ctx->op_id, false};
    return db_run(ctx->app->db, cancel_fn, &c) == DB_OK && c.asked;
}

/* Progress: the moves are the bulk of the work, from 30 % to 95 %. */
static void note_progress(struct op_ctx *ctx)
{
    long long planned = ops_context_int(ctx, "slots_planned");
    long long moved = ops_context_int(ctx, "slots_moved");
    ctx->progress = planned > 0 ? (int)(30 + 65 * moved / planned) : 30;
}

struct next_call {
    const char *op_id;
    struct store_slot_move *moves;
    size_t n;
};

static enum db_status next_fn(struct db_conn *conn, void *arg)
{
    struct next_call *c = arg;
    return store_slot_moves_next(conn, c->op_id, c->moves, MOVES_PER_RUN, &c->n);
}

/* Mark the moves not begun yet as begun, committed before any is made. */
static bool begin_moves(struct op_ctx *ctx, const struct next_call *next)
{
    json_t *slots = json_array();
    for (size_t i = 0; i < next->n; i++) {
        if (!next->moves[i].begun)
            json_array_append_new(slots, json_integer(next->moves[i].slot));
    }
    char *text = json_dumps(slots, JSON_COMPACT);
    const char *args[2] = {ctx->op_id, text};
    bool ok = json_array_size(slots) == 0 ||
              db_tx(ctx->app->db, DB_READ_COMMITTED, journal_begin, (void *)args) == DB_OK;
    free(text);
    json_decref(slots);
    return ok;
}

/* A move that keeps failing: its slot is put back as it was where the
 * target holds none of its keys yet (SETSLOT STABLE on both ends), so the
 * cluster is left as consistent as before; otherwise it stays open for the
 * next plan to finish (plan_moves() does, before anything else). */
static void give_up_slot(struct slot_view *v, const struct store_slot_move *mv)
{
    char err[256];
    struct resp_conn *dst =
        nodeio_connect(v->shards[mv->to].primary, v->password, NODEIO_PATIENT, err, sizeof(err));
    long long keys = -1;
    if (dst != NULL && engine_cluster_countkeysinslot(dst, mv->slot, &keys, err, sizeof(err)) &&
        keys == 0) {
        struct resp_conn *src = nodeio_connect(v->shards[mv->from].primary, v->password,
                                               NODEIO_PATIENT, err, sizeof(err));
        (void)engine_cluster_setslot(dst, mv->slot, ENGINE_SETSLOT_STABLE, NULL, err, sizeof(err));
        if (src != NULL)
            (void)engine_cluster_setslot(src, mv->slot, ENGINE_SETSLOT_STABLE, NULL, err,
                                         sizeof(err));
        resp_close(src);
    }
    resp_close(dst);
}

/* Slots move in parallel, each worker on connections of its own: most of
 * a move is waiting -- Valkey 8 holds each CLUSTER SETSLOT until the
 * node's replicas have it -- and the moves of different slots do not touch
 * each other. Each SETSLOT also makes the engine save its cluster config
 * in its main thread, which clients wait behind: on two vCPUs, 8 workers
 * move as fast as 16 (tests/bench/reshard, 250,000 keys: 16.6 s either
 * way) with a client p99 of 10.6 ms instead of 17 ms, and 4 are slower. */
#define MOVE_WORKERS 8

struct move_work {
    struct slot_view *v;
    const struct store_slot_move *moves;
    size_t n, next;
    long long deadline_us;
    pthread_mutex_t lock;
    bool *touched;
    json_t *done;
    const struct store_slot_move *failed;
    char err[512];
};

static void *move_worker(void *arg)
{
    struct move_work *w = arg;
    struct movers m;
    char err[512];

    movers_open(&m, w->v);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        bool stop = w->failed != NULL || w->next >= w->n || time_mono_us() >= w->deadline_us;
        const struct store_slot_move *mv = stop ? NULL : &w->moves[w->next++];
        pthread_mutex_unlock(&w->lock);
        if (mv == NULL)
            break;
        long long keys = 0;
        bool ok = move_one(&m, mv->slot, mv->from, mv->to, &keys, err, sizeof(err));
        pthread_mutex_lock(&w->lock);
        if (ok || keys > 0)
            w->touched[mv->from] = w->touched[mv->to] = true;
        if (ok) {
            json_array_append_new(
                w->done, json_pack("{s:i, s:I}", "slot", mv->slot, "keys", (json_int_t)keys));
        } else if (w->failed == NULL) {
            w->failed = mv;
            snprintf(w->err, sizeof(w->err), "%s", err);
        }
        pthread_mutex_unlock(&w->lock);
    }
    movers_close(&m);
    return NULL;
}

/* Move up to next->n slots for about MOVE_BUDGET_US; w->done and w->failed
 * say what came of it. */
static void move_some(struct move_work *w)
{
    pthread_t threads[MOVE_WORKERS];
    size_t nthreads = w->n < MOVE_WORKERS ? w->n : MOVE_WORKERS, started = 0;

    pthread_mutex_init(&w->lock, NULL);
    w->deadline_us = time_mono_us() + MOVE_BUDGET_US;
    for (size_t i = 0; i < nthreads; i++)
        started += pthread_create(&threads[started], NULL, move_worker, w) == 0;
    if (started == 0)
        move_worker(w); /* no thread to be had: this one moves them */
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&w->lock);
}

/* A primary that loses its last slot becomes a replica of the node that
 * took it (cluster-allow-replica-migration, on by default): a leaving
 * shard's primary would turn replica under the last move, and be resynced
 * for nothing. Turned off on the leaving shards' nodes before each run of
 * moves (an engine restarted meanwhile has it from its file again). */
static void keep_leaving_primaries(const struct op_ctx *ctx, const struct slot_view *v)
{
    int to = (int)ops_context_int(ctx, "to");
    char err[256];
    if (!json_is_integer(json_object_get(ctx->context, "to")))
        return; /* a rebalance: nobody leaves */
    for (size_t i = 0; i < v->nodes.count; i++) {
        const struct cluster_node *n = &v->nodes.items[i];
        if (n->shard < to || n->port <= 0)
            continue;
        struct resp_conn *c = nodeio_connect(n, v->password, NODEIO_PATIENT, err, sizeof(err));
        if (c == NULL ||
            !engine_config_set(c, "cluster-allow-replica-migration", "no", err, sizeof(err)))
            log_warn("could not keep a leaving shard's node from migrating",
                     "operation=%s node=%s error=\"%s\"", ctx->op_id, n->id, err);
        resp_close(c);
    }
}

/* Move the journalled slots, the begun ones first, for about
 * MOVE_BUDGET_US a run; each slot's end is recorded with the run. */
static enum op_result move_slots(struct op_ctx *ctx)
{
    struct next_call next = {ctx->op_id, xcalloc(MOVES_PER_RUN, sizeof(struct store_slot_move)), 0};
    struct slot_view v;
    char err[512] = "";
    enum op_result res;

    note_progress(ctx);
    if (cancel_asked(ctx)) {
        free(next.moves);
        return OP_CANCELLED;
    }
    if (db_run(ctx->app->db, next_fn, &next) != DB_OK || !begin_moves(ctx, &next)) {
        free(next.moves);
        return op_wait(ctx, OPS_POLL_MS);
    }
    if (next.n == 0) {
        free(next.moves);
        return OP_NEXT;
    }
    if (!slot_view_load(ctx->app, ctx->cluster_id, false, &v, err, sizeof(err))) {
        slot_view_free(&v);
        free(next.moves);
        return ops_wait_within(ctx, "move_failing_since", MOVE_RETRY_LIMIT_S, 500,
                               PROBLEM_SLOT_MIGRATION_FAILED, "the slots could not be read: %s",
                               err);
    }
    keep_leaving_primaries(ctx, &v);
    struct move_work w = {.v = &v,
                          .moves = next.moves,
                          .n = next.n,
                          .touched = xcalloc((size_t)v.nshards + 1, sizeof(bool)),
                          .done = json_array()};
    move_some(&w);
    struct movers m;
    movers_open(&m, &v);
    note_shard_slots(ctx, &m, w.touched);
    movers_close(&m);
    json_object_set_new(
        ctx->context, "slots_moved",
        json_integer(ops_context_int(ctx, "slots_moved") + (json_int_t)json_array_size(w.done)));
    if (json_array_size(w.done) > 0)
        op_defer(ctx, journal_done, w.done);
    else
        json_decref(w.done);
    note_progress(ctx);
    if (w.failed == NULL) {
        json_object_del(ctx->context, "move_failing_since");
        res = op_wait(ctx, 0);
    } else {
        char a[16], b[16];
        slot_view_shard_name(w.failed->from, a);
        slot_view_shard_name(w.failed->to, b);
        log_warn("slot move failed; trying again",
                 "operation=%s slot=%d from=%s to=%s error=\"%s\"", ctx->op_id, w.failed->slot, a,
                 b, w.err);
        res = ops_wait_within(
            ctx, "move_failing_since", MOVE_RETRY_LIMIT_S, 500, PROBLEM_SLOT_MIGRATION_FAILED,
            "slot %d could not be moved from shard %s to shard %s within %d s: %s", w.failed->slot,
            a, b, MOVE_RETRY_LIMIT_S, w.err);
        if (res == OP_FAILED)
            give_up_slot(&v, w.failed);
    }
    free(w.touched);
    slot_view_free(&v);
    free(next.moves);
    return res;
}

/* ---- forming the new shards ------------------------------------------------------ */

static bool adds_shards(const struct op_ctx *ctx)
{
    return ops_context_int(ctx, "to") > ops_context_int(ctx, "from");
}

static enum op_result form_wait_engines(struct op_ctx *ctx)
{
    return adds_shards(ctx) ? ops_wait_engines(ctx) : OP_NEXT;
}

static enum op_result form_meet(struct op_ctx *ctx)
{
    return adds_shards(ctx) ? ops_meet(ctx) : OP_NEXT;
}

static enum op_result form_replicate(struct op_ctx *ctx)
{
    return adds_shards(ctx) ? ops_replicate(ctx) : OP_NEXT;
}

static enum op_result form_wait_ready(struct op_ctx *ctx)
{
    return adds_shards(ctx) ? ops_wait_ready(ctx) : OP_NEXT;
}

/* An event of type for each shard first .. last - 1: "shard 0004 " and
 * what became of it, and the shard in detail. */
static enum db_status shard_events(struct db_conn *conn, const struct op_ctx *ctx, int first,
                                   int last, const char *type, const char *what)
{
    enum db_status st = DB_OK;
    for (int s = first; s < last && st == DB_OK; s++) {
        char name[16], detail[64];
        slot_view_shard_name(s, name);
        char *text = xasprintf("shard %s %s", name, what);
        snprintf(detail, sizeof(detail), "{\"shard\": \"%s\"}", name);
        st = ops_event(conn, ctx, type, "info", text, detail);
        free(text);
    }
    return st;
}

/* A ShardAdded event for each new shard, formed and empty. */
static enum db_status shards_added(struct db_conn *conn, const struct op_ctx *ctx)
{
    return shard_events(conn, ctx, (int)ops_context_int(ctx, "from"),
                        (int)ops_context_int(ctx, "to"), "ShardAdded",
                        "is formed; slots move to it next");
}

/* ---- removing the shards that left ----------------------------------------------- */

/* Scaling in: the leaving shards hold no slot now. Every node that stays
 * forgets their nodes (CLUSTER FORGET bans a node for a minute, longer than
 * its agent takes to stop it once the step's commit marks it deleted). */
static enum op_result forget_leaving(struct op_ctx *ctx)
{
    int to = (int)ops_context_int(ctx, "to");
    struct ops_topo t;
    char err[256];
    bool known = false, ok = true;

    if (to >= ops_context_int(ctx, "from"))
        return OP_NEXT;
    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, OPS_POLL_MS);
    for (size_t i = 0; i < t.nodes.count && ok; i++) {
        const struct cluster_node *n = &t.nodes.items[i];
        struct engine_cluster_nodes view = {0};
        if (n->shard >= to || n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        if (!nodeio_cluster_view(n, t.password, NODEIO_PATIENT, &view, err, sizeof(err))) {
            ok = false;
            break;
        }
        struct resp_conn *c = nodeio_connect(n, t.password, NODEIO_PATIENT, err, sizeof(err));
        for (size_t k = 0; c != NULL && k < view.count; k++) {
            const struct engine_cluster_node *v = &view.nodes[k];
            for (size_t j = 0; j < t.nodes.count; j++) {
                const struct cluster_node *gone = &t.nodes.items[j];
                if (gone->shard < to || gone->port != v->port || strcmp(gone->address, v->ip) != 0)
                    continue;
                known = true;
                /* Its last slots' new owners may not have reached this node
                 * by gossip yet; forgetting it now would leave them unserved
                 * here until they do. */
                if (v->nranges > 0)
                    snprintf(err, sizeof(err), "node %s still shows node %s serving slots", n->id,
                             gone->id);
                else
                    (void)engine_cluster_forget(c, v->id, err, sizeof(err));
            }
        }
        ok = c != NULL;
        resp_close(c);
        engine_cluster_nodes_free(&view);
    }
    ops_topo_free(&t);
    if (ok && !known)
        return OP_NEXT; /* no node that stays knows them */
    return ops_wait_within(ctx, "forget_since", OPS_FORM_WAIT_LIMIT_S, 100, PROBLEM_FORGET_BLOCKED,
                           "the leaving shards' nodes were still known after %d s: %s",
                           OPS_FORM_WAIT_LIMIT_S, err);
}

/* Their nodes are deleted (their agents stop them), with a ShardRemoved
 * event each. */
static enum db_status shards_removed(struct db_conn *conn, const struct op_ctx *ctx)
{
    int from = (int)ops_context_int(ctx, "from"), to = (int)ops_context_int(ctx, "to");
    if (to >= from)
        return DB_OK;
    enum db_status st = store_shards_remove(conn, ctx->cluster_id, to);
    if (st != DB_OK)
        return st;
    return shard_events(conn, ctx, to, from, "ShardRemoved",
                        "gave all its slots away and is removed");
}

/* ---- ends ------------------------------------------------------------------------ */

/* The SlotsMigrated event: what moved, from the journal. */
static enum db_status slots_migrated(struct db_conn *conn, const struct op_ctx *ctx)
{
    json_t *summary = NULL;
    enum db_status st = store_slot_moves_summary(conn, ctx->op_id, &summary);
    if (st != DB_OK)
        return st;
    json_object_set_new(summary, "load_measure",
                        json_string(ops_context_str(ctx, "load_measure") != NULL
                                        ? ops_context_str(ctx, "load_measure")
                                        : "slot-count"));
    char *message =
        xasprintf("%lld slots moved with %lld keys in %.1f s",
                  (long long)json_integer_value(json_object_get(summary, "slots_moved")),
                  (long long)json_integer_value(json_object_get(summary, "keys_moved")),
                  json_number_value(json_object_get(summary, "seconds")));
    char *detail = json_dumps(summary, JSON_COMPACT);
    st = ops_event(conn, ctx, "SlotsMigrated", "info", message, detail);
    free(detail);
    free(message);
    json_decref(summary);
    return st;
}

static enum db_status scale_done(struct db_conn *conn, const struct op_ctx *ctx)
{
    int from = (int)ops_context_int(ctx, "from"), to = (int)ops_context_int(ctx, "to");
    enum db_status st = slots_migrated(conn, ctx);
    if (st == DB_OK)
        st = store_cluster_change_done(conn, ctx->cluster_id, "num_shards");
    if (st != DB_OK)
        return st;
    char message[96], detail[64];
    snprintf(message, sizeof(message), "the cluster has %d shards (it had %d)", to, from);
    snprintf(detail, sizeof(detail), "{\"from\": %d, \"to\": %d}", from, to);
    return ops_event(conn, ctx, "ClusterScaled", "info", message, detail);
}

/* The moves ended before their end (cancelled, or failed): SlotsMigrated
 * says what did move, and the cluster is available. A cluster scaling in
 * keeps every shard, and its spec says so again; one scaling out keeps the
 * shards it placed (a rebalance fills them, a PATCH back removes them). */
static enum db_status moves_stopped(struct db_conn *conn, const struct op_ctx *ctx)
{
    bool scaling = json_is_integer(json_object_get(ctx->context, "to"));
    int from = (int)ops_context_int(ctx, "from"), to = (int)ops_context_int(ctx, "to");
    enum db_status st = DB_OK;
    if (scaling && to < from) {
        char value[16];
        snprintf(value, sizeof(value), "%d", from);
        st = store_cluster_spec_put(conn, ctx->cluster_id, "num_shards", value);
    }
    if (st == DB_OK && json_is_integer(json_object_get(ctx->context, "slots_planned")))
        st = slots_migrated(conn, ctx);
    if (st == DB_OK)
        st = store_cluster_change_done(conn, ctx->cluster_id, scaling ? "num_shards" : "rebalance");
    return st;
}

static enum db_status moves_cancelled(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = moves_stopped(conn, ctx);
    if (st != DB_OK)
        return st;
    return ops_event(conn, ctx, "OperationCancelled", "warning",
                     "the slot moves stopped at a slot boundary, as asked; every slot is served",
                     NULL);
}

static enum db_status moves_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = moves_stopped(conn, ctx);
    return st == DB_OK ? ops_failed_event(conn, ctx, NULL) : st;
}

static enum db_status rebalance_done(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = slots_migrated(conn, ctx);
    if (st == DB_OK)
        st = store_cluster_change_done(conn, ctx->cluster_id, "rebalance");
    if (st != DB_OK)
        return st;
    return ops_event(conn, ctx, "ClusterRebalanced", "info",
                     "the shards carry fair shares of the slots' load", NULL);
}

static const struct op_step scale_steps[] = {
    {"wait_engines", form_wait_engines},
    {"meet", form_meet},
    {"replicate", form_replicate},
    {"wait_ready", form_wait_ready, shards_added},
    {"plan", plan_moves},
    {"move_slots", move_slots},
    {"forget_leaving", forget_leaving, shards_removed},
    {"finish", NULL, scale_done},
};

const struct op_kind op_cluster_scale_shards = {
    .name = "scale_shards",
    .steps = scale_steps,
    .nsteps = sizeof(scale_steps) / sizeof(scale_steps[0]),
    .failed = moves_failed,
    .cancelled = moves_cancelled,
};

static const struct op_step rebalance_steps[] = {
    {"plan", plan_moves},
    {"move_slots", move_slots},
    {"finish", NULL, rebalance_done},
};

const struct op_kind op_cluster_rebalance = {
    .name = "rebalance",
    .steps = rebalance_steps,
    .nsteps = sizeof(rebalance_steps) / sizeof(rebalance_steps[0]),
    .failed = moves_failed,
    .cancelled = moves_cancelled,
};

/* ---- the request ----------------------------------------------------------------- */

static int spec_shards(const json_t *spec)
{
    return (int)json_integer_value(json_object_get(spec, "num_shards"));
}

/* Place shards from .. to - 1 of the next spec; with store, store them
 * (else only check that they fit). */
static enum db_status place_new_shards(struct db_conn *conn, struct change_request *r, bool store,
                                       struct problem *p)
{
    const json_t *spec = r->next;
    int from = spec_shards(r->stored), to = spec_shards(spec);
    struct store_placement pl;
    char err[512];
    enum db_status st =
        store_placement_read(conn, json_string_value(json_object_get(spec, "engine")),
                             json_string_value(json_object_get(spec, "engine_version")),
                             json_string_value(json_object_get(spec, "node_type")), &pl);
    if (st != DB_OK)
        return st;
    /* The running primaries' AZs, which the new ones avoid. */
    struct cluster_nodes nodes = {0};
    char *password = NULL;
    bool cluster_mode;
    const char **azs = NULL;
    size_t nazs = 0;
    if (cluster_nodes_load(r->app, r->cluster_id, &nodes, &password, &cluster_mode, err,
                           sizeof(err))) {
        azs = xcalloc(nodes.count + 1, sizeof(*azs));
        for (size_t i = 0; i < nodes.count; i++) {
            if (strcmp(nodes.items[i].role, "primary") == 0)
                azs[nazs++] = nodes.items[i].az;
        }
    }
    free(password);
    struct sched_request req = {
        .shards = to - from,
        .replicas = (int)json_integer_value(json_object_get(spec, "replicas_per_shard")),
        .vcpus = pl.vcpus,
        .memory_mib = pl.memory_mib,
        .multi_az = json_is_true(json_object_get(spec, "multi_az")),
        .primary_azs = azs,
        .n_primary_azs = nazs};
    int *host_of = xcalloc((size_t)req.shards * (size_t)(1 + req.replicas), sizeof(int));
    if (!sched_place(pl.hosts, pl.nhosts, &req, host_of, err, sizeof(err))) {
        problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY, "%s", err);
        st = DB_REFUSED;
    } else if (store) {
        st = cluster_store_shards(conn, spec, from, to - from, &pl, host_of);
    }
    free(host_of);
    free(azs);
    cluster_nodes_free(&nodes);
    store_placement_free(&pl);
    return st;
}

/* Scaling in: the shards that stay must hold the data of all with the
 * reserve (sizing.h) kept free. Read live from the primaries. */
static enum db_status room_to_stay(struct db_conn *conn, struct change_request *r,
                                   struct problem *p)
{
    int to = spec_shards(r->next);
    struct slot_view v;
    struct store_placement pl;
    char err[512];

    if (!slot_view_load(r->app, r->cluster_id, false, &v, err, sizeof(err))) {
        slot_view_free(&v);
        problem_set(p, PROBLEM_CLUSTER_UNHEALTHY, "the shards' data could not be read: %s", err);
        return DB_REFUSED;
    }
    long long data = 0;
    for (int s = 0; s < v.nshards; s++)
        data += v.shards[s].used_memory;
    slot_view_free(&v);
    enum db_status st =
        store_placement_read(conn, json_string_value(json_object_get(r->next, "engine")),
                             json_string_value(json_object_get(r->next, "engine_version")),
                             json_string_value(json_object_get(r->next, "node_type")), &pl);
    if (st != DB_OK)
        return st;
    double per_shard = (double)pl.memory_mib * 1048576.0 * (1 - SIZING_RESERVED_FRACTION);
    store_placement_free(&pl);
    if ((double)data <= per_shard * to)
        return DB_OK;
    problem_set(p, PROBLEM_INSUFFICIENT_MEMORY,
                "%d shards of %s can hold %.0f MiB of data with the %d%% reserve kept free, and "
                "the cluster's data takes %.0f MiB: keep more shards, or choose a larger node "
                "type first",
                to, json_string_value(json_object_get(r->next, "node_type")),
                per_shard * to / 1048576.0, (int)(SIZING_RESERVED_FRACTION * 100),
                (double)data / 1048576.0);
    return DB_REFUSED;
}

static enum db_status scale_precheck(struct db_conn *conn, struct change_request *r,
                                     struct problem *p)
{
    int from = spec_shards(r->stored), to = spec_shards(r->next);
    if (to > from)
        return place_new_shards(conn, r, false, p);
    if (to < from)
        return room_to_stay(conn, r, p);
    return DB_OK;
}

/* PATCH of num_shards: the new shards placed and stored, the cluster
 * modifying, the operation queued, all in the request's transaction. */
static enum db_status scale_queue(struct db_conn *conn, struct change_request *r, struct problem *p)
{
    int from = spec_shards(r->stored), to = spec_shards(r->next);
    enum db_status st = to > from ? place_new_shards(conn, r, true, p) : DB_OK;
    json_t *pending = json_pack("{s:i, s:i}", "from", from, "to", to);
    json_t *context = json_pack("{s:i, s:i, s:i}", "from", from, "to", to, "first_new_shard", from);
    st = change_queue(conn, r, p, st, "num_shards", pending, &op_cluster_scale_shards, context);
    json_decref(context);
    json_decref(pending);
    if (st == DB_OK && to > from)
        st = store_events_nodes_placed(conn, r->cluster_id, r->op_id, from);
    return st;
}

const struct change_op change_op_scale_shards = {
    .kind = &op_cluster_scale_shards,
    .what = "a change of the number of shards",
    .alone = true,
    .accepted = true,
    .precheck = scale_precheck,
    .queue = scale_queue,
};
