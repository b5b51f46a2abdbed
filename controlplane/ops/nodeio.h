/* nodeio.h -- cairnd talking to one engine of a cluster: a connection with
 * the cluster's password and a bounded wait, on which callers run the
 * commands of topology.h, and what the engine says of its replication.
 * Used by the operations and by the failover monitor; every call blocks for
 * at most its timeouts. */
#ifndef CAIRN_NODEIO_H
#define CAIRN_NODEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster_nodes.h"
#include "resp.h"
#include "topology.h"

/* Timeouts for talking to an engine: operations can wait; the failover
 * monitor must not let one silent engine hold up a promotion. */
struct nodeio_wait {
    int connect_ms;
    int command_ms;
};
#define NODEIO_PATIENT ((struct nodeio_wait){1000, 3000})
#define NODEIO_QUICK   ((struct nodeio_wait){300, 500})

/* The engines of clusters with transit encryption serve TLS only: cairnd
 * reaches them checking their certificates against its authority's. Call
 * once at start, before any connection is made. */
void nodeio_use_tls(const struct resp_tls *tls);

/* A blocking connection to node n, for the commands of topology.h and
 * resp.h; close it with resp_close(). NULL with err as resp_connect(). */
struct resp_conn *nodeio_connect(const struct cluster_node *n, const char *password,
                                 struct nodeio_wait wait, char *err, size_t errsize);

/* nodeio_connect() for data: its replies may be as large as a value
 * (resp_data_limits), for a restore's RESTORE of any key. */
struct resp_conn *nodeio_connect_data(const struct cluster_node *n, const char *password,
                                      struct nodeio_wait wait, char *err, size_t errsize);

/* Node n follows primary: REPLICAOF primary's address and port
 * (engine_replicaof()), over a connection of its own. */
bool nodeio_follow(const struct cluster_node *n, const char *password, struct nodeio_wait wait,
                   const struct cluster_node *primary, char *err, size_t errsize);

/* Node n, a replica, starts taking over from its primary: CLUSTER FAILOVER
 * in mode (engine_cluster_failover()), over a connection of its own. */
bool nodeio_cluster_failover(const struct cluster_node *n, const char *password,
                             struct nodeio_wait wait, enum engine_failover_mode mode, char *err,
                             size_t errsize);

/* One-shot commands over a connection of their own, as topology.h sends
 * them: PING; CLUSTER MEET to's address and port; CLUSTER REPLICATE the
 * primary whose engine node id is primary_id; CLUSTER FORGET id. False with
 * err on any failure. */
bool nodeio_ping(const struct cluster_node *n, const char *password, struct nodeio_wait wait);
bool nodeio_cluster_meet(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, const struct cluster_node *to, char *err,
                         size_t errsize);
bool nodeio_cluster_replicate(const struct cluster_node *n, const char *password,
                              struct nodeio_wait wait, const char *primary_id, char *err,
                              size_t errsize);
bool nodeio_cluster_forget(const struct cluster_node *n, const char *password,
                           struct nodeio_wait wait, const char *id, char *err, size_t errsize);

/* Node n's own view of the cluster (CLUSTER NODES), parsed; free it with
 * engine_cluster_nodes_free(). */
bool nodeio_cluster_view(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, struct engine_cluster_nodes *view, char *err,
                         size_t errsize);

/* Node n's engine node id (id: ENGINE_CLUSTER_ID_LEN + 1 bytes), from its
 * own view. */
bool nodeio_cluster_myid(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, char *id, char *err, size_t errsize);

/* Whether node n says cluster_state:ok (false also when it cannot say). */
bool nodeio_cluster_state_ok(const struct cluster_node *n, const char *password,
                             struct nodeio_wait wait);

/* Node n's configuration epoch (engine_cluster_epoch()). */
bool nodeio_cluster_epoch(const struct cluster_node *n, const char *password,
                          struct nodeio_wait wait, long long *epoch);

/* Fencing an old primary, cluster mode: while node n's engine says it is a
 * primary with a configuration epoch lower than newer_epoch (its shard's
 * primary's), its writes are held for pause_ms (engine_pause_writes());
 * once it says it is a replica, or its epoch is not lower after all, a hold
 * is ended (CLIENT UNPAUSE) when unpause is set. One connection; which it
 * was is the result. */
enum nodeio_fenced {
    NODEIO_FENCE_UNREACHED, /* no connection */
    NODEIO_FENCE_FAILED,    /* connected, but no answer or refused: err says */
    NODEIO_FENCE_HELD,      /* a stale primary: its writes are held */
    NODEIO_FENCE_REPLICA,   /* a replica now (and released, if asked) */
    NODEIO_FENCE_CURRENT,   /* a primary whose epoch is not lower: not stale (released) */
};
enum nodeio_fenced nodeio_fence_writes(const struct cluster_node *n, const char *password,
                                       struct nodeio_wait wait, long long newer_epoch, int pause_ms,
                                       bool unpause, char *err, size_t errsize);

/* Ask a replica to acknowledge its replication offset to its primary now
 * (REPLCONF GETACK, which answers nothing) instead of at its next
 * once-a-second acknowledgement. */
bool nodeio_request_ack(const struct cluster_node *n, const char *password, char *err,
                        size_t errsize);

/* What a node says of its replication (INFO replication and persistence). */
struct nodeio_repl {
    bool primary;  /* role:master */
    bool in_sync;  /* a replica: link up, not loading, not in a full sync */
    bool has_data; /* a replica that completed a sync with its primary: link up, or
                      down for at most NODEIO_LINK_RECENT_S (its primary just died) */
    bool synced;   /* a replica linked to its primary at some time since it started: what it
                      holds came from a primary, not only from its own disk */
    bool loading;
    long long link_down_s; /* a replica: seconds its link has been down; -1: up, or never was */
    long long offset;      /* a replica: slave_repl_offset; a primary: master_repl_offset */
    char master_host[64];  /* a replica: the primary it follows */
    int master_port;
};
#define NODEIO_LINK_RECENT_S 60

bool nodeio_replication(const struct cluster_node *n, const char *password, struct nodeio_wait wait,
                        struct nodeio_repl *out, char *err, size_t errsize);

#endif
