/* routes.c -- every route cairnd serves, in one table. api/openapi.yaml
 * describes the same set but the console's; a contract test compares the
 * two. */
#include "api.h"
#include "calibration.h"
#include "cluster_spec.h"
#include "ec.h"
#include "snapshots.h"
#include "tokens.h"
#include "web.h"

static const char *const paged[] = {"page_size", "page_token", NULL};
static const char *const engine_versions_query[] = {"page_size", "page_token", "engine", NULL};
static const char *const operations_query[] = {
    "page_size", "page_token", "cluster_id", "cluster_uid", "status", "kind", NULL};
static const char *const events_query[] = {"page_size", "page_token", "cluster_id", "cluster_uid",
                                           "host_id",   "since",      NULL};
static const char *const audit_query[] = {"page_size", "page_token", "since", "token_id", NULL};
static const char *const hosts_query[] = {"page_size", "page_token", "az", "status", NULL};
static const char *const metrics_query[] = {"names", "start",   "end",      "period",
                                            "stat",  "node_id", "group_by", NULL};
static const char *const clusters_query[] = {"page_size", "page_token", "status",
                                             "engine",    "tag",        NULL};
static const char *const recommendations_query[] = {"days", NULL};
/* Writes that may start an operation: how long to wait for it (api_wait.c). */
static const char *const wait_query[] = {"wait", NULL};
static const char *const delete_query[] = {"wait", "final_snapshot", NULL};
static const char *const snapshots_query[] = {"page_size", "page_token", "cluster_id", NULL};
static const char *const rebalance_query[] = {"dry_run", "tolerance_percent", "wait", NULL};

const struct route api_routes[] = {
    {"GET", "/healthz", SCOPE_NONE, api_healthz, NULL, NULL},
    {"GET", "/readyz", SCOPE_NONE, api_readyz, NULL, NULL},
    {"GET", "/v1/ca-certificate", SCOPE_NONE, api_ca_certificate, NULL, NULL},
    {"GET", "/metrics", SCOPE_READ, api_prometheus, NULL, NULL},
    {"GET", "/v1/node-types", SCOPE_READ, api_node_types_list, paged, NULL},
    {"GET", "/v1/node-types/{name}", SCOPE_READ, api_node_types_get, NULL, NULL},
    {"GET", "/v1/engine-versions", SCOPE_READ, api_engine_versions_list, engine_versions_query,
     NULL},
    {"GET", "/v1/operations", SCOPE_READ, api_operations_list, operations_query, NULL},
    {"GET", "/v1/operations/{id}", SCOPE_READ, api_operations_get, NULL, NULL},
    {"POST", "/v1/operations/{id}/cancel", SCOPE_ADMIN, api_operations_cancel, NULL, NULL},
    {"GET", "/v1/events", SCOPE_READ, api_events_list, events_query, NULL},
    {"GET", "/v1/audit", SCOPE_ADMIN, api_audit_list, audit_query, NULL},
    {"GET", "/v1/tokens", SCOPE_ADMIN, api_tokens_list, paged, NULL},
    {"POST", "/v1/tokens", SCOPE_ADMIN, api_tokens_create, NULL, tokens_create_spec},
    {"GET", "/v1/tokens/current", SCOPE_READ, api_tokens_current, NULL, NULL},
    {"DELETE", "/v1/tokens/{id}", SCOPE_ADMIN, api_tokens_revoke, NULL, NULL},
    {"GET", "/v1/hosts", SCOPE_ADMIN, api_hosts_list, hosts_query, NULL},
    {"GET", "/v1/hosts/{id}", SCOPE_ADMIN, api_hosts_get, NULL, NULL},
    {"DELETE", "/v1/hosts/{id}", SCOPE_ADMIN, api_hosts_delete, NULL, NULL},
    {"POST", "/v1/hosts/{id}/approve", SCOPE_ADMIN, api_hosts_approve, NULL, NULL},
    {"GET", "/v1/host-join-tokens", SCOPE_ADMIN, api_join_tokens_list, paged, NULL},
    {"POST", "/v1/host-join-tokens", SCOPE_ADMIN, api_join_tokens_create, NULL,
     api_join_token_spec},
    {"DELETE", "/v1/host-join-tokens/{id}", SCOPE_ADMIN, api_join_tokens_delete, NULL, NULL},
    {"GET", "/v1/clusters", SCOPE_READ, api_clusters_list, clusters_query, NULL},
    {"POST", "/v1/clusters", SCOPE_ADMIN, api_clusters_create, wait_query, cspec_any_object},
    {"GET", "/v1/clusters/{id}", SCOPE_READ, api_clusters_get, NULL, NULL},
    {"PUT", "/v1/clusters/{id}", SCOPE_ADMIN, api_clusters_put, wait_query, cspec_any_object},
    {"PATCH", "/v1/clusters/{id}", SCOPE_ADMIN, api_clusters_patch, wait_query, cspec_any_object},
    {"DELETE", "/v1/clusters/{id}", SCOPE_ADMIN, api_clusters_delete, delete_query,
     api_cluster_delete_spec, .body_optional = true},
    {"GET", "/v1/clusters/{id}/auth", SCOPE_ADMIN, api_clusters_auth, NULL, NULL},
    {"GET", "/v1/clusters/{id}/users", SCOPE_READ, api_users_list, NULL, NULL},
    {"POST", "/v1/clusters/{id}/users", SCOPE_ADMIN, api_users_create, NULL, api_user_create_spec},
    {"GET", "/v1/clusters/{id}/users/{name}", SCOPE_READ, api_users_get, NULL, NULL},
    {"PATCH", "/v1/clusters/{id}/users/{name}", SCOPE_ADMIN, api_users_modify, NULL,
     api_user_modify_spec},
    {"DELETE", "/v1/clusters/{id}/users/{name}", SCOPE_ADMIN, api_users_delete, NULL, NULL},
    {"DELETE", "/v1/clusters/{id}/pending-changes", SCOPE_ADMIN, api_clusters_cancel_pending,
     wait_query, NULL},
    {"POST", "/v1/clusters/{id}/failover", SCOPE_ADMIN, api_clusters_failover, wait_query,
     api_failover_spec},
    {"POST", "/v1/clusters/{id}/rebalance", SCOPE_ADMIN, api_clusters_rebalance, rebalance_query,
     NULL},
    {"POST", "/v1/clusters/{id}/snapshots", SCOPE_ADMIN, api_snapshots_create, NULL,
     snapshot_create_spec, .body_optional = true},
    {"GET", "/v1/snapshots", SCOPE_READ, api_snapshots_list, snapshots_query, NULL},
    {"GET", "/v1/snapshots/{id}", SCOPE_READ, api_snapshots_get, NULL, NULL},
    {"DELETE", "/v1/snapshots/{id}", SCOPE_ADMIN, api_snapshots_delete, NULL, NULL},
    {"POST", "/v1/agent/register", SCOPE_BOOTSTRAP, api_agent_register, NULL,
     api_agent_register_spec},
    {"POST", "/v1/agent/sync", SCOPE_AGENT, api_agent_sync, NULL, api_agent_sync_spec,
     .heartbeat = true},
    {"PUT", "/v1/agent/snapshots/{id}/shards/{shard}/parts/{part}", SCOPE_AGENT,
     api_agent_snapshot_part, NULL, NULL, SNAPSHOT_PART_MAX},
    {"POST", "/v1/agent/snapshots/{id}/shards/{shard}/complete", SCOPE_AGENT,
     api_agent_snapshot_complete, NULL, api_agent_snapshot_complete_spec},
    {"POST", "/v1/agent/metrics", SCOPE_AGENT, api_agent_metrics, NULL, api_agent_metrics_spec,
     16u << 20},
    {"GET", "/v1/metrics/catalog", SCOPE_READ, api_metrics_catalog, NULL, NULL},
    {"POST", "/v1/metrics/query", SCOPE_READ, api_metrics_query, NULL, api_metrics_query_spec},
    {"GET", "/v1/clusters/{id}/metrics", SCOPE_READ, api_clusters_metrics, metrics_query, NULL},
    {"GET", "/v1/clusters/{id}/slot-stats", SCOPE_READ, api_clusters_slot_stats, NULL, NULL},
    {"POST", "/v1/sizing", SCOPE_READ, api_sizing, NULL, api_sizing_spec},
    {"GET", "/v1/clusters/{id}/recommendations", SCOPE_READ, api_clusters_recommendations,
     recommendations_query, NULL},
    {"GET", "/v1/sizing/calibrations", SCOPE_READ, api_calibrations_list, paged, NULL},
    {"POST", "/v1/sizing/calibrations", SCOPE_ADMIN, api_calibrations_create, NULL,
     calib_request_spec},
    {"GET", "/v1/sizing/calibrations/{id}", SCOPE_READ, api_calibrations_get, NULL, NULL},
    /* The ElastiCache-compatible endpoint (ec.h): the AWS Query protocol,
     * on the path the console's index also has. */
    {"POST", "/", SCOPE_SIGV4, ec_serve, NULL, NULL},
    {"GET", "/", SCOPE_NONE, web_serve, .console = true},
    {"HEAD", "/", SCOPE_NONE, web_serve, .console = true},
    /* The web console: every path outside /v1 that no row above names. */
    {"GET", "/*", SCOPE_NONE, web_serve, .console = true},
    {"HEAD", "/*", SCOPE_NONE, web_serve, .console = true},
};

const size_t api_route_count = sizeof(api_routes) / sizeof(api_routes[0]);
