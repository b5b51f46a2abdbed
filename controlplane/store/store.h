/* store.h -- cairnd's tables, a few functions each.
 *
 * Every function takes a borrowed connection (see db.h), binds all values as
 * parameters, and returns a db_status. Reads that feed the API return JSON
 * text built by PostgreSQL in the API's shape, passed through to the reply
 * without being parsed and printed again; the caller frees it. List
 * functions take a page (page.h) and return a JSON array of at most
 * page->size items, writing the key of the last one to next_key when more
 * exist ("" when not). */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include <jansson.h>
#include <stdbool.h>

#include "auth_token.h"
#include "db.h"
#include "page.h"
#include "problem.h"
#include "scheduler.h"
#include "secretbox.h"
#include "timeutil.h"

/* A timestamptz column as Cairn's timestamp text (timeutil.h). */
#define STORE_TS(col) "to_char(" col " AT TIME ZONE 'UTC', '" TIME_SQL_FORMAT "')"

/* Shared by the list functions: join rows of (key text, json text) into a
 * JSON array in *items, honouring the page size. */
enum db_status store_collect(PGresult *res, int size, char **items, char *next_key);

/* Run a list statement whose last parameter is the row limit: params holds
 * nparams slots, the last one left for this function to fill with
 * page->size + 1 (one more row than asked tells whether more exist). */
enum db_status store_list(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                          const char **params, const struct page *page, char **items,
                          char *next_key);

/* Run stmt for its effect with one text parameter a, or two (a, b) when b
 * is not NULL. */
enum db_status store_exec(struct db_conn *conn, const struct db_stmt *stmt, const char *a,
                          const char *b);

/* Run stmt for its effect, as store_exec(); DB_NOT_FOUND when it changed
 * no row. */
enum db_status store_change(struct db_conn *conn, const struct db_stmt *stmt, const char *a,
                            const char *b);

/* Run stmt and return the integer in the first column of its single row,
 * or DB_NOT_FOUND when it returns no row. */
enum db_status store_get_int64(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                               const char *const *params, long long *out);

/* Run stmt and return the JSON in the first column of its single row, as
 * text (store_get_text) or parsed (store_get_json), or DB_NOT_FOUND when it
 * returns no row. */
enum db_status store_get_text(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                              const char *const *params, char **out);
enum db_status store_get_json(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                              const char *const *params, json_t **out);

/* Run stmt with p for its single row: *res, which the caller PQclear()s,
 * on DB_OK; DB_NOT_FOUND (and *res NULL) when it returns no row or more
 * than one. */
enum db_status store_query_row(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, PGresult **res);

/* Copy column col of row of res into dst (size bytes, cut to fit); NULL
 * copies as "". */
void store_copy_text(char *dst, size_t size, const PGresult *res, int row, int col);
/* Column col of row of res as a new string the caller frees; NULL for SQL
 * NULL. */
char *store_dup_text(const PGresult *res, int row, int col);

/* Reads row of res into item, a struct the caller of the helpers below
 * names; the store functions keep one per shape of row they read. */
typedef void (*store_read_fn)(const PGresult *res, int row, void *item);

/* Run stmt with p (NULL: no parameters) and read its single row into out
 * with read; DB_NOT_FOUND, out untouched, when it returns no row or more
 * than one. */
enum db_status store_read_row(struct db_conn *conn, const struct db_stmt *stmt,
                              const struct db_params *p, store_read_fn read, void *out);

/* Run stmt with p (NULL: no parameters) and read each of its rows with read
 * into a new array of item_size-byte items, zeroed and with one more at the
 * end; *n gets how many rows. On failure returns NULL with *n 0 and sets
 * *status, as db_query does. The caller free()s the array. */
void *store_read_rows(struct db_conn *conn, const struct db_stmt *stmt, const struct db_params *p,
                      size_t item_size, store_read_fn read, size_t *n, enum db_status *status);

/* store_read_rows into the caller's array of max items instead, the rows
 * past max dropped. */
enum db_status store_read_into(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, store_read_fn read, void *items,
                               size_t item_size, size_t max, size_t *n);

/* Run stmt, an INSERT ... RETURNING id, with p; id (STORE_UUID_SIZE bytes)
 * gets the new row's id. */
enum db_status store_insert_id(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, char *id);

/* Split a "time|id" page key (of a list ordered by time, then id) into buf
 * (PAGE_KEY_MAX bytes) as two strings; both NULL without a key. */
void store_split_key(const struct page *page, char *buf, const char **time, const char **id);

/* Rows counted by their labels, for the Prometheus gauges (api_metrics.c):
 * by status, and operations by kind, then status. The caller free()s
 * items. */
struct store_count {
    char labels[2][64];
    long long n;
};
struct store_counts {
    struct store_count *items;
    size_t n;
};
/* Shared by the counting functions: run stmt (no parameters), whose rows
 * are one or two labels, then the count. */
enum db_status store_count_rows(struct db_conn *conn, const struct db_stmt *stmt,
                                struct store_counts *out);

/* node_types */
/* A node type's memory in bytes; DB_NOT_FOUND when there is none of name. */
enum db_status store_node_type_memory(struct db_conn *conn, const char *name, long long *bytes);
/* {"node_types": [...as GET /v1/node-types...], "lines": [{version, schedulable}]}
 * of engine, for sizing. */
enum db_status store_sizing_catalog(struct db_conn *conn, const char *engine, char **out);
enum db_status store_node_types_list(struct db_conn *conn, const struct page *page, char **items,
                                     char *next_key);
/* Every node type in catalog order: its sort key, name and JSON text as the
 * list shows it. Free with store_node_type_rows_free(). */
struct store_node_type_row {
    char *key, *name, *doc;
};
enum db_status store_node_types_all(struct db_conn *conn, struct store_node_type_row **rows,
                                    size_t *n);
void store_node_type_rows_free(struct store_node_type_row *rows, size_t n);

/* calibrations (store_calibrations.c, migration 0014) */
/* What a new calibration chooses its host, node type and engine line from,
 * as calibration.h's calib_choose() reads it (JSON text). */
enum db_status store_calibration_choices(struct db_conn *conn, char **out);
/* A calibration's row, stored with its temporary cluster and operation. */
struct store_calibration {
    const char *id, *op_id, *cluster_id;
    const char *host_id, *host_name;
    int host_vcpus;
    const char *node_type, *engine, *engine_version;
    int value_bytes;
    double read_ratio;
    int pipeline, clients, duration_s;
};
enum db_status store_calibration_insert(struct db_conn *conn, const struct store_calibration *c);
/* The figures (a JSON object's text) of the calibration op_id runs. */
enum db_status store_calibration_record(struct db_conn *conn, const char *op_id,
                                        const char *results);
/* Calibrations with the host they ran on (host_details) or without. */
enum db_status store_calibrations_list(struct db_conn *conn, bool host_details,
                                       const struct page *page, char **items, char *next_key);
enum db_status store_calibration_get(struct db_conn *conn, const char *id, char **out);
enum db_status store_calibration_get_without_host(struct db_conn *conn, const char *id, char **out);
/* {node_type: {id, requests_per_second, pipeline, read_ratio, value_bytes,
 * clients, host_name, engine_version, finished_at}}: per node type, the
 * latest calibration of engine that succeeded, for sizing. */
enum db_status store_sizing_calibrations(struct db_conn *conn, const char *engine, char **out);

/* engine_versions; engine (NULL for all) filters by engine. */
enum db_status store_engine_versions_list(struct db_conn *conn, const char *engine,
                                          const struct page *page, char **items, char *next_key);
/* The checks of a new cluster's spec the catalog answers: engine/version
 * is one of its engine lines, node_type one of its node types. */
enum db_status store_catalog_has(struct db_conn *conn, const char *engine, const char *version,
                                 const char *node_type, bool *version_ok, bool *node_type_ok);
/* engine_upgrade_paths: *ok, whether from -> to is an upgrade path; the
 * targets allowed from "from", "engine version, ..." ("" when none), in
 * allowed (cut to allowed_size). */
enum db_status store_upgrade_path(struct db_conn *conn, const char *from_engine,
                                  const char *from_version, const char *to_engine,
                                  const char *to_version, bool *ok, char *allowed,
                                  size_t allowed_size);

/* operations; each filter may be NULL. Newest first. cluster_id picks the
 * latest cluster of that id (ids are reused once a cluster is deleted),
 * cluster_uid any one. */
struct store_operation_filter {
    const char *cluster_id;
    const char *status;
    const char *kind;
    const char *cluster_uid;
};
enum db_status store_operations_list(struct db_conn *conn, const struct store_operation_filter *f,
                                     const struct page *page, char **items, char *next_key);
enum db_status store_operation_get(struct db_conn *conn, const char *id, char **out);

/* Queue an operation of kind on the cluster with context (NULL: {}); op_id
 * (STORE_UUID_SIZE bytes) gets its id. DB_CONFLICT when the cluster has an
 * operation pending or running already. */
#define STORE_UUID_SIZE 40
enum db_status store_operation_queue(struct db_conn *conn, const char *cluster_id, const char *kind,
                                     const json_t *context, char *op_id);
/* The cluster's replace_node operation that waits for room ends cancelled
 * (a delete goes first); none when it placed its node or is running now. */
enum db_status store_operation_yield_replacement(struct db_conn *conn, const char *cluster_id);
/* Cancel the operation (a scheduled one, which has not run). */
enum db_status store_operation_cancel(struct db_conn *conn, const char *op_id);
/* Labels: kind, status. */
enum db_status store_operations_by_status(struct db_conn *conn, struct store_counts *out);

/* The runner's leases (runner.h). Claim the oldest runnable operation of
 * one of kinds (a text[] literal: {create,delete}) for owner, for lease_s
 * seconds; it is running from now. DB_NOT_FOUND: none is runnable. */
struct store_claimed {
    char id[64], kind[64], cluster_id[64];
    int step;
    json_t *context; /* never NULL; the caller json_decref()s it */
};
enum db_status store_operation_claim(struct db_conn *conn, const char *owner, int lease_s,
                                     const char *kinds, struct store_claimed *out);
/* What became of a step, recorded only while owner still holds the lease,
 * which it gives up. DB_NOT_FOUND: the lease is no longer owner's. */
struct store_step_record {
    const char *op_id, *owner;
    int step;               /* the step to run next */
    const char *context;    /* JSON text */
    const char *done;       /* the step that ended (NULL: none), added to steps[] */
    const char *started_at; /* when it began (RFC 3339) */
    const char *step_name;  /* of the step to run next */
    int progress;           /* percent */
    const char *status;     /* running, succeeded, failed or cancelled */
    const char *code;       /* NULL: no error */
    const char *error;
    int wait_ms; /* before the next run */
};
enum db_status store_operation_record(struct db_conn *conn, const struct store_step_record *r);
/* Subscribe pg (a connection of its own, as for store_hosts_listen()) to
 * the ends of operations: store_operation_record() notifies, on commit,
 * with the operation's id as the payload, when it records one succeeded,
 * failed or cancelled. That is how every pending or running operation ends;
 * a scheduled one that is cancelled before it runs has nobody waiting on it. */
enum db_status store_operations_listen(PGconn *pg);
/* LISTEN for credentials that changed: each notification's payload is the
 * id of an API token or agent credential revoked, replaced or deleted. */
#define STORE_CREDENTIALS_CHANNEL "cairn_credentials"
enum db_status store_credentials_listen(PGconn *pg);
/* Engines in trouble reported to a cairnd that does not lead: the payload
 * is the host's id; the leader's monitor runs its checks at once. */
#define STORE_TROUBLE_CHANNEL "cairn_trouble"
enum db_status store_trouble_announce(struct db_conn *conn, const char *host_id);
enum db_status store_trouble_listen(PGconn *pg);

/* Record an event of the cluster; op_id and detail (a JSON object's text)
 * may be NULL. */
enum db_status store_event_add(struct db_conn *conn, const char *cluster_id, const char *op_id,
                               const char *type, const char *severity, const char *message,
                               const char *detail);

/* events; each filter may be NULL (since is RFC 3339). Oldest first.
 * cluster_id and cluster_uid as for operations. */
struct store_event_filter {
    const char *cluster_id;
    const char *host_id;
    const char *since;
    const char *cluster_uid;
    bool host_details; /* else no host's own events, and no host ids */
};
enum db_status store_events_list(struct db_conn *conn, const struct store_event_filter *f,
                                 const struct page *page, char **items, char *next_key);

/* The audit log: a call that changed something or tried to. Strings may
 * be NULL where the column allows (token_id, token_scope, action). */
struct store_audit_entry {
    const char *request_id;
    const char *caller_kind; /* "token" or "agent_bootstrap" */
    const char *token_id, *token_scope;
    const char *remote_address;
    const char *method, *path, *action;
    int status;
};
enum db_status store_audit_add(struct db_conn *conn, const struct store_audit_entry *e);

/* Its entries, oldest first; each filter may be NULL (since is RFC 3339). */
struct store_audit_filter {
    const char *since;
    const char *token_id;
};
enum db_status store_audit_list(struct db_conn *conn, const struct store_audit_filter *f,
                                const struct page *page, char **items, char *next_key);

/* api_tokens. A token's secret may be kept sealed (secretbox.h, labelled
 * with the token's id) besides its hash: STORE_TOKEN_SEALED_LEN bytes. */
#define STORE_TOKEN_SEALED_LEN (AUTH_SECRET_LEN + SECRETBOX_OVERHEAD)
struct store_token_secret {
    enum token_scope scope;
    bool host_details;
    unsigned char hash[CRYPTO_SHA256_LEN];
    bool revoked;            /* or expired */
    bool stale_last_used;    /* last_used_at is over a minute old */
    long long expires_in_us; /* until it expires; -1: never */
    bool has_sealed;         /* sealed holds the sealed secret */
    unsigned char sealed[STORE_TOKEN_SEALED_LEN];
};
/* What a new token may do; expires_in_days: 0 for never. */
struct store_token_grant {
    const char *name;
    enum token_scope scope;
    bool host_details; /* see hosts' ids and names (an admin token always does) */
    int expires_in_days;
};
/* sealed: STORE_TOKEN_SEALED_LEN bytes, or NULL to keep the hash alone. */
enum db_status store_token_insert(struct db_conn *conn, const struct auth_token *token,
                                  const struct store_token_grant *grant,
                                  const unsigned char *sealed, json_t **out);
enum db_status store_tokens_list(struct db_conn *conn, const struct page *page, char **items,
                                 char *next_key);
/* One token as the API shows it (no secret); DB_NOT_FOUND when none has id. */
enum db_status store_token_get(struct db_conn *conn, const char *id, char **out);
enum db_status store_token_secret(struct db_conn *conn, const char *id,
                                  struct store_token_secret *out);
enum db_status store_token_touch(struct db_conn *conn, const char *id);
/* DB_NOT_FOUND when no unrevoked token has this id. */
enum db_status store_token_revoke(struct db_conn *conn, const char *id);

/* host join tokens (store_join_tokens.c) */
enum db_status store_join_token_insert(struct db_conn *conn, const struct auth_token *token,
                                       const char *host_name, int expires_in_minutes,
                                       const char *created_by, json_t **out);
enum db_status store_join_tokens_list(struct db_conn *conn, const struct page *page, char **items,
                                      char *next_key);
/* DB_NOT_FOUND when no unused token has this id. */
enum db_status store_join_token_delete(struct db_conn *conn, const char *id);
/* The stored hash of an unused, unexpired token; DB_NOT_FOUND otherwise. */
enum db_status store_join_token_hash(struct db_conn *conn, const char *id, unsigned char *hash);
/* Spend the token for a registration of host_name: DB_NOT_FOUND when it is
 * for another name, used or expired. */
enum db_status store_join_token_spend(struct db_conn *conn, const char *id, const char *host_name);
enum db_status store_join_token_used_by(struct db_conn *conn, const char *id, const char *host_id);

/* the certificate authority (store_ca.c): its PEM certificate and sealed
 * key as hex (the caller frees both); DB_NOT_FOUND while there is none */
enum db_status store_ca_get(struct db_conn *conn, char **cert_pem, char **key_hex);
/* key_sealed as bytea text ("\\x..."); does nothing when one exists */
enum db_status store_ca_insert(struct db_conn *conn, const char *cert_pem, const char *key_sealed);

/* a cluster's tenant users (store_users.c) */
#define STORE_USER_HASH_LEN 64 /* a password's SHA-256 in hex */
struct store_user_change {
    const char *cluster_id, *name;
    const char *access_string;      /* NULL: unchanged (update) */
    const char *password_hashes[2]; /* [0] NULL: unchanged (update); [1] NULL: one */
};
/* The users of a cluster, as a JSON array; DB_NOT_FOUND without the
 * cluster. */
enum db_status store_users_list(struct db_conn *conn, const char *cluster_id, char **out);
enum db_status store_user_get(struct db_conn *conn, const char *cluster_id, const char *name,
                              char **out);
/* How many users the cluster has; DB_NOT_FOUND without it (or while it is
 * deleted). */
enum db_status store_users_count(struct db_conn *conn, const char *cluster_id, long long *count);
/* DB_CONFLICT when the cluster has a user of this name. */
enum db_status store_user_insert(struct db_conn *conn, const struct store_user_change *u,
                                 char **out);
/* *changed: whether the user was not already so (DB_OK for a user that
 * does not exist, *changed false: the caller reads it to tell). */
enum db_status store_user_update(struct db_conn *conn, const struct store_user_change *u,
                                 bool *changed);
/* DB_NOT_FOUND when the cluster has no user of this name. */
enum db_status store_user_delete(struct db_conn *conn, const char *cluster_id, const char *name);

/* hosts: registration, credentials, sync, desired set, monitor, reads */
/* The host's address when it needs a new certificate (it runs a node of a
 * cluster with transit encryption and has none, or one that ends within 30
 * days); DB_NOT_FOUND when it does not. */
enum db_status store_host_tls_due(struct db_conn *conn, const char *host_id, char **address);
/* Store the host's certificate, its key sealed (bytea text), and when it
 * ends (Unix time); wakes the host's agent. */
enum db_status store_host_tls_set(struct db_conn *conn, const char *host_id, const char *cert_pem,
                                  const char *key_sealed, long long not_after);
struct store_host_registration {
    const char *name, *az, *address, *agent_version;
    int vcpus;
    long long memory_mib;
    int port_min, port_max;
    const char *engines; /* JSON text: [{engine, version, line, path}] */
    bool takeover;       /* a name already registered is given to this agent */
    bool approved;       /* the host may be used at once (else 'pending') */
};
/* Insert the host named r->name with a new credential, or with r->takeover
 * take over the one of that name (same id, the new credential, fresh
 * capacity and engines); DB_CONFLICT when the name is registered and
 * r->takeover is false. host_id gets its id (AUTH_UUID_LEN+1 bytes),
 * status its status ("pending" or "healthy"; 16 bytes). Records an event. */
enum db_status store_host_register(struct db_conn *conn, const struct store_host_registration *r,
                                   const struct auth_token *credential, char *host_id,
                                   char *status);
/* How many hosts wait for approval. */
enum db_status store_hosts_pending(struct db_conn *conn, long long *count);
/* Approve a pending host; DB_NOT_FOUND when no host has id, DB_CONFLICT
 * when it is not pending. Records HostApproved. */
enum db_status store_host_approve(struct db_conn *conn, const char *id);
/* Forget a host that has no nodes (its credential with it); DB_NOT_FOUND
 * when no host has id, DB_CONFLICT when nodes are placed on it. */
enum db_status store_host_delete(struct db_conn *conn, const char *id);
/* The host and stored hash behind an agent credential id. */
enum db_status store_host_credential(struct db_conn *conn, const char *credential_id, char *host_id,
                                     unsigned char *hash);
/* Record an event about a host; message_fmt gets the host's name and AZ. */
enum db_status store_host_event(struct db_conn *conn, const char *host_id, const char *type,
                                const char *severity, const char *message_fmt);
/* What an agent's node report holds that some of its recording depends on
 * (the rest is skipped: most reports hold neither). */
struct store_report_facts {
    bool primaries; /* a node reports itself primary: elections, fallen primaries */
    bool repairs;   /* a node reports repairs made by its agent: their events */
};
/* Record an agent's sync: heartbeat (and recovery event), installed engines
 * and node report (JSON texts), purge deleted nodes it no longer reports.
 * *generation gets the desired generation. */
enum db_status store_host_sync(struct db_conn *conn, const char *host_id, const char *engines,
                               const char *nodes, const struct store_report_facts *facts,
                               long long *generation);
/* Drop the rows of removed shards whose last node is gone (the leader's
 * monitor, each tick). */
enum db_status store_shards_purge_removed(struct db_conn *conn);
enum db_status store_host_generation(struct db_conn *conn, const char *host_id,
                                     long long *generation);
/* Give every node on the host that has no port yet the lowest free one in
 * the host's range (nodes wait without one while the range is full). */
enum db_status store_host_assign_ports(struct db_conn *conn, const char *host_id);
/* The desired set for the host, as the sync reply's JSON text. */
enum db_status store_host_desired(struct db_conn *conn, const char *host_id,
                                  int heartbeat_timeout_s, char **out);
/* Mark lost, with an event each, the healthy hosts silent for timeout_s
 * counted from their last heartbeat or from watched_s seconds ago (when
 * the calling cairnd began to watch), whichever is later; *marked says how
 * many. The rule is written out at the statement. */
enum db_status store_hosts_mark_lost(struct db_conn *conn, int timeout_s, double watched_s,
                                     int *marked);

struct store_host_filter {
    const char *az;
    const char *status;
};
enum db_status store_hosts_list(struct db_conn *conn, const struct store_host_filter *f,
                                const struct page *page, char **items, char *next_key);
enum db_status store_host_get(struct db_conn *conn, const char *id, char **out);
enum db_status store_hosts_by_status(struct db_conn *conn, struct store_counts *out);
/* Subscribe pg (a connection of its own from db_connect(), not one of the
 * pool's) to changes of desired sets: each notification's payload is the id
 * of the host whose set changed. */
enum db_status store_hosts_listen(PGconn *pg);

/* ---- the control-plane leadership (leader.h) --------------------------------- */

/* On pg, a connection of its own (its session holds the lock): take the
 * leadership if no other session holds it, and begin the next term (*term);
 * *term = 0 when another cairnd leads. */
enum db_status store_leadership_seek(PGconn *pg, const char *holder, long long *term);
/* The current term, whoever holds it. */
enum db_status store_leadership_term(PGconn *pg, long long *term);
/* Give the lock up (the term stays until the next leader's). */
enum db_status store_leadership_resign(PGconn *pg);

/* clusters: the resource (JSON text; with its nodes' host ids when
 * host_details), its generation (the ETag), lists */
enum db_status store_cluster_get(struct db_conn *conn, const char *id, bool host_details,
                                 char **out);
enum db_status store_cluster_generation(struct db_conn *conn, const char *id, long long *out);
/* Both in one round trip: the resource read and its generation. */
enum db_status store_cluster_get_versioned(struct db_conn *conn, const char *id, bool host_details,
                                           char **out, long long *generation);
/* The request side: the cluster's row locked for a change, with its spec
 * (parsed; the caller json_decref()s it), generation and whether an
 * operation is pending or running. DB_NOT_FOUND when it does not exist. */
struct store_cluster_locked {
    json_t *spec;
    long long generation;
    bool busy;
    char status[24];
};
enum db_status store_cluster_lock(struct db_conn *conn, const char *id,
                                  struct store_cluster_locked *out);
/* The shard named name of the cluster (NULL: the first, for cluster mode
 * disabled, which has one): its index, whether the cluster runs in cluster
 * mode, and whether a replica of it is running, linked, loaded and not in a
 * full sync. */
struct store_shard_pick {
    bool found;
    int index;
    bool cluster_mode;
    bool in_sync_replica;
};
enum db_status store_shard_pick(struct db_conn *conn, const char *cluster_id, const char *name,
                                struct store_shard_pick *out);
/* Store a new spec; the generation moves on by one. */
enum db_status store_cluster_set_spec(struct db_conn *conn, const char *id, const json_t *spec);
enum db_status store_cluster_set_status(struct db_conn *conn, const char *id, const char *status);
/* The cluster is modifying, and pending_changes[key] says what is coming
 * (a JSON object). */
enum db_status store_cluster_mark_modifying(struct db_conn *conn, const char *id, const char *key,
                                            const json_t *pending);
/* The operation side: available (at the version its nodes run), dropped,
 * the sealed engine password as hex (NULL: none; caller frees; DB_NOT_FOUND:
 * no such cluster), parameters applied with those named in restart_needed
 * (a JSON array's text) waiting for each node's next restart. */
enum db_status store_cluster_set_available(struct db_conn *conn, const char *id);
enum db_status store_cluster_drop(struct db_conn *conn, const char *id);
enum db_status store_cluster_secret(struct db_conn *conn, const char *id, char **hex);
/* The cluster's AUTH token: the sealed one in use (hex; NULL for none),
 * whether the one before it is still valid (a rotation), and when it last
 * changed (RFC 3339; NULL: never since the create). */
struct store_cluster_auth {
    char *hex;
    bool rotating;
    char *updated_at;
};
enum db_status store_cluster_auth(struct db_conn *conn, const char *id,
                                  struct store_cluster_auth *out);
void store_cluster_auth_free(struct store_cluster_auth *a);
/* sealed ("\\x" and hex; NULL: the one in use stays) becomes the token in
 * use, found by the Sentinel listener by lookup (its keyed hash, bytea text;
 * cluster_auth_lookup()); the one in use so far stays valid beside it when
 * keep_current, else only sealed is. */
enum db_status store_cluster_auth_update(struct db_conn *conn, const char *id, const char *sealed,
                                         const char *lookup, bool keep_current);
enum db_status store_cluster_parameters_applied(struct db_conn *conn, const char *id,
                                                const char *restart_needed);
/* A change carried out by an operation ended: the cluster is available,
 * pending_changes[key] is gone and, when it succeeded, its observed
 * generation is its generation. */
enum db_status store_cluster_change_ended(struct db_conn *conn, const char *id, const char *key,
                                          bool succeeded);
/* The spec's field goes back to value (what runs; a JSON value's text); the
 * generation moves on. */
enum db_status store_cluster_spec_revert(struct db_conn *conn, const char *id, const char *field,
                                         const char *value);
/* The shard whose primary holds the most data by its newest sample of the
 * last quarter hour (used_at: BytesUsedForCache's catalog position from
 * 1), and what node_type's memory is in bytes. found false when no primary
 * has a sample; DB_NOT_FOUND: no such node type. */
struct store_data_peak {
    bool found;
    char shard[16];
    long long used_bytes, type_bytes;
};
enum db_status store_cluster_data_peak(struct db_conn *conn, const char *id, int used_at,
                                       const char *node_type, struct store_data_peak *out);
/* Whether a shard has a replica in its primary's AZ (the first such: its
 * name and the AZ). */
enum db_status store_cluster_multi_az_breach(struct db_conn *conn, const char *id, bool *breach,
                                             char *shard, size_t shard_size, char *az,
                                             size_t az_size);

struct store_cluster_filter {
    const char *status;
    const char *engine;
    const char *tag;   /* "key:value" */
    bool host_details; /* the nodes' host ids shown (doc_for, migration 0026) */
};
enum db_status store_clusters_list(struct db_conn *conn, const struct store_cluster_filter *f,
                                   const struct page *page, char **items, char *next_key);
enum db_status store_clusters_by_status(struct db_conn *conn, struct store_counts *out);
/* *live: the cluster exists and is not being deleted. */
enum db_status store_cluster_live(struct db_conn *conn, const char *id, bool *live);
/* The engine the cluster's spec names, the version its nodes run (else the
 * spec's; "" when neither is known) and whether it runs in cluster mode.
 * DB_NOT_FOUND: no such cluster. */
struct store_cluster_engine {
    char engine[16], version[32];
    bool cluster_mode;
};
enum db_status store_cluster_engine(struct db_conn *conn, const char *id,
                                    struct store_cluster_engine *out);
/* Clusters and their sealed AUTH tokens (hex; previous_hex: the one a
 * rotation keeps valid, or NULL): those one of whose tokens has the keyed
 * hash lookup (bytea text), or with lookup NULL those sealed before their
 * hashes were kept (migration 0034), whose hashes ..._fill() records.
 * Free with store_cluster_secrets_free(). */
struct store_cluster_secret {
    char *id, *hex, *previous_hex;
};
struct store_cluster_secrets {
    struct store_cluster_secret *items;
    size_t n;
};
enum db_status store_cluster_secrets(struct db_conn *conn, const char *lookup,
                                     struct store_cluster_secrets *out);
enum db_status store_cluster_auth_lookup_fill(struct db_conn *conn,
                                              const struct store_cluster_secret *s,
                                              const char *lookup, const char *previous_lookup);
void store_cluster_secrets_free(struct store_cluster_secrets *s);

/* placement (store_placement.c), in the placing transaction. Reading takes
 * the placement lock (held to its end, so two placements never count the
 * same free capacity), the node type's size, and every host with what it
 * has left and whether it can run engine/line. DB_NOT_FOUND: no such node
 * type. */
struct store_placement {
    struct sched_host *hosts; /* nhosts of them; their strings are owned here */
    size_t nhosts;
    int vcpus; /* of the node type */
    long long memory_mib;
};
enum db_status store_placement_read(struct db_conn *conn, const char *engine, const char *line,
                                    const char *node_type, struct store_placement *out);
void store_placement_free(struct store_placement *p);

/* A new cluster's rows. *same: a cluster of this id exists with this very
 * spec (JSON text), which it locks. */
enum db_status store_cluster_same_spec(struct db_conn *conn, const char *id, const char *spec,
                                       bool *exists, bool *same);
/* DB_CONFLICT when the id is taken. sealed_secret and its auth_lookup
 * (store_cluster_auth_update()): bytea text, or NULL. */
enum db_status store_cluster_insert(struct db_conn *conn, const char *id, const char *spec,
                                    const char *sealed_secret, const char *auth_lookup);
/* Shard index (0-based; named "0001" on) with slots [first, last], or none
 * when first < 0; shard_id (STORE_UUID_SIZE bytes) gets its id. */
enum db_status store_shard_insert(struct db_conn *conn, const char *cluster_id, int index,
                                  int slot_first, int slot_last, char *shard_id);
struct store_node_placed {
    const char *cluster_id, *shard_id, *host_id;
    const char *engine, *engine_version, *node_type;
    int ordinal; /* 0: placed as the shard's primary */
};
enum db_status store_node_insert(struct db_conn *conn, const struct store_node_placed *n);
/* A NodePlaced event for each node of the cluster's shards of index
 * first_shard and up. */
enum db_status store_events_nodes_placed(struct db_conn *conn, const char *cluster_id,
                                         const char *op_id, int first_shard);

/* nodes as operations see them (store_nodes.c) */
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
    bool tls;                            /* its cluster has transit encryption: TLS only */
};

struct cluster_nodes {
    struct cluster_node *items;
    size_t count;
};

/* The cluster's live nodes (by shard, then ordinal), whether it runs in
 * cluster mode, and its sealed engine password as hex (*secret_hex, NULL
 * when it has none; the caller frees it). DB_NOT_FOUND: no such cluster. */
enum db_status store_cluster_nodes(struct db_conn *conn, const char *cluster_id,
                                   struct cluster_nodes *out, bool *cluster_mode, char **uid);
/* Roles cairnd read from the engines themselves (roles_json: [{"id",
 * "role"}]): replicas linked, nothing loading or syncing. */
enum db_status store_nodes_set_roles(struct db_conn *conn, const char *roles_json);
/* After a planned failover: target is the primary, previous its replica. */
enum db_status store_nodes_swap_roles(struct db_conn *conn, const char *previous,
                                      const char *target);
/* Every node of the cluster is to be deleted (its agent stops and removes it). */
enum db_status store_nodes_mark_deleted(struct db_conn *conn, const char *cluster_id);
/* Drop the rows of the cluster's nodes on lost hosts; *left: nodes left. */
enum db_status store_nodes_remaining(struct db_conn *conn, const char *cluster_id, int *left);

/* A node to replace, locked: DB_NOT_FOUND unless it is a live node of the
 * cluster. */
struct store_node_to_replace {
    char shard_id[STORE_UUID_SIZE];
    char node_type[64], engine[16], engine_version[16];
    char address[256]; /* of its host, "" when it has none */
    int port;
    int shard; /* index */
    bool multi_az;
    bool serving; /* its host healthy and its engine running again */
};
enum db_status store_node_to_replace(struct db_conn *conn, const char *cluster_id,
                                     const char *node_id, struct store_node_to_replace *out);
/* The live nodes of its shard other than node_id (NULL: every one), and
 * only those of node_type (NULL: any): their hosts and AZs, and the AZ of
 * the primary among them (NULL: none). Free with store_shard_mates_free(). */
struct store_shard_mates {
    char **hosts, **azs;
    const char *primary_az;
    size_t n;
};
enum db_status store_shard_mates(struct db_conn *conn, const char *shard_id, const char *node_id,
                                 const char *node_type, struct store_shard_mates *out);
void store_shard_mates_free(struct store_shard_mates *m);
/* A new replica of n's shard on n's host (n->ordinal unused: it comes after
 * the shard's others); its id in new_id (STORE_UUID_SIZE bytes). It is not
 * offered to readers until store_node_joined() says it is in sync. */
enum db_status store_node_add_replica(struct db_conn *conn, const struct store_node_placed *n,
                                      char *new_id);
/* The node is to be deleted: its agent stops it and removes its data. */
enum db_status store_node_retire(struct db_conn *conn, const char *node_id);
/* The cluster's live nodes by shard: in each shard the primary first, then
 * the replicas from the most to the least in sync (in_sync: running, linked,
 * loaded and not in a full sync; then by the offset last reported, -1 when
 * none was). The caller free()s items. */
struct store_shard_node {
    char id[STORE_UUID_SIZE], shard_id[STORE_UUID_SIZE], shard_name[16];
    char address[256]; /* of its host */
    int shard, port;
    bool primary, in_sync;
    long long offset;
};
struct store_shard_nodes {
    struct store_shard_node *items;
    size_t n;
};
enum db_status store_shard_nodes(struct db_conn *conn, const char *cluster_id,
                                 struct store_shard_nodes *out);
/* The replacement is a replica in sync with its primary. */
enum db_status store_node_joined(struct db_conn *conn, const char *node_id);
/* The engine and version the node is to run: its agent restarts it on them. */
enum db_status store_node_set_engine(struct db_conn *conn, const char *node_id, const char *engine,
                                     const char *version);
/* The cluster's nodes that serve clients now: running on a healthy host,
 * and primaries or replicas linked, loaded and not in a full sync; the
 * primaries first, then by address and port. disabled_mode: the cluster
 * runs with cluster mode disabled (false when no node serves). The caller
 * free()s items. */
struct store_serving_node {
    char address[256];
    int port;
    bool primary;
};
struct store_serving_nodes {
    struct store_serving_node *items;
    size_t n;
    bool disabled_mode;
};
enum db_status store_cluster_serving_nodes(struct db_conn *conn, const char *cluster_id,
                                           struct store_serving_nodes *out);

/* engine upgrades (store_upgrades.c); the checks, queueing, cancelling and
 * scheduling are described in upgrades.h. */

/* The names of the hosts of the cluster's live nodes that do not have
 * engine/version installed, "a, b"; *hosts NULL when every one has it (the
 * caller frees it). */
enum db_status store_upgrade_hosts_without(struct db_conn *conn, const char *cluster_id,
                                           const char *engine, const char *version, char **hosts);
/* A node that stops an upgrade, found by one of the two checks below, and
 * what the check found of it as PostgreSQL prints it (facts). */
struct store_upgrade_blocker {
    bool found;
    char node_id[STORE_UUID_SIZE], shard[16];
    char facts[2][128];
};
/* The first live node of the cluster (by shard, then ordinal) not healthy
 * enough to upgrade: its host is not healthy, it does not run, or it is a
 * replica not linked, loading, in a full sync or more than max_lag bytes
 * behind its primary. facts[0] says which, as a phrase ("it is loading its
 * data"). */
enum db_status store_upgrade_unhealthy(struct db_conn *conn, const char *cluster_id,
                                       long long max_lag, struct store_upgrade_blocker *out);
/* The first live primary whose host had less memory free than its data
 * takes, by its newest sample of the last quarter hour: facts[0] the bytes
 * free, facts[1] the bytes its data takes. free_at and used_at are those
 * metrics' catalog positions from 1 (FreeableMemory, BytesUsedForCache). */
enum db_status store_upgrade_short_of_memory(struct db_conn *conn, const char *cluster_id,
                                             int free_at, int used_at,
                                             struct store_upgrade_blocker *out);
/* The shards with a single live node, down while it restarts: a JSON array
 * of {shard_id, node_id, reason}; the caller json_decref()s it. */
enum db_status store_upgrade_downtime(struct db_conn *conn, const char *cluster_id, json_t **out);
/* Queue (apply_now) or schedule the cluster's upgrade_engine operation
 * from -> to ({engine, engine_version}), cancelling a scheduled one it
 * replaces, and announce it in pending_changes.engine_upgrade with downtime
 * and, when scheduled, starts_at (epoch seconds). op_id (STORE_UUID_SIZE
 * bytes) gets its id. DB_CONFLICT: another operation of the cluster is
 * pending or running. */
enum db_status store_upgrade_queue(struct db_conn *conn, const char *cluster_id, const json_t *from,
                                   const json_t *to, bool apply_now, long long starts_at,
                                   const json_t *downtime, char *op_id);
/* The cluster's newest upgrade that is scheduled, pending or running,
 * locked: its id, whether it is still only scheduled, and its context
 * (parsed; the caller json_decref()s it). DB_NOT_FOUND: none. */
struct store_upgrade_active {
    char id[STORE_UUID_SIZE];
    bool scheduled;
    json_t *context;
};
enum db_status store_upgrade_active(struct db_conn *conn, const char *cluster_id,
                                    struct store_upgrade_active *out);
/* The spec's engine and version back to these (what runs; the generation
 * moves on), and no upgrade pending. */
enum db_status store_upgrade_revert_spec(struct db_conn *conn, const char *cluster_id,
                                         const char *engine, const char *version);
/* Every scheduled upgrade, oldest first: its operation, its cluster, the
 * cluster's maintenance window (the default when the spec has none) and
 * whether another operation of the cluster is pending or running. The
 * caller free()s items. */
struct store_scheduled_upgrade {
    char op_id[STORE_UUID_SIZE], cluster_id[64], window[64];
    bool busy;
};
struct store_scheduled_upgrades {
    struct store_scheduled_upgrade *items;
    size_t n;
};
enum db_status store_upgrades_scheduled(struct db_conn *conn, struct store_scheduled_upgrades *out);
/* The scheduled upgrade is pending from now, its context saying when and in
 * which window it started; *started false when it was no longer
 * scheduled. */
enum db_status store_upgrade_start(struct db_conn *conn, const char *op_id, const char *window,
                                   bool *started);
/* pending_changes.engine_upgrade.starts_at is when (epoch seconds), if the
 * change pending is op_id's. */
enum db_status store_upgrade_set_starts_at(struct db_conn *conn, const char *cluster_id,
                                           const char *op_id, long long when);
/* The upgrade ended: the cluster is available, no upgrade pending, and when
 * it succeeded its observed generation is its generation. */
enum db_status store_upgrade_ended(struct db_conn *conn, const char *cluster_id, bool succeeded);
/* What the report of an ended upgrade compares: its cluster and context
 * (parsed; the caller json_decref()s it), when it started and finished and
 * the time now (epoch seconds), and the period of the cluster's newest
 * sample (60 without one). DB_NOT_FOUND: op_id is not an upgrade that ran
 * and ended. */
struct store_upgrade_span {
    char cluster_id[64];
    json_t *context;
    long long started, finished, now;
    int period_s;
};
enum db_status store_upgrade_span(struct db_conn *conn, const char *op_id,
                                  struct store_upgrade_span *out);

/* the failover authority's findings and records (store_ha.c; ha.c) */
enum store_ha_finding {
    STORE_HA_DOWN_PRIMARIES,    /* limit: ms an unresponsive primary is given */
    STORE_HA_STRAY_PRIMARIES,   /* limit unused */
    STORE_HA_LEADERLESS_SHARDS, /* limit: the default node timeout, ms */
    STORE_HA_FALLEN_PRIMARIES,  /* limit: the default node timeout, ms */
    STORE_HA_DEAD_NODES,        /* limit: seconds before a node is replaced */
    STORE_HA_STALE_PRIMARIES,   /* limit: the default node timeout, ms */
};
/* One finding: the columns each query returns ('' or 0 where one does not
 * apply). */
struct store_ha_work {
    char cluster[48];
    int shard; /* index */
    char node[40];
    char why[48];
    long long since_ms; /* epoch ms when it went down */
    int timeout_ms;     /* the cluster's node timeout */
    long long epoch;    /* stale primaries: the shard's primary's configuration epoch */
};
/* At most max rows of a finding into rows, *n of them. trust_losses: the
 * monitor trusts host losses (monitor.h). The rules are at the statements. */
enum db_status store_ha_find(struct db_conn *conn, enum store_ha_finding which, int limit,
                             bool trust_losses, struct store_ha_work *rows, size_t max, size_t *n);
/* Shards whose primary should move to another AZ (at most one per cluster),
 * of clusters settled for settle_s seconds. */
struct store_ha_move {
    char cluster[48];
    int shard;
    char to_az[64], from_az[64];
    int primaries; /* in from_az */
};
enum db_status store_ha_unbalanced(struct db_conn *conn, int settle_s, struct store_ha_move *moves,
                                   size_t max, size_t *n);
/* The cluster's failover lock, for this transaction; *locked false when
 * another cairnd holds it. */
enum db_status store_ha_try_lock(struct db_conn *conn, const char *cluster_id, bool *locked);
/* Whether the node is still its shard's designated primary (locks it). */
enum db_status store_node_still_primary(struct db_conn *conn, const char *node_id, bool *still);
/* Whether the node is still its shard's primary with its engine exited or
 * its host lost (locks the shard's nodes). */
enum db_status store_node_still_fallen(struct db_conn *conn, const char *node_id, bool *still);
/* The node becomes its shard's designated primary, the others replicas;
 * config_epoch is the one it took over with (cluster mode; -1: not known). */
enum db_status store_node_designate_primary(struct db_conn *conn, const char *node_id,
                                            long long config_epoch);
/* The PrimaryFenced event: node_id's writes are held, primary_id is the
 * shard's primary (both epochs are in it). */
enum db_status store_node_fenced(struct db_conn *conn, const char *node_id, const char *primary_id);
/* A primary some replica's agent finds silent (store_ha.c, ha.c). */
struct store_silent_primary {
    char host[40], node[40], cluster[48];
    int vantage;             /* replicas' agents watching it */
    int silent;              /* of them, finding it silent for lost_ms */
    long long agent_seen_ms; /* its host's agent last heard from, epoch ms */
    long long silent_ms;     /* the longest silence reported */
    bool host_lost;          /* for its heartbeats: its agent is long silent */
};
/* Primaries on healthy hosts (or hosts lost for their heartbeats) that a
 * replica's agent finds silent for suspect_ms, with the agents watching
 * them (heard from in fresh_ms) and how many find them silent for lost_ms;
 * at most max into rows. */
enum db_status store_ha_silent_primaries(struct db_conn *conn, int suspect_ms, int lost_ms,
                                         int fresh_ms, struct store_silent_primary *rows,
                                         size_t max, size_t *n);
/* Have the host's agent report at once (its waiting sync is answered). */
enum db_status store_host_wake(struct db_conn *conn, const char *host_id);
/* The host is lost on the vantage points' word: status, lost_reason and a
 * HostLost event with why (its message, after the host's name) and detail
 * (a JSON object merged into the event's); *marked false when it was not
 * healthy nor lost for its heartbeats alone. */
enum db_status store_host_lost_now(struct db_conn *conn, const char *host_id, const char *why,
                                   const char *detail, bool *marked);
/* Clusters available with a node down become degraded, degraded ones
 * whose nodes all run become available again, each with an event; *changed
 * of them. */
enum db_status store_clusters_track_health(struct db_conn *conn, int *changed);
/* The crashed primary's agent may restart it: no replica can take its
 * place (migration 0018); *released false when it is no longer a crashed
 * primary or was released already. Its agent is told at once. */
enum db_status store_node_release_hold(struct db_conn *conn, const char *node_id, bool *released);
/* Whether the crashed primary was released in the last minute and its
 * restart crashed too. */
enum db_status store_node_restart_failed(struct db_conn *conn, const char *node_id, bool *failed);
/* A stray primary was made a replica (not yet linked). */
enum db_status store_node_demoted(struct db_conn *conn, const char *node_id);

/* metric samples (metric_samples, migration 0006) */
enum db_status store_metric_partitions(struct db_conn *conn, const char *first_at,
                                       const char *last_at);
/* rows: JSON [{node_id, at, vals: [...by catalog position...]}] with at in
 * [first_at, last_at] (epoch seconds); only nodes placed on host_id are
 * stored, *stored says how many; rollups already past them are redone. */
enum db_status store_metric_samples_add(struct db_conn *conn, const char *host_id,
                                        const char *period_s, const char *rows,
                                        const char *first_at, const char *last_at,
                                        long long *stored);
/* Roll samples up into 5-minute and 1-hour rollups as far as their periods
 * have ended, and drop rollups past their retention; *rows: rows written. */
enum db_status store_metric_rollups(struct db_conn *conn, long long *rows);
/* Each live node's newest sample of the last ten minutes, with its labels;
 * vals has metric_count entries (engine/metrics.h), each the value at that
 * catalog position as PostgreSQL prints it, or NULL for none. Free with
 * store_metric_latest_free(). */
struct store_latest_sample {
    char cluster_id[64], node_id[STORE_UUID_SIZE], shard[16], role[16];
    const char **vals; /* into text */
    char *text;
};
struct store_latest_samples {
    struct store_latest_sample *items;
    size_t n;
};
enum db_status store_metric_latest(struct db_conn *conn, struct store_latest_samples *out);
void store_metric_latest_free(struct store_latest_samples *s);

/* compacted days (metric_series, migration 0007; store_metric_series.c) */

/* Compact every finished day of 60-second samples into a series per node
 * and metric and drop its partition. *series: series written. */
enum db_status store_metric_compact(struct db_conn *conn, long long *series);
/* Before samples of the host's nodes (rows as for store_metric_samples_add)
 * are stored: bring the compacted days they fall in back into samples, so
 * that the day is whole in one place again. *restored: samples. */
enum db_status store_metric_uncompact(struct db_conn *conn, const char *host_id, const char *rows,
                                      const char *first_at, const char *last_at,
                                      long long *restored);

/* Which compacted values a query wants: text parameters, times in epoch
 * seconds, metric the catalog position from 1, level the rollup period the
 * query reads before samples (0: none), node_id NULL for every node. */
struct store_series_ask {
    const char *cluster_id, *metric, *start, *end, *node_id, *level;
};
/* Its values: per series row its node and day (epoch seconds) as array
 * literals, and its 1,440 minutes' values (NULL outside [start, end)) as
 * one binary real[] of values_len bytes. */
struct store_series_points {
    char *nodes, *days, *values; /* free() them */
    size_t values_len;
};
enum db_status store_metric_series_points(struct db_conn *conn, const struct store_series_ask *ask,
                                          struct store_series_points *out);

/* Drop the daily partitions (samples and series) older than keep_days;
 * *dropped says how many. */
enum db_status store_metric_retention(struct db_conn *conn, int keep_days, long long *dropped);

/* The statistics a query answers, NULL-terminated; stat indexes it in the
 * order of this enum. */
extern const char *const store_metric_stats[];
enum store_metric_stat {
    STORE_STAT_AVERAGE,
    STORE_STAT_MINIMUM,
    STORE_STAT_MAXIMUM,
    STORE_STAT_SUM,
    STORE_STAT_SAMPLE_COUNT,
    STORE_STAT_P50, /* the first percentile */
    STORE_STAT_P90,
    STORE_STAT_P99,
};

struct store_metric_query {
    const char *cluster_id;
    const char *start, *end; /* RFC 3339 or epoch seconds; NULL: defaults */
    int default_range_s;     /* start, when NULL: this long before end */
    long long period_s;
    int stat;            /* Average, Minimum, Maximum, Sum, SampleCount, p50, p90, p99 */
    const char *node_id; /* NULL: every node */
    bool by_node;        /* a series per node */
    bool columns;        /* each series as timestamps[] and values[], not points[] */
    const int *metrics;  /* catalog positions */
    int nmetrics;
    int max_points;
};
/* The series of a query as the API answers them. DB_NOT_FOUND: no such
 * cluster. DB_REFUSED when the range cannot be answered (end before start,
 * more than max_points points): p names the parameter (VALIDATION_FAILED;
 * the caller may recast the code). */
enum db_status store_metric_query(struct db_conn *conn, const struct store_metric_query *q,
                                  json_t **out, struct problem *p);

/* scaling shards: slot moves, shards, the change's end, cancel requests
 * (store_scaling.c) */
/* One journalled move of an operation: begun, it may be half done. */
struct store_slot_move {
    int slot, from, to; /* shard indexes */
    bool begun;
};
/* How many moves the operation has journalled (0: not planned yet). */
enum db_status store_slot_moves_count(struct db_conn *conn, const char *op_id, long long *count);
/* Journal the moves, a JSON array of {slot, from_shard, to_shard, keys,
 * bytes} (keys and bytes: what the plan expects to move). */
enum db_status store_slot_moves_plan(struct db_conn *conn, const char *op_id, const char *moves);
/* Up to max moves not yet done, those begun first, then by slot. */
enum db_status store_slot_moves_next(struct db_conn *conn, const char *op_id,
                                     struct store_slot_move *out, size_t max, size_t *n);
/* The slots (a JSON array of numbers) are about to be moved: recorded
 * before the engines are touched. */
enum db_status store_slot_moves_begin(struct db_conn *conn, const char *op_id, const char *slots);
/* Moves done: a JSON array of {slot, keys}. */
enum db_status store_slot_moves_done(struct db_conn *conn, const char *op_id, const char *done);
/* {slots_moved, slots_left, keys_moved, bytes_moved_estimate, seconds}. */
enum db_status store_slot_moves_summary(struct db_conn *conn, const char *op_id, json_t **out);
/* The shard of index now serves ranges (an int4range[] literal, "{}" for
 * none), as its primary says. */
enum db_status store_shard_set_slots(struct db_conn *conn, const char *cluster_id, int index,
                                     const char *ranges);
/* The shards of index first and up are removed, their nodes deleted (their
 * agents stop them); the rows go with the nodes' (store_host_sync()). */
enum db_status store_shards_remove(struct db_conn *conn, const char *cluster_id, int first);
/* The change pending_changes[key] announced is done: the cluster is
 * available at its generation, without the key. */
enum db_status store_cluster_change_done(struct db_conn *conn, const char *id, const char *key);
/* spec[field] = value (JSON text), as a new generation. */
enum db_status store_cluster_spec_put(struct db_conn *conn, const char *id, const char *field,
                                      const char *value);
/* An operation's kind and status, its row locked; DB_NOT_FOUND. */
struct store_operation_state {
    char kind[32], status[16];
};
enum db_status store_operation_state(struct db_conn *conn, const char *op_id,
                                     struct store_operation_state *out);
/* Ask a pending or running operation to stop at its next safe point. */
enum db_status store_operation_request_cancel(struct db_conn *conn, const char *op_id);
/* Whether it was asked to. */
enum db_status store_operation_cancel_requested(struct db_conn *conn, const char *op_id,
                                                bool *requested);

/* snapshots (store_snapshots.c, migration 0035) */
/* A new snapshot of cluster_id, as its spec and shards are now, taken by
 * operation op_id; id gets its id. DB_CONFLICT: the name is taken. */
struct store_snapshot_new {
    const char *name, *cluster_id, *source;
    int retention_days; /* 0: kept until deleted */
};
enum db_status store_snapshot_insert(struct db_conn *conn, const struct store_snapshot_new *s,
                                     char *id);
enum db_status store_snapshot_set_operation(struct db_conn *conn, const char *id,
                                            const char *op_id);
enum db_status store_snapshot_name_taken(struct db_conn *conn, const char *name, bool *taken);
/* The API's documents: a page of them, newest first (of one cluster's, or
 * every cluster's when cluster_id is NULL), or one, named by id or name. */
enum db_status store_snapshots_list(struct db_conn *conn, const char *cluster_id,
                                    const struct page *page, char **items, char *next_key);
enum db_status store_snapshot_get(struct db_conn *conn, const char *id_or_name, char **out);
/* A snapshot named by id or name, locked: its id, status and whether a
 * cluster is being restored from it. */
struct store_snapshot_locked {
    char id[STORE_UUID_SIZE];
    char status[16];
    bool restoring;
};
enum db_status store_snapshot_lock(struct db_conn *conn, const char *id_or_name,
                                   struct store_snapshot_locked *out);
enum db_status store_snapshot_set_status(struct db_conn *conn, const char *id, const char *status);
/* The snapshot operation's record of each shard (ops_snapshot.c): begun
 * (shards_json: [{"shard", "node_id"}]), saved by its engine (and
 * so asked of its agent), its upload's state for every shard ([{"shard",
 * "node_id", "status", "parts", "stored_bytes", "size_bytes", "sha256",
 * "error"}]); and the snapshot's end, available or failed with error ({"code", "message"}). */
enum db_status store_snapshot_shards_begin(struct db_conn *conn, const char *snapshot_id,
                                           const char *shards_json);
enum db_status store_snapshot_shard_saved(struct db_conn *conn, const char *snapshot_id, int shard,
                                          long long keys, const char *databases_json,
                                          long long memory_bytes);
enum db_status store_snapshot_shards_state(struct db_conn *conn, const char *snapshot_id,
                                           json_t **out);
enum db_status store_snapshot_end(struct db_conn *conn, const char *snapshot_id, const char *status,
                                  const char *error_json);
/* A shard's upload by the agent of host_id, locked until the transaction
 * ends (DB_NOT_FOUND: that agent is not asked for it): the store's upload
 * id, the parts and bytes received, the parts' tags (a JSON array the
 * caller json_decref()s). */
struct store_snapshot_upload {
    char upload_id[256];
    int parts;
    long long stored_bytes;
    long long raw_bytes; /* what the parts expand to */
    json_t *tags;
};
enum db_status store_snapshot_upload_lock(struct db_conn *conn, const char *snapshot_id, int shard,
                                          const char *host_id, struct store_snapshot_upload *out);
enum db_status store_snapshot_upload_part(struct db_conn *conn, const char *snapshot_id, int shard,
                                          const struct store_snapshot_upload *u);
enum db_status store_snapshot_upload_done(struct db_conn *conn, const char *snapshot_id, int shard,
                                          long long size_bytes, const char *sha256);
enum db_status store_snapshot_upload_failed(struct db_conn *conn, const char *snapshot_id,
                                            int shard, const char *error);
/* Clusters that take automatic snapshots: [{"cluster_id", "window",
 * "retention_days", "last" (epoch seconds or null), "busy"}]; and the
 * automatic snapshots past their retention (by a clock offset_s ahead)
 * marked deleting. */
enum db_status store_snapshots_automatic(struct db_conn *conn, json_t **out);
enum db_status store_snapshots_expire(struct db_conn *conn, int offset_s);
/* Snapshots whose files are to go (deleting, or failed with shards):
 * [{"id", "status", "shards": [{"shard", "upload_id"}]}], at most 20; and
 * the record that they went. */
enum db_status store_snapshots_to_remove(struct db_conn *conn, json_t **out);
enum db_status store_snapshot_removed(struct db_conn *conn, const char *snapshot_id);

#endif
