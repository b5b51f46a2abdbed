/* routes.c -- every route cairnd serves, in one table. api/openapi.yaml
 * describes the same set; a contract test compares the two. */
#include "api.h"
#include "tokens.h"

static const char *const paged[] = {"page_size", "page_token", NULL};
static const char *const engine_versions_query[] = {"page_size", "page_token", "engine", NULL};
static const char *const operations_query[] = {"page_size", "page_token", "cluster_id",
                                               "state",     "kind",       NULL};
static const char *const events_query[] = {"page_size", "page_token", "cluster_id",
                                           "host_id",   "since",      NULL};
static const char *const hosts_query[] = {"page_size", "page_token", "az", "state", NULL};

const struct route api_routes[] = {
    {"GET", "/healthz", SCOPE_NONE, api_healthz, NULL, NULL},
    {"GET", "/readyz", SCOPE_NONE, api_readyz, NULL, NULL},
    {"GET", "/v1/node-types", SCOPE_READ, api_node_types_list, paged, NULL},
    {"GET", "/v1/node-types/{name}", SCOPE_READ, api_node_types_get, NULL, NULL},
    {"GET", "/v1/engine-versions", SCOPE_READ, api_engine_versions_list, engine_versions_query,
     NULL},
    {"GET", "/v1/operations", SCOPE_READ, api_operations_list, operations_query, NULL},
    {"GET", "/v1/operations/{id}", SCOPE_READ, api_operations_get, NULL, NULL},
    {"GET", "/v1/events", SCOPE_READ, api_events_list, events_query, NULL},
    {"GET", "/v1/tokens", SCOPE_ADMIN, api_tokens_list, paged, NULL},
    {"POST", "/v1/tokens", SCOPE_ADMIN, api_tokens_create, NULL, tokens_create_spec},
    {"DELETE", "/v1/tokens/{id}", SCOPE_ADMIN, api_tokens_revoke, NULL, NULL},
    {"GET", "/v1/hosts", SCOPE_ADMIN, api_hosts_list, hosts_query, NULL},
    {"GET", "/v1/hosts/{id}", SCOPE_ADMIN, api_hosts_get, NULL, NULL},
    {"POST", "/v1/agent/register", SCOPE_BOOTSTRAP, api_agent_register, NULL,
     api_agent_register_spec},
    {"POST", "/v1/agent/sync", SCOPE_AGENT, api_agent_sync, NULL, api_agent_sync_spec},
};

const size_t api_route_count = sizeof(api_routes) / sizeof(api_routes[0]);
