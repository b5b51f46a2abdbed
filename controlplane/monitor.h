/* monitor.h -- the host monitor: marks hosts whose agent stopped reporting
 * as lost, then runs the high-availability checks (ha.h). Every cairnd runs
 * one; the update itself decides which of them records a transition, so
 * each is recorded once.
 *
 * The heartbeat clock: a host's silence counts only from the moment this
 * cairnd could hear it, which is the later of when it started listening
 * (monitor_start) and when its database came back after an outage (the
 * first check that reaches it after one that could not). Before then a
 * heartbeat could not have been recorded, so a restart after a pause, or a
 * database outage, longer than the heartbeat timeout loses no host: each
 * gets a whole timeout to report again. */
#ifndef CAIRN_MONITOR_H
#define CAIRN_MONITOR_H

#include "app.h"

struct monitor;

/* Check ten times a second for hosts to mark lost and for groups to fail
 * over. Call once cairnd listens: the heartbeat clock starts here. */
struct monitor *monitor_start(struct app *app, int timeout_s);
void monitor_stop(struct monitor *m);

/* Run the checks now rather than at the next tick (any thread). */
void monitor_poke(struct monitor *m);

#endif
