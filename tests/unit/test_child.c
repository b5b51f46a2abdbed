/* test_child.c -- a child process watched without blocking (lib/child.h):
 * its output and exit status, the last bytes of a long output, a program
 * that cannot start, one killed while it runs, and one that outlives the
 * thread that started it. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "child.h"

/* Poll c until it ends (at most 10 s); its status. */
static int wait_end(struct child *c)
{
    const struct timespec pause = {.tv_nsec = 5 * 1000 * 1000};
    int status;
    for (int i = 0; i < 2000; i++) {
        if (child_poll(c, &status))
            return status;
        nanosleep(&pause, NULL);
    }
    fail_msg("the child did not end within 10 s");
    return -1;
}

static struct child *start_sh(const char *script, size_t output_max)
{
    char *const argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    char err[256];
    struct child *c = child_start(argv, output_max, err, sizeof(err));
    if (c == NULL)
        fail_msg("child_start: %s", err);
    return c;
}

static void test_output_and_status(void **state)
{
    size_t len;
    (void)state;
    struct child *c =
        start_sh("echo out; echo err >&2; read x; echo \"stdin: [$x]\"; exit 3", 4096);
    assert_int_equal(wait_end(c), 3);
    assert_string_equal(child_output(c, &len), "out\nerr\nstdin: []\n");
    assert_int_equal(len, strlen("out\nerr\nstdin: []\n"));
    double ran = child_elapsed_s(c);
    assert_true(ran >= 0 && ran < 10);
    usleep(20000);
    assert_float_equal(child_elapsed_s(c), ran, 0); /* stopped with it */
    int status;
    assert_true(child_poll(c, &status)); /* again: still ended */
    assert_int_equal(status, 3);
    child_free(c);
}

/* Signals we ignore or block are the child's to take. */
static void test_signals_reset(void **state)
{
    sigset_t block, old;
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    struct child *c = start_sh("kill -TERM $$; sleep 5", 64);
    assert_int_equal(wait_end(c), 128 + SIGTERM);
    child_free(c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    signal(SIGPIPE, SIG_DFL);
}

static void test_keeps_the_last_bytes(void **state)
{
    size_t len;
    (void)state;
    struct child *c = start_sh("i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done", 32);
    assert_int_equal(wait_end(c), 0);
    const char *out = child_output(c, &len);
    assert_int_equal(len, 32);
    assert_int_equal(strlen(out), 32);
    assert_non_null(strstr(out, "line 1999\n"));
    assert_int_equal(out[len - 1], '\n');
    child_free(c);
}

static void test_cannot_start(void **state)
{
    char *const missing[] = {"/nonexistent/valkey-benchmark", NULL};
    char *const dir[] = {"/tmp", NULL};
    char err[256];
    (void)state;
    assert_null(child_start(missing, 64, err, sizeof(err)));
    assert_string_equal(err, "could not run \"/nonexistent/valkey-benchmark\": No such file or "
                             "directory");
    assert_null(child_start(dir, 64, err, sizeof(err)));
    assert_string_equal(err, "could not run \"/tmp\": not a regular file");
}

static void test_killed_when_freed(void **state)
{
    size_t len;
    int status;
    (void)state;
    struct child *c = start_sh("echo started; exec sleep 30", 64);
    for (int i = 0; i < 1000 && child_output(c, &len)[0] == '\0'; i++) {
        assert_false(child_poll(c, &status));
        usleep(5000);
    }
    assert_string_equal(child_output(c, &len), "started\n");
    child_free(c); /* kills and reaps: nothing is left to wait for */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

struct started {
    struct child *c;
};

static void *start_in_thread(void *arg)
{
    struct started *s = arg;
    s->c = start_sh("echo started; exec sleep 30", 64);
    /* Until the child has set itself up (PR_SET_PDEATHSIG): a thread that
     * ends before that is not its parent thread to die with. */
    size_t len;
    int status;
    for (int i = 0; i < 1000 && child_output(s->c, &len)[0] == '\0'; i++) {
        child_poll(s->c, &status);
        usleep(5000);
    }
    return NULL;
}

/* The child dies with the thread that started it. */
static void test_dies_with_its_thread(void **state)
{
    pthread_t t;
    struct started s = {NULL};
    (void)state;
    assert_int_equal(pthread_create(&t, NULL, start_in_thread, &s), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(wait_end(s.c), 128 + SIGKILL);
    child_free(s.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_and_status),    cmocka_unit_test(test_signals_reset),
        cmocka_unit_test(test_keeps_the_last_bytes), cmocka_unit_test(test_cannot_start),
        cmocka_unit_test(test_killed_when_freed),    cmocka_unit_test(test_dies_with_its_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
