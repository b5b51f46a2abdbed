/* ops_cluster.h -- the operations that move a cluster toward its spec:
 * create (wait for the engines, form the topology, announce it available),
 * apply_parameters (CONFIG SET what can change live), failover (a planned,
 * lossless switch of a shard's primary) and delete (stop the engines,
 * remove their data, drop the rows). */
#ifndef CAIRN_OPS_CLUSTER_H
#define CAIRN_OPS_CLUSTER_H

#include "changes.h"
#include "clusters.h"
#include "runner.h"

extern const struct op_kind op_cluster_create;
extern const struct op_kind op_cluster_delete;
extern const struct op_kind op_cluster_apply_parameters;
extern const struct op_kind op_cluster_failover;
extern const struct op_kind op_cluster_replace_node;

/* PATCH of parameters: an apply_parameters operation (changes.h). */
extern const struct change_op change_op_apply_parameters;

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

/* A planned failover of one shard as a part of another operation (an
 * engine upgrade): the failover's steps, run on sub -- a JSON object in
 * ctx->context holding "shard" and, to choose only replicas that run it,
 * "engine" and "engine_version" -- as their context. OP_NEXT once the new
 * roles are recorded and every replica follows the new primary; sub then
 * holds "write_pause_ms", "previous" and "target". */
enum op_result ops_failover_run(struct op_ctx *ctx, json_t *sub);

#endif
