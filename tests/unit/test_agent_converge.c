/* test_agent_converge.c -- the agent's per-node decision, restart backoff
 * and health transitions (agent/converge.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "converge.h"

#define MS 1000LL
#define S  1000000LL

/* A node wanted running with policy always, not running, never started. */
static struct agent_facts wanted_down(void)
{
    return (struct agent_facts){
        .wanted = true,
        .run = true,
        .policy = AGENT_RESTART_ALWAYS,
        .startable = true,
        .last_exit = AGENT_EXIT_NONE,
        .now_us = 100 * S,
    };
}

/* A node wanted running whose process is alive and as desired. */
static struct agent_facts wanted_up(void)
{
    struct agent_facts f = wanted_down();
    f.alive = true;
    return f;
}

static void expect_action(const struct agent_facts *f, enum agent_action want)
{
    int64_t wake = -1;
    enum agent_action got = agent_converge_decide(f, &wake);
    if (got != want)
        fail_msg("decided %s, expected %s", agent_converge_action_name(got),
                 agent_converge_action_name(want));
}

static void test_start_when_missing(void **state)
{
    (void)state;
    struct agent_facts f = wanted_down();
    expect_action(&f, AGENT_ACT_START);
    f.startable = false; /* no binary of that engine and line */
    expect_action(&f, AGENT_ACT_NONE);
}

static void test_running_as_desired_is_left_alone(void **state)
{
    (void)state;
    struct agent_facts f = wanted_up();
    expect_action(&f, AGENT_ACT_NONE);
    f.stopping = true; /* run flipped back to true while stopping: wait for the exit */
    expect_action(&f, AGENT_ACT_NONE);
}

static void test_run_false_and_unwanted_stop_and_keep_data(void **state)
{
    (void)state;
    struct agent_facts f = wanted_up();
    f.run = false;
    expect_action(&f, AGENT_ACT_STOP);
    f.stopping = true;
    expect_action(&f, AGENT_ACT_NONE);
    f.alive = false;
    f.stopping = false;
    expect_action(&f, AGENT_ACT_NONE);

    f = wanted_up();
    f.wanted = false; /* not in the desired set at all */
    expect_action(&f, AGENT_ACT_STOP);
    f.alive = false;
    expect_action(&f, AGENT_ACT_NONE);
}

static void test_deleted_stops_then_removes(void **state)
{
    (void)state;
    struct agent_facts f = wanted_up();
    f.deleted = true;
    expect_action(&f, AGENT_ACT_STOP);
    f.stopping = true;
    expect_action(&f, AGENT_ACT_NONE);
    f.alive = false;
    f.stopping = false;
    expect_action(&f, AGENT_ACT_REMOVE);
    f.run = false; /* deleted wins over run */
    expect_action(&f, AGENT_ACT_REMOVE);
}

static void test_version_change_is_stop_then_start(void **state)
{
    (void)state;
    struct agent_facts f = wanted_up();
    f.mismatch = true;
    expect_action(&f, AGENT_ACT_STOP);
    f.stopping = true;
    expect_action(&f, AGENT_ACT_NONE);
    /* The exit the agent asked for leaves last_exit at NONE: start at once,
     * with no backoff, from the same data directory. */
    f = wanted_down();
    f.mismatch = true;
    f.restart_at_us = f.now_us + 10 * S;
    expect_action(&f, AGENT_ACT_START);
}

static void test_version_change_without_binary_keeps_old(void **state)
{
    (void)state;
    struct agent_facts f = wanted_up();
    f.mismatch = true;
    f.startable = false;
    expect_action(&f, AGENT_ACT_NONE);
}

static void test_restart_policies(void **state)
{
    static const struct {
        enum agent_restart_policy policy;
        enum agent_exit exit;
        enum agent_action want;
    } cases[] = {
        {AGENT_RESTART_ALWAYS, AGENT_EXIT_FAILURE, AGENT_ACT_START},
        {AGENT_RESTART_ALWAYS, AGENT_EXIT_CLEAN, AGENT_ACT_START},
        {AGENT_RESTART_ON_FAILURE, AGENT_EXIT_FAILURE, AGENT_ACT_START},
        {AGENT_RESTART_ON_FAILURE, AGENT_EXIT_CLEAN, AGENT_ACT_NONE},
        {AGENT_RESTART_NEVER, AGENT_EXIT_FAILURE, AGENT_ACT_NONE},
        {AGENT_RESTART_NEVER, AGENT_EXIT_CLEAN, AGENT_ACT_NONE},
        {AGENT_RESTART_NEVER, AGENT_EXIT_NONE, AGENT_ACT_START}, /* first start */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct agent_facts f = wanted_down();
        f.policy = cases[i].policy;
        f.last_exit = cases[i].exit;
        f.restart_at_us = f.now_us; /* backoff over */
        int64_t wake = 0;
        enum agent_action got = agent_converge_decide(&f, &wake);
        if (got != cases[i].want)
            fail_msg("case %zu: decided %s, expected %s", i, agent_converge_action_name(got),
                     agent_converge_action_name(cases[i].want));
    }
}

static void test_restart_waits_for_backoff(void **state)
{
    (void)state;
    struct agent_facts f = wanted_down();
    int64_t wake = 0;
    f.last_exit = AGENT_EXIT_FAILURE;
    f.restart_at_us = f.now_us + 400 * MS;
    assert_int_equal(agent_converge_decide(&f, &wake), AGENT_ACT_WAIT);
    assert_int_equal(wake, f.now_us + 400 * MS);
    f.now_us = f.restart_at_us;
    expect_action(&f, AGENT_ACT_START);
}

/* A crashed primary that cairnd holds stays down, whatever the policy; a
 * clean exit and a first start are not holds. */
static void test_held_primary_is_not_restarted(void **state)
{
    (void)state;
    struct agent_facts f = wanted_down();
    f.hold_after_crash = true;
    f.last_exit = AGENT_EXIT_FAILURE;
    f.restart_at_us = f.now_us - 1;
    expect_action(&f, AGENT_ACT_NONE);
    f.last_exit = AGENT_EXIT_NONE; /* a new instruction without the hold */
    expect_action(&f, AGENT_ACT_START);
    f.last_exit = AGENT_EXIT_CLEAN;
    expect_action(&f, AGENT_ACT_START);
    f.hold_after_crash = false;
    f.last_exit = AGENT_EXIT_FAILURE;
    expect_action(&f, AGENT_ACT_START);
}

static void test_backoff_doubles_to_ten_seconds(void **state)
{
    static const int64_t want[] = {100 * MS,  200 * MS,  400 * MS,  800 * MS,
                                   1600 * MS, 3200 * MS, 6400 * MS, 10 * S};

    (void)state;
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(agent_converge_backoff_us(i), want[i]);
    assert_int_equal(agent_converge_backoff_us(50), 10 * S);
    assert_int_equal(agent_converge_backoff_us(4000000000u), 10 * S);
}

static void test_backoff_resets_after_a_healthy_minute(void **state)
{
    (void)state;
    assert_int_equal(agent_converge_attempts_after(5, 0, 500 * S), 5); /* never healthy */
    assert_int_equal(agent_converge_attempts_after(5, 100 * S, 159 * S), 5);
    assert_int_equal(agent_converge_attempts_after(5, 100 * S, 160 * S), 0);
    assert_int_equal(agent_converge_attempts_after(0, 100 * S, 101 * S), 0);
}

static void test_probe_transitions(void **state)
{
    (void)state;
    /* An answer makes a live engine running or loading, whatever it was. */
    assert_int_equal(agent_converge_probe(AGENT_NODE_STARTING, AGENT_PROBE_PONG, 0),
                     AGENT_NODE_RUNNING);
    assert_int_equal(agent_converge_probe(AGENT_NODE_UNRESPONSIVE, AGENT_PROBE_PONG, 90 * S),
                     AGENT_NODE_RUNNING);
    assert_int_equal(agent_converge_probe(AGENT_NODE_RUNNING, AGENT_PROBE_LOADING, 90 * S),
                     AGENT_NODE_LOADING);
    assert_int_equal(agent_converge_probe(AGENT_NODE_LOADING, AGENT_PROBE_PONG, 90 * S),
                     AGENT_NODE_RUNNING);
    /* No answer: unresponsive, except within a starting engine's grace. */
    assert_int_equal(agent_converge_probe(AGENT_NODE_RUNNING, AGENT_PROBE_FAILED, 90 * S),
                     AGENT_NODE_UNRESPONSIVE);
    assert_int_equal(agent_converge_probe(AGENT_NODE_LOADING, AGENT_PROBE_FAILED, 90 * S),
                     AGENT_NODE_UNRESPONSIVE);
    assert_int_equal(agent_converge_probe(AGENT_NODE_STARTING, AGENT_PROBE_FAILED, 2 * S),
                     AGENT_NODE_STARTING);
    assert_int_equal(
        agent_converge_probe(AGENT_NODE_STARTING, AGENT_PROBE_FAILED, AGENT_START_GRACE_US),
        AGENT_NODE_UNRESPONSIVE);
    /* Without a process, probes change nothing. */
    assert_int_equal(agent_converge_probe(AGENT_NODE_CRASHED, AGENT_PROBE_PONG, 0),
                     AGENT_NODE_CRASHED);
    assert_int_equal(agent_converge_probe(AGENT_NODE_STOPPED, AGENT_PROBE_FAILED, 0),
                     AGENT_NODE_STOPPED);
}

static void test_names(void **state)
{
    enum agent_restart_policy p = AGENT_RESTART_NEVER;

    (void)state;
    assert_true(agent_converge_parse_policy("always", &p));
    assert_int_equal(p, AGENT_RESTART_ALWAYS);
    assert_true(agent_converge_parse_policy("on-failure", &p));
    assert_int_equal(p, AGENT_RESTART_ON_FAILURE);
    assert_true(agent_converge_parse_policy("never", &p));
    assert_int_equal(p, AGENT_RESTART_NEVER);
    assert_false(agent_converge_parse_policy("Always", &p));
    assert_false(agent_converge_parse_policy("", &p));
    assert_int_equal(p, AGENT_RESTART_NEVER);
    assert_string_equal(agent_converge_state_name(AGENT_NODE_STOPPED), "stopped");
    assert_string_equal(agent_converge_state_name(AGENT_NODE_STARTING), "starting");
    assert_string_equal(agent_converge_state_name(AGENT_NODE_RUNNING), "running");
    assert_string_equal(agent_converge_state_name(AGENT_NODE_LOADING), "loading");
    assert_string_equal(agent_converge_state_name(AGENT_NODE_CRASHED), "crashed");
    assert_string_equal(agent_converge_state_name(AGENT_NODE_UNRESPONSIVE), "unresponsive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_when_missing),
        cmocka_unit_test(test_running_as_desired_is_left_alone),
        cmocka_unit_test(test_run_false_and_unwanted_stop_and_keep_data),
        cmocka_unit_test(test_deleted_stops_then_removes),
        cmocka_unit_test(test_version_change_is_stop_then_start),
        cmocka_unit_test(test_version_change_without_binary_keeps_old),
        cmocka_unit_test(test_restart_policies),
        cmocka_unit_test(test_restart_waits_for_backoff),
        cmocka_unit_test(test_held_primary_is_not_restarted),
        cmocka_unit_test(test_backoff_doubles_to_ten_seconds),
        cmocka_unit_test(test_backoff_resets_after_a_healthy_minute),
        cmocka_unit_test(test_probe_transitions),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
