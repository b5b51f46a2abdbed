/* api_events.c -- GET /v1/events: what happened, oldest first, optionally
 * for one cluster or host and from a point in time. */
#include "api.h"
#include "timeutil.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_events_list(conn, filter, page, items, next_key);
}

static const struct api_list events = {"events", "events", PAGE_KEY_INT, fetch_page};

void api_events_list(struct http_request *req)
{
    const char *since = http_query(req, "since");

    if (!api_query_cluster_id(req, "cluster_id") || !api_query_uuid(req, "host_id") ||
        !api_query_uuid(req, "cluster_uid"))
        return;
    if (since != NULL && !time_is_rfc3339(since)) {
        json_t *errors = json_array();
        jspec_error(errors, "since", "must be an RFC 3339 timestamp such as 2026-11-30T08:00:00Z");
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors,
                           "since is not an RFC 3339 timestamp");
        return;
    }
    struct store_event_filter f = {http_query(req, "cluster_id"), http_query(req, "host_id"), since,
                                   http_query(req, "cluster_uid")};
    api_reply_list(req, &events, &f);
}
