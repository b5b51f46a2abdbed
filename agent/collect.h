/* collect.h -- the agent's metrics, as pure functions: which families each
 * engine command counts in (from the engine's own COMMAND reply), what one
 * INFO reply and the host's /proc files say (snapshots), the values of one
 * interval between two snapshots, and their aggregation into periods. The
 * names, units and kinds are the catalog's (engine/metrics.h).
 *
 * ReplicationLag compares two engines: a replica's applied offset with
 * its primary's offset, read by the replica's agent just before (see
 * agent_collect_lag()).
 *
 * Counters are deltas between two snapshots, never raw totals. Between two
 * snapshots of different engine processes (run_id or process_id changed) a
 * counter's delta is the new total when run_id changed (the totals count
 * from the process's start), and absent otherwise; a total that went down
 * (CONFIG RESETSTAT) gives no value either. A failover keeps both
 * processes, and their run_ids: keyspace_hits, commandstats and
 * master_repl_offset go on across a promotion or a demotion, and the
 * deltas are the usual ones.
 *
 * The first snapshot the agent has of an engine (a node new to it, or its
 * own start) counts from zero when nothing the engine did can have been
 * counted before: when the agent spawned that very process, or when its
 * uptime_in_seconds is shorter than the time since the interval began (it
 * started within the interval). Its totals then stand as the deltas, as
 * after a restart. An engine that was up before the interval began
 * (re-adopted by an agent that restarted) holds the totals of its whole
 * life, no count of this interval: its first snapshot gives levels
 * (gauges) only, and its counters start with the next one.
 *
 * The host's counters (/proc/stat, /proc/net/dev) count from the host's
 * boot, and the agent cannot tell what part of them fell in its first
 * interval: CPUUtilization and the Network* counters start with the
 * agent's second host snapshot.
 *
 * Nothing here does I/O or keeps state between calls. */
#ifndef CAIRN_AGENT_COLLECT_H
#define CAIRN_AGENT_COLLECT_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "info.h"

/* Catalog positions a set of values can hold (engine/metrics.h's
 * metric_count must not exceed it; agent_collect_catalog_fits() checks). */
#define AGENT_METRICS_MAX 64

/* What the agent asks for each interval: every section the formulas read.
 * Redis 7.0 and Valkey 8.0 both take several section names. */
#define AGENT_COLLECT_INFO_SECTIONS                                                                \
    "server clients memory persistence stats replication cpu keyspace commandstats"

/* Command families, in the catalog's order of their metrics. */
enum agent_family {
    AGENT_FAM_GET,        /* flag readonly */
    AGENT_FAM_SET,        /* flag write */
    AGENT_FAM_KEY,        /* has key arguments */
    AGENT_FAM_STRING,     /* @string */
    AGENT_FAM_HASH,       /* @hash */
    AGENT_FAM_LIST,       /* @list */
    AGENT_FAM_SETS,       /* @set */
    AGENT_FAM_SORTED_SET, /* @sortedset */
    AGENT_FAM_CLUSTER,    /* CLUSTER and its subcommands */
    AGENT_FAM_PUBSUB,     /* @pubsub */
    AGENT_FAM_EVAL,       /* @scripting */
    AGENT_FAM_NONKEY,     /* no key arguments */
    AGENT_FAM_COUNT,
};

/* One interval's (or period's) values by catalog position. A ratio metric
 * (CacheHitRate, the *Latency ones) keeps its parts, so that a period can
 * add them up before dividing: its value is v / den, and den > 0 whenever
 * has is set. Every other metric has den 0 and its value in v. */
struct agent_values {
    bool has[AGENT_METRICS_MAX];
    double v[AGENT_METRICS_MAX];
    double den[AGENT_METRICS_MAX];
};

/* Every command of one engine process, with its families. */
struct agent_cmdtable;

/* What the host's /proc said at one moment. */
struct agent_host_snap {
    bool has_cpu;
    unsigned long long cpu_busy, cpu_total; /* jiffies, all cores */
    bool has_mem_available, has_swap;
    double mem_available, swap_used; /* bytes */
    bool has_net;
    unsigned long long net_bytes_in, net_bytes_out, net_packets_in, net_packets_out;
};

/* The engine totals that become counters. */
enum agent_total {
    AGENT_TOTAL_CONNECTIONS,   /* total_connections_received */
    AGENT_TOTAL_EVICTED,       /* evicted_keys */
    AGENT_TOTAL_EXPIRED,       /* expired_keys */
    AGENT_TOTAL_HITS,          /* keyspace_hits */
    AGENT_TOTAL_MISSES,        /* keyspace_misses */
    AGENT_TOTAL_REPL_OFFSET,   /* master_repl_offset */
    AGENT_TOTAL_AUTH_FAILURES, /* acl_access_denied_auth (Valkey; not in Redis 7.0) */
    AGENT_TOTAL_COUNT,
};

/* Longest master_host kept, and a replication ID with room to spare (they
 * are 40 hex digits). */
#define AGENT_HOST_MAX   256
#define AGENT_REPLID_MAX 48

/* A replica's side of replication (INFO replication). */
struct agent_replica_link {
    char host[AGENT_HOST_MAX];     /* master_host; "" when absent or too long */
    int port;                      /* master_port */
    char replid[AGENT_REPLID_MAX]; /* master_replid: the stream it follows */
    bool up;                       /* master_link_status:up */
    bool has_offset;
    long long offset; /* slave_repl_offset: the stream it has applied */
    long long down_s; /* master_link_down_since_seconds; -1: unknown */
};

/* What one engine INFO reply said. */
struct agent_engine_snap {
    char run_id[48];
    long long process_id;
    long long uptime_s; /* uptime_in_seconds; -1: not reported */
    int64_t at_us;      /* when it was read (monotonic): CPU rates divide by the time between two */
    bool primary;
    struct agent_replica_link link; /* replicas only */
    struct agent_values levels;     /* the gauges, final */
    bool has_cpu;
    double cpu_s; /* used_cpu_sys + used_cpu_user */
    bool has_total[AGENT_TOTAL_COUNT];
    long long total[AGENT_TOTAL_COUNT];
    bool has_families; /* commandstats read with a command table */
    long long family_calls[AGENT_FAM_COUNT], family_usec[AGENT_FAM_COUNT];
};

/* What a replica's primary said of its stream (INFO replication), read by
 * the replica's agent. */
struct agent_primary_snap {
    char host[AGENT_HOST_MAX]; /* where it was read: the replica's master_host */
    int port;
    char replid[AGENT_REPLID_MAX]; /* master_replid */
    long long offset;              /* master_repl_offset */
    int64_t at_us;                 /* when it was read (monotonic) */
    bool has_rate;
    double rate;            /* bytes/s written since the reading before */
    int64_t still_since_us; /* the first reading that showed this offset */
};

/* A period being aggregated: counters summed, gauges averaged over the
 * samples that had them, ratios from their summed parts. */
struct agent_period {
    int64_t start; /* epoch seconds, a multiple of the period */
    unsigned samples;
    double sum[AGENT_METRICS_MAX];
    double den[AGENT_METRICS_MAX];
    unsigned n[AGENT_METRICS_MAX];
};

/* Whether engine/metrics.h's catalog fits in AGENT_METRICS_MAX and names
 * every metric this module computes. */
bool agent_collect_catalog_fits(void);

/* Build the command table from a COMMAND (or COMMAND INFO) reply: per
 * command and subcommand ("client|setname"), flags readonly -> GET, write
 * -> SET; ACL categories @string, @hash, @list, @set, @sortedset, @pubsub,
 * @scripting -> their families; "cluster" and its subcommands -> CLUSTER;
 * a first key position > 0 or any key spec -> KEY, else NONKEY. nil entries
 * (unknown names in COMMAND INFO) are skipped. Returns the table (free with
 * agent_cmdtable_free()), or NULL with err set when the reply is an error or
 * not shaped like COMMAND's. */
struct agent_cmdtable *agent_cmdtable_parse(const redisReply *reply, char *err, size_t errsize);
void agent_cmdtable_free(struct agent_cmdtable *t);

/* How many commands and subcommands t holds. */
size_t agent_cmdtable_size(const struct agent_cmdtable *t);

/* The families of command name (lower case, "client|setname") as a bit
 * mask, bit f for enum agent_family f; 0 when t does not know it. */
unsigned agent_cmdtable_families(const struct agent_cmdtable *t, const char *name);

/* Read a host snapshot from the text of /proc/stat, /proc/meminfo and
 * /proc/net/dev (each may be NULL: its values are then absent). Network
 * counts are summed over every interface but "lo". */
void agent_collect_host(const char *stat, const char *meminfo, const char *netdev,
                        struct agent_host_snap *out);

/* Put the host metrics of the interval from prev to cur into out (other
 * positions untouched): FreeableMemory and SwapUsage from cur; with prev
 * (NULL at the agent's start: the counts since boot say nothing of the
 * interval), CPUUtilization and the Network* counters from the deltas,
 * each absent when a count went down. */
void agent_collect_host_interval(const struct agent_host_snap *prev,
                                 const struct agent_host_snap *cur, struct agent_values *out);

/* Read an engine snapshot from a parsed INFO reply with the sections of
 * AGENT_COLLECT_INFO_SECTIONS, read at at_us (monotonic). cmds NULL: no
 * family totals (the command table is not known yet). Returns false, with
 * *out cleared, when the reply has no role or run_id (not an engine's
 * INFO). */
bool agent_collect_engine(const struct engine_info *info, const struct agent_cmdtable *cmds,
                          int64_t at_us, struct agent_engine_snap *out);

/* What the agent knows of an engine process it has no earlier snapshot
 * of: when the interval of that first snapshot began, and whether the
 * agent spawned the process itself (the pid the snapshot shows), and when. */
struct agent_engine_first {
    int64_t since_us; /* the start of the interval (monotonic) */
    bool started;
    int64_t started_us; /* when the agent spawned it (monotonic); only meaningful when started */
};

/* Put the engine metrics of the interval from prev to cur into out (other
 * positions untouched): cur's levels, and EngineCPUUtilization, the
 * counters, CacheHitRate and the family counts and latencies, by the rules
 * at the top of this file. prev is NULL when the agent has no earlier
 * snapshot of the node: first then says what it knows of cur's process
 * (NULL: nothing, no counters). ReplicationBytes is 0 on a replica, and
 * absent across a restart and in a process's first interval (the offset
 * is a position in the stream, restored from the RDB, not a count since
 * the start). */
void agent_collect_engine_interval(const struct agent_engine_snap *prev,
                                   const struct agent_engine_snap *cur,
                                   const struct agent_engine_first *first,
                                   struct agent_values *out);

/* Read a primary snapshot from an INFO replication reply that host:port
 * gave at at_us (monotonic). prev is the reading before (NULL: none): the
 * rate is the offset's growth since prev over the time between, when prev
 * is of the same stream (same address, same replid, an offset that did not
 * go down). A restarted or new primary starts a stream whose offsets are
 * unrelated: the rate starts again from this reading. Returns false, with
 * *out cleared, when the reply has no master_replid or master_repl_offset. */
bool agent_collect_primary(const struct engine_info *info, const char *host, int port,
                           int64_t at_us, const struct agent_primary_snap *prev,
                           struct agent_primary_snap *out);

/* Put the ReplicationLag of replica snapshot cur into out (other positions
 * untouched; nothing for a primary). primary: what cur's primary said just
 * before cur was read (NULL: it was not read). The lag is
 *   - while the link is down: the seconds since it went down (nothing when
 *     it never came up);
 *   - while it is up: the bytes the replica has not applied (primary's
 *     offset less slave_repl_offset) over the primary's write rate: 0 when
 *     caught up; when the primary wrote nothing since the reading before,
 *     the seconds since its offset last moved (the bytes missing are at
 *     least that old); nothing when primary is NULL, was read elsewhere
 *     than cur's master_host:port, follows another replid, or has no rate
 *     yet while the replica is behind. */
void agent_collect_lag(const struct agent_engine_snap *cur,
                       const struct agent_primary_snap *primary, struct agent_values *out);

/* The value at catalog position i: v, or v / den for a ratio. Only
 * meaningful when has[i]. */
double agent_values_get(const struct agent_values *v, size_t i);

/* The start of the period that the interval ending at tick_s (epoch
 * seconds) lies in: the interval [tick_s - interval_s, tick_s) belongs to
 * the period holding its first second. */
int64_t agent_collect_period_of(int64_t tick_s, int interval_s, int period_s);

/* Start aggregating the period starting at start. */
void agent_period_init(struct agent_period *p, int64_t start);

/* Add one interval's values to p. */
void agent_period_add(struct agent_period *p, const struct agent_values *v);

/* The values of p: counters summed, gauges averaged, ratios over their
 * summed parts (absent when the parts sum to 0). out has den 0 throughout. */
void agent_period_result(const struct agent_period *p, struct agent_values *out);

#endif
