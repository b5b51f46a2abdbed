/* api_events.c -- GET /v1/events: what happened, oldest first, optionally
 * for one cluster or host and from a point in time. */
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
    struct store_event_filter f = {http_query(req, "cluster_id"), http_query(req, "host_id"),
                                   http_query(req, "since"), http_query(req, "cluster_uid")};
    api_reply_list(req, &events, &f);
}
