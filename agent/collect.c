/* collect.c -- metric formulas: command families, snapshots of INFO and
 * /proc, interval deltas and period aggregation (see collect.h). */
#include "collect.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metrics.h"
#include "xalloc.h"

/* ---- catalog positions --------------------------------------------------- */

/* The catalog position of a metric this module computes; a name missing
 * from the catalog is a bug here. */
static size_t pos(const char *name)
{
    int i = metric_index(name);

    assert(i >= 0 && (size_t)i < AGENT_METRICS_MAX);
    return (size_t)i;
}

static void put(struct agent_values *out, const char *name, double value)
{
    size_t i = pos(name);

    out->has[i] = true;
    out->v[i] = value;
    out->den[i] = 0;
}

/* A ratio num / den; nothing when den is 0 (no value for the interval). */
static void put_ratio(struct agent_values *out, const char *name, double num, double den)
{
    size_t i = pos(name);

    if (den <= 0)
        return;
    out->has[i] = true;
    out->v[i] = num;
    out->den[i] = den;
}

bool agent_collect_catalog_fits(void)
{
    return metric_count <= AGENT_METRICS_MAX;
}

double agent_values_get(const struct agent_values *v, size_t i)
{
    return v->den[i] > 0 ? v->v[i] / v->den[i] : v->v[i];
}

/* ---- command families ---------------------------------------------------- */

/* Each family's call count; its average latency per call is the metric
 * named the same with "Latency" after it, as the catalog's FAMILY() makes
 * the pair. */
static const char *const family_metric[AGENT_FAM_COUNT] = {
    [AGENT_FAM_GET] = "GetTypeCmds",          [AGENT_FAM_SET] = "SetTypeCmds",
    [AGENT_FAM_KEY] = "KeyBasedCmds",         [AGENT_FAM_STRING] = "StringBasedCmds",
    [AGENT_FAM_HASH] = "HashBasedCmds",       [AGENT_FAM_LIST] = "ListBasedCmds",
    [AGENT_FAM_SETS] = "SetBasedCmds",        [AGENT_FAM_SORTED_SET] = "SortedSetBasedCmds",
    [AGENT_FAM_CLUSTER] = "ClusterBasedCmds", [AGENT_FAM_PUBSUB] = "PubSubBasedCmds",
    [AGENT_FAM_EVAL] = "EvalBasedCmds",       [AGENT_FAM_NONKEY] = "NonKeyTypeCmds",
};

/* ACL categories that make a family. */
static const struct {
    const char *category;
    enum agent_family family;
} categories[] = {
    {"@string", AGENT_FAM_STRING},
    {"@hash", AGENT_FAM_HASH},
    {"@list", AGENT_FAM_LIST},
    {"@set", AGENT_FAM_SETS},
    {"@sortedset", AGENT_FAM_SORTED_SET},
    {"@pubsub", AGENT_FAM_PUBSUB},
    {"@scripting", AGENT_FAM_EVAL},
};

#define FAM(f) (1u << (f))

struct agent_cmd {
    const char *name; /* into the table's names */
    unsigned families;
};

struct agent_cmdtable {
    struct agent_cmd *cmds; /* sorted by name */
    size_t n;
    char *names;
};

/* The table while COMMAND is read: names by offset, as the buffer moves. */
struct builder {
    struct {
        size_t off;
        unsigned families;
    } * cmds;
    size_t n, cap;
    char *names;
    size_t len, cap_names;
};

/* An array, or a RESP3 set (flags and categories) where hiredis has them. */
static bool is_collection(const redisReply *r)
{
    if (r == NULL)
        return false;
#ifdef REDIS_REPLY_SET
    if (r->type == REDIS_REPLY_SET)
        return true;
#endif
    return r->type == REDIS_REPLY_ARRAY;
}

/* Whether the flags or categories collection r holds the string s. */
static bool holds(const redisReply *r, const char *s)
{
    if (!is_collection(r))
        return false;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if ((e->type == REDIS_REPLY_STATUS || e->type == REDIS_REPLY_STRING) &&
            strcasecmp(e->str, s) == 0)
            return true;
    }
    return false;
}

static void builder_add(struct builder *b, const char *name, size_t len, unsigned families)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->cmds = xrealloc(b->cmds, b->cap * sizeof(*b->cmds));
    }
    if (b->len + len + 1 > b->cap_names) {
        b->cap_names = b->cap_names ? b->cap_names * 2 : 4096;
        while (b->cap_names < b->len + len + 1)
            b->cap_names *= 2;
        b->names = xrealloc(b->names, b->cap_names);
    }
    for (size_t i = 0; i < len; i++)
        b->names[b->len + i] = (char)tolower((unsigned char)name[i]);
    b->names[b->len + len] = '\0';
    b->cmds[b->n].off = b->len;
    b->cmds[b->n].families = families;
    b->n++;
    b->len += len + 1;
}

/* Add one entry of COMMAND (name, arity, flags, first key, last key, step,
 * categories, tips, key specs, subcommands) and its subcommands. Entries
 * that are nil or not shaped so are skipped. */
static void add_command(struct builder *b, const redisReply *e, int depth)
{
    unsigned fam = 0;
    long long first_key = 0;

    if (!is_collection(e) || e->elements < 6 || e->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *name = e->element[0]->str;
    const redisReply *flags = e->element[2];
    const redisReply *cats = e->elements > 6 ? e->element[6] : NULL;
    const redisReply *specs = e->elements > 8 ? e->element[8] : NULL;
    const redisReply *subs = e->elements > 9 ? e->element[9] : NULL;

    if (holds(flags, "readonly"))
        fam |= FAM(AGENT_FAM_GET);
    if (holds(flags, "write"))
        fam |= FAM(AGENT_FAM_SET);
    for (size_t i = 0; i < sizeof(categories) / sizeof(categories[0]); i++) {
        if (holds(cats, categories[i].category))
            fam |= FAM(categories[i].family);
    }
    if (strcasecmp(name, "cluster") == 0 || strncasecmp(name, "cluster|", 8) == 0)
        fam |= FAM(AGENT_FAM_CLUSTER);
    if (e->element[3]->type == REDIS_REPLY_INTEGER)
        first_key = e->element[3]->integer;
    if (first_key > 0 || (is_collection(specs) && specs->elements > 0))
        fam |= FAM(AGENT_FAM_KEY);
    else
        fam |= FAM(AGENT_FAM_NONKEY);
    builder_add(b, name, e->element[0]->len, fam);
    for (size_t i = 0; depth == 0 && is_collection(subs) && i < subs->elements; i++)
        add_command(b, subs->element[i], depth + 1);
}

static int cmd_compare(const void *x, const void *y)
{
    return strcmp(((const struct agent_cmd *)x)->name, ((const struct agent_cmd *)y)->name);
}

struct agent_cmdtable *agent_cmdtable_parse(const redisReply *reply, char *err, size_t errsize)
{
    struct builder b = {0};
    struct agent_cmdtable *t;

    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, errsize, "COMMAND failed: %s",
                 reply != NULL && reply->str != NULL ? reply->str : "no reply");
        return NULL;
    }
    if (!is_collection(reply)) {
        snprintf(err, errsize, "COMMAND did not answer with an array");
        return NULL;
    }
    for (size_t i = 0; i < reply->elements; i++)
        add_command(&b, reply->element[i], 0);
    t = xcalloc(1, sizeof(*t));
    t->n = b.n;
    t->names = xrealloc(b.names, b.len + 1); /* kept for the process's life: no slack */
    t->cmds = xcalloc(b.n + 1, sizeof(*t->cmds));
    for (size_t i = 0; i < b.n; i++) {
        t->cmds[i].name = t->names + b.cmds[i].off;
        t->cmds[i].families = b.cmds[i].families;
    }
    free(b.cmds);
    qsort(t->cmds, t->n, sizeof(*t->cmds), cmd_compare);
    return t;
}

void agent_cmdtable_free(struct agent_cmdtable *t)
{
    if (t == NULL)
        return;
    free(t->cmds);
    free(t->names);
    free(t);
}

size_t agent_cmdtable_size(const struct agent_cmdtable *t)
{
    return t->n;
}

unsigned agent_cmdtable_families(const struct agent_cmdtable *t, const char *name)
{
    const struct agent_cmd key = {.name = name};
    const struct agent_cmd *c = bsearch(&key, t->cmds, t->n, sizeof(*t->cmds), cmd_compare);

    return c != NULL ? c->families : 0;
}

/* ---- the host ------------------------------------------------------------ */

/* Read up to n unsigned numbers separated by blanks from s; returns how
 * many were read. */
static size_t read_numbers(const char *s, unsigned long long *out, size_t n)
{
    size_t k = 0;

    while (k < n) {
        char *end;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!isdigit((unsigned char)*s))
            break;
        out[k++] = strtoull(s, &end, 10);
        s = end;
    }
    return k;
}

/* The first line of /proc/stat: "cpu user nice system idle iowait irq
 * softirq steal guest guest_nice" (guest time is already in user/nice). */
static void host_cpu(const char *stat, struct agent_host_snap *out)
{
    unsigned long long f[8] = {0};

    if (stat == NULL || strncmp(stat, "cpu ", 4) != 0 || read_numbers(stat + 4, f, 8) < 4)
        return;
    out->cpu_total = 0;
    for (int i = 0; i < 8; i++)
        out->cpu_total += f[i];
    out->cpu_busy = out->cpu_total - f[3] - f[4]; /* less idle and iowait */
    out->has_cpu = true;
}

/* The kB value of a /proc/meminfo line "Key:   123 kB", as bytes. */
static bool meminfo_bytes(const char *meminfo, const char *key, double *out)
{
    size_t klen = strlen(key);

    for (const char *p = meminfo; *p != '\0';) {
        size_t line = strcspn(p, "\n");
        unsigned long long kib;
        if (line > klen && strncmp(p, key, klen) == 0 && p[klen] == ':' &&
            read_numbers(p + klen + 1, &kib, 1) == 1) {
            *out = (double)kib * 1024.0;
            return true;
        }
        p += line + (p[line] == '\n');
    }
    return false;
}

static void host_memory(const char *meminfo, struct agent_host_snap *out)
{
    double total, free_;

    if (meminfo == NULL)
        return;
    out->has_mem_available = meminfo_bytes(meminfo, "MemAvailable", &out->mem_available);
    if (meminfo_bytes(meminfo, "SwapTotal", &total) && meminfo_bytes(meminfo, "SwapFree", &free_)) {
        out->swap_used = total > free_ ? total - free_ : 0;
        out->has_swap = true;
    }
}

/* /proc/net/dev: two header lines, then "  eth0: rx_bytes rx_packets errs
 * drop fifo frame compressed multicast tx_bytes tx_packets ...". */
static void host_network(const char *netdev, struct agent_host_snap *out)
{
    if (netdev == NULL)
        return;
    for (const char *p = netdev; *p != '\0';) {
        size_t line = strcspn(p, "\n");
        const char *colon = memchr(p, ':', line);
        const char *name = p;
        unsigned long long f[10];
        while (name < p + line && *name == ' ')
            name++;
        if (colon != NULL && !(colon - name == 2 && strncmp(name, "lo", 2) == 0) &&
            read_numbers(colon + 1, f, 10) == 10) {
            out->net_bytes_in += f[0];
            out->net_packets_in += f[1];
            out->net_bytes_out += f[8];
            out->net_packets_out += f[9];
            out->has_net = true;
        }
        p += line + (p[line] == '\n');
    }
}

void agent_collect_host(const char *stat, const char *meminfo, const char *netdev,
                        struct agent_host_snap *out)
{
    memset(out, 0, sizeof(*out));
    host_cpu(stat, out);
    host_memory(meminfo, out);
    host_network(netdev, out);
}

/* cur - prev as a counter value, when it did not go down. */
static void put_delta(struct agent_values *out, const char *name, unsigned long long prev,
                      unsigned long long cur)
{
    if (cur >= prev)
        put(out, name, (double)(cur - prev));
}

void agent_collect_host_interval(const struct agent_host_snap *prev,
                                 const struct agent_host_snap *cur, struct agent_values *out)
{
    if (cur->has_mem_available)
        put(out, "FreeableMemory", cur->mem_available);
    if (cur->has_swap)
        put(out, "SwapUsage", cur->swap_used);
    if (prev == NULL)
        return;
    if (prev->has_cpu && cur->has_cpu && cur->cpu_total > prev->cpu_total &&
        cur->cpu_busy >= prev->cpu_busy) {
        double busy = (double)(cur->cpu_busy - prev->cpu_busy);
        double total = (double)(cur->cpu_total - prev->cpu_total);
        put(out, "CPUUtilization", busy > total ? 100.0 : busy / total * 100.0);
    }
    if (prev->has_net && cur->has_net) {
        put_delta(out, "NetworkBytesIn", prev->net_bytes_in, cur->net_bytes_in);
        put_delta(out, "NetworkBytesOut", prev->net_bytes_out, cur->net_bytes_out);
        put_delta(out, "NetworkPacketsIn", prev->net_packets_in, cur->net_packets_in);
        put_delta(out, "NetworkPacketsOut", prev->net_packets_out, cur->net_packets_out);
    }
}

/* ---- the engine ---------------------------------------------------------- */

/* Where each total comes from and the counter it feeds. A total that
 * counts from the process's start can stand for the delta of the first
 * interval after a restart; a position (the replication offset) cannot. */
static const struct {
    const char *metric;
    const char *section, *key;
    bool since_start;
} totals[AGENT_TOTAL_COUNT] = {
    [AGENT_TOTAL_CONNECTIONS] = {"NewConnections", "stats", "total_connections_received", true},
    [AGENT_TOTAL_EVICTED] = {"Evictions", "stats", "evicted_keys", true},
    [AGENT_TOTAL_EXPIRED] = {"Reclaimed", "stats", "expired_keys", true},
    [AGENT_TOTAL_HITS] = {"CacheHits", "stats", "keyspace_hits", true},
    [AGENT_TOTAL_MISSES] = {"CacheMisses", "stats", "keyspace_misses", true},
    [AGENT_TOTAL_REPL_OFFSET] = {"ReplicationBytes", "replication", "master_repl_offset", false},
    [AGENT_TOTAL_AUTH_FAILURES] = {"AuthenticationFailures", "stats", "acl_access_denied_auth",
                                   true},
};

/* Gauges read as they are. */
static const struct {
    const char *metric;
    const char *section, *key;
} levels[] = {
    {"BytesUsedForCache", "memory", "used_memory"},
    {"MemoryFragmentationRatio", "memory", "mem_fragmentation_ratio"},
    {"CurrConnections", "clients", "connected_clients"},
};

/* Keys in every database: the keys= of each "dbN:keys=..,expires=.." line. */
static void engine_items(const struct engine_info *info, struct agent_values *out)
{
    const struct engine_info_section *ks = engine_info_section(info, "keyspace");
    long long sum = 0, keys;

    if (ks == NULL)
        return;
    for (size_t i = 0; i < ks->count; i++) {
        const char *k = ks->entries[i].key;
        if (k[0] == 'd' && k[1] == 'b' && isdigit((unsigned char)k[2]) &&
            engine_info_field_ll(ks->entries[i].value, "keys", &keys))
            sum += keys;
    }
    put(out, "CurrItems", (double)sum);
}

/* Copy string s into out (size bytes); "" when absent or too long. */
static void copy_field(char *out, size_t size, const char *s)
{
    if (s == NULL || strlen(s) >= size)
        s = "";
    memcpy(out, s, strlen(s) + 1);
}

/* A replica's link to its primary. */
static void engine_link(const struct engine_info *info, struct agent_replica_link *out)
{
    const char *link = engine_info_get(info, "replication", "master_link_status");
    long long port;

    copy_field(out->host, sizeof(out->host), engine_info_get(info, "replication", "master_host"));
    out->port =
        engine_info_get_ll(info, "replication", "master_port", &port) && port > 0 && port < 65536
            ? (int)port
            : 0;
    copy_field(out->replid, sizeof(out->replid),
               engine_info_get(info, "replication", "master_replid"));
    out->up = link != NULL && strcmp(link, "up") == 0;
    out->has_offset = engine_info_get_ll(info, "replication", "slave_repl_offset", &out->offset);
    if (!engine_info_get_ll(info, "replication", "master_link_down_since_seconds", &out->down_s))
        out->down_s = -1;
}

static void engine_levels(const struct engine_info *info, bool primary, struct agent_values *out)
{
    long long used, max, bgsave, rewrite;
    double d;

    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        if (engine_info_get_double(info, levels[i].section, levels[i].key, &d))
            put(out, levels[i].metric, d);
    }
    if (engine_info_get_ll(info, "memory", "used_memory", &used) &&
        engine_info_get_ll(info, "memory", "maxmemory", &max))
        put(out, "DatabaseMemoryUsagePercentage",
            max > 0 ? (double)used / (double)max * 100.0 : 0.0);
    engine_items(info, out);
    put(out, "IsPrimary", primary ? 1.0 : 0.0);
    bool has_bgsave = engine_info_get_ll(info, "persistence", "rdb_bgsave_in_progress", &bgsave);
    bool has_rewrite = engine_info_get_ll(info, "persistence", "aof_rewrite_in_progress", &rewrite);
    if (has_bgsave || has_rewrite)
        put(out, "SaveInProgress",
            (has_bgsave && bgsave != 0) || (has_rewrite && rewrite != 0) ? 1.0 : 0.0);
}

/* Add every "cmdstat_NAME:calls=C,usec=U,..." line to the families of NAME. */
static void engine_families(const struct engine_info *info, const struct agent_cmdtable *cmds,
                            struct agent_engine_snap *out)
{
    const struct engine_info_section *cs = engine_info_section(info, "commandstats");

    if (cmds == NULL || cs == NULL)
        return;
    out->has_families = true;
    for (size_t i = 0; i < cs->count; i++) {
        const char *k = cs->entries[i].key;
        long long calls, usec;
        if (strncmp(k, "cmdstat_", 8) != 0 ||
            !engine_info_field_ll(cs->entries[i].value, "calls", &calls) ||
            !engine_info_field_ll(cs->entries[i].value, "usec", &usec))
            continue;
        unsigned fam = agent_cmdtable_families(cmds, k + 8);
        for (int f = 0; f < AGENT_FAM_COUNT; f++) {
            if (fam & FAM(f)) {
                out->family_calls[f] += calls;
                out->family_usec[f] += usec;
            }
        }
    }
}

bool agent_collect_engine(const struct engine_info *info, const struct agent_cmdtable *cmds,
                          int64_t at_us, struct agent_engine_snap *out)
{
    const char *role = engine_info_get(info, "replication", "role");
    const char *run_id = engine_info_get(info, "server", "run_id");
    double sys, user;

    memset(out, 0, sizeof(*out));
    if (role == NULL || run_id == NULL)
        return false;
    snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
    if (!engine_info_get_ll(info, "server", "process_id", &out->process_id))
        out->process_id = 0;
    if (!engine_info_get_ll(info, "server", "uptime_in_seconds", &out->uptime_s))
        out->uptime_s = -1;
    out->at_us = at_us;
    out->primary = strcmp(role, "master") == 0;
    engine_levels(info, out->primary, &out->levels);
    if (!out->primary)
        engine_link(info, &out->link);
    if (engine_info_get_double(info, "cpu", "used_cpu_sys", &sys) &&
        engine_info_get_double(info, "cpu", "used_cpu_user", &user)) {
        out->cpu_s = sys + user;
        out->has_cpu = true;
    }
    for (int t = 0; t < AGENT_TOTAL_COUNT; t++)
        out->has_total[t] =
            engine_info_get_ll(info, totals[t].section, totals[t].key, &out->total[t]);
    engine_families(info, cmds, out);
    return true;
}

/* The delta of total t into *out: cur's total less prev's, or cur's total
 * itself when fresh (nothing cur's process did has been counted: it began
 * after prev, or prev is NULL and it counts from zero) and t counts from
 * the process's start. False when either is missing or the total went
 * down. */
static bool total_delta(const struct agent_engine_snap *prev, const struct agent_engine_snap *cur,
                        int t, bool fresh, long long *out)
{
    if (!cur->has_total[t])
        return false;
    if (fresh) {
        *out = cur->total[t];
        return totals[t].since_start && *out >= 0;
    }
    *out = cur->total[t] - prev->total[t];
    return prev->has_total[t] && *out >= 0;
}

static void engine_counters(const struct agent_engine_snap *prev,
                            const struct agent_engine_snap *cur, bool fresh,
                            struct agent_values *out)
{
    long long d, hits = 0, misses = 0;
    bool has_hits = false, has_misses = false;

    for (int t = 0; t < AGENT_TOTAL_COUNT; t++) {
        if (t == AGENT_TOTAL_REPL_OFFSET && !cur->primary) {
            put(out, totals[t].metric, 0); /* replicas do not write a stream */
            continue;
        }
        if (!total_delta(prev, cur, t, fresh, &d))
            continue;
        put(out, totals[t].metric, (double)d);
        if (t == AGENT_TOTAL_HITS) {
            hits = d;
            has_hits = true;
        } else if (t == AGENT_TOTAL_MISSES) {
            misses = d;
            has_misses = true;
        }
    }
    if (has_hits && has_misses)
        put_ratio(out, "CacheHitRate", (double)hits * 100.0, (double)(hits + misses));
}

static void engine_family_deltas(const struct agent_engine_snap *prev,
                                 const struct agent_engine_snap *cur, bool fresh,
                                 struct agent_values *out)
{
    if (!cur->has_families || (!fresh && !prev->has_families))
        return;
    for (int f = 0; f < AGENT_FAM_COUNT; f++) {
        long long calls = cur->family_calls[f] - (fresh ? 0 : prev->family_calls[f]);
        long long usec = cur->family_usec[f] - (fresh ? 0 : prev->family_usec[f]);
        if (calls < 0 || usec < 0)
            continue; /* CONFIG RESETSTAT */
        char latency[64];
        snprintf(latency, sizeof(latency), "%sLatency", family_metric[f]);
        put(out, family_metric[f], (double)calls);
        put_ratio(out, latency, (double)usec, (double)calls);
    }
}

/* Whether cur, the first snapshot of its process, counts from zero: the
 * agent spawned that process, or it started within the interval. */
static bool counts_from_zero(const struct agent_engine_snap *cur,
                             const struct agent_engine_first *first)
{
    if (first == NULL)
        return false;
    if (first->started)
        return true;
    return cur->uptime_s >= 0 &&
           (double)cur->uptime_s < (double)(cur->at_us - first->since_us) / 1e6;
}

void agent_collect_engine_interval(const struct agent_engine_snap *prev,
                                   const struct agent_engine_snap *cur,
                                   const struct agent_engine_first *first, struct agent_values *out)
{
    bool fresh;
    int64_t from_us;

    for (size_t i = 0; i < AGENT_METRICS_MAX; i++) {
        if (!cur->levels.has[i])
            continue;
        out->has[i] = true;
        out->v[i] = cur->levels.v[i];
        out->den[i] = cur->levels.den[i];
    }
    if (prev != NULL) {
        fresh = strcmp(prev->run_id, cur->run_id) != 0;
        if (prev->process_id != cur->process_id && !fresh)
            return; /* another process under the same run: its totals mean nothing here */
        from_us = prev->at_us;
    } else if (counts_from_zero(cur, first)) {
        fresh = true;
        /* CPU time counts from the process's start: an engine the agent
         * spawned before the interval began spent it over longer. */
        from_us = first->started && first->started_us < first->since_us ? first->started_us
                                                                        : first->since_us;
    } else {
        return;
    }
    double elapsed_s = (double)(cur->at_us - from_us) / 1e6;
    if (cur->has_cpu && (fresh || prev->has_cpu) && elapsed_s > 0) {
        double cpu = cur->cpu_s - (fresh ? 0 : prev->cpu_s);
        if (cpu >= 0)
            put(out, "EngineCPUUtilization", cpu / elapsed_s * 100.0);
    }
    engine_counters(prev, cur, fresh, out);
    engine_family_deltas(prev, cur, fresh, out);
}

/* ---- replication lag ----------------------------------------------------- */

/* Whether two readings of a primary are of one stream: the same address
 * and replid, the offset not gone down. */
static bool same_stream(const struct agent_primary_snap *a, const struct agent_primary_snap *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0 &&
           strcmp(a->replid, b->replid) == 0 && b->offset >= a->offset;
}

bool agent_collect_primary(const struct engine_info *info, const char *host, int port,
                           int64_t at_us, const struct agent_primary_snap *prev,
                           struct agent_primary_snap *out)
{
    const char *replid = engine_info_get(info, "replication", "master_replid");

    memset(out, 0, sizeof(*out));
    if (replid == NULL || strlen(replid) >= sizeof(out->replid) ||
        !engine_info_get_ll(info, "replication", "master_repl_offset", &out->offset))
        return false;
    copy_field(out->host, sizeof(out->host), host);
    out->port = port;
    copy_field(out->replid, sizeof(out->replid), replid);
    out->at_us = at_us;
    out->still_since_us = at_us;
    if (prev == NULL || !same_stream(prev, out) || at_us <= prev->at_us)
        return true;
    out->has_rate = true;
    out->rate = (double)(out->offset - prev->offset) / ((double)(at_us - prev->at_us) / 1e6);
    if (out->offset == prev->offset)
        out->still_since_us = prev->still_since_us;
    return true;
}

void agent_collect_lag(const struct agent_engine_snap *cur,
                       const struct agent_primary_snap *primary, struct agent_values *out)
{
    const struct agent_replica_link *l = &cur->link;

    if (cur->primary)
        return;
    if (!l->up) {
        if (l->down_s >= 0)
            put(out, "ReplicationLag", (double)l->down_s);
        return;
    }
    if (primary == NULL || !l->has_offset || primary->port != l->port ||
        strcmp(primary->host, l->host) != 0 || strcmp(primary->replid, l->replid) != 0)
        return;
    long long behind = primary->offset - l->offset;
    if (behind <= 0)
        put(out, "ReplicationLag", 0);
    else if (primary->has_rate && primary->rate > 0)
        put(out, "ReplicationLag", (double)behind / primary->rate);
    else if (primary->has_rate)
        put(out, "ReplicationLag", (double)(primary->at_us - primary->still_since_us) / 1e6);
}

/* ---- periods ------------------------------------------------------------- */

int64_t agent_collect_period_of(int64_t tick_s, int interval_s, int period_s)
{
    int64_t first = tick_s - interval_s;
    int64_t q = first / period_s;

    if (first % period_s < 0)
        q--;
    return q * period_s;
}

void agent_period_init(struct agent_period *p, int64_t start)
{
    memset(p, 0, sizeof(*p));
    p->start = start;
}

void agent_period_add(struct agent_period *p, const struct agent_values *v)
{
    p->samples++;
    for (size_t i = 0; i < AGENT_METRICS_MAX; i++) {
        if (!v->has[i])
            continue;
        p->sum[i] += v->v[i];
        p->den[i] += v->den[i];
        p->n[i]++;
    }
}

void agent_period_result(const struct agent_period *p, struct agent_values *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < metric_count && i < AGENT_METRICS_MAX; i++) {
        if (p->n[i] == 0)
            continue;
        out->has[i] = true;
        if (p->den[i] > 0)
            out->v[i] = p->sum[i] / p->den[i];
        else if (metric_catalog[i].kind == METRIC_COUNTER)
            out->v[i] = p->sum[i];
        else
            out->v[i] = p->sum[i] / p->n[i];
    }
}
