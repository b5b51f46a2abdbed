/* ops.h -- the operations that move a cluster toward its spec, one file
 * each (ops_create.c, ops_delete.c, ops_parameters.c, ops_failover.c,
 * ops_replace.c, ops_upgrade.c, ops_reshard.c: scale_shards and rebalance;
 * ops_calibrate.c, which benchmarks a temporary cluster), the one list of their kinds, and what
 * their steps share. The runner (runner.h) runs them.
 *
 * op_kinds lists every kind, in the order the API documents them. cairnd
 * hands it to the runner; the API's ?kind= filter takes its names from it;
 * `cairnd operation-kinds` prints them, and tests compare that with the
 * OpenAPI document's OperationKind, the operations table's CHECK and the
 * kinds the SQL names. A new kind is added here and nowhere else in C.
 * Some kinds are reserved: the API and the operations table know their
 * names, but no version of cairnd runs them yet. They have no steps, so no
 * runner claims one. */
#ifndef CAIRN_OPS_H
#define CAIRN_OPS_H

#include <jansson.h>
#include <stdbool.h>

#include "cluster_nodes.h"
#include "runner.h"

#define OPS_ENGINE_WAIT_LIMIT_S 90 /* engines not up by then: the operation fails */
#define OPS_FORM_WAIT_LIMIT_S   60 /* topology not settled by then: the operation fails */
#define OPS_POLL_MS             100

extern const struct op_kind op_cluster_create;
extern const struct op_kind op_cluster_delete;
extern const struct op_kind op_cluster_apply_parameters;
extern const struct op_kind op_cluster_failover;
extern const struct op_kind op_cluster_replace_node;
extern const struct op_kind op_cluster_upgrade_engine;
extern const struct op_kind op_calibrate;
extern const struct op_kind op_cluster_scale_shards;
extern const struct op_kind op_cluster_rebalance;

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
 * engine upgrade): the failover's steps, run on sub -- a JSON object in
 * ctx->context holding "shard" and, to choose only replicas that run it,
 * "engine" and "engine_version" -- as their context. OP_NEXT once the new
 * roles are recorded and every replica follows the new primary; sub then
 * holds "write_pause_ms", "previous" and "target". */
enum op_result ops_failover_run(struct op_ctx *ctx, json_t *sub);

#endif
