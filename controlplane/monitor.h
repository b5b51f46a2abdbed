/* monitor.h -- the host monitor: marks hosts whose agent stopped reporting
 * as lost, then runs the high-availability checks (ha.h). Every cairnd runs
 * one; the update itself decides which of them records a transition, so
 * each is recorded once. */
#ifndef CAIRN_MONITOR_H
#define CAIRN_MONITOR_H

#include "app.h"

struct monitor;

/* Check ten times a second for healthy hosts silent longer than timeout_s,
 * and for groups to fail over. */
struct monitor *monitor_start(struct app *app, int timeout_s);
void monitor_stop(struct monitor *m);

/* Run the checks now rather than at the next tick (any thread). */
void monitor_poke(struct monitor *m);

#endif
