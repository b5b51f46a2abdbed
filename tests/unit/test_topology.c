/* test_topology.c -- the commands of engine/topology.h: the exact bytes each
 * one sends, and what it makes of the replies Redis 7.0 and Valkey 8.0
 * gave to them (captured, see fixtures/capture.sh) and of hand-written
 * ones.
 *
 * No engine and no network: each test holds one end of a socketpair as the
 * engine, queues the replies there before a command runs, and afterwards
 * compares what arrived with hiredis's own formatting of the expected
 * words. The reply readers are checked directly, too, and so is a whole
 * slot move (engine/slot_move.h) over three such ends: the protocol in its
 * order, resuming one an earlier run half did, and big keys. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "slot_move.h"
#include "topology.h"
#include "xalloc.h"

#include "fixtures/fixture.h"

static const char *const engines[] = {"redis", "valkey"};
#define NENGINES (sizeof(engines) / sizeof(engines[0]))

#define TIMEOUT_MS 200

/* cairnd's end of the connection, and the engine's end, played here. */
struct peer {
    struct resp_conn *c;
    int fd;
};

static int peer_setup(void **state)
{
    struct resp_options o = {.host = "10.0.0.1", .port = 7001, .command_timeout_ms = TIMEOUT_MS};
    struct peer *p = xcalloc(1, sizeof(*p));
    char err[256];
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    p->c = resp_connect_fd(sv[0], &o, err, sizeof(err));
    if (p->c == NULL)
        fail_msg("resp_connect_fd: %s", err);
    p->fd = sv[1];
    *state = p;
    return 0;
}

static int peer_teardown(void **state)
{
    struct peer *p = *state;
    resp_close(p->c);
    close(p->fd);
    free(p);
    return 0;
}

/* Queue len bytes as the engine's next replies. */
static void answer_bytes(struct peer *p, const char *bytes, size_t len)
{
    assert_int_equal(write(p->fd, bytes, len), (ssize_t)len);
}

static void answer(struct peer *p, const char *resp)
{
    answer_bytes(p, resp, strlen(resp));
}

/* Queue the captured reply engine/file (*.resp: the bytes as read). */
static void answer_fixture(struct peer *p, const char *engine, const char *file)
{
    size_t len;
    char *bytes = fixture_load_engine(engine, file, &len);
    answer_bytes(p, bytes, len);
    free(bytes);
}

/* Queue the captured text engine/file (*.txt: a bulk string's payload) as
 * the bulk string it came in. */
static void answer_text_fixture(struct peer *p, const char *engine, const char *file)
{
    size_t len;
    char *text = fixture_load_engine(engine, file, &len);
    char *head = xasprintf("$%zu\r\n", len);
    answer(p, head);
    answer_bytes(p, text, len);
    answer(p, "\r\n");
    free(head);
    free(text);
}

/* Everything the command sent so far, *len bytes; free with free(). */
static char *take_sent(struct peer *p, size_t *len)
{
    size_t cap = 4096;
    char *buf = xmalloc(cap);
    ssize_t got;

    *len = 0;
    while ((got = recv(p->fd, buf + *len, cap - *len, MSG_DONTWAIT)) > 0) {
        *len += (size_t)got;
        if (*len == cap)
            buf = xrealloc(buf, cap *= 2);
    }
    return buf;
}

/* Drop what the command sent, when another test checks it. */
static void skip_sent(struct peer *p)
{
    size_t len;
    free(take_sent(p, &len));
}

/* RESP with CR and LF written out, for failure messages. */
static char *visible(const char *s, size_t len)
{
    char *out = xmalloc(4 * len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
            o += sprintf(o, "%s", s[i] == '\r' ? "\\r" : s[i] == '\n' ? "\\n" : "\\0");
        else
            *o++ = s[i];
    }
    *o = '\0';
    return out;
}

/* The command sent since the last check is exactly argv (argc words of
 * lens[i] bytes; lens NULL: NUL-terminated), as hiredis formats it. */
static void expect_argv(struct peer *p, int argc, const char **argv, const size_t *lens)
{
    char *want;
    int wantlen = redisFormatCommandArgv(&want, argc, argv, lens);
    size_t gotlen;
    char *got = take_sent(p, &gotlen);

    assert_true(wantlen > 0);
    if (gotlen != (size_t)wantlen || memcmp(got, want, gotlen) != 0) {
        char *g = visible(got, gotlen), *w = visible(want, (size_t)wantlen);
        fail_msg("sent     %s\nexpected %s", g, w);
    }
    redisFreeCommand(want);
    free(got);
}

/* expect_argv() of the NUL-terminated words given, then NULL. */
static void expect_words(struct peer *p, ...)
{
    const char *argv[16];
    int argc = 0;
    va_list ap;

    va_start(ap, p);
    for (const char *w; (w = va_arg(ap, const char *)) != NULL;) {
        assert_true(argc < 16);
        argv[argc++] = w;
    }
    va_end(ap);
    expect_argv(p, argc, argv, NULL);
}

/* ---- commands that answer +OK ---------------------------------------- */

static void test_commands_sent(void **state)
{
    struct peer *p = *state;
    char err[256] = "";

    for (int i = 0; i < 14; i++) /* one for each command below */
        answer(p, "+OK\r\n");

    assert_true(engine_cluster_meet(p->c, "10.0.0.2", 7002, err, sizeof(err)));
    expect_words(p, "CLUSTER", "MEET", "10.0.0.2", "7002", NULL);
    assert_true(engine_cluster_addslotsrange(p->c, 5461, 10922, err, sizeof(err)));
    expect_words(p, "CLUSTER", "ADDSLOTSRANGE", "5461", "10922", NULL);
    assert_true(engine_cluster_replicate(p->c, "e1a976eb4dd3b2e5be09489a502013d9697d04f7", err,
                                         sizeof(err)));
    expect_words(p, "CLUSTER", "REPLICATE", "e1a976eb4dd3b2e5be09489a502013d9697d04f7", NULL);
    assert_true(
        engine_cluster_forget(p->c, "706080d9adb2b10588c7f409cd91c893e6b3dde3", err, sizeof(err)));
    expect_words(p, "CLUSTER", "FORGET", "706080d9adb2b10588c7f409cd91c893e6b3dde3", NULL);

    /* The default mode is CLUSTER FAILOVER alone. */
    assert_true(engine_cluster_failover(p->c, ENGINE_FAILOVER_DEFAULT, err, sizeof(err)));
    expect_words(p, "CLUSTER", "FAILOVER", NULL);
    assert_true(engine_cluster_failover(p->c, ENGINE_FAILOVER_FORCE, err, sizeof(err)));
    expect_words(p, "CLUSTER", "FAILOVER", "FORCE", NULL);
    assert_true(engine_cluster_failover(p->c, ENGINE_FAILOVER_TAKEOVER, err, sizeof(err)));
    expect_words(p, "CLUSTER", "FAILOVER", "TAKEOVER", NULL);

    assert_true(engine_replicaof(p->c, "10.0.0.3", 7003, err, sizeof(err)));
    expect_words(p, "REPLICAOF", "10.0.0.3", "7003", NULL);
    assert_true(engine_replicaof_no_one(p->c, err, sizeof(err)));
    expect_words(p, "REPLICAOF", "NO", "ONE", NULL);
    assert_true(engine_failover_to(p->c, "10.0.0.3", 7003, 5000, err, sizeof(err)));
    expect_words(p, "FAILOVER", "TO", "10.0.0.3", "7003", "TIMEOUT", "5000", NULL);

    /* A value is one word, whatever it holds. */
    assert_true(engine_config_set(p->c, "maxmemory-policy", "allkeys-lru", err, sizeof(err)));
    expect_words(p, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru", NULL);
    assert_true(engine_config_set(p->c, "save", "900 1 300 10", err, sizeof(err)));
    expect_words(p, "CONFIG", "SET", "save", "900 1 300 10", NULL);

    assert_true(engine_cluster_setslot(p->c, 42, ENGINE_SETSLOT_IMPORTING,
                                       "e1a976eb4dd3b2e5be09489a502013d9697d04f7", err,
                                       sizeof(err)));
    expect_words(p, "CLUSTER", "SETSLOT", "42", "IMPORTING",
                 "e1a976eb4dd3b2e5be09489a502013d9697d04f7", NULL);
    assert_true(engine_cluster_setslot(p->c, 16383, ENGINE_SETSLOT_STABLE, NULL, err, sizeof(err)));
    expect_words(p, "CLUSTER", "SETSLOT", "16383", "STABLE", NULL);
    assert_string_equal(err, "");
}

/* MIGRATING and NODE name the other end as IMPORTING does; the replies are
 * the captured ones. */
static void test_setslot_forms(void **state)
{
    static const struct {
        enum engine_setslot how;
        const char *word;
    } forms[] = {
        {ENGINE_SETSLOT_IMPORTING, "IMPORTING"},
        {ENGINE_SETSLOT_MIGRATING, "MIGRATING"},
        {ENGINE_SETSLOT_NODE, "NODE"},
    };
    const char *id = "60e5280c77366da122e6ac80b81f84b28d4636cf";
    struct peer *p = *state;
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
            answer_fixture(p, engines[e], "cluster_setslot.resp");
            assert_true(engine_cluster_setslot(p->c, 1584, forms[i].how, id, err, sizeof(err)));
            expect_words(p, "CLUSTER", "SETSLOT", "1584", forms[i].word, id, NULL);
        }
    }
}

/* REPLICAOF of the primary a replica follows already is a success. */
static void test_replicaof_already(void **state)
{
    struct peer *p = *state;
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        answer_fixture(p, engines[e], "replicaof_already.resp");
        assert_true(engine_replicaof(p->c, "127.0.0.1", 27056, err, sizeof(err)));
        expect_words(p, "REPLICAOF", "127.0.0.1", "27056", NULL);
    }
}

/* REPLCONF GETACK answers nothing: it is only written. */
static void test_replconf_getack(void **state)
{
    struct peer *p = *state;
    char err[256];

    assert_true(engine_replconf_getack(p->c, err, sizeof(err)));
    expect_words(p, "REPLCONF", "GETACK", "*", NULL);
    assert_int_equal(resp_last_error(p->c), RESP_OK);
}

/* ---- refusals, wrong shapes, silence ---------------------------------- */

/* An engine's refusal comes back as its own text; the connection serves on. */
static void test_refusals(void **state)
{
    struct peer *p = *state;
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        answer_fixture(p, engines[e], "cluster_forget_unknown.resp");
        assert_false(engine_cluster_forget(p->c, "0000000000000000000000000000000000000000", err,
                                           sizeof(err)));
        assert_string_equal(err, "ERR Unknown node 0000000000000000000000000000000000000000");
        assert_int_equal(resp_last_error(p->c), RESP_ERR_REPLY);
        expect_words(p, "CLUSTER", "FORGET", "0000000000000000000000000000000000000000", NULL);

        answer_fixture(p, engines[e], "cluster_failover_primary.resp");
        assert_false(engine_cluster_failover(p->c, ENGINE_FAILOVER_DEFAULT, err, sizeof(err)));
        assert_string_equal(err, "ERR You should send CLUSTER FAILOVER to a replica");
        skip_sent(p);

        answer(p, "+OK\r\n");
        assert_true(engine_replicaof_no_one(p->c, err, sizeof(err)));
        assert_int_equal(resp_last_error(p->c), RESP_OK);
        expect_words(p, "REPLICAOF", "NO", "ONE", NULL);
    }
}

/* A reply that is no error but not +OK fails, naming the command. */
static void test_unexpected_replies(void **state)
{
    struct peer *p = *state;
    char err[256];

    answer(p, "+QUEUED\r\n");
    assert_false(engine_cluster_meet(p->c, "10.0.0.2", 7002, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to CLUSTER MEET");
    assert_int_equal(resp_last_error(p->c), RESP_ERR_REPLY);

    answer(p, "+OKAY\r\n");
    assert_false(engine_cluster_failover(p->c, ENGINE_FAILOVER_FORCE, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to CLUSTER FAILOVER");

    answer(p, "$2\r\nOK\r\n"); /* a bulk string, not a status */
    assert_false(engine_failover_to(p->c, "10.0.0.3", 7003, 5000, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to FAILOVER TO");

    answer(p, ":1\r\n");
    assert_false(engine_replicaof_no_one(p->c, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to REPLICAOF NO ONE");

    answer(p, "+OK\r\n");
    assert_false(engine_cluster_countkeysinslot(p->c, 1, &(long long){0}, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to CLUSTER COUNTKEYSINSLOT");

    answer(p, "$3\r\nabc\r\n");
    assert_false(engine_cluster_myid(p->c, (char[ENGINE_CLUSTER_ID_LEN + 1]){0}, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to CLUSTER MYID");

    answer(p, "$22\r\ncluster_slots_ok:16384\r\n");
    assert_false(engine_cluster_info_state(p->c, &(bool){false}, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to CLUSTER INFO");

    /* CLUSTER NODES that does not parse says where. */
    answer(p, "$9\r\nnot nodes\r\n");
    struct engine_cluster_nodes view;
    assert_false(engine_cluster_nodes(p->c, &view, err, sizeof(err)));
    assert_int_equal(view.count, 0);
    assert_non_null(strstr(err, "10.0.0.1:7001: CLUSTER NODES line 1: "));
    assert_int_equal(resp_last_error(p->c), RESP_ERR_REPLY);

    /* Every reply was read: the connection is still in step. */
    answer(p, "+OK\r\n");
    assert_true(engine_replicaof(p->c, "10.0.0.3", 7003, err, sizeof(err)));
}

/* No reply within the command timeout: a timeout, and the connection must go. */
static void test_silence(void **state)
{
    struct peer *p = *state;
    char err[256];

    assert_false(engine_cluster_meet(p->c, "10.0.0.2", 7002, err, sizeof(err)));
    assert_int_equal(resp_last_error(p->c), RESP_ERR_TIMEOUT);
    assert_string_equal(err, "10.0.0.1:7001: no reply within 200 ms");
    expect_words(p, "CLUSTER", "MEET", "10.0.0.2", "7002", NULL);
}

/* ---- reads ---------------------------------------------------------- */

static void test_cluster_nodes(void **state)
{
    struct peer *p = *state;
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        struct engine_cluster_nodes view;
        answer_text_fixture(p, engines[e], "cluster_nodes.txt");
        assert_true(engine_cluster_nodes(p->c, &view, err, sizeof(err)));
        expect_words(p, "CLUSTER", "NODES", NULL);
        assert_int_equal(view.count, 6);
        assert_non_null(engine_cluster_nodes_myself(&view));
        engine_cluster_nodes_free(&view);
    }
}

static void test_cluster_info_state(void **state)
{
    struct peer *p = *state;
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        bool ok = false;
        answer_text_fixture(p, engines[e], "cluster_info.txt");
        assert_true(engine_cluster_info_state(p->c, &ok, err, sizeof(err)));
        assert_true(ok);
        expect_words(p, "CLUSTER", "INFO", NULL);

        answer_text_fixture(p, engines[e], "cluster_info_fail.txt");
        assert_true(engine_cluster_info_state(p->c, &ok, err, sizeof(err)));
        assert_false(ok);
        expect_words(p, "CLUSTER", "INFO", NULL);
    }
}

static void test_cluster_myid(void **state)
{
    static const char *const ids[NENGINES] = {"71e1048d201b35702a4e0131e9ed4848ad4e3193",
                                              "21080534a8a94ffcecde5080f20771b3cda93b5c"};
    struct peer *p = *state;
    char err[256], id[ENGINE_CLUSTER_ID_LEN + 1];

    for (size_t e = 0; e < NENGINES; e++) {
        answer_fixture(p, engines[e], "cluster_myid.resp");
        assert_true(engine_cluster_myid(p->c, id, err, sizeof(err)));
        assert_string_equal(id, ids[e]);
        expect_words(p, "CLUSTER", "MYID", NULL);
    }
}

/* Valkey 8.0 counts keys only; Redis 7.0 has no SLOT-STATS. */
static void test_cluster_slot_stats(void **state)
{
    struct peer *p = *state;
    struct engine_slot_stats stats;
    char err[256];

    answer_fixture(p, "valkey", "cluster_slot_stats.resp");
    assert_true(engine_cluster_slot_stats(p->c, 1583, 1585, &stats, err, sizeof(err)));
    expect_words(p, "CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1583", "1585", NULL);
    assert_int_equal(stats.count, 3);
    for (size_t i = 0; i < stats.count; i++) {
        assert_int_equal(stats.stats[i].slot, 1583 + (int)i);
        assert_int_equal(stats.stats[i].keys, i == 1 ? 3 : 0);
        assert_int_equal(stats.stats[i].cpu_usec, -1);
        assert_int_equal(stats.stats[i].net_in, -1);
        assert_int_equal(stats.stats[i].net_out, -1);
    }
    engine_slot_stats_free(&stats);
    assert_null(stats.stats);

    answer_fixture(p, "redis", "cluster_slot_stats.resp");
    assert_false(engine_cluster_slot_stats(p->c, 0, 16383, &stats, err, sizeof(err)));
    assert_string_equal(err, "ERR unknown subcommand 'SLOT-STATS'. Try CLUSTER HELP.");
    assert_int_equal(stats.count, 0);
    engine_slot_stats_free(&stats);
}

/* ---- a slot move ---------------------------------------------------- */

/* The captured move: three keys of slot 1584, counted, listed, migrated,
 * then gone (NOKEY); before the target imported the slot it refused. */
static void test_slot_move(void **state)
{
    struct peer *p = *state;
    struct resp_options to = {.host = "127.0.0.1", .port = 7002, .command_timeout_ms = 5000};
    char err[256];

    for (size_t e = 0; e < NENGINES; e++) {
        struct engine_keys keys;
        long long count = -1;

        answer_fixture(p, engines[e], "cluster_countkeysinslot.resp");
        assert_true(engine_cluster_countkeysinslot(p->c, 1584, &count, err, sizeof(err)));
        expect_words(p, "CLUSTER", "COUNTKEYSINSLOT", "1584", NULL);
        assert_int_equal(count, 3);

        answer_fixture(p, engines[e], "cluster_getkeysinslot.resp");
        assert_true(engine_cluster_getkeysinslot(p->c, 1584, 10, &keys, err, sizeof(err)));
        expect_words(p, "CLUSTER", "GETKEYSINSLOT", "1584", "10", NULL);
        assert_int_equal(keys.count, 3);
        assert_string_equal(keys.keys[0], "{3}:3");
        assert_int_equal(keys.lens[2], 5);

        answer_fixture(p, engines[e], "migrate_moved.resp");
        assert_false(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
        assert_non_null(strstr(err, "ERR Target instance replied with error: MOVED 1584 "));
        expect_words(p, "MIGRATE", "127.0.0.1", "7002", "", "0", "5000", "REPLACE", "KEYS", "{3}:3",
                     "{3}:2", "{3}:1", NULL);

        answer_fixture(p, engines[e], "migrate_ok.resp");
        assert_true(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
        skip_sent(p);
        answer_fixture(p, engines[e], "migrate_nokey.resp");
        assert_true(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
        skip_sent(p);
        engine_keys_free(&keys);
        assert_int_equal(keys.count, 0);
    }
}

/* MIGRATE authenticates as resp_connect() would, and sends keys as bytes. */
static void test_migrate_auth_and_bytes(void **state)
{
    struct peer *p = *state;
    char k0[] = "a\0b", k1[] = "with space";
    char *names[] = {k0, k1};
    size_t lens[] = {3, 10};
    struct engine_keys keys = {names, lens, 2};
    struct resp_options to = {.host = "10.0.0.2", .port = 7002, .password = "s3cret"};
    char err[256];

    answer(p, "+OK\r\n");
    assert_true(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
    const char *argv[] = {"MIGRATE", "10.0.0.2", "7002",   "",     "0", "1000",
                          "REPLACE", "AUTH",     "s3cret", "KEYS", k0,  k1};
    size_t argvlen[] = {7, 8, 4, 0, 1, 4, 7, 4, 6, 4, 3, 10};
    expect_argv(p, 12, argv, argvlen);

    to.username = "mover";
    to.command_timeout_ms = 250;
    answer(p, "+NOKEY\r\n");
    assert_true(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
    const char *argv2[] = {"MIGRATE", "10.0.0.2", "7002",   "",     "0", "250", "REPLACE",
                           "AUTH2",   "mover",    "s3cret", "KEYS", k0,  k1};
    size_t argvlen2[] = {7, 8, 4, 0, 1, 3, 7, 5, 5, 6, 4, 3, 10};
    expect_argv(p, 13, argv2, argvlen2);

    answer(p, "+NOKEYS\r\n");
    assert_false(engine_migrate(p->c, &to, &keys, err, sizeof(err)));
    assert_string_equal(err, "10.0.0.1:7001: unexpected reply to MIGRATE");
}

/* ---- reply readers (pure) ------------------------------------------- */

static void test_reply_ok(void **state)
{
    static const struct {
        const char *resp;
        bool ok;
    } cases[] = {
        {"+OK\r\n", true},       {"+OK Already connected to specified master\r\n", true},
        {"+OKAY\r\n", false},    {"+NOKEY\r\n", false},
        {"+QUEUED\r\n", false},  {"+\r\n", false},
        {"$2\r\nOK\r\n", false}, {"-OK\r\n", false},
        {":0\r\n", false},       {"*1\r\n+OK\r\n", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = fixture_reply_str(cases[i].resp);
        if (engine_reply_ok(r) != cases[i].ok)
            fail_msg("%s: expected %s", cases[i].resp, cases[i].ok ? "ok" : "not ok");
        freeReplyObject(r);
    }
}

static void test_cluster_info_state_parse(void **state)
{
    bool ok;

    (void)state;
    for (size_t e = 0; e < NENGINES; e++) {
        size_t len;
        char *name = xasprintf("%s/cluster_info.txt", engines[e]);
        char *text = fixture_load(name, &len);
        ok = false;
        assert_true(engine_cluster_info_state_parse(text, len, &ok));
        assert_true(ok);
        free(text);
        free(name);
    }
    assert_true(engine_cluster_info_state_parse("cluster_state:fail\r\n", 20, &ok));
    assert_false(ok);
    /* A value only starting "ok" is not ok; LF alone ends a line too. */
    assert_true(engine_cluster_info_state_parse("cluster_state:okay\n", 19, &ok));
    assert_false(ok);
    ok = true;
    assert_false(engine_cluster_info_state_parse("cluster_enabled:1\r\n", 19, &ok));
    assert_false(engine_cluster_info_state_parse("", 0, &ok));
    assert_true(ok); /* untouched */
}

static void test_cluster_info_epoch_parse(void **state)
{
    long long epoch;

    (void)state;
    for (size_t e = 0; e < NENGINES; e++) {
        size_t len;
        char *name = xasprintf("%s/cluster_info.txt", engines[e]);
        char *text = fixture_load(name, &len);
        epoch = -1;
        /* The node's own epoch, not the cluster's current one (7). */
        assert_true(engine_cluster_info_epoch_parse(text, len, &epoch));
        assert_int_equal(epoch, 1);
        free(text);
        free(name);
    }
    assert_true(engine_cluster_info_epoch_parse("cluster_my_epoch:9000000000\n", 28, &epoch));
    assert_int_equal(epoch, 9000000000LL);
    assert_false(engine_cluster_info_epoch_parse("cluster_current_epoch:3\r\n", 25, &epoch));
    assert_false(engine_cluster_info_epoch_parse("cluster_my_epoch:-1\r\n", 21, &epoch));
    assert_false(engine_cluster_info_epoch_parse("cluster_my_epoch:x\r\n", 20, &epoch));
    assert_false(engine_cluster_info_epoch_parse("", 0, &epoch));
}

static void test_cluster_myid_parse(void **state)
{
    char id[ENGINE_CLUSTER_ID_LEN + 1] = "";
    static const char *const bad[] = {
        "$39\r\n71e1048d201b35702a4e0131e9ed4848ad4e319\r\n",
        "$41\r\n71e1048d201b35702a4e0131e9ed4848ad4e31930\r\n",
        "$40\r\n71e1048d201b35702a4e0131e9ed4848ad4e319g\r\n",
        ":40\r\n",
        "$-1\r\n",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redisReply *r = fixture_reply_str(bad[i]);
        assert_false(engine_cluster_myid_parse(r, id));
        freeReplyObject(r);
    }
    assert_string_equal(id, "");
    redisReply *r = fixture_reply_str("+71e1048d201b35702a4e0131e9ed4848ad4e3193\r\n");
    assert_true(engine_cluster_myid_parse(r, id));
    assert_string_equal(id, "71e1048d201b35702a4e0131e9ed4848ad4e3193");
    freeReplyObject(r);
}

static void test_keys_parse(void **state)
{
    struct engine_keys keys;

    (void)state;
    redisReply *r = fixture_reply_str("*0\r\n");
    assert_true(engine_keys_parse(r, &keys));
    assert_int_equal(keys.count, 0);
    engine_keys_free(&keys);
    freeReplyObject(r);

    /* Key names are bytes. */
    static const char named[] = "*2\r\n$3\r\na\0b\r\n$0\r\n\r\n";
    r = fixture_reply_bytes(named, sizeof(named) - 1);
    assert_true(engine_keys_parse(r, &keys));
    assert_int_equal(keys.count, 2);
    assert_int_equal(keys.lens[0], 3);
    assert_memory_equal(keys.keys[0], "a\0b", 4);
    assert_int_equal(keys.lens[1], 0);
    assert_string_equal(keys.keys[1], "");
    engine_keys_free(&keys);
    freeReplyObject(r);

    /* Anything else is refused whole. */
    static const char *const bad[] = {"*2\r\n$1\r\na\r\n:1\r\n", "$1\r\na\r\n", "*-1\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = fixture_reply_str(bad[i]);
        assert_false(engine_keys_parse(r, &keys));
        assert_int_equal(keys.count, 0);
        assert_null(keys.keys);
        freeReplyObject(r);
    }
}

/* Valkey 8.1's figures (cpu-usec, network-bytes-*), names not known
 * here, and the entries a lenient reader skips. */
static void test_slot_stats_parse(void **state)
{
    struct engine_slot_stats stats;

    (void)state;
    redisReply *r = fixture_reply_str(
        "*4\r\n"
        "*2\r\n:7\r\n*8\r\n$9\r\nkey-count\r\n:5\r\n$8\r\ncpu-usec\r\n:120\r\n"
        "$16\r\nnetwork-bytes-in\r\n:300\r\n$17\r\nnetwork-bytes-out\r\n:400\r\n"
        "*2\r\n$1\r\n8\r\n*2\r\n$9\r\nkey-count\r\n:1\r\n" /* slot not an integer */
        "*1\r\n:9\r\n"                                     /* no figures */
        "*2\r\n:10\r\n*4\r\n$5\r\nnovel\r\n:1\r\n$9\r\nkey-count\r\n:2\r\n");
    assert_true(engine_slot_stats_parse(r, &stats));
    assert_int_equal(stats.count, 2);
    assert_int_equal(stats.stats[0].slot, 7);
    assert_int_equal(stats.stats[0].keys, 5);
    assert_int_equal(stats.stats[0].cpu_usec, 120);
    assert_int_equal(stats.stats[0].net_in, 300);
    assert_int_equal(stats.stats[0].net_out, 400);
    assert_int_equal(stats.stats[1].slot, 10);
    assert_int_equal(stats.stats[1].keys, 2);
    assert_int_equal(stats.stats[1].cpu_usec, -1);
    engine_slot_stats_free(&stats);
    freeReplyObject(r);

    r = fixture_reply_str("+OK\r\n");
    assert_false(engine_slot_stats_parse(r, &stats));
    assert_int_equal(stats.count, 0);
    freeReplyObject(r);
}

static void test_failover_mode_names(void **state)
{
    (void)state;
    assert_string_equal(engine_failover_mode_name(ENGINE_FAILOVER_DEFAULT), "DEFAULT");
    assert_string_equal(engine_failover_mode_name(ENGINE_FAILOVER_FORCE), "FORCE");
    assert_string_equal(engine_failover_mode_name(ENGINE_FAILOVER_TAKEOVER), "TAKEOVER");
}

/* ---- engine_slot_move(): the whole protocol, and resuming it ------------ */

#define SOURCE_ID "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TARGET_ID "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* A source, a target and the source's connection for big keys. */
struct move_peers {
    void *src, *dst, *big;
    struct resp_options dst_addr;
};

static void move_peers_open(struct move_peers *m)
{
    assert_int_equal(peer_setup(&m->src), 0);
    assert_int_equal(peer_setup(&m->dst), 0);
    assert_int_equal(peer_setup(&m->big), 0);
    m->dst_addr = (struct resp_options){.host = "10.0.0.2", .port = 7002};
}

static void move_peers_close(struct move_peers *m)
{
    peer_teardown(&m->src);
    peer_teardown(&m->dst);
    peer_teardown(&m->big);
}

static bool move(struct move_peers *m, struct engine_slot_moved *moved, char *err, size_t errsize)
{
    struct peer *src = m->src, *dst = m->dst, *big = m->big;
    struct engine_slot_end a = {src->c, NULL, SOURCE_ID};
    struct engine_slot_end b = {dst->c, &m->dst_addr, TARGET_ID};
    struct engine_slot_move_opts opts = {10, 2000, 60000};
    memset(moved, 0, sizeof(*moved));
    return engine_slot_move(&a, &b, big->c, 7, &opts, moved, err, errsize);
}

static void test_slot_move_whole(void **state)
{
    struct move_peers m;
    struct engine_slot_moved moved;
    char err[256] = "";
    (void)state;
    move_peers_open(&m);
    struct peer *src = m.src, *dst = m.dst;
    answer(dst, "+OK\r\n+OK\r\n");                                          /* IMPORTING, NODE */
    answer(src, "+OK\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n+OK\r\n*0\r\n+OK\r\n"); /* MIGRATING ... NODE */
    assert_true(move(&m, &moved, err, sizeof(err)));
    assert_int_equal(moved.keys, 2);
    assert_int_equal(moved.batches, 1);
    size_t n;
    char *sent = take_sent(src, &n);
    const char *order[] = {"MIGRATING", "GETKEYSINSLOT", "MIGRATE",
                           "REPLACE",   "GETKEYSINSLOT", "NODE"};
    const char *at = sent;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        const char *next = memmem(at, n - (size_t)(at - sent), order[i], strlen(order[i]));
        if (next == NULL)
            fail_msg("the source was not sent %s in order: %s", order[i], visible(sent, n));
        at = next;
    }
    free(sent);
    sent = take_sent(dst, &n);
    assert_non_null(memmem(sent, n, "IMPORTING", 9));
    assert_non_null(memmem(sent, n, SOURCE_ID, 40));
    assert_non_null(memmem(sent, n, TARGET_ID, 40)); /* NODE, to the target first */
    free(sent);
    move_peers_close(&m);
}

/* A target that owns the slot already (an earlier run got that far): only
 * the source is told, and no key is looked for. */
static void test_slot_move_resumed(void **state)
{
    struct move_peers m;
    struct engine_slot_moved moved;
    char err[256] = "";
    (void)state;
    move_peers_open(&m);
    struct peer *src = m.src, *dst = m.dst;
    answer(dst, "-ERR I'm already the owner of hash slot 7\r\n+OK\r\n");
    answer(src, "+OK\r\n");
    assert_true(move(&m, &moved, err, sizeof(err)));
    assert_int_equal(moved.keys, 0);
    expect_words(src, "CLUSTER", "SETSLOT", "7", "NODE", TARGET_ID, NULL);
    move_peers_close(&m);
}

/* Neither end owns the slot: no move of ours, and the target stops
 * importing. */
static void test_slot_move_third_owner(void **state)
{
    struct move_peers m;
    struct engine_slot_moved moved;
    char err[256] = "";
    (void)state;
    move_peers_open(&m);
    struct peer *src = m.src, *dst = m.dst;
    answer(dst, "+OK\r\n+OK\r\n");
    answer(src, "-ERR I'm not the owner of hash slot 7\r\n");
    assert_false(move(&m, &moved, err, sizeof(err)));
    assert_non_null(strstr(err, "served by neither end"));
    size_t n;
    char *sent = take_sent(dst, &n);
    assert_non_null(memmem(sent, n, "STABLE", 6));
    free(sent);
    move_peers_close(&m);
}

/* A batch that timed out goes again key by key on the big-key connection. */
static void test_slot_move_big_key(void **state)
{
    struct move_peers m;
    struct engine_slot_moved moved;
    char err[256] = "";
    (void)state;
    move_peers_open(&m);
    struct peer *src = m.src, *dst = m.dst, *big = m.big;
    answer(dst, "+OK\r\n+OK\r\n");
    answer(src, "+OK\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"
                "-IOERR error or timeout reading to target instance\r\n*0\r\n+OK\r\n");
    answer(big, "+OK\r\n+NOKEY\r\n");
    assert_true(move(&m, &moved, err, sizeof(err)));
    assert_int_equal(moved.keys, 2);
    assert_int_equal(moved.big_keys, 2);
    assert_int_equal(moved.batches, 3);
    size_t n;
    char *sent = take_sent(big, &n);
    assert_non_null(memmem(sent, n, "60000", 5)); /* the long timeout */
    free(sent);
    move_peers_close(&m);
}

#define PEER_TEST(f) cmocka_unit_test_setup_teardown(f, peer_setup, peer_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        PEER_TEST(test_commands_sent),
        PEER_TEST(test_setslot_forms),
        PEER_TEST(test_replicaof_already),
        PEER_TEST(test_replconf_getack),
        PEER_TEST(test_refusals),
        PEER_TEST(test_unexpected_replies),
        PEER_TEST(test_silence),
        PEER_TEST(test_cluster_nodes),
        PEER_TEST(test_cluster_info_state),
        PEER_TEST(test_cluster_myid),
        PEER_TEST(test_cluster_slot_stats),
        PEER_TEST(test_slot_move),
        PEER_TEST(test_migrate_auth_and_bytes),
        cmocka_unit_test(test_slot_move_whole),
        cmocka_unit_test(test_slot_move_resumed),
        cmocka_unit_test(test_slot_move_third_owner),
        cmocka_unit_test(test_slot_move_big_key),
        cmocka_unit_test(test_reply_ok),
        cmocka_unit_test(test_cluster_info_state_parse),
        cmocka_unit_test(test_cluster_info_epoch_parse),
        cmocka_unit_test(test_cluster_myid_parse),
        cmocka_unit_test(test_keys_parse),
        cmocka_unit_test(test_slot_stats_parse),
        cmocka_unit_test(test_failover_mode_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
