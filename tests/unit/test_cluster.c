/* test_cluster.c -- the CLUSTER NODES / SLOTS / SHARDS parsers
 * (engine/cluster.h) on a 3-primary + 3-replica cluster of Redis 7.0 and of
 * Valkey 8.0 (steady, mid slot move, after a failover), and on hand-written
 * edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster.h"
#include "xalloc.h"

#include "fixtures/fixture.h"

/* The captured cluster: node n listens on base + n (bus port + 10000) and
 * announces hostname node-n.cairn.test, except node 5. Nodes 0-2 were
 * made primaries of the three slot ranges; replica_of says whose replica
 * nodes 3-5 are. For the failover fixtures node 2 was stopped, and its
 * replica, node promoted, took over. */
struct cluster_case {
    const char *engine;
    int base;
    int replica_of[6]; /* node index of the primary, -1 for primaries */
    int promoted;
};

static const struct cluster_case cases[] = {
    {"redis", 27610, {-1, -1, -1, 1, 2, 0}, 4},
    {"valkey", 24725, {-1, -1, -1, 2, 0, 1}, 3},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const struct engine_cluster_range ranges[3] = {{0, 5460}, {5461, 10922}, {10923, 16383}};

static void parse_nodes_fixture(const char *engine, const char *file,
                                struct engine_cluster_nodes *out)
{
    size_t len;
    char err[256] = "";
    char *text = fixture_load_engine(engine, file, &len);

    if (!engine_cluster_nodes_parse(text, len, out, err, sizeof(err)))
        fail_msg("%s/%s: %s", engine, file, err);
    free(text);
}

static const struct engine_cluster_node *node_at(const struct engine_cluster_nodes *nodes, int port)
{
    for (size_t i = 0; i < nodes->count; i++) {
        if (nodes->nodes[i].port == port)
            return &nodes->nodes[i];
    }
    fail_msg("no node on port %d", port);
    return NULL;
}

/* The id CLUSTER NODES gives the node on this port. */
static const char *id_at(const struct engine_cluster_nodes *nodes, int port)
{
    return node_at(nodes, port)->id;
}

static void expect_hostname(const char *got, int n)
{
    if (n == 5) {
        assert_null(got);
    } else {
        char want[32];
        snprintf(want, sizeof(want), "node-%d.cairn.test", n);
        assert_non_null(got);
        assert_string_equal(got, want);
    }
}

/* ---- CLUSTER NODES fixtures ------------------------------------------- */

static void test_nodes_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes nodes;
        int total = 0;

        parse_nodes_fixture(k->engine, "cluster_nodes.txt", &nodes);
        assert_int_equal(nodes.count, 6);
        for (int n = 0; n < 6; n++) {
            const struct engine_cluster_node *node = node_at(&nodes, k->base + n);
            assert_string_equal(node->ip, "127.0.0.1");
            assert_int_equal(node->cport, k->base + n + 10000);
            expect_hostname(node->hostname, n);
            assert_true(node->connected);
            assert_int_equal(node->ping_sent, 0);
            assert_int_equal(node->nmigrations, 0);
            assert_int_equal(strlen(node->id), ENGINE_CLUSTER_ID_LEN);
            assert_ptr_equal(engine_cluster_nodes_find(&nodes, node->id), node);
            if (k->replica_of[n] < 0) {
                assert_int_equal(node->flags & ~ENGINE_CLUSTER_MYSELF, ENGINE_CLUSTER_PRIMARY);
                assert_string_equal(node->primary_id, "");
                assert_int_equal(node->nranges, 1);
                assert_int_equal(node->ranges[0].start, ranges[n].start);
                assert_int_equal(node->ranges[0].end, ranges[n].end);
                assert_int_equal(node->config_epoch, n + 1);
            } else {
                assert_int_equal(node->flags, ENGINE_CLUSTER_REPLICA);
                assert_string_equal(node->primary_id, id_at(&nodes, k->base + k->replica_of[n]));
                assert_int_equal(node->nranges, 0);
                /* A replica shows its primary's epoch. */
                assert_int_equal(node->config_epoch, k->replica_of[n] + 1);
            }
            if (!(node->flags & ENGINE_CLUSTER_MYSELF))
                assert_true(node->pong_recv > 1700000000000LL);
            total += engine_cluster_node_slot_count(node);
        }
        assert_int_equal(total, ENGINE_CLUSTER_SLOTS);

        const struct engine_cluster_node *me = engine_cluster_nodes_myself(&nodes);
        assert_non_null(me);
        assert_int_equal(me->port, k->base);
        assert_int_equal(me->flags, ENGINE_CLUSTER_MYSELF | ENGINE_CLUSTER_PRIMARY);
        /* Valkey 8.0 leaves its own pong-recv at 0; Redis 7.0 fills it in. */
        if (strcmp(k->engine, "valkey") == 0)
            assert_int_equal(me->pong_recv, 0);
        else
            assert_true(me->pong_recv > 0);
        assert_null(engine_cluster_nodes_find(&nodes, "0000000000000000000000000000000000000000"));
        engine_cluster_nodes_free(&nodes);
        assert_null(nodes.nodes);
    }
}

static void test_nodes_migration_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes src, dst;

        /* Slot 42 moving from node 0 to node 1: each side shows it on its
         * own line only. */
        parse_nodes_fixture(k->engine, "cluster_nodes_migrating.txt", &src);
        parse_nodes_fixture(k->engine, "cluster_nodes_importing.txt", &dst);

        const struct engine_cluster_node *a = engine_cluster_nodes_myself(&src);
        assert_int_equal(a->port, k->base);
        assert_int_equal(a->nranges, 1);
        assert_int_equal(a->nmigrations, 1);
        assert_int_equal(a->migrations[0].slot, 42);
        assert_false(a->migrations[0].importing);
        assert_string_equal(a->migrations[0].peer, id_at(&src, k->base + 1));
        /* Slot 42 is still node 0's. */
        assert_int_equal(engine_cluster_node_slot_count(a), 5461);

        const struct engine_cluster_node *b = engine_cluster_nodes_myself(&dst);
        assert_int_equal(b->port, k->base + 1);
        assert_int_equal(b->nmigrations, 1);
        assert_int_equal(b->migrations[0].slot, 42);
        assert_true(b->migrations[0].importing);
        assert_string_equal(b->migrations[0].peer, a->id);
        assert_int_equal(node_at(&dst, k->base)->nmigrations, 0);

        engine_cluster_nodes_free(&src);
        engine_cluster_nodes_free(&dst);
    }
}

static void test_nodes_failover_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes nodes;

        parse_nodes_fixture(k->engine, "cluster_nodes_failover.txt", &nodes);
        assert_int_equal(nodes.count, 6);

        const struct engine_cluster_node *dead = node_at(&nodes, k->base + 2);
        assert_int_equal(dead->flags, ENGINE_CLUSTER_PRIMARY | ENGINE_CLUSTER_FAIL);
        assert_false(dead->connected);
        assert_true(dead->ping_sent > 0);
        assert_int_equal(dead->nranges, 0);

        const struct engine_cluster_node *heir = node_at(&nodes, k->base + k->promoted);
        assert_int_equal(heir->flags, ENGINE_CLUSTER_PRIMARY);
        assert_string_equal(heir->primary_id, "");
        assert_true(heir->connected);
        assert_true(heir->config_epoch > 3);
        assert_int_equal(heir->nranges, 1);
        assert_int_equal(heir->ranges[0].start, 10923);
        assert_int_equal(heir->ranges[0].end, 16383);
        engine_cluster_nodes_free(&nodes);
    }
}

/* ---- CLUSTER NODES by hand -------------------------------------------- */

#define ID_A "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"
#define ID_B "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1"
#define ID_C "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"

static void test_nodes_forms(void **state)
{
    static const char text[] =
        /* IPv6, several ranges and single slots, CRLF */
        ID_A " 2001:db8::1:30001@40001 myself,master - 0 1426238317239 4 connected "
             "0-10 12 14-20 16383\r\n"
             "\r\n"
        /* no address at all; the flags Redis prints for a forgotten node */
        ID_B " :0@0 master,fail?,noaddr - 1426238316232 1426238315000 0 disconnected\n"
        /* hostname followed by aux fields, unknown flag, nofailover */
        ID_C " 10.0.0.3:7000@17000,cache-3.example,shard-id=abc slave,nofailover,shiny " ID_A
             " 0 0 4 connected\n"
             /* handshake: noflags later, empty hostname before aux fields */
             "ffffffffffffffffffffffffffffffffffffffff 10.0.0.4:7000@17000,,shard-id=abc "
             "handshake - 0 0 0 connected\n"
             "0123456789ABCDEF0123456789ABCDEF01234567 10.0.0.5:7000@17000 noflags - 0 0 0 "
             "connected";
    struct engine_cluster_nodes nodes;
    char err[256] = "";

    (void)state;
    if (!engine_cluster_nodes_parse(text, sizeof(text) - 1, &nodes, err, sizeof(err)))
        fail_msg("%s", err);
    assert_int_equal(nodes.count, 5);

    const struct engine_cluster_node *a = &nodes.nodes[0];
    assert_string_equal(a->ip, "2001:db8::1");
    assert_int_equal(a->port, 30001);
    assert_int_equal(a->cport, 40001);
    assert_null(a->hostname);
    assert_int_equal(a->pong_recv, 1426238317239LL);
    assert_int_equal(a->nranges, 4);
    assert_int_equal(a->ranges[1].start, 12);
    assert_int_equal(a->ranges[1].end, 12);
    assert_int_equal(a->ranges[3].start, 16383);
    assert_int_equal(engine_cluster_node_slot_count(a), 11 + 1 + 7 + 1);

    const struct engine_cluster_node *b = &nodes.nodes[1];
    assert_string_equal(b->ip, "");
    assert_int_equal(b->port, 0);
    assert_int_equal(b->flags,
                     ENGINE_CLUSTER_PRIMARY | ENGINE_CLUSTER_PFAIL | ENGINE_CLUSTER_NOADDR);
    assert_false(b->connected);

    const struct engine_cluster_node *c = &nodes.nodes[2];
    assert_string_equal(c->hostname, "cache-3.example");
    assert_int_equal(c->flags, ENGINE_CLUSTER_REPLICA | ENGINE_CLUSTER_NOFAILOVER);
    assert_string_equal(c->primary_id, ID_A);

    assert_int_equal(nodes.nodes[3].flags, ENGINE_CLUSTER_HANDSHAKE);
    assert_null(nodes.nodes[3].hostname);
    assert_int_equal(nodes.nodes[4].flags, 0);
    assert_string_equal(nodes.nodes[4].id, "0123456789ABCDEF0123456789ABCDEF01234567");
    engine_cluster_nodes_free(&nodes);

    assert_true(engine_cluster_nodes_parse("", 0, &nodes, err, sizeof(err)));
    assert_int_equal(nodes.count, 0);
    assert_null(engine_cluster_nodes_myself(&nodes));
    engine_cluster_nodes_free(&nodes);
}

static void test_nodes_malformed(void **state)
{
#define GOOD_HEAD ID_A " 127.0.0.1:7000@17000 master - 0 0 1 connected"
    static const struct {
        const char *text;
        const char *message;
    } bad[] = {
        {ID_A " 127.0.0.1:7000@17000 master - 0 0 1",
         "CLUSTER NODES line 1: expected at least 8 fields, got 7"},
        {"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9c 127.0.0.1:7000@17000 master - 0 0 1 connected",
         "CLUSTER NODES line 1: bad node id \"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9c\""},
        {"g7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:7000@17000 master - 0 0 1 connected",
         NULL},
        {ID_A " 127.0.0.1:7000 master - 0 0 1 connected",
         "CLUSTER NODES line 1: bad address \"127.0.0.1:7000\""},
        {ID_A " 127.0.0.1@17000 master - 0 0 1 connected", NULL},
        {ID_A " 127.0.0.1:70000@17000 master - 0 0 1 connected", NULL},
        {ID_A " 127.0.0.1:7000@x master - 0 0 1 connected", NULL},
        {ID_A " 127.0.0.1:7000@17000 slave abc 0 0 1 connected",
         "CLUSTER NODES line 1: bad primary id \"abc\""},
        {ID_A " 127.0.0.1:7000@17000 master - -1 0 1 connected",
         "CLUSTER NODES line 1: bad number \"-1\""},
        {ID_A " 127.0.0.1:7000@17000 master - 0 0 x connected", NULL},
        {ID_A " 127.0.0.1:7000@17000 master - 0 0 1 linked",
         "CLUSTER NODES line 1: bad link state \"linked\""},
        {GOOD_HEAD " 16384", "CLUSTER NODES line 1: bad slot entry \"16384\""},
        {GOOD_HEAD " 10-5", NULL},
        {GOOD_HEAD " 0-16384", NULL},
        {GOOD_HEAD " -5", NULL},
        {GOOD_HEAD " 5-", NULL},
        {GOOD_HEAD " abc", NULL},
        {GOOD_HEAD " [42->-abc]", NULL},
        {GOOD_HEAD " [42=>-" ID_B "]", NULL},
        {GOOD_HEAD " [42->-" ID_B, NULL},
        {GOOD_HEAD " [->-" ID_B "]", NULL},
        {GOOD_HEAD " [99999-<-" ID_B "]", NULL},
        /* a failure on a later line names it, and frees the earlier nodes */
        {GOOD_HEAD " 0-100\n\n" GOOD_HEAD " 101-200 x",
         "CLUSTER NODES line 3: bad slot entry \"x\""},
    };
#undef GOOD_HEAD

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct engine_cluster_nodes nodes;
        char err[256] = "";
        if (engine_cluster_nodes_parse(bad[i].text, strlen(bad[i].text), &nodes, err, sizeof(err)))
            fail_msg("case %zu parsed: %s", i, bad[i].text);
        if (bad[i].message != NULL)
            assert_string_equal(err, bad[i].message);
        else if (strncmp(err, "CLUSTER NODES line 1: ", 22) != 0)
            fail_msg("case %zu: message \"%s\"", i, err);
        assert_null(nodes.nodes);
        assert_int_equal(nodes.count, 0);
    }
}

/* ---- CLUSTER SLOTS ---------------------------------------------------- */

static void parse_slots_fixture(const char *engine, const char *file,
                                struct engine_cluster_slots *out)
{
    redisReply *r = fixture_reply_engine(engine, file);
    char err[256] = "";
    if (!engine_cluster_slots_parse(r, out, err, sizeof(err)))
        fail_msg("%s/%s: %s", engine, file, err);
    freeReplyObject(r);
}

/* The SLOTS entry for range n, whatever the reply order. */
static const struct engine_cluster_slot_entry *slots_entry(const struct engine_cluster_slots *s,
                                                           int n)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->entries[i].range.start == ranges[n].start &&
            s->entries[i].range.end == ranges[n].end)
            return &s->entries[i];
    }
    fail_msg("no SLOTS entry for %d-%d", ranges[n].start, ranges[n].end);
    return NULL;
}

/* Check a SLOTS node against what CLUSTER NODES says of node n. */
static void expect_endpoint(const struct engine_cluster_endpoint *ep,
                            const struct engine_cluster_nodes *nodes, const struct cluster_case *k,
                            int n)
{
    assert_string_equal(ep->endpoint, "127.0.0.1");
    assert_int_equal(ep->port, k->base + n);
    assert_string_equal(ep->id, id_at(nodes, k->base + n));
    assert_null(ep->ip); /* sent only when the endpoint is not the IP */
    expect_hostname(ep->hostname, n);
}

static int replica_of(const struct cluster_case *k, int primary)
{
    for (int n = 3; n < 6; n++) {
        if (k->replica_of[n] == primary)
            return n;
    }
    fail_msg("node %d has no replica", primary);
    return -1;
}

static void test_slots_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes nodes;
        struct engine_cluster_slots slots;

        parse_nodes_fixture(k->engine, "cluster_nodes.txt", &nodes);
        parse_slots_fixture(k->engine, "cluster_slots.resp", &slots);
        assert_int_equal(slots.count, 3);
        for (int n = 0; n < 3; n++) {
            const struct engine_cluster_slot_entry *e = slots_entry(&slots, n);
            assert_int_equal(e->nnodes, 2);
            expect_endpoint(&e->nodes[0], &nodes, k, n);
            expect_endpoint(&e->nodes[1], &nodes, k, replica_of(k, n));
        }
        engine_cluster_slots_free(&slots);
        assert_null(slots.entries);

        /* After the failover the promoted replica serves alone; the failed
         * primary is not listed. */
        parse_slots_fixture(k->engine, "cluster_slots_failover.resp", &slots);
        assert_int_equal(slots.count, 3);
        const struct engine_cluster_slot_entry *e = slots_entry(&slots, 2);
        assert_int_equal(e->nnodes, 1);
        expect_endpoint(&e->nodes[0], &nodes, k, k->promoted);
        assert_int_equal(slots_entry(&slots, 0)->nnodes, 2);
        engine_cluster_slots_free(&slots);
        engine_cluster_nodes_free(&nodes);
    }
}

/* Valkey 8.0, caught before gossip carried one replica's offset: that
 * replica (offset 0, "loading" in SHARDS) is left out of SLOTS. */
static void test_slots_valkey_loading(void **state)
{
    struct engine_cluster_slots slots;

    (void)state;
    parse_slots_fixture("valkey", "cluster_slots_loading.resp", &slots);
    assert_int_equal(slots.count, 3);
    const struct engine_cluster_slot_entry *e = slots_entry(&slots, 1);
    assert_int_equal(e->nnodes, 1);
    assert_int_equal(e->nodes[0].port, 22131);
    assert_string_equal(e->nodes[0].id, "41b8c849d714f2660bbcf1efb47324ca7ff319fa");
    assert_null(e->nodes[0].hostname);
    assert_int_equal(slots_entry(&slots, 0)->nnodes, 2);
    assert_int_equal(slots_entry(&slots, 2)->nnodes, 2);
    engine_cluster_slots_free(&slots);
}

static void test_slots_forms(void **state)
{
    /* Endpoint "?" with the IP in the metadata; a nil endpoint; a node
     * without metadata; single-slot entry. */
    static const char resp[] =
        "*2\r\n"
        "*4\r\n:0\r\n:0\r\n"
        "*4\r\n$1\r\n?\r\n:7000\r\n$40\r\n" ID_A "\r\n"
        "*4\r\n$8\r\nhostname\r\n$6\r\ncache1\r\n$2\r\nip\r\n$8\r\n10.0.0.1\r\n"
        "*3\r\n$-1\r\n:7001\r\n$40\r\n" ID_B "\r\n"
        "*3\r\n:1\r\n:16383\r\n"
        "*4\r\n$6\r\ncache2\r\n:7002\r\n$40\r\n" ID_C "\r\n*0\r\n";
    struct engine_cluster_slots slots;
    char err[256] = "";

    (void)state;
    redisReply *r = fixture_reply_str(resp);
    if (!engine_cluster_slots_parse(r, &slots, err, sizeof(err)))
        fail_msg("%s", err);
    freeReplyObject(r);
    assert_int_equal(slots.count, 2);
    const struct engine_cluster_slot_entry *e = &slots.entries[0];
    assert_int_equal(e->range.start, 0);
    assert_int_equal(e->range.end, 0);
    assert_int_equal(e->nnodes, 2);
    assert_string_equal(e->nodes[0].endpoint, "?");
    assert_string_equal(e->nodes[0].ip, "10.0.0.1");
    assert_string_equal(e->nodes[0].hostname, "cache1");
    assert_null(e->nodes[1].endpoint);
    assert_null(e->nodes[1].hostname);
    assert_string_equal(e->nodes[1].id, ID_B);
    assert_string_equal(slots.entries[1].nodes[0].endpoint, "cache2");
    engine_cluster_slots_free(&slots);

    r = fixture_reply_str("*0\r\n");
    assert_true(engine_cluster_slots_parse(r, &slots, err, sizeof(err)));
    assert_int_equal(slots.count, 0);
    engine_cluster_slots_free(&slots);
    freeReplyObject(r);
}

static void test_slots_malformed(void **state)
{
#define NODE_A "*3\r\n$1\r\na\r\n:1\r\n$40\r\n" ID_A "\r\n"
    static const char *const bad[] = {
        "-ERR This instance has cluster support disabled\r\n",
        ":1\r\n",
        "*1\r\n:1\r\n",                                    /* entry not an array */
        "*1\r\n*2\r\n:0\r\n:1\r\n",                        /* no primary */
        "*1\r\n*3\r\n:0\r\n:16384\r\n" NODE_A,             /* slot out of range */
        "*1\r\n*3\r\n:10\r\n:5\r\n" NODE_A,                /* backwards */
        "*1\r\n*3\r\n$1\r\nx\r\n:5\r\n" NODE_A,            /* start not a number */
        "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\na\r\n:1\r\n", /* no id */
        "*1\r\n*3\r\n:0\r\n:5\r\n*3\r\n$1\r\na\r\n:70000\r\n$40\r\n" ID_A "\r\n",   /* port */
        "*1\r\n*3\r\n:0\r\n:5\r\n*3\r\n:1\r\n:1\r\n$40\r\n" ID_A "\r\n",            /* endpoint */
        "*1\r\n*3\r\n:0\r\n:5\r\n*3\r\n$1\r\na\r\n:1\r\n$3\r\nabc\r\n",             /* short id */
        "*1\r\n*3\r\n:0\r\n:5\r\n*4\r\n$1\r\na\r\n:1\r\n$40\r\n" ID_A "\r\n:5\r\n", /* meta */
        "*1\r\n*3\r\n:0\r\n:5\r\n*4\r\n$1\r\na\r\n:1\r\n$40\r\n" ID_A
        "\r\n*2\r\n$8\r\nhostname\r\n:5\r\n", /* hostname not a string */
        "*1\r\n*3\r\n:0\r\n:5\r\n*4\r\n$1\r\na\r\n:1\r\n$40\r\n" ID_A
        "\r\n*1\r\n$8\r\nhostname\r\n", /* odd metadata */
        /* a bad replica after a good primary, in a second entry: frees all */
        "*2\r\n*3\r\n:0\r\n:5\r\n" NODE_A "*4\r\n:6\r\n:9\r\n" NODE_A "*1\r\n:1\r\n",
    };
#undef NODE_A

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct engine_cluster_slots slots;
        char err[256] = "";
        redisReply *r = fixture_reply_str(bad[i]);
        if (engine_cluster_slots_parse(r, &slots, err, sizeof(err)))
            fail_msg("case %zu parsed", i);
        freeReplyObject(r);
        if (strncmp(err, "CLUSTER SLOTS: ", 15) != 0)
            fail_msg("case %zu: message \"%s\"", i, err);
        assert_null(slots.entries);
    }

    struct engine_cluster_slots slots;
    char err[256];
    redisReply *r = fixture_reply_str(bad[0]);
    assert_false(engine_cluster_slots_parse(r, &slots, err, sizeof(err)));
    assert_string_equal(err, "CLUSTER SLOTS: ERR This instance has cluster support disabled");
    freeReplyObject(r);
}

/* ---- CLUSTER SHARDS --------------------------------------------------- */

static void parse_shards_fixture(const char *engine, const char *file,
                                 struct engine_cluster_shards *out)
{
    redisReply *r = fixture_reply_engine(engine, file);
    char err[256] = "";
    if (!engine_cluster_shards_parse(r, out, err, sizeof(err)))
        fail_msg("%s/%s: %s", engine, file, err);
    freeReplyObject(r);
}

/* The shard that owns range n, whatever the reply order. */
static const struct engine_cluster_shard *shard_for(const struct engine_cluster_shards *s, int n)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->shards[i].nranges == 1 && s->shards[i].ranges[0].start == ranges[n].start &&
            s->shards[i].ranges[0].end == ranges[n].end)
            return &s->shards[i];
    }
    fail_msg("no shard owns %d-%d", ranges[n].start, ranges[n].end);
    return NULL;
}

static void expect_shard_node(const struct engine_cluster_shard_node *node,
                              const struct engine_cluster_nodes *nodes,
                              const struct cluster_case *k, int n, bool primary)
{
    assert_string_equal(node->id, id_at(nodes, k->base + n));
    assert_int_equal(node->port, k->base + n);
    assert_int_equal(node->tls_port, 0);
    assert_string_equal(node->ip, "127.0.0.1");
    assert_string_equal(node->endpoint, "127.0.0.1");
    expect_hostname(node->hostname, n);
    assert_int_equal(node->primary, primary);
    assert_int_equal(node->health, ENGINE_CLUSTER_HEALTH_ONLINE);
    assert_true(node->replication_offset > 0);
}

static void test_shards_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes nodes;
        struct engine_cluster_shards shards;

        parse_nodes_fixture(k->engine, "cluster_nodes.txt", &nodes);
        parse_shards_fixture(k->engine, "cluster_shards.resp", &shards);
        assert_int_equal(shards.count, 3);
        for (int n = 0; n < 3; n++) {
            const struct engine_cluster_shard *s = shard_for(&shards, n);
            assert_int_equal(s->nnodes, 2);
            const struct engine_cluster_shard_node *p = engine_cluster_shard_primary(s);
            assert_ptr_equal(p, &s->nodes[0]);
            expect_shard_node(&s->nodes[0], &nodes, k, n, true);
            expect_shard_node(&s->nodes[1], &nodes, k, replica_of(k, n), false);
            assert_int_equal(s->nodes[1].replication_offset, s->nodes[0].replication_offset);
        }
        engine_cluster_shards_free(&shards);
        assert_null(shards.shards);
        engine_cluster_nodes_free(&nodes);
    }
}

/* The engines disagree on where a failed primary goes after a failover. */
static void test_shards_failover_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        const struct cluster_case *k = &cases[c];
        struct engine_cluster_nodes nodes;
        struct engine_cluster_shards shards;
        const char *dead_id, *heir_id;

        parse_nodes_fixture(k->engine, "cluster_nodes_failover.txt", &nodes);
        dead_id = id_at(&nodes, k->base + 2);
        heir_id = id_at(&nodes, k->base + k->promoted);
        parse_shards_fixture(k->engine, "cluster_shards_failover.resp", &shards);

        const struct engine_cluster_shard *s = shard_for(&shards, 2);
        const struct engine_cluster_shard_node *p = engine_cluster_shard_primary(s);
        assert_non_null(p);
        assert_string_equal(p->id, heir_id);
        assert_true(p->primary);
        assert_int_equal(p->health, ENGINE_CLUSTER_HEALTH_ONLINE);

        const struct engine_cluster_shard_node *dead = NULL;
        const struct engine_cluster_shard *dead_shard = NULL;
        for (size_t i = 0; i < shards.count; i++) {
            for (size_t j = 0; j < shards.shards[i].nnodes; j++) {
                if (strcmp(shards.shards[i].nodes[j].id, dead_id) == 0) {
                    dead = &shards.shards[i].nodes[j];
                    dead_shard = &shards.shards[i];
                }
            }
        }
        assert_non_null(dead);
        assert_true(dead->primary); /* still says "master" */
        assert_int_equal(dead->health, ENGINE_CLUSTER_HEALTH_FAIL);
        assert_string_equal(engine_cluster_health_name(dead->health), "fail");

        if (strcmp(k->engine, "redis") == 0) {
            /* Redis 7.0: a shard of its own, with no slots and no primary. */
            assert_int_equal(shards.count, 4);
            assert_ptr_not_equal(dead_shard, s);
            assert_int_equal(dead_shard->nranges, 0);
            assert_int_equal(dead_shard->nnodes, 1);
            assert_null(engine_cluster_shard_primary(dead_shard));
            assert_int_equal(s->nnodes, 1);
        } else {
            /* Valkey 8.0: kept in its old shard, beside its successor. */
            assert_int_equal(shards.count, 3);
            assert_ptr_equal(dead_shard, s);
            assert_int_equal(s->nnodes, 2);
        }
        engine_cluster_shards_free(&shards);
        engine_cluster_nodes_free(&nodes);
    }
}

static void test_shards_valkey_loading(void **state)
{
    struct engine_cluster_shards shards;

    (void)state;
    parse_shards_fixture("valkey", "cluster_shards_loading.resp", &shards);
    const struct engine_cluster_shard *s = shard_for(&shards, 1);
    assert_int_equal(s->nnodes, 2);
    assert_int_equal(s->nodes[0].health, ENGINE_CLUSTER_HEALTH_ONLINE);
    assert_int_equal(s->nodes[1].health, ENGINE_CLUSTER_HEALTH_LOADING);
    assert_int_equal(s->nodes[1].replication_offset, 0);
    assert_false(s->nodes[1].primary);
    assert_int_equal(s->nodes[1].port, 22134);
    assert_string_equal(engine_cluster_health_name(s->nodes[1].health), "loading");
    engine_cluster_shards_free(&shards);
}

/* One shard node as RESP2 key-value pairs. */
#define SHARD_NODE_FULL                                                                            \
    "*18\r\n$2\r\nid\r\n$40\r\n" ID_A "\r\n$4\r\nport\r\n:0\r\n$8\r\ntls-port\r\n:6380\r\n"        \
    "$2\r\nip\r\n$8\r\n10.0.0.1\r\n$8\r\nendpoint\r\n$-1\r\n$8\r\nhostname\r\n$6\r\ncache1\r\n"    \
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:72156\r\n"                        \
    "$6\r\nhealth\r\n$8\r\nthriving\r\n"

static void test_shards_forms(void **state)
{
    /* TLS-only node, nil endpoint, unknown health, unknown keys at both
     * levels, two ranges. */
    static const char resp[] = "*1\r\n*6\r\n"
                               "$5\r\nslots\r\n*4\r\n:0\r\n:99\r\n:200\r\n:200\r\n"
                               "$5\r\nnodes\r\n*1\r\n" SHARD_NODE_FULL "$2\r\nid\r\n$3\r\nxyz\r\n";
    struct engine_cluster_shards shards;
    char err[256] = "";

    (void)state;
    redisReply *r = fixture_reply_str(resp);
    if (!engine_cluster_shards_parse(r, &shards, err, sizeof(err)))
        fail_msg("%s", err);
    freeReplyObject(r);
    assert_int_equal(shards.count, 1);
    const struct engine_cluster_shard *s = &shards.shards[0];
    assert_int_equal(s->nranges, 2);
    assert_int_equal(s->ranges[1].start, 200);
    assert_int_equal(s->ranges[1].end, 200);
    assert_int_equal(s->nnodes, 1);
    assert_int_equal(s->nodes[0].port, 0);
    assert_int_equal(s->nodes[0].tls_port, 6380);
    assert_null(s->nodes[0].endpoint);
    assert_string_equal(s->nodes[0].hostname, "cache1");
    assert_int_equal(s->nodes[0].replication_offset, 72156);
    assert_int_equal(s->nodes[0].health, ENGINE_CLUSTER_HEALTH_UNKNOWN);
    assert_string_equal(engine_cluster_health_name(s->nodes[0].health), "unknown");
    assert_ptr_equal(engine_cluster_shard_primary(s), &s->nodes[0]);
    engine_cluster_shards_free(&shards);
}

/* A shard whose node array is replaced by the given node. */
#define SHARD_WITH(node) "*1\r\n*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n*1\r\n" node

/* A node of the usual 14 elements with one key-value pair substituted. */
#define NODE_KV(k1, v1)                                                                            \
    "*14\r\n" k1 v1 "$4\r\nport\r\n:1\r\n$2\r\nip\r\n$1\r\na\r\n$8\r\nendpoint\r\n$1\r\na\r\n"     \
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\n"      \
    "online\r\n"

static void test_shards_malformed(void **state)
{
    static const struct {
        const char *resp;
        const char *message;
    } bad[] = {
        {"-ERR This instance has cluster support disabled\r\n",
         "CLUSTER SHARDS: ERR This instance has cluster support disabled"},
        {"$2\r\nno\r\n", "CLUSTER SHARDS: expected an array"},
        {"*1\r\n:1\r\n", "CLUSTER SHARDS: shard 0: expected a map"},
        {"*1\r\n*3\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n",
         "CLUSTER SHARDS: shard 0: expected a map"},
        {"*1\r\n*2\r\n$5\r\nnodes\r\n*0\r\n", "CLUSTER SHARDS: shard 0: missing \"slots\""},
        {"*1\r\n*2\r\n$5\r\nslots\r\n*0\r\n", "CLUSTER SHARDS: shard 0: missing \"nodes\""},
        {"*1\r\n*4\r\n$5\r\nslots\r\n*1\r\n:0\r\n$5\r\nnodes\r\n*0\r\n",
         "CLUSTER SHARDS: shard 0: malformed \"slots\""},
        {"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:5\r\n:4\r\n$5\r\nnodes\r\n*0\r\n",
         "CLUSTER SHARDS: shard 0: malformed \"slots\""},
        {"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16384\r\n$5\r\nnodes\r\n*0\r\n",
         "CLUSTER SHARDS: shard 0: malformed \"slots\""},
        {"*1\r\n*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n:3\r\n",
         "CLUSTER SHARDS: shard 0: malformed \"nodes\""},
        {SHARD_WITH(":1\r\n"), "CLUSTER SHARDS: shard 0: node 0: expected a map"},
        {SHARD_WITH(NODE_KV("$3\r\nxid\r\n", "$1\r\nx\r\n")),
         "CLUSTER SHARDS: shard 0: node 0: missing \"id\""},
        {SHARD_WITH(NODE_KV("$2\r\nid\r\n", "$1\r\nx\r\n")),
         "CLUSTER SHARDS: shard 0: node 0: malformed \"id\""},
        {SHARD_WITH(NODE_KV("$2\r\nid\r\n", "$40\r\n" ID_A "\r\n")), NULL}, /* valid */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct engine_cluster_shards shards;
        char err[256] = "";
        redisReply *r = fixture_reply_str(bad[i].resp);
        bool ok = engine_cluster_shards_parse(r, &shards, err, sizeof(err));
        freeReplyObject(r);
        if (bad[i].message == NULL) {
            if (!ok)
                fail_msg("case %zu: %s", i, err);
            engine_cluster_shards_free(&shards);
            continue;
        }
        if (ok)
            fail_msg("case %zu parsed", i);
        assert_string_equal(err, bad[i].message);
        assert_null(shards.shards);
    }
}

/* Every required node key missing or mistyped in turn, in the second node
 * of the second shard, so the failure path frees a partly built result. */
static void test_shards_node_keys(void **state)
{
#define ID_KV       "$2\r\nid\r\n$40\r\n" ID_A "\r\n"
#define PORT_KV     "$4\r\nport\r\n:1\r\n"
#define IP_KV       "$2\r\nip\r\n$1\r\na\r\n"
#define ENDPOINT_KV "$8\r\nendpoint\r\n$1\r\na\r\n"
#define ROLE_KV     "$4\r\nrole\r\n$7\r\nreplica\r\n"
#define OFFSET_KV   "$18\r\nreplication-offset\r\n:5\r\n"
#define HEALTH_KV   "$6\r\nhealth\r\n$6\r\nonline\r\n"
#define GOOD_NODE   "*14\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV
#define TWO_SHARDS(node)                                                                           \
    "*2\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:1\r\n$5\r\nnodes\r\n*1\r\n" GOOD_NODE                 \
    "*4\r\n$5\r\nslots\r\n*2\r\n:2\r\n:3\r\n$5\r\nnodes\r\n*2\r\n" GOOD_NODE node
    static const struct {
        const char *resp;
        const char *why;
    } bad[] = {
        {TWO_SHARDS("*12\r\n" ID_KV IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "neither \"port\" nor \"tls-port\""},
        {TWO_SHARDS("*14\r\n" ID_KV
                    "$4\r\nport\r\n:99999\r\n" IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "malformed \"port\""},
        {TWO_SHARDS("*16\r\n" ID_KV PORT_KV
                    "$8\r\ntls-port\r\n$1\r\nx\r\n" IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "malformed \"tls-port\""},
        {TWO_SHARDS("*12\r\n" ID_KV PORT_KV ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "missing \"ip\""},
        {TWO_SHARDS("*14\r\n" ID_KV PORT_KV
                    "$2\r\nip\r\n:1\r\n" ENDPOINT_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "malformed \"ip\""},
        {TWO_SHARDS("*12\r\n" ID_KV PORT_KV IP_KV ROLE_KV OFFSET_KV HEALTH_KV),
         "missing \"endpoint\""},
        {TWO_SHARDS("*14\r\n" ID_KV PORT_KV IP_KV
                    "$8\r\nendpoint\r\n*0\r\n" ROLE_KV OFFSET_KV HEALTH_KV),
         "malformed \"endpoint\""},
        {TWO_SHARDS("*16\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV
                    "$8\r\nhostname\r\n:1\r\n" ROLE_KV OFFSET_KV HEALTH_KV),
         "malformed \"hostname\""},
        {TWO_SHARDS("*12\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV OFFSET_KV HEALTH_KV),
         "missing \"role\""},
        {TWO_SHARDS("*14\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV
                    "$4\r\nrole\r\n$6\r\nleader\r\n" OFFSET_KV HEALTH_KV),
         "malformed \"role\""},
        {TWO_SHARDS("*12\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV ROLE_KV HEALTH_KV),
         "missing \"replication-offset\""},
        {TWO_SHARDS("*14\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV ROLE_KV
                    "$18\r\nreplication-offset\r\n$2\r\n1x\r\n" HEALTH_KV),
         "malformed \"replication-offset\""},
        {TWO_SHARDS("*12\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV),
         "missing \"health\""},
        {TWO_SHARDS("*14\r\n" ID_KV PORT_KV IP_KV ENDPOINT_KV ROLE_KV OFFSET_KV
                    "$6\r\nhealth\r\n:1\r\n"),
         "malformed \"health\""},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct engine_cluster_shards shards;
        char err[256] = "", want[256];
        redisReply *r = fixture_reply_str(bad[i].resp);
        if (engine_cluster_shards_parse(r, &shards, err, sizeof(err)))
            fail_msg("case %zu parsed", i);
        freeReplyObject(r);
        snprintf(want, sizeof(want), "CLUSTER SHARDS: shard 1: node 1: %s", bad[i].why);
        assert_string_equal(err, want);
        assert_null(shards.shards);
    }

    /* And the good form of the same reply parses. */
    struct engine_cluster_shards shards;
    char err[256] = "";
    redisReply *r = fixture_reply_str(TWO_SHARDS(GOOD_NODE));
    if (!engine_cluster_shards_parse(r, &shards, err, sizeof(err)))
        fail_msg("%s", err);
    freeReplyObject(r);
    assert_int_equal(shards.count, 2);
    assert_int_equal(shards.shards[1].nnodes, 2);
    assert_null(engine_cluster_shard_primary(&shards.shards[1])); /* two replicas */
    engine_cluster_shards_free(&shards);
}

/* nodes.conf as a Valkey 8.0 node killed soon after a failover left it:
 * the replica's line names another shard than its primary's. */
#define P1    "8350c749ab21e4b3d6dc30acce2f07b380002b16"
#define R1    "d49c8ca5fd3e045ba97abdc34013f1c462637edf"
#define P2    "1111111111111111111111111111111111111111"
#define S1    "3e18d723b117dd9bdab5afbda5423cab4ee06ef3"
#define S2    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define STALE "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CONF_LINE(id, port, shard, flags, primary, slots)                                          \
    id " 127.0.0.1:" port "@2" port ",,tls-port=0,nodename=n,shard-id=" shard " " flags            \
       " " primary " 0 1796186981303 4 connected" slots "\n"

static void test_nodes_conf_heal(void **state)
{
    (void)state;
    const char *bad = CONF_LINE(R1, "3342", STALE, "myself,slave", P1, "")
        CONF_LINE(P1, "3343", S1, "master", "-", " 0-8191")
            CONF_LINE(P2, "3344", S2, "master", "-", " 8192-16383") "vars currentEpoch 4\n";
    const char *good = CONF_LINE(R1, "3342", S1, "myself,slave", P1, "")
        CONF_LINE(P1, "3343", S1, "master", "-", " 0-8191")
            CONF_LINE(P2, "3344", S2, "master", "-", " 8192-16383") "vars currentEpoch 4\n";
    size_t healed = 99;

    char *fixed = engine_nodes_conf_heal(bad, strlen(bad), &healed);
    assert_non_null(fixed);
    assert_string_equal(fixed, good);
    assert_int_equal(healed, 1);
    free(fixed);

    /* Consistent files, and lines it cannot read, are left alone. */
    assert_null(engine_nodes_conf_heal(good, strlen(good), &healed));
    assert_int_equal(healed, 0);
    const char *odd[] = {
        "",
        "vars currentEpoch 4\n",
        CONF_LINE(R1, "3342", STALE, "slave", P2, ""),            /* its primary not in the file */
        R1 " 127.0.0.1:3342@23342 slave " P1 " 0 0 4 connected\n" /* no shard ids */
        CONF_LINE(P1, "3343", S1, "master", "-", ""),
        CONF_LINE(R1, "3342", "short", "slave", P1, "")
            CONF_LINE(P1, "3343", S1, "master", "-", ""),
        "garbage line\nmore garbage " P1 "\n",
    };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        assert_null(engine_nodes_conf_heal(odd[i], strlen(odd[i]), &healed));
        assert_int_equal(healed, 0);
    }
    /* Without a final newline too. */
    char *cut = strdup(bad);
    cut[strlen(cut) - 1] = '\0';
    fixed = engine_nodes_conf_heal(cut, strlen(cut), &healed);
    assert_non_null(fixed);
    assert_int_equal(healed, 1);
    free(fixed);
    free(cut);
}

/* Hash slots as valkey-server 8.0.1's CLUSTER KEYSLOT gives them. */
static void test_key_slot(void **state)
{
    static const struct {
        const char *key;
        int slot;
    } slots[] = {
        {"foo", 12182},           {"bar", 5061},   {"hello", 866}, {"{user1000}.following", 3443},
        {"user1000", 3443},       {"a{}b", 13694}, {"{}x", 10595}, {"x{y", 2740},
        {"k:000000000042", 8169},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        assert_int_equal(engine_key_slot(slots[i].key, strlen(slots[i].key)), slots[i].slot);
    /* The length given is the key's, not up to a NUL. */
    assert_int_equal(engine_key_slot("foobar", 3), 12182);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_slot),
        cmocka_unit_test(test_nodes_fixtures),
        cmocka_unit_test(test_nodes_migration_fixtures),
        cmocka_unit_test(test_nodes_failover_fixtures),
        cmocka_unit_test(test_nodes_forms),
        cmocka_unit_test(test_nodes_malformed),
        cmocka_unit_test(test_slots_fixtures),
        cmocka_unit_test(test_slots_valkey_loading),
        cmocka_unit_test(test_slots_forms),
        cmocka_unit_test(test_slots_malformed),
        cmocka_unit_test(test_shards_fixtures),
        cmocka_unit_test(test_shards_failover_fixtures),
        cmocka_unit_test(test_shards_valkey_loading),
        cmocka_unit_test(test_shards_forms),
        cmocka_unit_test(test_shards_malformed),
        cmocka_unit_test(test_shards_node_keys),
        cmocka_unit_test(test_nodes_conf_heal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
