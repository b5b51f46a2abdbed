/* metrics.c -- the metric catalog (see metrics.h). */
#include "metrics.h"

#include <string.h>

#define HOST(n, u, k, d)                                                                           \
    {                                                                                              \
        n, u, METRIC_##k, METRIC_HOST, d                                                           \
    }
#define ENGINE(n, u, k, d)                                                                         \
    {                                                                                              \
        n, u, METRIC_##k, METRIC_ENGINE, d                                                         \
    }
/* A command family: its call count and the average latency of its calls. */
#define FAMILY(n, what)                                                                            \
    ENGINE(n, "Count", COUNTER, "Calls of " what " in the period (INFO commandstats)."),           \
        ENGINE(n "Latency", "Microseconds", GAUGE,                                                 \
               "Average time the engine spent per call of " what " (INFO commandstats).")

const struct metric_def metric_catalog[] = {
    HOST("CPUUtilization", "Percent", GAUGE,
         "CPU used on the node's host, all cores (/proc/stat)."),
    HOST("FreeableMemory", "Bytes", GAUGE, "Memory the host can still give out (MemAvailable)."),
    HOST("NetworkBytesIn", "Bytes", COUNTER, "Bytes the host received (/proc/net/dev)."),
    HOST("NetworkBytesOut", "Bytes", COUNTER, "Bytes the host sent (/proc/net/dev)."),
    HOST("NetworkPacketsIn", "Count", COUNTER, "Packets the host received (/proc/net/dev)."),
    HOST("NetworkPacketsOut", "Count", COUNTER, "Packets the host sent (/proc/net/dev)."),
    HOST("SwapUsage", "Bytes", GAUGE, "Swap in use on the host (SwapTotal - SwapFree)."),
    ENGINE("EngineCPUUtilization", "Percent", GAUGE,
           "CPU the engine process used, as a percentage of one core (used_cpu_sys + "
           "used_cpu_user)."),
    ENGINE("BytesUsedForCache", "Bytes", GAUGE, "Memory the engine uses for data (used_memory)."),
    ENGINE("DatabaseMemoryUsagePercentage", "Percent", GAUGE,
           "used_memory as a percentage of maxmemory."),
    ENGINE("MemoryFragmentationRatio", "None", GAUGE,
           "Resident memory over used memory (mem_fragmentation_ratio)."),
    ENGINE("CurrConnections", "Count", GAUGE, "Client connections open (connected_clients)."),
    ENGINE("NewConnections", "Count", COUNTER,
           "Client connections accepted (total_connections_received)."),
    ENGINE("CurrItems", "Count", GAUGE, "Keys in all databases (INFO keyspace)."),
    ENGINE("Evictions", "Count", COUNTER, "Keys evicted for maxmemory (evicted_keys)."),
    ENGINE("Reclaimed", "Count", COUNTER, "Keys removed on expiry (expired_keys)."),
    ENGINE("CacheHits", "Count", COUNTER, "Successful key lookups (keyspace_hits)."),
    ENGINE("CacheMisses", "Count", COUNTER, "Key lookups that found nothing (keyspace_misses)."),
    ENGINE("CacheHitRate", "Percent", GAUGE, "Hits over hits plus misses in the period."),
    ENGINE("IsPrimary", "Count", GAUGE, "1 while the node is a primary, 0 while a replica."),
    ENGINE("ReplicationBytes", "Bytes", COUNTER,
           "Bytes a primary wrote to its replication stream (master_repl_offset)."),
    ENGINE("ReplicationLag", "Seconds", GAUGE,
           "On a replica: the bytes it has yet to apply (its primary's master_repl_offset less "
           "its slave_repl_offset) over the rate its primary writes them, in seconds."),
    ENGINE("SaveInProgress", "Count", GAUGE,
           "1 while a snapshot or AOF rewrite runs in the background, else 0."),
    ENGINE("AuthenticationFailures", "Count", COUNTER,
           "Failed AUTH attempts (acl_access_denied_auth)."),
    FAMILY("GetTypeCmds", "read-only commands"),
    FAMILY("SetTypeCmds", "commands that write"),
    FAMILY("KeyBasedCmds", "commands that act on keys"),
    FAMILY("StringBasedCmds", "string commands"),
    FAMILY("HashBasedCmds", "hash commands"),
    FAMILY("ListBasedCmds", "list commands"),
    FAMILY("SetBasedCmds", "set commands"),
    FAMILY("SortedSetBasedCmds", "sorted set commands"),
    FAMILY("ClusterBasedCmds", "CLUSTER commands"),
    FAMILY("PubSubBasedCmds", "pub/sub commands"),
    FAMILY("EvalBasedCmds", "scripting commands (EVAL, FCALL, ...)"),
    FAMILY("NonKeyTypeCmds", "commands that act on no key"),
};

const size_t metric_count = sizeof(metric_catalog) / sizeof(metric_catalog[0]);

int metric_index(const char *name)
{
    for (size_t i = 0; i < metric_count; i++) {
        if (strcmp(metric_catalog[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}
