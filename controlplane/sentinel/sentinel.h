/* sentinel.h -- a Sentinel-compatible discovery listener, so that
 * Sentinel-aware clients find a cluster-mode-disabled group's primary
 * through cairnd unchanged (redis-py's Sentinel(...).master_for and the
 * like).
 *
 * It speaks RESP on its own port (default 127.0.0.1:26379) and answers
 * SENTINEL get-master-addr-by-name / masters / master / replicas / slaves /
 * sentinels, PING, AUTH, CLIENT and SUBSCRIBE, publishing +switch-master
 * when a group's primary changes. A client that sends AUTH with a cluster's
 * auth token may ask about that cluster only; without AUTH only PING is
 * answered.
 *
 * Anyone who reaches the port may connect, so every request, connection
 * and answer is bounded (see the top of sentinel.c): a client past a limit
 * is closed, and none can make the listener slow for the others or stop
 * it from shutting down. */
#ifndef CAIRN_SENTINEL_H
#define CAIRN_SENTINEL_H

#include "app.h"
#include "resp_reader.h"

/* What one client request may be: a few dozen short arguments. */
extern const struct resp_limits sentinel_request_limits;

struct sentinel;

/* Listen on host:port (port 0: any free one) in a thread of its own, for
 * at most app->cfg.sentinel_max_clients connections at once. Returns NULL
 * with a message when the address cannot be bound. */
struct sentinel *sentinel_start(struct app *app, const char *host, int port, char *err,
                                size_t errsize);

/* The port it listens on (useful after asking for port 0). */
int sentinel_port(const struct sentinel *s);

/* Close every connection and stop the thread. */
void sentinel_stop(struct sentinel *s);

#endif
