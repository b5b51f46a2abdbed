/* test_cluster_spec.c -- the cluster spec's rules, defaults, merge patches,
 * diffs, slot split and maintenance windows (controlplane/cluster_spec.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_spec.h"
#include "engine_config.h"
#include "xalloc.h"

/* Parse JSON text written with single quotes for readability ('a' for "a");
 * the texts here contain no apostrophes of their own. */
static json_t *parse(const char *text)
{
    char *copy = xstrdup(text);
    json_error_t jerr;

    for (char *p = copy; *p != '\0'; p++) {
        if (*p == '\'')
            *p = '"';
    }
    json_t *value = json_loads(copy, JSON_DECODE_ANY, &jerr);
    if (value == NULL)
        fail_msg("test JSON does not parse: %s: %s", copy, jerr.text);
    free(copy);
    return value;
}

/* Compact JSON of value, in a static buffer (for one comparison at a time). */
static const char *dump(const json_t *value)
{
    static char buf[8192];
    size_t n = json_dumpb(value, buf, sizeof(buf) - 1, JSON_COMPACT | JSON_ENCODE_ANY);

    assert_in_range(n, 1, sizeof(buf) - 1);
    buf[n] = '\0';
    return buf;
}

/* The smallest valid body. */
#define BASE "{'id': 'orders', 'engine': 'valkey', 'engine_version': '8.0', 'node_type': 'm'}"

/* BASE with the merge patch applied, normalized; checks that the result and
 * the errors agree. *errors gets the errors (the caller frees them). */
static json_t *normalize_patched(const char *patch, json_t **errors)
{
    json_t *base = parse(BASE), *p = parse(patch);
    json_t *body = cspec_merge_patch(base, p);

    *errors = json_array();
    json_t *spec = cspec_normalize(body, *errors);
    assert_int_equal(spec == NULL, json_array_size(*errors) > 0);
    json_decref(base);
    json_decref(p);
    json_decref(body);
    return spec;
}

/* BASE patched with patch must be valid; its normalized spec's field must
 * equal want (JSON text). */
static void expect_field(const char *patch, const char *field, const char *want)
{
    json_t *errors, *spec = normalize_patched(patch, &errors);
    json_t *w = parse(want);

    if (spec == NULL)
        fail_msg("%s: unexpected errors %s", patch, dump(errors));
    if (!json_equal(json_object_get(spec, field), w))
        fail_msg("%s: %s is %s, want %s", patch, field, dump(json_object_get(spec, field)), want);
    json_decref(w);
    json_decref(spec);
    json_decref(errors);
}

static void expect_valid(const char *patch)
{
    expect_field(patch, "id", "'orders'");
}

/* BASE patched with patch must fail with exactly the errors want (compact
 * JSON text with single quotes). */
static void expect_errors(const char *patch, const char *want)
{
    json_t *errors, *spec = normalize_patched(patch, &errors);
    json_t *w = parse(want);

    assert_null(spec);
    if (!json_equal(errors, w)) {
        char got[8192];
        snprintf(got, sizeof(got), "%s", dump(errors));
        fail_msg("%s:\n got  %s\n want %s", patch, got, dump(w));
    }
    json_decref(w);
    json_decref(errors);
}

/* BASE patched with patch must fail with this one error. */
static void expect_error(const char *patch, const char *field, const char *message)
{
    json_t *errors, *spec = normalize_patched(patch, &errors);

    assert_null(spec);
    if (json_array_size(errors) != 1)
        fail_msg("%s: want one error, got %s", patch, dump(errors));
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "field")),
                        field);
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "message")),
                        message);
    json_decref(errors);
}

/* ---- Defaults and shape ------------------------------------------------ */

static void test_defaults_filled_in_spec_order(void **state)
{
    json_t *errors, *spec = normalize_patched("{}", &errors);
    (void)state;
    assert_non_null(spec);
    assert_string_equal(dump(spec), "{\"id\":\"orders\",\"description\":\"\",\"engine\":\"valkey\","
                                    "\"engine_version\":\"8.0\",\"node_type\":\"m\","
                                    "\"cluster_mode\":\"enabled\",\"num_shards\":1,"
                                    "\"replicas_per_shard\":1,\"automatic_failover\":true,"
                                    "\"multi_az\":true,\"transit_encryption\":false,"
                                    "\"maintenance_window\":\"sun:05:00-sun:06:00\","
                                    "\"snapshot_window\":\"03:00-04:00\","
                                    "\"snapshot_retention_days\":0,"
                                    "\"parameters\":{},\"tags\":{}}");
    json_decref(spec);
    json_decref(errors);
}

/* The example comes back exactly as sent, in the spec's order
 * whatever the body's. */
static void test_full_body_kept_as_sent(void **state)
{
    json_t *body = parse("{'tags': {'team': 'checkout'}, 'id': 'orders',"
                         " 'description': 'checkout cache', 'engine': 'valkey',"
                         " 'engine_version': '8.0', 'node_type': 'cache.t3.small',"
                         " 'cluster_mode': 'enabled', 'num_shards': 3, 'replicas_per_shard': 1,"
                         " 'multi_az': true, 'automatic_failover': true,"
                         " 'transit_encryption': true, 'maintenance_window': 'sun:05:00-sun:06:00',"
                         " 'snapshot_window': '23:30-01:00', 'snapshot_retention_days': 7,"
                         " 'restore_from': {'snapshot_id': 'orders-nightly'},"
                         " 'parameters': {'maxmemory-policy': 'allkeys-lru'}}");
    json_t *errors = json_array(), *changed = json_array();
    json_t *spec = cspec_normalize(body, errors);
    (void)state;

    assert_non_null(spec);
    assert_true(json_equal(spec, body));
    assert_string_equal(json_object_iter_key(json_object_iter(spec)), "id");
    assert_false(cspec_diff(body, spec, changed));
    json_decref(spec);
    json_decref(body);
    json_decref(errors);
    json_decref(changed);
}

/* Every field of the spec but the write-only auth_token is stored; all but
 * restore_from (a create from a snapshot only) have a default. */
static void test_every_field_but_auth_token_stored(void **state)
{
    json_t *errors, *spec = normalize_patched("{}", &errors);
    size_t fields = 0;
    (void)state;

    for (const struct jspec_field *f = cspec_create_spec; f->name != NULL; f++, fields++)
        assert_int_equal(json_object_get(spec, f->name) != NULL,
                         strcmp(f->name, "auth_token") != 0 &&
                             strcmp(f->name, "restore_from") != 0);
    assert_int_equal(json_object_size(spec), fields - 2);
    json_decref(spec);
    json_decref(errors);
}

static void test_normalize_is_idempotent(void **state)
{
    json_t *errors,
        *spec = normalize_patched("{'cluster_mode': 'disabled', 'replicas_per_shard': 0,"
                                  " 'tags': {'a': 'b'}, 'parameters': {'timeout': '30'}}",
                                  &errors);
    json_t *again = cspec_normalize(spec, errors);
    (void)state;

    assert_non_null(again);
    assert_true(json_equal(spec, again));
    assert_string_equal(json_string_value(json_object_get(again, "cluster_mode")), "disabled");
    json_decref(spec);
    json_decref(again);
    json_decref(errors);
}

static void test_body_must_be_object(void **state)
{
    json_t *errors = json_array();
    json_t *body = parse("['orders']");
    (void)state;

    assert_null(cspec_normalize(body, errors));
    assert_string_equal(dump(errors), "[{\"field\":\"\",\"message\":\"the request body must be "
                                      "a JSON object\"}]");
    json_decref(body);
    json_decref(errors);
}

static void test_required_fields(void **state)
{
    json_t *errors = json_array();
    json_t *body = parse("{}");
    (void)state;

    assert_null(cspec_normalize(body, errors));
    assert_string_equal(dump(errors), "[{\"field\":\"id\",\"message\":\"is required\"},"
                                      "{\"field\":\"engine\",\"message\":\"is required\"},"
                                      "{\"field\":\"engine_version\",\"message\":\"is required\"},"
                                      "{\"field\":\"node_type\",\"message\":\"is required\"}]");
    json_decref(body);
    json_decref(errors);
}

static void test_unknown_field(void **state)
{
    (void)state;
    expect_error("{'name': 'orders'}", "name", "is not a known field");
    expect_error("{'status': 'available'}", "status", "is not a known field");
}

/* Failures already in the array are the caller's, not the body's. */
static void test_appends_to_existing_errors(void **state)
{
    json_t *errors = parse("[{'field': 'x', 'message': 'earlier'}]");
    json_t *body = parse(BASE), *bad = parse("{'id': 'Orders'}");
    (void)state;

    json_t *spec = cspec_normalize(body, errors);
    assert_non_null(spec);
    assert_int_equal(json_array_size(errors), 1);
    assert_null(cspec_normalize(bad, errors));
    assert_int_equal(json_array_size(errors), 5);
    json_decref(spec);
    json_decref(body);
    json_decref(bad);
    json_decref(errors);
}

/* ---- Single fields ----------------------------------------------------- */

static void test_id_valid(void **state)
{
    (void)state;
    expect_field("{'id': 'a'}", "id", "'a'");
    expect_field("{'id': 'a1'}", "id", "'a1'");
    expect_field("{'id': 'orders-eu-1'}", "id", "'orders-eu-1'");
    expect_field("{'id': 'a234567890123456789012345678901234567890'}", "id",
                 "'a234567890123456789012345678901234567890'");
}

static void test_id_invalid(void **state)
{
    (void)state;
    expect_error("{'id': ''}", "id", "must have at least 1 characters");
    expect_error("{'id': 'a2345678901234567890123456789012345678901'}", "id",
                 "must have at most 40 characters");
    expect_error("{'id': 'Orders'}", "id", "may contain only lowercase letters, digits and '-'");
    expect_error("{'id': 'or_ders'}", "id", "may contain only lowercase letters, digits and '-'");
    expect_error("{'id': 'or.ders'}", "id", "may contain only lowercase letters, digits and '-'");
    expect_error("{'id': 'caf\\u00e9'}", "id",
                 "may contain only lowercase letters, digits and '-'");
    expect_error("{'id': '1orders'}", "id", "must start with a lowercase letter");
    expect_error("{'id': '-orders'}", "id", "must start with a lowercase letter");
    expect_error("{'id': 'or--ders'}", "id", "must not contain \"--\"");
    expect_error("{'id': 'orders-'}", "id", "must not end with '-'");
    expect_error("{'id': 7}", "id", "must be a string");
}

static void test_description(void **state)
{
    char patch[400];
    (void)state;

    expect_field("{'description': 'checkout cache'}", "description", "'checkout cache'");
    snprintf(patch, sizeof(patch), "{'description': '%0255d'}", 0);
    expect_valid(patch);
    snprintf(patch, sizeof(patch), "{'description': '%0256d'}", 0);
    expect_error(patch, "description", "must have at most 255 characters");
}

static void test_engine_and_version(void **state)
{
    (void)state;
    expect_field("{'engine': 'redis', 'engine_version': '7.0'}", "engine", "'redis'");
    expect_field("{'engine_version': '10.12'}", "engine_version", "'10.12'");
    expect_error("{'engine': 'memcached'}", "engine", "must be one of: redis, valkey");
    expect_error("{'engine': 'Valkey'}", "engine", "must be one of: redis, valkey");
    expect_error("{'engine_version': '8'}", "engine_version",
                 "must be a major.minor version such as 8.0");
    expect_error("{'engine_version': '8.0.1'}", "engine_version",
                 "must be a major.minor version such as 8.0");
    expect_error("{'engine_version': 'v8.0'}", "engine_version",
                 "must be a major.minor version such as 8.0");
    expect_error("{'engine_version': '08.0'}", "engine_version",
                 "must be a major.minor version such as 8.0");
    expect_error("{'engine_version': 8.0}", "engine_version", "must be a string");
}

static void test_node_type(void **state)
{
    char patch[200];
    (void)state;

    snprintf(patch, sizeof(patch), "{'node_type': 'n%063d'}", 0);
    expect_valid(patch);
    snprintf(patch, sizeof(patch), "{'node_type': 'n%064d'}", 0);
    expect_error(patch, "node_type", "must have at most 64 characters");
    expect_error("{'node_type': ''}", "node_type", "must have at least 1 characters");
}

static void test_cluster_mode(void **state)
{
    (void)state;
    expect_field("{'cluster_mode': 'disabled'}", "cluster_mode", "'disabled'");
    expect_error("{'cluster_mode': 'on'}", "cluster_mode", "must be one of: enabled, disabled");
    expect_error("{'cluster_mode': true}", "cluster_mode", "must be a string");
}

static void test_num_shards(void **state)
{
    (void)state;
    expect_field("{'num_shards': 1000}", "num_shards", "1000");
    expect_field("{'num_shards': 1}", "num_shards", "1");
    expect_error("{'num_shards': 0}", "num_shards", "must be between 1 and 1000");
    expect_error("{'num_shards': 1001}", "num_shards", "must be between 1 and 1000");
    expect_error("{'num_shards': 1.0}", "num_shards", "must be an integer");
    expect_error("{'num_shards': '3'}", "num_shards", "must be an integer");
}

static void test_replicas_per_shard(void **state)
{
    (void)state;
    expect_field("{'replicas_per_shard': 5}", "replicas_per_shard", "5");
    expect_error("{'replicas_per_shard': 6}", "replicas_per_shard", "must be between 0 and 5");
    expect_error("{'replicas_per_shard': -1}", "replicas_per_shard", "must be between 0 and 5");
}

static void test_flags_must_be_booleans(void **state)
{
    (void)state;
    expect_error("{'automatic_failover': 'yes'}", "automatic_failover", "must be a boolean");
    expect_error("{'multi_az': 1}", "multi_az", "must be a boolean");
}

static void test_auth_token(void **state)
{
    json_t *errors;
    json_t *body = parse("{'id': 'a', 'engine': 'redis', 'engine_version': '7.0',"
                         " 'node_type': 'm', 'auth_token': 'S3cret!#$%&*+,-./~'}");
    json_t *spec;
    (void)state;

    assert_string_equal(cspec_auth_token(body), "S3cret!#$%&*+,-./~");
    errors = json_array();
    spec = cspec_normalize(body, errors);
    assert_non_null(spec);
    assert_null(json_object_get(spec, "auth_token"));
    assert_null(cspec_auth_token(spec));
    json_decref(spec);
    json_decref(body);
    json_decref(errors);

    body = parse("{'auth_token': 16}");
    assert_null(cspec_auth_token(body));
    json_decref(body);

    expect_valid("{'auth_token': '0123456789abcdef'}");
    expect_valid("{'auth_token': '"
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}");
    expect_error("{'auth_token': '0123456789abcde'}", "auth_token",
                 "must have at least 16 characters");
    expect_error("{'auth_token': '"
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefX'}",
                 "auth_token", "must have at most 128 characters");
    expect_error("{'auth_token': '0123456789 abcdef'}", "auth_token",
                 "may contain only printable ASCII characters other than space");
    expect_error("{'auth_token': '0123456789\\tabcdef'}", "auth_token",
                 "may contain only printable ASCII characters other than space");
    expect_error("{'auth_token': '0123456789\\u00e9abcdef'}", "auth_token",
                 "may contain only printable ASCII characters other than space");
}

/* ---- Rules between fields ---------------------------------------------- */

static void test_failover_defaults(void **state)
{
    (void)state;
    /* Cluster mode: failover is required, so on. */
    expect_field("{}", "automatic_failover", "true");
    expect_field("{'replicas_per_shard': 2}", "multi_az", "true");
    /* Disabled mode: on exactly when there are replicas; multi_az follows. */
    expect_field("{'cluster_mode': 'disabled', 'replicas_per_shard': 0}", "automatic_failover",
                 "false");
    expect_field("{'cluster_mode': 'disabled', 'replicas_per_shard': 0}", "multi_az", "false");
    expect_field("{'cluster_mode': 'disabled', 'replicas_per_shard': 2}", "automatic_failover",
                 "true");
    expect_field("{'cluster_mode': 'disabled', 'replicas_per_shard': 2}", "multi_az", "true");
    expect_field("{'cluster_mode': 'disabled', 'automatic_failover': false}", "multi_az", "false");
    /* Given values stand. */
    expect_field("{'multi_az': false}", "multi_az", "false");
    expect_field("{'cluster_mode': 'disabled', 'automatic_failover': false}", "automatic_failover",
                 "false");
}

static void test_shards_when_disabled(void **state)
{
    (void)state;
    expect_field("{'cluster_mode': 'disabled', 'num_shards': 1}", "num_shards", "1");
    expect_error("{'cluster_mode': 'disabled', 'num_shards': 2}", "num_shards",
                 "must be 1 when cluster_mode is disabled");
    expect_field("{'cluster_mode': 'enabled', 'num_shards': 2}", "num_shards", "2");
}

static void test_cluster_mode_needs_failover(void **state)
{
    (void)state;
    expect_error("{'automatic_failover': false, 'multi_az': false}", "automatic_failover",
                 "must be true when cluster_mode is enabled");
    expect_error("{'automatic_failover': false}", "automatic_failover",
                 "must be true when cluster_mode is enabled");
    expect_errors("{'automatic_failover': false, 'multi_az': true}",
                  "[{'field': 'automatic_failover',"
                  "  'message': 'must be true when cluster_mode is enabled'},"
                  " {'field': 'multi_az', 'message': 'needs automatic_failover to be true'}]");
}

/* In cluster mode the replica is what is missing, whatever the flags say. */
static void test_cluster_mode_needs_a_replica(void **state)
{
    static const char msg[] = "must be at least 1 when cluster_mode is enabled "
                              "(automatic_failover is required there and needs a replica)";
    (void)state;
    expect_error("{'replicas_per_shard': 0}", "replicas_per_shard", msg);
    expect_error("{'replicas_per_shard': 0, 'automatic_failover': true}", "replicas_per_shard",
                 msg);
    expect_error("{'replicas_per_shard': 0, 'multi_az': true}", "replicas_per_shard", msg);
}

static void test_failover_needs_a_replica(void **state)
{
    (void)state;
    expect_error("{'cluster_mode': 'disabled', 'replicas_per_shard': 0,"
                 " 'automatic_failover': true}",
                 "automatic_failover", "needs replicas_per_shard of at least 1");
    expect_valid("{'cluster_mode': 'disabled', 'replicas_per_shard': 0,"
                 " 'automatic_failover': false}");
}

static void test_multi_az_needs_failover(void **state)
{
    (void)state;
    expect_error("{'cluster_mode': 'disabled', 'automatic_failover': false, 'multi_az': true}",
                 "multi_az", "needs automatic_failover to be true");
    expect_error("{'cluster_mode': 'disabled', 'replicas_per_shard': 0, 'multi_az': true}",
                 "multi_az", "needs automatic_failover to be true");
    expect_valid("{'cluster_mode': 'disabled', 'automatic_failover': false, 'multi_az': false}");
}

/* A rule reading a field that failed its own check stays quiet. */
static void test_rules_skip_invalid_fields(void **state)
{
    (void)state;
    expect_error("{'cluster_mode': 'disabled', 'num_shards': '2'}", "num_shards",
                 "must be an integer");
    expect_error("{'cluster_mode': 'off', 'num_shards': 2}", "cluster_mode",
                 "must be one of: enabled, disabled");
    expect_error("{'replicas_per_shard': -1}", "replicas_per_shard", "must be between 0 and 5");
    expect_error("{'automatic_failover': 0, 'multi_az': true}", "automatic_failover",
                 "must be a boolean");
}

/* Every failure at once, each naming its field. */
static void test_all_failures_reported(void **state)
{
    (void)state;
    expect_errors("{'id': 'A', 'engine': 'memcached', 'cluster_mode': 'disabled',"
                  " 'num_shards': 3, 'maintenance_window': 'sun:05:00-sun:05:30',"
                  " 'parameters': {'appendonly': 'true'}, 'tags': {'': 'x'}}",
                  "[{'field': 'id',"
                  "  'message': 'may contain only lowercase letters, digits and \\u0027-\\u0027'},"
                  " {'field': 'engine', 'message': 'must be one of: redis, valkey'},"
                  " {'field': 'maintenance_window',"
                  "  'message': 'must be at least 60 minutes long, not 30'},"
                  " {'field': 'num_shards', 'message': 'must be 1 when cluster_mode is disabled'},"
                  " {'field': 'parameters.appendonly',"
                  "  'message': 'parameter \\u0022appendonly\\u0022 must be yes or no'},"
                  " {'field': 'tags.', 'message': 'key must have 1 to 128 characters'}]");
}

/* ---- Maintenance window ------------------------------------------------ */

static void test_window_in_spec(void **state)
{
    (void)state;
    expect_field("{'maintenance_window': 'sat:23:00-sun:01:00'}", "maintenance_window",
                 "'sat:23:00-sun:01:00'");
    expect_error("{'maintenance_window': 'sunday 5am'}", "maintenance_window",
                 "must have the form ddd:hh24:mi-ddd:hh24:mi (UTC), e.g. sun:05:00-sun:06:00");
    expect_error("{'maintenance_window': 5}", "maintenance_window", "must be a string");
}

/* Parse text as a window that must be valid, with the given bounds. */
static void expect_window(const char *text, int start, int end)
{
    int s = -1, e = -1;
    char msg[256] = "";

    if (!cspec_window_parse(text, &s, &e, msg, sizeof(msg)))
        fail_msg("%s: %s", text, msg);
    assert_int_equal(s, start);
    assert_int_equal(e, end);
}

/* Parse text as a window that must be invalid, with message want; the
 * outputs stay untouched. */
static void expect_bad_window(const char *text, const char *want)
{
    int s = -7, e = -7;
    char msg[256] = "";

    if (cspec_window_parse(text, &s, &e, msg, sizeof(msg)))
        fail_msg("%s: accepted", text);
    assert_string_equal(msg, want);
    assert_int_equal(s, -7);
    assert_int_equal(e, -7);
}

static void test_window_parse_valid(void **state)
{
    (void)state;
    expect_window("mon:00:00-mon:01:00", 0, 60);
    expect_window("sun:05:00-sun:06:00", 6 * 1440 + 300, 6 * 1440 + 360);
    expect_window("tue:10:30-tue:11:30", 1440 + 630, 1440 + 690);
    expect_window("sat:23:00-sun:01:00", 5 * 1440 + 1380, 6 * 1440 + 60);
    /* Wrapping the week: the end comes before the start. */
    expect_window("sun:23:30-mon:00:30", 6 * 1440 + 1410, 30);
    expect_window("sun:23:59-mon:00:59", 10079, 59);
    /* Exactly 24 hours, also across the week's end. */
    expect_window("wed:12:00-thu:12:00", 2 * 1440 + 720, 3 * 1440 + 720);
    expect_window("sun:12:00-mon:12:00", 6 * 1440 + 720, 720);
}

static void test_window_parse_shape(void **state)
{
    static const char shape[] =
        "must have the form ddd:hh24:mi-ddd:hh24:mi (UTC), e.g. sun:05:00-sun:06:00";
    (void)state;
    expect_bad_window("", shape);
    expect_bad_window("sun:05:00-sun:06:0", shape);
    expect_bad_window("sun:05:00-sun:06:000", shape);
    expect_bad_window("sun:5:00-sun:06:00", shape);
    expect_bad_window("sun:05:00 sun:06:00", shape);
    expect_bad_window("sun-05:00-sun-06:00", shape);
    expect_bad_window("sun:05.00-sun:06.00", shape);
    expect_bad_window(" sun:05:00-sun:06:00", shape);
}

static void test_window_parse_fields(void **state)
{
    static const char day[] =
        "has an unknown day \"%s\" (days are mon, tue, wed, thu, fri, sat, sun)";
    char want[128];
    (void)state;

    snprintf(want, sizeof(want), day, "Sun");
    expect_bad_window("Sun:05:00-sun:06:00", want);
    snprintf(want, sizeof(want), day, "sno");
    expect_bad_window("sun:05:00-sno:06:00", want);
    expect_bad_window("sun:24:00-mon:01:00",
                      "has an invalid time \"24:00\" (hours are 00-23, minutes 00-59)");
    expect_bad_window("sun:05:60-sun:07:00",
                      "has an invalid time \"05:60\" (hours are 00-23, minutes 00-59)");
    expect_bad_window("sun:05:00-sun:0a:00",
                      "has an invalid time \"0a:00\" (hours are 00-23, minutes 00-59)");
    expect_bad_window("sun:-1:00-sun:06:00",
                      "has an invalid time \"-1:00\" (hours are 00-23, minutes 00-59)");
}

static void test_window_parse_length(void **state)
{
    (void)state;
    expect_window("mon:05:00-mon:06:00", 300, 360);
    expect_bad_window("mon:05:00-mon:05:59", "must be at least 60 minutes long, not 59");
    expect_bad_window("mon:05:00-mon:05:00", "must be at least 60 minutes long, not 0");
    expect_bad_window("sun:23:30-mon:00:29", "must be at least 60 minutes long, not 59");
    expect_bad_window("mon:05:00-tue:05:01", "must be at most 24 hours long, not 1441 minutes");
    /* An end before the start is read as wrapping: almost a week. */
    expect_bad_window("mon:06:00-mon:05:00", "must be at most 24 hours long, not 10020 minutes");
}

/* ---- Parameters -------------------------------------------------------- */

static void test_parameters_valid(void **state)
{
    (void)state;
    expect_field("{'parameters': {'maxmemory-policy': 'allkeys-lru',"
                 " 'reserved-memory-percent': '0', 'appendonly': 'no',"
                 " 'cluster-node-timeout': '15000', 'timeout': '300',"
                 " 'notify-keyspace-events': 'Ex', 'hash-max-ziplist-entries': '64'}}",
                 "parameters",
                 "{'maxmemory-policy': 'allkeys-lru', 'reserved-memory-percent': '0',"
                 " 'appendonly': 'no', 'cluster-node-timeout': '15000', 'timeout': '300',"
                 " 'notify-keyspace-events': 'Ex', 'hash-max-ziplist-entries': '64'}");
    expect_valid("{'parameters': {'reserved-memory-percent': '90', 'appendonly': 'yes',"
                 " 'cluster-node-timeout': '500'}}");
    expect_valid("{'parameters': {'cluster-node-timeout': '120000'}}");
    expect_valid("{'engine_version': '8.0', 'parameters':"
                 " {'dual-channel-replication-enabled': 'yes'}}");
}

static void test_parameters_values_are_strings(void **state)
{
    (void)state;
    expect_error("{'parameters': {'timeout': 300}}", "parameters.timeout", "must be a string");
    expect_error("{'parameters': {'appendonly': true}}", "parameters.appendonly",
                 "must be a string");
    expect_error("{'parameters': ['timeout']}", "parameters", "must be an object");
}

/* Names and values outside Cairn's own settings get the words of
 * engine_config_param_check(). */
static void test_parameters_allowlist(void **state)
{
    (void)state;
    expect_error("{'parameters': {'foo': '1'}}", "parameters.foo",
                 "parameter \"foo\" is not one users may set");
    expect_error("{'parameters': {'maxmemory': '100mb'}}", "parameters.maxmemory",
                 "parameter \"maxmemory\" is managed by Cairn and cannot be set");
    expect_error("{'parameters': {'dir': '/tmp'}}", "parameters.dir",
                 "parameter \"dir\" is managed by Cairn and cannot be set");
    expect_error("{'parameters': {'timeout': '-1'}}", "parameters.timeout",
                 "parameter \"timeout\": value \"-1\" must be an integer from 0 to 2147483647");
    expect_error("{'parameters': {'lazyfree-lazy-eviction': 'true'}}",
                 "parameters.lazyfree-lazy-eviction",
                 "parameter \"lazyfree-lazy-eviction\": value \"true\" must be yes or no");
}

/* The allowlist is per engine and line. */
static void test_parameters_per_engine_line(void **state)
{
    (void)state;
    expect_error("{'engine': 'redis', 'engine_version': '7.2',"
                 " 'parameters': {'dual-channel-replication-enabled': 'yes'}}",
                 "parameters.dual-channel-replication-enabled",
                 "parameter \"dual-channel-replication-enabled\" is not available on redis 7.2 "
                 "(valkey 8.0 and later)");
    expect_error("{'engine_version': '7.2',"
                 " 'parameters': {'dual-channel-replication-enabled': 'yes'}}",
                 "parameters.dual-channel-replication-enabled",
                 "parameter \"dual-channel-replication-enabled\" is not available on valkey 7.2 "
                 "(valkey 8.0 and later)");
    expect_error("{'engine': 'redis', 'engine_version': '7.0',"
                 " 'parameters': {'set-max-listpack-entries': '128'}}",
                 "parameters.set-max-listpack-entries",
                 "parameter \"set-max-listpack-entries\" is not available on redis 7.0 "
                 "(redis 7.2 and later, valkey 7.2 and later)");
    expect_valid("{'engine': 'redis', 'engine_version': '7.2',"
                 " 'parameters': {'set-max-listpack-entries': '128'}}");
}

/* An alias and its entry would set one directive twice. */
static void test_parameters_alias_twice(void **state)
{
    (void)state;
    expect_error("{'parameters': {'hash-max-listpack-entries': '64',"
                 " 'hash-max-ziplist-entries': '128'}}",
                 "parameters.hash-max-ziplist-entries",
                 "parameter \"hash-max-ziplist-entries\" sets the same directive as "
                 "\"hash-max-listpack-entries\" (hash-max-listpack-entries)");
}

static void test_parameters_cairn_settings(void **state)
{
    (void)state;
    expect_error("{'parameters': {'maxmemory-policy': 'lru'}}", "parameters.maxmemory-policy",
                 "parameter \"maxmemory-policy\" must be one of: volatile-lru, allkeys-lru, "
                 "volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, "
                 "noeviction");
    expect_error("{'parameters': {'reserved-memory-percent': '91'}}",
                 "parameters.reserved-memory-percent",
                 "parameter \"reserved-memory-percent\" must be an integer from 0 to 90");
    expect_error("{'parameters': {'reserved-memory-percent': '-1'}}",
                 "parameters.reserved-memory-percent",
                 "parameter \"reserved-memory-percent\" must be an integer from 0 to 90");
    expect_error("{'parameters': {'reserved-memory-percent': '025'}}",
                 "parameters.reserved-memory-percent",
                 "parameter \"reserved-memory-percent\" must be an integer from 0 to 90");
    expect_error("{'parameters': {'reserved-memory-percent': ''}}",
                 "parameters.reserved-memory-percent",
                 "parameter \"reserved-memory-percent\" must be an integer from 0 to 90");
    expect_error("{'parameters': {'appendonly': 'true'}}", "parameters.appendonly",
                 "parameter \"appendonly\" must be yes or no");
    expect_error("{'parameters': {'cluster-node-timeout': '499'}}",
                 "parameters.cluster-node-timeout",
                 "parameter \"cluster-node-timeout\" must be an integer from 500 to 120000 "
                 "(milliseconds)");
    expect_error("{'parameters': {'cluster-node-timeout': '120001'}}",
                 "parameters.cluster-node-timeout",
                 "parameter \"cluster-node-timeout\" must be an integer from 500 to 120000 "
                 "(milliseconds)");
    expect_error("{'cluster_mode': 'disabled', 'parameters': {'cluster-node-timeout': '5000'}}",
                 "parameters.cluster-node-timeout",
                 "parameter \"cluster-node-timeout\" applies only when cluster_mode is enabled");
}

/* The policies the message lists are exactly those the renderer takes. */
static void test_policy_message_matches_renderer(void **state)
{
    static const char prefix[] = "parameter \"maxmemory-policy\" must be one of: ";
    json_t *errors;
    (void)state;

    assert_null(normalize_patched("{'parameters': {'maxmemory-policy': 'x'}}", &errors));
    char *list = xstrdup(json_string_value(json_object_get(json_array_get(errors, 0), "message")) +
                         strlen(prefix));
    int n = 0;
    for (char *save = NULL, *p = strtok_r(list, ", ", &save); p != NULL;
         p = strtok_r(NULL, ", ", &save), n++)
        assert_true(engine_config_policy_valid(p));
    assert_int_equal(n, 8);
    free(list);
    json_decref(errors);
}

/* Cairn's own settings are checked even when the engine is unknown; the
 * allowlist, which depends on it, is not. */
static void test_parameters_with_invalid_engine(void **state)
{
    (void)state;
    expect_errors("{'engine': 'memcached', 'parameters': {'foo': '1', 'appendonly': 'x'}}",
                  "[{'field': 'engine', 'message': 'must be one of: redis, valkey'},"
                  " {'field': 'parameters.appendonly',"
                  "  'message': 'parameter \\u0022appendonly\\u0022 must be yes or no'}]");
    expect_error("{'engine_version': '8', 'parameters': {'foo': '1'}}", "engine_version",
                 "must be a major.minor version such as 8.0");
}

/* ---- Tags -------------------------------------------------------------- */

/* A patch setting n tags t0..t(n-1). */
static char *tags_patch(int n)
{
    char *patch = xstrdup("{'tags': {");
    for (int i = 0; i < n; i++) {
        char *next = xasprintf("%s%s't%d': 'v'", patch, i > 0 ? ", " : "", i);
        free(patch);
        patch = next;
    }
    char *done = xasprintf("%s}}", patch);
    free(patch);
    return done;
}

static void test_tags_count(void **state)
{
    char *patch;
    (void)state;

    patch = tags_patch(50);
    expect_valid(patch);
    free(patch);
    patch = tags_patch(51);
    expect_error(patch, "tags", "must have at most 50 tags");
    free(patch);
    expect_error("{'tags': ['team']}", "tags", "must be an object");
}

/* A string of n copies of the UTF-8 text unit. */
static char *repeat(const char *unit, int n)
{
    char *s = xcalloc((size_t)n * strlen(unit) + 1, 1);
    for (int i = 0; i < n; i++)
        strcat(s, unit);
    return s;
}

static void test_tag_keys(void **state)
{
    char *key = repeat("\xc3\xa9", 128), *patch = xasprintf("{'tags': {'%s': 'x'}}", key);
    (void)state;

    /* Characters, not bytes: 128 two-byte characters are fine. */
    expect_valid(patch);
    free(patch);
    free(key);

    key = repeat("k", 129);
    patch = xasprintf("{'tags': {'%s': 'x'}}", key);
    char *field = xasprintf("tags.%s", key);
    expect_error(patch, field, "key must have 1 to 128 characters");
    free(field);
    free(patch);
    free(key);

    expect_error("{'tags': {'': 'x'}}", "tags.", "key must have 1 to 128 characters");
}

static void test_tag_values(void **state)
{
    char *value = repeat("\xe2\x82\xac", 256), *patch;
    (void)state;

    patch = xasprintf("{'tags': {'team': '%s'}}", value);
    expect_valid(patch);
    free(patch);
    free(value);

    value = repeat("v", 257);
    patch = xasprintf("{'tags': {'team': '%s'}}", value);
    expect_error(patch, "tags.team", "must have at most 256 characters");
    free(patch);
    free(value);

    expect_field("{'tags': {'team': ''}}", "tags", "{'team': ''}");
    expect_error("{'tags': {'team': 1}}", "tags.team", "must be a string");
    expect_error("{'tags': {'team': ['a']}}", "tags.team", "must be a string");
}

/* ---- Merge patch ------------------------------------------------------- */

/* Apply patch to target (JSON texts) and compare with want. */
static void expect_merge(const char *target, const char *patch, const char *want)
{
    json_t *t = parse(target), *p = parse(patch), *w = parse(want);
    json_t *t_before = json_deep_copy(t), *p_before = json_deep_copy(p);
    json_t *got = cspec_merge_patch(t, p);

    if (!json_equal(got, w))
        fail_msg("%s + %s = %s, want %s", target, patch, dump(got), want);
    /* The inputs are left alone. */
    assert_true(json_equal(t, t_before));
    assert_true(json_equal(p, p_before));
    json_decref(t);
    json_decref(p);
    json_decref(w);
    json_decref(t_before);
    json_decref(p_before);
    json_decref(got);
}

/* The examples of RFC 7396, appendix A. */
static void test_merge_patch_rfc_examples(void **state)
{
    (void)state;
    expect_merge("{'a':'b'}", "{'a':'c'}", "{'a':'c'}");
    expect_merge("{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}");
    expect_merge("{'a':'b'}", "{'a':null}", "{}");
    expect_merge("{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}");
    expect_merge("{'a':['b']}", "{'a':'c'}", "{'a':'c'}");
    expect_merge("{'a':'c'}", "{'a':['b']}", "{'a':['b']}");
    expect_merge("{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}");
    expect_merge("{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}");
    expect_merge("['a','b']", "['c','d']", "['c','d']");
    expect_merge("{'a':'b'}", "['c']", "['c']");
    expect_merge("{'a':'foo'}", "null", "null");
    expect_merge("{'a':'foo'}", "'bar'", "'bar'");
    expect_merge("{'e':null}", "{'a':1}", "{'e':null,'a':1}");
    expect_merge("[1,2]", "{'a':'b','c':null}", "{'a':'b'}");
    expect_merge("{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}");
}

static void test_merge_patch_on_a_spec(void **state)
{
    json_t *patch = parse("{'x': 1}");
    json_t *got = cspec_merge_patch(NULL, patch);
    (void)state;

    assert_true(json_equal(got, patch));
    json_decref(got);
    json_decref(patch);
    expect_merge("{'tags': {'team': 'checkout', 'env': 'prod'}, 'description': 'd'}",
                 "{'tags': {'env': null, 'owner': 'ann'}, 'description': null}",
                 "{'tags': {'team': 'checkout', 'owner': 'ann'}}");
    expect_merge("{'parameters': {'timeout': '0'}}", "{'parameters': {}}",
                 "{'parameters': {'timeout': '0'}}");
    expect_merge("{'parameters': {'timeout': '0'}}", "{'parameters': null}", "{}");
    /* A patch of the stored spec, normalized again, restores removed
     * fields' defaults. */
    expect_field("{'description': 'x'}", "description", "'x'");
    expect_field("{'description': null}", "id", "'orders'");
}

/* ---- Diff and change classes ------------------------------------------- */

/* Diff two JSON texts; changed must be the names as a JSON array. */
static void expect_diff(const char *before, const char *after, const char *changed)
{
    json_t *b = parse(before), *a = parse(after), *want = parse(changed);
    json_t *got = json_array();

    assert_int_equal(cspec_diff(b, a, got), json_array_size(want) > 0);
    if (!json_equal(got, want))
        fail_msg("diff %s %s = %s", before, after, dump(got));
    json_decref(b);
    json_decref(a);
    json_decref(want);
    json_decref(got);
}

static void test_diff(void **state)
{
    (void)state;
    expect_diff("{}", "{}", "[]");
    expect_diff("{'a': 1, 'b': {'c': [1, 2]}}", "{'b': {'c': [1, 2]}, 'a': 1}", "[]");
    expect_diff("{'a': 1, 'b': 2, 'c': 3}", "{'a': 1, 'b': 3, 'c': 4}", "['b', 'c']");
    expect_diff("{'tags': {'a': 'b'}}", "{'tags': {'a': 'c', 'd': 'e'}}", "['tags']");
    expect_diff("{'a': 1, 'b': 2}", "{'b': 2}", "['a']");
    expect_diff("{'b': 2}", "{'a': null, 'b': 2}", "['a']");
    expect_diff("{'a': 1}", "{'a': 1.0}", "['a']");
    expect_diff("{'a': 1, 'z': 1}", "{'y': 1, 'a': 2, 'x': 1}", "['a', 'z', 'y', 'x']");
}

/* Appends after what the array held, and says whether it appended. */
static void test_diff_appends(void **state)
{
    json_t *changed = parse("['earlier']");
    json_t *a = parse("{'a': 1}");
    (void)state;

    assert_false(cspec_diff(a, a, changed));
    assert_int_equal(json_array_size(changed), 1);
    json_decref(a);
    json_decref(changed);
}

/* A PATCH as the REST handler runs it: merge, normalize, diff. */
static void test_patch_flow(void **state)
{
    json_t *errors, *stored = normalize_patched("{'tags': {'team': 'checkout'}}", &errors);
    json_t *patch = parse("{'tags': {'team': null, 'env': 'prod'}, 'num_shards': 2}");
    json_t *merged = cspec_merge_patch(stored, patch);
    json_t *spec = cspec_normalize(merged, errors);
    json_t *changed = json_array();
    (void)state;

    assert_non_null(spec);
    assert_true(cspec_diff(stored, spec, changed));
    assert_string_equal(dump(changed), "[\"num_shards\",\"tags\"]");
    assert_string_equal(dump(json_object_get(spec, "tags")), "{\"env\":\"prod\"}");
    json_decref(stored);
    json_decref(patch);
    json_decref(merged);
    json_decref(spec);
    json_decref(changed);
    json_decref(errors);
}

/* ---- Slots ------------------------------------------------------------- */

static void expect_slots(int shards, int shard, int first, int last)
{
    int f = -1, l = -1;

    cspec_split_slots(shards, shard, &f, &l);
    if (f != first || l != last)
        fail_msg("%d shards, shard %d: %d-%d, want %d-%d", shards, shard, f, l, first, last);
}

static void test_slots_small(void **state)
{
    (void)state;
    expect_slots(1, 0, 0, 16383);
    expect_slots(2, 0, 0, 8191);
    expect_slots(2, 1, 8192, 16383);
    /* As valkey-cli --cluster create splits them. */
    expect_slots(3, 0, 0, 5460);
    expect_slots(3, 1, 5461, 10922);
    expect_slots(3, 2, 10923, 16383);
    expect_slots(500, 0, 0, 32);
    expect_slots(500, 499, 16351, 16383);
    expect_slots(1000, 0, 0, 15);
    expect_slots(1000, 999, 16368, 16383);
    expect_slots(16384, 16383, 16383, 16383);
}

/* For every allowed shard count: contiguous, each slot exactly once, sizes
 * within one of each other. */
static void test_slots_cover_exactly_once(void **state)
{
    (void)state;
    for (int shards = 1; shards <= CSPEC_SHARDS_MAX; shards++) {
        int next = 0, min = CSPEC_SLOTS, max = 0;
        for (int shard = 0; shard < shards; shard++) {
            int first, last;
            cspec_split_slots(shards, shard, &first, &last);
            assert_int_equal(first, next);
            assert_true(last >= first);
            min = last - first + 1 < min ? last - first + 1 : min;
            max = last - first + 1 > max ? last - first + 1 : max;
            next = last + 1;
        }
        assert_int_equal(next, CSPEC_SLOTS);
        assert_true(max - min <= 1);
    }
}

/* valkey-cli's loop (clusterManagerCommandCreate), transcribed. Its single
 * precision drifts from 78 shards on; up to there the split is the same. */
static void test_slots_match_valkey_cli(void **state)
{
    (void)state;
    for (int shards = 1; shards <= 77; shards++) {
        float per_node = CSPEC_SLOTS / (float)shards, cursor = 0.0f;
        long first = 0;
        for (int i = 0; i < shards; i++) {
            float x = cursor + per_node - 1;
            long last = (long)((double)x + 0.5); /* lround(), x being positive */
            if (last > CSPEC_SLOTS || i == shards - 1)
                last = CSPEC_SLOTS - 1;
            expect_slots(shards, i, (int)first, (int)last);
            first = last + 1;
            cursor += per_node;
        }
    }
}

static void test_window_next_open(void **state)
{
    (void)state;
    int start, end;
    char msg[128];
    /* 2026-11-29 was a Sunday; 05:00 UTC is 1795928400. */
    const long long sun0500 = 1795928400;

    assert_true(cspec_window_parse("sun:05:00-sun:06:00", &start, &end, msg, sizeof(msg)));
    assert_int_equal(cspec_window_next_open(start, end, sun0500), sun0500); /* opens now */
    assert_int_equal(cspec_window_next_open(start, end, sun0500 + 3599), sun0500 + 3599);
    /* closed at 06:00: next Sunday */
    assert_int_equal(cspec_window_next_open(start, end, sun0500 + 3600), sun0500 + 7 * 86400);
    /* a minute before, with seconds: at 05:00:00 */
    assert_int_equal(cspec_window_next_open(start, end, sun0500 - 61), sun0500);
    /* Monday noon: six days less seventeen hours on */
    assert_int_equal(cspec_window_next_open(start, end, sun0500 + 7 * 3600), sun0500 + 7 * 86400);
    /* a window over the week's end, sun:23:00-mon:01:00, open at 00:30 Monday */
    assert_true(cspec_window_parse("sun:23:00-mon:01:00", &start, &end, msg, sizeof(msg)));
    long long mon0030 = sun0500 + 19 * 3600 + 1800;
    assert_int_equal(cspec_window_next_open(start, end, mon0030), mon0030);
    assert_int_equal(cspec_window_next_open(start, end, mon0030 + 1800),
                     sun0500 + 18 * 3600 + 7 * 86400);
}

/* Daily snapshot windows: at least an hour, wrapping midnight, and open
 * from their start for their length every day. */
static void test_daily_window(void **state)
{
    int start = -1, end = -1;
    char msg[128];
    (void)state;

    assert_true(cspec_daily_window_parse("03:00-04:00", &start, &end, msg, sizeof(msg)));
    assert_int_equal(start, 180);
    assert_int_equal(end, 240);
    assert_true(cspec_daily_window_parse("23:30-00:30", &start, &end, msg, sizeof(msg)));
    assert_true(cspec_daily_window_parse("05:00-05:00", &start, &end, msg, sizeof(msg)));
    assert_false(cspec_daily_window_parse("03:00-03:59", &start, &end, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "at least 60 minutes"));
    assert_false(cspec_daily_window_parse("24:00-01:00", &start, &end, msg, sizeof(msg)));
    assert_false(cspec_daily_window_parse("3:00-04:00", &start, &end, msg, sizeof(msg)));
    assert_false(cspec_daily_window_parse("03:00-04:00 ", &start, &end, msg, sizeof(msg)));
    assert_false(cspec_daily_window_parse("", &start, &end, msg, sizeof(msg)));

    long long day = 20000LL * 86400; /* a midnight, UTC */
    assert_int_equal(cspec_daily_window_opened(180, 240, day + 3 * 3600), day + 3 * 3600);
    assert_int_equal(cspec_daily_window_opened(180, 240, day + 3 * 3600 + 59 * 60 + 59),
                     day + 3 * 3600);
    assert_int_equal(cspec_daily_window_opened(180, 240, day + 4 * 3600), -1);
    assert_int_equal(cspec_daily_window_opened(180, 240, day + 2 * 3600), -1);
    /* 23:30-00:30: open across midnight, from the day before's 23:30. */
    assert_int_equal(cspec_daily_window_opened(1410, 30, day + 10 * 60), day - 30 * 60);
    assert_int_equal(cspec_daily_window_opened(1410, 30, day - 10 * 60), day - 30 * 60);
    /* A whole day: always open, since the last start. */
    assert_int_equal(cspec_daily_window_opened(300, 300, day + 4 * 3600), day - 19 * 3600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daily_window),
        cmocka_unit_test(test_defaults_filled_in_spec_order),
        cmocka_unit_test(test_full_body_kept_as_sent),
        cmocka_unit_test(test_every_field_but_auth_token_stored),
        cmocka_unit_test(test_normalize_is_idempotent),
        cmocka_unit_test(test_body_must_be_object),
        cmocka_unit_test(test_required_fields),
        cmocka_unit_test(test_unknown_field),
        cmocka_unit_test(test_appends_to_existing_errors),
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_id_invalid),
        cmocka_unit_test(test_description),
        cmocka_unit_test(test_engine_and_version),
        cmocka_unit_test(test_node_type),
        cmocka_unit_test(test_cluster_mode),
        cmocka_unit_test(test_num_shards),
        cmocka_unit_test(test_replicas_per_shard),
        cmocka_unit_test(test_flags_must_be_booleans),
        cmocka_unit_test(test_auth_token),
        cmocka_unit_test(test_failover_defaults),
        cmocka_unit_test(test_shards_when_disabled),
        cmocka_unit_test(test_cluster_mode_needs_failover),
        cmocka_unit_test(test_cluster_mode_needs_a_replica),
        cmocka_unit_test(test_failover_needs_a_replica),
        cmocka_unit_test(test_multi_az_needs_failover),
        cmocka_unit_test(test_rules_skip_invalid_fields),
        cmocka_unit_test(test_all_failures_reported),
        cmocka_unit_test(test_window_in_spec),
        cmocka_unit_test(test_window_parse_valid),
        cmocka_unit_test(test_window_parse_shape),
        cmocka_unit_test(test_window_parse_fields),
        cmocka_unit_test(test_window_parse_length),
        cmocka_unit_test(test_parameters_valid),
        cmocka_unit_test(test_parameters_values_are_strings),
        cmocka_unit_test(test_parameters_allowlist),
        cmocka_unit_test(test_parameters_per_engine_line),
        cmocka_unit_test(test_parameters_alias_twice),
        cmocka_unit_test(test_parameters_cairn_settings),
        cmocka_unit_test(test_policy_message_matches_renderer),
        cmocka_unit_test(test_parameters_with_invalid_engine),
        cmocka_unit_test(test_tags_count),
        cmocka_unit_test(test_tag_keys),
        cmocka_unit_test(test_tag_values),
        cmocka_unit_test(test_merge_patch_rfc_examples),
        cmocka_unit_test(test_merge_patch_on_a_spec),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_diff_appends),
        cmocka_unit_test(test_patch_flow),
        cmocka_unit_test(test_window_next_open),
        cmocka_unit_test(test_slots_small),
        cmocka_unit_test(test_slots_cover_exactly_once),
        cmocka_unit_test(test_slots_match_valkey_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
