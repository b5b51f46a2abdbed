/* rightsize.h -- right-sizing a running cluster from its own metrics:
 * whether its shape fits what it held and did over a window, or it should
 * scale up, down, out or in, to which shape, and the figures that decided
 * it. Pure: the figures, the node type catalog and the current shape come
 * in, the recommendation goes out as JSON; no database, no clock. GET
 * /v1/clusters/{id}/recommendations (api_recommendations.c) gathers the
 * figures.
 *
 * The rules are sizing.h's. A node of a type may fill sizing_usable_gib()
 * of its memory with data: the rest is the reserve for replication and
 * snapshots and the headroom that lets alarms fire before trouble. A
 * cluster whose engines keep more than the reserve out of maxmemory (its
 * reserved-memory-percent) has less for data, in proportion. A primary's
 * engine CPU is kept under SIZING_TARGET_UTILIZATION of a core.
 *
 * Per shard, the data to hold is its nodes' peak BytesUsedForCache, and at
 * least its maxmemory when keys were evicted (evictions say the data wanted
 * more room than it had); the CPU is its primary's EngineCPUUtilization
 * p99. A shape of k shards must hold the largest shard's data spread over k
 * (its share grown by the current shard count over k, so a resharding that
 * leaves one shard with more never overflows it) and keep the busiest
 * primary's CPU, spread the same way, under the target. A node type change
 * leaves each primary's CPU as it is (the engine runs its commands on one
 * thread).
 *
 * The cluster is under pressure when its shape fails that test, keys were
 * evicted, or it runs on burstable nodes with more than a small workload.
 * Then the cheapest shape that passes is recommended; otherwise the
 * cheapest one that passes and costs less than the current one, else
 * "fits". The shapes tried change one thing at a time: the node type or,
 * in cluster mode, the number of shards; replicas stay as they are. A node
 * type change stays in the current family or goes to a burstable one for a
 * small workload; under pressure, when none of those holds the cluster,
 * any family's. Burstable node types only ever take small workloads. So no recommended shape fails
 * to hold the data seen with the reserve and headroom kept. */
#ifndef CAIRN_RIGHTSIZE_H
#define CAIRN_RIGHTSIZE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sizing.h"

/* The window a recommendation looks back over, in days. */
#define RIGHTSIZE_DAYS_DEFAULT 7
#define RIGHTSIZE_DAYS_MAX     14
/* Samples of memory and of CPU each shard needs in the window before
 * anything is said about it. */
#define RIGHTSIZE_MIN_SAMPLES 3
/* The CPU figure: p99 of each node's averages over periods this long. */
#define RIGHTSIZE_CPU_PERIOD_S 300

/* A node type of the catalog, priced for the cluster's engine. */
/* One node's figures over the window; NAN where it has none. */
struct rightsize_node {
    const char *id;
    int shard; /* index into the cluster's shards */
    bool primary;
    long long memory_samples, cpu_samples; /* of BytesUsedForCache, EngineCPUUtilization */
    double bytes_peak;                     /* BytesUsedForCache, Maximum */
    double memory_percent_peak;            /* DatabaseMemoryUsagePercentage, Maximum */
    double cpu_p99;                        /* EngineCPUUtilization, p99 (see above) */
    double evictions;                      /* Evictions, Sum */
    double hits, misses;                   /* CacheHits, CacheMisses, Sum */
    double gets, sets;                     /* GetTypeCmds, SetTypeCmds, Sum */
    double connections_peak;               /* CurrConnections, Maximum */
    double requests_per_s_peak;            /* KeyBasedCmds per second of its busiest CPU period */
};

/* The cluster as its spec has it. */
struct rightsize_cluster {
    const char *node_type;
    int num_shards; /* shard_names has this many */
    const char *const *shard_names;
    int replicas_per_shard;
    bool cluster_mode;
    int reserved_memory_percent; /* what its engines keep out of maxmemory */
    int days;                    /* the window */
};

/* The recommendation for c from nodes[0..nnodes) among types[0..ntypes):
 *
 *   {"status": "scale_up" | "scale_down" | "scale_out" | "scale_in" | "fits"
 *              | "insufficient_data",
 *    "summary": "...",
 *    "current": shape, "target": shape or null,
 *    "evidence": [{metric, statistic, window, value, unit, threshold?,
 *                  shard?, node_id?, note}],
 *    "observed": {...the cluster's figures, and per shard...},
 *    "hot_shards": [{shard, evidence: [...]}],
 *    "reasons": ["..."],
 *    "missing": [{shard, metric, samples, needed}]}
 *
 * where a shape is {node_type, num_shards, replicas_per_shard,
 * data_bytes_per_shard (what a shard may hold), price_usd_per_hour,
 * price_usd_per_month} and the target adds "change", the spec's fields
 * that change (a JSON merge patch of the cluster's spec). "target" is null
 * for fits and insufficient_data, and when no shape in reach passes (the
 * reasons say what is short); "missing" is there only with
 * insufficient_data. A shard is hot when it is under pressure and carries
 * more than slot_advice_hot() allows of the shards' mean. The caller owns
 * the result; NULL when c's node type is not among types. */
json_t *rightsize_recommend(const struct rightsize_cluster *c, const struct rightsize_node *nodes,
                            size_t nnodes, const struct sizing_node_type *types, size_t ntypes);

/* The bytes of data (whole) one node of type t may hold in a cluster whose
 * engines keep reserved_memory_percent of memory out of maxmemory. */
double rightsize_data_bytes(const struct sizing_node_type *t, int reserved_memory_percent);

/* The q-quantile (0..1) of values[0..n), interpolated between the closest
 * ranks as PostgreSQL's percentile_cont() does; sorts values. NAN when n
 * is 0. */
double rightsize_percentile(double *values, size_t n, double q);

#endif
