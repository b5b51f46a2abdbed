/* ops.h -- the operations that move a cluster toward its spec, one file
 * each (ops_create.c, ops_delete.c, ops_parameters.c, ops_failover.c,
 * ops_replace.c, ops_upgrade.c, ops_scale_replicas.c, ops_node_type.c,
 * ops_reshard.c: scale_shards and rebalance; ops_calibrate.c, which
 * benchmarks a temporary cluster; ops_snapshot.c, ops_restore.c), the one list of their kinds, and
 * what their steps share. The runner (runner.h) runs them.
 *
 * op_kinds lists every kind, in the order the API documents them. cairnd
 * hands it to the runner; the API's ?kind= filter takes its names from it;
 * `cairnd operation-kinds` prints them, and tests compare that with the
 * OpenAPI document's OperationKind, the operations table's CHECK and the
 * kinds the SQL names. A new kind is added here and nowhere else in C.
 * A kind may be reserved: the API and the operations table know its name,
 * but no version of cairnd runs it yet. It has no steps, so no runner
 * claims one. */
#ifndef CAIRN_OPS_H
#define CAIRN_OPS_H

#include <jansson.h>
#include <stdbool.h>

#include "cluster_nodes.h"
#include "runner.h"

#define OPS_ENGINE_WAIT_LIMIT_S 90 /* engines not up by then: the operation fails */
#define OPS_FORM_WAIT_LIMIT_S   60 /* topology not settled by then: the operation fails */
#define OPS_POLL_MS             OP_POLL_MS

extern const struct op_kind op_cluster_create;
extern const struct op_kind op_cluster_delete;
extern const struct op_kind op_cluster_apply_parameters;
extern const struct op_kind op_cluster_failover;
extern const struct op_kind op_cluster_replace_node;
extern const struct op_kind op_cluster_upgrade_engine;
extern const struct op_kind op_cluster_scale_replicas;
extern const struct op_kind op_cluster_change_node_type;
extern const struct op_kind op_calibrate;
extern const struct op_kind op_cluster_scale_shards;
extern const struct op_kind op_cluster_rebalance;
extern const struct op_kind op_cluster_snapshot;

/* Every kind, NULL-terminated. */
extern const struct op_kind *const op_kinds[];

/* The names of op_kinds, in its order, NULL-terminated: a one_of list.
 * Static; built on the first call, from any thread. */
const char *const *op_kind_names(void);

/* The changes of a spec that run an operation (changes.h): PATCH of
 * parameters runs apply_parameters; PATCH of engine or engine_version, once
 * the catalog allows the path and the cluster passes upgrade_check(), an
 * upgrade_engine, queued or scheduled for the maintenance window. */
struct change_op;
extern const struct change_op change_op_apply_parameters;
extern const struct change_op change_op_upgrade_engine;
/* PATCH of num_shards (cluster mode): scale_shards, placed in the request
 * (ops_reshard.c). */
extern const struct change_op change_op_scale_shards;
/* PATCH of replicas_per_shard runs scale_replicas (ops_scale_replicas.c);
 * of node_type, change_node_type (ops_node_type.c). Both place any new
 * nodes in the request's transaction, so a cluster without room is
 * refused at once. */
extern const struct change_op change_op_scale_replicas;
extern const struct change_op change_op_change_node_type;

/* What an operation's steps work on: the cluster's nodes (placement and
 * last reported state), its engine password (NULL without AUTH) and
 * whether it runs in cluster mode. Loaded afresh by each step; false (with
 * ctx->error) when the database cannot say. */
struct ops_topo {
    struct cluster_nodes nodes;
    char *password;
    bool cluster_mode;
};
bool ops_topo_load(struct op_ctx *ctx, struct ops_topo *t);
void ops_topo_free(struct ops_topo *t);

/* Seconds since the step first asked for key: the first call stores now in
 * the context under key and returns 0. */
long long ops_elapsed_s(struct op_ctx *ctx, const char *key);

/* A step that is not done yet: OP_WAIT for wait_ms, or, once more than
 * limit_s have passed since it first waited (ops_elapsed_s(key)), OP_FAILED
 * with code and the printf-style message. */
enum op_result ops_wait_within(struct op_ctx *ctx, const char *key, int limit_s, int wait_ms,
                               enum problem_code code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* An event of the operation's cluster, in the caller's transaction. */
enum db_status ops_event(struct db_conn *conn, const struct op_ctx *ctx, const char *type,
                         const char *severity, const char *message, const char *detail);

/* The context's string at key, or NULL; its integer at key, or 0. */
const char *ops_context_str(const struct op_ctx *ctx, const char *key);
long long ops_context_int(const struct op_ctx *ctx, const char *key);

/* The context's array at key, created empty when it has none (borrowed);
 * whether the array ids holds the string id. */
json_t *ops_context_array(struct op_ctx *ctx, const char *key);
bool ops_listed(const json_t *ids, const char *id);

/* An event whose detail is the JSON object detail (borrowed), in the
 * caller's transaction. */
enum db_status ops_event_json(struct db_conn *conn, const struct op_ctx *ctx, const char *type,
                              const char *message, const json_t *detail);

/* Retire (store_node_retire()) every node a list of entries names by its
 * "node", in the caller's transaction. */
enum db_status ops_retire_nodes(struct db_conn *conn, const json_t *entries);

/* The end of a failed() of a change of the spec's field key: with revert,
 * the spec's key goes back to the context's "from"; the change ends
 * (store_cluster_change_ended()) and OperationFailed is recorded. */
enum db_status ops_change_failed(struct db_conn *conn, const struct op_ctx *ctx, const char *key,
                                 bool revert);

/* A failed operation's OperationFailed event (in the transaction that
 * records the failure); status becomes the cluster's status unless NULL. */
enum db_status ops_failed_event(struct db_conn *conn, const struct op_ctx *ctx, const char *status);

/* A kind's failed(): the cluster serves on as before and is available. */
enum db_status ops_back_to_available(struct db_conn *conn, const struct op_ctx *ctx);

/* The steps of forming a cluster (ops_create.c) that scaling out takes
 * too, for the shards it adds: every node runs and answers PING; every node
 * knows every other (CLUSTER MEET); each replica of a shard from the
 * context's "first_new_shard" on (0, or absent, for a create) follows its
 * shard's placed primary; those shards are ready, their roles recorded.
 * Shards before first_new_shard serve already, in whatever roles failovers
 * have left them, and are not touched. */
enum op_result ops_wait_engines(struct op_ctx *ctx);
enum op_result ops_meet(struct op_ctx *ctx);
enum op_result ops_replicate(struct op_ctx *ctx);
enum op_result ops_wait_ready(struct op_ctx *ctx);

/* A planned failover of one shard as a part of another operation (an
 * engine upgrade, a node type change): the failover's steps, run on sub --
 * a JSON object in ctx->context holding "shard" and, to choose only
 * replicas that run it, "engine" and "engine_version", or only some nodes,
 * "candidates" (an array of node ids) -- as their context. OP_NEXT once the new
 * roles are recorded and every replica follows the new primary; sub then
 * holds "write_pause_ms", "previous" and "target". */
enum op_result ops_failover_run(struct op_ctx *ctx, json_t *sub);

/* ---- snapshots (ops_snapshot.c) ------------------------------------------------ */

/* The steps that take the snapshot the context's "snapshot_id" names (and
 * do nothing without one): a node chosen per shard, its data saved, its
 * file carried to the snapshot store; the snapshot is then available. The
 * snapshot operation is these steps; a delete with a final snapshot begins
 * with them. ops_snapshot_failed() ends the snapshot failed (for a kind's
 * failed() or cancelled()). */
enum op_result ops_snapshot_choose(struct op_ctx *ctx);
enum db_status ops_snapshot_chosen(struct db_conn *conn, const struct op_ctx *ctx);
enum op_result ops_snapshot_copy(struct op_ctx *ctx);
enum db_status ops_snapshot_uploaded(struct db_conn *conn, const struct op_ctx *ctx);
enum db_status ops_snapshot_failed(struct db_conn *conn, const struct op_ctx *ctx);
#define OPS_SNAPSHOT_STEPS                                                                         \
    {"snapshot_choose", ops_snapshot_choose, ops_snapshot_chosen},                                 \
    {                                                                                              \
        "snapshot_copy", ops_snapshot_copy, ops_snapshot_uploaded                                  \
    }
#define OPS_SNAPSHOT_NSTEPS 2

/* A create's step that loads the data of the snapshot its context's
 * "restore_from" names (ops_restore.c); nothing without one. */
enum op_result ops_restore(struct op_ctx *ctx);

/* ---- nodes joining a shard and leaving it (ops_nodes.c) ---------------------- */

/* Places new nodes of one node type on the hosts the scheduler's rules
 * allow, in the caller's transaction (which holds the placement lock from
 * ops_placer_open() on). Each node placed takes its room off the hosts
 * for the next. */
struct ops_placer {
    struct store_placement hosts;
    const char *engine, *version, *node_type; /* borrowed */
};
enum db_status ops_placer_open(struct db_conn *conn, const char *engine, const char *version,
                               const char *node_type, struct ops_placer *pl);
void ops_placer_close(struct ops_placer *pl);

/* Where one new replica goes: a shard, away from the hosts of its live
 * nodes other than leaving_id (NULL: all of them) and outside its
 * primary's AZ with multi_az. among_own_type: if no host is left that way,
 * away from the nodes of the placer's node type only (a surge, whose old
 * nodes leave). */
struct ops_placing {
    const char *cluster_id, *shard_id, *leaving_id;
    bool multi_az, among_own_type;
};
struct ops_placed {
    char node_id[40], host_id[40], az[64];
};
/* Place and store a new replica (store_node_add_replica()) and give its
 * host's new nodes their ports. DB_REFUSED with err naming the rule and the
 * numbers when no host may take it. */
enum db_status ops_place_replica(struct db_conn *conn, struct ops_placer *pl,
                                 const struct ops_placing *w, struct ops_placed *out, char *err,
                                 size_t errsize);

/* A new node's engine: OP_NEXT once its agent reports it running and it
 * answers PING here; OP_FAILED when its host is lost and this cairnd trusts
 * the loss (monitor.h); else OP_WAIT, for the caller to wait (ctx->wait_ms
 * is not set). */
enum op_result ops_node_started(struct op_ctx *ctx, const struct ops_topo *t, const char *node_id);

/* One pass at making node n a replica of its shard's primary: true once it
 * is in sync (linked, loaded, not in a full sync) and, in cluster mode,
 * every primary knows it as its shard primary's replica; otherwise sends what
 * gets it there -- REPLICAOF, or CLUSTER MEET and CLUSTER REPLICATE in
 * cluster mode -- and returns false. Blocks for at most a few round trips. */
bool ops_node_join(const struct ops_topo *t, const struct cluster_node *n);

/* Cluster mode: every live node of t forgets the node at address:port once
 * no live replica follows it and it owns no slots (nobody waits for its
 * vote then). Without cluster mode it is forgotten at once. */
enum ops_forget {
    OPS_FORGOTTEN,      /* no live node knows it */
    OPS_FORGET_KNOWN,   /* some did; they were told to forget it */
    OPS_FORGET_BLOCKED, /* followed by a replica or owning slots: it stays */
    OPS_FORGET_UNKNOWN, /* a node could not be asked */
};
enum ops_forget ops_node_forget(const struct ops_topo *t, const char *address, int port);

/* The same over a list in an operation's context: entries, a JSON array
 * of objects naming a node ("node") and, to forget it, its "address" and
 * "port"; the nodes already done are listed by id in done, joined or
 * forgotten. ops_nodes_started() as ops_node_started() for all of them;
 * ops_nodes_join() adds each node in sync to joined and defers
 * on_join(entry) with this run's record (op_defer()), and is true once all
 * are; ops_nodes_forget() adds each forgotten node to forgotten, and is
 * true once all are. */
enum op_result ops_nodes_started(struct op_ctx *ctx, const struct ops_topo *t,
                                 const json_t *entries, const json_t *done);
bool ops_nodes_join(struct op_ctx *ctx, const struct ops_topo *t, const json_t *entries,
                    json_t *joined, op_deferred_fn on_join);
bool ops_nodes_forget(const struct ops_topo *t, const json_t *entries, json_t *forgotten);

#endif
