/* ops_cluster.h -- the operations that move a cluster toward its spec:
 * create (wait for the engines, form the topology, announce it available),
 * apply_parameters (CONFIG SET what can change live), failover (a planned,
 * lossless switch of a shard's primary) and delete (stop the engines,
 * remove their data, drop the rows). */
#ifndef CAIRN_OPS_CLUSTER_H
#define CAIRN_OPS_CLUSTER_H

#include "runner.h"

extern const struct op_kind op_cluster_create;
extern const struct op_kind op_cluster_delete;
extern const struct op_kind op_cluster_apply_parameters;
extern const struct op_kind op_cluster_failover;
extern const struct op_kind op_cluster_replace_node;

#endif
