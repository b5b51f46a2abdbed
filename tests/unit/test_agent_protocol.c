/* test_agent_protocol.c -- the agent's side of the agent protocol: reading
 * the desired set (agent/desired.h), writing node reports (agent/report.h)
 * from what INFO says (agent/pinger.h, on captured INFO of both engines),
 * and the retry backoff towards cairnd (agent/cp.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp.h"
#include "desired.h"
#include "fixtures/fixture.h"
#include "info.h"
#include "pinger.h"
#include "topology.h"
#include "report.h"
#include "watch.h"

/* A node id as cairnd makes them. */
#define ID "0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6b"

static const char *const answer =
    "{\"generation\": 42, \"heartbeat_timeout_s\": 6, \"future_field\": [1, 2],"
    " \"nodes\": ["
    "  {\"node_id\": \"0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6b\", \"engine\": \"valkey\","
    "   \"version\": \"8.0\", \"port\": 7001, \"run\": true, \"deleted\": false,"
    "   \"restart_policy\": \"on-failure\", \"shard\": \"ignored\","
    "   \"config\": {\"memory_mib\": 512, \"password\": null, \"parameters\": {\"timeout\": "
    "\"300\"}}},"
    "  {\"node_id\": \"00000000-0000-0000-0000-000000000002\", \"engine\": \"redis\", \"version\": "
    "\"7.0\", \"port\": 7002,"
    "   \"run\": false}"
    "]}";

static json_t *parse_json(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (j == NULL)
        fail_msg("test JSON does not parse: %s", e.text);
    return j;
}

static void test_desired_parse(void **state)
{
    json_t *j = parse_json(answer);
    struct agent_desired d;
    char err[256];

    (void)state;
    assert_true(agent_desired_parse(j, &d, err, sizeof(err)));
    assert_int_equal(d.generation, 42);
    assert_int_equal(d.heartbeat_timeout_s, 6);
    assert_int_equal(d.n_nodes, 2);
    const struct agent_desired_node *a = &d.nodes[0], *b = &d.nodes[1];
    assert_string_equal(a->node_id, "0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6b");
    assert_int_equal(a->kind, ENGINE_VALKEY);
    assert_string_equal(a->line, "8.0");
    assert_int_equal(a->port, 7001);
    assert_true(a->run);
    assert_false(a->deleted);
    assert_int_equal(a->policy, AGENT_RESTART_ON_FAILURE);
    assert_int_equal(json_integer_value(json_object_get(a->config, "memory_mib")), 512);
    /* Omitted: deleted false, restart_policy always, config empty. */
    assert_int_equal(b->kind, ENGINE_REDIS);
    assert_false(b->run);
    assert_false(b->deleted);
    assert_int_equal(b->policy, AGENT_RESTART_ALWAYS);
    assert_true(json_is_object(b->config));
    assert_ptr_equal(agent_desired_find(&d, "00000000-0000-0000-0000-000000000002"), b);
    assert_null(agent_desired_find(&d, "00000000-0000-0000-0000-000000000003"));
    agent_desired_free(&d);
    json_decref(j);
}

/* The spec string tells changed nodes from unchanged ones, whatever the
 * order of the fields. */
static void test_desired_spec_identity(void **state)
{
    json_t *j1 =
        parse_json("{\"generation\":1,\"nodes\":[{\"node_id\":\"" ID "\",\"engine\":\"redis\","
                   "\"version\":\"7.0\",\"port\":7001,\"run\":true}]}");
    json_t *j2 = parse_json("{\"nodes\":[{\"run\":true,\"port\":7001,\"version\":\"7.0\","
                            "\"engine\":\"redis\",\"node_id\":\"" ID "\"}],\"generation\":2}");
    json_t *j3 =
        parse_json("{\"generation\":3,\"nodes\":[{\"node_id\":\"" ID "\",\"engine\":\"valkey\","
                   "\"version\":\"8.0\",\"port\":7001,\"run\":true}]}");
    struct agent_desired d1, d2, d3;
    char err[256];

    (void)state;
    assert_true(agent_desired_parse(j1, &d1, err, sizeof(err)));
    assert_true(agent_desired_parse(j2, &d2, err, sizeof(err)));
    assert_true(agent_desired_parse(j3, &d3, err, sizeof(err)));
    assert_string_equal(d1.nodes[0].spec, d2.nodes[0].spec);
    assert_string_not_equal(d1.nodes[0].spec, d3.nodes[0].spec);

    struct agent_desired_node copy;
    agent_desired_node_copy(&copy, &d3.nodes[0]);
    agent_desired_free(&d3);
    assert_string_equal(copy.line, "8.0");
    assert_true(json_is_object(copy.config));
    agent_desired_node_clear(&copy);
    agent_desired_free(&d1);
    agent_desired_free(&d2);
    json_decref(j1);
    json_decref(j2);
    json_decref(j3);
}

static void expect_refused(const char *text, const char *want)
{
    json_t *j = parse_json(text);
    struct agent_desired d;
    char err[256] = "";

    if (agent_desired_parse(j, &d, err, sizeof(err)))
        fail_msg("accepted: %s", text);
    if (strcmp(err, want) != 0)
        fail_msg("message \"%s\", expected \"%s\"", err, want);
    assert_null(d.nodes);
    json_decref(j);
}

#define NODE(fields) "{\"generation\":1,\"nodes\":[" fields "]}"
#define GOOD         "\"engine\":\"redis\",\"version\":\"7.0\",\"port\":7001,\"run\":true"

static void test_desired_refused(void **state)
{
    (void)state;
    expect_refused("[]", "the answer is not a JSON object");
    expect_refused("{\"nodes\":[]}", "generation is missing or invalid");
    expect_refused("{\"generation\":-1,\"nodes\":[]}", "generation is missing or invalid");
    expect_refused("{\"generation\":1}", "nodes is missing or not an array");
    expect_refused(NODE("7"), "nodes[0] is missing or invalid");
    expect_refused(NODE("{" GOOD "}"), "nodes[0].node_id is missing or invalid");
    /* Node ids name directories: nothing that could climb out of one. */
    expect_refused(NODE("{\"node_id\":\"../etc\"," GOOD "}"),
                   "nodes[0].node_id is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"a/b\"," GOOD "}"),
                   "nodes[0].node_id is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6\"," GOOD "}"),
                   "nodes[0].node_id is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6bb\"," GOOD "}"),
                   "nodes[0].node_id is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"\"," GOOD "}"), "nodes[0].node_id is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\",\"engine\":\"memcached\",\"version\":\"7.0\","
                        "\"port\":7001,\"run\":true}"),
                   "nodes[0].engine is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\",\"engine\":\"redis\",\"version\":\"7.0.15\","
                        "\"port\":7001,\"run\":true}"),
                   "nodes[0].version is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\",\"engine\":\"redis\",\"version\":\"7.0\","
                        "\"port\":70000,\"run\":true}"),
                   "nodes[0].port is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\",\"engine\":\"redis\",\"version\":\"7.0\","
                        "\"port\":7001}"),
                   "nodes[0].run is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\"," GOOD ",\"restart_policy\":\"sometimes\"}"),
                   "nodes[0].restart_policy is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\"," GOOD ",\"config\":[]}"),
                   "nodes[0].config is missing or invalid");
    expect_refused(NODE("{\"node_id\":\"" ID "\"," GOOD "},{\"node_id\":\"" ID "\"," GOOD "}"),
                   "nodes[1].node_id repeats \"" ID "\"");
}

/* The observations INFO gives, on real captures of both engines; a
 * replica's primary is at 127.0.0.1:primary_port (0 for primaries). */
static void expect_observed(const char *path, const char *version, bool replica, long long pid,
                            int primary_port)
{
    size_t len;
    char *text = fixture_load(path, &len);
    struct engine_info *info = engine_info_parse(text, len);
    struct agent_observed o = {0};

    agent_pinger_observe(info, &o);
    assert_true(o.valid);
    assert_int_equal(o.process_id, pid);
    assert_string_equal(o.version, version);
    assert_int_equal(o.replica, replica);
    assert_true(o.has_offset);
    assert_int_equal(o.offset, 507);
    assert_int_equal(o.link_up, replica ? 1 : -1);
    assert_false(o.loading);
    assert_false(o.sync_in_progress);
    assert_string_equal(o.master_host, primary_port != 0 ? "127.0.0.1" : "");
    assert_int_equal(o.master_port, primary_port);
    engine_info_free(info);
    free(text);
}

static void test_observe_fixtures(void **state)
{
    (void)state;
    expect_observed("redis/info_primary.txt", "7.0.15", false, 29029, 0);
    expect_observed("redis/info_replica.txt", "7.0.15", true, 29031, 27056);
    /* Valkey also says redis_version:7.2.4; its own version wins. */
    expect_observed("valkey/info_primary.txt", "8.0.1", false, 30769, 0);
    expect_observed("valkey/info_replica.txt", "8.0.1", true, 30771, 22525);
}

static void test_observe_sync_and_loading(void **state)
{
    static const char text[] = "# Server\r\nredis_version:7.0.15\r\n"
                               "# Persistence\r\nloading:1\r\nrdb_bgsave_in_progress:0\r\n"
                               "# Replication\r\nrole:slave\r\nmaster_link_status:down\r\n"
                               "master_sync_in_progress:1\r\n";
    struct engine_info *info = engine_info_parse(text, sizeof(text) - 1);
    struct agent_observed o = {0};

    (void)state;
    agent_pinger_observe(info, &o);
    assert_true(o.loading);
    assert_true(o.sync_in_progress);
    assert_int_equal(o.link_up, 0);
    assert_false(o.has_offset);
    assert_string_equal(o.master_host, ""); /* no master_host, no primary to watch */
    assert_int_equal(o.master_port, 0);
    engine_info_free(info);

    /* A primary sending a snapshot to a replica is syncing too. */
    static const char primary[] = "# Persistence\nrdb_bgsave_in_progress:1\n"
                                  "# Replication\nrole:master\n";
    info = engine_info_parse(primary, sizeof(primary) - 1);
    agent_pinger_observe(info, &o);
    assert_true(o.sync_in_progress);
    assert_false(o.replica);
    engine_info_free(info);
}

/* A cluster-mode node's epoch comes from CLUSTER INFO, read after its
 * INFO: the next INFO of the same process keeps it, another's drops it. */
static void test_observe_keeps_the_epoch_of_the_same_process(void **state)
{
    static const char first[] = "# Server\nprocess_id:41\n# Replication\nrole:master\n";
    static const char other[] = "# Server\nprocess_id:42\n# Replication\nrole:master\n";
    struct engine_info *info = engine_info_parse(first, sizeof(first) - 1);
    struct agent_observed o = {0};

    (void)state;
    agent_pinger_observe(info, &o);
    assert_false(o.has_epoch);
    o.has_epoch = engine_cluster_info_epoch_parse("cluster_my_epoch:7\r\n", 20, &o.config_epoch);
    assert_true(o.has_epoch);
    agent_pinger_observe(info, &o);
    assert_true(o.has_epoch);
    assert_int_equal(o.config_epoch, 7);
    engine_info_free(info);

    info = engine_info_parse(other, sizeof(other) - 1);
    agent_pinger_observe(info, &o);
    assert_false(o.has_epoch);
    engine_info_free(info);
}

/* A node as supervise.c would hold it. */
static struct agent_node node_fixture(void)
{
    struct agent_node n;

    memset(&n, 0, sizeof(n));
    strcpy(n.id, ID);
    n.pidfd = -1;
    n.has_run = true;
    n.run.kind = ENGINE_VALKEY;
    strcpy(n.run.version, "8.0.1");
    strcpy(n.run.line, "8.0");
    n.run.port = 7001;
    return n;
}

static void expect_json(json_t *got, const char *want)
{
    json_t *w = parse_json(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        char *x = json_dumps(w, JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("got      %s\nexpected %s", g, x);
    }
    json_decref(w);
    json_decref(got);
}

static void test_report_node(void **state)
{
    struct agent_node n = node_fixture();

    (void)state;
    /* A running replica that INFO has described, a second into its run. */
    n.pid = 4242;
    n.state = AGENT_NODE_RUNNING;
    n.healthy_since_us = 3000000 - AGENT_ROLE_SETTLE_US;
    n.restarts = 2;
    n.seen = (struct agent_observed){.valid = true,
                                     .process_id = 4242,
                                     .replica = true,
                                     .has_offset = true,
                                     .offset = 99,
                                     .link_up = 1,
                                     .sync_in_progress = true,
                                     .version = "8.0.1",
                                     .at_us = 3000000};
    expect_json(agent_report_node(&n, 3250000),
                "{\"node_id\":\"" ID "\",\"pid\":4242,\"status\":\"running\",\"port\":7001,"
                "\"role\":\"replica\",\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":99,\"master_link_status\":\"up\","
                "\"sync_in_progress\":true,\"loading\":false,\"restarts\":2,"
                "\"observed_ms_ago\":250}");

    /* Its primary watched from here: how long that primary has not
     * answered, 0 while it answers every PING. */
    n.watch = agent_watch_new("127.0.0.1", 7000, ENGINE_ADMIN_USER, "secret", NULL);
    n.heard = (struct agent_watch_times){.answered_us = 3000000, .asked_us = 3200000};
    expect_json(agent_report_node(&n, 3250000),
                "{\"node_id\":\"" ID "\",\"pid\":4242,\"status\":\"running\",\"port\":7001,"
                "\"role\":\"replica\",\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":99,\"master_link_status\":\"up\","
                "\"sync_in_progress\":true,\"loading\":false,\"restarts\":2,"
                "\"observed_ms_ago\":250,\"primary_silent_ms\":0}");
    n.heard = (struct agent_watch_times){.answered_us = 2100000, .asked_us = 2300000};
    expect_json(agent_report_node(&n, 3250000),
                "{\"node_id\":\"" ID "\",\"pid\":4242,\"status\":\"running\",\"port\":7001,"
                "\"role\":\"replica\",\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":99,\"master_link_status\":\"up\","
                "\"sync_in_progress\":true,\"loading\":false,\"restarts\":2,"
                "\"observed_ms_ago\":250,\"primary_silent_ms\":1150}");
    agent_watch_free(n.watch);
    n.watch = NULL;

    /* Read too early in its run, the engine's word on its role is no word:
     * a cluster-mode replica calls itself master until its cluster cron
     * has run. Everything else it said stands. */
    n.healthy_since_us = 3000000 - AGENT_ROLE_SETTLE_US + 1;
    n.seen.replica = false;
    expect_json(agent_report_node(&n, 3250000),
                "{\"node_id\":\"" ID "\",\"pid\":4242,\"status\":\"running\",\"port\":7001,"
                "\"role\":null,\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":99,\"master_link_status\":\"up\","
                "\"sync_in_progress\":true,\"loading\":false,\"restarts\":2,"
                "\"observed_ms_ago\":250}");

    /* Restarted (a new pid) with only the old process's reading: none of it
     * is this process's. */
    n.healthy_since_us = 3000000 - AGENT_ROLE_SETTLE_US;
    n.pid = 4343;
    expect_json(agent_report_node(&n, 3250000),
                "{\"node_id\":\"" ID "\",\"pid\":4343,\"status\":\"running\",\"port\":7001,"
                "\"role\":null,\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":null,\"master_link_status\":null,"
                "\"sync_in_progress\":false,\"loading\":false,\"restarts\":2,"
                "\"observed_ms_ago\":null}");
    n.pid = 4242;

    /* Just started: nothing from INFO yet, the binary's version stands in. */
    n.state = AGENT_NODE_STARTING;
    memset(&n.seen, 0, sizeof(n.seen));
    n.restarts = 0;
    expect_json(agent_report_node(&n, 1250000),
                "{\"node_id\":\"" ID "\",\"pid\":4242,\"status\":\"starting\",\"port\":7001,"
                "\"role\":null,\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"replication_offset\":null,\"master_link_status\":null,"
                "\"sync_in_progress\":false,\"loading\":false,\"restarts\":0,"
                "\"observed_ms_ago\":null}");

    /* Crashed: no pid, no version; the desired port when it is wanted. */
    n.pid = 0;
    n.state = AGENT_NODE_CRASHED;
    n.wanted = true;
    n.want.kind = ENGINE_REDIS;
    n.want.port = 7005;
    expect_json(agent_report_node(&n, 1250000),
                "{\"node_id\":\"" ID "\",\"pid\":null,\"status\":\"crashed\",\"port\":7005,"
                "\"role\":null,\"engine\":\"valkey\",\"version\":null,"
                "\"replication_offset\":null,\"master_link_status\":null,"
                "\"sync_in_progress\":false,\"loading\":false,\"restarts\":0,"
                "\"observed_ms_ago\":null}");

    /* Nothing known of its engine: not reported. */
    n.has_run = false;
    n.wanted = false;
    assert_null(agent_report_node(&n, 0));
}

/* A sync is urgent while one of the host's nodes is in trouble cairnd acts
 * on at once: its engine crashed or not answering, or its primary silent. */
static void test_report_urgent(void **state)
{
    struct agent_node calm = node_fixture(), other = node_fixture();
    struct agent_node *nodes[2] = {&calm, &other};
    struct agent a;

    (void)state;
    memset(&a, 0, sizeof(a));
    a.nodes = nodes;
    assert_false(agent_report_urgent(&a));
    a.n_nodes = 2;
    calm.state = other.state = AGENT_NODE_RUNNING;
    assert_false(agent_report_urgent(&a));
    other.state = AGENT_NODE_LOADING;
    assert_false(agent_report_urgent(&a));
    other.state = AGENT_NODE_CRASHED;
    assert_true(agent_report_urgent(&a));
    other.state = AGENT_NODE_UNRESPONSIVE;
    assert_true(agent_report_urgent(&a));
    other.state = AGENT_NODE_RUNNING;
    other.primary_silent = true;
    assert_true(agent_report_urgent(&a));
}

static void test_report_engines(void **state)
{
    struct engine_binary bins[2] = {
        {.kind = ENGINE_REDIS, .version = "7.0.15", .line = "7.0", .path = "/usr/bin/redis-server"},
        {.kind = ENGINE_VALKEY, .version = "8.0.1", .line = "8.0", .path = "/opt/valkey-server"},
    };

    (void)state;
    expect_json(agent_report_engines(bins, 2),
                "[{\"engine\":\"redis\",\"version\":\"7.0.15\",\"line\":\"7.0\","
                "\"path\":\"/usr/bin/redis-server\"},{\"engine\":\"valkey\",\"version\":\"8.0.1\","
                "\"line\":\"8.0\",\"path\":\"/opt/valkey-server\"}]");
    expect_json(agent_report_engines(bins, 0), "[]");
}

static void test_cp_backoff(void **state)
{
    (void)state;
    /* cairnd's heartbeat timeout not known yet, or long: 5 s at most. */
    assert_int_equal(agent_cp_backoff_us(1, 0), 100000);
    assert_int_equal(agent_cp_backoff_us(2, 0), 200000);
    assert_int_equal(agent_cp_backoff_us(3, 0), 400000);
    assert_int_equal(agent_cp_backoff_us(6, 0), 3200000);
    assert_int_equal(agent_cp_backoff_us(7, 0), 5000000);
    assert_int_equal(agent_cp_backoff_us(1000, 0), 5000000);
    assert_int_equal(agent_cp_backoff_us(1000, 60), 5000000);
    /* A shorter timeout: half of it, so the agent reports within one
     * timeout of cairnd's return. */
    assert_int_equal(agent_cp_backoff_us(5, 6), 1600000);
    assert_int_equal(agent_cp_backoff_us(6, 6), 3000000);
    assert_int_equal(agent_cp_backoff_us(1000, 6), 3000000);
    assert_int_equal(agent_cp_backoff_us(4, 2), 800000);
    assert_int_equal(agent_cp_backoff_us(5, 2), 1000000);
    assert_int_equal(agent_cp_backoff_us(1000, 2), 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_desired_parse),
        cmocka_unit_test(test_desired_spec_identity),
        cmocka_unit_test(test_desired_refused),
        cmocka_unit_test(test_observe_fixtures),
        cmocka_unit_test(test_observe_sync_and_loading),
        cmocka_unit_test(test_observe_keeps_the_epoch_of_the_same_process),
        cmocka_unit_test(test_report_node),
        cmocka_unit_test(test_report_urgent),
        cmocka_unit_test(test_report_engines),
        cmocka_unit_test(test_cp_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
