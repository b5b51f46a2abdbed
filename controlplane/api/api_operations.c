/* api_operations.c -- GET /v1/operations and /v1/operations/{id}: the
 * durable workflows that move clusters toward their spec, newest first;
 * POST /v1/operations/{id}/cancel. */
#include "api.h"
#include "clusters.h"
#include "ops.h"
#include "upgrades.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_operations_list(conn, filter, page, items, next_key);
}

static const struct api_list operations = {"operations", "operations", PAGE_KEY_TIME_UUID,
                                           fetch_page};

static const char *const statuses[] = {"scheduled", "pending",   "running", "succeeded",
                                       "failed",    "cancelled", NULL};

void api_operations_list(struct http_request *req)
{
    if (!api_query_cluster_id(req, "cluster_id") || !api_query_one_of(req, "status", statuses) ||
        !api_query_one_of(req, "kind", op_kind_names()) || !api_query_uuid(req, "cluster_uid"))
        return;
    struct store_operation_filter f = {http_query(req, "cluster_id"), http_query(req, "status"),
                                       http_query(req, "kind"), http_query(req, "cluster_uid")};
    api_reply_list(req, &operations, &f);
}

void api_operations_get(struct http_request *req)
{
    const char *id = http_param(req, "id");
    if (!page_is_uuid(id)) {
        http_reply_problem(req, PROBLEM_OPERATION_NOT_FOUND, NULL, "%s does not exist", id);
        return;
    }
    api_reply_get(req, upgrade_operation_get, id, PROBLEM_OPERATION_NOT_FOUND);
}

/* POST /v1/operations/{id}/cancel: 202 with the operation, which ends
 * cancelled at its next safe point. */
void api_operations_cancel(struct http_request *req)
{
    const char *id = http_param(req, "id");
    struct problem p = {0};
    if (!page_is_uuid(id)) {
        http_reply_problem(req, PROBLEM_OPERATION_NOT_FOUND, NULL, "%s does not exist", id);
        return;
    }
    if (operation_cancel(req->app, id, &p))
        api_reply_get_status(req, upgrade_operation_get, id, PROBLEM_OPERATION_NOT_FOUND, 202);
    else
        http_reply_error(req, &p);
}
