/* api_audit.c -- GET /v1/audit: the calls that changed something or tried
 * to, oldest first, optionally from a point in time or of one token
 * (admin tokens only). */
#include "api.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_audit_list(conn, filter, page, items, next_key);
}

static const struct api_list audit = {"entries", "audit", PAGE_KEY_INT, fetch_page};

void api_audit_list(struct http_request *req)
{
    if (!api_query_time(req, "since") || !api_query_token_id(req, "token_id"))
        return;
    struct store_audit_filter f = {http_query(req, "since"), http_query(req, "token_id")};
    api_reply_list(req, &audit, &f);
}
