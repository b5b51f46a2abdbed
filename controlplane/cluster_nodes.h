/* cluster_nodes.h -- a cluster's nodes and engine password, as cairnd
 * needs them to talk to its engines (cluster_nodes.c). Used by the
 * operations, the failover authority and the Sentinel listener. */
#ifndef CAIRN_CLUSTER_NODES_H
#define CAIRN_CLUSTER_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "db.h"
#include "store.h"

/* Load the cluster's nodes (by shard, then ordinal), the password of
 * Cairn's own engine user (ENGINE_ADMIN_USER, which nodeio_connect() logs
 * in as; caller frees) and whether it runs in cluster mode. False with a
 * message on failure. */
bool cluster_nodes_load(struct app *app, const char *cluster_id, struct cluster_nodes *out,
                        char **password, bool *cluster_mode, char *err, size_t errsize);
void cluster_nodes_free(struct cluster_nodes *nodes);
/* The node with this id (NULL: none, or id NULL). */
const struct cluster_node *cluster_nodes_find(const struct cluster_nodes *nodes, const char *id);

/* The engine password of a cluster (caller frees; NULL when it has none).
 * *status: DB_NOT_FOUND without the cluster, DB_ERROR when it cannot be
 * opened (another secret key, or altered), or the database's failure. */
char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status);

/* The password of Cairn's engine user `user` (ENGINE_ADMIN_USER or
 * ENGINE_REPLICATION_USER) on the cluster of this uid, as 64 hex digits
 * (caller frees); NULL without a secret key. */
char *cluster_engine_password(struct app *app, const char *cluster_uid, const char *user);

/* Seal password for cluster_id as "\\x<hex>" bytea text (caller frees);
 * open a sealed one from its hex (NULL when it cannot be opened). */
char *cluster_seal_secret(struct app *app, const char *cluster_id, const char *password);
char *cluster_open_secret(struct app *app, const char *cluster_id, const char *hex);
/* The keyed hash of an AUTH token (len bytes, NULs included) the Sentinel
 * listener finds its cluster by; NULL without a secret key. */
char *cluster_auth_lookup(struct app *app, const char *token, size_t len);

#endif
