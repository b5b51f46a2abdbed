/* pinger.h -- the health checks of one engine: PING every second and INFO
 * every two over one persistent non-blocking RESP connection
 * (engine/resp.h), driven by the agent's poll loop. The same connection
 * carries what metrics need: a wider INFO when asked (it stands in for the
 * next usual one) and, once per engine process, COMMAND; and, after each
 * INFO of a cluster-mode engine, CLUSTER INFO for its configuration epoch,
 * and, logged in as Cairn's own user, ACL LIST and CONFIG GET for digests of
 * its users and guarded settings.
 *
 * The loop polls agent_pinger_fd() for agent_pinger_events(), calls
 * agent_pinger_io() when it is ready and agent_pinger_tick() when
 * agent_pinger_next_us() has come; both report what they learned in a
 * struct agent_pinger_result. A PING still unanswered after a second, a
 * refused connection or a closed one is a failed probe; the connection is
 * then dropped and made again at the next PING. */
#ifndef CAIRN_AGENT_PINGER_H
#define CAIRN_AGENT_PINGER_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "collect.h"
#include "converge.h"
#include "crypto.h"
#include "info.h"

/* PING every second (every 50 ms while starting, to notice the first
 * answer at once), a reply within a second, INFO every 2 s. */
#define AGENT_PING_INTERVAL_US          1000000LL
#define AGENT_PING_STARTING_INTERVAL_US 50000LL
#define AGENT_PING_TIMEOUT_US           1000000LL
#define AGENT_INFO_INTERVAL_US          2000000LL

/* What the last INFO said. */
struct agent_observed {
    bool valid;
    long long process_id; /* who answered */
    bool replica;
    bool has_offset;
    long long offset;
    int link_up; /* -1 unknown (primaries), 0 down, 1 up */
    /* The primary a replica follows (master_host, master_port): every INFO
     * says it, so in cluster mode, where the engines choose, the watch of
     * it (agent/watch.h) follows a failover within AGENT_INFO_INTERVAL_US.
     * "" and 0 for primaries, and when absent or longer than the room
     * here. */
    char master_host[AGENT_HOST_MAX];
    int master_port;
    bool loading;
    bool sync_in_progress;
    /* Cluster mode: the configuration epoch (CLUSTER INFO's
     * cluster_my_epoch), read right after each INFO on the same connection
     * once an INFO said cluster_enabled:1, and kept across INFO readings
     * of the same process. */
    bool has_epoch;
    long long config_epoch;
    /* The digest of the engine's users (engine_users_digest()), read right
     * after each INFO when the pinger logs in as ENGINE_ADMIN_USER. */
    bool has_users;
    unsigned char users_digest[CRYPTO_SHA256_LEN];
    /* The digest of its guarded settings (engine_guarded_reply_digest()),
     * read as its users are. */
    bool has_settings;
    unsigned char settings_digest[CRYPTO_SHA256_LEN];
    char version[ENGINE_VERSION_MAX];
    int64_t at_us; /* when INFO answered (monotonic) */
};

struct agent_pinger_result {
    bool probed; /* a PING was answered or failed: see probe */
    enum agent_probe probe;
    bool observed;               /* an INFO reply updated the node's agent_observed */
    struct engine_info *metrics; /* the answer to agent_pinger_want_metrics(); the caller
                                    frees it with engine_info_free() */
    struct redisReply *commands; /* the answer to COMMAND (maybe an error reply); the caller
                                    frees it with resp_reply_free() */
};

struct resp_tls;

/* A pinger for host:port, authenticating as username (NULL: the default
 * user; else a string that outlives the pinger, such as ENGINE_ADMIN_USER)
 * with password (NULL: none), over TLS when tls is not NULL (it must
 * outlive the pinger); nothing is sent before the first tick. Free with
 * agent_pinger_free(). */
struct agent_pinger *agent_pinger_new(const char *host, int port, const char *username,
                                      const char *password, const struct resp_tls *tls);
void agent_pinger_free(struct agent_pinger *p);

/* Probe every interval_us from now on (the first PING goes at once). */
void agent_pinger_set_interval(struct agent_pinger *p, int64_t interval_us, int64_t now_us);

/* Send INFO with the sections metrics read (AGENT_COLLECT_INFO_SECTIONS,
 * agent/collect.h) now; its parsed
 * answer comes back in a result's metrics, and updates agent_observed like
 * the usual INFO, which it replaces until the next is due. Returns false,
 * sending nothing, when there is no connection or the previous one is still
 * unanswered. */
bool agent_pinger_want_metrics(struct agent_pinger *p, int64_t now_us);

/* Send COMMAND with the next round of PING (and again after a dropped
 * connection until answered); its reply comes back in a result's commands. */
void agent_pinger_want_commands(struct agent_pinger *p);

/* The socket to poll (-1: none) and the events to poll it for. */
int agent_pinger_fd(const struct agent_pinger *p);
short agent_pinger_events(const struct agent_pinger *p);

/* When agent_pinger_tick() must run next. */
int64_t agent_pinger_next_us(const struct agent_pinger *p);

/* Connect, send what is due, and notice a PING that went unanswered. */
void agent_pinger_tick(struct agent_pinger *p, int64_t now_us, struct agent_pinger_result *res);

/* Handle poll() revents on the socket: write queued commands, read and
 * take replies (INFO ones into *seen). */
void agent_pinger_io(struct agent_pinger *p, short revents, int64_t now_us,
                     struct agent_observed *seen, struct agent_pinger_result *res);

/* Fill *out from a parsed INFO reply with the server, replication and
 * persistence sections; the epoch is kept when the same process answered.
 * Pure. */
void agent_pinger_observe(const struct engine_info *info, struct agent_observed *out);

#endif
