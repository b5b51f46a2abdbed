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
#include "problem.h"
#include "store.h"

/* Load the cluster's nodes (by shard, then ordinal), its engine password
 * (decrypted; *password NULL when it has none; caller frees) and whether it
 * runs in cluster mode. False with a message on failure. */
bool cluster_nodes_load(struct app *app, const char *cluster_id, struct cluster_nodes *out,
                        char **password, bool *cluster_mode, char *err, size_t errsize);
void cluster_nodes_free(struct cluster_nodes *nodes);
/* The node with this id (NULL: none, or id NULL). */
const struct cluster_node *cluster_nodes_find(const struct cluster_nodes *nodes, const char *id);

/* Seconds / milliseconds since the epoch, for time kept in a context. */
long long cluster_now_s(void);
long long cluster_now_ms(void);

/* The end of a planned failover: record the roles the engines confirmed
 * and a FailoverComplete event with the write pause. */
enum db_status cluster_failover_done(struct db_conn *conn, const char *cluster_id,
                                     const char *op_id, const char *previous, const char *target,
                                     long long pause_ms);

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

/* DELETE: mark the cluster deleting and queue its delete operation
 * (cluster_delete.c). False with p filled: CLUSTER_NOT_FOUND,
 * OPERATION_IN_PROGRESS, or the database's failure. */
bool cluster_delete(struct app *app, const char *cluster_id, struct problem *p);

/* Queue a planned failover of shard (its name, "0001"; NULL: the only one,
 * for cluster mode disabled); op_id (STORE_UUID_SIZE bytes) gets the
 * operation (cluster_failover.c). False with p filled: CLUSTER_NOT_FOUND,
 * VALIDATION_FAILED (no such shard), NO_IN_SYNC_REPLICA,
 * OPERATION_IN_PROGRESS, or the database's failure. */
bool cluster_failover(struct app *app, const char *cluster_id, const char *shard, char *op_id,
                      struct problem *p);

/* Place and store a cluster from its normalized spec, with auth_token (or a
 * generated password when NULL), and queue its create operation, all in one
 * transaction (cluster_create.c). *created is false when a cluster of this
 * id with this very spec exists (a retried request: nothing is done). False
 * with p filled: CLUSTER_ALREADY_EXISTS (another spec),
 * INSUFFICIENT_CAPACITY (the scheduler's reason), SECRET_KEY_UNAVAILABLE,
 * or the database's failure. */
bool cluster_create(struct app *app, const json_t *spec, const char *auth_token, bool *created,
                    struct problem *p);

/* The engine password of a cluster, decrypted (caller frees; NULL when it
 * has none), with *status DB_OK; or NULL with *status DB_NOT_FOUND for an
 * unknown cluster, DB_ERROR when the password cannot be opened, or the
 * database's error. */
char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status);

/* Decrypt a sealed password as stored in clusters.auth_secret (hex text).
 * NULL when it cannot be opened. */
/* Seal password for cluster_id as "\\x<hex>" bytea text (caller frees). */
char *cluster_seal_secret(struct app *app, const char *cluster_id, const char *password);
char *cluster_open_secret(struct app *app, const char *cluster_id, const char *hex);

#endif
