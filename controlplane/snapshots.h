/* snapshots.h -- backups: snapshots asked for by users (POST
 * /v1/clusters/{id}/snapshots), by a cluster's delete (a final snapshot)
 * and by its daily snapshot window; their deletion, by users and by
 * retention; the removal of their files from the snapshot store. The
 * snapshot operation itself is ops_snapshot.c, the restore of one into a
 * new cluster ops_restore.c. */
#ifndef CAIRN_SNAPSHOTS_H
#define CAIRN_SNAPSHOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "db.h"
#include "jspec.h"
#include "problem.h"

#define SNAPSHOT_NAME_MAX 64
/* A snapshot object's key in the store: "<id>/shard-0003.rdb.gz". */
#define SNAPSHOT_KEY_MAX 64
/* What one part of an upload may hold: stored (gzip) and expanded. */
#define SNAPSHOT_PART_MAX     (16u << 20)
#define SNAPSHOT_PART_RAW_MAX (1ull << 30)
/* Automatic snapshots are kept 0 (none taken) to 35 days. */
#define SNAPSHOT_RETENTION_MAX_DAYS 35

/* {"name"}: the body of POST /v1/clusters/{id}/snapshots. */
extern const struct jspec_field snapshot_create_spec[];

/* A snapshot's name: 1-64 of a-z, 0-9 and '-', starting with a letter, as
 * a jspec check. */
bool snapshot_check_name(const json_t *value, char *msg, size_t msgsize);

/* The store's key of a snapshot's shard. */
void snapshot_key(const char *snapshot_id, int shard, char out[SNAPSHOT_KEY_MAX]);

/* In the caller's transaction, with the cluster locked: a new snapshot of
 * cluster_id named name (NULL: "<cluster id>-<yyyymmdd-hhmmss>") from
 * source ("manual", "automatic" or "final"), kept retention_days (0: until
 * deleted), and the operation that takes it, queued: of kind (a snapshot,
 * or a delete that takes a final snapshot first), its context naming the
 * snapshot. snapshot_id and op_id (STORE_UUID_SIZE bytes each) get their
 * ids. DB_REFUSED with p: NO_SNAPSHOT_STORE, SNAPSHOT_NAME_TAKEN,
 * OPERATION_IN_PROGRESS. */
enum db_status snapshot_begin(struct app *app, struct db_conn *conn, const char *cluster_id,
                              const char *name, const char *source, int retention_days,
                              const char *kind, char *snapshot_id, char *op_id, struct problem *p);

/* POST /v1/clusters/{id}/snapshots: snapshot_begin() in a transaction of
 * its own. */
bool snapshot_create(struct app *app, const char *cluster_id, const char *name, char *snapshot_id,
                     struct problem *p);

/* DELETE /v1/snapshots/{id}: the snapshot is marked deleting (its files
 * go with snapshot_remove_files()); snapshot_id gets its id. False with p: SNAPSHOT_NOT_FOUND,
 * SNAPSHOT_NOT_AVAILABLE (still being made, or being restored from). */
bool snapshot_delete(struct app *app, const char *id_or_name, char *snapshot_id, struct problem *p);

/* The leader's tick: automatic snapshots whose window is open are begun,
 * those past their cluster's retention marked deleting, and the files of
 * deleted and failed snapshots removed from the store. */
void snapshot_schedule_tick(struct app *app);

/* Remove the files of snapshots marked deleting (and of failed ones). */
void snapshot_remove_files(struct app *app);

#endif
