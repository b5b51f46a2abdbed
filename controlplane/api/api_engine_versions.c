/* api_engine_versions.c -- GET /v1/engine-versions: engine lines, their
 * upgrade targets, and whether any registered host can run them. */
#include "api.h"
#include "catalog.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_engine_versions_list(conn, filter, page, items, next_key);
}

static const struct api_list engine_versions = {"engine_versions", "engine-versions", PAGE_KEY_INT,
                                                fetch_page};

void api_engine_versions_list(struct http_request *req)
{
    if (!api_query_one_of(req, "engine", engine_kind_names))
        return;
    api_reply_list(req, &engine_versions, http_query(req, "engine"));
}
