/* sizing.h -- how big a cluster should be: the memory and throughput model
 * behind POST /v1/sizing (from workload figures) and the recommendations
 * for running clusters (from their metrics). Pure: the catalog, the
 * calibrated figures and the workload come in, options and the assumptions
 * behind them go out; no database, no clock.
 *
 * The rules are the ones large fleet operators size by (docs/sizing.md):
 * 25% of a node's memory kept for replication and snapshots, 15% more free
 * so that alarms fire before trouble, the engine's own overhead per key,
 * two replicas in other zones for production, at most five replicas per
 * primary, a primary kept under 80% of its node type's request capacity
 * (a write-heavy one near it is warned about), burstable t3 nodes only for
 * small workloads (under 2,000 requests/s and 10 GB), cluster mode
 * preferred. */
#ifndef CAIRN_SIZING_H
#define CAIRN_SIZING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Fractions of a node's memory that data never uses. */
#define SIZING_RESERVED_FRACTION 0.25 /* replication buffers, fork copy-on-write */
#define SIZING_HEADROOM_FRACTION 0.15 /* alarms fire before the node is full */
/* The share of a node type's request capacity a primary is sized to. */
#define SIZING_TARGET_UTILIZATION 0.80
/* Burstable nodes only below both. */
#define SIZING_BURSTABLE_MAX_RPS 2000.0
#define SIZING_BURSTABLE_MAX_GIB (10.0 * 1e9 / (1024.0 * 1024.0 * 1024.0))
#define SIZING_REPLICAS_MAX      5
#define SIZING_HOURS_PER_MONTH   730.0

/* What of a node of node_gib GiB data may fill: the rest is the reserve
 * and the headroom above. */
double sizing_usable_gib(double node_gib);

#endif
