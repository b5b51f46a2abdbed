/* notify.h -- a LISTEN connection that turns PostgreSQL notifications into
 * wake-ups of parked long-polls, so a desired-state change made by any
 * cairnd reaches the agents held by this one within milliseconds, and the
 * end of an operation run by any cairnd answers the requests this one holds
 * waiting for it (Prefer: wait). */
#ifndef CAIRN_NOTIFY_H
#define CAIRN_NOTIFY_H

struct http_server;
struct monitor;
struct notify;
struct token_cache;

/* Start a thread listening at url for desired-set changes and operation
 * ends (store_hosts_listen(), store_operations_listen()); each notification
 * wakes the long-polls parked under its payload: a host id (agents' syncs)
 * or an operation id (writes waiting for their operation). Both are random
 * UUIDs, so neither wakes the other's. After every (re)connection it wakes
 * them all, since notifications sent while it was away are lost. Credential
 * changes (store_credentials_listen()) drop the credential from tokens,
 * which it trusts while it listens and empties whenever it stops. Engines
 * in trouble reported to another cairnd (store_trouble_listen()) poke
 * monitor. Never fails: it retries while the database is down. */
struct notify *notify_start(const char *url, struct http_server *server, struct token_cache *tokens,
                            struct monitor *monitor);

/* Stop the thread and close its connection. */
void notify_stop(struct notify *n);

#endif
