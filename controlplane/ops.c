/* ops.c -- the list of every kind of operation (see ops.h). */
#include "ops.h"

#include <pthread.h>

#include "ops_cluster.h"
#include "ops_upgrade.h"

/* Reserved kinds: names without steps (see ops.h). */
static const struct op_kind op_scale_shards = {"scale_shards"};
static const struct op_kind op_scale_replicas = {"scale_replicas"};
static const struct op_kind op_change_node_type = {"change_node_type"};

const struct op_kind *const op_kinds[] = {
    &op_cluster_create,
    &op_cluster_delete,
    &op_scale_shards,
    &op_scale_replicas,
    &op_change_node_type,
    &op_cluster_upgrade_engine,
    &op_cluster_failover,
    &op_cluster_replace_node,
    &op_cluster_apply_parameters,
    NULL,
};

#define NKINDS (sizeof(op_kinds) / sizeof(op_kinds[0]) - 1)

static const char *names[NKINDS + 1];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
    for (size_t i = 0; i < NKINDS; i++)
        names[i] = op_kinds[i]->name;
}

const char *const *op_kind_names(void)
{
    pthread_once(&names_once, build_names);
    return names;
}
