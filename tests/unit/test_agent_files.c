/* test_agent_files.c -- the agent's files in its data directory: atomic
 * private writes, directory trees, the identity, pidfiles and wait statuses
 * (agent/files.h, agent/identity.h, agent/proc.h). Works in a temp dir. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "files.h"
#include "identity.h"
#include "proc.h"
#include "xalloc.h"

static int make_dir(void **state)
{
    char *dir = xstrdup("/tmp/cairn-test-agent-files-XXXXXX");
    if (mkdtemp(dir) == NULL)
        fail_msg("mkdtemp failed");
    *state = dir;
    return 0;
}

static int remove_dir(void **state)
{
    char err[256];
    if (!agent_files_remove_tree(*state, err, sizeof(err)))
        fail_msg("%s", err);
    free(*state);
    return 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_write_atomic(void **state)
{
    char *path = xasprintf("%s/secret.json", (char *)*state);
    char *tmp = xasprintf("%s.tmp", path);
    char err[256];
    struct stat st;
    size_t len;

    assert_true(agent_files_write_atomic(path, "first", 5, 0600, err, sizeof(err)));
    assert_true(agent_files_write_atomic(path, "second!", 7, 0600, err, sizeof(err)));
    char *text = agent_files_read(path, 1024, &len);
    assert_string_equal(text, "second!");
    assert_int_equal(len, 7);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_not_equal(access(tmp, F_OK), 0); /* no temp file left behind */
    free(text);

    /* Too large for the caller's cap. */
    assert_null(agent_files_read(path, 3, NULL));
    /* A directory that does not exist: a message naming the file. */
    char *bad = xasprintf("%s/missing/x.json", (char *)*state);
    assert_false(agent_files_write_atomic(bad, "x", 1, 0600, err, sizeof(err)));
    assert_non_null(strstr(err, "missing/x.json.tmp"));
    free(bad);
    free(tmp);
    free(path);
}

static void test_mkdirs_and_remove_tree(void **state)
{
    char *deep = xasprintf("%s/nodes/a/data/appendonlydir", (char *)*state);
    char *top = xasprintf("%s/nodes/a", (char *)*state);
    char *file = xasprintf("%s/f.aof", deep);
    char *link = xasprintf("%s/link", top);
    char *outside = xasprintf("%s/keep", (char *)*state);
    char err[256];

    assert_true(agent_files_mkdirs(deep, 0700, err, sizeof(err)));
    assert_true(agent_files_mkdirs(deep, 0700, err, sizeof(err))); /* again: fine */
    write_text(file, "data");
    write_text(outside, "keep me");
    /* A symbolic link inside is removed, not followed. */
    assert_int_equal(symlink(outside, link), 0);
    assert_true(agent_files_remove_tree(top, err, sizeof(err)));
    assert_int_not_equal(access(top, F_OK), 0);
    assert_int_equal(access(outside, F_OK), 0);
    assert_true(agent_files_remove_tree(top, err, sizeof(err))); /* already gone */
    free(deep);
    free(top);
    free(file);
    free(link);
    free(outside);
}

static void test_identity(void **state)
{
    const char *dir = *state;
    struct agent_identity id = {.host_id = "7b0c2c9e-0d5e-4a8e-9d55-0f1e2d3c4b5a",
                                .credential = "cairn_agent_0123456789ab_secret"};
    struct agent_identity got;
    char err[256];
    struct stat st;

    assert_false(agent_identity_load(dir, &got, err, sizeof(err)));
    assert_string_equal(err, ""); /* absent: not an error */
    assert_true(agent_identity_save(dir, &id, err, sizeof(err)));
    assert_true(agent_identity_load(dir, &got, err, sizeof(err)));
    assert_string_equal(got.host_id, id.host_id);
    assert_string_equal(got.credential, id.credential);
    char *path = xasprintf("%s/identity.json", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    write_text(path, "{\"host_id\": \"x\"}");
    assert_false(agent_identity_load(dir, &got, err, sizeof(err)));
    assert_non_null(strstr(err, "malformed"));
    assert_string_equal(got.host_id, "");
    free(path);
}

static void test_pidfile(void **state)
{
    char *path = xasprintf("%s/engine.pid", (char *)*state);
    char err[256];
    pid_t pid = 0;

    assert_false(agent_proc_read_pidfile(path, &pid));
    assert_true(agent_proc_write_pidfile(path, 12345, err, sizeof(err)));
    assert_true(agent_proc_read_pidfile(path, &pid));
    assert_int_equal(pid, 12345);
    static const char *const bad[] = {"", "abc\n", "12x\n", "-5\n", "1\n", "99999999999\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_text(path, bad[i]);
        pid = 7;
        if (agent_proc_read_pidfile(path, &pid))
            fail_msg("pidfile \"%s\" accepted as %d", bad[i], (int)pid);
        assert_int_equal(pid, 7);
    }
    write_text(path, "4242"); /* the engine writes no newline */
    assert_true(agent_proc_read_pidfile(path, &pid));
    assert_int_equal(pid, 4242);
    free(path);
}

/* A real wait status: a child that exits with code, or kills itself with sig. */
static int status_of(int code, int sig)
{
    int st = 0;
    pid_t pid = fork();

    if (pid == 0) {
        if (sig)
            raise(sig);
        _exit(code);
    }
    waitpid(pid, &st, 0);
    return st;
}

static void test_exit_kinds(void **state)
{
    char buf[64];

    (void)state;
    assert_int_equal(agent_proc_exit_kind(status_of(0, 0)), AGENT_EXIT_CLEAN);
    assert_int_equal(agent_proc_exit_kind(status_of(1, 0)), AGENT_EXIT_FAILURE);
    assert_int_equal(agent_proc_exit_kind(status_of(0, SIGKILL)), AGENT_EXIT_FAILURE);
    assert_string_equal(agent_proc_describe(status_of(3, 0), buf, sizeof(buf)), "exit status 3");
    assert_string_equal(agent_proc_describe(status_of(0, SIGKILL), buf, sizeof(buf)), "signal 9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_atomic, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_mkdirs_and_remove_tree, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_identity, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_pidfile, make_dir, remove_dir),
        cmocka_unit_test(test_exit_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
