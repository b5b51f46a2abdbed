/* monitor.h -- the host monitor: marks hosts whose agent stopped reporting
 * as lost. Every cairnd runs one; the update itself decides which of them
 * records a transition, so each is recorded once. */
#ifndef CAIRN_MONITOR_H
#define CAIRN_MONITOR_H

#include "db.h"

struct monitor;

/* Check every second for healthy hosts silent longer than timeout_s. */
struct monitor *monitor_start(struct db_pool *pool, int timeout_s);
void monitor_stop(struct monitor *m);

#endif
