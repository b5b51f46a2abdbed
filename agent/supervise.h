/* supervise.h -- the engine nodes of this host: finding and re-adopting
 * them at start, converging them to the desired set, starting, stopping,
 * restarting and removing them, following their health, and watching the
 * primaries that its replicas follow (agent/watch.h), telling cairnd at
 * once when one falls silent or answers again.
 *
 * Every function takes the current monotonic time and never blocks, except
 * agent_sup_discover(), which runs once before the loop and may wait up to
 * a second per engine for its INFO. The loop calls agent_sup_tick() when
 * agent_sup_next_us() has come and the agent_sup_*_ready() functions when a
 * descriptor from agent_sup_pollfds() is ready. */
#ifndef CAIRN_AGENT_SUPERVISE_H
#define CAIRN_AGENT_SUPERVISE_H

#include <poll.h>
#include <stdint.h>

#include "agent.h"

/* Find the engine binaries (on PATH and the configured engine paths),
 * replacing what was found before; the engines list sent to cairnd follows.
 * Returns false with a message when a configured path is unusable. Blocks
 * while each binary answers --version. */
bool agent_sup_find_engines(struct agent *a, char *err, size_t errsize);

/* Find the nodes under DATA_DIR/nodes and re-adopt the engines still
 * running from their pidfiles, after checking each pid is the engine the
 * agent started there: its executable is an engine binary; it works in
 * that node's data directory (or its command line names the node's config:
 * engines rewrite their command line to "valkey-server 127.0.0.1:7001", so
 * the working directory is the check that holds); and, when it answers,
 * INFO gives that pid, the node's port and the node's config file. One
 * that passes the /proc checks but does not answer (stopped, hung) is
 * adopted as unresponsive rather than replaced. Healthy engines are not
 * restarted. */
void agent_sup_discover(struct agent *a, int64_t now_us);

/* Make a->desired the desired set and converge every node to it. */
void agent_sup_apply(struct agent *a, int64_t now_us);

/* Run due timers: restarts after backoff, stop deadlines, health checks,
 * the watches of replicas' primaries (started, moved to a new primary or
 * ended as the replicas' INFO says). */
void agent_sup_tick(struct agent *a, int64_t now_us);

/* The earliest time agent_sup_tick() has something to do (INT64_MAX: none). */
int64_t agent_sup_next_us(const struct agent *a);

/* Fill fds (room for 3 per node) with the pidfds, engine connections and
 * watches of replicas' primaries to wait on and the poll(2) events to wait
 * for; returns how many. Entry i of the result maps back to its node
 * through agent_sup_ready(). */
unsigned agent_sup_pollfds(const struct agent *a, struct pollfd *fds);

/* Handle the poll(2) revents returned for the fds agent_sup_pollfds()
 * filled. */
void agent_sup_ready(struct agent *a, const struct pollfd *fds, unsigned n, int64_t now_us);

/* SIGCHLD arrived: reap every child engine that has exited. */
void agent_sup_reap(struct agent *a, int64_t now_us);

/* Let go of every node without touching its engine (the agent is exiting;
 * engines keep serving and the next agent re-adopts them), and of the
 * binaries found. */
void agent_sup_release(struct agent *a);

#endif
