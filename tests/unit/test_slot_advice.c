/* test_slot_advice.c -- hot-slot advice (controlplane/slot_advice.h): the
 * hottest slot stays, the next ones move until the shard is down to the
 * mean, to the coolest shard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "slot_advice.h"

static void test_hot_shard_moves_the_second_hottest_and_on(void **state)
{
    (void)state;
    /* Shard 0: one very hot slot (a hot key) and warm ones; 1 and 2 cool. */
    struct slot_load a[] = {{10, 20}, {11, 500}, {12, 60}, {13, 40}, {14, 30}, {15, 0}, {16, 0}};
    struct slot_load b[] = {{6000, 100}, {6001, 50}};
    struct slot_load c[] = {{12000, 60}, {12001, 40}};
    struct shard_slots shards[] = {
        {a, 5, 0, false, 0, 0, 0, 0}, {b, 2, 0, false, 0, 0, 0, 0}, {c, 2, 0, false, 0, 0, 0, 0}};
    double mean = slot_advise(shards, 3);

    assert_true(mean > 299.9 && mean < 300.1); /* (650 + 150 + 100) / 3 */
    assert_true(shards[0].hot);
    assert_int_equal(shards[0].slots[0].slot, 11); /* sorted, hottest first */
    /* Not 11 (500): 12, 13, 14 and 10 (150 in all) -> 500, still above the
     * mean, but that is all there is besides the hot slot; idle 15 and 16
     * would move nothing. */
    assert_int_equal(shards[0].move_from, 1);
    assert_int_equal(shards[0].move_count, 4);
    assert_int_equal(shards[0].to_shard, 2);
    assert_false(shards[1].hot);
    assert_false(shards[2].hot);
    assert_int_equal(shards[1].move_count, 0);
    assert_int_equal(shards[1].to_shard, -1);
}

static void test_moves_stop_at_the_mean(void **state)
{
    (void)state;
    struct slot_load a[] = {{1, 400}, {2, 300}, {3, 200}, {4, 100}};
    struct slot_load b[] = {{9000, 100}};
    struct shard_slots shards[] = {{a, 4, 0, false, 0, 0, 0, 0}, {b, 1, 0, false, 0, 0, 0, 0}};
    double mean = slot_advise(shards, 2); /* 550 */

    assert_true(mean > 549.9 && mean < 550.1);
    assert_true(shards[0].hot);
    /* 1000 - 300 (slot 2) = 700 > 550, - 200 (slot 3) = 500: stop. */
    assert_int_equal(shards[0].move_count, 2);
    assert_int_equal(shards[0].slots[1].slot, 2);
    assert_int_equal(shards[0].slots[2].slot, 3);
    assert_true(shards[0].load_after > 499.9 && shards[0].load_after < 500.1);
    assert_int_equal(shards[0].to_shard, 1);
}

static void test_balanced_and_empty_need_nothing(void **state)
{
    (void)state;
    struct slot_load a[] = {{1, 100}}, b[] = {{2, 110}};
    struct shard_slots shards[] = {{a, 1, 0, false, 0, 0, 0, 0}, {b, 1, 0, false, 0, 0, 0, 0}};
    slot_advise(shards, 2);
    assert_false(shards[0].hot);
    assert_false(shards[1].hot);

    struct shard_slots none[] = {{NULL, 0, 0, false, 0, 0, 0, 0}};
    assert_true(slot_advise(none, 1) == 0);
    assert_false(none[0].hot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hot_shard_moves_the_second_hottest_and_on),
        cmocka_unit_test(test_moves_stop_at_the_mean),
        cmocka_unit_test(test_balanced_and_empty_need_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
