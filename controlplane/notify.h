/* notify.h -- a LISTEN connection that turns PostgreSQL notifications into
 * wake-ups of parked long-polls, so a desired-state change made by any
 * cairnd reaches the agents held by this one within milliseconds. */
#ifndef CAIRN_NOTIFY_H
#define CAIRN_NOTIFY_H

struct http_server;
struct notify;

/* Start a thread listening on channel "cairn_desired" at url; each
 * notification wakes the long-polls parked under its payload (a host id).
 * After every (re)connection it wakes them all, since notifications sent
 * while it was away are lost. Never fails: it retries while the database is
 * down. */
struct notify *notify_start(const char *url, struct http_server *server);

/* Stop the thread and close its connection. */
void notify_stop(struct notify *n);

#endif
