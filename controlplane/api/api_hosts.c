/* api_hosts.c -- GET /v1/hosts and /v1/hosts/{id}: the VMs that run
 * cairn-agent, their capacity, what is allocated on them, their engines and
 * their health, for admins. */
#include "api.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_hosts_list(conn, filter, page, items, next_key);
}

static const struct api_list hosts = {"hosts", "hosts", PAGE_KEY_NAME, fetch_page};

static const char *const statuses[] = {"healthy", "lost", "draining", NULL};

void api_hosts_list(struct http_request *req)
{
    if (!api_query_one_of(req, "status", statuses))
        return;
    struct store_host_filter f = {http_query(req, "az"), http_query(req, "status")};
    api_reply_list(req, &hosts, &f);
}

void api_hosts_get(struct http_request *req)
{
    const char *id = http_param(req, "id");
    if (!page_is_uuid(id)) {
        http_reply_problem(req, PROBLEM_HOST_NOT_FOUND, NULL, "%s does not exist", id);
        return;
    }
    api_reply_get(req, store_host_get, id, PROBLEM_HOST_NOT_FOUND);
}
