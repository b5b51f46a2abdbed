/* loop.h -- the agent's single-threaded event loop: cairnd's HTTP channel,
 * signals, engine exits and engine health checks, all waited on by one
 * curl_multi_poll(). */
#ifndef CAIRN_AGENT_LOOP_H
#define CAIRN_AGENT_LOOP_H

#include <stdint.h>

#include "agent.h"

/* Block SIGCHLD, SIGTERM, SIGINT and SIGHUP, ignore SIGPIPE, and return a
 * non-blocking signalfd for the blocked ones (-1 with errno on failure).
 * Call before any engine is started, so no SIGCHLD is missed. */
int agent_loop_signalfd(void);

/* Run until SIGTERM or SIGINT (or a fatal configuration problem) and
 * return the exit status. Engines are left running on the way out. */
int agent_loop_run(struct agent *a);

/* The curl_waitfd that waits on fd for poll(2) events (POLLIN, POLLOUT),
 * and the poll(2) flags of the revents curl_multi_poll() set in one: the
 * engine connections speak poll(2), the loop waits with curl. Pure. */
struct curl_waitfd agent_loop_waitfd(int fd, short events);
short agent_loop_revents(short waitfd_revents);

/* Delay before retrying cairnd after the given number of failures in a
 * row (1 → 100 ms, doubling, capped at 5 s, or at half of cairnd's
 * heartbeat_timeout_s when that is shorter; 0: not known). Pure. */
int64_t agent_loop_backoff_us(unsigned failures, int heartbeat_timeout_s);

#endif
