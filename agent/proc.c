/* proc.c -- starting, signalling and recognising engine processes. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"

/* The child's side of agent_proc_spawn(): only async-signal-safe calls
 * between fork and exec. A failure writes its step and errno to report (a
 * close-on-exec pipe, so a successful exec closes it unwritten). */
static void exec_child(const char *binary, char *const argv[], const char *log_path,
                       const struct agent_proc_user *user, int report)
{
    int fail[2] = {0, 0};
    int fd;
    sigset_t none;

    sigemptyset(&none);
    if (setsid() < 0) {
        fail[0] = 1;
        goto out;
    }
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* SIGKILL and SIGSTOP refuse: no matter */
    sigprocmask(SIG_SETMASK, &none, NULL);
    fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, 0) < 0) {
        fail[0] = 2;
        goto out;
    }
    fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0640);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(1, 2) < 0) {
        fail[0] = 3;
        goto out;
    }
    if (user != NULL && user->switch_user &&
        (setgroups(0, NULL) != 0 || setgid(user->gid) != 0 || setuid(user->uid) != 0)) {
        fail[0] = 4;
        goto out;
    }
    if (report > 3)
        close_range(3, (unsigned)report - 1, 0);
    close_range((unsigned)report + 1, ~0u, 0);
    execv(binary, argv);
    fail[0] = 5;
out:
    fail[1] = errno;
    if (write(report, fail, sizeof(fail)) < 0)
        _exit(127);
    _exit(127);
}

bool agent_proc_spawn(const char *binary, const char *conf_path, const char *log_path,
                      const struct agent_proc_user *user, pid_t *pid, int *pidfd, char *err,
                      size_t errsize)
{
    static const char *const steps[] = {
        "",      "start a session", "open /dev/null", "open its log", "switch to the engine user",
        "run it"};
    char *argv[] = {(char *)binary, (char *)conf_path, NULL};
    int report[2], fail[2] = {0, 0};

    if (pipe2(report, O_CLOEXEC) != 0) {
        snprintf(err, errsize, "could not start \"%s\": pipe: %s", binary, strerror(errno));
        return false;
    }
    *pid = fork();
    if (*pid == 0)
        exec_child(binary, argv, log_path, user, report[1]);
    close(report[1]);
    if (*pid < 0) {
        snprintf(err, errsize, "could not start \"%s\": fork: %s", binary, strerror(errno));
        close(report[0]);
        return false;
    }
    ssize_t got;
    do
        got = read(report[0], fail, sizeof(fail));
    while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof(fail) && fail[0] > 0 && fail[0] <= 5) {
        waitpid(*pid, NULL, 0);
        snprintf(err, errsize, "could not start \"%s\": %s: %s", binary, steps[fail[0]],
                 strerror(fail[1]));
        return false;
    }
    *pidfd = agent_proc_pidfd_open(*pid);
    if (*pidfd < 0) {
        /* Only when descriptors run out: without a pidfd the process could
         * not be watched, so do not leave it running. */
        snprintf(err, errsize, "could not watch process %d: %s", (int)*pid, strerror(errno));
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
        return false;
    }
    return true;
}

int agent_proc_pidfd_open(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);

    if (fd >= 0) {
        /* pidfds are close-on-exec from birth; make polling non-blocking. */
        (void)fcntl(fd, F_SETFL, O_NONBLOCK);
    }
    return fd;
}

bool agent_proc_signal(int pidfd, int sig)
{
    return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0;
}

void agent_proc_signal_group(pid_t pgid, int sig)
{
    if (pgid > 1)
        (void)kill(-pgid, sig);
}

bool agent_proc_exited(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};

    return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

bool agent_proc_reap(pid_t pid, int *wstatus)
{
    pid_t r;

    do {
        r = waitpid(pid, wstatus, WNOHANG);
    } while (r < 0 && errno == EINTR);
    return r == pid;
}

enum agent_exit agent_proc_exit_kind(int wstatus)
{
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        return AGENT_EXIT_CLEAN;
    return AGENT_EXIT_FAILURE;
}

const char *agent_proc_describe(int wstatus, char *buf, size_t size)
{
    if (WIFEXITED(wstatus))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, size, "signal %d", WTERMSIG(wstatus));
    else
        snprintf(buf, size, "wait status %d", wstatus);
    return buf;
}

bool agent_proc_read_pidfile(const char *path, pid_t *pid)
{
    char *text = agent_files_read(path, 64, NULL);
    char *end;
    long v;

    if (text == NULL)
        return false;
    errno = 0;
    v = strtol(text, &end, 10);
    bool ok = errno == 0 && end != text && (*end == '\0' || *end == '\n') && v > 1 && v < INT_MAX;
    free(text);
    if (ok)
        *pid = (pid_t)v;
    return ok;
}

bool agent_proc_write_pidfile(const char *path, pid_t pid, char *err, size_t errsize)
{
    char text[24];
    int n = snprintf(text, sizeof(text), "%d\n", (int)pid);

    return agent_files_write_atomic(path, text, (size_t)n, 0644, err, errsize);
}

bool agent_proc_exe(pid_t pid, char *buf, size_t size)
{
    char link[64];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    n = readlink(link, buf, size - 1);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *deleted = strstr(buf, " (deleted)");
    if (deleted != NULL && deleted[10] == '\0')
        *deleted = '\0';
    return true;
}

bool agent_proc_runs_in(pid_t pid, const char *dir, const char *needle)
{
    char path[64], buf[PATH_MAX], want[PATH_MAX];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
    n = readlink(path, buf, sizeof(buf) - 1);
    if (n > 0 && realpath(dir, want) != NULL) {
        buf[n] = '\0';
        if (strcmp(buf, want) == 0)
            return true;
    }
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\0')
            buf[i] = ' '; /* arguments are NUL-separated */
    }
    return strstr(buf, needle) != NULL;
}
