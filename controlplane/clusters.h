/* clusters.h -- the request side of clusters, as the REST handlers
 * (api_clusters.c) call it: create, modify, delete and a planned failover,
 * each one transaction that stores what was asked and queues the operation
 * that carries it out (ops.h). Each returns false with a problem (problem.h)
 * when it refuses or the database fails. */
#ifndef CAIRN_CLUSTERS_H
#define CAIRN_CLUSTERS_H

#include <jansson.h>
#include <stdbool.h>

#include "app.h"
#include "problem.h"

/* Check a create body (POST, PUT of a new cluster) against the spec's rules
 * and the catalog (engine_version a line of the engine, node_type known),
 * every failing field named at once. Returns the normalized spec (the
 * caller owns it), or NULL with p filled: VALIDATION_FAILED with the
 * errors, or the database's failure. */
json_t *cluster_spec_check(struct app *app, const json_t *body, struct problem *p);

/* Place and store a cluster from its normalized spec, with auth_token (or a
 * generated password when NULL), and queue its create operation, all in one
 * transaction (cluster_create.c); op_id (40 bytes) gets the operation.
 * *created is false when a cluster of this id with this very spec exists (a
 * retried request: nothing is done, op_id is ""). False with p filled:
 * CLUSTER_ALREADY_EXISTS (another spec), INSUFFICIENT_CAPACITY (the
 * scheduler's reason), SECRET_KEY_UNAVAILABLE, or the database's failure. */
bool cluster_create(struct app *app, const json_t *spec, const char *auth_token, bool *created,
                    char *op_id, struct problem *p);

/* A cluster cairnd makes for a purpose of its own (a calibration's
 * temporary node): where it goes, which operation carries it out, and rows
 * stored with it. Zeroed: as cluster_create(). */
struct op_kind;
struct cluster_create_how {
    const char *host_id;        /* NULL: where the placement rules say; else only this host */
    const struct op_kind *kind; /* the operation queued; NULL: create */
    const json_t *context;      /* the operation's context; NULL: {} */
    /* Called in the same transaction once the cluster and its operation
     * (op_id) are stored; anything but DB_OK rolls it all back. NULL: none. */
    enum db_status (*also)(struct db_conn *conn, const char *op_id, void *arg);
    void *arg;
};

/* cluster_create() as how says. */
bool cluster_create_with(struct app *app, const json_t *spec, const char *auth_token,
                         const struct cluster_create_how *how, bool *created, char *op_id,
                         struct problem *p);

/* Store shards first_shard .. first_shard + shards - 1 of the cluster of
 * spec (its normalized spec) and their nodes as placed (host_of as
 * sched_place() filled it for shards of 1 + replicas_per_shard nodes), and
 * give each host used its nodes' ports; in the caller's transaction. A
 * create (first_shard 0, cluster mode) splits the slots among them; shards
 * that scaling adds start with none. */
struct db_conn;
struct store_placement;
enum db_status cluster_store_shards(struct db_conn *conn, const json_t *spec, int first_shard,
                                    int shards, const struct store_placement *pl,
                                    const int *host_of);

/* What a modification did beyond storing the spec. */
struct cluster_modify_out {
    char op_id[40];  /* the operation queued or scheduled, or "" */
    bool accepted;   /* the reply is 202 with op_id's Location (an engine upgrade) */
    json_t *preview; /* "dry_run": true: what would change (the caller's), else NULL */
};

/* Change a cluster's spec (cluster_modify.c): body is a JSON merge patch of
 * the spec (replace false) or a whole spec (replace true, defaults filled
 * in), with the request's flags apply_immediately and
 * allow_combined_changes (and dry_run: every check, nothing stored, out->preview
 * says what would happen). if_match is the generation the client read, or
 * -1. Each changed field is carried out as its row in the change table
 * says (changes.h): stored at once, or by an operation queued in the same
 * transaction; refused, with nothing stored, when the table or a check says
 * no. A request that changes nothing succeeds and stores nothing. */
bool cluster_modify(struct app *app, const char *cluster_id, const json_t *body, bool replace,
                    long long if_match, struct cluster_modify_out *out, struct problem *p);

/* DELETE: mark the cluster deleting and queue its delete operation
 * (cluster_delete.c), which first takes a snapshot named final_snapshot
 * when that is not NULL; op_id (40 bytes) gets the operation. False with p
 * filled: CLUSTER_NOT_FOUND, OPERATION_IN_PROGRESS, what snapshot_begin()
 * refuses, or the database's failure. */
bool cluster_delete(struct app *app, const char *cluster_id, const char *final_snapshot,
                    char *op_id, struct problem *p);

/* Queue a planned failover of shard (its name, "0001"; NULL: the only one,
 * for cluster mode disabled); op_id (40 bytes) gets the operation
 * (cluster_failover.c). False with p filled: CLUSTER_NOT_FOUND,
 * VALIDATION_FAILED (no such shard), NO_IN_SYNC_REPLICA,
 * OPERATION_IN_PROGRESS, or the database's failure. */
bool cluster_failover(struct app *app, const char *cluster_id, const char *shard, char *op_id,
                      struct problem *p);

/* A rebalance leaves a shard alone within this percent above its share. */
#define REBALANCE_TOLERANCE_PERCENT 5

/* POST /v1/clusters/{id}/rebalance (cluster_rebalance.c): with dry_run,
 * *out gets what a rebalance would move now, read live (the caller's);
 * else the rebalance operation is queued, op_id (40 bytes) naming it. A
 * shard within its fair share * (1 + tolerance) gives nothing. False with p
 * filled: CLUSTER_NOT_FOUND, NOT_SUPPORTED_BY_ENGINE (cluster mode
 * disabled), OPERATION_IN_PROGRESS, CLUSTER_UNHEALTHY (the slots cannot be
 * read), or the database's failure. */
bool cluster_rebalance(struct app *app, const char *cluster_id, double tolerance, bool dry_run,
                       json_t **out, char *op_id, struct problem *p);

/* POST /v1/operations/{id}/cancel (operation_cancel.c): ask the operation
 * to stop at its next safe point. False with p filled:
 * OPERATION_NOT_FOUND, OPERATION_NOT_CANCELLABLE (its kind cannot stop
 * half way, or it has ended), or the database's failure. */
bool operation_cancel(struct app *app, const char *op_id, struct problem *p);

#endif
