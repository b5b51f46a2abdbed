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

#include "auth.h"
#include "db.h"
#include "page.h"
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

/* node_types */
enum db_status store_node_types_list(struct db_conn *conn, const struct page *page, char **items,
                                     char *next_key);
enum db_status store_node_type_get(struct db_conn *conn, const char *name, char **out);

/* engine_versions; engine (NULL for all) filters by engine. */
enum db_status store_engine_versions_list(struct db_conn *conn, const char *engine,
                                          const struct page *page, char **items, char *next_key);

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

/* events; each filter may be NULL (since is RFC 3339). Oldest first.
 * cluster_id and cluster_uid as for operations. */
struct store_event_filter {
    const char *cluster_id;
    const char *host_id;
    const char *since;
    const char *cluster_uid;
};
enum db_status store_events_list(struct db_conn *conn, const struct store_event_filter *f,
                                 const struct page *page, char **items, char *next_key);

/* api_tokens */
struct store_token_secret {
    enum token_scope scope;
    unsigned char hash[CRYPTO_SHA256_LEN];
    bool revoked;
    bool stale_last_used; /* last_used_at is over a minute old */
};
enum db_status store_token_insert(struct db_conn *conn, const struct auth_token *token,
                                  const char *name, enum token_scope scope, json_t **out);
enum db_status store_tokens_list(struct db_conn *conn, const struct page *page, char **items,
                                 char *next_key);
enum db_status store_token_secret(struct db_conn *conn, const char *id,
                                  struct store_token_secret *out);
enum db_status store_token_touch(struct db_conn *conn, const char *id);
/* DB_NOT_FOUND when no unrevoked token has this id. */
enum db_status store_token_revoke(struct db_conn *conn, const char *id);

/* hosts: registration, credentials, sync, desired set, monitor, reads */
struct store_host_registration {
    const char *name, *az, *address, *agent_version;
    int vcpus;
    long long memory_mib;
    int port_min, port_max;
    const char *engines; /* JSON text: [{engine, version, line, path}] */
};
/* Insert or take over the host named r->name with a new credential; host_id
 * gets its id (AUTH_UUID_LEN+1 bytes). Records an event. */
enum db_status store_host_register(struct db_conn *conn, const struct store_host_registration *r,
                                   const struct auth_token *credential, char *host_id);
/* The host and stored hash behind an agent credential id. */
enum db_status store_host_credential(struct db_conn *conn, const char *credential_id, char *host_id,
                                     unsigned char *hash);
/* Record an event about a host; message_fmt gets the host's name and AZ. */
enum db_status store_host_event(struct db_conn *conn, const char *host_id, const char *type,
                                const char *severity, const char *message_fmt);
/* Record an agent's sync: heartbeat (and recovery event), installed engines
 * and node report (JSON texts), purge deleted nodes it no longer reports.
 * *generation gets the desired generation. */
enum db_status store_host_sync(struct db_conn *conn, const char *host_id, const char *engines,
                               const char *nodes, long long *generation);
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

/* clusters: the resource (JSON text), its generation (the ETag), lists */
enum db_status store_cluster_get(struct db_conn *conn, const char *id, char **out);
enum db_status store_cluster_generation(struct db_conn *conn, const char *id, long long *out);
struct store_cluster_filter {
    const char *status;
    const char *engine;
    const char *tag; /* "key:value" */
};
enum db_status store_clusters_list(struct db_conn *conn, const struct store_cluster_filter *f,
                                   const struct page *page, char **items, char *next_key);

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
    const int *metrics;  /* catalog positions */
    int nmetrics;
    int max_points;
    const char *bad_field; /* out: the query parameter a refusal is about */
};
/* The series of a query as the API answers them; DB_NOT_FOUND with err set
 * when the range cannot be answered (too many points, end before start),
 * without err when the cluster does not exist. */
enum db_status store_metric_query(struct db_conn *conn, struct store_metric_query *q, json_t **out,
                                  char *err, size_t errsize);

#endif
