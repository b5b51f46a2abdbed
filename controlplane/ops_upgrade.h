/* ops_upgrade.h -- the upgrade_engine operation: a rolling, lossless
 * in-place engine upgrade (see ops_upgrade.c). */
#ifndef CAIRN_OPS_UPGRADE_H
#define CAIRN_OPS_UPGRADE_H

#include "runner.h"

extern const struct op_kind op_cluster_upgrade_engine;

#endif
