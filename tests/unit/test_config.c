/* test_config.c -- cairnd settings from flags and the environment (controlplane/config.h). */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

static const char *const variables[] = {
    "CAIRN_LISTEN",
    "CAIRN_DATABASE_URL",
    "CAIRN_HTTP_THREADS",
    "CAIRN_DB_POOL_SIZE",
    "CAIRN_MAX_BODY_BYTES",
    "CAIRN_SHUTDOWN_TIMEOUT",
    "CAIRN_SENTINEL_MAX_CLIENTS",
    "CAIRN_WEB_ROOT",
};

/* Start and end every test with no CAIRN_* variable set, whatever the
 * environment of the test run. */
static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
        unsetenv(variables[i]);
    return 0;
}

/* Assert that text is accepted as host and port. */
static void expect_listen(const char *text, const char *host, int port)
{
    struct config cfg = {0};
    if (!config_parse_listen(&cfg, text))
        fail_msg("config_parse_listen(\"%s\") refused it", text);
    assert_string_equal(cfg.listen_host, host);
    assert_int_equal(cfg.listen_port, port);
}

/* Assert that text is refused and leaves cfg as it was. */
static void expect_listen_refused(const char *text)
{
    struct config cfg = {.listen_host = "keep", .listen_port = 1234};
    if (config_parse_listen(&cfg, text))
        fail_msg("config_parse_listen(\"%s\") accepted it as host \"%s\" port %d", text,
                 cfg.listen_host, cfg.listen_port);
    assert_string_equal(cfg.listen_host, "keep");
    assert_int_equal(cfg.listen_port, 1234);
}

static void test_listen_valid(void **state)
{
    (void)state;
    expect_listen("127.0.0.1:8080", "127.0.0.1", 8080);
    expect_listen("[::1]:9000", "::1", 9000);
    expect_listen("localhost:0", "localhost", 0);
    expect_listen("0.0.0.0:65535", "0.0.0.0", 65535);
    expect_listen("[fe80::1%eth0]:443", "fe80::1%eth0", 443);
}

static void test_listen_invalid(void **state)
{
    char long_host[80];

    (void)state;
    expect_listen_refused("nocolon");
    expect_listen_refused("");
    expect_listen_refused(":80");
    expect_listen_refused("host:");
    expect_listen_refused("host:70000");
    expect_listen_refused("host:65536");
    expect_listen_refused("host:-1");
    expect_listen_refused("host:80x");
    expect_listen_refused("host:http");
    expect_listen_refused("[::1:80");
    expect_listen_refused("[]:80");
    expect_listen_refused("[::1]:");
    /* The host must fit listen_host with its terminator. */
    memset(long_host, 'h', 64);
    strcpy(long_host + 64, ":80");
    expect_listen_refused(long_host);
}

static void test_listen_longest_host(void **state)
{
    char text[80], host[64];

    (void)state;
    memset(host, 'h', 63);
    host[63] = '\0';
    snprintf(text, sizeof(text), "%s:80", host);
    expect_listen(text, host, 80);
}

static void test_env_defaults(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    memset(&cfg, 0x5a, sizeof(cfg));
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_string_equal(cfg.listen_host, "127.0.0.1");
    assert_int_equal(cfg.listen_port, 8080);
    assert_null(cfg.database_url);
    assert_int_equal(cfg.http_threads, 4);
    /* 0: main() sizes the pool from the thread count. */
    assert_int_equal(cfg.db_pool_size, 0);
    assert_int_equal(cfg.max_body_bytes, 1 << 20);
    assert_false(cfg.no_migrate);
    assert_int_equal(cfg.shutdown_timeout_s, 10);
    assert_int_equal(cfg.sentinel_max_clients, 1024);
    /* NULL: main() takes the web/ beside the binary. */
    assert_null(cfg.web_root);
}

static void test_env_overrides(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    setenv("CAIRN_LISTEN", "[::1]:9000", 1);
    setenv("CAIRN_DATABASE_URL", "postgres://cairn@localhost/cairn", 1);
    setenv("CAIRN_HTTP_THREADS", "8", 1);
    setenv("CAIRN_DB_POOL_SIZE", "16", 1);
    setenv("CAIRN_MAX_BODY_BYTES", "2048", 1);
    setenv("CAIRN_SHUTDOWN_TIMEOUT", "0", 1);
    setenv("CAIRN_WEB_ROOT", "/srv/cairn/web", 1);
    if (!config_from_env(&cfg, err, sizeof(err)))
        fail_msg("config_from_env refused good values: %s", err);
    assert_string_equal(cfg.listen_host, "::1");
    assert_int_equal(cfg.listen_port, 9000);
    assert_string_equal(cfg.database_url, "postgres://cairn@localhost/cairn");
    assert_int_equal(cfg.http_threads, 8);
    assert_int_equal(cfg.db_pool_size, 16);
    assert_int_equal(cfg.max_body_bytes, 2048);
    assert_int_equal(cfg.shutdown_timeout_s, 0);
    assert_string_equal(cfg.web_root, "/srv/cairn/web");
}

static void test_env_range_limits(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    setenv("CAIRN_HTTP_THREADS", "256", 1);
    setenv("CAIRN_DB_POOL_SIZE", "1", 1);
    setenv("CAIRN_MAX_BODY_BYTES", "67108864", 1);
    setenv("CAIRN_SHUTDOWN_TIMEOUT", "3600", 1);
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_int_equal(cfg.http_threads, 256);
    assert_int_equal(cfg.db_pool_size, 1);
    assert_int_equal(cfg.max_body_bytes, 64 << 20);
    assert_int_equal(cfg.shutdown_timeout_s, 3600);
}

static void test_env_empty_is_unset(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    setenv("CAIRN_HTTP_THREADS", "", 1);
    setenv("CAIRN_LISTEN", "", 1);
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_int_equal(cfg.http_threads, 4);
    assert_int_equal(cfg.listen_port, 8080);
}

static void test_env_bad_values(void **state)
{
    static const struct {
        const char *name, *value;
    } bad[] = {
        {"CAIRN_HTTP_THREADS", "0"},         {"CAIRN_HTTP_THREADS", "257"},
        {"CAIRN_HTTP_THREADS", "abc"},       {"CAIRN_HTTP_THREADS", "8x"},
        {"CAIRN_HTTP_THREADS", "-1"},        {"CAIRN_HTTP_THREADS", "4.5"},
        {"CAIRN_DB_POOL_SIZE", "0"},         {"CAIRN_DB_POOL_SIZE", "1025"},
        {"CAIRN_MAX_BODY_BYTES", "63"},      {"CAIRN_MAX_BODY_BYTES", "67108865"},
        {"CAIRN_MAX_BODY_BYTES", "1M"},      {"CAIRN_SHUTDOWN_TIMEOUT", "-1"},
        {"CAIRN_SHUTDOWN_TIMEOUT", "3601"},  {"CAIRN_LISTEN", "nocolon"},
        {"CAIRN_LISTEN", "host:70000"},      {"CAIRN_HTTP_THREADS", "99999999999999999999"},
        {"CAIRN_SENTINEL_MAX_CLIENTS", "3"}, {"CAIRN_SENTINEL_MAX_CLIENTS", "65537"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct config cfg;
        char err[256] = "";
        setenv(bad[i].name, bad[i].value, 1);
        bool ok = config_from_env(&cfg, err, sizeof(err));
        unsetenv(bad[i].name);
        if (ok)
            fail_msg("config_from_env accepted %s=%s", bad[i].name, bad[i].value);
        if (strstr(err, bad[i].name) == NULL || strstr(err, bad[i].value) == NULL)
            fail_msg("message for %s=%s does not name both: \"%s\"", bad[i].name, bad[i].value,
                     err);
    }
}

static void test_set_flags(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_true(config_set(&cfg, "listen", "[::1]:9000", err, sizeof(err)));
    assert_string_equal(cfg.listen_host, "::1");
    assert_int_equal(cfg.listen_port, 9000);
    assert_true(config_set(&cfg, "http-threads", "8", err, sizeof(err)));
    assert_int_equal(cfg.http_threads, 8);
    assert_true(config_set(&cfg, "db-pool-size", "3", err, sizeof(err)));
    assert_int_equal(cfg.db_pool_size, 3);
    assert_true(config_set(&cfg, "max-body-bytes", "4096", err, sizeof(err)));
    assert_int_equal(cfg.max_body_bytes, 4096);
    assert_true(config_set(&cfg, "shutdown-timeout", "30", err, sizeof(err)));
    assert_int_equal(cfg.shutdown_timeout_s, 30);
    assert_true(config_set(&cfg, "database-url", "postgres:///cairn", err, sizeof(err)));
    assert_string_equal(cfg.database_url, "postgres:///cairn");
    assert_true(config_set(&cfg, "sentinel-max-clients", "300", err, sizeof(err)));
    assert_int_equal(cfg.sentinel_max_clients, 300);
    assert_true(config_set(&cfg, "web-root", "./web", err, sizeof(err)));
    assert_string_equal(cfg.web_root, "./web");
    /* Empty: no console at all. */
    assert_true(config_set(&cfg, "web-root", "", err, sizeof(err)));
    assert_string_equal(cfg.web_root, "");
}

static void test_set_flag_overrides_env(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    setenv("CAIRN_HTTP_THREADS", "8", 1);
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_int_equal(cfg.http_threads, 8);
    assert_true(config_set(&cfg, "http-threads", "2", err, sizeof(err)));
    assert_int_equal(cfg.http_threads, 2);
}

static void test_listen_port_digits_only(void **state)
{
    (void)state;
    expect_listen_refused("host: 80");
    expect_listen_refused("host:+80");
    expect_listen_refused("host:-1");
}

static void test_set_unknown_flag(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_false(config_set(&cfg, "threads", "8", err, sizeof(err)));
    assert_string_equal(err, "unknown option --threads");
    /* Flags are named without dashes and without the variable prefix. */
    assert_false(config_set(&cfg, "--listen", "127.0.0.1:1", err, sizeof(err)));
    assert_false(config_set(&cfg, "CAIRN_LISTEN", "127.0.0.1:1", err, sizeof(err)));
    assert_int_equal(cfg.listen_port, 8080);
}

static void test_set_bad_value(void **state)
{
    struct config cfg;
    char err[256] = "";

    (void)state;
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    assert_false(config_set(&cfg, "http-threads", "lots", err, sizeof(err)));
    assert_non_null(strstr(err, "--http-threads"));
    assert_non_null(strstr(err, "lots"));
    assert_int_equal(cfg.http_threads, 4);
    assert_false(config_set(&cfg, "listen", "nocolon", err, sizeof(err)));
    assert_non_null(strstr(err, "--listen"));
    assert_non_null(strstr(err, "nocolon"));
    assert_string_equal(cfg.listen_host, "127.0.0.1");
}

/* Every setting is a getopt option config_set() knows, shown in the usage
 * flags, and (with a value) read from CAIRN_<FLAG> as the usage says. */
static void test_options_and_usage(void **state)
{
    static const struct option help[] = {{"help", no_argument, NULL, 'h'}};
    struct option *o = config_options(help, 1);
    struct config cfg;
    struct usage u;
    char err[256], word[96], env[96], *flags = NULL, *vars = NULL;
    size_t n = 0, size;

    (void)state;
    FILE *out = open_memstream(&flags, &size);
    usage_start(&u, out, "usage:", 7);
    config_usage_flags(&u);
    usage_end(&u);
    fclose(out);
    out = open_memstream(&vars, &size);
    config_usage_env(out);
    fclose(out);
    assert_true(config_from_env(&cfg, err, sizeof(err)));
    for (; o[n].name != NULL && o[n].val == 0; n++) {
        snprintf(word, sizeof(word), o[n].has_arg ? "[--%s " : "[--%s]", o[n].name);
        if (strstr(flags, word) == NULL)
            fail_msg("the usage lacks %s: %s", word, flags);
        if (!config_set(&cfg, o[n].name, o[n].has_arg ? "" : NULL, err, sizeof(err)) &&
            strstr(err, "unknown option") != NULL)
            fail_msg("--%s is an option config_set() does not know", o[n].name);
        if (!o[n].has_arg)
            continue;
        size_t e = (size_t)snprintf(env, sizeof(env), "CAIRN_");
        for (const char *c = o[n].name; *c != '\0' && e + 1 < sizeof(env); c++)
            env[e++] = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
        env[e] = '\0';
        if (strstr(vars, env) == NULL)
            fail_msg("the usage does not name %s for --%s: %s", env, o[n].name, vars);
    }
    assert_true(n >= 19);
    assert_string_equal(o[n].name, "help");
    assert_null(o[n + 1].name);
    assert_true(cfg.no_migrate);
    free(o);
    free(flags);
    free(vars);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listen_valid, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_listen_invalid, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_listen_longest_host, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_defaults, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_overrides, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_range_limits, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_empty_is_unset, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_bad_values, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_set_flags, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_set_flag_overrides_env, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_set_unknown_flag, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_set_bad_value, clear_env, clear_env),
        cmocka_unit_test(test_listen_port_digits_only),
        cmocka_unit_test_setup_teardown(test_options_and_usage, clear_env, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
