/* api.h -- the REST handlers, one file per resource (api_*.c), and the
 * helpers they share for lists and single reads. The route table in
 * routes.c ties them to paths. */
#ifndef CAIRN_API_H
#define CAIRN_API_H

#include "http.h"
#include "page.h"
#include "store.h"

/* A paginated list: its name in the reply, its page-token namespace and key
 * shape, and the store call that fetches one page with the given filter. */
struct api_list {
    const char *items; /* "node_types" */
    const char *list;  /* "node-types" */
    enum page_key shape;
    enum db_status (*fetch)(struct db_conn *conn, const void *filter, const struct page *page,
                            char **items, char *next_key);
};

/* Fetch one page of list on a pooled connection; *items (JSON text owned
 * by the caller) and next_key as for the store's list functions. */
enum db_status api_fetch_page(struct db_pool *pool, const struct api_list *list, const void *filter,
                              const struct page *page, char **items, char *next_key);

/* The token list, for `cairnd token list` as much as for GET /v1/tokens. */
extern const struct api_list api_tokens_listing;

/* Parse page_size and page_token, fetch a page and reply with the list
 * envelope; replies 400 for bad paging input and 503/500 on database errors. */
void api_reply_list(struct http_request *req, const struct api_list *list, const void *filter);
/* Its two halves, for a list that is not read from the database each
 * time: the page asked for (false: refused, and replied), and the reply of
 * items (JSON array text, taken over) and next_key ("" when no more). */
bool api_page_parse(struct http_request *req, const struct api_list *list, struct page *page);
void api_reply_page(struct http_request *req, const struct api_list *list, char *items,
                    const char *next_key);

/* Fetch one JSON document (as text) by key and reply 200 with it, or with
 * not_found (whose detail names the key) when the store has none. */
void api_reply_get(struct http_request *req,
                   enum db_status (*fetch)(struct db_conn *conn, const char *key, char **out),
                   const char *key, enum problem_code not_found);

/* As api_reply_get(), answering with status instead of 200. */
void api_reply_get_status(struct http_request *req,
                          enum db_status (*fetch)(struct db_conn *conn, const char *key,
                                                  char **out),
                          const char *key, enum problem_code not_found, int status);

/* Check an optional query parameter against a set of values (NULL
 * terminated), as a UUID, a cluster id, an API token's id or an RFC 3339
 * timestamp. Returns false after replying 400 when it is present and
 * invalid. */
/* Whether the caller may see which hosts run what: hosts' ids and names,
 * and the hosts' own events (an admin token, or a read token created with
 * host_details). */
bool api_host_details(const struct http_request *req);

bool api_query_one_of(struct http_request *req, const char *name, const char *const *values);
bool api_query_uuid(struct http_request *req, const char *name);
bool api_query_cluster_id(struct http_request *req, const char *name);
/* An optional parameter of at most max_len bytes that passes a jspec
 * check (its message is the refusal's). */
bool api_query_checked(struct http_request *req, const char *name, size_t max_len,
                       bool (*check)(const json_t *value, char *msg, size_t msgsize));
bool api_query_token_id(struct http_request *req, const char *name);
bool api_query_time(struct http_request *req, const char *name);
/* An optional whole number (decimal digits only) from min to max into
 * *out, fallback when absent; false after replying 400 otherwise. */
bool api_query_int(struct http_request *req, const char *name, long long min, long long max,
                   long long fallback, long long *out);

/* Reply with cluster id and its ETag, with status; created adds its
 * Location. 404 CLUSTER_NOT_FOUND when it does not exist. */
void api_reply_cluster(struct http_request *req, const char *id, int status, bool created);

/* Writes that start an operation (api_wait.c). The wait req asks for in
 * seconds, capped at --max-wait: its ?wait= when sent, else the first wait
 * preference of its Prefer headers; -1 when it asks for none. Returns false
 * after replying 400 INVALID_QUERY_PARAMETER when ?wait= is not a whole
 * number of seconds. */
bool api_wait_requested(struct http_request *req, int *seconds);

/* Answer a request that started operation op_id, having asked for a wait
 * of seconds (-1: none): at once with 202 when it asked for none or the
 * operation is scheduled for later, else once the operation has ended (the
 * final resource, or its problem) or seconds have passed (202), parking
 * the request meanwhile. A handler that called it calls api_wait_resume()
 * when it runs again with req->resumed. */
void api_wait_for(struct http_request *req, const char *op_id, int seconds);
void api_wait_resume(struct http_request *req);

/* The per-slot statistics and hot-slot advice of cluster id, read live
 * from each shard's primary, as GET /v1/clusters/{id}/slot-stats answers
 * them (api_slots.c): *out is the caller's. False with p filled:
 * CLUSTER_NOT_FOUND, NOT_SUPPORTED_BY_ENGINE (not Valkey 8+ in cluster
 * mode), or a failure to read the database or the engines. */
bool api_slot_stats_read(struct app *app, const char *id, json_t **out, struct problem *p);

/* Handlers. */
void api_healthz(struct http_request *req);
void api_readyz(struct http_request *req);
void api_ca_certificate(struct http_request *req);
void api_node_types_list(struct http_request *req);
void api_node_types_get(struct http_request *req);
void api_engine_versions_list(struct http_request *req);
void api_operations_list(struct http_request *req);
void api_operations_get(struct http_request *req);
void api_operations_cancel(struct http_request *req);
void api_events_list(struct http_request *req);
void api_audit_list(struct http_request *req);
void api_tokens_list(struct http_request *req);
void api_tokens_create(struct http_request *req);
void api_tokens_revoke(struct http_request *req);
void api_tokens_current(struct http_request *req);
void api_hosts_list(struct http_request *req);
void api_hosts_get(struct http_request *req);
void api_hosts_approve(struct http_request *req);
void api_hosts_delete(struct http_request *req);
void api_join_tokens_list(struct http_request *req);
void api_join_tokens_create(struct http_request *req);
void api_join_tokens_delete(struct http_request *req);
extern const struct jspec_field api_join_token_spec[];

/* A host's name or AZ: letters, digits, '.', '_' and '-' (a jspec check). */
bool api_check_host_name(const json_t *value, char *msg, size_t msgsize);
void api_agent_register(struct http_request *req);
void api_clusters_list(struct http_request *req);
void api_clusters_get(struct http_request *req);
void api_clusters_create(struct http_request *req);
void api_clusters_delete(struct http_request *req);
extern const struct jspec_field api_cluster_delete_spec[];
void api_snapshots_create(struct http_request *req);
void api_snapshots_list(struct http_request *req);
void api_snapshots_get(struct http_request *req);
void api_snapshots_delete(struct http_request *req);
extern const struct jspec_field api_agent_snapshot_complete_spec[];
void api_agent_snapshot_part(struct http_request *req);
void api_agent_snapshot_complete(struct http_request *req);
void api_clusters_auth(struct http_request *req);
void api_clusters_patch(struct http_request *req);
void api_clusters_put(struct http_request *req);
void api_clusters_failover(struct http_request *req);
void api_clusters_rebalance(struct http_request *req);
void api_clusters_cancel_pending(struct http_request *req);
void api_users_list(struct http_request *req);
void api_users_create(struct http_request *req);
void api_users_get(struct http_request *req);
void api_users_modify(struct http_request *req);
void api_users_delete(struct http_request *req);
extern const struct jspec_field api_user_create_spec[];
extern const struct jspec_field api_user_modify_spec[];
extern const struct jspec_field api_failover_spec[];
void api_agent_sync(struct http_request *req);
void api_agent_metrics(struct http_request *req);
void api_metrics_catalog(struct http_request *req);
void api_clusters_metrics(struct http_request *req);
void api_metrics_query(struct http_request *req);
void api_prometheus(struct http_request *req);
void api_clusters_slot_stats(struct http_request *req);
void api_sizing(struct http_request *req);
/* The node types of a catalog list (GET /v1/node-types' items) as the
 * sizing model takes them, priced for engine; strings borrowed from types,
 * the array (one spare zeroed entry) the caller's to free. */
struct sizing_node_type *api_node_types(const json_t *types, const char *engine);
void api_calibrations_list(struct http_request *req);
void api_calibrations_create(struct http_request *req);
void api_calibrations_get(struct http_request *req);
extern const struct jspec_field api_sizing_spec[];
void api_clusters_recommendations(struct http_request *req);
extern const struct jspec_field api_metrics_query_spec[];
extern const struct jspec_field api_agent_metrics_spec[];

/* Body specs of the agent routes. */
extern const struct jspec_field api_agent_register_spec[];
extern const struct jspec_field api_agent_sync_spec[];

/* The route table. */
extern const struct route api_routes[];
extern const size_t api_route_count;

#endif
