/* ops_snapshot.c -- a snapshot of a cluster, shard by shard: each shard's
 * data is saved (BGSAVE) by an in-sync replica where it has one, so its
 * primary is not forked; the agent of that node's host carries the saved
 * file to cairnd, which keeps it in the snapshot store (snapshot_store.h)
 * once every part has expanded to the bytes and checksum the agent sent.
 * Its steps also open a delete that keeps a final snapshot. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "log.h"
#include "nodeio.h"
#include "resp.h"
#include "snapshots.h"
#include "store.h"
#include "xalloc.h"

/* An upload from which no part has arrived for this long has failed. */
#define UPLOAD_STALL_S 120
/* Shards saving or being carried off their hosts at once: one per host (a
 * fork's copy-on-write is what a host's reserve pays for, once), and this
 * many in all (each upload holds a part in cairnd's memory as it arrives). */
#define SHARDS_AT_ONCE 16
/* A save not done by then has failed. */
#define SAVE_LIMIT_S 3600
#define POLL_MS      200

static const char *snapshot_of(const struct op_ctx *ctx)
{
    return ops_context_str(ctx, "snapshot_id");
}

/* The shard's node whose copy is saved: an in-sync replica (the one with
 * the most data), else the primary. NULL when none answers; *primary says
 * which it was. */
static const struct cluster_node *choose_node(const struct ops_topo *t, int shard, bool *primary)
{
    const struct cluster_node *best = NULL, *first = NULL;
    long long best_offset = -1;
    char err[256];

    *primary = false;
    for (size_t i = 0; i < t->nodes.count; i++) {
        const struct cluster_node *n = &t->nodes.items[i];
        struct nodeio_repl r;
        if (n->shard != shard || n->host_lost || strcmp(n->process_state, "running") != 0 ||
            !nodeio_replication(n, t->password, NODEIO_PATIENT, &r, err, sizeof(err)))
            continue;
        if (r.primary && first == NULL)
            first = n;
        else if (!r.primary && r.in_sync && r.offset > best_offset) {
            best = n;
            best_offset = r.offset;
        }
    }
    if (best != NULL)
        return best;
    *primary = first != NULL;
    return first;
}

enum op_result ops_snapshot_choose(struct op_ctx *ctx)
{
    struct ops_topo t;
    int shards = 0;

    if (snapshot_of(ctx) == NULL || json_object_get(ctx->context, "shards") != NULL)
        return OP_NEXT;
    if (!ops_topo_load(ctx, &t))
        return op_wait(ctx, POLL_MS);
    for (size_t i = 0; i < t.nodes.count; i++)
        if (t.nodes.items[i].shard + 1 > shards)
            shards = t.nodes.items[i].shard + 1;
    json_t *chosen = json_array();
    for (int s = 0; s < shards; s++) {
        bool primary;
        const struct cluster_node *n = choose_node(&t, s, &primary);
        if (n == NULL) {
            json_decref(chosen);
            ops_topo_free(&t);
            return ops_wait_within(ctx, "choose_since", OPS_FORM_WAIT_LIMIT_S, POLL_MS,
                                   PROBLEM_NODE_UNREACHABLE,
                                   "no node of shard %d answers: its data cannot be saved", s);
        }
        json_array_append_new(chosen, json_pack("{s:i, s:s, s:b}", "shard", s, "node_id", n->id,
                                                "from_primary", primary));
        if (primary) {
            char *message = xasprintf("shard %d has no replica in sync: its primary saves its data "
                                      "(and forks to do it)",
                                      s);
            op_event(ctx, "SnapshotFromPrimary", "warning", message, NULL);
            free(message);
        }
    }
    ops_topo_free(&t);
    json_object_set_new(ctx->context, "shards", chosen);
    return OP_NEXT;
}

enum db_status ops_snapshot_chosen(struct db_conn *conn, const struct op_ctx *ctx)
{
    if (snapshot_of(ctx) == NULL)
        return DB_OK;
    char *shards = json_dumps(json_object_get(ctx->context, "shards"), JSON_COMPACT);
    enum db_status st = store_snapshot_shards_begin(conn, snapshot_of(ctx), shards);
    free(shards);
    return st;
}

/* ---- saving ----------------------------------------------------------------------- */

/* The shard's row says what its engine had when it saved (deferred to the
 * step's record, so its agent is asked for the file then). */
static enum db_status shard_saved(struct db_conn *conn, const struct op_ctx *ctx,
                                  const json_t *entry)
{
    char *databases = json_dumps(json_object_get(entry, "databases"), JSON_COMPACT);
    enum db_status st = store_snapshot_shard_saved(
        conn, snapshot_of(ctx), (int)json_integer_value(json_object_get(entry, "shard")),
        json_integer_value(json_object_get(entry, "keys")), databases,
        json_integer_value(json_object_get(entry, "memory_bytes")));
    free(databases);
    return st;
}

/* Keys per database ("db0:keys=12,expires=0,avg_ttl=0") and in all. */
static json_t *keyspace(const struct engine_info *info, long long *total)
{
    json_t *dbs = json_object();
    const struct engine_info_section *ks = engine_info_section(info, "keyspace");
    *total = 0;
    for (int db = 0; ks != NULL && db < 16; db++) {
        char key[16];
        long long n;
        snprintf(key, sizeof(key), "db%d", db);
        if (engine_info_field_ll(engine_info_get(info, "keyspace", key), "keys", &n) && n > 0) {
            json_object_set_new(dbs, key + 2, json_integer(n));
            *total += n;
        }
    }
    return dbs;
}

/* How one pass at a shard's save went. */
enum save_pass {
    SAVE_DONE,        /* saved: what it holds is in the entry */
    SAVE_WAIT,        /* asked for, or still saving */
    SAVE_UNREACHABLE, /* the node does not answer now (err) */
    SAVE_FAILED,      /* the node is gone, or could not save (err) */
};

/* One pass at one shard's save: asked for (BGSAVE SCHEDULE, which waits
 * for a rewrite of the append-only file to end), then done once the
 * engine's count of saves has moved. */
static enum save_pass save_shard(const struct ops_topo *t, json_t *entry, char *err, size_t errsize)
{
    const char *id = json_string_value(json_object_get(entry, "node_id"));
    const struct cluster_node *n = cluster_nodes_find(&t->nodes, id);
    long long saves = 0, busy = 0;

    if (n == NULL || n->host_lost) {
        snprintf(err, errsize, "node %s, which was saving the shard's data, is gone", id);
        return SAVE_FAILED;
    }
    struct resp_conn *c = nodeio_connect(n, t->password, NODEIO_PATIENT, err, errsize);
    struct engine_info *info =
        c != NULL ? resp_info(c, "persistence keyspace memory", err, errsize) : NULL;
    enum save_pass pass = info != NULL ? SAVE_WAIT : SAVE_UNREACHABLE;
    if (info != NULL &&
        (!engine_info_get_ll(info, "persistence", "rdb_saves", &saves) ||
         !engine_info_get_ll(info, "persistence", "rdb_bgsave_in_progress", &busy))) {
        snprintf(err, errsize, "node %s does not say how many times it saved", id);
        pass = SAVE_FAILED;
    }
    if (pass == SAVE_WAIT && !json_is_integer(json_object_get(entry, "saves_before"))) {
        redisReply *r = resp_command(c, err, errsize, "BGSAVE SCHEDULE");
        if (r != NULL && resp_reply_check(r, err, errsize))
            json_object_set_new(entry, "saves_before", json_integer(saves));
        else
            pass = r != NULL ? SAVE_FAILED : SAVE_UNREACHABLE;
        resp_reply_free(r);
    } else if (pass == SAVE_WAIT && busy == 0 &&
               saves > json_integer_value(json_object_get(entry, "saves_before"))) {
        const char *status = engine_info_get(info, "persistence", "rdb_last_bgsave_status");
        long long keys, memory = 0;
        if (status == NULL || strcmp(status, "ok") != 0) {
            snprintf(err, errsize, "node %s could not save its data (rdb_last_bgsave_status:%s)",
                     id, status != NULL ? status : "?");
            pass = SAVE_FAILED;
        } else {
            engine_info_get_ll(info, "memory", "used_memory_dataset", &memory);
            json_object_set_new(entry, "databases", keyspace(info, &keys));
            json_object_set_new(entry, "keys", json_integer(keys));
            json_object_set_new(entry, "memory_bytes", json_integer(memory));
            json_object_set_new(entry, "saved", json_true());
            pass = SAVE_DONE;
        }
    }
    engine_info_free(info);
    resp_close(c);
    return pass;
}

/* ---- saving and carrying ------------------------------------------------------------ */

struct state_call {
    const char *snapshot_id;
    json_t *shards;
};

static enum db_status state_fn(struct db_conn *conn, void *arg)
{
    struct state_call *c = arg;
    json_decref(c->shards);
    c->shards = NULL;
    return store_snapshot_shards_state(conn, c->snapshot_id, &c->shards);
}

/* The row of shard in the shards' state (store_snapshot_shards_state()). */
static const json_t *row_of(const json_t *rows, int shard)
{
    size_t i;
    const json_t *row;
    json_array_foreach (rows, i, row) {
        if (json_integer_value(json_object_get(row, "shard")) == shard)
            return row;
    }
    return NULL;
}

/* What one pass over the shards found. */
struct copy_pass {
    const struct ops_topo *t;
    const char *busy_hosts[SHARDS_AT_ONCE]; /* hosts with a shard in flight */
    size_t in_flight, uploaded, saved, unreachable;
    char why[600]; /* the last shard unreachable */
};

static bool host_busy(const struct copy_pass *cp, const char *host)
{
    for (size_t i = 0; i < cp->in_flight; i++)
        if (strcmp(cp->busy_hosts[i], host) == 0)
            return true;
    return false;
}

static const char *host_of(const struct ops_topo *t, const json_t *entry)
{
    const struct cluster_node *n =
        cluster_nodes_find(&t->nodes, json_string_value(json_object_get(entry, "node_id")));
    return n != NULL ? n->host_id : "";
}

/* One pass at one shard whose save is asked for, or may be now: false
 * with the operation failed. */
static bool pass_shard(struct op_ctx *ctx, struct copy_pass *cp, json_t *entry)
{
    int shard = (int)json_integer_value(json_object_get(entry, "shard"));
    char err[512];
    switch (save_shard(cp->t, entry, err, sizeof(err))) {
    case SAVE_DONE:
        op_defer(ctx, shard_saved, json_incref(entry));
        cp->saved++;
        return true;
    case SAVE_FAILED:
        op_fail(ctx, PROBLEM_SNAPSHOT_FAILED, "shard %d: %s", shard, err);
        return false;
    case SAVE_UNREACHABLE:
        cp->unreachable++;
        snprintf(cp->why, sizeof(cp->why), "shard %d: %s", shard, err);
        return true;
    case SAVE_WAIT:
        return true;
    }
    return true;
}

/* Each shard saved by its node, then carried off its host by the host's
 * agent, at most SHARDS_AT_ONCE at a time and one per host. Done once every
 * shard's file is whole in the store. */
enum op_result ops_snapshot_copy(struct op_ctx *ctx)
{
    struct state_call c = {snapshot_of(ctx), NULL};
    struct ops_topo t;
    size_t i;
    json_t *entry, *shards = json_object_get(ctx->context, "shards");
    long long stored = 0;

    if (c.snapshot_id == NULL)
        return OP_NEXT;
    if (db_run(ctx->app->db, state_fn, &c) != DB_OK)
        return op_wait(ctx, POLL_MS);
    if (!ops_topo_load(ctx, &t)) {
        json_decref(c.shards);
        return op_wait(ctx, POLL_MS);
    }
    struct copy_pass cp = {.t = &t};
    enum op_result r = OP_WAIT;
    /* What the store says of each: carried whole, failed, or in flight. */
    json_array_foreach (shards, i, entry) {
        const json_t *row =
            row_of(c.shards, (int)json_integer_value(json_object_get(entry, "shard")));
        const char *error = json_string_value(json_object_get(row, "error"));
        const char *status = json_string_value(json_object_get(row, "status"));
        stored += json_integer_value(json_object_get(row, "stored_bytes"));
        if (error != NULL) {
            r = op_fail(ctx, PROBLEM_SNAPSHOT_UPLOAD_FAILED, "shard %d: %s",
                        (int)json_integer_value(json_object_get(entry, "shard")), error);
            break;
        }
        if (status != NULL && strcmp(status, "uploaded") == 0)
            cp.uploaded++;
        else if (json_is_integer(json_object_get(entry, "saves_before")) &&
                 cp.in_flight < SHARDS_AT_ONCE)
            cp.busy_hosts[cp.in_flight++] = host_of(&t, entry);
        cp.saved += json_is_true(json_object_get(entry, "saved"));
    }
    /* The saves under way go on; new ones start where there is room. */
    json_array_foreach (shards, i, entry) {
        if (r != OP_WAIT)
            break;
        bool asked = json_is_integer(json_object_get(entry, "saves_before"));
        bool saved = json_is_true(json_object_get(entry, "saved"));
        if (saved ||
            (!asked && (cp.in_flight >= SHARDS_AT_ONCE || host_busy(&cp, host_of(&t, entry)))))
            continue;
        if (!asked)
            cp.busy_hosts[cp.in_flight++] = host_of(&t, entry);
        if (!pass_shard(ctx, &cp, entry))
            r = OP_FAILED;
    }
    size_t n = json_array_size(shards);
    ops_topo_free(&t);
    json_decref(c.shards);
    if (r != OP_WAIT)
        return r;
    if (cp.uploaded == n)
        return OP_NEXT;
    ctx->progress = n > 0 ? (int)(cp.uploaded * 100 / n) : 0;
    /* A node that stops answering is waited for a while, as a create
     * waits for its engines; then the snapshot fails. */
    if (cp.unreachable == 0)
        json_object_del(ctx->context, "unreachable_since");
    else if (ops_elapsed_s(ctx, "unreachable_since") > OPS_FORM_WAIT_LIMIT_S)
        return op_fail(ctx, PROBLEM_NODE_UNREACHABLE, "%s", cp.why);
    /* Progress is bytes stored, or shards saved or carried whole; an
     * upload with none for UPLOAD_STALL_S has failed, and so has a save
     * with none for SAVE_LIMIT_S. */
    long long mark = stored + (long long)(cp.saved + cp.uploaded);
    if (mark != ops_context_int(ctx, "progress_mark") ||
        json_object_get(ctx->context, "idle_since") == NULL) {
        json_object_set_new(ctx->context, "progress_mark", json_integer(mark));
        json_object_del(ctx->context, "idle_since");
        ops_elapsed_s(ctx, "idle_since");
    }
    bool uploading = cp.saved > cp.uploaded;
    if (uploading)
        return ops_wait_within(ctx, "idle_since", UPLOAD_STALL_S, POLL_MS,
                               PROBLEM_SNAPSHOT_UPLOAD_FAILED,
                               "no part of a shard's file has reached cairnd for %d s (%zu of %zu "
                               "shards are in)",
                               UPLOAD_STALL_S, cp.uploaded, n);
    return ops_wait_within(ctx, "idle_since", SAVE_LIMIT_S, POLL_MS, PROBLEM_SNAPSHOT_FAILED,
                           "no shard finished saving its data within %d s", SAVE_LIMIT_S);
}

enum db_status ops_snapshot_uploaded(struct db_conn *conn, const struct op_ctx *ctx)
{
    const char *id = snapshot_of(ctx);
    if (id == NULL)
        return DB_OK;
    enum db_status st = store_snapshot_end(conn, id, "available", NULL);
    if (st != DB_OK)
        return st;
    json_t *detail = json_pack("{s:s}", "snapshot_id", id);
    st = ops_event_json(conn, ctx, "SnapshotCreated", "the snapshot is available", detail);
    json_decref(detail);
    return st;
}

static const struct op_step snapshot_steps[] = {OPS_SNAPSHOT_STEPS};

enum db_status ops_snapshot_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    const char *id = snapshot_of(ctx);
    if (id == NULL)
        return DB_OK;
    json_t *error = json_pack("{s:s, s:s}", "code", ctx->code[0] ? ctx->code : "CANCELLED",
                              "message", ctx->error[0] ? ctx->error : "the snapshot was cancelled");
    char *text = json_dumps(error, JSON_COMPACT);
    enum db_status st = store_snapshot_end(conn, id, "failed", text);
    if (st == DB_OK) {
        char *message = xasprintf("the snapshot failed: %s",
                                  json_string_value(json_object_get(error, "message")));
        st = ops_event(conn, ctx, "SnapshotFailed", "error", message, text);
        free(message);
    }
    free(text);
    json_decref(error);
    return st;
}

static enum db_status snapshot_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = ops_snapshot_failed(conn, ctx);
    return st == DB_OK ? ops_failed_event(conn, ctx, NULL) : st;
}

const struct op_kind op_cluster_snapshot = {"snapshot", snapshot_steps,
                                            sizeof(snapshot_steps) / sizeof(snapshot_steps[0]),
                                            snapshot_failed, NULL};
