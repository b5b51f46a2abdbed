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
 * preferred.
 *
 * Memory, per shard: the payload (keys and values, grown by the growth
 * asked) plus the engine's overhead per key -- dictionary entry, object
 * header, string headers, each rounded up to the allocator's size class
 * (jemalloc's), the hash table's buckets, an expiry entry for keys with a
 * TTL, Redis 7.0's per-key slot links in cluster mode -- times the usual
 * fragmentation, must fit what a node may fill (sizing_usable_gib()).
 * Throughput, per primary: its writes and the reads it serves (all of them,
 * or its share when clients read from replicas) under 80% of what one node
 * of the type answers (the published table, or a calibration on the
 * fleet's own hosts), and the bytes they move under 80% of the node's
 * baseline network. The fewest shards meeting both, per node type and
 * mode, is an option; options are ranked by monthly price. */
#ifndef CAIRN_SIZING_H
#define CAIRN_SIZING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Fractions of a node's memory that data never uses. */
#define SIZING_RESERVED_FRACTION 0.25 /* replication buffers, fork copy-on-write */
#define SIZING_HEADROOM_FRACTION 0.15 /* alarms fire before the node is full */
/* The share of a node type's request capacity, and of its baseline network,
 * a node is sized to. */
#define SIZING_TARGET_UTILIZATION 0.80
/* Burstable nodes only below both. */
#define SIZING_BURSTABLE_MAX_RPS   2000.0
#define SIZING_BURSTABLE_MAX_BYTES 10e9
#define SIZING_REPLICAS_MAX        5
#define SIZING_SHARDS_MAX          1000
#define SIZING_HOURS_PER_MONTH     730.0
#define SIZING_OPTIONS_MAX         50

/* What of a node of node_gib GiB data may fill: the rest is the reserve
 * and the headroom above. */
double sizing_usable_gib(double node_gib);

/* A node type of the catalog, with what one node of it answers. */
struct sizing_node_type {
    const char *name;   /* "cache.r7g.large" */
    const char *family; /* "r7g" */
    const char *size;   /* "large" */
    int vcpus;
    double memory_gib;
    double network_gbps; /* baseline */
    bool burstable;
    double price_usd_hour;       /* for the engine sized */
    double capacity_rps;         /* requests/s of one node; 0: the published table's */
    const char *capacity_source; /* where capacity_rps comes from, when set */
    const char *capacity_note;   /* how it was measured, when set; NULL: not said */
};

/* The published capacity of one node of family and size (requests/s, 80%
 * GET / 20% SET of 200-byte values, no pipelining, 20 clients), or 0 when
 * the table has nothing for it. */
double sizing_published_rps(const char *family, const char *size);

/* What pipelining depth multiplies a node's capacity by in the model
 * (depth^0.7, up to a depth of 16): a figure measured at depth divided by
 * it is the model's capacity without pipelining. */
double sizing_pipeline_factor(int depth);

enum sizing_availability {
    SIZING_AVAILABILITY_NONE,
    SIZING_AVAILABILITY_STANDARD,
    SIZING_AVAILABILITY_PRODUCTION
};
enum sizing_mode { SIZING_MODE_ANY, SIZING_MODE_ENABLED, SIZING_MODE_DISABLED };

/* The data types a key may hold, for the mix of the dataset. */
enum sizing_type {
    SIZING_STRINGS,
    SIZING_HASHES,
    SIZING_SETS,
    SIZING_SORTED_SETS,
    SIZING_LISTS,
    SIZING_TYPE_COUNT
};
extern const char *const sizing_type_names[SIZING_TYPE_COUNT + 1];

/* A workload, as POST /v1/sizing describes it (checked by its caller). */
struct sizing_input {
    const char *id;             /* the cluster id the spec gets */
    const char *engine;         /* "redis" / "valkey" */
    const char *engine_version; /* a line of the engine */
    /* The dataset: keys with their average sizes, or only its bytes. */
    bool has_keys;
    double keys, avg_key_bytes, avg_value_bytes;
    double data_bytes;             /* when !has_keys */
    double mix[SIZING_TYPE_COUNT]; /* fractions of the keys, summing to 1 */
    bool ttl;                      /* keys expire */
    double growth_percent;         /* over the horizon */
    int horizon_months;
    /* Traffic at its peak. */
    double rps, read_ratio;
    int connections, pipeline;
    bool read_from_replicas;
    /* Availability and shape. */
    enum sizing_availability availability;
    int replicas; /* replicas per shard asked; -1: as availability says */
    enum sizing_mode mode;
    /* Constraints. */
    const char *const *families; /* NULL-terminated, or NULL: any */
    double max_monthly_usd;      /* 0: no budget */
    int azs;                     /* zones the hosts span; 0: not said */
    int max_options;
};

/* The options for in among types[0..ntypes): {"options": [...],
 * "assumptions": [...], "reasons": [...]}, options cheapest first, each
 * with its shape, price, memory and throughput budgets, reasons, warnings
 * and a cluster spec for POST /v1/clusters; "reasons" says why there are
 * none when there are none. The caller owns the result. */
json_t *sizing_recommend(const struct sizing_input *in, const struct sizing_node_type *types,
                         size_t ntypes);

/* The engine's memory per key beyond its payload (bytes), for keys keys of
 * key_bytes and value_bytes in one shard, as the model counts it: the
 * allocations rounded to their size classes, the buckets, an expiry entry
 * with ttl, cluster mode's links for Redis 7.0. Exposed for tests. */
double sizing_key_overhead(const char *engine, const char *version, bool cluster_mode, bool ttl,
                           double keys, double key_bytes, double value_bytes);

/* The allocator's size class for a request of n bytes (jemalloc's). */
size_t sizing_alloc_class(size_t n);

#endif
