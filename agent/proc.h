/* proc.h -- engine processes as the operating system sees them: starting
 * one in its own session, signalling it, watching it through a pidfd, and
 * the /proc checks that tell whether a pid from a pidfile is still the
 * engine the agent started. */
#ifndef CAIRN_AGENT_PROC_H
#define CAIRN_AGENT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "converge.h"

/* Who an engine runs as: the agent's own user (switch false), or, for an
 * agent running as root, an unprivileged one. */
struct agent_proc_user {
    bool switch_user;
    uid_t uid;
    gid_t gid;
};

/* Start `binary conf_path` as a child in a new session (so its process
 * group id is its pid), stdin from /dev/null, stdout and stderr appended to
 * log_path (opened before the user is switched: the engine cannot replace
 * its log), every other descriptor closed, signal mask and dispositions
 * reset, as user (its groups dropped) when user->switch_user. On success
 * *pid is the child and *pidfd (close-on-exec) watches it. Returns false
 * with a message in err when the binary cannot be run. */
bool agent_proc_spawn(const char *binary, const char *conf_path, const char *log_path,
                      const struct agent_proc_user *user, pid_t *pid, int *pidfd, char *err,
                      size_t errsize);

/* A pidfd (close-on-exec, non-blocking) for any process, child or not;
 * -1 with errno set when it does not exist. Readable once it has exited. */
int agent_proc_pidfd_open(pid_t pid);

/* Send sig through the pidfd, so a recycled pid is never hit. Returns false
 * when the process is gone. */
bool agent_proc_signal(int pidfd, int sig);

/* Send sig to the whole process group pgid (the engine and anything it
 * forked, such as a background save). */
void agent_proc_signal_group(pid_t pgid, int sig);

/* Whether the process behind pidfd has exited (non-blocking). */
bool agent_proc_exited(int pidfd);

/* Reap the child pid if it has exited: true with *wstatus set, false when
 * it still runs (or is not our child). */
bool agent_proc_reap(pid_t pid, int *wstatus);

/* How a wait status ends a run: a clean exit or a failure. Pure. */
enum agent_exit agent_proc_exit_kind(int wstatus);

/* Describe a wait status ("exit status 1", "signal 9") into buf. Pure. */
const char *agent_proc_describe(int wstatus, char *buf, size_t size);

/* Read a pidfile: true with *pid when it holds a positive decimal pid. */
bool agent_proc_read_pidfile(const char *path, pid_t *pid);

/* Write pid to path atomically (mode 0644). */
bool agent_proc_write_pidfile(const char *path, pid_t pid, char *err, size_t errsize);

/* The resolved executable of a running process (readlink of
 * /proc/PID/exe, without a " (deleted)" suffix) into buf. */
bool agent_proc_exe(pid_t pid, char *buf, size_t size);

/* Whether the process's working directory is dir (both resolved), or its
 * command line mentions needle (an engine rewrites its command line to
 * "valkey-server 127.0.0.1:7001", so the working directory, which the
 * engine sets to its data directory, is the check that survives). */
bool agent_proc_runs_in(pid_t pid, const char *dir, const char *needle);

#endif
