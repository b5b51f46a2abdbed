/* clusters.h -- what the REST handlers and the cluster operations do with
 * clusters, above the store: the create transaction with its placement,
 * delete requests, the engine password, and the node facts the operations'
 * steps work on. */
#ifndef CAIRN_CLUSTERS_H
#define CAIRN_CLUSTERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "db.h"

/* One node as the operations see it: placement and last reported state. */
struct cluster_node {
    char id[40];
    char host_id[40];
    char address[256];
    int port;       /* 0 while it has none */
    int shard;      /* shard index */
    int ordinal;    /* 0: placed as the shard's primary */
    int slot_first; /* the shard's slot range; -1 without slots */
    int slot_last;
    char process_state[16];
    bool host_lost;
    char role[8]; /* "primary", "replica" or "" (not known yet) */
    char az[64];
    char engine[16], engine_version[16]; /* desired: "valkey", "8.0" */
    char running_version[32];            /* what its agent last saw running: "8.0.1" */
};

struct cluster_nodes {
    struct cluster_node *items;
    size_t count;
};

/* Load the cluster's nodes (by shard, then ordinal), its engine password
 * (decrypted; *password NULL when it has none; caller frees) and whether it
 * runs in cluster mode. False with a message on failure. */
bool cluster_nodes_load(struct app *app, const char *cluster_id, struct cluster_nodes *out,
                        char **password, bool *cluster_mode, char *err, size_t errsize);
void cluster_nodes_free(struct cluster_nodes *nodes);
/* The node with this id (NULL: none, or id NULL). */
const struct cluster_node *cluster_nodes_find(const struct cluster_nodes *nodes, const char *id);

/* Record an event of the cluster (op_id and detail, a JSON object's text,
 * may be NULL), in the caller's transaction. */
enum db_status cluster_add_event(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                 const char *type, const char *severity, const char *message,
                                 const char *detail);

/* Seconds / milliseconds since the epoch, for time kept in a context. */
long long cluster_now_s(void);
long long cluster_now_ms(void);

/* The end of a planned failover: record the roles the engines confirmed
 * and a FailoverComplete event with the write pause. */
enum db_status cluster_failover_done(struct db_conn *conn, const char *cluster_id,
                                     const char *op_id, const char *previous, const char *target,
                                     long long pause_ms);

enum cluster_failover_result {
    CLUSTER_FAILOVER_QUEUED,
    CLUSTER_FAILOVER_NOT_FOUND,  /* no such cluster */
    CLUSTER_FAILOVER_NO_SHARD,   /* no such shard (or none named in cluster mode) */
    CLUSTER_FAILOVER_NO_REPLICA, /* no replica of the shard is reported in sync */
    CLUSTER_FAILOVER_BUSY,       /* another operation runs on it */
    CLUSTER_FAILOVER_DB_ERROR,
};

/* Queue a planned failover of shard (its name, "0001"; NULL: the only one,
 * for cluster mode disabled); *op_id (40 bytes) gets the operation. */
enum cluster_failover_result cluster_failover(struct app *app, const char *cluster_id,
                                              const char *shard, char *op_id,
                                              enum db_status *db_status);

/* Record what cairnd itself read from the engines when the create found
 * them ready: each node's role as placed (primary or replica, the engines
 * having confirmed it), replicas linked, nothing loading or syncing. */
bool cluster_roles_observed(struct app *app, const struct cluster_nodes *nodes);

/* Operation milestones, written in the transaction that records the step
 * (runner.h); each records its event. The cluster is available, at the
 * version its nodes run. */
enum db_status cluster_mark_available(struct db_conn *conn, const char *cluster_id,
                                      const char *op_id);
/* Record an OperationFailed event; status (e.g. "create-failed") becomes
 * the cluster's status unless NULL. */
enum db_status cluster_mark_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                   const char *code, const char *error, const char *status);

/* The end of an apply_parameters operation: available again, and
 * pending_changes keeps only the parameters (names in restart_needed, a
 * JSON array) that wait for each node's next restart. */
enum db_status cluster_parameters_applied(struct db_conn *conn, const char *cluster_id,
                                          const char *op_id, const json_t *restart_needed);

/* Node replacement. cluster_replacement_place() places a new replica in the
 * dead node's shard by the scheduler's rules, on a healthy host, and marks
 * the dead node deleted (its agent removes it if its host ever returns);
 * false with a message when there is no room or the node is not live. */
struct cluster_replacement {
    char new_id[40];
    char dead_address[256];
    int dead_port;
    int shard; /* index */
};
bool cluster_replacement_place(struct app *app, const char *cluster_id, const char *op_id,
                               const char *dead_id, struct cluster_replacement *out, char *err,
                               size_t errsize);
/* The new node is in sync: record its role and a NodeReplaced event. */
enum db_status cluster_replacement_done(struct db_conn *conn, const char *cluster_id,
                                        const char *op_id, const char *dead_id, const char *new_id);

/* Delete-operation steps. cluster_nodes_remaining() drops the rows of nodes
 * on lost hosts and returns how many nodes are left, or -1 on a database
 * error. The other two are step commits (runner.h). */
enum db_status cluster_nodes_mark_deleted(struct db_conn *conn, const char *cluster_id);
int cluster_nodes_remaining(struct app *app, const char *cluster_id);
enum db_status cluster_drop(struct db_conn *conn, const char *cluster_id, const char *op_id);

enum cluster_create_result {
    CLUSTER_CREATED,      /* placed, stored, create operation queued */
    CLUSTER_EXISTS_SAME,  /* a cluster with this id and this very spec exists */
    CLUSTER_EXISTS_OTHER, /* a cluster with this id and another spec exists */
    CLUSTER_NO_CAPACITY,  /* the scheduler could not place it: message in err */
    CLUSTER_NO_KEY,       /* no secret key to seal the engine password with */
    CLUSTER_DB_ERROR,     /* *db_status says which */
};

/* Place and store a cluster from its normalized spec, with auth_token (or a
 * generated password when NULL), and queue its create operation, all in one
 * transaction: nothing is left allocated when it cannot be placed. */
enum cluster_create_result cluster_create(struct app *app, const json_t *spec,
                                          const char *auth_token, enum db_status *db_status,
                                          char *err, size_t errsize);

enum cluster_delete_result {
    CLUSTER_DELETE_QUEUED,
    CLUSTER_DELETE_NOT_FOUND,
    CLUSTER_DELETE_BUSY, /* another operation runs on it */
    CLUSTER_DELETE_DB_ERROR,
};

/* Mark the cluster deleting and queue its delete operation. */
enum cluster_delete_result cluster_delete(struct app *app, const char *cluster_id,
                                          enum db_status *db_status);

enum cluster_modify_result {
    CLUSTER_MODIFIED, /* stored; generation bumped (or nothing changed) */
    CLUSTER_MODIFY_NOT_FOUND,
    CLUSTER_MODIFY_STALE,     /* If-Match did not match: 412 */
    CLUSTER_MODIFY_INVALID,   /* errors holds {field, message} */
    CLUSTER_MODIFY_NOT_YET,   /* err names the fields a later version applies */
    CLUSTER_MODIFY_BUSY,      /* an operation runs on it */
    CLUSTER_MODIFY_PLACEMENT, /* multi_az asked of nodes that do not satisfy it: err says */
    CLUSTER_MODIFY_UPGRADE,   /* an engine upgrade was queued or scheduled: op_id */
    CLUSTER_MODIFY_COMBINED,  /* an upgrade with other changes: err names them */
    CLUSTER_MODIFY_REFUSED,   /* an upgrade's checks failed: code says which, err why */
    CLUSTER_MODIFY_DB_ERROR,
};

/* What cluster_modify says beyond its result. */
struct cluster_modify_out {
    char op_id[40]; /* CLUSTER_MODIFY_UPGRADE (and parameters): the operation queued */
    char code[40];  /* CLUSTER_MODIFY_REFUSED: a problem code */
};

/* Change a cluster's spec: body is a JSON merge patch of the spec (replace
 * false) or a whole spec (replace true, defaults filled in). if_match is the
 * generation the client read, or -1. Fields that apply now (description,
 * tags, maintenance window, parameters) are stored; changed parameters also
 * queue an apply_parameters operation, which sets them live where the
 * engine allows (the rest wait for each node's next restart, said in
 * pending_changes), and every node's config carries them from then on.
 *
 * A new engine or engine_version is an engine upgrade (upgrades.h): checked
 * (the catalog's path, installed binaries, health, memory), then queued, or
 * scheduled for the maintenance window when the body says
 * "apply_immediately": false. Other changes in the same request are refused
 * unless it says "allow_combined_changes": true. Neither flag is stored. */
enum cluster_modify_result cluster_modify(struct app *app, const char *cluster_id,
                                          const json_t *body, bool replace, long long if_match,
                                          json_t *errors, enum db_status *db_status, char *err,
                                          size_t errsize, struct cluster_modify_out *out);

/* The engine password of a cluster, decrypted (caller frees; NULL when it
 * has none), with *status DB_OK; or NULL with *status DB_NOT_FOUND for an
 * unknown cluster, DB_ERROR when the password cannot be opened, or the
 * database's error. */
char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status);

/* Decrypt a sealed password as stored in clusters.auth_secret (hex text).
 * NULL when it cannot be opened. */
char *cluster_open_secret(struct app *app, const char *cluster_id, const char *hex);

#endif
