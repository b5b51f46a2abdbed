/* upgrades.h -- engine upgrades above the store: the checks a request and
 * the operation's start both make, queueing or scheduling the operation,
 * its milestones (each with its event), cancelling a scheduled one, and the
 * scheduler that starts scheduled upgrades when the cluster's maintenance
 * window opens. The operation itself is ops_upgrade.c. */
#ifndef CAIRN_UPGRADES_H
#define CAIRN_UPGRADES_H

#include <jansson.h>
#include <stdbool.h>

#include "app.h"
#include "db.h"
#include "problem.h"

/* A replica further behind its primary than this (by the offsets its agent
 * reports) is lagging: an upgrade would wait on it, or lose it. */
#define UPGRADE_MAX_LAG_BYTES (64LL << 20)

/* The checks, in a transaction of the caller's (conn): every host of the
 * cluster has engine/version installed; every node runs, every replica is
 * linked, loaded and within UPGRADE_MAX_LAG_BYTES; each primary's host has
 * at least the memory its data takes free (a full sync forks it).
 * DB_REFUSED with p filled when one fails; *downtime (when not NULL) gets the shards that
 * have no replica and will be down while their node restarts, a JSON array
 * of {shard_id, node_id, reason}. */
enum db_status upgrade_check(struct db_conn *conn, const char *cluster_id, const char *engine,
                             const char *version, struct problem *p, json_t **downtime);

/* Queue (apply_now) or schedule for the maintenance window (the spec's,
 * "ddd:hh24:mi-ddd:hh24:mi") the upgrade operation, in the caller's
 * transaction; pending_changes.engine_upgrade
 * says what comes and, scheduled, when. A scheduled upgrade of the cluster
 * already waiting is cancelled: the newer request replaces it. *op_id: 40
 * bytes. */
enum db_status upgrade_queue(struct app *app, struct db_conn *conn, const char *cluster_id,
                             const json_t *from, const json_t *to, bool apply_now,
                             const char *window, json_t *downtime, char *op_id);

/* Cancel the cluster's scheduled upgrade: the spec's engine and version go
 * back to what runs. False with p filled: NO_PENDING_CHANGE (none is
 * scheduled, or no such cluster), OPERATION_IN_PROGRESS (it has started and
 * runs), or the database's failure. */
bool upgrade_cancel(struct app *app, const char *cluster_id, struct problem *p);

/* The scheduler: start every scheduled upgrade whose cluster's window is
 * open (by the clock plus --test-clock-offset) and has no other operation
 * running; keep pending_changes' starts_at current. Returns how many
 * started. */
int upgrade_schedule_tick(struct app *app);

/* Operation milestones. */
/* The upgrade has started (its first step's commit): the cluster is
 * modifying, with an EngineUpgradeStarted event. */
enum db_status upgrade_started(struct db_conn *conn, const char *cluster_id, const char *op_id,
                               const json_t *context);
/* The end of an upgrade, in the transaction that records it (runner.h):
 * available again, with an EngineUpgradeComplete event. */
enum db_status upgrade_done(struct db_conn *conn, const char *cluster_id, const char *op_id,
                            const json_t *context);
/* A failed upgrade: the cluster is available; rolled_back puts the spec's
 * engine and version back to context's "from". */
enum db_status upgrade_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                              const char *code, const char *error, const json_t *context,
                              bool rolled_back);

/* GET /v1/operations/{id}: the operation, and for an upgrade that has
 * ended its report: the duration, each failover's write pause, and the
 * cluster's metrics over the hour before it started and the hour after it
 * ended (as much of it as has passed), with the change in percent. */
enum db_status upgrade_operation_get(struct db_conn *conn, const char *id, char **out);

#endif
