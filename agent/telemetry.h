/* telemetry.h -- the agent's metrics: every --metrics-interval seconds it
 * reads the host's /proc and asks every running engine for INFO over its
 * health connection (agent/pinger.h), turns them into interval values
 * (agent/collect.h), adds them up per node into periods of
 * --metrics-period seconds, and pushes each period, once it has ended, to
 * cairnd (POST /v1/agent/metrics) on a channel of its own beside the sync
 * long-poll. Unsent periods wait in a bounded outbox (agent/outbox.h).
 *
 * A replica's ReplicationLag needs its primary's offset: at each tick the
 * agent asks the primary the replica follows (by its last sample) for
 * INFO replication (agent/upstream.h), and asks the replica only once the
 * primary has answered or AGENT_UPSTREAM_TIMEOUT_US has passed, so the
 * bytes the replica lacks were written before the two readings, never
 * between them.
 *
 * Ticks fall on wall-clock multiples of the interval. The sample of the
 * tick at T stands for the interval [T - interval, T) and belongs to the
 * period holding T - interval; the engines' answers are awaited for at
 * most AGENT_METRICS_GRACE_US, and then every period that ends at or before
 * T is closed and queued. An answer that comes later is ignored: the next
 * sample's deltas then cover both intervals. Nothing here blocks. */
#ifndef CAIRN_AGENT_TELEMETRY_H
#define CAIRN_AGENT_TELEMETRY_H

#include <curl/curl.h>
#include <poll.h>
#include <stdint.h>

/* How long after a tick the engines' INFO is awaited. */
#define AGENT_METRICS_GRACE_US 500000LL

/* How long a push may take. */
#define AGENT_PUSH_TIMEOUT_MS 10000L

struct agent;
struct agent_node;
struct engine_info;
struct redisReply;

/* Set up the metrics of agent a (its settings give interval and period)
 * with a push channel on multi, in a->tm. */
void agent_telemetry_init(struct agent *a, CURLM *multi);

/* Release the channel, the unsent samples and a->tm. */
void agent_telemetry_close(struct agent *a);

/* Take a tick when one is due, close the periods of the last one when its
 * answers are in (or late), and start a push when samples wait. */
void agent_telemetry_tick(struct agent *a, int64_t now_us);

/* When agent_telemetry_tick() has something to do next (monotonic). */
int64_t agent_telemetry_next_us(const struct agent *a, int64_t now_us);

/* Handle the end of a push, if one has ended (after agent_cp_perform()). */
void agent_telemetry_perform(struct agent *a, int64_t now_us);

/* The engine of n answered the metrics INFO (info taken over), read at
 * now_us. */
void agent_telemetry_on_info(struct agent *a, struct agent_node *n, struct engine_info *info,
                             int64_t now_us);

/* Fill fds (room for 1 per node) with the connections to replicas'
 * primaries to wait on and the poll(2) events to wait for; returns how
 * many. */
unsigned agent_telemetry_pollfds(const struct agent *a, struct pollfd *fds);

/* Handle the poll(2) revents returned for the fds
 * agent_telemetry_pollfds() filled. */
void agent_telemetry_ready(struct agent *a, const struct pollfd *fds, unsigned nfds,
                           int64_t now_us);

/* The engine of n answered COMMAND (reply taken over). */
void agent_telemetry_on_commands(struct agent_node *n, struct redisReply *reply);

/* A new engine process is watched for n (started or adopted): forget the
 * previous process's command table and fetch the new one's. The totals of
 * the last sample are kept, to tell the restart in the next one. */
void agent_telemetry_new_process(struct agent_node *n);

/* n is going away: free what its metrics hold (and close the connection to
 * its primary). Its open period is lost. */
void agent_telemetry_node_free(struct agent_node *n);

#endif
