/* test_config_render.c -- engine configuration files rendered from a node's
 * spec (engine/engine_config.h): every directive, the memory arithmetic,
 * quoting, and the parameter allowlist. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_config.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* A spec with the defaults and the fields every node has. */
static struct engine_config_spec base(enum engine_kind kind, const char *line)
{
    struct engine_config_spec s;

    engine_config_defaults(&s);
    s.kind = kind;
    s.line = line;
    s.node_id = "n1";
    s.port = 7001;
    s.bind = "127.0.0.1";
    s.data_dir = "/var/lib/cairn/n1";
    s.memory_mib = 512;
    return s;
}

/* Render spec or fail the test with the error. The caller frees. */
static char *render_ok(const struct engine_config_spec *spec)
{
    char err[512] = "";
    char *text = engine_config_render(spec, err, sizeof(err));
    if (text == NULL)
        fail_msg("engine_config_render refused the spec: %s", err);
    return text;
}

/* Assert that rendering fails with a message containing want. */
static void expect_refused(const struct engine_config_spec *spec, const char *want)
{
    char err[512] = "";
    char *text = engine_config_render(spec, err, sizeof(err));
    if (text != NULL) {
        fprintf(stderr, "%s", text);
        free(text);
        fail_msg("engine_config_render accepted a spec it should refuse (%s)", want);
    }
    if (strstr(err, want) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
    if (strchr(err, '\n') != NULL)
        fail_msg("error \"%s\" has a newline", err);
}

/* Whether text has line (without its newline) as one whole line. */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
    }
    return false;
}

static void expect_line(const char *text, const char *line)
{
    if (!has_line(text, line))
        fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void expect_no_line_starting(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, prefix, n) == 0)
            fail_msg("unexpected line starting \"%s\" in:\n%s", prefix, text);
    }
}

/* ---- Defaults and sizing ----------------------------------------------- */

static void test_defaults(void **state)
{
    struct engine_config_spec s;

    (void)state;
    memset(&s, 0x5a, sizeof(s));
    engine_config_defaults(&s);
    assert_int_equal(s.kind, ENGINE_VALKEY);
    assert_string_equal(s.line, "8.0");
    assert_int_equal(s.reserved_memory_percent, 25);
    assert_string_equal(s.maxmemory_policy, "volatile-lru");
    assert_true(s.appendonly);
    assert_false(s.cluster_enabled);
    assert_int_equal(s.cluster_node_timeout_ms, 5000);
    assert_null(s.node_id);
    assert_null(s.password);
    assert_null(s.availability_zone);
    assert_null(s.params);
    assert_int_equal(s.n_params, 0);
    assert_int_equal(s.port, 0);
    assert_int_equal(s.memory_mib, 0);
}

static void expect_sizes(uint64_t memory_mib, int reserved, uint64_t maxmemory, uint64_t backlog,
                         uint64_t replica)
{
    struct engine_config_sizes sz;

    if (!engine_config_sizes(memory_mib, reserved, &sz))
        fail_msg("engine_config_sizes(%llu, %d) refused", (unsigned long long)memory_mib, reserved);
    assert_int_equal(sz.maxmemory, maxmemory);
    assert_int_equal(sz.repl_backlog, backlog);
    assert_int_equal(sz.replica_buffer, replica);
}

static void test_sizes(void **state)
{
    (void)state;
    /* cache.t3.micro: 0.5 GiB. Both buffers at their floors. */
    expect_sizes(512, 25, 384 * MIB, 16 * MIB, 64 * MIB);
    /* cache.r7g.large: 13.07 GiB. Both proportional. */
    uint64_t mem = UINT64_C(13384) * MIB, mm = mem * 75 / 100;
    expect_sizes(13384, 25, mm, mm / 100, (mem - mm) / 2);
    assert_int_equal(mm, UINT64_C(10525605888));
    /* 400 GiB: both at their ceilings. */
    expect_sizes(400 * 1024, 25, 300 * GIB, GIB, 16 * GIB);
    /* More reserve buys a larger sync buffer. */
    mem = 16384 * MIB;
    mm = mem * 60 / 100;
    expect_sizes(16384, 40, mm, mm / 100, (mem - mm) / 2);
    /* Nothing reserved: the buffer keeps its floor, never 0 (unlimited). */
    expect_sizes(4096, 0, 4096 * MIB, 4096 * MIB / 100, 64 * MIB);
    mem = 1024 * MIB;
    mm = mem * 10 / 100;
    expect_sizes(1024, 90, mm, 16 * MIB, (mem - mm) / 2);
    /* Smallest node that keeps 16 MiB of data with the default reserve. */
    expect_sizes(22, 25, 22 * MIB * 3 / 4, 16 * MIB, 64 * MIB);
    expect_sizes(UINT64_C(1) << 24, 25, (UINT64_C(1) << 44) * 3 / 4, GIB, 16 * GIB);
}

static void test_sizes_refused(void **state)
{
    struct engine_config_sizes sz = {1, 2, 3};

    (void)state;
    assert_false(engine_config_sizes(0, 25, &sz));
    assert_false(engine_config_sizes(21, 25, &sz)); /* 15.75 MiB of data */
    assert_false(engine_config_sizes(512, -1, &sz));
    assert_false(engine_config_sizes(512, 91, &sz));
    assert_false(engine_config_sizes((UINT64_C(1) << 24) + 1, 25, &sz));
    assert_int_equal(sz.maxmemory, 1);
    assert_int_equal(sz.repl_backlog, 2);
    assert_int_equal(sz.replica_buffer, 3);
}

/* ---- Whole files ------------------------------------------------------- */

static void test_render_valkey_minimal(void **state)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");

    (void)state;
    char *text = render_ok(&s);
    assert_string_equal(text, "# valkey 8.0 configuration for node n1, rendered by Cairn.\n"
                              "# Edits here are lost when it is rendered again: change the "
                              "node's spec.\n"
                              "port 7001\n"
                              "bind 127.0.0.1\n"
                              "protected-mode yes\n"
                              "daemonize no\n"
                              "dir /var/lib/cairn/n1\n"
                              "logfile \"\"\n"
                              "maxmemory 402653184\n"
                              "maxmemory-policy volatile-lru\n"
                              "appendonly yes\n"
                              "appendfsync everysec\n"
                              "save \"\"\n"
                              "repl-diskless-sync yes\n"
                              "repl-diskless-sync-delay 0\n"
                              "repl-backlog-size 16777216\n"
                              "client-output-buffer-limit replica 67108864 0 0\n"
                              "cluster-enabled no\n");
    free(text);
}

static void test_render_redis_cluster_full(void **state)
{
    static const struct engine_config_param params[] = {
        {"timeout", "300"},
        {"lua-time-limit", "6000"},
        {"notify-keyspace-events", "Ex"},
        {"slowlog-log-slower-than", "-1"},
    };
    struct engine_config_spec s = base(ENGINE_REDIS, "7.0");

    (void)state;
    s.node_id = "c1-node-2";
    s.port = 7002;
    s.bind = "10.0.0.5";
    s.data_dir = "/data/c1-node-2/";
    s.pidfile = "/run/cairn/c1-node-2.pid";
    s.logfile = "/var/log/cairn/c1 node 2.log";
    s.memory_mib = 13384;
    s.maxmemory_policy = "allkeys-lru";
    s.appendonly = false;
    s.cluster_enabled = true;
    s.cluster_node_timeout_ms = 2000;
    s.password = "s3cret";
    s.availability_zone = "az-b"; /* Redis cannot announce it: left out */
    s.params = params;
    s.n_params = 4;
    char *text = render_ok(&s);
    assert_string_equal(text, "# redis 7.0 configuration for node c1-node-2, rendered by Cairn.\n"
                              "# Edits here are lost when it is rendered again: change the "
                              "node's spec.\n"
                              "port 7002\n"
                              "bind 10.0.0.5\n"
                              "protected-mode no\n"
                              "daemonize no\n"
                              "dir /data/c1-node-2/\n"
                              "pidfile /run/cairn/c1-node-2.pid\n"
                              "logfile \"/var/log/cairn/c1 node 2.log\"\n"
                              "maxmemory 10525605888\n"
                              "maxmemory-policy allkeys-lru\n"
                              "appendonly no\n"
                              "appendfsync everysec\n"
                              "save \"\"\n"
                              "repl-diskless-sync yes\n"
                              "repl-diskless-sync-delay 0\n"
                              "repl-backlog-size 105256058\n"
                              "client-output-buffer-limit replica 1754267648 0 0\n"
                              "requirepass s3cret\n"
                              "masterauth s3cret\n"
                              "cluster-enabled yes\n"
                              "cluster-config-file /data/c1-node-2/nodes.conf\n"
                              "cluster-node-timeout 2000\n"
                              "# Parameters\n"
                              "timeout 300\n"
                              "busy-reply-threshold 6000\n"
                              "notify-keyspace-events Ex\n"
                              "slowlog-log-slower-than -1\n");
    free(text);
}

/* What Valkey adds in cluster mode, line by line. */
static void test_render_engine_differences(void **state)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
    char *text;

    (void)state;
    s.cluster_enabled = true;
    s.availability_zone = "az-a";
    text = render_ok(&s);
    expect_line(text, "cluster-enabled yes");
    expect_line(text, "cluster-config-file /var/lib/cairn/n1/nodes.conf");
    expect_line(text, "cluster-node-timeout 5000");
    expect_line(text, "cluster-announce-human-nodename n1");
    /* Not by default on 8.0, whose slot stats crash a new primary. */
    expect_no_line_starting(text, "cluster-slot-stats-enabled");
    expect_line(text, "availability-zone az-a");
    free(text);

    s.line = "8.1";
    text = render_ok(&s);
    expect_line(text, "cluster-slot-stats-enabled yes");
    free(text);

    /* Valkey 7.2: names itself, but no slot stats and no zone yet. */
    s.line = "7.2";
    text = render_ok(&s);
    expect_line(text, "cluster-announce-human-nodename n1");
    expect_no_line_starting(text, "cluster-slot-stats-enabled");
    expect_no_line_starting(text, "availability-zone");
    free(text);

    /* A later line keeps what it gained. */
    s.line = "9.0";
    text = render_ok(&s);
    expect_line(text, "cluster-slot-stats-enabled yes");
    expect_line(text, "# valkey 9.0 configuration for node n1, rendered by Cairn.");
    free(text);

    /* Redis 7.0: none of the three. */
    s.kind = ENGINE_REDIS;
    s.line = "7.0";
    text = render_ok(&s);
    expect_no_line_starting(text, "cluster-announce-human-nodename");
    expect_no_line_starting(text, "cluster-slot-stats-enabled");
    expect_no_line_starting(text, "availability-zone");
    free(text);

    /* Without cluster mode, no cluster directives but the zone. */
    s.kind = ENGINE_VALKEY;
    s.line = "8.0";
    s.cluster_enabled = false;
    text = render_ok(&s);
    expect_line(text, "cluster-enabled no");
    expect_no_line_starting(text, "cluster-config-file");
    expect_no_line_starting(text, "cluster-node-timeout");
    expect_no_line_starting(text, "cluster-announce-human-nodename");
    expect_line(text, "availability-zone az-a");
    free(text);
}

static void test_render_bind_and_protected_mode(void **state)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
    char *text;

    (void)state;
    s.bind = "::1";
    text = render_ok(&s);
    expect_line(text, "bind ::1");
    expect_line(text, "protected-mode yes");
    free(text);

    s.bind = "127.0.0.53";
    text = render_ok(&s);
    expect_line(text, "protected-mode yes");
    free(text);

    s.password = "pw";
    s.bind = "0.0.0.0";
    text = render_ok(&s);
    expect_line(text, "bind 0.0.0.0");
    expect_line(text, "protected-mode no");
    free(text);

    s.bind = "fd00::7";
    text = render_ok(&s);
    expect_line(text, "bind fd00::7");
    expect_line(text, "protected-mode no");
    free(text);

    /* Loopback with a password keeps protected mode too. */
    s.bind = "127.0.0.1";
    text = render_ok(&s);
    expect_line(text, "protected-mode yes");
    expect_line(text, "requirepass pw");
    free(text);
}

/* ---- Quoting ----------------------------------------------------------- */

static void expect_password_rendered(const char *password, const char *rendered)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
    char want[512];

    s.password = password;
    char *text = render_ok(&s);
    snprintf(want, sizeof(want), "requirepass %s", rendered);
    expect_line(text, want);
    snprintf(want, sizeof(want), "masterauth %s", rendered);
    expect_line(text, want);
    /* Whatever the password, the file has the same number of lines. */
    size_t lines = 0;
    for (const char *p = text; *p != '\0'; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 20);
    expect_no_line_starting(text, "slaveof");
    expect_no_line_starting(text, "replicaof");
    expect_no_line_starting(text, "include");
    free(text);
}

static void test_password_quoting(void **state)
{
    (void)state;
    expect_password_rendered("Plain-Secret_1.2", "Plain-Secret_1.2");
    expect_password_rendered("with space", "\"with space\"");
    expect_password_rendered("q\"uote", "\"q\\\"uote\"");
    expect_password_rendered("back\\slash", "\"back\\\\slash\"");
    expect_password_rendered("single'quote", "\"single'quote\"");
    expect_password_rendered("x\nslaveof 10.0.0.1 6379", "\"x\\x0aslaveof 10.0.0.1 6379\"");
    expect_password_rendered("x\r\ninclude /etc/passwd", "\"x\\x0d\\x0ainclude /etc/passwd\"");
    expect_password_rendered("\"\nreplicaof 1.2.3.4 1\n\"",
                             "\"\\\"\\x0areplicaof 1.2.3.4 1\\x0a\\\"\"");
    expect_password_rendered("tab\there", "\"tab\\x09here\"");
    expect_password_rendered("#hash", "\"#hash\"");
    expect_password_rendered("p\xc3\xa4ss", "\"p\\xc3\\xa4ss\"");
    expect_password_rendered("del\x7f", "\"del\\x7f\"");
    expect_password_rendered("\\x41", "\"\\\\x41\"");
}

static void test_path_quoting(void **state)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");

    (void)state;
    s.data_dir = "/srv/cache \"x\"\n/dir";
    s.pidfile = "/run/a'b.pid";
    s.logfile = "/var/log/ok.log";
    s.cluster_enabled = true;
    char *text = render_ok(&s);
    expect_line(text, "dir \"/srv/cache \\\"x\\\"\\x0a/dir\"");
    expect_line(text, "cluster-config-file \"/srv/cache \\\"x\\\"\\x0a/dir/nodes.conf\"");
    expect_line(text, "pidfile \"/run/a'b.pid\"");
    expect_line(text, "logfile /var/log/ok.log");
    free(text);
}

/* ---- The allowlist ----------------------------------------------------- */

static void expect_param_ok(enum engine_kind kind, const char *line, const char *name,
                            const char *value, const char *canonical)
{
    char err[256] = "";
    const char *canon = NULL;

    if (!engine_config_param_check(kind, line, name, value, &canon, err, sizeof(err)))
        fail_msg("%s %s refused %s=\"%s\": %s", engine_kind_name(kind), line, name, value, err);
    if (canon == NULL || strcmp(canon, canonical) != 0)
        fail_msg("%s %s %s=\"%s\": canonical name \"%s\", want \"%s\"", engine_kind_name(kind),
                 line, name, value, canon != NULL ? canon : "(none)", canonical);
}

static void expect_param_refused(enum engine_kind kind, const char *line, const char *name,
                                 const char *value, const char *want)
{
    char err[256] = "";

    if (engine_config_param_check(kind, line, name, value, NULL, err, sizeof(err)))
        fail_msg("%s %s accepted %s=\"%s\"", engine_kind_name(kind), line, name, value);
    if (strstr(err, want) == NULL)
        fail_msg("%s %s %s=\"%s\": error \"%s\" lacks \"%s\"", engine_kind_name(kind), line, name,
                 value, err, want);
    if (strchr(err, '\n') != NULL || strchr(err, '\r') != NULL)
        fail_msg("%s %s %s=\"%s\": error \"%s\" carries a line break", engine_kind_name(kind), line,
                 name, value, err);
}

/* One parameter check on engine kind at line: name=value is accepted under
 * the canonical name want, or refused with an error that contains want. */
struct param_case {
    enum engine_kind kind;
    const char *line;
    const char *name;
    const char *value;
    const char *want;
};

static void expect_params_ok(const struct param_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_param_ok(cases[i].kind, cases[i].line, cases[i].name, cases[i].value, cases[i].want);
}

static void expect_params_refused(const struct param_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_param_refused(cases[i].kind, cases[i].line, cases[i].name, cases[i].value,
                             cases[i].want);
}

static void test_params_accepted(void **state)
{
    static const char *const both[][2] = {{"redis", "7.0"}, {"valkey", "7.2"}, {"valkey", "8.0"}};
    /* Accepted on every line in both[]: {name, value, canonical name}. */
    static const char *const everywhere[][3] = {
        {"timeout", "0", "timeout"},
        {"timeout", "2147483647", "timeout"},
        {"tcp-keepalive", "300", "tcp-keepalive"},
        {"maxclients", "65000", "maxclients"},
        {"maxclients", "1", "maxclients"},
        {"notify-keyspace-events", "", "notify-keyspace-events"},
        {"notify-keyspace-events", "KEA", "notify-keyspace-events"},
        {"notify-keyspace-events", "Kg$lshzxentmd", "notify-keyspace-events"},
        {"hash-max-listpack-entries", "512", "hash-max-listpack-entries"},
        {"hash-max-ziplist-entries", "512", "hash-max-listpack-entries"},
        {"list-max-ziplist-size", "-2", "list-max-listpack-size"},
        {"list-max-listpack-size", "-5", "list-max-listpack-size"},
        {"lazyfree-lazy-eviction", "yes", "lazyfree-lazy-eviction"},
        {"activerehashing", "no", "activerehashing"},
        {"stream-node-max-entries", "0", "stream-node-max-entries"},
        {"latency-tracking", "yes", "latency-tracking"},
        {"slowlog-log-slower-than", "-1", "slowlog-log-slower-than"},
        {"slowlog-max-len", "1024", "slowlog-max-len"},
        {"lua-time-limit", "5000", "busy-reply-threshold"},
        {"busy-reply-threshold", "5000", "busy-reply-threshold"},
        {"cluster-allow-reads-when-down", "no", "cluster-allow-reads-when-down"},
        {"cluster-require-full-coverage", "no", "cluster-require-full-coverage"},
        {"loglevel", "warning", "loglevel"},
        {"maxmemory-samples", "10", "maxmemory-samples"},
        {"hz", "100", "hz"},
    };
    /* Gated by engine and line. */
    static const struct param_case gated[] = {
        {ENGINE_VALKEY, "8.0", "dual-channel-replication-enabled", "yes",
         "dual-channel-replication-enabled"},
        {ENGINE_VALKEY, "8.1", "dual-channel-replication-enabled", "no",
         "dual-channel-replication-enabled"},
        {ENGINE_VALKEY, "7.2", "set-max-listpack-entries", "128", "set-max-listpack-entries"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
        enum engine_kind k;
        assert_true(engine_kind_from_name(both[i][0], &k));
        for (size_t j = 0; j < sizeof(everywhere) / sizeof(everywhere[0]); j++)
            expect_param_ok(k, both[i][1], everywhere[j][0], everywhere[j][1], everywhere[j][2]);
    }
    expect_params_ok(gated, sizeof(gated) / sizeof(gated[0]));
}

static void test_params_refused(void **state)
{
    static const struct param_case cases[] = {
        /* Not on the list at all. */
        {ENGINE_VALKEY, "8.0", "rename-command", "CONFIG x",
         "parameter \"rename-command\" is not one users may set"},
        {ENGINE_VALKEY, "8.0", "slaveof", "1.2.3.4 1", "\"slaveof\" is not one"},
        {ENGINE_VALKEY, "8.0", "include", "/etc/passwd", "\"include\" is not one"},
        {ENGINE_VALKEY, "8.0", "enable-debug-command", "yes",
         "\"enable-debug-command\" is not one"},
        /* Fatal on engines built without the modified jemalloc (Debian's). */
        {ENGINE_VALKEY, "8.0", "activedefrag", "yes", "\"activedefrag\" is not one"},
        {ENGINE_VALKEY, "8.0", "", "1", "parameter \"\" is not one"},
        {ENGINE_VALKEY, "8.0", "Timeout", "1", "\"Timeout\" is not one"},
        {ENGINE_VALKEY, "8.0", "timeout\nslaveof", "1",
         "parameter \"timeout\\x0aslaveof\" is not one users may set"},
        /* Set by Cairn from the spec. */
        {ENGINE_VALKEY, "8.0", "maxmemory", "1gb",
         "parameter \"maxmemory\" is managed by Cairn and cannot be set"},
        {ENGINE_VALKEY, "8.0", "maxmemory-policy", "noeviction",
         "\"maxmemory-policy\" is managed by Cairn"},
        {ENGINE_VALKEY, "8.0", "requirepass", "x", "\"requirepass\" is managed"},
        {ENGINE_VALKEY, "8.0", "dir", "/", "\"dir\" is managed"},
        {ENGINE_VALKEY, "8.0", "client-output-buffer-limit", "replica 0 0 0",
         "\"client-output-buffer-limit\" is managed"},
        {ENGINE_VALKEY, "8.0", "cluster-node-timeout", "100",
         "\"cluster-node-timeout\" is managed"},
        /* Not on this engine or line. */
        {ENGINE_REDIS, "7.0", "dual-channel-replication-enabled", "yes",
         "parameter \"dual-channel-replication-enabled\" is not available on "
         "redis 7.0 (valkey 8.0 and later)"},
        {ENGINE_VALKEY, "7.2", "dual-channel-replication-enabled", "yes",
         "is not available on valkey 7.2 (valkey 8.0 and later)"},
        {ENGINE_REDIS, "7.0", "set-max-listpack-entries", "128",
         "is not available on redis 7.0 (redis 7.2 and later, valkey 7.2 and "
         "later)"},
    };

    (void)state;
    expect_params_refused(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_param_values_refused(void **state)
{
    static const char *const not_ints[] = {
        "",
        "abc",
        "1.5",
        "+5",
        " 5",
        "5 ",
        "0x10",
        "1e3",
        "--1",
        "-",
        "5\n",
        "99999999999999999999",
        "1\nslaveof x y",
        "1\"",
        "1 2",
    };
    static const struct param_case cases[] = {
        {ENGINE_VALKEY, "8.0", "timeout", "-1",
         "parameter \"timeout\": value \"-1\" must be an integer from 0 to "
         "2147483647"},
        {ENGINE_VALKEY, "8.0", "timeout", "2147483648", "from 0 to 2147483647"},
        {ENGINE_VALKEY, "8.0", "maxclients", "0", "from 1 to 65000"},
        {ENGINE_VALKEY, "8.0", "maxclients", "65001", "from 1 to 65000"},
        {ENGINE_VALKEY, "8.0", "slowlog-log-slower-than", "-2", "from -1 to"},
        {ENGINE_VALKEY, "8.0", "list-max-listpack-size", "-6", "from -5 to 32767"},
        {ENGINE_VALKEY, "8.0", "maxmemory-eviction-tenacity", "101", "from 0 to 100"},
        {ENGINE_VALKEY, "8.0", "hz", "501", "from 1 to 500"},
        /* The injection is shown escaped, never as a line break. */
        {ENGINE_VALKEY, "8.0", "timeout", "1\nslaveof x y", "value \"1\\x0aslaveof x y\" must be"},
        {ENGINE_VALKEY, "8.0", "timeout", "1\"", "value \"1\\x22\" must be"},
        {ENGINE_VALKEY, "8.0", "timeout", "123456789012345678901234567890123456789012345",
         "value \"1234567890123456789012345678901234567890...\" must be"},

        {ENGINE_VALKEY, "8.0", "lazyfree-lazy-expire", "YES", "must be yes or no"},
        {ENGINE_VALKEY, "8.0", "lazyfree-lazy-expire", "true", "must be yes or no"},
        {ENGINE_VALKEY, "8.0", "lazyfree-lazy-expire", "yes\nslaveof x y", "must be yes or no"},
        {ENGINE_VALKEY, "8.0", "lazyfree-lazy-expire", "", "must be yes or no"},

        {ENGINE_VALKEY, "8.0", "loglevel", "loud",
         "must be one of: debug, verbose, notice, warning"},
        {ENGINE_REDIS, "7.0", "loglevel", "nothing", "must be one of"},

        {ENGINE_VALKEY, "8.0", "notify-keyspace-events", "KEA\"",
         "may contain only the event classes KEg$lshzxentmdA"},
        {ENGINE_VALKEY, "8.0", "notify-keyspace-events", "Ex\nslaveof x y",
         "may contain only the event classes"},
        {ENGINE_VALKEY, "8.0", "notify-keyspace-events", "E x", "event classes"},
        {ENGINE_VALKEY, "8.0", "notify-keyspace-events", "Q", "event classes"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(not_ints) / sizeof(not_ints[0]); i++)
        expect_param_refused(ENGINE_VALKEY, "8.0", "timeout", not_ints[i],
                             "must be an integer from 0 to 2147483647");
    expect_params_refused(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Every allowlist entry accepts its own limits and nothing past them, has
 * a unique name, and is available somewhere. */
static void test_allowlist_consistent(void **state)
{
    const struct engine_config_param_spec *p, *q;
    char v[32];
    size_t n = 0;

    (void)state;
    for (size_t i = 0; (p = engine_config_param_at(i)) != NULL; i++, n++) {
        bool somewhere = engine_config_param_available(ENGINE_REDIS, "7.0", p->name) ||
                         engine_config_param_available(ENGINE_VALKEY, "8.0", p->name);
        if (!somewhere)
            fail_msg("allowlist entry %s is available nowhere", p->name);
        enum engine_kind k = engine_config_param_available(ENGINE_VALKEY, "8.0", p->name)
                                 ? ENGINE_VALKEY
                                 : ENGINE_REDIS;
        const char *l = k == ENGINE_VALKEY ? "8.0" : "7.0";
        for (size_t j = 0; j < i; j++) {
            q = engine_config_param_at(j);
            if (strcmp(p->name, q->name) == 0)
                fail_msg("allowlist entry %s is listed twice", p->name);
        }
        switch (p->type) {
        case ENGINE_PARAM_INT:
            assert_true(p->min <= p->max);
            snprintf(v, sizeof(v), "%lld", p->min);
            expect_param_ok(k, l, p->name, v, p->name);
            snprintf(v, sizeof(v), "%lld", p->max);
            expect_param_ok(k, l, p->name, v, p->name);
            snprintf(v, sizeof(v), "%lld", p->min - 1);
            expect_param_refused(k, l, p->name, v, "must be an integer");
            snprintf(v, sizeof(v), "%lld", p->max + 1);
            expect_param_refused(k, l, p->name, v, "must be an integer");
            break;
        case ENGINE_PARAM_BOOL:
            expect_param_ok(k, l, p->name, "yes", p->name);
            expect_param_ok(k, l, p->name, "no", p->name);
            break;
        case ENGINE_PARAM_ENUM:
            for (const char *const *e = p->values; *e != NULL; e++)
                expect_param_ok(k, l, p->name, *e, p->name);
            break;
        case ENGINE_PARAM_EVENTS:
            expect_param_ok(k, l, p->name, ENGINE_CONFIG_EVENT_CLASSES, p->name);
            break;
        }
        expect_param_refused(k, l, p->name, "x\ny", "parameter");
    }
    assert_true(n >= 30);
    assert_null(engine_config_param_at(n));
    assert_null(engine_config_param_at(SIZE_MAX));

    assert_true(engine_config_param_available(ENGINE_REDIS, "7.0", "lua-time-limit"));
    assert_true(engine_config_param_available(ENGINE_VALKEY, "7.2", "hash-max-ziplist-value"));
    assert_false(engine_config_param_available(ENGINE_REDIS, "7.0", "set-max-listpack-value"));
    assert_true(engine_config_param_available(ENGINE_VALKEY, "7.2", "set-max-listpack-value"));
    assert_false(
        engine_config_param_available(ENGINE_VALKEY, "7.2", "dual-channel-replication-enabled"));
    assert_false(engine_config_param_available(ENGINE_VALKEY, "8.0", "maxmemory"));
    assert_false(engine_config_param_available(ENGINE_VALKEY, "8.0", "no-such-thing"));
}

static void test_params_in_render(void **state)
{
    struct engine_config_param params[3] = {
        {"timeout", "60"},
        {"notify-keyspace-events", ""},
        {"lua-time-limit", "100"},
    };
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");

    (void)state;
    s.params = params;
    s.n_params = 3;
    char *text = render_ok(&s);
    expect_line(text, "# Parameters");
    expect_line(text, "timeout 60");
    expect_line(text, "notify-keyspace-events \"\"");
    expect_line(text, "busy-reply-threshold 100");
    expect_no_line_starting(text, "lua-time-limit");
    free(text);

    /* One bad parameter refuses the whole file. */
    params[1].value = "Ex\nslaveof 127.0.0.1 1";
    expect_refused(&s, "parameter \"notify-keyspace-events\": value \"Ex\\x0aslaveof 127.0.0.1 "
                       "1\" may contain only");
    params[1].value = "Ex";
    params[1].name = "port";
    expect_refused(&s, "parameter \"port\" is managed by Cairn");

    /* A directive set twice, by name or through an alias. */
    params[1].name = "timeout";
    params[1].value = "5";
    expect_refused(&s, "parameter \"timeout\" is given twice");
    params[1].name = "busy-reply-threshold";
    expect_refused(&s, "parameters \"busy-reply-threshold\" and \"lua-time-limit\" set the same "
                       "directive, busy-reply-threshold");

    params[1].name = NULL;
    expect_refused(&s, "parameter 2 has no name or no value");
    params[1].name = "hz";
    params[1].value = NULL;
    expect_refused(&s, "parameter 2 has no name or no value");

    /* Gated parameters go through the engine table when rendering too. */
    params[1].name = "dual-channel-replication-enabled";
    params[1].value = "yes";
    text = render_ok(&s);
    expect_line(text, "dual-channel-replication-enabled yes");
    free(text);
    s.kind = ENGINE_REDIS;
    s.line = "7.0";
    expect_refused(&s, "is not available on redis 7.0");
}

/* ---- The spec ---------------------------------------------------------- */

/* Cluster mode disabled: a replica's config names its primary, so it
 * restarts as a replica; cluster mode ignores it (nodes.conf decides). */
static void test_replicaof(void **state)
{
    (void)state;
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
    s.replicaof_host = "10.0.0.7";
    s.replicaof_port = 7002;
    s.password = "secret-secret-secret";
    char *text = render_ok(&s);
    expect_line(text, "replicaof 10.0.0.7 7002");
    free(text);

    s.cluster_enabled = true;
    text = render_ok(&s);
    expect_no_line_starting(text, "replicaof");
    free(text);

    s.cluster_enabled = false;
    s.replicaof_host = "primary.example";
    expect_refused(&s, "replicaof must be an IP address");
    s.replicaof_host = "10.0.0.7";
    s.replicaof_port = 0;
    expect_refused(&s, "replicaof must be an IP address");
}

/* Cairn's users: each password as its SHA-256 (echo -n pw | sha256sum),
 * the tenant confined, the replication password alone written out (a
 * replica must present it), and no requirepass. */
static void test_users(void **state)
{
    (void)state;
    struct engine_config_spec s = base(ENGINE_REDIS, "7.0");
    s.password = "tenant-pw";
    s.admin_password = "admin-pw";
    s.replication_password = "repl-pw";
    char *text = render_ok(&s);
    char want[1024];
    snprintf(want, sizeof(want),
             "user default reset on "
             "#f5f0b7e0189f7de19bca718b76fa99e1e16011b97a54dabe9fe3f2f77494f3d5 %s",
             ENGINE_TENANT_ACCESS);
    expect_line(text, want);
    expect_line(text,
                "user cairn reset on "
                "#f6302296b934fd23629ef2252a746c1f2b57a7d0446f069232a007fe0a1f046e ~* &* +@all");
    expect_line(text, "user cairn-repl reset on "
                      "#ba62d52a7f2b1d685658393c04aa2cd271b40a47c3039c6f81af3d9b1c49720b "
                      "-@all +psync +replconf +ping");
    expect_line(text, "masteruser cairn-repl");
    expect_line(text, "masterauth repl-pw");
    expect_no_line_starting(text, "requirepass");
    assert_null(strstr(text, "tenant-pw"));
    assert_null(strstr(text, "admin-pw"));
    free(text);

    /* The tenant may have no password on loopback; Cairn's users always do. */
    s.password = NULL;
    text = render_ok(&s);
    snprintf(want, sizeof(want), "user default reset on nopass %s", ENGINE_TENANT_ACCESS);
    expect_line(text, want);
    free(text);
    s.replication_password = "";
    expect_refused(&s, "admin_password and replication_password must both be 1 to 1024 bytes");
    s.replication_password = NULL;
    expect_refused(&s, "admin_password and replication_password must both be");
}

/* Each guarded setting is what the rendered file says (the file's
 * directive, or the engines' own form of it: save "" reads back as
 * empty, an absent tls-port as 0), and the names are those the agent asks
 * the engine for. */
static void test_guarded(void **state)
{
    (void)state;
    struct engine_setting g[ENGINE_GUARDED_MAX];
    char err[256] = "", want[512];

    for (int k = 0; k < 4; k++) {
        bool cluster = k % 2 == 1, tls = k >= 2;
        struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
        s.password = "tenant-pw";
        s.admin_password = "admin-pw";
        s.replication_password = "repl-pw";
        s.cluster_enabled = cluster;
        if (tls) {
            s.tls_cert_file = "/n/tls/cert.pem";
            s.tls_key_file = "/n/tls/key.pem";
            s.tls_ca_file = "/n/tls/ca.pem";
        }
        s.maxmemory_policy = "allkeys-lfu";
        char *text = render_ok(&s);
        size_t n = engine_config_guarded(&s, g, err, sizeof(err));
        assert_int_equal(n, cluster ? 15 : 14);
        char names[512] = "";
        for (size_t i = 0; i < n; i++) {
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i > 0 ? " " : "",
                     g[i].name);
            if (strcmp(g[i].name, "save") == 0) {
                assert_string_equal(g[i].value, "");
                expect_line(text, "save \"\"");
                continue;
            }
            if (strcmp(g[i].name, "tls-port") == 0 && !tls) {
                assert_string_equal(g[i].value, "0");
                expect_no_line_starting(text, "tls-port");
                continue;
            }
            snprintf(want, sizeof(want), "%s %s", g[i].name, g[i].value);
            expect_line(text, want);
        }
        assert_string_equal(names, cluster ? ENGINE_GUARDED_NAMES " " ENGINE_GUARDED_CLUSTER_NAMES
                                           : ENGINE_GUARDED_NAMES);
        if (tls) {
            expect_line(text, "port 0");
            expect_line(text, "tls-port 7001");
            expect_line(text, "tls-replication yes");
            expect_line(text, "tls-auth-clients no");
            if (cluster)
                expect_line(text, "tls-cluster yes");
            else
                expect_no_line_starting(text, "tls-cluster");
        }
        free(text);
    }
    struct engine_config_spec s = base(ENGINE_REDIS, "7.0");
    assert_int_equal(engine_config_guarded(&s, g, err, sizeof(err)), 0);
    assert_string_equal(err, "the spec has no users of Cairn's own");
    s.admin_password = "a";
    s.replication_password = "r";
    s.memory_mib = 1;
    assert_int_equal(engine_config_guarded(&s, g, err, sizeof(err)), 0);
}

static void test_spec_refused(void **state)
{
    struct engine_config_spec s;
    char long_id[80], long_path[1100];

    (void)state;
    memset(long_id, 'a', 65);
    long_id[65] = '\0';
    long_path[0] = '/';
    memset(long_path + 1, 'p', 1024);
    long_path[1025] = '\0';

#define REFUSED(assignment, want)                                                                  \
    do {                                                                                           \
        s = base(ENGINE_VALKEY, "8.0");                                                            \
        assignment;                                                                                \
        expect_refused(&s, want);                                                                  \
    } while (0)

    REFUSED(s.kind = (enum engine_kind)7, "engine is not a known engine");
    REFUSED(s.line = NULL, "line must be MAJOR.MINOR");
    REFUSED(s.line = "8", "line must be MAJOR.MINOR");
    REFUSED(s.line = "8.0.1", "line must be MAJOR.MINOR");
    REFUSED(s.line = "7.0", "valkey 7.0 is older than 7.2, the first line Cairn configures");
    REFUSED((s.kind = ENGINE_REDIS, s.line = "6.2"), "redis 6.2 is older than 7.0");
    REFUSED(s.node_id = NULL, "node_id must be 1 to 64 letters");
    REFUSED(s.node_id = "", "node_id must be");
    REFUSED(s.node_id = "a b", "node_id must be");
    REFUSED(s.node_id = "-a", "node_id must be");
    REFUSED(s.node_id = "n1\nslaveof", "node_id must be");
    REFUSED(s.node_id = long_id, "node_id must be");
    REFUSED(s.port = 0, "port must be from 1 to 65535");
    REFUSED(s.port = 65536, "port must be from 1 to 65535");
    REFUSED((s.cluster_enabled = true, s.port = 55536),
            "port must be from 1 to 55535 in cluster mode (the cluster bus uses port + 10000)");
    REFUSED(s.bind = NULL, "bind must be an IPv4 or IPv6 address");
    REFUSED(s.bind = "localhost", "bind must be an IPv4 or IPv6 address, not \"localhost\"");
    REFUSED(s.bind = "127.0.0.1 10.0.0.1", "bind must be an IPv4 or IPv6 address");
    REFUSED(s.bind = "127.0.0.1\nslaveof x 1", "not \"127.0.0.1\\x0aslaveof x 1\"");
    REFUSED(s.bind = "10.0.0.1",
            "bind: 10.0.0.1 is reachable from the network, so the node needs a password");
    REFUSED((s.bind = "::", s.password = ""), "needs a password");
    REFUSED(s.data_dir = NULL, "data_dir must be an absolute path");
    REFUSED(s.data_dir = "data", "data_dir must be an absolute path");
    REFUSED(s.data_dir = long_path, "data_dir must be at most 1024 bytes");
    REFUSED(s.pidfile = "x.pid", "pidfile must be an absolute path");
    REFUSED(s.logfile = "", "logfile must be an absolute path");
    REFUSED(s.reserved_memory_percent = -1, "reserved_memory_percent must be from 0 to 90");
    REFUSED(s.reserved_memory_percent = 91, "reserved_memory_percent must be from 0 to 90");
    REFUSED(s.memory_mib = 0, "memory_mib must be from 1 to 16777216");
    REFUSED(s.memory_mib = 21, "memory_mib 21 with reserved_memory_percent 25 leaves less than "
                               "16 MiB for data");
    REFUSED(s.maxmemory_policy = NULL, "maxmemory_policy \"\" must be one of");
    REFUSED(s.maxmemory_policy = "lru", "maxmemory_policy \"lru\" must be one of: volatile-lru, "
                                        "allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, "
                                        "allkeys-random, volatile-ttl, noeviction");
    REFUSED(s.maxmemory_policy = "allkeys-lru\n", "maxmemory_policy \"allkeys-lru\\x0a\"");
    REFUSED(s.cluster_node_timeout_ms = 499, "cluster_node_timeout_ms must be from 500 to 120000");
    REFUSED(s.cluster_node_timeout_ms = 120001, "cluster_node_timeout_ms must be from 500");
    REFUSED(s.availability_zone = "", "availability_zone must be");
    REFUSED(s.availability_zone = "az a", "availability_zone must be");
    char long_password[1100];
    memset(long_password, 'x', 1025);
    long_password[1025] = '\0';
    REFUSED(s.password = long_password, "password must be at most 1024 bytes");
#undef REFUSED
}

static void test_spec_edges_accepted(void **state)
{
    struct engine_config_spec s = base(ENGINE_VALKEY, "8.0");
    char *text;

    (void)state;
    s.cluster_enabled = true;
    s.port = 55535;
    s.cluster_node_timeout_ms = 500;
    s.reserved_memory_percent = 0;
    s.node_id = "0123456789012345678901234567890123456789012345678901234567890123";
    s.password = "";
    text = render_ok(&s);
    expect_line(text, "port 55535");
    expect_line(text, "cluster-node-timeout 500");
    expect_line(text, "maxmemory 536870912");
    expect_no_line_starting(text, "requirepass");
    expect_no_line_starting(text, "masterauth");
    free(text);

    s.cluster_enabled = false;
    s.port = 65535;
    s.memory_mib = 22;
    s.reserved_memory_percent = 25;
    s.cluster_node_timeout_ms = 120000;
    for (const char *const *p =
             (const char *const[]){"volatile-lru", "allkeys-lru", "volatile-lfu", "allkeys-lfu",
                                   "volatile-random", "allkeys-random", "volatile-ttl",
                                   "noeviction", NULL};
         *p != NULL; p++) {
        char want[64];
        s.maxmemory_policy = *p;
        assert_true(engine_config_policy_valid(*p));
        text = render_ok(&s);
        snprintf(want, sizeof(want), "maxmemory-policy %s", *p);
        expect_line(text, want);
        free(text);
    }
    assert_false(engine_config_policy_valid(NULL));
    assert_false(engine_config_policy_valid("allkeys-LRU"));
}

/* The managed settings: found by name, each default a value its own check
 * takes, none of them a parameter on the user allowlist. */
static void test_managed_settings(void **state)
{
    const struct engine_config_managed *m;
    char msg[256];
    size_t n = 0;

    (void)state;
    for (; (m = engine_config_managed_at(n)) != NULL; n++) {
        assert_ptr_equal(engine_config_managed_find(m->param), m);
        if (!engine_config_managed_check(m, m->fallback, msg, sizeof(msg)))
            fail_msg("%s: its default \"%s\" %s", m->param, m->fallback, msg);
        if (engine_config_param_check(ENGINE_VALKEY, "9.0", m->param, m->fallback, NULL, msg,
                                      sizeof(msg)))
            fail_msg("%s is also on the user allowlist", m->param);
    }
    assert_int_equal(n, 4);
    assert_null(engine_config_managed_find("timeout"));
    /* Stricter than the allowlist: what the API has always refused. */
    m = engine_config_managed_find("reserved-memory-percent");
    assert_false(engine_config_managed_check(m, "025", msg, sizeof(msg)));
    assert_false(engine_config_managed_check(m, "+25", msg, sizeof(msg)));
    assert_string_equal(msg, "must be an integer from 0 to 90");
    m = engine_config_managed_find("cluster-node-timeout");
    assert_false(engine_config_managed_check(m, "499", msg, sizeof(msg)));
    assert_string_equal(msg, "must be an integer from 500 to 120000 (milliseconds)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_managed_settings),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_sizes_refused),
        cmocka_unit_test(test_render_valkey_minimal),
        cmocka_unit_test(test_render_redis_cluster_full),
        cmocka_unit_test(test_render_engine_differences),
        cmocka_unit_test(test_render_bind_and_protected_mode),
        cmocka_unit_test(test_password_quoting),
        cmocka_unit_test(test_users),
        cmocka_unit_test(test_guarded),
        cmocka_unit_test(test_path_quoting),
        cmocka_unit_test(test_params_accepted),
        cmocka_unit_test(test_params_refused),
        cmocka_unit_test(test_param_values_refused),
        cmocka_unit_test(test_allowlist_consistent),
        cmocka_unit_test(test_params_in_render),
        cmocka_unit_test(test_replicaof),
        cmocka_unit_test(test_spec_refused),
        cmocka_unit_test(test_spec_edges_accepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
