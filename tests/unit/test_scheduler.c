/* test_scheduler.c -- placement arithmetic (controlplane/scheduler.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "scheduler.h"

static void test_pick_port_lowest_free(void **state)
{
    const int used[] = {7001, 7000, 7003};
    (void)state;
    assert_int_equal(sched_pick_port(7000, 7099, NULL, 0), 7000);
    assert_int_equal(sched_pick_port(7000, 7099, used, 3), 7002);
    assert_int_equal(sched_pick_port(7000, 7001, used, 3), -1);
    assert_int_equal(sched_pick_port(7003, 7003, used, 3), -1);
    assert_int_equal(sched_pick_port(7003, 7004, used, 3), 7004);
}

static void test_pick_port_ignores_ports_outside_the_range(void **state)
{
    const int used[] = {80, 6379, 65535, -1};
    (void)state;
    assert_int_equal(sched_pick_port(6379, 6380, used, 4), 6380);
    assert_int_equal(sched_pick_port(1024, 1024, used, 4), 1024);
}

static void test_pick_port_empty_range(void **state)
{
    (void)state;
    assert_int_equal(sched_pick_port(7001, 7000, NULL, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_port_lowest_free),
        cmocka_unit_test(test_pick_port_ignores_ports_outside_the_range),
        cmocka_unit_test(test_pick_port_empty_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
