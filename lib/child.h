/* child.h -- a program run as a child process and watched without
 * blocking: started with its output (stdout and stderr together) on a
 * pipe, polled for what it wrote and whether it has ended, killed when it
 * must stop. For a caller that polls between other work (an operation's
 * step) instead of waiting on the program.
 *
 * Linux only: the child is killed when the thread that started it ends
 * (PR_SET_PDEATHSIG), so none outlives a process killed outright -- unless
 * that thread ends in the instant between the fork and the child's first
 * call. Its
 * signal mask is emptied and every signal it inherits as ignored is reset,
 * stdin is /dev/null, and it gets no other descriptor of ours. */
#ifndef CAIRN_CHILD_H
#define CAIRN_CHILD_H

#include <stdbool.h>
#include <stddef.h>

struct child;

/* Start argv[0] (an absolute path) with argv (NULL-terminated), keeping the
 * last output_max bytes it writes. NULL with a message in err when it
 * cannot be started: not an executable file, or no process or pipe to be
 * had. A program that starts and then fails exits with status 127. */
struct child *child_start(char *const argv[], size_t output_max, char *err, size_t errsize);

/* Collect what it wrote since the last call and reap it if it has ended.
 * True once it has ended: *status is then its exit status, or 128 plus
 * the signal that killed it; its whole output is in. */
bool child_poll(struct child *c, int *status);

/* What it wrote so far (its last output_max bytes), NUL-terminated; *len
 * gets the length. Valid until the next child_poll() or child_free(). */
const char *child_output(const struct child *c, size_t *len);

/* Seconds since it started, and since it ended once child_poll() saw it
 * end: how long it ran. */
double child_elapsed_s(const struct child *c);

/* Kill it (SIGKILL) unless it has ended, reap it and free c. NULL is
 * allowed. */
void child_free(struct child *c);

#endif
