/* restore.h -- a new cluster made from a snapshot ("restore_from" in the
 * body of POST or PUT /v1/clusters): what the request side checks before
 * anything is placed. The data itself is loaded by the create operation
 * (ops_restore.c). */
#ifndef CAIRN_RESTORE_H
#define CAIRN_RESTORE_H

#include <jansson.h>
#include <stdbool.h>

#include "app.h"
#include "problem.h"

/* The body of a create from a snapshot with the fields it leaves out taken
 * from the snapshot (engine, engine_version, node_type, cluster_mode,
 * num_shards, replicas_per_shard), a new object the caller owns, and
 * the snapshot's document in *snapshot (the caller's). A body without
 * restore_from comes back as it is (a new reference), *snapshot NULL. On
 * a snapshot that does not exist, an error naming restore_from.snapshot_id
 * is appended to errors; NULL with p only when the database fails. */
json_t *restore_fill(struct app *app, const json_t *body, json_t **snapshot, json_t *errors,
                     struct problem *p);

/* Whether the normalized spec can take the snapshot's data: the snapshot
 * is available; the engine is the same or newer (valkey takes redis's
 * data up to 7.2); cluster mode has only database 0; the node type holds
 * the data. False with p: VALIDATION_FAILED (its errors), SNAPSHOT_NOT_AVAILABLE
 * or INSUFFICIENT_MEMORY. */
bool restore_check(struct app *app, const json_t *spec, const json_t *snapshot, struct problem *p);

#endif
