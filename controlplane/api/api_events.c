/* api_events.c -- GET /v1/events: what happened, oldest first, optionally
 * for one cluster or host and from a point in time. A caller without host
 * details (api_host_details) sees the clusters' events without host ids,
 * and no host's own events. */
#include "api.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_events_list(conn, filter, page, items, next_key);
}

static const struct api_list events = {"events", "events", PAGE_KEY_INT, fetch_page};

void api_events_list(struct http_request *req)
{
    if (!api_query_cluster_id(req, "cluster_id") || !api_query_uuid(req, "host_id") ||
        !api_query_uuid(req, "cluster_uid") || !api_query_time(req, "since"))
        return;
    if (http_query(req, "host_id") != NULL && !api_host_details(req)) {
        http_reply_problem(req, PROBLEM_FORBIDDEN, NULL,
                           "this token does not see host details: it cannot ask for a host's "
                           "events (an admin token can, or a read token created with "
                           "host_details)");
        return;
    }
    struct store_event_filter f = {http_query(req, "cluster_id"), http_query(req, "host_id"),
                                   http_query(req, "since"), http_query(req, "cluster_uid"),
                                   api_host_details(req)};
    api_reply_list(req, &events, &f);
}
