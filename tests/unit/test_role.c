/* test_role.c -- the ROLE parser (engine/role.h) on replies captured from
 * Redis 7.0 and Valkey 8.0, and on hand-written ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "role.h"
#include "xalloc.h"

#include "fixtures/fixture.h"

struct role_case {
    const char *engine;
    int primary_port, replica_port;
    int cluster_primary_port;
    long long cluster_offset;
};

static const struct role_case cases[] = {
    {"redis", 27056, 27057, 27611, 479},
    {"valkey", 22525, 22526, 24727, 355},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Parse the fixture engine/file, expecting success. */
static void parse_fixture(const char *engine, const char *file, struct engine_role *role)
{
    redisReply *r = fixture_reply_engine(engine, file);
    char err[256] = "";

    if (!engine_role_parse(r, role, err, sizeof(err)))
        fail_msg("%s/%s: %s", engine, file, err);
    freeReplyObject(r);
}

/* Parse RESP written inline; return what engine_role_parse() did. */
static bool parse_str(const char *resp, struct engine_role *role, char *err, size_t errsize)
{
    redisReply *r = fixture_reply_str(resp);
    bool ok = engine_role_parse(r, role, err, errsize);
    freeReplyObject(r);
    return ok;
}

/* Parse RESP written inline, expecting success. */
static void parse_ok(const char *resp, struct engine_role *role)
{
    char err[256] = "";

    if (!parse_str(resp, role, err, sizeof(err)))
        fail_msg("%s: %s", resp, err);
}

static void test_primary_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        struct engine_role role;
        parse_fixture(cases[c].engine, "role_primary.resp", &role);
        assert_int_equal(role.kind, ENGINE_ROLE_PRIMARY);
        assert_int_equal(role.offset, 507);
        assert_int_equal(role.nreplicas, 1);
        assert_string_equal(role.replicas[0].host, "127.0.0.1");
        assert_int_equal(role.replicas[0].port, cases[c].replica_port);
        assert_int_equal(role.replicas[0].offset, 507);
        assert_null(role.primary_host);
        engine_role_free(&role);
        assert_null(role.replicas);
        assert_int_equal(role.nreplicas, 0);
    }
}

static void test_replica_fixtures(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCASES; c++) {
        struct engine_role role;

        parse_fixture(cases[c].engine, "role_replica.resp", &role);
        assert_int_equal(role.kind, ENGINE_ROLE_REPLICA);
        assert_string_equal(role.primary_host, "127.0.0.1");
        assert_int_equal(role.primary_port, cases[c].primary_port);
        assert_int_equal(role.state, ENGINE_ROLE_STATE_CONNECTED);
        assert_int_equal(role.offset, 507);
        assert_int_equal(role.nreplicas, 0);
        engine_role_free(&role);

        /* Its primary stopped: retrying, and no offset to report. */
        parse_fixture(cases[c].engine, "role_replica_link_down.resp", &role);
        assert_int_equal(role.kind, ENGINE_ROLE_REPLICA);
        assert_int_equal(role.primary_port, cases[c].primary_port);
        assert_int_equal(role.state, ENGINE_ROLE_STATE_CONNECT);
        assert_int_equal(role.offset, -1);
        engine_role_free(&role);

        parse_fixture(cases[c].engine, "role_cluster_replica.resp", &role);
        assert_int_equal(role.kind, ENGINE_ROLE_REPLICA);
        assert_int_equal(role.primary_port, cases[c].cluster_primary_port);
        assert_int_equal(role.state, ENGINE_ROLE_STATE_CONNECTED);
        assert_int_equal(role.offset, cases[c].cluster_offset);
        engine_role_free(&role);
    }
}

static void test_primary_forms(void **state)
{
    struct engine_role role;

    (void)state;
    /* No replicas. */
    parse_ok("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", &role);
    assert_int_equal(role.kind, ENGINE_ROLE_PRIMARY);
    assert_int_equal(role.offset, 0);
    assert_int_equal(role.nreplicas, 0);
    engine_role_free(&role);

    /* Two replicas, one IPv6; integers where strings are usual. */
    parse_ok("*3\r\n$6\r\nmaster\r\n:3129659\r\n*2\r\n"
             "*3\r\n$9\r\n127.0.0.1\r\n$4\r\n9001\r\n$7\r\n3129242\r\n"
             "*3\r\n$3\r\n::1\r\n:9002\r\n:3129543\r\n",
             &role);
    assert_int_equal(role.offset, 3129659);
    assert_int_equal(role.nreplicas, 2);
    assert_string_equal(role.replicas[0].host, "127.0.0.1");
    assert_int_equal(role.replicas[0].port, 9001);
    assert_int_equal(role.replicas[0].offset, 3129242);
    assert_string_equal(role.replicas[1].host, "::1");
    assert_int_equal(role.replicas[1].port, 9002);
    assert_int_equal(role.replicas[1].offset, 3129543);
    engine_role_free(&role);
}

static void test_replica_states(void **state)
{
    static const struct {
        const char *name;
        enum engine_role_state state;
    } states[] = {
        {"none", ENGINE_ROLE_STATE_NONE},
        {"connect", ENGINE_ROLE_STATE_CONNECT},
        {"connecting", ENGINE_ROLE_STATE_CONNECTING},
        {"handshake", ENGINE_ROLE_STATE_HANDSHAKE},
        {"sync", ENGINE_ROLE_STATE_SYNC},
        {"connected", ENGINE_ROLE_STATE_CONNECTED},
        {"teleporting", ENGINE_ROLE_STATE_UNKNOWN}, /* newer engines: not an error */
        {"connected2", ENGINE_ROLE_STATE_UNKNOWN},
        {"", ENGINE_ROLE_STATE_UNKNOWN},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        char *resp =
            xasprintf("*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.7\r\n:6379\r\n$%zu\r\n%s\r\n:-1\r\n",
                      strlen(states[i].name), states[i].name);
        struct engine_role role;

        parse_ok(resp, &role);
        assert_int_equal(role.state, states[i].state);
        assert_string_equal(role.primary_host, "10.0.0.7");
        assert_int_equal(role.primary_port, 6379);
        if (states[i].state != ENGINE_ROLE_STATE_UNKNOWN)
            assert_string_equal(engine_role_state_name(role.state), states[i].name);
        engine_role_free(&role);
        free(resp);
    }
    assert_string_equal(engine_role_state_name(ENGINE_ROLE_STATE_UNKNOWN), "unknown");
    assert_string_equal(engine_role_state_name((enum engine_role_state)99), "unknown");
}

static void test_replica_word(void **state)
{
    struct engine_role role;

    (void)state;
    /* Engines that say "replica" rather than "slave". */
    parse_ok("*5\r\n$7\r\nreplica\r\n$4\r\nhost\r\n:1\r\n$4\r\nsync\r\n:0\r\n", &role);
    assert_int_equal(role.kind, ENGINE_ROLE_REPLICA);
    assert_int_equal(role.state, ENGINE_ROLE_STATE_SYNC);
    engine_role_free(&role);
}

static void test_sentinel(void **state)
{
    struct engine_role role;

    (void)state;
    parse_ok("*2\r\n$8\r\nsentinel\r\n*2\r\n$8\r\nmymaster\r\n$5\r\ncache\r\n", &role);
    assert_int_equal(role.kind, ENGINE_ROLE_SENTINEL);
    assert_int_equal(role.nmasters, 2);
    assert_string_equal(role.masters[0], "mymaster");
    assert_string_equal(role.masters[1], "cache");
    engine_role_free(&role);

    parse_ok("*2\r\n$8\r\nsentinel\r\n*0\r\n", &role);
    assert_int_equal(role.nmasters, 0);
    engine_role_free(&role);

    assert_string_equal(engine_role_kind_name(ENGINE_ROLE_PRIMARY), "primary");
    assert_string_equal(engine_role_kind_name(ENGINE_ROLE_REPLICA), "replica");
    assert_string_equal(engine_role_kind_name(ENGINE_ROLE_SENTINEL), "sentinel");
}

static void test_error_reply(void **state)
{
    struct engine_role role;
    char err[256] = "";

    (void)state;
    assert_false(parse_str("-NOAUTH Authentication required.\r\n", &role, err, sizeof(err)));
    assert_string_equal(err, "ROLE: NOAUTH Authentication required.");
    assert_null(role.primary_host);
}

/* Each must fail with a message and leave nothing to free (ASan checks the
 * ones that fail after allocating). */
static void test_malformed(void **state)
{
    static const char *const bad[] = {
        ":1\r\n",                                    /* not an array */
        "*0\r\n",                                    /* empty */
        "$-1\r\n",                                   /* nil */
        "*1\r\n:5\r\n",                              /* role not a string */
        "*1\r\n$6\r\nleader\r\n",                    /* unknown role */
        "*1\r\n$6\r\nmaster\r\n",                    /* too short */
        "*3\r\n$6\r\nmaster\r\n$3\r\nabc\r\n*0\r\n", /* offset not a number */
        "*3\r\n$6\r\nmaster\r\n:1\r\n:0\r\n",        /* replicas not an array */
        "*4\r\n$6\r\nmaster\r\n:1\r\n*0\r\n:0\r\n",  /* too long */
        "*3\r\n$6\r\nmaster\r\n:1\r\n*2\r\n"         /* second entry short */
        "*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\n2\r\n*2\r\n$1\r\nb\r\n$1\r\n1\r\n",
        "*3\r\n$6\r\nmaster\r\n:1\r\n*2\r\n" /* second entry's port bad */
        "*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\n2\r\n*3\r\n$1\r\nb\r\n$5\r\n70000\r\n$1\r\n1\r\n",
        "*3\r\n$6\r\nmaster\r\n:1\r\n*1\r\n" /* host not a string */
        "*3\r\n:1\r\n$1\r\n1\r\n$1\r\n2\r\n",
        "*5\r\n$5\r\nslave\r\n$1\r\nh\r\n:-1\r\n$9\r\nconnected\r\n:0\r\n",    /* port < 0 */
        "*5\r\n$5\r\nslave\r\n$1\r\nh\r\n:65536\r\n$9\r\nconnected\r\n:0\r\n", /* port too big */
        "*5\r\n$5\r\nslave\r\n$1\r\nh\r\n$2\r\nxx\r\n$9\r\nconnected\r\n:0\r\n",
        "*5\r\n$5\r\nslave\r\n:1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n",      /* host not a string */
        "*5\r\n$5\r\nslave\r\n$1\r\nh\r\n:1\r\n:3\r\n:0\r\n",              /* state not a string */
        "*5\r\n$5\r\nslave\r\n$1\r\nh\r\n:1\r\n$4\r\nsync\r\n$1\r\nx\r\n", /* offset */
        "*4\r\n$5\r\nslave\r\n$1\r\nh\r\n:1\r\n$4\r\nsync\r\n",            /* too short */
        "*2\r\n$8\r\nsentinel\r\n$1\r\nx\r\n",                             /* list not array */
        "*2\r\n$8\r\nsentinel\r\n*2\r\n$1\r\nx\r\n:1\r\n",                 /* name not string */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct engine_role role;
        char err[256] = "";
        if (parse_str(bad[i], &role, err, sizeof(err)))
            fail_msg("case %zu parsed", i);
        if (strncmp(err, "ROLE: ", 6) != 0)
            fail_msg("case %zu: message \"%s\"", i, err);
        assert_null(role.replicas);
        assert_null(role.primary_host);
        assert_null(role.masters);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primary_fixtures), cmocka_unit_test(test_replica_fixtures),
        cmocka_unit_test(test_primary_forms),    cmocka_unit_test(test_replica_states),
        cmocka_unit_test(test_replica_word),     cmocka_unit_test(test_sentinel),
        cmocka_unit_test(test_error_reply),      cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
