/* test_ops.c -- the list of every kind of operation (controlplane/ops/ops.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ops.h"

/* Each kind once, under a name of its own, with steps that have names. */
static void test_kinds_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; op_kinds[i] != NULL; i++) {
        const struct op_kind *k = op_kinds[i];
        assert_non_null(k->name);
        assert_true(k->nsteps >= 0);
        for (int s = 0; s < k->nsteps; s++)
            assert_non_null(k->steps[s].name);
        for (size_t j = 0; j < i; j++) {
            if (op_kinds[j] == k || strcmp(op_kinds[j]->name, k->name) == 0)
                fail_msg("kind %s is listed twice", k->name);
        }
    }
}

/* op_kind_names() is op_kinds' names, in its order, NULL-terminated. */
static void test_names_mirror_the_list(void **state)
{
    const char *const *names = op_kind_names();
    size_t i = 0;

    (void)state;
    for (; op_kinds[i] != NULL; i++)
        assert_string_equal(names[i], op_kinds[i]->name);
    assert_null(names[i]);
    assert_ptr_equal(op_kind_names(), names);
}

/* A step's failure may quote its own error text (ctx->error). */
static void test_a_failure_may_quote_the_error_so_far(void **state)
{
    (void)state;
    struct op_ctx ctx = {0};
    snprintf(ctx.error, sizeof(ctx.error), "no healthy host has room");
    assert_int_equal(op_fail(&ctx, PROBLEM_INSUFFICIENT_CAPACITY, "%s", ctx.error), OP_FAILED);
    assert_string_equal(ctx.error, "no healthy host has room");
    assert_string_equal(ctx.code, "INSUFFICIENT_CAPACITY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_are_distinct),
        cmocka_unit_test(test_names_mirror_the_list),
        cmocka_unit_test(test_a_failure_may_quote_the_error_so_far),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
