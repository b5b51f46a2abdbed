/* test_migrate.c -- migration ordering checks and apply plans (controlplane/store/migrate.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "migrate.h"
#include "timeutil.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct migration three[] = {
    {1, "initial", "CREATE TABLE a (x int);"},
    {2, "catalog", "CREATE TABLE b (x int);"},
    {3, "clusters", "CREATE TABLE c (x int);"},
};

/* Assert that haystack contains needle, printing both when it does not. */
static void assert_contains(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

/* Assert that text mentions the number n as a whole number, not as a part
 * of a longer one. */
static void assert_names_number(const char *text, long n)
{
    for (const char *p = text; *p; p++) {
        if (*p >= '0' && *p <= '9' && (p == text || p[-1] < '0' || p[-1] > '9')) {
            char *end;
            if (strtol(p, &end, 10) == n)
                return;
            p = end - 1;
        }
    }
    fail_msg("\"%s\" does not name %ld", text, n);
}

static void test_check_list_ok(void **state)
{
    char err[256] = "";

    (void)state;
    assert_true(migrate_check_list(three, LEN(three), err, sizeof(err)));
    assert_true(migrate_check_list(three, 1, err, sizeof(err)));
    assert_true(migrate_check_list(three, 0, err, sizeof(err)));
    assert_string_equal(err, "");
}

static void test_check_list_gap(void **state)
{
    static const struct migration gap[] = {{1, "initial", ""}, {3, "clusters", ""}};
    char err[256] = "";

    (void)state;
    assert_false(migrate_check_list(gap, LEN(gap), err, sizeof(err)));
    assert_contains(err, "0003_clusters");
    assert_contains(err, "0002");
}

static void test_check_list_repeat(void **state)
{
    static const struct migration repeat[] = {
        {1, "initial", ""}, {2, "catalog", ""}, {2, "catalog_again", ""}};
    char err[256] = "";

    (void)state;
    assert_false(migrate_check_list(repeat, LEN(repeat), err, sizeof(err)));
    assert_contains(err, "0002_catalog_again");
    assert_contains(err, "0003");
}

static void test_check_list_out_of_order(void **state)
{
    static const struct migration swapped[] = {{2, "catalog", ""}, {1, "initial", ""}};
    char err[256] = "";

    (void)state;
    assert_false(migrate_check_list(swapped, LEN(swapped), err, sizeof(err)));
    assert_contains(err, "0002_catalog");
    assert_contains(err, "0001");
}

static void test_check_list_not_from_one(void **state)
{
    static const struct migration zero[] = {{0, "zero", ""}, {1, "initial", ""}};
    static const struct migration two[] = {{2, "catalog", ""}, {3, "clusters", ""}};
    char err[256];

    (void)state;
    assert_false(migrate_check_list(zero, LEN(zero), err, sizeof(err)));
    assert_contains(err, "0000_zero");
    assert_false(migrate_check_list(two, LEN(two), err, sizeof(err)));
    assert_contains(err, "0002_catalog");
}

static void test_plan_fresh_db(void **state)
{
    size_t first = 99;
    char err[256];

    (void)state;
    assert_true(migrate_plan(three, LEN(three), NULL, 0, &first, err, sizeof(err)));
    assert_int_equal(first, 0);
}

static void test_plan_partly_applied(void **state)
{
    static const int one[] = {1};
    static const int two[] = {1, 2};
    size_t first = 99;
    char err[256];

    (void)state;
    assert_true(migrate_plan(three, LEN(three), one, LEN(one), &first, err, sizeof(err)));
    assert_int_equal(first, 1);
    assert_true(migrate_plan(three, LEN(three), two, LEN(two), &first, err, sizeof(err)));
    assert_int_equal(first, 2);
}

static void test_plan_fully_applied(void **state)
{
    static const int all[] = {1, 2, 3};
    size_t first = 99;
    char err[256];

    (void)state;
    assert_true(migrate_plan(three, LEN(three), all, LEN(all), &first, err, sizeof(err)));
    assert_int_equal(first, LEN(three));
}

static void test_plan_db_newer(void **state)
{
    static const int seven[] = {1, 2, 3, 4, 5, 6, 7};
    static const int four[] = {1, 2, 3, 4};
    size_t first = 99;
    char err[256] = "";

    (void)state;
    assert_false(migrate_plan(three, LEN(three), seven, LEN(seven), &first, err, sizeof(err)));
    assert_names_number(err, 7);
    assert_names_number(err, 3);
    assert_contains(err, "newer");
    assert_false(migrate_plan(three, 2, four, LEN(four), &first, err, sizeof(err)));
    assert_names_number(err, 4);
    assert_names_number(err, 2);
    /* A binary that knows no migrations at all. */
    assert_false(migrate_plan(three, 0, four, 1, &first, err, sizeof(err)));
    assert_names_number(err, 1);
    assert_names_number(err, 0);
}

static void test_plan_history_mismatch(void **state)
{
    static const int skipped[] = {1, 3};
    static const int late_start[] = {2};
    static const int unknown_middle[] = {1, 9, 3};
    size_t first = 99;
    char err[256] = "";

    (void)state;
    assert_false(migrate_plan(three, LEN(three), skipped, LEN(skipped), &first, err, sizeof(err)));
    assert_names_number(err, 3);
    assert_names_number(err, 2);
    assert_false(
        migrate_plan(three, LEN(three), late_start, LEN(late_start), &first, err, sizeof(err)));
    assert_names_number(err, 2);
    assert_names_number(err, 1);
    assert_false(migrate_plan(three, LEN(three), unknown_middle, LEN(unknown_middle), &first, err,
                              sizeof(err)));
    assert_names_number(err, 9);
}

static void test_embedded_list(void **state)
{
    char err[256] = "";

    (void)state;
    assert_true(migration_count > 0);
    if (!migrate_check_list(migration_list, migration_count, err, sizeof(err)))
        fail_msg("the embedded migrations are out of order: %s", err);
    assert_int_equal(migrate_latest(), migration_list[migration_count - 1].version);
    assert_int_equal(migrate_latest(), (int)migration_count);
    for (size_t i = 0; i < migration_count; i++) {
        assert_true(strlen(migration_list[i].name) > 0);
        assert_true(strlen(migration_list[i].sql) > 0);
    }
    /* A fresh database gets every embedded migration. */
    size_t first = 99;
    assert_true(migrate_plan(migration_list, migration_count, NULL, 0, &first, err, sizeof(err)));
    assert_int_equal(first, 0);
}

/* PostgreSQL writes the API's timestamps in views with api_time() (0011)
 * and in the statements in C with TIME_SQL_FORMAT: the latest definition of
 * api_time must spell that very pattern, so the two cannot drift apart. */
static void test_api_time_is_time_sql_format(void **state)
{
    const char *def = NULL;

    (void)state;
    for (size_t i = 0; i < migration_count; i++) {
        const char *p = strstr(migration_list[i].sql, "FUNCTION api_time(");
        if (p != NULL)
            def = p;
    }
    if (def == NULL)
        fail_msg("no migration defines api_time()");
    const char *end = strstr(def, "$$;");
    assert_non_null(end);
    const char *pattern = strstr(def, "'" TIME_SQL_FORMAT "'");
    if (pattern == NULL || pattern > end)
        fail_msg("api_time() does not use TIME_SQL_FORMAT '%s': %.*s", TIME_SQL_FORMAT,
                 (int)(end - def), def);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_list_ok),
        cmocka_unit_test(test_check_list_gap),
        cmocka_unit_test(test_check_list_repeat),
        cmocka_unit_test(test_check_list_out_of_order),
        cmocka_unit_test(test_check_list_not_from_one),
        cmocka_unit_test(test_plan_fresh_db),
        cmocka_unit_test(test_plan_partly_applied),
        cmocka_unit_test(test_plan_fully_applied),
        cmocka_unit_test(test_plan_db_newer),
        cmocka_unit_test(test_plan_history_mismatch),
        cmocka_unit_test(test_embedded_list),
        cmocka_unit_test(test_api_time_is_time_sql_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
