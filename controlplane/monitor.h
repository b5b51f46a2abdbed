/* monitor.h -- the host monitor: marks hosts whose agent stopped reporting
 * as lost, then runs the high-availability checks (ha.h). Every cairnd runs
 * one, and the one holding the control-plane leadership (leader.h) does the
 * work; the others wait to take it over.
 *
 * The heartbeat clock: a host's silence counts only from the moment this
 * cairnd could hear it, which is the later of when it started listening
 * (monitor_start) and when its database came back after an outage (the
 * first check that reaches it after one that could not). Before then a
 * heartbeat could not have been recorded, so a restart after a pause, or a
 * database outage, longer than the heartbeat timeout loses no host: each
 * gets a whole timeout to report again. For the same reason a loss that is
 * recorded already (by another cairnd sharing the database, or before a
 * restart) is not acted on -- no failover, no replacement, no operation
 * failed -- until this cairnd has itself watched for a whole timeout: the
 * host may not have had a chance to report to it yet. */
#ifndef CAIRN_MONITOR_H
#define CAIRN_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "app.h"

struct monitor;

/* The monitor of app, for hosts silent longer than timeout_s; nothing runs
 * until monitor_start(). Make it before any thread that reads app->monitor
 * starts; free it with monitor_free() once they have all stopped. */
struct monitor *monitor_new(struct app *app, int timeout_s);

/* Start checking, ten times a second, for hosts to mark lost and groups to
 * fail over. Call once cairnd listens: the heartbeat clock starts here. */
void monitor_start(struct monitor *m);

/* Stop checking (if started); the monitor still answers the calls below. */
void monitor_stop(struct monitor *m);
/* Stop it if need be, and free it. */
void monitor_free(struct monitor *m);

/* An agent's sync waited lag_us to be heard: recorded that long after it
 * arrived, or still waiting (any thread; NULL: nothing). Over a second,
 * cairnd itself is behind its agents -- its workers or its database
 * saturated, a lock held -- and the hosts' silence is its own: the monitor
 * is deaf, as while the database is out of reach, until syncs are heard on
 * time again for a while, and the clock then starts anew. */
void monitor_heard_late(struct monitor *m, int64_t lag_us);

/* Run the checks now rather than at the next tick (any thread). */
void monitor_poke(struct monitor *m);

/* The leadership term this cairnd's monitor decides in; 0 when another
 * cairnd leads (any thread; 0 for NULL). */
long long monitor_leader_term(struct monitor *m);

/* Whether this cairnd hears heartbeats now: started, its database in
 * reach, its agents' syncs on time (any thread; false for NULL). */
bool monitor_hearing(struct monitor *m);

/* Whether this cairnd has watched heartbeats for a whole timeout, so that a
 * host recorded lost has had a chance to report to it and the loss may be
 * acted on (any thread; false for NULL). */
bool monitor_trusts_losses(struct monitor *m);

#endif
