/* loop.h -- the agent's single-threaded event loop: cairnd's HTTP channel,
 * signals, engine exits and engine health checks, all waited on by one
 * curl_multi_poll(). */
#ifndef CAIRN_AGENT_LOOP_H
#define CAIRN_AGENT_LOOP_H

#include "agent.h"

/* Block SIGCHLD, SIGTERM, SIGINT and SIGHUP, ignore SIGPIPE, and return a
 * non-blocking signalfd for the blocked ones (-1 with errno on failure).
 * Call before any engine is started, so no SIGCHLD is missed. */
int agent_loop_signalfd(void);

/* Run until SIGTERM or SIGINT (or a fatal configuration problem) and
 * return the exit status. Engines are left running on the way out. */
int agent_loop_run(struct agent *a);

#endif
