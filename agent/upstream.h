/* upstream.h -- the primary a replica follows, as its agent reads it for
 * ReplicationLag: one persistent non-blocking RESP connection
 * (engine/resp.h) to the replica's master_host:port, authenticated like the
 * agent's own engine connections, over which each metrics tick asks
 * INFO replication once.
 *
 * The loop polls agent_upstream_fd() for agent_upstream_events(), calls
 * agent_upstream_io() when it is ready and agent_upstream_expire() once
 * agent_upstream_deadline_us() has come. A question unanswered within
 * AGENT_UPSTREAM_TIMEOUT_US, a refused, failed or closed connection all end
 * the same way: the connection is closed (a hung primary holds nothing of
 * the agent's but a socket), and the next question connects again. Only
 * numeric addresses are used: resolving a name would block the loop. */
#ifndef CAIRN_AGENT_UPSTREAM_H
#define CAIRN_AGENT_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "info.h"

/* How long the primary has to answer, connection included. */
#define AGENT_UPSTREAM_TIMEOUT_US 200000LL

enum agent_upstream_status {
    AGENT_UPSTREAM_WAITING,  /* nothing asked, or no answer yet */
    AGENT_UPSTREAM_ANSWERED, /* the INFO reply is in */
    AGENT_UPSTREAM_FAILED,   /* no answer will come: err says why */
};

struct resp_tls;

/* A reader of the primary at host:port (an IPv4 or IPv6 address),
 * authenticating as username (as for agent_pinger_new()) with password
 * (NULL or "": none), over TLS as for agent_pinger_new(); nothing is sent
 * before the first agent_upstream_ask(). Free with agent_upstream_free(). */
struct agent_upstream *agent_upstream_new(const char *host, int port, const char *username,
                                          const char *password, const struct resp_tls *tls);

/* Close the connection and free u; NULL is allowed. */
void agent_upstream_free(struct agent_upstream *u);

/* Whether u reads host:port. */
bool agent_upstream_is(const struct agent_upstream *u, const char *host, int port);

/* Ask INFO replication, connecting first when there is no connection. A
 * question still unanswered from before is given up (the connection is
 * closed and made again). Returns false, with err set and nothing
 * pending, when the question could not be sent. */
bool agent_upstream_ask(struct agent_upstream *u, int64_t now_us, char *err, size_t errsize);

/* The socket to poll (-1: none) and the events to poll it for. */
int agent_upstream_fd(const struct agent_upstream *u);
short agent_upstream_events(const struct agent_upstream *u);

/* When the question asked times out (INT64_MAX: nothing asked). */
int64_t agent_upstream_deadline_us(const struct agent_upstream *u);

/* Handle poll() revents on the socket. ANSWERED hands the parsed reply
 * over in *info (free it with engine_info_free()); FAILED closes the
 * connection and sets err. */
enum agent_upstream_status agent_upstream_io(struct agent_upstream *u, short revents,
                                             struct engine_info **info, char *err, size_t errsize);

/* Give up a question whose deadline has passed: FAILED (connection closed,
 * err set), else WAITING. */
enum agent_upstream_status agent_upstream_expire(struct agent_upstream *u, int64_t now_us,
                                                 char *err, size_t errsize);

#endif
