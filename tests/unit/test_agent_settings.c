/* test_agent_settings.c -- cairn-agent settings from flags, environment and
 * config file, and their precedence (agent/settings.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "settings.h"

static const char *const variables[] = {
    "CAIRN_AGENT_CONTROL_PLANE",  "CAIRN_AGENT_BOOTSTRAP_TOKEN", "CAIRN_AGENT_AZ",
    "CAIRN_AGENT_DATA_DIR",       "CAIRN_AGENT_PORTS",           "CAIRN_AGENT_ADDRESS",
    "CAIRN_AGENT_VCPUS",          "CAIRN_AGENT_MEMORY_MIB",      "CAIRN_AGENT_NAME",
    "CAIRN_AGENT_LOG_LEVEL",      "CAIRN_AGENT_ENGINE_PATH",     "CAIRN_AGENT_METRICS_INTERVAL",
    "CAIRN_AGENT_METRICS_PERIOD",
};

static const struct agent_machine machine = {.hostname = "box1", .vcpus = 8, .memory_mib = 32000};

/* The four settings without defaults, as a config file would give them. */
static const char *const minimal = "control-plane = http://127.0.0.1:8080/\n"
                                   "az = az-a\n"
                                   "data-dir = /var/lib/cairn-agent\n"
                                   "ports = 7000-7099\n";

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
        unsetenv(variables[i]);
    return 0;
}

static void set_flag(struct agent_settings_layer *l, const char *key, const char *value)
{
    char err[256];
    if (!agent_settings_set(l, key, value, "--test", err, sizeof(err)))
        fail_msg("agent_settings_set(%s) failed: %s", key, err);
}

static void load_text(struct agent_settings_layer *l, const char *text)
{
    char err[256];
    if (!agent_settings_from_text(l, text, "agent.conf", err, sizeof(err)))
        fail_msg("agent_settings_from_text failed: %s", err);
}

static void load_env(struct agent_settings_layer *l)
{
    char err[256];
    if (!agent_settings_from_env(l, err, sizeof(err)))
        fail_msg("agent_settings_from_env failed: %s", err);
}

/* Resolve n layers on the test machine, expecting success. */
static void resolve_ok(struct agent_settings *s, const struct agent_settings_layer *layers,
                       size_t n)
{
    char err[256];
    if (!agent_settings_resolve(s, layers, n, &machine, err, sizeof(err)))
        fail_msg("agent_settings_resolve failed: %s", err);
}

static void test_ports(void **state)
{
    int lo = 0, hi = 0;

    (void)state;
    assert_true(agent_settings_parse_ports("7000-7099", &lo, &hi));
    assert_int_equal(lo, 7000);
    assert_int_equal(hi, 7099);
    assert_true(agent_settings_parse_ports("1024-65535", &lo, &hi));
    assert_true(agent_settings_parse_ports("7000-7000", &lo, &hi));
    assert_int_equal(lo, hi);
    static const char *const bad[] = {"",          "7000",        "7000-",      "-7000",
                                      "7099-7000", "1023-2000",   "7000-65536", "7000-70x",
                                      "a-b",       "7000 - 7099", "+7000-7099"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        lo = hi = -1;
        if (agent_settings_parse_ports(bad[i], &lo, &hi))
            fail_msg("\"%s\" accepted as %d-%d", bad[i], lo, hi);
        assert_int_equal(lo, -1);
    }
}

static void test_file_syntax(void **state)
{
    struct agent_settings_layer l = {0};
    char err[256];

    (void)state;
    load_text(&l, "# agent settings\n\n   name   =  vm-1  \r\n"
                  "engine-path = /opt/a/valkey-server\n"
                  "engine-path=/opt/b/redis-server\n"
                  "bootstrap-token = abc=def\n");
    assert_string_equal(l.value[AGENT_SET_NAME], "vm-1");
    assert_string_equal(l.value[AGENT_SET_BOOTSTRAP_TOKEN], "abc=def"); /* split at the first = */
    assert_int_equal(l.n_engine_paths, 2);
    assert_string_equal(l.engine_paths[1], "/opt/b/redis-server");
    agent_settings_layer_free(&l);

    assert_false(
        agent_settings_from_text(&l, "name = a\nnonsense\n", "agent.conf", err, sizeof(err)));
    assert_string_equal(err, "agent.conf:2: expected 'key = value'");
    agent_settings_layer_free(&l);
    assert_false(agent_settings_from_text(&l, "\n\ncolour = red", "agent.conf", err, sizeof(err)));
    assert_string_equal(err, "agent.conf:3: unknown setting 'colour'");
    agent_settings_layer_free(&l);
}

static void test_defaults(void **state)
{
    struct agent_settings_layer l = {0};
    struct agent_settings s;

    (void)state;
    load_text(&l, minimal);
    resolve_ok(&s, &l, 1);
    assert_string_equal(s.control_plane, "http://127.0.0.1:8080"); /* trailing '/' dropped */
    assert_string_equal(s.address, "127.0.0.1");
    assert_string_equal(s.name, "box1");
    assert_int_equal(s.vcpus, 8);
    assert_int_equal(s.memory_mib, 32000);
    assert_int_equal(s.port_min, 7000);
    assert_int_equal(s.port_max, 7099);
    assert_int_equal(s.log_level, LOG_INFO);
    assert_null(s.bootstrap_token);
    assert_int_equal(s.n_engine_paths, 0);
    assert_int_equal(s.metrics_interval_s, 10);
    assert_int_equal(s.metrics_period_s, 60);
    agent_settings_free(&s);
    agent_settings_layer_free(&l);
}

static void test_metrics_settings(void **state)
{
    struct agent_settings_layer layers[3] = {{{0}}};
    struct agent_settings s;
    char err[256];

    (void)state;
    load_text(&layers[2], minimal);
    load_text(&layers[2], "metrics-interval = 5\nmetrics-period = 300\n");
    setenv("CAIRN_AGENT_METRICS_INTERVAL", "1", 1);
    setenv("CAIRN_AGENT_METRICS_PERIOD", "2", 1);
    load_env(&layers[1]);
    resolve_ok(&s, layers, 3);
    assert_int_equal(s.metrics_interval_s, 1); /* env > file */
    assert_int_equal(s.metrics_period_s, 2);
    agent_settings_free(&s);

    set_flag(&layers[0], "metrics-interval", "60");
    set_flag(&layers[0], "metrics-period", "60"); /* equal is a multiple */
    resolve_ok(&s, layers, 3);
    assert_int_equal(s.metrics_interval_s, 60);
    assert_int_equal(s.metrics_period_s, 60);
    agent_settings_free(&s);

    set_flag(&layers[0], "metrics-period", "90");
    assert_false(agent_settings_resolve(&s, layers, 3, &machine, err, sizeof(err)));
    assert_string_equal(err,
                        "metrics-period: expected a multiple of metrics-interval (60), got '90'");
    assert_null(s.control_plane);
    for (int i = 0; i < 3; i++)
        agent_settings_layer_free(&layers[i]);
}

static void test_precedence(void **state)
{
    struct agent_settings_layer layers[3] = {{{0}}};
    struct agent_settings s;

    (void)state;
    load_text(&layers[2], minimal);
    load_text(&layers[2], "name = from-file\naz = az-file\nvcpus = 2\nengine-path = /f/valkey\n");
    setenv("CAIRN_AGENT_NAME", "from-env", 1);
    setenv("CAIRN_AGENT_VCPUS", "3", 1);
    setenv("CAIRN_AGENT_ENGINE_PATH", "/e/valkey-server::/e/redis-server", 1);
    setenv("CAIRN_AGENT_ADDRESS", "", 1); /* empty counts as unset */
    load_env(&layers[1]);
    set_flag(&layers[0], "name", "from-flag");

    resolve_ok(&s, layers, 3);
    assert_string_equal(s.name, "from-flag"); /* flag > env > file */
    assert_int_equal(s.vcpus, 3);             /* env > file */
    assert_string_equal(s.az, "az-file");     /* file > nothing */
    assert_string_equal(s.address, "127.0.0.1");
    assert_int_equal(s.memory_mib, 32000); /* default */
    /* The engine-path list of the highest layer that has one, whole. */
    assert_int_equal(s.n_engine_paths, 2);
    assert_string_equal(s.engine_paths[0], "/e/valkey-server");
    assert_string_equal(s.engine_paths[1], "/e/redis-server");
    agent_settings_free(&s);

    set_flag(&layers[0], "engine-path", "/x/valkey-server");
    resolve_ok(&s, layers, 3);
    assert_int_equal(s.n_engine_paths, 1);
    assert_string_equal(s.engine_paths[0], "/x/valkey-server");
    agent_settings_free(&s);
    for (int i = 0; i < 3; i++)
        agent_settings_layer_free(&layers[i]);
}

/* Resolve minimal plus one flag; expect failure with err starting with want. */
static void expect_refused(const char *key, const char *value, const char *want)
{
    struct agent_settings_layer layers[2] = {{{0}}};
    struct agent_settings s;
    char err[256] = "";

    load_text(&layers[1], minimal);
    set_flag(&layers[0], key, value);
    if (agent_settings_resolve(&s, layers, 2, &machine, err, sizeof(err)))
        fail_msg("%s = '%s' accepted", key, value);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("%s = '%s': message \"%s\", expected it to start with \"%s\"", key, value, err,
                 want);
    assert_null(s.control_plane); /* nothing left allocated */
    for (int i = 0; i < 2; i++)
        agent_settings_layer_free(&layers[i]);
}

/* Several cairnd, each without a load balancer in front: kept in order,
 * each without its trailing '/'. */
static void test_several_control_planes(void **state)
{
    struct agent_settings_layer l = {0};
    struct agent_settings s;

    (void)state;
    load_text(&l, "control-plane = https://a:8443/,http://b//,https://c\n"
                  "az = az-a\ndata-dir = /var/lib/cairn-agent\nports = 7000-7099\n");
    resolve_ok(&s, &l, 1);
    assert_string_equal(s.control_plane, "https://a:8443,http://b,https://c");
    agent_settings_free(&s);
    agent_settings_layer_free(&l);
}

static void test_validation(void **state)
{
    static const struct {
        const char *key, *value, *want;
    } refused[] = {
        {"control-plane", "ftp://x", "control-plane: expected an http:// or https://"},
        {"control-plane", "http://a,", "control-plane: expected"},
        {"control-plane", "http://a,,http://b", "control-plane: expected"},
        {"control-plane", "http://a, http://b", "control-plane: expected"},
        {"control-plane", "http:///x", "control-plane: expected"},
        {"control-plane", "http://", "control-plane: expected"},
        {"control-plane", "http://a\x01b", "control-plane: expected"},
        {"control-plane",
         "http://1,http://2,http://3,http://4,http://5,http://6,http://7,http://8,http://9,"
         "http://10,http://11,http://12,http://13,http://14,http://15,http://16,http://17",
         "control-plane: expected"},
        {"az", "az a", "az: expected 1 to 32 of [A-Za-z0-9._-]"},
        {"az", "a23456789012345678901234567890123", "az: expected"},
        {"name", "vm/1", "name: expected 1 to 63"},
        {"ports", "80-90", "ports: expected MIN-MAX"},
        {"vcpus", "0", "vcpus: expected an integer from 1 to 1024"},
        {"vcpus", "2x", "vcpus: expected"},
        {"memory-mib", "63", "memory-mib: expected an integer from 64 to 16777216"},
        {"log-level", "loud", "log-level: expected debug, info, warn or error"},
        {"metrics-interval", "0", "metrics-interval: expected seconds, an integer from 1 to 3600"},
        {"metrics-interval", "3601", "metrics-interval: expected"},
        {"metrics-period", "7200", "metrics-period: expected seconds, an integer from 1 to 3600"},
        {"metrics-period", "15", "metrics-period: expected a multiple of metrics-interval (10)"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        expect_refused(refused[i].key, refused[i].value, refused[i].want);
}

static void test_required(void **state)
{
    struct agent_settings_layer l = {0};
    struct agent_settings s;
    char err[256];

    (void)state;
    load_text(&l, "control-plane = http://x\naz = a\nports = 7000-7001\n");
    assert_false(agent_settings_resolve(&s, &l, 1, &machine, err, sizeof(err)));
    assert_string_equal(err, "data-dir is required (flag --data-dir, variable "
                             "CAIRN_AGENT_DATA_DIR or the config file)");
    agent_settings_layer_free(&l);

    /* A host name that is not a valid agent name needs --name. */
    struct agent_machine odd = machine;
    odd.hostname[0] = '\0';
    load_text(&l, minimal);
    assert_false(agent_settings_resolve(&s, &l, 1, &odd, err, sizeof(err)));
    assert_non_null(strstr(err, "--name"));
    agent_settings_layer_free(&l);
}

static void test_machine(void **state)
{
    struct agent_machine m;

    (void)state;
    agent_settings_machine(&m);
    assert_true(m.vcpus >= 1);
    assert_true(m.memory_mib >= 64);
}

/* Every setting is a getopt option agent_settings_set() knows, in the
 * usage flags, and read from CAIRN_AGENT_<FLAG> as the usage says. */
static void test_options_and_usage(void **state)
{
    static const struct option version[] = {{"version", no_argument, NULL, 'V'}};
    struct option *o = agent_settings_options(version, 1);
    struct agent_settings_layer l = {0};
    struct usage u;
    char err[256], word[96], env[96], *text = NULL;
    size_t n = 0, size;

    (void)state;
    FILE *out = open_memstream(&text, &size);
    usage_start(&u, out, "usage:", 7);
    agent_settings_usage(&u, AGENT_USAGE_FLAGS);
    agent_settings_usage(&u, AGENT_USAGE_VARIABLES);
    agent_settings_usage(&u, AGENT_USAGE_DEFAULTS);
    usage_end(&u);
    fclose(out);
    /* One line: a word is where it is whatever the wrapping. */
    size_t w = 0;
    for (size_t r = 0; text[r] != '\0'; r++) {
        if (text[r] == '\n')
            while (text[r + 1] == ' ')
                r++;
        text[w++] = text[r] == '\n' ? ' ' : text[r];
    }
    text[w] = '\0';
    for (; o[n].name != NULL && o[n].val == 0; n++) {
        assert_int_equal(o[n].has_arg, required_argument);
        if (!agent_settings_set(&l, o[n].name, "x", "--test", err, sizeof(err)))
            fail_msg("--%s: %s", o[n].name, err);
        snprintf(word, sizeof(word), "--%s ", o[n].name);
        size_t e = (size_t)snprintf(env, sizeof(env), "CAIRN_AGENT_");
        for (const char *c = o[n].name; *c != '\0' && e + 1 < sizeof(env); c++)
            env[e++] = *c == '-' ? '_' : (char)(*c - 'a' + 'A');
        env[e] = '\0';
        if (strstr(text, word) == NULL || strstr(text, env) == NULL)
            fail_msg("the usage lacks %s or %s: %s", word, env, text);
    }
    assert_int_equal(n, AGENT_SET_COUNT);
    assert_string_equal(o[n].name, "version");
    assert_null(o[n + 1].name);
    /* Required settings bare, the others in brackets; the defaults the
     * table has, with their values. */
    assert_non_null(strstr(text, "usage: --control-plane URL [--control-plane-ca-file PATH]"));
    assert_non_null(strstr(text, "[--engine-path PATH]..."));
    assert_non_null(strstr(text, "CAIRN_AGENT_ENGINE_PATH (colon-separated),"));
    assert_non_null(strstr(text, "address 127.0.0.1, log-level info, metrics-interval 10,"));
    free(o);
    free(text);
    agent_settings_layer_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ports),
        cmocka_unit_test(test_file_syntax),
        cmocka_unit_test_setup_teardown(test_defaults, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_precedence, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_metrics_settings, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_several_control_planes, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_validation, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_required, clear_env, clear_env),
        cmocka_unit_test(test_machine),
        cmocka_unit_test(test_options_and_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
