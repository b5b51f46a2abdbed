/* watch.h -- the primary of a local replica, watched from this host: a PING
 * every AGENT_WATCH_INTERVAL_US over one persistent non-blocking RESP
 * connection (engine/resp.h). cairnd declares a host lost at once only when
 * its agent is silent and its engines answer none of the vantage points
 * that watch them; the agents of the replicas are those vantage points, and
 * each reports how long its replicas' primaries have been silent
 * (primary_silent_ms in the sync report, docs/agent-protocol.md).
 *
 * Why not agent/pinger.h, which probes the agent's own engines: the pinger
 * also asks INFO every 2 s (and COMMAND), work a primary should not do for
 * every replica's agent; what it reports are probe outcomes for the
 * engine's state machine (a PING unanswered for a second fails, a refused
 * connection counts only when its retry fails too); and an AUTH the engine
 * refuses is a failure to it. A watch needs one fact: when the primary last
 * answered anything. An error reply, a refused AUTH included, proves the
 * engine alive as well as PONG does.
 *
 * The loop polls agent_watch_fd() for agent_watch_events(), calls
 * agent_watch_io() when it is ready and agent_watch_tick() when
 * agent_watch_next_us() has come. At most one PING is outstanding: while
 * the primary is silent, queueing more would tell nothing. A PING
 * unanswered for AGENT_WATCH_RECONNECT_US gets a new connection, since one
 * whose peer vanished without a FIN or RST (a host that lost power) would
 * never say so; a refused or failed connection is made again at the next
 * PING. Only addresses are watched (resp_host_is_address()): resolving a
 * name would block the loop.
 *
 * The pure half keeps the times a silence is measured by, says what it is
 * and when cairnd must hear of it: once when it reaches
 * AGENT_WATCH_SILENT_MS, and once when the primary answers again after
 * that. */
#ifndef CAIRN_AGENT_WATCH_H
#define CAIRN_AGENT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

/* A PING every 200 ms. */
#define AGENT_WATCH_INTERVAL_US 200000LL

/* A PING unanswered this long: connect again. */
#define AGENT_WATCH_RECONNECT_US 1000000LL

/* How late an answer may come after the one before and still count as in
 * time: the loop may send a PING a little after it was due, and the round
 * trip adds to that. */
#define AGENT_WATCH_SLACK_US 100000LL

/* A silence this long is news: the agent reports at once (and again when
 * the primary answers after it). */
#define AGENT_WATCH_SILENT_MS 500

/* The longest silence reported: the protocol's limit (some 11 days). */
#define AGENT_WATCH_SILENT_MAX_MS 1000000000LL

_Static_assert(AGENT_WATCH_SILENT_MS * 1000LL > AGENT_WATCH_INTERVAL_US + AGENT_WATCH_SLACK_US,
               "a primary that answers every PING is never news");

/* The times a primary's silence is measured by (kept per node). */
struct agent_watch_times {
    int64_t answered_us; /* its last answer, or when the watch began */
    int64_t asked_us;    /* the first PING or connection tried since then; 0: none */
};

enum agent_watch_news {
    AGENT_WATCH_NEWS_NONE,
    AGENT_WATCH_NEWS_SILENT,    /* the silence has reached AGENT_WATCH_SILENT_MS */
    AGENT_WATCH_NEWS_ANSWERING, /* the primary answered after such a silence */
};

struct resp_tls;

/* A watch of the engine at host:port (an IPv4 or IPv6 address: the caller
 * checks with resp_host_is_address()), authenticating as username (as for
 * agent_pinger_new()) with password (NULL or "": none), over TLS as for
 * agent_pinger_new(); nothing is sent before the first tick. Free with
 * agent_watch_free(). */
struct agent_watch *agent_watch_new(const char *host, int port, const char *username,
                                    const char *password, const struct resp_tls *tls);

/* Close the connection and free w; NULL is allowed. */
void agent_watch_free(struct agent_watch *w);

/* Whether w watches host:port. */
bool agent_watch_is(const struct agent_watch *w, const char *host, int port);

/* The socket to poll (-1: none) and the events to poll it for. */
int agent_watch_fd(const struct agent_watch *w);
short agent_watch_events(const struct agent_watch *w);

/* When agent_watch_tick() must run next. */
int64_t agent_watch_next_us(const struct agent_watch *w);

/* Send the PING that is due (connecting first when there is no
 * connection), and connect again when the last one went unanswered for
 * AGENT_WATCH_RECONNECT_US. Returns true when it asked the engine (sent a
 * PING or tried to): see agent_watch_asked(). */
bool agent_watch_tick(struct agent_watch *w, int64_t now_us);

/* Handle poll() revents on the socket. Returns true when the engine
 * answered: any reply, an error or a refused AUTH included. */
bool agent_watch_io(struct agent_watch *w, short revents);

/* Record in t that the watch began at now_us: nothing asked yet. Pure. */
void agent_watch_began(struct agent_watch_times *t, int64_t now_us);

/* Record in t that the engine was asked at now_us (agent_watch_tick()
 * returned true). Pure. */
void agent_watch_asked(struct agent_watch_times *t, int64_t now_us);

/* Record in t that the engine answered at now_us. Pure. */
void agent_watch_answered(struct agent_watch_times *t, int64_t now_us);

/* How long the primary has been silent at now_us, in milliseconds: the
 * time since its last answer, but not before one interval ahead of the
 * first PING it has left unanswered. Time in which the agent asked nothing
 * (it was stopped, or starved of CPU) says nothing of the primary, and
 * nothing asked means no silence. 0 while within AGENT_WATCH_INTERVAL_US +
 * AGENT_WATCH_SLACK_US, as it is for a primary that answers every PING;
 * past that, all of it, up to AGENT_WATCH_SILENT_MAX_MS. Pure. */
long long agent_watch_silent_ms(const struct agent_watch_times *t, int64_t now_us);

/* What cairnd must hear now of a silence of silent_ms, told_silent saying
 * whether it was told the primary is silent and not told since that it
 * answers. Pure. */
enum agent_watch_news agent_watch_news(bool told_silent, long long silent_ms);

/* When the silence measured by t reaches AGENT_WATCH_SILENT_MS, if the
 * primary does not answer first: the time to look at it again (INT64_MAX
 * while nothing is asked). Pure. */
int64_t agent_watch_silent_at_us(const struct agent_watch_times *t);

#endif
