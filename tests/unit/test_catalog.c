/* test_catalog.c -- engine names, version parsing, probing and discovery of
 * engine binaries (engine/catalog.h). Discovery runs fake engines: small
 * shell scripts in a temp dir that print a version line. */
#define _GNU_SOURCE /* nftw */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog.h"
#include "log.h"
#include "timeutil.h"

#define REDIS_LINE "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c"
#define VALKEY_LINE                                                                                \
    "Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=39f7c3"

/* ---- Names and versions ------------------------------------------------ */

static void test_kind_names(void **state)
{
    enum engine_kind k = ENGINE_VALKEY;

    (void)state;
    assert_string_equal(engine_kind_name(ENGINE_REDIS), "redis");
    assert_string_equal(engine_kind_name(ENGINE_VALKEY), "valkey");
    assert_true(engine_kind_from_name("redis", &k));
    assert_int_equal(k, ENGINE_REDIS);
    assert_true(engine_kind_from_name("valkey", &k));
    assert_int_equal(k, ENGINE_VALKEY);
    assert_string_equal(engine_kind_binary(ENGINE_REDIS), "redis-server");
    assert_string_equal(engine_kind_binary(ENGINE_VALKEY), "valkey-server");
    assert_string_equal(engine_kind_first_line(ENGINE_REDIS), "7.0");
    assert_string_equal(engine_kind_first_line(ENGINE_VALKEY), "7.2");
}

/* engine_kind_names is the list, in enum order, and a one_of list. */
static void test_kind_name_list(void **state)
{
    (void)state;
    for (int k = 0; k < ENGINE_KIND_COUNT; k++) {
        assert_string_equal(engine_kind_names[k], engine_kind_name((enum engine_kind)k));
        assert_true(engine_kind_known(engine_kind_names[k]));
    }
    assert_null(engine_kind_names[ENGINE_KIND_COUNT]);
    assert_false(engine_kind_known(NULL));
    assert_false(engine_kind_known("keydb"));
}

static void test_kind_unknown_names(void **state)
{
    static const char *const bad[] = {"", "Redis", "VALKEY", "redis ", "keydb", "valkey-server"};
    enum engine_kind k = ENGINE_VALKEY;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (engine_kind_from_name(bad[i], &k))
            fail_msg("engine_kind_from_name(\"%s\") accepted it", bad[i]);
        assert_int_equal(k, ENGINE_VALKEY);
    }
}

/* Assert that text parses as kind and version. */
static void expect_version(const char *text, enum engine_kind kind, const char *version)
{
    enum engine_kind k = ENGINE_KIND_COUNT;
    char v[ENGINE_VERSION_MAX] = "";

    if (!engine_parse_version(text, &k, v))
        fail_msg("engine_parse_version(\"%s\") refused it", text);
    assert_int_equal(k, kind);
    assert_string_equal(v, version);
}

static void test_parse_version(void **state)
{
    (void)state;
    expect_version(REDIS_LINE, ENGINE_REDIS, "7.0.15");
    expect_version(VALKEY_LINE, ENGINE_VALKEY, "8.0.1");
    expect_version(REDIS_LINE "\n", ENGINE_REDIS, "7.0.15");
    expect_version("Valkey server v=8.0.1\n", ENGINE_VALKEY, "8.0.1");
    expect_version("Valkey server v=8.0.1", ENGINE_VALKEY, "8.0.1");
    expect_version("Valkey server v=10.12.0 sha=x", ENGINE_VALKEY, "10.12.0");
    expect_version("Redis server v=0.0.0 sha=x", ENGINE_REDIS, "0.0.0");
}

static void test_parse_version_garbage(void **state)
{
    static const char *const bad[] = {
        "",
        "\n",
        "redis-check-rdb 7.0.15",
        "valkey-check-rdb v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64",
        "Redis server version 2.8.19 (00000000:0)",
        "redis server v=7.0.15 sha=x",
        " Redis server v=7.0.15 sha=x",
        "Redis server v=",
        "Redis server v= 7.0.15",
        "Redis server v=7.0 sha=x",
        "Redis server v=7 sha=x",
        "Redis server v=7.0.15.1 sha=x",
        "Redis server v=07.0.15 sha=x",
        "Redis server v=7.0.15x sha=x",
        "Redis server v=7.0.15-rc1 sha=x",
        "Redis server v=7..15 sha=x",
        "Redis server v=99999.0.0 sha=x",
        "Valkey server v=8.0.1\tsha=x",
        "Valkey server v=8.0.1\r\n",
        "KeyDB server v=6.3.4 sha=x",
        "Valkey server 8.0.1",
    };
    enum engine_kind k = ENGINE_KIND_COUNT;
    char v[ENGINE_VERSION_MAX] = "untouched";

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (engine_parse_version(bad[i], &k, v))
            fail_msg("engine_parse_version(\"%s\") accepted it as %d %s", bad[i], k, v);
        assert_int_equal(k, ENGINE_KIND_COUNT);
        assert_string_equal(v, "untouched");
    }
}

static void test_version_line(void **state)
{
    static const char *const bad[] = {"",      "7",      "7.0",     "7.0.",   "7..1",
                                      "a.b.c", "7.0.1 ", "7.0.1.2", "07.0.1", "7.0.-1"};
    char line[ENGINE_LINE_MAX];

    (void)state;
    assert_true(engine_version_line("7.0.15", line));
    assert_string_equal(line, "7.0");
    assert_true(engine_version_line("8.0.1", line));
    assert_string_equal(line, "8.0");
    assert_true(engine_version_line("10.12.3", line));
    assert_string_equal(line, "10.12");
    assert_true(engine_version_line("9999.9999.9999", line));
    assert_string_equal(line, "9999.9999");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        strcpy(line, "untouched");
        if (engine_version_line(bad[i], line))
            fail_msg("engine_version_line(\"%s\") accepted it as %s", bad[i], line);
        assert_string_equal(line, "untouched");
    }
}

static void test_line_parse_and_compare(void **state)
{
    static const char *const bad[] = {"", "8", "8.", ".0", "08.0", "8.00", "8.0.1", "8.x", " 8.0"};
    int major = -1, minor = -1;

    (void)state;
    assert_true(engine_line_parse("8.0", &major, &minor));
    assert_int_equal(major, 8);
    assert_int_equal(minor, 0);
    assert_true(engine_line_parse("10.12", &major, &minor));
    assert_int_equal(major, 10);
    assert_int_equal(minor, 12);
    assert_true(engine_line_parse("7.2", NULL, NULL));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (engine_line_parse(bad[i], NULL, NULL))
            fail_msg("engine_line_parse(\"%s\") accepted it", bad[i]);
    }
    assert_true(engine_line_compare("7.0", "7.2") < 0);
    assert_true(engine_line_compare("8.1", "8.0") > 0);
    assert_true(engine_line_compare("7.10", "7.2") > 0);
    assert_true(engine_line_compare("10.0", "9.9") > 0);
    assert_int_equal(engine_line_compare("8.0", "8.0"), 0);
}

/* ---- Fake engines ------------------------------------------------------ */

struct sandbox {
    char dir[PATH_MAX];
};

/* A fresh directory under $TMPDIR (or /tmp) for one test's fake engines. */
static int make_sandbox(void **state)
{
    struct sandbox *sb = calloc(1, sizeof(*sb));
    const char *tmp = getenv("TMPDIR");

    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 512)
        tmp = "/tmp";
    snprintf(sb->dir, sizeof(sb->dir), "%s/cairn-test-catalog-XXXXXX", tmp);
    if (mkdtemp(sb->dir) == NULL)
        fail_msg("mkdtemp: %s", strerror(errno));
    log_set_level(LOG_ERROR); /* skipped binaries are expected here */
    *state = sb;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int drop_sandbox(void **state)
{
    struct sandbox *sb = *state;

    nftw(sb->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(sb);
    log_set_level(LOG_INFO);
    return 0;
}

/* dir/name into buf, which holds PATH_MAX bytes; returns buf. */
static const char *join(char *buf, const char *dir, const char *name)
{
    if (snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
        fail_msg("path too long: %s/%s", dir, name);
    return buf;
}

/* Path of name inside the sandbox, into buf (PATH_MAX bytes). */
static const char *in_box(const struct sandbox *sb, const char *name, char *buf)
{
    return join(buf, sb->dir, name);
}

/* Write a file with the given mode; body is used as is. */
static void write_file(const char *path, mode_t mode, const char *body)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fail_msg("fopen %s: %s", path, strerror(errno));
        return;
    }
    fputs(body, f);
    fclose(f);
    chmod(path, mode);
}

/* A fake engine: a shell script that prints line and exits with 0. */
static void fake_engine(const char *path, const char *line)
{
    char body[512];
    snprintf(body, sizeof(body), "#!/bin/sh\necho '%s'\n", line);
    write_file(path, 0755, body);
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0755) != 0)
        fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* Assert that probing path fails with a message containing want. */
static void expect_probe_error(const char *path, int timeout_ms, const char *want)
{
    struct engine_binary bin = {0};
    char err[512] = "";

    if (engine_probe(path, timeout_ms, &bin, err, sizeof(err)))
        fail_msg("engine_probe(%s) accepted it as %s %s", path, engine_kind_name(bin.kind),
                 bin.version);
    if (strstr(err, want) == NULL)
        fail_msg("engine_probe(%s): error \"%s\" lacks \"%s\"", path, err, want);
    assert_null(bin.path);
}

static void test_probe_fake_engines(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary bin;
    char p[PATH_MAX], err[512] = "";

    in_box(sb, "redis-server", p);
    fake_engine(p, REDIS_LINE);
    if (!engine_probe(p, 2000, &bin, err, sizeof(err)))
        fail_msg("engine_probe: %s", err);
    assert_int_equal(bin.kind, ENGINE_REDIS);
    assert_string_equal(bin.version, "7.0.15");
    assert_string_equal(bin.line, "7.0");
    assert_string_equal(bin.path, p);
    engine_binary_clear(&bin);
    assert_null(bin.path);

    /* The binary decides: named redis-server, it says Valkey. */
    fake_engine(p, VALKEY_LINE);
    if (!engine_probe(p, 2000, &bin, err, sizeof(err)))
        fail_msg("engine_probe: %s", err);
    assert_int_equal(bin.kind, ENGINE_VALKEY);
    assert_string_equal(bin.version, "8.0.1");
    assert_string_equal(bin.line, "8.0");
    engine_binary_clear(&bin);
}

static void test_probe_refuses_non_engines(void **state)
{
    struct sandbox *sb = *state;
    char p[PATH_MAX];

    expect_probe_error("relative/redis-server", 1000, "is not absolute");
    expect_probe_error(in_box(sb, "missing", p), 1000, "could not stat");
    expect_probe_error(in_box(sb, "missing", p), 1000, "No such file or directory");
    expect_probe_error(sb->dir, 1000, "is a directory");
    expect_probe_error("/dev/null", 1000, "is not a regular file");

    write_file(in_box(sb, "plain", p), 0644, "#!/bin/sh\necho '" REDIS_LINE "'\n");
    expect_probe_error(p, 1000, "is not executable");

    /* Executable bits but no interpreter line: the exec itself fails. */
    write_file(in_box(sb, "noshebang", p), 0755,
               "\x7f"
               "ELF garbage");
    expect_probe_error(p, 1000, "could not run");

    write_file(in_box(sb, "tool", p), 0755, "#!/bin/sh\necho 'redis-check-rdb 7.0.15'\n");
    expect_probe_error(p, 1000,
                       "is not a Redis or Valkey server: --version printed "
                       "\"redis-check-rdb 7.0.15\"");

    write_file(in_box(sb, "control", p), 0755, "#!/bin/sh\nprintf 'bad\\033[1m\\n'\n");
    expect_probe_error(p, 1000, "printed \"bad?[1m\"");

    write_file(in_box(sb, "failing", p), 0755, "#!/bin/sh\necho '" REDIS_LINE "'\nexit 3\n");
    expect_probe_error(p, 1000, "exited with status 3");

    write_file(in_box(sb, "killed", p), 0755, "#!/bin/sh\necho '" REDIS_LINE "'\nkill -9 $$\n");
    expect_probe_error(p, 1000, "was killed by signal 9");

    write_file(in_box(sb, "silent", p), 0755, "#!/bin/sh\nexit 0\n");
    expect_probe_error(p, 1000, "printed \"\"");
}

/* Much more output than is kept must be drained, not block the child. */
static void test_probe_drains_long_output(void **state)
{
    struct sandbox *sb = *state;
    char p[PATH_MAX];

    write_file(
        in_box(sb, "chatty", p), 0755,
        "#!/bin/sh\necho '" VALKEY_LINE "'\ni=0\nwhile [ $i -lt 2000 ]; do\n"
        "  echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'\n"
        "  i=$((i+1))\ndone\n");
    struct engine_binary bin;
    char err[512] = "";
    if (!engine_probe(p, 5000, &bin, err, sizeof(err)))
        fail_msg("engine_probe: %s", err);
    assert_int_equal(bin.kind, ENGINE_VALKEY);
    engine_binary_clear(&bin);
}

/* Whether pid runs: it exists and is not a zombie waiting for whichever
 * process inherited it to reap it. */
static bool process_alive(pid_t pid)
{
    char path[64], stat[512];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* A binary that hangs is killed -- with the children it started -- once
 * the timeout passes. */
static void test_probe_timeout(void **state)
{
    struct sandbox *sb = *state;
    char p[PATH_MAX], pidfile[PATH_MAX], script[2 * PATH_MAX], pidtext[32] = "";

    in_box(sb, "child.pid", pidfile);
    snprintf(script, sizeof(script), "#!/bin/sh\nsleep 30 &\necho $! > '%s'\nwait\n", pidfile);
    write_file(in_box(sb, "hang", p), 0755, script);
    int64_t start = time_mono_us();
    expect_probe_error(p, 300, "did not finish within 300 ms");
    int64_t took_ms = (time_mono_us() - start) / 1000;
    if (took_ms < 250 || took_ms > 3000)
        fail_msg("probe of a hanging binary took %lld ms, expected about 300", (long long)took_ms);

    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    assert_non_null(fgets(pidtext, sizeof(pidtext), f));
    fclose(f);
    pid_t child = (pid_t)atoi(pidtext);
    assert_true(child > 0);
    /* The grandchild was in the killed process group; give the kernel a
     * moment to deliver the signal. */
    for (int i = 0; i < 200 && process_alive(child); i++)
        usleep(10 * 1000);
    if (process_alive(child))
        fail_msg("the hanging binary's child %d outlived the probe", (int)child);
}

/* ---- Discovery --------------------------------------------------------- */

/* The entry of bins with this path, or NULL. */
static const struct engine_binary *find_path(const struct engine_binary *bins, size_t n,
                                             const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(bins[i].path, path) == 0)
            return &bins[i];
    }
    return NULL;
}

static void discover_ok(const char *search, const char *const *extra, size_t n_extra,
                        struct engine_binary **bins, size_t *n)
{
    char err[512] = "";
    if (!engine_discover(search, extra, n_extra, 2000, bins, n, err, sizeof(err)))
        fail_msg("engine_discover(%s): %s", search, err);
}

static void test_discover_search_path(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char a[PATH_MAX], b[PATH_MAX], p[PATH_MAX], q[PATH_MAX], search[3 * PATH_MAX];

    make_dir(in_box(sb, "a", a));
    make_dir(in_box(sb, "b", b));
    join(p, a, "redis-server");
    fake_engine(p, REDIS_LINE);
    join(p, a, "valkey-server");
    fake_engine(p, VALKEY_LINE);
    /* Not engine names: never looked at on the search path. */
    join(p, b, "keydb-server");
    fake_engine(p, "Redis server v=6.3.4 sha=x");
    /* A file of the right name that is no engine: skipped with a warning. */
    join(p, b, "redis-server");
    write_file(p, 0755, "#!/bin/sh\necho hello\n");
    join(p, b, "valkey-server");
    write_file(p, 0644, "#!/bin/sh\necho '" VALKEY_LINE "'\n");

    snprintf(search, sizeof(search), "%s:%s:/nonexistent-dir", b, a);
    discover_ok(search, NULL, 0, &bins, &n);
    assert_int_equal(n, 2);
    join(p, a, "redis-server");
    join(q, a, "valkey-server");
    const struct engine_binary *r = find_path(bins, n, p), *v = find_path(bins, n, q);
    assert_non_null(r);
    assert_non_null(v);
    assert_int_equal(r->kind, ENGINE_REDIS);
    assert_string_equal(r->version, "7.0.15");
    assert_string_equal(r->line, "7.0");
    assert_int_equal(v->kind, ENGINE_VALKEY);
    assert_string_equal(v->version, "8.0.1");
    assert_string_equal(v->line, "8.0");
    engine_binaries_free(bins, n);
}

/* Empty and relative entries would make the current directory count. */
static void test_discover_ignores_relative_entries(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary *bins = NULL;
    size_t n = 99;
    char cwd[PATH_MAX], p[PATH_MAX];

    fake_engine(in_box(sb, "redis-server", p), REDIS_LINE);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(sb->dir), 0);
    discover_ok(":.::./:"
                ":",
                NULL, 0, &bins, &n);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(n, 0);
    engine_binaries_free(bins, n);

    discover_ok("", NULL, 0, &bins, &n);
    assert_int_equal(n, 0);
    engine_binaries_free(bins, n);
}

/* A compatibility symlink named redis-server that points at valkey-server
 * is one binary, reported as Valkey under its own name, whichever comes
 * first on the search path. */
static void test_discover_dedups_symlinks(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char a[PATH_MAX], b[PATH_MAX], target[PATH_MAX], link[PATH_MAX], search[3 * PATH_MAX];

    make_dir(in_box(sb, "a", a));
    make_dir(in_box(sb, "b", b));
    join(target, a, "valkey-server");
    fake_engine(target, VALKEY_LINE);
    join(link, b, "redis-server");
    assert_int_equal(symlink(target, link), 0);

    for (int order = 0; order < 2; order++) {
        snprintf(search, sizeof(search), "%s:%s", order ? a : b, order ? b : a);
        discover_ok(search, NULL, 0, &bins, &n);
        assert_int_equal(n, 1);
        assert_int_equal(bins[0].kind, ENGINE_VALKEY);
        assert_string_equal(bins[0].version, "8.0.1");
        assert_string_equal(bins[0].path, target);
        engine_binaries_free(bins, n);
    }

    /* Listed twice on the path, and once more as an extra: still one. */
    const char *extra[] = {link, target};
    snprintf(search, sizeof(search), "%s:%s:%s", b, a, a);
    discover_ok(search, extra, 2, &bins, &n);
    assert_int_equal(n, 1);
    assert_string_equal(bins[0].path, target);
    engine_binaries_free(bins, n);
}

static void test_discover_extra_paths(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char a[PATH_MAX], p[PATH_MAX], custom[PATH_MAX];

    make_dir(in_box(sb, "a", a));
    join(p, a, "valkey-server");
    fake_engine(p, VALKEY_LINE);
    in_box(sb, "valkey-9", custom);
    fake_engine(custom, "Valkey server v=9.0.0 sha=00000000:0 malloc=libc bits=64 build=1");

    const char *extra[] = {custom};
    discover_ok(a, extra, 1, &bins, &n);
    assert_int_equal(n, 2);
    assert_string_equal(bins[0].path, p);
    assert_string_equal(bins[0].line, "8.0");
    assert_string_equal(bins[1].path, custom);
    assert_int_equal(bins[1].kind, ENGINE_VALKEY);
    assert_string_equal(bins[1].version, "9.0.0");
    assert_string_equal(bins[1].line, "9.0");
    engine_binaries_free(bins, n);
}

/* An extra path was configured on purpose: when it is wrong, say so. */
static void test_discover_bad_extra_path(void **state)
{
    struct sandbox *sb = *state;
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char p[PATH_MAX], bad[PATH_MAX], err[512];
    struct {
        const char *path, *want;
    } cases[] = {
        {NULL, "is not a Redis or Valkey server"},
        {"/nonexistent/valkey-server",
         "could not stat engine binary \"/nonexistent/valkey-server\""},
        {"valkey-server", "is not absolute"},
    };

    fake_engine(in_box(sb, "valkey-server", p), VALKEY_LINE);
    write_file(in_box(sb, "not-an-engine", bad), 0755, "#!/bin/sh\necho nope\n");
    cases[0].path = bad;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *extra[] = {p, cases[i].path};
        strcpy(err, "");
        bins = NULL;
        if (engine_discover(sb->dir, extra, 2, 2000, &bins, &n, err, sizeof(err)))
            fail_msg("engine_discover accepted extra path %s", cases[i].path);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("error \"%s\" lacks \"%s\"", err, cases[i].want);
        assert_null(bins);
    }
}

/* The engines installed on this machine, when there are any: Debian makes
 * redis-server a symlink to the multi-call redis-check-rdb, which picks its
 * mode from argv[0], so this also proves the probe runs the path it was
 * given rather than the resolved one. */
static void test_discover_installed_engines(void **state)
{
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char err[512] = "";

    (void)state;
    if (!engine_discover(NULL, NULL, 0, ENGINE_PROBE_TIMEOUT_MS, &bins, &n, err, sizeof(err)))
        fail_msg("engine_discover($PATH): %s", err);
    for (size_t i = 0; i < n; i++) {
        char line[ENGINE_LINE_MAX];
        struct engine_binary again;
        assert_true(engine_version_line(bins[i].version, line));
        assert_string_equal(line, bins[i].line);
        assert_true(engine_line_compare(bins[i].line, engine_kind_first_line(bins[i].kind)) >= 0);
        if (!engine_probe(bins[i].path, ENGINE_PROBE_TIMEOUT_MS, &again, err, sizeof(err)))
            fail_msg("engine_probe(%s): %s", bins[i].path, err);
        assert_int_equal(again.kind, bins[i].kind);
        assert_string_equal(again.version, bins[i].version);
        engine_binary_clear(&again);
    }
    if (access("/usr/bin/valkey-server", X_OK) == 0) {
        const struct engine_binary *v = find_path(bins, n, "/usr/bin/valkey-server");
        assert_non_null(v);
        assert_int_equal(v->kind, ENGINE_VALKEY);
    }
    if (access("/usr/bin/redis-server", X_OK) == 0) {
        struct engine_binary r;
        if (!engine_probe("/usr/bin/redis-server", ENGINE_PROBE_TIMEOUT_MS, &r, err, sizeof(err)))
            fail_msg("engine_probe(/usr/bin/redis-server): %s", err);
        engine_binary_clear(&r);
    }
    engine_binaries_free(bins, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_kind_name_list),
        cmocka_unit_test(test_kind_unknown_names),
        cmocka_unit_test(test_parse_version),
        cmocka_unit_test(test_parse_version_garbage),
        cmocka_unit_test(test_version_line),
        cmocka_unit_test(test_line_parse_and_compare),
        cmocka_unit_test_setup_teardown(test_probe_fake_engines, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_probe_refuses_non_engines, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_probe_drains_long_output, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_probe_timeout, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_search_path, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_ignores_relative_entries, make_sandbox,
                                        drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_dedups_symlinks, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_extra_paths, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_bad_extra_path, make_sandbox, drop_sandbox),
        cmocka_unit_test_setup_teardown(test_discover_installed_engines, make_sandbox,
                                        drop_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
