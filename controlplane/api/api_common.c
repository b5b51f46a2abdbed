/* api_common.c -- list and single-read plumbing shared by the handlers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "auth_token.h"
#include "timeutil.h"

struct list_call {
    const struct api_list *list;
    const void *filter;
    const struct page *page;
    char *items;
    char *next_key;
};

static enum db_status list_fn(struct db_conn *conn, void *arg)
{
    struct list_call *c = arg;
    free(c->items);
    c->items = NULL;
    return c->list->fetch(conn, c->filter, c->page, &c->items, c->next_key);
}

enum db_status api_fetch_page(struct db_pool *pool, const struct api_list *list, const void *filter,
                              const struct page *page, char **items, char *next_key)
{
    struct list_call call = {list, filter, page, NULL, next_key};
    enum db_status st = db_run(pool, list_fn, &call);

    if (st != DB_OK) {
        free(call.items);
        return st;
    }
    *items = call.items;
    return DB_OK;
}

bool api_host_details(const struct http_request *req)
{
    return req->who.authenticated && req->who.kind == AUTH_KIND_TOKEN && req->who.host_details;
}

bool api_page_parse(struct http_request *req, const struct api_list *list, struct page *page)
{
    char msg[128];
    const char *token = http_query(req, "page_token");

    memset(page, 0, sizeof(*page));
    if (!page_size_parse(http_query(req, "page_size"), &page->size, msg, sizeof(msg))) {
        json_t *errors = json_array();
        jspec_error(errors, "page_size", msg);
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors, "page_size %s", msg);
        return false;
    }
    if (token != NULL && token[0] != '\0') {
        if (!page_token_decode(token, list->list, list->shape, page->after)) {
            http_reply_problem(req, PROBLEM_INVALID_PAGE_TOKEN, NULL,
                               "page_token was not issued by this list; start again without it");
            return false;
        }
        page->has_after = true;
    }
    return true;
}

void api_reply_page(struct http_request *req, const struct api_list *list, char *items,
                    const char *next_key)
{
    http_reply_json_text(
        req, 200,
        page_envelope(list->items, items, list->list, next_key[0] != '\0' ? next_key : NULL));
}

void api_reply_list(struct http_request *req, const struct api_list *list, const void *filter)
{
    struct page page;
    if (!api_page_parse(req, list, &page))
        return;
    char *items;
    char next_key[PAGE_KEY_MAX];
    enum db_status st = api_fetch_page(req->app->db, list, filter, &page, &items, next_key);
    if (st != DB_OK) {
        http_reply_db_error(req, st);
        return;
    }
    api_reply_page(req, list, items, next_key);
}

struct get_call {
    enum db_status (*fetch)(struct db_conn *conn, const char *key, char **out);
    const char *key;
    char *out;
};

static enum db_status get_fn(struct db_conn *conn, void *arg)
{
    struct get_call *c = arg;
    return c->fetch(conn, c->key, &c->out);
}

void api_reply_get(struct http_request *req,
                   enum db_status (*fetch)(struct db_conn *conn, const char *key, char **out),
                   const char *key, enum problem_code not_found)
{
    api_reply_get_status(req, fetch, key, not_found, 200);
}

void api_reply_get_status(struct http_request *req,
                          enum db_status (*fetch)(struct db_conn *conn, const char *key,
                                                  char **out),
                          const char *key, enum problem_code not_found, int status)
{
    struct get_call call = {fetch, key, NULL};
    enum db_status st = db_run(req->app->db, get_fn, &call);

    if (st == DB_NOT_FOUND)
        http_reply_problem(req, not_found, NULL, "%s does not exist", key);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    else
        http_reply_json_text(req, status, call.out);
}

static void reject_query(struct http_request *req, const char *name, const char *message)
{
    json_t *errors = json_array();
    jspec_error(errors, name, message);
    http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors, "%s %s", name, message);
}

bool api_query_one_of(struct http_request *req, const char *name, const char *const *values)
{
    const char *v = http_query(req, name);
    char msg[256];

    if (v == NULL)
        return true;
    for (const char *const *p = values; *p != NULL; p++) {
        if (strcmp(v, *p) == 0)
            return true;
    }
    jspec_one_of_message(values, msg, sizeof(msg));
    reject_query(req, name, msg);
    return false;
}

bool api_query_checked(struct http_request *req, const char *name, size_t max_len,
                       bool (*check)(const json_t *value, char *msg, size_t msgsize))
{
    const char *v = http_query(req, name);
    char msg[256] = "";
    if (v == NULL)
        return true;
    json_t *value = json_string(v); /* NULL: not UTF-8 */
    bool ok =
        value != NULL && v[0] != '\0' && strlen(v) <= max_len && check(value, msg, sizeof(msg));
    json_decref(value);
    if (!ok) {
        if (msg[0] == '\0')
            snprintf(msg, sizeof(msg), "must be 1 to %zu characters", max_len);
        reject_query(req, name, msg);
    }
    return ok;
}

bool api_query_cluster_id(struct http_request *req, const char *name)
{
    const char *v = http_query(req, name);
    size_t n = v != NULL ? strlen(v) : 0;

    if (v == NULL || (n >= 1 && n <= 40 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") == n))
        return true;
    reject_query(req, name, "must be a cluster id: 1 to 40 lowercase letters, digits and hyphens");
    return false;
}

bool api_query_token_id(struct http_request *req, const char *name)
{
    const char *v = http_query(req, name);

    if (v == NULL || (strlen(v) == AUTH_ID_LEN && strspn(v, "0123456789abcdef") == AUTH_ID_LEN))
        return true;
    reject_query(req, name, "must be a token id: 12 lower-case hex digits");
    return false;
}

bool api_query_time(struct http_request *req, const char *name)
{
    const char *v = http_query(req, name);

    if (v == NULL || time_is_rfc3339(v))
        return true;
    reject_query(req, name, "must be an RFC 3339 timestamp such as 2026-11-30T08:00:00Z");
    return false;
}

bool api_query_int(struct http_request *req, const char *name, long long min, long long max,
                   long long fallback, long long *out)
{
    const char *v = http_query(req, name);
    size_t n = v != NULL ? strlen(v) : 0;
    char msg[96];

    *out = fallback;
    if (v == NULL)
        return true;
    if (n >= 1 && n <= 18 && strspn(v, "0123456789") == n) {
        *out = strtoll(v, NULL, 10);
        if (*out >= min && *out <= max)
            return true;
    }
    snprintf(msg, sizeof(msg), "must be a whole number from %lld to %lld", min, max);
    reject_query(req, name, msg);
    return false;
}

bool api_query_uuid(struct http_request *req, const char *name)
{
    const char *v = http_query(req, name);
    if (v == NULL || page_is_uuid(v))
        return true;
    reject_query(req, name, "must be a UUID");
    return false;
}
