/* test_changes.c -- the field -> change table and the plans it makes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "changes.h"
#include "cluster_spec.h"
#include "ops.h"
#include "upgrades.h"

/* changed fields from a comma-separated list */
static json_t *fields(const char *list)
{
    json_t *a = json_array();
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *save = NULL, *f = strtok_r(buf, ",", &save); f != NULL;
         f = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(f));
    return a;
}

static bool plan(const char *list, bool allow_combined, struct change_plan *out, struct problem *p)
{
    json_t *changed = fields(list);
    bool ok = change_plan(changed, allow_combined, out, p);
    json_decref(changed);
    return ok;
}

static void test_every_spec_field_has_a_row(void **state)
{
    (void)state;
    for (const struct jspec_field *f = cspec_create_spec; f->name != NULL; f++) {
        const struct change_row *row = change_row(f->name);
        bool fixed = strcmp(f->name, "id") == 0 || strcmp(f->name, "cluster_mode") == 0 ||
                     strcmp(f->name, "restore_from") == 0;
        if (fixed != (row->how == CHANGE_IMMUTABLE))
            fail_msg("%s: how %d", f->name, row->how);
        if ((row->how == CHANGE_BY_OPERATION) != (row->op != NULL))
            fail_msg("%s: an operation exactly when the row says so", f->name);
    }
    assert_int_equal(change_row("status")->how, CHANGE_IMMUTABLE);
    assert_int_equal(change_row("")->how, CHANGE_IMMUTABLE);
}

static void test_at_once_changes_queue_nothing(void **state)
{
    struct change_plan pl;
    struct problem p = {0};
    (void)state;
    assert_true(
        plan("description,tags,maintenance_window,automatic_failover,multi_az", false, &pl, &p));
    assert_int_equal(pl.nops, 0);
    assert_int_equal(pl.nrows, 5);
    assert_false(p.set);
}

static void test_each_operation_once(void **state)
{
    struct change_plan pl;
    struct problem p = {0};
    (void)state;
    assert_true(plan("engine,engine_version", false, &pl, &p));
    assert_int_equal(pl.nops, 1);
    assert_ptr_equal(pl.ops[0], &change_op_upgrade_engine);
    assert_true(plan("parameters,tags", false, &pl, &p));
    assert_int_equal(pl.nops, 1);
    assert_ptr_equal(pl.ops[0], &change_op_apply_parameters);
}

static void test_an_upgrade_runs_alone(void **state)
{
    struct change_plan pl;
    struct problem p = {0};
    (void)state;
    assert_false(plan("engine_version,parameters,tags", false, &pl, &p));
    assert_int_equal(p.code, PROBLEM_COMBINED_CHANGES);
    assert_non_null(strstr(p.detail, "changes to parameters: make"));
    problem_clear(&p);
    /* Allowed: the upgrade's restart carries the parameters. */
    assert_true(plan("engine_version,parameters,tags", true, &pl, &p));
    assert_int_equal(pl.nops, 1);
    assert_ptr_equal(pl.ops[0], &change_op_upgrade_engine);
    /* Tags go with anything. */
    assert_true(plan("engine_version,tags", false, &pl, &p));
}

static void test_two_lone_operations_never_combine(void **state)
{
    struct change_plan pl;
    struct problem p = {0};
    (void)state;
    /* One run cannot carry the other's nodes, whatever the request allows. */
    assert_false(plan("engine_version,replicas_per_shard", true, &pl, &p));
    assert_int_equal(p.code, PROBLEM_COMBINED_CHANGES);
    assert_non_null(strstr(p.detail, "run an operation of their own"));
    problem_clear(&p);
    assert_true(plan("replicas_per_shard,tags", false, &pl, &p));
    assert_int_equal(pl.nops, 1);
    assert_ptr_equal(pl.ops[0], &change_op_scale_replicas);
    assert_true(plan("node_type", false, &pl, &p));
    assert_ptr_equal(pl.ops[0], &change_op_change_node_type);
    assert_true(plan("num_shards", false, &pl, &p));
    assert_ptr_equal(pl.ops[0], &change_op_scale_shards);
    assert_false(plan("num_shards,replicas_per_shard", true, &pl, &p));
    assert_int_equal(p.code, PROBLEM_COMBINED_CHANGES);
    problem_clear(&p);
}

static void test_refusals_in_order(void **state)
{
    struct change_plan pl;
    struct problem p = {0};
    (void)state;
    /* Combined before immutable before not yet. */
    assert_false(plan("engine,num_shards,cluster_mode", false, &pl, &p));
    assert_int_equal(p.code, PROBLEM_COMBINED_CHANGES);
    problem_clear(&p);
    assert_false(plan("num_shards,cluster_mode,id", false, &pl, &p));
    assert_int_equal(p.code, PROBLEM_VALIDATION_FAILED);
    assert_int_equal(json_array_size(p.errors), 2);
    problem_clear(&p);
    /* A field a later version will change: what can be changed comes from the table. */
    assert_false(change_not_yet("snapshot_retention_limit", &p));
    assert_int_equal(p.code, PROBLEM_CHANGE_NOT_SUPPORTED_YET);
    assert_non_null(strstr(p.detail, "cannot change snapshot_retention_limit of"));
    assert_non_null(strstr(p.detail, "description, tags, maintenance_window"));
    assert_non_null(strstr(p.detail, "auth_token"));
    problem_clear(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_spec_field_has_a_row),
        cmocka_unit_test(test_at_once_changes_queue_nothing),
        cmocka_unit_test(test_each_operation_once),
        cmocka_unit_test(test_an_upgrade_runs_alone),
        cmocka_unit_test(test_two_lone_operations_never_combine),
        cmocka_unit_test(test_refusals_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
