/* child.c -- a child process watched without blocking (child.h). */
#define _GNU_SOURCE
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timeutil.h"
#include "xalloc.h"

struct child {
    pid_t pid;
    int fd;     /* the read end of its output; -1 once at its end */
    bool ended; /* reaped */
    int status; /* once ended: its exit status, or 128 + the signal */
    char *out;  /* output_max + 1 bytes */
    size_t len, max;
    int64_t started_us, ended_us;
};

/* In the child, between fork() and exec: only async-signal-safe calls. */
static void become(char *const argv[], pid_t parent, int out_fd)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigset_t none;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127); /* the parent is gone already */
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(out_fd, STDERR_FILENO) < 0)
        _exit(127);
    close_range(3, ~0U, 0);
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP and the gaps */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    _exit(127);
}

struct child *child_start(char *const argv[], size_t output_max, char *err, size_t errsize)
{
    struct stat st;
    int fds[2];

    if (stat(argv[0], &st) != 0 || access(argv[0], X_OK) != 0) {
        snprintf(err, errsize, "could not run \"%s\": %s", argv[0], strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsize, "could not run \"%s\": not a regular file", argv[0]);
        return NULL;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, errsize, "could not make a pipe for \"%s\": %s", argv[0], strerror(errno));
        return NULL;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errsize, "could not start \"%s\": %s", argv[0], strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0)
        become(argv, parent, fds[1]);
    close(fds[1]);
    (void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
    struct child *c = xcalloc(1, sizeof(*c));
    c->pid = pid;
    c->fd = fds[0];
    c->max = output_max;
    c->out = xcalloc(output_max + 1, 1);
    c->started_us = time_mono_us();
    return c;
}

/* Keep the last max bytes of what was written. */
static void keep(struct child *c, const char *buf, size_t n)
{
    if (n >= c->max) {
        memcpy(c->out, buf + n - c->max, c->max);
        c->len = c->max;
    } else {
        size_t drop = c->len + n > c->max ? c->len + n - c->max : 0;
        memmove(c->out, c->out + drop, c->len - drop);
        memcpy(c->out + c->len - drop, buf, n);
        c->len += n - drop;
    }
    c->out[c->len] = '\0';
}

/* Read what is there; at the end of the output, close the pipe. */
static void drain(struct child *c)
{
    char buf[4096];
    while (c->fd >= 0) {
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n > 0) {
            keep(c, buf, (size_t)n);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(c->fd);
            c->fd = -1;
        } else if (errno == EAGAIN) {
            return;
        }
    }
}

bool child_poll(struct child *c, int *status)
{
    int ws;

    drain(c);
    if (!c->ended) {
        pid_t w = waitpid(c->pid, &ws, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR))
            return false;
        c->ended = true;
        c->ended_us = time_mono_us();
        /* w < 0: reaped by someone else; its status is lost. */
        c->status = w == c->pid && WIFEXITED(ws)     ? WEXITSTATUS(ws)
                    : w == c->pid && WIFSIGNALED(ws) ? 128 + WTERMSIG(ws)
                                                     : 127;
        /* What it wrote before it ended is in the pipe now. */
        drain(c);
    }
    *status = c->status;
    return true;
}

const char *child_output(const struct child *c, size_t *len)
{
    *len = c->len;
    return c->out;
}

double child_elapsed_s(const struct child *c)
{
    return (double)((c->ended ? c->ended_us : time_mono_us()) - c->started_us) / 1e6;
}

void child_free(struct child *c)
{
    if (c == NULL)
        return;
    if (!c->ended) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    free(c);
}
