/* test_agent_metrics.c -- the agent's metrics (agent/collect.h,
 * agent/outbox.h): command families from real COMMAND INFO replies of Redis
 * 7.0 and Valkey 8.0, every INFO and /proc formula, counters in a
 * process's first sample and across restarts, resets and failovers,
 * replication lag from a replica's and its primary's offsets, aggregation
 * into periods, and the outbox with the body it sends to cairnd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "catalog.h"
#include "collect.h"
#include "fixtures/fixture.h"
#include "info.h"
#include "metrics.h"
#include "outbox.h"

#define ID_A "0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6b"
#define ID_B "00000000-0000-0000-0000-000000000002"

/* ---- helpers ------------------------------------------------------------- */

static size_t at(const char *name)
{
    int i = metric_index(name);
    if (i < 0)
        fail_msg("%s is not in the catalog", name);
    return (size_t)i;
}

static void want_value(const struct agent_values *v, const char *name, double want)
{
    size_t i = at(name);
    if (!v->has[i])
        fail_msg("%s: no value, expected %.6f", name, want);
    double got = agent_values_get(v, i);
    if (got < want - 1e-9 * (1 + (want < 0 ? -want : want)) ||
        got > want + 1e-9 * (1 + (want < 0 ? -want : want)))
        fail_msg("%s: got %.9f, expected %.9f", name, got, want);
}

static void want_none(const struct agent_values *v, const char *name)
{
    size_t i = at(name);
    if (v->has[i])
        fail_msg("%s: expected no value, got %.6f", name, agent_values_get(v, i));
}

static size_t count_values(const struct agent_values *v)
{
    size_t n = 0;
    for (size_t i = 0; i < AGENT_METRICS_MAX; i++)
        n += v->has[i];
    return n;
}

static struct agent_cmdtable *load_cmds(const char *engine)
{
    redisReply *r = fixture_reply_engine(engine, "command_info.resp");
    char err[256];
    struct agent_cmdtable *t = agent_cmdtable_parse(r, err, sizeof(err));

    if (t == NULL)
        fail_msg("%s/command_info.resp: %s", engine, err);
    freeReplyObject(r);
    return t;
}

static struct engine_info *load_info(const char *engine, const char *file)
{
    size_t len;
    char *text = fixture_load_engine(engine, file, &len);
    struct engine_info *info = engine_info_parse(text, len);

    free(text);
    return info;
}

/* The numbers of a hand-written INFO reply: what moves between samples. */
struct fake {
    const char *run_id; /* default "run-1" */
    long long pid;      /* default 100 */
    const char *role;   /* default "master" */
    long long uptime;   /* uptime_in_seconds; -1: not reported */
    double cpu;         /* used_cpu_sys; used_cpu_user is always 0.5 */
    long long conns, evicted, expired, hits, misses, offset;
    long long used_memory, maxmemory;
    const char *stats_extra;       /* more "key:value\r\n" lines of Stats */
    const char *replication_extra; /* more lines of Replication */
    const char *persistence;       /* the Persistence lines; default nothing running */
    const char *cmdstats;          /* the Commandstats lines */
};

static struct engine_info *fake_info(const struct fake *f)
{
    char uptime[64] = "";
    if (f->uptime >= 0)
        snprintf(uptime, sizeof(uptime), "uptime_in_seconds:%lld\r\n", f->uptime);
    char *text = xasprintf(
        "# Server\r\nredis_version:7.2.4\r\nprocess_id:%lld\r\nrun_id:%s\r\n%s\r\n"
        "# Clients\r\nconnected_clients:3\r\n\r\n"
        "# Memory\r\nused_memory:%lld\r\nmaxmemory:%lld\r\nmem_fragmentation_ratio:1.25\r\n\r\n"
        "# Persistence\r\nloading:0\r\n%s\r\n"
        "# Stats\r\ntotal_connections_received:%lld\r\nexpired_keys:%lld\r\n"
        "evicted_keys:%lld\r\nkeyspace_hits:%lld\r\nkeyspace_misses:%lld\r\n%s\r\n"
        "# Replication\r\nrole:%s\r\n%smaster_repl_offset:%lld\r\n\r\n"
        "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:0.500000\r\n\r\n"
        "# Commandstats\r\n%s\r\n"
        "# Keyspace\r\ndb0:keys=5,expires=1,avg_ttl=0\r\ndb3:keys=2,expires=0,avg_ttl=0\r\n",
        f->pid ? f->pid : 100, f->run_id ? f->run_id : "run-1", uptime, f->used_memory,
        f->maxmemory,
        f->persistence ? f->persistence
                       : "rdb_bgsave_in_progress:0\r\naof_rewrite_in_progress:0\r\n",
        f->conns, f->expired, f->evicted, f->hits, f->misses, f->stats_extra ? f->stats_extra : "",
        f->role ? f->role : "master", f->replication_extra ? f->replication_extra : "", f->offset,
        f->cpu, f->cmdstats ? f->cmdstats : "");
    struct engine_info *info = engine_info_parse(text, strlen(text));
    free(text);
    return info;
}

static void fake_snap(const struct fake *f, const struct agent_cmdtable *cmds, int64_t at_us,
                      struct agent_engine_snap *out)
{
    struct engine_info *info = fake_info(f);
    assert_true(agent_collect_engine(info, cmds, at_us, out));
    engine_info_free(info);
}

/* The engine values of the interval from a to b (a NULL: no earlier one,
 * and nothing known of b's process). */
static void interval(const struct agent_engine_snap *a, const struct agent_engine_snap *b,
                     struct agent_values *out)
{
    memset(out, 0, sizeof(*out));
    agent_collect_engine_interval(a, b, NULL, out);
}

/* The engine values of b, the agent's first snapshot of its process, in an
 * interval that began interval_s before b was read; started_s: when the
 * agent spawned the process, in seconds before b was read (< 0: it did
 * not, the process was adopted). */
static void first_interval(const struct agent_engine_snap *b, double interval_s, double started_s,
                           struct agent_values *out)
{
    const struct agent_engine_first first = {
        .since_us = b->at_us - (int64_t)(interval_s * 1e6),
        .started = started_s >= 0,
        .started_us = b->at_us - (int64_t)(started_s * 1e6),
    };
    memset(out, 0, sizeof(*out));
    agent_collect_engine_interval(NULL, b, &first, out);
}

/* ---- the catalog --------------------------------------------------------- */

static void test_catalog_fits(void **state)
{
    (void)state;
    assert_true(agent_collect_catalog_fits());
    assert_true(metric_count <= AGENT_METRICS_MAX);
}

/* ---- command families ---------------------------------------------------- */

#define F(x) (1u << AGENT_FAM_##x)

static const struct {
    const char *command;
    unsigned families;
} family_cases[] = {
    {"get", F(GET) | F(KEY) | F(STRING)},
    {"mget", F(GET) | F(KEY) | F(STRING)},
    {"set", F(SET) | F(KEY) | F(STRING)},
    {"incr", F(SET) | F(KEY) | F(STRING)},
    {"del", F(SET) | F(KEY)},
    {"hset", F(SET) | F(KEY) | F(HASH)},
    {"lpush", F(SET) | F(KEY) | F(LIST)},
    {"sadd", F(SET) | F(KEY) | F(SETS)},
    {"zadd", F(SET) | F(KEY) | F(SORTED_SET)},
    {"publish", F(PUBSUB) | F(NONKEY)},
    {"subscribe", F(PUBSUB) | F(NONKEY)},
    {"eval", F(EVAL) | F(KEY)}, /* numkeys: a key spec, first key 0 */
    {"fcall", F(EVAL) | F(KEY)},
    {"cluster", F(CLUSTER) | F(NONKEY)},
    {"cluster|info", F(CLUSTER) | F(NONKEY)},
    {"cluster|countkeysinslot", F(CLUSTER) | F(NONKEY)},
    {"client|setname", F(NONKEY)},
    {"ping", F(NONKEY)},
    {"info", F(NONKEY)},
    {"psync", F(NONKEY)},
    {"replconf", F(NONKEY)},
};

static void test_cmdtable_fixtures(void **state)
{
    (void)state;
    for (int e = 0; e < ENGINE_KIND_COUNT; e++) {
        struct agent_cmdtable *t = load_cmds(engine_kind_names[e]);
        for (size_t i = 0; i < sizeof(family_cases) / sizeof(family_cases[0]); i++) {
            unsigned got = agent_cmdtable_families(t, family_cases[i].command);
            if (got != family_cases[i].families)
                fail_msg("%s %s: families 0x%x, expected 0x%x", engine_kind_names[e],
                         family_cases[i].command, got, family_cases[i].families);
        }
        assert_int_equal(agent_cmdtable_families(t, "nosuchcommand"), 0);
        assert_int_equal(agent_cmdtable_families(t, "cluster|nosuch"), 0);
        /* 19 commands asked for, with the subcommands of cluster and client. */
        assert_true(agent_cmdtable_size(t) > 19 + 40);
        agent_cmdtable_free(t);
    }
}

static void test_cmdtable_errors(void **state)
{
    char err[256];
    redisReply *r;

    (void)state;
    r = fixture_reply_str("-NOPERM this user has no permissions to run the 'command' command\r\n");
    assert_null(agent_cmdtable_parse(r, err, sizeof(err)));
    assert_non_null(strstr(err, "NOPERM"));
    freeReplyObject(r);

    r = fixture_reply_str("+OK\r\n");
    assert_null(agent_cmdtable_parse(r, err, sizeof(err)));
    freeReplyObject(r);

    /* COMMAND INFO of an unknown name answers nil for it; an entry of the
     * wrong shape is skipped too. Upper case names are folded. */
    r = fixture_reply_str("*3\r\n$-1\r\n:5\r\n"
                          "*10\r\n$3\r\nGET\r\n:2\r\n*1\r\n+readonly\r\n:1\r\n:1\r\n:1\r\n"
                          "*1\r\n+@string\r\n*0\r\n*0\r\n*0\r\n");
    struct agent_cmdtable *t = agent_cmdtable_parse(r, err, sizeof(err));
    freeReplyObject(r);
    assert_non_null(t);
    assert_int_equal(agent_cmdtable_size(t), 1);
    assert_int_equal(agent_cmdtable_families(t, "get"), F(GET) | F(KEY) | F(STRING));
    agent_cmdtable_free(t);

    /* No categories (an engine before ACLs): flags and keys still count. */
    r = fixture_reply_str("*1\r\n*6\r\n$4\r\nkeys\r\n:2\r\n*1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n");
    t = agent_cmdtable_parse(r, err, sizeof(err));
    freeReplyObject(r);
    assert_int_equal(agent_cmdtable_families(t, "keys"), F(GET) | F(NONKEY));
    agent_cmdtable_free(t);
}

/* ---- engine levels (gauges) ---------------------------------------------- */

struct level_case {
    const char *engine, *file;
    double used_memory, frag, clients;
    bool primary;
};

static const struct level_case level_cases[] = {
    {"redis", "info_primary.txt", 1158608, 11.11, 1, true},
    {"redis", "info_replica.txt", 969520, 13.38, 2, false},
    {"valkey", "info_primary.txt", 1192064, 11.37, 1, true},
    {"valkey", "info_replica.txt", 1023072, 13.41, 2, false},
};

static void test_engine_levels(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(level_cases) / sizeof(level_cases[0]); c++) {
        const struct level_case *k = &level_cases[c];
        struct engine_info *info = load_info(k->engine, k->file);
        struct agent_engine_snap s;
        struct agent_values v;

        assert_true(agent_collect_engine(info, NULL, 1000, &s));
        engine_info_free(info);
        interval(NULL, &s, &v);
        want_value(&v, "BytesUsedForCache", k->used_memory);
        want_value(&v, "DatabaseMemoryUsagePercentage", 0); /* maxmemory 0 */
        want_value(&v, "MemoryFragmentationRatio", k->frag);
        want_value(&v, "CurrConnections", k->clients);
        want_value(&v, "CurrItems", 12);
        want_value(&v, "IsPrimary", k->primary ? 1 : 0);
        want_value(&v, "SaveInProgress", 0);
        want_none(&v, "ReplicationLag"); /* it needs the primary: agent_collect_lag() */
        /* A first sample, nothing known of the process: levels only. */
        want_none(&v, "EngineCPUUtilization");
        want_none(&v, "NewConnections");
        want_none(&v, "CacheHits");
        want_none(&v, "CacheHitRate");
        want_none(&v, "ReplicationBytes");
        want_none(&v, "GetTypeCmds");
        assert_int_equal(count_values(&v), 7);
        /* Valkey reports failed AUTHs, Redis 7.0 does not. */
        assert_int_equal(s.has_total[AGENT_TOTAL_AUTH_FAILURES], strcmp(k->engine, "valkey") == 0);
    }
}

static void test_engine_levels_formulas(void **state)
{
    struct agent_engine_snap s;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.used_memory = 250, .maxmemory = 1000}, NULL, 0, &s);
    interval(NULL, &s, &v);
    want_value(&v, "DatabaseMemoryUsagePercentage", 25);
    want_value(&v, "BytesUsedForCache", 250);
    want_value(&v, "CurrItems", 7); /* db0 and db3 */
    want_value(&v, "MemoryFragmentationRatio", 1.25);
    want_value(&v, "CurrConnections", 3);

    fake_snap(&(struct fake){.persistence = "rdb_bgsave_in_progress:0\r\n"
                                            "aof_rewrite_in_progress:1\r\n"},
              NULL, 0, &s);
    interval(NULL, &s, &v);
    want_value(&v, "SaveInProgress", 1);
    fake_snap(&(struct fake){.persistence = "rdb_bgsave_in_progress:1\r\n"}, NULL, 0, &s);
    interval(NULL, &s, &v);
    want_value(&v, "SaveInProgress", 1);

    /* Not an engine's INFO. */
    struct engine_info *info = engine_info_parse("# Server\r\nfoo:bar\r\n", 20);
    assert_false(agent_collect_engine(info, NULL, 0, &s));
    engine_info_free(info);
}

/* ---- engine counters ----------------------------------------------------- */

static void test_engine_counters(void **state)
{
    struct agent_engine_snap a, b;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.cpu = 1.0,
                             .conns = 10,
                             .evicted = 1,
                             .expired = 2,
                             .hits = 30,
                             .misses = 10,
                             .offset = 1000,
                             .stats_extra = "acl_access_denied_auth:4\r\n"},
              NULL, 1000000, &a);
    fake_snap(&(struct fake){.cpu = 1.5,
                             .conns = 15,
                             .evicted = 4,
                             .expired = 12,
                             .hits = 60,
                             .misses = 20,
                             .offset = 1500,
                             .stats_extra = "acl_access_denied_auth:6\r\n"},
              NULL, 11000000, &b);
    interval(&a, &b, &v);
    /* 0.5 s of CPU over 10 s. */
    want_value(&v, "EngineCPUUtilization", 5);
    want_value(&v, "NewConnections", 5);
    want_value(&v, "Evictions", 3);
    want_value(&v, "Reclaimed", 10);
    want_value(&v, "CacheHits", 30);
    want_value(&v, "CacheMisses", 10);
    want_value(&v, "CacheHitRate", 75);
    want_value(&v, "ReplicationBytes", 500);
    want_value(&v, "AuthenticationFailures", 2);
    /* No command table: no families. */
    want_none(&v, "GetTypeCmds");
    want_none(&v, "NonKeyTypeCmds");

    /* Nothing looked up: no hit rate; a replica writes no stream. */
    fake_snap(&(struct fake){.role = "slave", .offset = 1000}, NULL, 1000000, &a);
    fake_snap(&(struct fake){.role = "slave", .offset = 9000}, NULL, 2000000, &b);
    interval(&a, &b, &v);
    want_value(&v, "CacheHits", 0);
    want_value(&v, "CacheMisses", 0);
    want_none(&v, "CacheHitRate");
    want_value(&v, "ReplicationBytes", 0);
    want_value(&v, "EngineCPUUtilization", 0);
    want_none(&v, "AuthenticationFailures"); /* not reported (Redis 7.0) */
}

/* ---- replication lag ----------------------------------------------------- */

#define REPLID_1 "b6042309a61654f6ae6326b177f6247d9e705942"
#define REPLID_2 "0b17bb9b236bddf63afa2e85944407fb87dcf170"

/* A reading of the primary at 127.0.0.1:port: at offset of stream replid,
 * at_s seconds in, after prev. */
static void primary_at(int port, const char *replid, long long offset, double at_s,
                       const struct agent_primary_snap *prev, struct agent_primary_snap *out)
{
    char *extra = xasprintf("master_replid:%s\r\n", replid);
    struct engine_info *info =
        fake_info(&(struct fake){.offset = offset, .replication_extra = extra});

    assert_true(agent_collect_primary(info, "127.0.0.1", port, (int64_t)(at_s * 1e6), prev, out));
    engine_info_free(info);
    free(extra);
}

/* The lag of a replica of 127.0.0.1:7001 on stream replid that has applied
 * offset, its link up, with primary's reading p (NULL: none). Its primary
 * last spoke 4 s ago: that is no part of the lag. */
static void replica_lag(const char *replid, long long applied, const struct agent_primary_snap *p,
                        struct agent_values *v)
{
    char *extra = xasprintf("master_host:127.0.0.1\r\nmaster_port:7001\r\n"
                            "master_link_status:up\r\nmaster_last_io_seconds_ago:4\r\n"
                            "slave_read_repl_offset:%lld\r\nslave_repl_offset:%lld\r\n"
                            "master_replid:%s\r\n",
                            applied + 100, applied, replid);
    struct agent_engine_snap s;

    fake_snap(&(struct fake){.role = "slave", .offset = applied, .replication_extra = extra}, NULL,
              0, &s);
    free(extra);
    memset(v, 0, sizeof(*v));
    agent_collect_lag(&s, p, v);
}

/* Real INFO of a primary and its replica, caught up: 0; a primary has no
 * lag. */
static void test_lag_fixtures(void **state)
{
    (void)state;
    for (int e = 0; e < ENGINE_KIND_COUNT; e++) {
        struct engine_info *pi = load_info(engine_kind_names[e], "info_primary.txt");
        struct engine_info *ri = load_info(engine_kind_names[e], "info_replica.txt");
        struct agent_engine_snap ps, rs;
        struct agent_primary_snap p0, p1;
        struct agent_values v;

        assert_true(agent_collect_engine(pi, NULL, 0, &ps));
        assert_true(agent_collect_engine(ri, NULL, 0, &rs));
        assert_string_equal(rs.link.host, "127.0.0.1");
        assert_true(rs.link.up && rs.link.has_offset && rs.link.offset == 507);
        assert_true(agent_collect_primary(pi, rs.link.host, rs.link.port, 0, NULL, &p0));
        assert_true(agent_collect_primary(pi, rs.link.host, rs.link.port, 10000000, &p0, &p1));
        assert_int_equal(p1.offset, 507);
        assert_true(p1.has_rate && p1.rate == 0);
        memset(&v, 0, sizeof(v));
        agent_collect_lag(&rs, &p0, &v);
        want_value(&v, "ReplicationLag", 0); /* caught up needs no rate */
        memset(&v, 0, sizeof(v));
        agent_collect_lag(&rs, &p1, &v);
        want_value(&v, "ReplicationLag", 0);
        memset(&v, 0, sizeof(v));
        agent_collect_lag(&ps, &p1, &v);
        want_none(&v, "ReplicationLag");
        engine_info_free(pi);
        engine_info_free(ri);
    }
}

static void test_lag_behind(void **state)
{
    struct agent_primary_snap p0, p1, p2, p3;
    struct agent_values v;

    (void)state;
    /* 10,000 bytes in 10 s: 1,000 B/s. */
    primary_at(7001, REPLID_1, 1000, 0, NULL, &p0);
    assert_false(p0.has_rate);
    primary_at(7001, REPLID_1, 11000, 10, &p0, &p1);
    assert_true(p1.has_rate);
    replica_lag(REPLID_1, 11000, &p1, &v);
    want_value(&v, "ReplicationLag", 0);
    replica_lag(REPLID_1, 11050, &p1, &v); /* read after the primary: ahead of that reading */
    want_value(&v, "ReplicationLag", 0);
    replica_lag(REPLID_1, 8500, &p1, &v);
    want_value(&v, "ReplicationLag", 2.5);
    replica_lag(REPLID_1, 1000, &p1, &v); /* further behind than the interval's writes */
    want_value(&v, "ReplicationLag", 10);

    /* Behind before the primary has a rate: no value, not a guess. */
    replica_lag(REPLID_1, 500, &p0, &v);
    want_none(&v, "ReplicationLag");

    /* The primary writes nothing: the bytes missing are at least as old as
     * the first reading that showed its offset. */
    primary_at(7001, REPLID_1, 11000, 20, &p1, &p2);
    assert_true(p2.has_rate && p2.rate == 0);
    primary_at(7001, REPLID_1, 11000, 30, &p2, &p3);
    replica_lag(REPLID_1, 9000, &p2, &v);
    want_value(&v, "ReplicationLag", 10);
    replica_lag(REPLID_1, 9000, &p3, &v);
    want_value(&v, "ReplicationLag", 20);
    replica_lag(REPLID_1, 11000, &p3, &v);
    want_value(&v, "ReplicationLag", 0);

    /* Not read this interval: no value while the link is up. */
    replica_lag(REPLID_1, 9000, NULL, &v);
    want_none(&v, "ReplicationLag");
}

/* A primary that restarted or changed (failover) starts another stream:
 * no rate across it, so no spike and nothing negative, and the lag comes
 * back with the next reading. */
static void test_lag_primary_changed(void **state)
{
    struct agent_primary_snap p0, p1, q;
    struct agent_values v;

    (void)state;
    primary_at(7001, REPLID_1, 1000, 0, NULL, &p0);
    primary_at(7001, REPLID_1, 900000, 10, &p0, &p1);

    primary_at(7001, REPLID_2, 200, 20, &p1, &q); /* restarted: a new replid */
    assert_false(q.has_rate);
    replica_lag(REPLID_2, 100, &q, &v);
    want_none(&v, "ReplicationLag");
    primary_at(7001, REPLID_1, 500, 20, &p1, &q); /* same replid, the offset went down */
    assert_false(q.has_rate);
    primary_at(7002, REPLID_1, 950000, 20, &p1, &q); /* another address */
    assert_false(q.has_rate);

    /* After a reset, the next reading's rate is of the new stream alone. */
    struct agent_primary_snap r0, r1;
    primary_at(7001, REPLID_2, 200, 20, &p1, &r0);
    primary_at(7001, REPLID_2, 1200, 30, &r0, &r1);
    assert_true(r1.has_rate && r1.rate == 100);
    replica_lag(REPLID_2, 1000, &r1, &v);
    want_value(&v, "ReplicationLag", 2);

    /* A reading of another stream or address than the replica follows
     * says nothing of it (a failover the replica has not caught up with). */
    replica_lag(REPLID_1, 1000, &r1, &v);
    want_none(&v, "ReplicationLag");
    primary_at(7002, REPLID_2, 1200, 30, &r0, &q);
    replica_lag(REPLID_2, 1000, &q, &v);
    want_none(&v, "ReplicationLag");
}

static void test_lag_link_down(void **state)
{
    struct agent_engine_snap s;
    struct agent_primary_snap p0, p1;
    struct agent_values v;

    (void)state;
    primary_at(7001, REPLID_1, 1000, 0, NULL, &p0);
    primary_at(7001, REPLID_1, 2000, 10, &p0, &p1);
    /* Down: the seconds since it went down, whatever the primary says. */
    fake_snap(&(struct fake){.role = "slave",
                             .replication_extra = "master_host:127.0.0.1\r\nmaster_port:7001\r\n"
                                                  "master_link_status:down\r\n"
                                                  "master_last_io_seconds_ago:-1\r\n"
                                                  "master_link_down_since_seconds:7\r\n"
                                                  "slave_repl_offset:1500\r\n"
                                                  "master_replid:" REPLID_1 "\r\n"},
              NULL, 0, &s);
    memset(&v, 0, sizeof(v));
    agent_collect_lag(&s, &p1, &v);
    want_value(&v, "ReplicationLag", 7);
    memset(&v, 0, sizeof(v));
    agent_collect_lag(&s, NULL, &v);
    want_value(&v, "ReplicationLag", 7);
    want_none(&v, "IsPrimary"); /* untouched */
    /* Never up: nothing. */
    fake_snap(&(struct fake){.role = "slave",
                             .replication_extra = "master_link_status:down\r\n"
                                                  "master_link_down_since_seconds:-1\r\n"},
              NULL, 0, &s);
    memset(&v, 0, sizeof(v));
    agent_collect_lag(&s, NULL, &v);
    want_none(&v, "ReplicationLag");
    /* No link status at all: nothing. */
    fake_snap(&(struct fake){.role = "slave"}, NULL, 0, &s);
    memset(&v, 0, sizeof(v));
    agent_collect_lag(&s, &p1, &v);
    want_none(&v, "ReplicationLag");

    /* Not a primary's INFO replication. */
    const char *text = "# Replication\r\nrole:master\r\n";
    struct engine_info *info = engine_info_parse(text, strlen(text));
    assert_false(agent_collect_primary(info, "127.0.0.1", 7001, 0, NULL, &p0));
    engine_info_free(info);
}

/* The families of the primaries' commandstats, counted from zero. */
struct family_case {
    const char *engine;
    long long get[2], set[2], key[2], string[2], hash[2], nonkey[2]; /* calls, usec */
};

static const struct family_case family_totals[] = {
    {"redis", {2, 10}, {13, 79}, {15, 89}, {14, 75}, {1, 14}, {8, 139}},
    {"valkey", {2, 10}, {13, 114}, {15, 124}, {14, 110}, {1, 14}, {9, 178}},
};

static void want_family(const struct agent_values *v, const char *name, const long long cu[2])
{
    char *latency = xasprintf("%sLatency", name);
    want_value(v, name, (double)cu[0]);
    want_value(v, latency, (double)cu[1] / (double)cu[0]);
    free(latency);
}

static void test_engine_families(void **state)
{
    (void)state;
    for (size_t c = 0; c < 2; c++) {
        const struct family_case *k = &family_totals[c];
        struct agent_cmdtable *t = load_cmds(k->engine);
        struct engine_info *info = load_info(k->engine, "info_primary.txt");
        struct agent_engine_snap before, now;
        struct agent_values v;

        /* The same process a moment before anything ran. */
        assert_true(agent_collect_engine(info, t, 2000000, &now));
        engine_info_free(info);
        before = now;
        memset(before.family_calls, 0, sizeof(before.family_calls));
        memset(before.family_usec, 0, sizeof(before.family_usec));
        before.at_us = 1000000;
        interval(&before, &now, &v);
        want_family(&v, "GetTypeCmds", k->get);
        want_family(&v, "SetTypeCmds", k->set);
        want_family(&v, "KeyBasedCmds", k->key);
        want_family(&v, "StringBasedCmds", k->string);
        want_family(&v, "HashBasedCmds", k->hash);
        want_family(&v, "NonKeyTypeCmds", k->nonkey);
        /* No calls: a count of 0 and no latency. */
        static const char *const idle[] = {"ListBasedCmds",      "SetBasedCmds",
                                           "SortedSetBasedCmds", "ClusterBasedCmds",
                                           "PubSubBasedCmds",    "EvalBasedCmds"};
        for (size_t i = 0; i < sizeof(idle) / sizeof(idle[0]); i++) {
            char *latency = xasprintf("%sLatency", idle[i]);
            want_value(&v, idle[i], 0);
            want_none(&v, latency);
            free(latency);
        }
        agent_cmdtable_free(t);
    }
}

/* Subcommands count under their own name; families add over commands. */
static void test_engine_family_deltas(void **state)
{
    struct agent_cmdtable *t = load_cmds("valkey");
    struct agent_engine_snap a, b;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.cmdstats = "cmdstat_get:calls=10,usec=100,usec_per_call=10.00\r\n"
                                         "cmdstat_cluster|info:calls=1,usec=9\r\n"
                                         "cmdstat_client|setname:calls=1,usec=1\r\n"},
              t, 0, &a);
    fake_snap(&(struct fake){.cmdstats = "cmdstat_get:calls=14,usec=110,usec_per_call=7.86\r\n"
                                         "cmdstat_zadd:calls=2,usec=30\r\n"
                                         "cmdstat_cluster|info:calls=3,usec=39\r\n"
                                         "cmdstat_client|setname:calls=2,usec=3\r\n"
                                         "cmdstat_nosuch:calls=99,usec=99\r\n"},
              t, 10000000, &b);
    interval(&a, &b, &v);
    want_value(&v, "GetTypeCmds", 4);
    want_value(&v, "GetTypeCmdsLatency", 2.5);
    want_value(&v, "SetTypeCmds", 2);
    want_value(&v, "SetTypeCmdsLatency", 15);
    want_value(&v, "KeyBasedCmds", 6);
    want_value(&v, "KeyBasedCmdsLatency", 40.0 / 6);
    want_value(&v, "SortedSetBasedCmds", 2);
    want_value(&v, "ClusterBasedCmds", 2);
    want_value(&v, "ClusterBasedCmdsLatency", 15);
    want_value(&v, "NonKeyTypeCmds", 3); /* cluster|info and client|setname */
    want_value(&v, "NonKeyTypeCmdsLatency", 32.0 / 3);
    want_value(&v, "StringBasedCmds", 4);

    /* Without a table in one of the two: no families. */
    fake_snap(&(struct fake){.cmdstats = "cmdstat_get:calls=10,usec=100\r\n"}, NULL, 0, &a);
    interval(&a, &b, &v);
    want_none(&v, "GetTypeCmds");
    want_none(&v, "GetTypeCmdsLatency");
    agent_cmdtable_free(t);
}

static void test_engine_restart(void **state)
{
    struct agent_cmdtable *t = load_cmds("redis");
    struct agent_engine_snap a, b;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.run_id = "run-1",
                             .pid = 100,
                             .cpu = 50,
                             .conns = 1000,
                             .expired = 500,
                             .hits = 900,
                             .misses = 100,
                             .offset = 123456,
                             .stats_extra = "acl_access_denied_auth:40\r\n",
                             .cmdstats = "cmdstat_get:calls=5000,usec=9000\r\n"},
              t, 1000000, &a);
    /* A new process (new run_id and pid) with smaller totals: they count
     * from its start, inside this interval, and stand as the deltas. */
    fake_snap(&(struct fake){.run_id = "run-2",
                             .pid = 200,
                             .cpu = 0.5,
                             .conns = 3,
                             .expired = 1,
                             .hits = 6,
                             .misses = 2,
                             .offset = 123999,
                             .stats_extra = "acl_access_denied_auth:1\r\n",
                             .cmdstats = "cmdstat_get:calls=8,usec=20\r\n"},
              t, 11000000, &b);
    interval(&a, &b, &v);
    want_value(&v, "EngineCPUUtilization", 10); /* (0.5 + 0.5) s over 10 s */
    want_value(&v, "NewConnections", 3);
    want_value(&v, "Reclaimed", 1);
    want_value(&v, "Evictions", 0);
    want_value(&v, "CacheHits", 6);
    want_value(&v, "CacheMisses", 2);
    want_value(&v, "CacheHitRate", 75);
    want_value(&v, "AuthenticationFailures", 1);
    want_value(&v, "GetTypeCmds", 8);
    want_value(&v, "GetTypeCmdsLatency", 2.5);
    /* A replication offset is a position, restored from the RDB: its value
     * after a restart is no count of this interval. */
    want_none(&v, "ReplicationBytes");

    /* Same run_id, other pid: nothing to trust. Levels stay. */
    b.process_id = 300;
    snprintf(b.run_id, sizeof(b.run_id), "run-1");
    interval(&a, &b, &v);
    want_none(&v, "NewConnections");
    want_none(&v, "EngineCPUUtilization");
    want_none(&v, "GetTypeCmds");
    want_value(&v, "CurrConnections", 3);
    agent_cmdtable_free(t);
}

/* CONFIG RESETSTAT: the same process, totals going down. No negative
 * counts, no spikes: those counters have no value for the interval. */
static void test_engine_reset(void **state)
{
    struct agent_cmdtable *t = load_cmds("valkey");
    struct agent_engine_snap a, b;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.cpu = 2,
                             .conns = 100,
                             .hits = 50,
                             .misses = 50,
                             .offset = 10,
                             .cmdstats = "cmdstat_get:calls=100,usec=100\r\n"
                                         "cmdstat_set:calls=10,usec=10\r\n"},
              t, 0, &a);
    fake_snap(&(struct fake){.cpu = 2.5,
                             .conns = 101,
                             .hits = 1,
                             .misses = 0,
                             .offset = 20,
                             .cmdstats = "cmdstat_set:calls=12,usec=14\r\n"},
              t, 5000000, &b);
    interval(&a, &b, &v);
    want_value(&v, "NewConnections", 1);
    want_none(&v, "CacheHits");
    want_none(&v, "CacheMisses");
    want_none(&v, "CacheHitRate");
    want_value(&v, "ReplicationBytes", 10);
    want_value(&v, "EngineCPUUtilization", 10);
    want_none(&v, "GetTypeCmds");  /* 100 -> 0 */
    want_none(&v, "KeyBasedCmds"); /* 110 -> 12 */
    want_value(&v, "SetTypeCmds", 2);
    want_value(&v, "SetTypeCmdsLatency", 2);
    want_none(&v, "StringBasedCmds");

    /* An offset that went back (a replica resynced into a primary). */
    a.total[AGENT_TOTAL_REPL_OFFSET] = 50;
    interval(&a, &b, &v);
    want_none(&v, "ReplicationBytes");
    agent_cmdtable_free(t);
}

/* ---- the first snapshot of a process ------------------------------------- */

/* Each total of a real INFO reply, as its counter should be when the reply
 * is all there is. */
static void want_totals(const struct agent_values *v, const struct engine_info *info)
{
    static const struct {
        const char *metric, *key;
    } counted[] = {
        {"NewConnections", "total_connections_received"},
        {"Evictions", "evicted_keys"},
        {"Reclaimed", "expired_keys"},
        {"CacheHits", "keyspace_hits"},
        {"CacheMisses", "keyspace_misses"},
    };
    long long total;

    for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
        assert_true(engine_info_get_ll(info, "stats", counted[i].key, &total));
        want_value(v, counted[i].metric, (double)total);
    }
}

/* A young engine: a new node the agent started, or one that began within
 * the interval (uptime_in_seconds 5 and 6 in the fixtures). Everything it
 * did is in this interval: the totals are the deltas. */
static void test_engine_first_young(void **state)
{
    (void)state;
    for (size_t c = 0; c < 2; c++) {
        const struct family_case *k = &family_totals[c];
        struct agent_cmdtable *t = load_cmds(k->engine);
        struct engine_info *info = load_info(k->engine, "info_primary.txt");
        struct agent_engine_snap s;
        struct agent_values v;
        double cpu_sys, cpu_user;

        assert_true(agent_collect_engine(info, t, 100000000, &s));
        assert_true(engine_info_get_double(info, "cpu", "used_cpu_sys", &cpu_sys));
        assert_true(engine_info_get_double(info, "cpu", "used_cpu_user", &cpu_user));
        assert_true(s.uptime_s == 5 || s.uptime_s == 6);

        /* Adopted, up for less than the 10 s since the interval began. */
        first_interval(&s, 10, -1, &v);
        want_totals(&v, info);
        want_value(&v, "CacheHitRate", 50);
        want_family(&v, "GetTypeCmds", k->get);
        want_family(&v, "SetTypeCmds", k->set);
        want_family(&v, "StringBasedCmds", k->string);
        want_family(&v, "NonKeyTypeCmds", k->nonkey);
        want_value(&v, "ListBasedCmds", 0);
        want_value(&v, "EngineCPUUtilization", (cpu_sys + cpu_user) / 10 * 100);
        /* A position in the stream (restored from an RDB), not a count. */
        want_none(&v, "ReplicationBytes");

        /* Spawned by the agent 8 s before it was read, in an interval of
         * 1 s (a first sample that came late): its uptime would say it is
         * older than the interval, but the agent saw it start. Its CPU
         * time counts from then. */
        first_interval(&s, 1, 8, &v);
        want_totals(&v, info);
        want_family(&v, "GetTypeCmds", k->get);
        want_value(&v, "EngineCPUUtilization", (cpu_sys + cpu_user) / 8 * 100);

        engine_info_free(info);
        agent_cmdtable_free(t);
    }
}

/* An engine that was up before the interval began, adopted by an agent
 * that (re)started: its totals are its whole life's. Levels only. */
static void test_engine_first_old(void **state)
{
    struct agent_engine_snap s;
    struct agent_values v;
    static const char *const counters[] = {
        "EngineCPUUtilization", "NewConnections", "Evictions",        "Reclaimed",   "CacheHits",
        "CacheMisses",          "CacheHitRate",   "ReplicationBytes", "GetTypeCmds", "SetTypeCmds",
        "NonKeyTypeCmds",
    };

    (void)state;
    for (int c = 0; c < ENGINE_KIND_COUNT; c++) {
        struct agent_cmdtable *t = load_cmds(engine_kind_names[c]);
        struct engine_info *info = load_info(engine_kind_names[c], "info_primary.txt");
        assert_true(agent_collect_engine(info, t, 100000000, &s));
        engine_info_free(info);
        /* Up for as long as the interval, or longer. */
        first_interval(&s, (double)s.uptime_s, -1, &v);
        for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
            want_none(&v, counters[i]);
        want_value(&v, "CurrItems", 12);
        first_interval(&s, (double)s.uptime_s - 0.5, -1, &v);
        want_none(&v, "CacheHits");
        agent_cmdtable_free(t);
    }

    /* Up for four days: a minute's interval has none of its totals. */
    fake_snap(&(struct fake){.uptime = 4 * 86400, .hits = 123456789, .conns = 99999}, NULL,
              3600000000LL, &s);
    first_interval(&s, 60, -1, &v);
    want_none(&v, "CacheHits");
    want_none(&v, "NewConnections");
    want_none(&v, "EngineCPUUtilization");
    want_value(&v, "CurrConnections", 3);

    /* Its INFO does not say how long it has been up: nothing is known. */
    fake_snap(&(struct fake){.uptime = -1, .hits = 5}, NULL, 3600000000LL, &s);
    first_interval(&s, 60, -1, &v);
    want_none(&v, "CacheHits");

    /* Nothing known of the process at all: no counters, however young. */
    fake_snap(&(struct fake){.uptime = 0, .hits = 5}, NULL, 3600000000LL, &s);
    interval(NULL, &s, &v);
    want_none(&v, "CacheHits");
}

/* After a first snapshot counted from zero: the deltas go on, and CONFIG
 * RESETSTAT still gives no value rather than a negative one. A restart
 * (new run_id) counts from zero again. */
static void test_engine_first_then(void **state)
{
    struct agent_cmdtable *t = load_cmds("valkey");
    struct agent_engine_snap a, b, c, d;
    struct agent_values v;

    (void)state;
    fake_snap(&(struct fake){.uptime = 3,
                             .hits = 7000,
                             .misses = 2000,
                             .conns = 4,
                             .cmdstats = "cmdstat_get:calls=9000,usec=9000\r\n"
                                         "cmdstat_set:calls=3000,usec=6000\r\n"},
              t, 60000000, &a);
    first_interval(&a, 60, 3.5, &v);
    want_value(&v, "CacheHits", 7000);
    want_value(&v, "CacheMisses", 2000);
    want_value(&v, "GetTypeCmds", 9000);
    want_value(&v, "SetTypeCmds", 3000);
    want_value(&v, "SetTypeCmdsLatency", 2);

    /* CONFIG RESETSTAT within the next interval. */
    fake_snap(&(struct fake){.uptime = 63,
                             .hits = 10,
                             .misses = 1,
                             .conns = 5,
                             .cmdstats = "cmdstat_get:calls=11,usec=22\r\n"},
              t, 120000000, &b);
    interval(&a, &b, &v);
    want_none(&v, "CacheHits");
    want_none(&v, "CacheMisses");
    want_none(&v, "GetTypeCmds");
    want_value(&v, "NewConnections", 1);

    /* And the deltas from there. */
    fake_snap(&(struct fake){.uptime = 123,
                             .hits = 25,
                             .misses = 1,
                             .conns = 5,
                             .cmdstats = "cmdstat_get:calls=26,usec=52\r\n"},
              t, 180000000, &c);
    interval(&b, &c, &v);
    want_value(&v, "CacheHits", 15);
    want_value(&v, "CacheMisses", 0);
    want_value(&v, "GetTypeCmds", 15);

    /* A restart: the new process's totals count from its start. */
    fake_snap(&(struct fake){.run_id = "run-2",
                             .pid = 200,
                             .uptime = 20,
                             .hits = 40,
                             .misses = 2,
                             .cmdstats = "cmdstat_get:calls=42,usec=84\r\n"},
              t, 240000000, &d);
    interval(&c, &d, &v);
    want_value(&v, "CacheHits", 40);
    want_value(&v, "CacheMisses", 2);
    want_value(&v, "GetTypeCmds", 42);
    agent_cmdtable_free(t);
}

/* A failover keeps both processes: the promoted replica's and the demoted
 * primary's totals go on, captured from real engines (see capture.sh: 3
 * SETs, 4 hits and 2 misses on the promoted one, a hit and a miss on the
 * demoted one, between the two readings). */
static void test_engine_failover(void **state)
{
    (void)state;
    for (int e = 0; e < ENGINE_KIND_COUNT; e++) {
        struct agent_cmdtable *t = load_cmds(engine_kind_names[e]);
        struct engine_info *pb =
            load_info(engine_kind_names[e], "info_failover_promoted_before.txt");
        struct engine_info *pa =
            load_info(engine_kind_names[e], "info_failover_promoted_after.txt");
        struct engine_info *db =
            load_info(engine_kind_names[e], "info_failover_demoted_before.txt");
        struct engine_info *da = load_info(engine_kind_names[e], "info_failover_demoted_after.txt");
        struct agent_engine_snap before, after;
        struct agent_values v;
        long long off_before, off_after;

        /* The replica is promoted: same run_id, a new replid, and its
         * offset goes on from where it was (the old replid is replid2). */
        assert_true(agent_collect_engine(pb, t, 10000000, &before));
        assert_true(agent_collect_engine(pa, t, 20000000, &after));
        assert_string_equal(before.run_id, after.run_id);
        assert_false(before.primary);
        assert_true(after.primary);
        assert_string_equal(engine_info_get(pa, "replication", "master_replid2"),
                            engine_info_get(pb, "replication", "master_replid"));
        assert_true(engine_info_get_ll(pb, "replication", "master_repl_offset", &off_before));
        assert_true(engine_info_get_ll(pa, "replication", "master_repl_offset", &off_after));
        assert_true(off_after > off_before);
        interval(&before, &after, &v);
        want_value(&v, "IsPrimary", 1);
        want_value(&v, "CacheHits", 4);
        want_value(&v, "CacheMisses", 2);
        want_value(&v, "CacheHitRate", 4.0 / 6 * 100);
        want_value(&v, "GetTypeCmds", 6);
        want_value(&v, "SetTypeCmds", 3);
        want_value(&v, "ReplicationBytes", (double)(off_after - off_before));
        assert_true(v.has[at("EngineCPUUtilization")]);

        /* The primary is demoted: same run_id, it follows the new stream
         * and applies the 3 SETs; its reads count as before. */
        assert_true(agent_collect_engine(db, t, 10000000, &before));
        assert_true(agent_collect_engine(da, t, 20000000, &after));
        assert_string_equal(before.run_id, after.run_id);
        assert_true(before.primary);
        assert_false(after.primary);
        interval(&before, &after, &v);
        want_value(&v, "IsPrimary", 0);
        want_value(&v, "CacheHits", 1);
        want_value(&v, "CacheMisses", 1);
        want_value(&v, "GetTypeCmds", 2);
        want_value(&v, "SetTypeCmds", 3);
        want_value(&v, "ReplicationBytes", 0);

        engine_info_free(pb);
        engine_info_free(pa);
        engine_info_free(db);
        engine_info_free(da);
        agent_cmdtable_free(t);
    }
}

/* ---- the host ------------------------------------------------------------ */

static const char meminfo[] = "MemTotal:        8000000 kB\n"
                              "MemFree:          100000 kB\n"
                              "MemAvailable:    2000000 kB\n"
                              "SwapCached:            0 kB\n"
                              "SwapTotal:       1000000 kB\n"
                              "SwapFree:         750000 kB\n";

static const char netdev1[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo: 9000000   90000    0    0    0     0          0         0  9000000   90000    0 "
    "   0    0     0       0          0\n"
    "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
    "  eth1:500 5 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n";

static const char netdev2[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo: 9999999   99999    0    0    0     0          0         0  9999999   99999    0 "
    "   0    0     0       0          0\n"
    "  eth0: 4000 40 0 0 0 0 0 0 2500 25 0 0 0 0 0 0\n"
    "  eth1:600 6 0 0 0 0 0 0 300 3 0 0 0 0 0 0\n";

static void test_host(void **state)
{
    struct agent_host_snap a, b;
    struct agent_values v;

    (void)state;
    /* user nice system idle iowait irq softirq steal guest guest_nice */
    agent_collect_host("cpu  100 0 100 700 100 0 0 0 50 0\ncpu0 1 2 3\n", meminfo, netdev1, &a);
    agent_collect_host("cpu  250 0 150 900 200 0 0 0 90 0\ncpu0 1 2 3\n", meminfo, netdev2, &b);
    assert_true(a.has_cpu && a.has_net && a.has_mem_available && a.has_swap);

    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(NULL, &a, &v);
    want_value(&v, "FreeableMemory", 2000000.0 * 1024);
    want_value(&v, "SwapUsage", 250000.0 * 1024);
    want_none(&v, "CPUUtilization");
    want_none(&v, "NetworkBytesIn");
    assert_int_equal(count_values(&v), 2);

    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(&a, &b, &v);
    /* busy 150 + 50 = 200 of 150 + 50 + 200 + 100 = 500 jiffies */
    want_value(&v, "CPUUtilization", 40);
    want_value(&v, "NetworkBytesIn", 3100); /* lo left out */
    want_value(&v, "NetworkBytesOut", 700);
    want_value(&v, "NetworkPacketsIn", 31);
    want_value(&v, "NetworkPacketsOut", 7);

    /* An interface gone: totals went down, no value rather than a
     * negative one. Unreadable files: no values. */
    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(&b, &a, &v);
    want_none(&v, "NetworkBytesIn");
    want_none(&v, "CPUUtilization");
    agent_collect_host(NULL, NULL, NULL, &a);
    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(&b, &a, &v);
    assert_int_equal(count_values(&v), 0);
}

/* ---- periods ------------------------------------------------------------- */

static void test_period_of(void **state)
{
    (void)state;
    /* Interval 1 s, period 2 s: ticks 101 and 102 end [100,101) and [101,102). */
    assert_int_equal(agent_collect_period_of(101, 1, 2), 100);
    assert_int_equal(agent_collect_period_of(102, 1, 2), 100);
    assert_int_equal(agent_collect_period_of(103, 1, 2), 102);
    assert_int_equal(agent_collect_period_of(1764504010, 10, 60), 1764504000);
    assert_int_equal(agent_collect_period_of(1764504060, 10, 60), 1764504000);
    assert_int_equal(agent_collect_period_of(1764504070, 10, 60), 1764504060);
    assert_int_equal(agent_collect_period_of(60, 60, 60), 0);
}

static void test_period_aggregation(void **state)
{
    struct agent_period p;
    struct agent_values a, b, c, out;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
    /* Three intervals of one period. */
    a.has[at("CacheHits")] = true, a.v[at("CacheHits")] = 1;
    a.has[at("CacheHitRate")] = true, a.v[at("CacheHitRate")] = 100, a.den[at("CacheHitRate")] = 1;
    a.has[at("BytesUsedForCache")] = true, a.v[at("BytesUsedForCache")] = 100;
    a.has[at("GetTypeCmds")] = true, a.v[at("GetTypeCmds")] = 1;
    a.has[at("GetTypeCmdsLatency")] = true, a.v[at("GetTypeCmdsLatency")] = 10;
    a.den[at("GetTypeCmdsLatency")] = 1;

    b.has[at("CacheHits")] = true, b.v[at("CacheHits")] = 0;
    b.has[at("CacheMisses")] = true, b.v[at("CacheMisses")] = 3;
    b.has[at("CacheHitRate")] = true, b.v[at("CacheHitRate")] = 0, b.den[at("CacheHitRate")] = 3;
    b.has[at("BytesUsedForCache")] = true, b.v[at("BytesUsedForCache")] = 300;
    b.has[at("GetTypeCmds")] = true, b.v[at("GetTypeCmds")] = 3;
    b.has[at("GetTypeCmdsLatency")] = true, b.v[at("GetTypeCmdsLatency")] = 2;
    b.den[at("GetTypeCmdsLatency")] = 3;

    c.has[at("BytesUsedForCache")] = true, c.v[at("BytesUsedForCache")] = 200;

    agent_period_init(&p, 1764504000);
    agent_period_add(&p, &a);
    agent_period_add(&p, &b);
    agent_period_add(&p, &c);
    assert_int_equal(p.samples, 3);
    agent_period_result(&p, &out);
    want_value(&out, "CacheHits", 1);           /* summed */
    want_value(&out, "CacheMisses", 3);         /* summed over the intervals that had it */
    want_value(&out, "CacheHitRate", 25);       /* 1 of 4, not the mean of 100 and 0 */
    want_value(&out, "BytesUsedForCache", 200); /* averaged */
    want_value(&out, "GetTypeCmds", 4);         /* summed */
    want_value(&out, "GetTypeCmdsLatency", 3);  /* 12 usec over 4 calls */
    want_none(&out, "CPUUtilization");
    assert_int_equal(count_values(&out), 6);
    for (size_t i = 0; i < AGENT_METRICS_MAX; i++)
        assert_true(out.den[i] == 0);
}

/* Two intervals of real INFO, through snapshots, deltas and a period. */
static void test_pipeline(void **state)
{
    struct agent_cmdtable *t = load_cmds("valkey");
    struct agent_engine_snap s0, s1, s2;
    struct agent_host_snap h0, h1, h2;
    struct agent_values v;
    struct agent_period p;
    struct agent_values out;

    (void)state;
    agent_collect_host("cpu  100 0 100 700 100 0 0 0 0 0\n", meminfo, netdev1, &h0);
    agent_collect_host("cpu  150 0 150 800 100 0 0 0 0 0\n", meminfo, netdev1, &h1);
    agent_collect_host("cpu  150 0 150 1000 100 0 0 0 0 0\n", meminfo, netdev2, &h2);
    fake_snap(&(struct fake){.hits = 10, .cpu = 1}, t, 0, &s0);
    fake_snap(&(struct fake){.hits = 20, .misses = 10, .cpu = 2}, t, 1000000, &s1);
    fake_snap(&(struct fake){.hits = 20, .misses = 30, .cpu = 2, .used_memory = 100}, t, 2000000,
              &s2);
    agent_period_init(&p, 0);
    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(&h0, &h1, &v);
    agent_collect_engine_interval(&s0, &s1, NULL, &v);
    agent_period_add(&p, &v);
    memset(&v, 0, sizeof(v));
    agent_collect_host_interval(&h1, &h2, &v);
    agent_collect_engine_interval(&s1, &s2, NULL, &v);
    agent_period_add(&p, &v);
    agent_period_result(&p, &out);
    want_value(&out, "CPUUtilization", 25);       /* (50 + 0) / 2 */
    want_value(&out, "EngineCPUUtilization", 50); /* (100 + 0) / 2 */
    want_value(&out, "CacheHits", 10);
    want_value(&out, "CacheMisses", 30);
    want_value(&out, "CacheHitRate", 25);
    want_value(&out, "BytesUsedForCache", 50);
    want_value(&out, "NetworkBytesIn", 3100);
    want_value(&out, "ReplicationBytes", 0);
    want_value(&out, "NonKeyTypeCmds", 0);
    agent_cmdtable_free(t);
}

/* ---- samples, outbox and body -------------------------------------------- */

static struct agent_sample *sample(const char *node, int64_t start, double cpu, double hits)
{
    struct agent_values v;

    memset(&v, 0, sizeof(v));
    v.has[at("CPUUtilization")] = true, v.v[at("CPUUtilization")] = cpu;
    v.has[at("CacheHits")] = true, v.v[at("CacheHits")] = hits;
    return agent_sample_new(node, start, &v);
}

static void test_sample(void **state)
{
    struct agent_values v;
    double d;

    (void)state;
    memset(&v, 0, sizeof(v));
    assert_null(agent_sample_new(ID_A, 60, &v));
    v.has[at("NonKeyTypeCmdsLatency")] = true, v.v[at("NonKeyTypeCmdsLatency")] = 1.5;
    v.has[at("CPUUtilization")] = true, v.v[at("CPUUtilization")] = 12.5;
    v.has[at("CacheHits")] = true, v.v[at("CacheHits")] = 1.0 / 0.0; /* never sent */
    v.has[at("IsPrimary")] = true, v.v[at("IsPrimary")] = 0;
    struct agent_sample *s = agent_sample_new(ID_A, 60, &v);
    assert_non_null(s);
    assert_string_equal(s->node_id, ID_A);
    assert_int_equal(s->at, 60);
    assert_true(agent_sample_get(s, at("CPUUtilization"), &d) && d == 12.5);
    assert_true(agent_sample_get(s, at("IsPrimary"), &d) && d == 0);
    assert_true(agent_sample_get(s, at("NonKeyTypeCmdsLatency"), &d) && d == 1.5);
    assert_false(agent_sample_get(s, at("CacheHits"), &d));
    assert_false(agent_sample_get(s, at("SwapUsage"), &d));
    free(s);
}

static void test_outbox_body(void **state)
{
    struct agent_outbox o;
    char *body;

    (void)state;
    agent_outbox_init(&o, 10);
    assert_null(agent_outbox_begin(&o, 60, 5000, 1000000));
    agent_outbox_add(&o, sample(ID_A, 1764504000, 12.5, 1200));
    agent_outbox_add(&o, sample(ID_B, 1764504000, 1.0 / 3.0, 0));
    body = agent_outbox_begin(&o, 60, 5000, 1000000);
    assert_string_equal(body,
                        "{\"period_s\":60,\"dropped\":0,\"samples\":["
                        "{\"node_id\":\"" ID_A "\",\"at\":1764504000,"
                        "\"values\":{\"CPUUtilization\":12.5,\"CacheHits\":1200}},"
                        "{\"node_id\":\"" ID_B "\",\"at\":1764504000,"
                        "\"values\":{\"CPUUtilization\":0.333333333333333,\"CacheHits\":0}}]}");
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "samples")), 2);
    json_decref(j);
    free(body);
    /* One request at a time. */
    assert_null(agent_outbox_begin(&o, 60, 5000, 1000000));
    agent_outbox_end(&o, AGENT_OUTBOX_ACCEPTED);
    assert_int_equal(agent_outbox_count(&o), 0);
    agent_outbox_free(&o);
}

static void test_outbox_limits(void **state)
{
    struct agent_outbox o;
    char *body;
    json_t *j;

    (void)state;
    agent_outbox_init(&o, 100);
    for (int i = 0; i < 10; i++)
        agent_outbox_add(&o, sample(ID_A, 60 * i, i, i));
    /* At most max_samples... */
    body = agent_outbox_begin(&o, 60, 4, 1000000);
    j = json_loads(body, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "samples")), 4);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "samples"), 0), "at")),
        0);
    json_decref(j);
    free(body);
    agent_outbox_end(&o, AGENT_OUTBOX_ACCEPTED);
    assert_int_equal(agent_outbox_count(&o), 6);
    /* ... and max_bytes, but always one. */
    body = agent_outbox_begin(&o, 60, 5000, 300);
    assert_true(strlen(body) <= 300);
    j = json_loads(body, 0, NULL);
    size_t n = json_array_size(json_object_get(j, "samples"));
    assert_true(n >= 1 && n < 6);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "samples"), 0), "at")),
        240);
    json_decref(j);
    free(body);
    agent_outbox_end(&o, AGENT_OUTBOX_FAILED); /* kept */
    assert_int_equal(agent_outbox_count(&o), 6);
    body = agent_outbox_begin(&o, 60, 5000, 10);
    j = json_loads(body, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "samples")), 1);
    json_decref(j);
    free(body);
    agent_outbox_end(&o, AGENT_OUTBOX_REFUSED); /* dropped for good */
    assert_int_equal(agent_outbox_count(&o), 5);
    assert_int_equal(o.dropped, 0);
    agent_outbox_free(&o);
}

/* Full: the oldest go first and are counted; the count is reported until
 * a request carrying it is accepted. */
static void test_outbox_bound(void **state)
{
    struct agent_outbox o;
    char *body;
    json_t *j;

    (void)state;
    agent_outbox_init(&o, 3);
    for (int i = 0; i < 3; i++)
        assert_false(agent_outbox_add(&o, sample(ID_A, 60 * i, i, i)));
    assert_true(agent_outbox_add(&o, sample(ID_A, 180, 3, 3)));
    assert_true(agent_outbox_add(&o, sample(ID_A, 240, 4, 4)));
    assert_int_equal(agent_outbox_count(&o), 3);
    assert_int_equal(o.dropped, 2);

    body = agent_outbox_begin(&o, 60, 2, 1000000);
    j = json_loads(body, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "dropped")), 2);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "samples"), 0), "at")),
        120);
    json_decref(j);
    free(body);
    /* While that request is out, more arrive; one in flight is pushed out. */
    assert_true(agent_outbox_add(&o, sample(ID_A, 300, 5, 5)));
    assert_int_equal(o.dropped, 3);
    agent_outbox_end(&o, AGENT_OUTBOX_FAILED);
    assert_int_equal(agent_outbox_count(&o), 3);

    body = agent_outbox_begin(&o, 60, 2, 1000000);
    j = json_loads(body, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "dropped")), 3);
    json_decref(j);
    free(body);
    assert_true(agent_outbox_add(&o, sample(ID_A, 360, 6, 6))); /* drops the first in flight */
    agent_outbox_end(&o, AGENT_OUTBOX_ACCEPTED);
    /* The one in flight that was not dropped is removed; the newest two stay;
     * the drop made meanwhile is still to be reported. */
    assert_int_equal(agent_outbox_count(&o), 2);
    assert_int_equal(o.dropped, 1);
    body = agent_outbox_begin(&o, 60, 5000, 1000000);
    j = json_loads(body, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "dropped")), 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "samples"), 0), "at")),
        300);
    json_decref(j);
    free(body);
    agent_outbox_end(&o, AGENT_OUTBOX_ACCEPTED);
    assert_int_equal(o.dropped, 0);
    assert_int_equal(agent_outbox_count(&o), 0);
    agent_outbox_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog_fits),
        cmocka_unit_test(test_cmdtable_fixtures),
        cmocka_unit_test(test_cmdtable_errors),
        cmocka_unit_test(test_engine_levels),
        cmocka_unit_test(test_engine_levels_formulas),
        cmocka_unit_test(test_engine_counters),
        cmocka_unit_test(test_lag_fixtures),
        cmocka_unit_test(test_lag_behind),
        cmocka_unit_test(test_lag_primary_changed),
        cmocka_unit_test(test_lag_link_down),
        cmocka_unit_test(test_engine_families),
        cmocka_unit_test(test_engine_family_deltas),
        cmocka_unit_test(test_engine_restart),
        cmocka_unit_test(test_engine_reset),
        cmocka_unit_test(test_engine_first_young),
        cmocka_unit_test(test_engine_first_old),
        cmocka_unit_test(test_engine_first_then),
        cmocka_unit_test(test_engine_failover),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_period_of),
        cmocka_unit_test(test_period_aggregation),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_outbox_body),
        cmocka_unit_test(test_outbox_limits),
        cmocka_unit_test(test_outbox_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
