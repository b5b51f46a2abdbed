/* api_node_types.c -- GET /v1/node-types and /v1/node-types/{name}: the
 * catalog of node shapes and prices. */
#include "api.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    (void)filter;
    return store_node_types_list(conn, page, items, next_key);
}

static const struct api_list node_types = {"node_types", "node-types", PAGE_KEY_INT, fetch_page};

void api_node_types_list(struct http_request *req)
{
    api_reply_list(req, &node_types, NULL);
}

void api_node_types_get(struct http_request *req)
{
    api_reply_get(req, store_node_type_get, http_param(req, "name"), PROBLEM_NODE_TYPE_NOT_FOUND);
}
