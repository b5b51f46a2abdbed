/* test_reshard.c -- slot moves (controlplane/reshard.h): 2 -> 4 shards moves
 * a quarter of the slots to each new shard and none between the old ones,
 * 4 -> 3 spreads the leaving shard's slots over the others, weights move hot
 * slots apart, an even cluster is left alone, and for any cluster every slot
 * ends with exactly one shard, leaving shards with none, and each staying
 * shard within one slot's weight of its share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "reshard.h"

static int owner[RESHARD_SLOTS];
static double weight[RESHARD_SLOTS];

/* Slots split evenly and contiguously over n shards. */
static void even(int n)
{
    for (int s = 0; s < RESHARD_SLOTS; s++)
        owner[s] = (int)((long)s * n / RESHARD_SLOTS);
}

/* Every slot once; leaving shards empty; staying ones near the share. */
static void check_plan(const struct reshard_input *in, const struct reshard_plan *p,
                       const double *w)
{
    int now[RESHARD_SLOTS];
    double got[64] = {0}, heaviest = 0;

    for (int s = 0; s < RESHARD_SLOTS; s++)
        now[s] = in->owner[s];
    for (size_t i = 0; i < p->nmoves; i++) {
        const struct reshard_move *m = &p->moves[i];
        assert_int_equal(now[m->slot], m->from);
        assert_int_not_equal(m->from, m->to);
        now[m->slot] = m->to;
        if (i > 0)
            assert_true(p->moves[i - 1].slot < m->slot);
    }
    for (int s = 0; s < RESHARD_SLOTS; s++) {
        double ws = w != NULL ? w[s] : 1.0;
        got[now[s]] += ws;
        heaviest = ws > heaviest ? ws : heaviest;
    }
    for (int k = 0; k < in->nshards; k++) {
        assert_true(got[k] > p->after[k] - 1e-6 && got[k] < p->after[k] + 1e-6);
        if (in->leaving != NULL && in->leaving[k])
            assert_true(got[k] == 0);
        else
            assert_true(got[k] <= p->share * (1 + in->tolerance) + heaviest + 1e-6);
    }
}

static void test_two_to_four(void **state)
{
    (void)state;
    even(2);
    struct reshard_input in = {.nshards = 4, .owner = owner};
    struct reshard_plan p;
    assert_true(reshard_plan(&in, &p));
    check_plan(&in, &p, NULL);
    assert_int_equal(p.nmoves, RESHARD_SLOTS / 2);
    for (size_t i = 0; i < p.nmoves; i++)
        assert_true(p.moves[i].to >= 2); /* never between the old shards */
    for (int k = 0; k < 4; k++)
        assert_true(p.after[k] == RESHARD_SLOTS / 4);
    /* Each new shard gets one range. */
    int runs = 1;
    for (size_t i = 1; i < p.nmoves; i++)
        runs += p.moves[i].to != p.moves[i - 1].to || p.moves[i].slot != p.moves[i - 1].slot + 1;
    assert_int_equal(runs, 2);
    reshard_plan_free(&p);
}

static void test_four_to_three(void **state)
{
    (void)state;
    even(4);
    bool leaving[4] = {false, false, false, true};
    struct reshard_input in = {.nshards = 4, .owner = owner, .leaving = leaving};
    struct reshard_plan p;
    assert_true(reshard_plan(&in, &p));
    check_plan(&in, &p, NULL);
    assert_int_equal(p.nmoves, RESHARD_SLOTS / 4); /* only the leaving shard's */
    for (int k = 0; k < 3; k++)
        assert_true(p.after[k] >= 5461 && p.after[k] <= 5462);
    reshard_plan_free(&p);
}

static void test_even_cluster_is_left_alone(void **state)
{
    (void)state;
    even(3);
    struct reshard_input in = {.nshards = 3, .owner = owner, .tolerance = 0.05};
    struct reshard_plan p;
    assert_true(reshard_plan(&in, &p));
    assert_int_equal(p.nmoves, 0);
    reshard_plan_free(&p);
}

static void test_hot_slots_spread(void **state)
{
    (void)state;
    even(2);
    /* Shard 0's first half is ten times as loaded as the rest. */
    for (int s = 0; s < RESHARD_SLOTS; s++)
        weight[s] = s < RESHARD_SLOTS / 4 ? 10.0 : 1.0;
    struct reshard_input in = {.nshards = 3, .owner = owner, .weight = weight, .tolerance = 0.05};
    struct reshard_plan p;
    assert_true(reshard_plan(&in, &p));
    check_plan(&in, &p, weight);
    double most = 0, least = 1e18;
    for (int k = 0; k < 3; k++) {
        most = p.after[k] > most ? p.after[k] : most;
        least = p.after[k] < least ? p.after[k] : least;
    }
    assert_true(most - least <= 10.0 + 1e-9); /* within one hot slot */
    assert_true(p.before[0] > 2 * p.share);
    reshard_plan_free(&p);
}

static void test_impossible_inputs(void **state)
{
    (void)state;
    even(2);
    bool all[2] = {true, true};
    struct reshard_input in = {.nshards = 2, .owner = owner, .leaving = all};
    struct reshard_plan p;
    assert_false(reshard_plan(&in, &p));
    owner[7] = 5;
    in.leaving = NULL;
    assert_false(reshard_plan(&in, &p));
    even(2);
    weight[3] = -1;
    in.weight = weight;
    assert_false(reshard_plan(&in, &p));
}

/* Random owners, weights, shard counts and leavers: the plan always holds. */
static void test_property(void **state)
{
    (void)state;
    srand(17);
    for (int round = 0; round < 200; round++) {
        int n = 1 + rand() % 12, extra = rand() % 4;
        for (int s = 0; s < RESHARD_SLOTS; s++) {
            owner[s] = rand() % 3 == 0 ? rand() % n : (int)((long)s * n / RESHARD_SLOTS);
            weight[s] = rand() % 5 == 0 ? 0 : (double)(rand() % 1000);
        }
        bool leaving[16] = {false};
        int staying = n + extra;
        for (int k = 0; k < n + extra; k++) {
            if (staying > 1 && rand() % 4 == 0) {
                leaving[k] = true;
                staying--;
            }
        }
        struct reshard_input in = {.nshards = n + extra,
                                   .owner = owner,
                                   .weight = rand() % 2 ? weight : NULL,
                                   .leaving = leaving,
                                   .tolerance = (rand() % 10) / 100.0};
        struct reshard_plan p;
        assert_true(reshard_plan(&in, &p));
        check_plan(&in, &p, in.weight);
        reshard_plan_free(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_to_four),
        cmocka_unit_test(test_four_to_three),
        cmocka_unit_test(test_even_cluster_is_left_alone),
        cmocka_unit_test(test_hot_slots_spread),
        cmocka_unit_test(test_impossible_inputs),
        cmocka_unit_test(test_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
