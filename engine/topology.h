/* topology.h -- the commands cairnd sends to engines to form, repair and
 * reshape a cluster: CLUSTER MEET / ADDSLOTSRANGE / REPLICATE / FAILOVER /
 * FORGET, REPLICAOF, FAILOVER TO, CONFIG SET, the reads that go with them
 * (CLUSTER NODES / INFO / MYID / SLOT-STATS), and the slot-move primitives
 * online shard scaling builds on (CLUSTER SETSLOT / GETKEYSINSLOT /
 * COUNTKEYSINSLOT, MIGRATE ... KEYS).
 *
 * Shape. Each function runs one command on a blocking connection the caller
 * owns (resp_connect()) and is named after it: engine_cluster_meet() sends
 * CLUSTER MEET, engine_cluster_getkeysinslot() CLUSTER GETKEYSINSLOT. The
 * caller keeps connection management -- which node, which password, how
 * long to wait, and whether one connection serves several commands (CONFIG
 * SET of every parameter, a slot move's GETKEYSINSLOT / MIGRATE loop) --
 * so this layer knows commands and replies, not clusters; cairnd opens its
 * connections through nodeio.h. Arguments travel as separate words whatever
 * they hold (a value with spaces stays one word), formatted by hiredis as
 * resp.h formats every command.
 *
 * Results. Each function checks the reply's shape, not only that it is no
 * error: a command that changes state must answer +OK (REPLICAOF's "+OK
 * Already connected to specified master" included), and a read returns what
 * it read, parsed. On failure a function returns false with err and
 * resp_last_error() as resp.h describes:
 *   - the engine refused: its own text ("ERR Unknown node ..."),
 *     RESP_ERR_REPLY, the connection stays usable;
 *   - a reply of the wrong shape: "h:p: unexpected reply to CLUSTER MEET",
 *     RESP_ERR_REPLY, the connection stays usable;
 *   - I/O failure, timeout or protocol error: "h:p: <reason>"; close the
 *     connection.
 *
 * The reply readers (engine_reply_ok() and the *_parse functions) are pure,
 * so replies captured from real engines can be checked without one. */
#ifndef CAIRN_ENGINE_TOPOLOGY_H
#define CAIRN_ENGINE_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "resp.h"

/* ---- forming a cluster ------------------------------------------------- */

/* CLUSTER MEET ip port: c's node shakes hands with the node at ip:port
 * (its cluster bus on port + 10000). The handshake itself completes later,
 * over the bus: CLUSTER NODES shows the peer without "handshake" once it has. */
bool engine_cluster_meet(struct resp_conn *c, const char *ip, int port, char *err, size_t errsize);

/* CLUSTER ADDSLOTSRANGE first last: c's node serves slots first..last
 * (inclusive). Refused when one of them is served already. */
bool engine_cluster_addslotsrange(struct resp_conn *c, int first, int last, char *err,
                                  size_t errsize);

/* CLUSTER REPLICATE node_id: c's node becomes a replica of the primary
 * node_id, which it must know (a met node, not in handshake). */
bool engine_cluster_replicate(struct resp_conn *c, const char *node_id, char *err, size_t errsize);

/* CLUSTER FORGET node_id: c's node drops node_id from its view (for a
 * minute, during which gossip cannot bring it back). Refused for itself,
 * its own primary and a node it does not know ("ERR Unknown node ..."). */
bool engine_cluster_forget(struct resp_conn *c, const char *node_id, char *err, size_t errsize);

/* How CLUSTER FAILOVER takes over, sent to a replica. */
enum engine_failover_mode {
    ENGINE_FAILOVER_DEFAULT,  /* lossless: the primary pauses writes until the replica
                                 has its whole stream, then the replica is elected */
    ENGINE_FAILOVER_FORCE,    /* the primary is down: no handshake with it, still an election */
    ENGINE_FAILOVER_TAKEOVER, /* no election either: the replica takes a new epoch itself */
};

/* "DEFAULT", "FORCE" or "TAKEOVER". */
const char *engine_failover_mode_name(enum engine_failover_mode mode);

/* CLUSTER FAILOVER [FORCE|TAKEOVER]: c's node, a replica, starts taking
 * over from its primary. +OK means started, not done: watch the roles.
 * Refused by a primary ("ERR You should send CLUSTER FAILOVER to a replica"). */
bool engine_cluster_failover(struct resp_conn *c, enum engine_failover_mode mode, char *err,
                             size_t errsize);

/* ---- reading a node's view --------------------------------------------- */

/* CLUSTER NODES, parsed into *out by engine_cluster_nodes_parse() (left
 * empty on failure; text that does not parse fails with "h:p: " and the
 * parser's message). Free *out with engine_cluster_nodes_free(). */
bool engine_cluster_nodes(struct resp_conn *c, struct engine_cluster_nodes *out, char *err,
                          size_t errsize);

/* CLUSTER INFO: *ok is whether c's node says cluster_state:ok (false for
 * "fail"). Returns false with err when it could not be asked, or its
 * reply has no cluster_state. */
bool engine_cluster_info_state(struct resp_conn *c, bool *ok, char *err, size_t errsize);

/* CLUSTER INFO: c's node's configuration epoch (cluster_my_epoch; a
 * replica's is its primary's). Of two nodes that claim the same slots, the
 * engines side with the higher one. */
bool engine_cluster_epoch(struct resp_conn *c, long long *epoch, char *err, size_t errsize);

/* CLUSTER MYID: c's node's id, 40 hex digits, into id. */
bool engine_cluster_myid(struct resp_conn *c, char id[ENGINE_CLUSTER_ID_LEN + 1], char *err,
                         size_t errsize);

/* One slot's figures from CLUSTER SLOT-STATS; -1 where the engine gave
 * none (Valkey 8.0 counts keys only; 8.1 adds CPU and network with
 * cluster-slot-stats-enabled). */
struct engine_slot_stat {
    int slot;
    long long keys;     /* key-count */
    long long cpu_usec; /* cpu-usec */
    long long net_in;   /* network-bytes-in */
    long long net_out;  /* network-bytes-out */
};

struct engine_slot_stats {
    struct engine_slot_stat *stats; /* in reply order */
    size_t count;
};

/* CLUSTER SLOT-STATS SLOTSRANGE first last (Valkey 8+; Redis refuses it):
 * the figures of the slots c's node serves in first..last, into *out (see
 * engine_slot_stats_parse()). Free *out with engine_slot_stats_free(). */
bool engine_cluster_slot_stats(struct resp_conn *c, int first, int last,
                               struct engine_slot_stats *out, char *err, size_t errsize);

/* Free what engine_cluster_slot_stats() stored in stats and zero it. */
void engine_slot_stats_free(struct engine_slot_stats *stats);

/* ---- moving a slot ----------------------------------------------------- */

/* CLUSTER SETSLOT's subcommands. A move of slot s from node A to node B:
 * B: IMPORTING A; A: MIGRATING B; on A, GETKEYSINSLOT and MIGRATE until
 * COUNTKEYSINSLOT is 0; then NODE B on B, on A, and on the other primaries. */
enum engine_setslot {
    ENGINE_SETSLOT_IMPORTING, /* on the target: take ASKING commands for the slot; node_id: source
                               */
    ENGINE_SETSLOT_MIGRATING, /* on the source: send clients of keys it lacks there with ASK;
                                 node_id: target */
    ENGINE_SETSLOT_NODE,      /* the slot is node_id's: ends the move on the node told */
    ENGINE_SETSLOT_STABLE,    /* clear IMPORTING / MIGRATING (abandon a move); no node_id */
};

/* CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE node_id, or CLUSTER SETSLOT
 * slot STABLE (node_id must then be NULL). */
bool engine_cluster_setslot(struct resp_conn *c, int slot, enum engine_setslot how,
                            const char *node_id, char *err, size_t errsize);

/* CLUSTER COUNTKEYSINSLOT slot: how many keys c's node holds in slot. */
bool engine_cluster_countkeysinslot(struct resp_conn *c, int slot, long long *count, char *err,
                                    size_t errsize);

/* Key names, which may hold any bytes: keys[i] is lens[i] bytes long (and
 * NUL-terminated besides). */
struct engine_keys {
    char **keys;
    size_t *lens;
    size_t count;
};

/* CLUSTER GETKEYSINSLOT slot count: up to count keys c's node holds in
 * slot, into *out. Free *out with engine_keys_free(). */
bool engine_cluster_getkeysinslot(struct resp_conn *c, int slot, int count, struct engine_keys *out,
                                  char *err, size_t errsize);

/* Free what engine_cluster_getkeysinslot() stored in keys and zero it. */
void engine_keys_free(struct engine_keys *keys);

/* MIGRATE to->host to->port "" 0 timeout REPLACE [AUTH password | AUTH2
 * username password] KEYS key...: c's node moves keys (all in one slot) to the node
 * to describes, in database 0, authenticating with to->username and
 * to->password as resp_connect() would. The timeout, to->command_timeout_ms
 * (<= 0: RESP_DEFAULT_TIMEOUT_MS), is the longest the target may stay
 * silent; c's own command timeout must allow for the whole batch. True when
 * none of keys is left on c's node: moved (+OK), or already gone (+NOKEY).
 * A key the target holds already is replaced: see slot_move.h for why.
 * Refused, among others, when the target does not import the slot ("ERR
 * Target instance replied with error: MOVED ..."). keys->count must be at
 * least 1. */
bool engine_migrate(struct resp_conn *c, const struct resp_options *to,
                    const struct engine_keys *keys, char *err, size_t errsize);

/* ---- replication (cluster mode disabled) ------------------------------- */

/* REPLICAOF host port: c's node follows the primary at host:port (a no-op
 * answered "+OK Already connected..." when it does already). Refused in
 * cluster mode. */
bool engine_replicaof(struct resp_conn *c, const char *host, int port, char *err, size_t errsize);

/* REPLICAOF NO ONE: c's node stops following its primary and serves
 * writes, keeping its data (+OK on a primary too). */
bool engine_replicaof_no_one(struct resp_conn *c, char *err, size_t errsize);

/* FAILOVER TO host port TIMEOUT timeout_ms, sent to a primary: it pauses
 * writes until its replica at host:port has its whole stream, then the two
 * trade places; after timeout_ms without that it gives up and serves on.
 * +OK means started, not done. */
bool engine_failover_to(struct resp_conn *c, const char *host, int port, int timeout_ms, char *err,
                        size_t errsize);

/* REPLCONF GETACK *, sent to a replica: it acknowledges its replication
 * offset to its primary now rather than at its next once-a-second
 * acknowledgement. It answers nothing, so this only sends: true once the
 * command is written. */
bool engine_replconf_getack(struct resp_conn *c, char *err, size_t errsize);

/* ---- fencing ------------------------------------------------------------ */

/* CLIENT PAUSE ms WRITE: c's node holds every write (and every command
 * that may write) for ms, reads go on. A held command runs afresh when the
 * pause ends, so one that reaches a node which has become a replica
 * meanwhile is redirected (MOVED), never acknowledged by it. */
bool engine_pause_writes(struct resp_conn *c, int ms, char *err, size_t errsize);

/* CLIENT UNPAUSE: the pause above ends now (a failover's own pause is not
 * touched). */
bool engine_unpause(struct resp_conn *c, char *err, size_t errsize);

/* ---- parameters -------------------------------------------------------- */

/* CONFIG SET name value on c's node. Refused for a name it does not know,
 * a value it rejects, and a setting it takes only at start-up. */
bool engine_config_set(struct resp_conn *c, const char *name, const char *value, char *err,
                       size_t errsize);

/* ---- reply readers (pure) ---------------------------------------------- */

/* Whether reply is +OK, or a status that starts "OK " (REPLICAOF's "OK
 * Already connected to specified master"). */
bool engine_reply_ok(const redisReply *reply);

/* CLUSTER INFO's text, len bytes: *ok is whether its cluster_state is
 * "ok". False when the text has no cluster_state line. */
bool engine_cluster_info_state_parse(const char *text, size_t len, bool *ok);

/* CLUSTER INFO's text: its cluster_my_epoch into *epoch. False when the
 * text has none (or a negative one). */
bool engine_cluster_info_epoch_parse(const char *text, size_t len, long long *epoch);

/* CLUSTER MYID's reply: a string of 40 hex digits, copied into id. */
bool engine_cluster_myid_parse(const redisReply *reply, char id[ENGINE_CLUSTER_ID_LEN + 1]);

/* CLUSTER GETKEYSINSLOT's reply: an array of strings, into *out (zeroed
 * first; left empty on false). Free with engine_keys_free(). */
bool engine_keys_parse(const redisReply *reply, struct engine_keys *out);

/* CLUSTER SLOT-STATS's reply: an array of [slot, [name, value, ...]],
 * into *out (zeroed first; left empty on false). Lenient, as the figures
 * are advice: entries of another shape are skipped, and names this
 * reader does not know ignored. False only when reply is no array. Free
 * with engine_slot_stats_free(). */
bool engine_slot_stats_parse(const redisReply *reply, struct engine_slot_stats *out);

#endif
