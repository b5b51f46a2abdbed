/* api_tokens.c -- /v1/tokens: list, create and revoke API tokens. The
 * secret is in the reply to POST and nowhere else, ever. */
#include <stdlib.h>

#include "api.h"
#include "token_cache.h"
#include "tokens.h"
#include "xalloc.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    (void)filter;
    return store_tokens_list(conn, page, items, next_key);
}

const struct api_list api_tokens_listing = {"tokens", "tokens", PAGE_KEY_TIME_HEX12, fetch_page};

void api_tokens_list(struct http_request *req)
{
    api_reply_list(req, &api_tokens_listing, NULL);
}

void api_tokens_create(struct http_request *req)
{
    struct store_token_grant grant;
    json_t *created = NULL;
    char msg[128];

    if (!tokens_grant_parse(req->json, &grant, msg, sizeof(msg))) {
        json_t *errors = json_array();
        jspec_error(errors, "host_details", msg);
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors, "host_details %s", msg);
        return;
    }
    enum db_status st = tokens_create(
        req->app->db, req->app->have_secret_key ? req->app->secret_key : NULL, &grant, &created);
    if (st != DB_OK) {
        http_reply_db_error(req, st);
        return;
    }
    char *location = xasprintf("/v1/tokens/%s", json_string_value(json_object_get(created, "id")));
    http_add_header(req, "Location", location);
    free(location);
    http_reply_json(req, 201, created);
}

void api_tokens_revoke(struct http_request *req)
{
    const char *id = http_param(req, "id");
    enum db_status st = tokens_revoke(req->app->db, id);

    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_TOKEN_NOT_FOUND, NULL, "no active token has id %s", id);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    else {
        /* Here at once; the other cairnds as the notification reaches them. */
        token_cache_forget(req->app->tokens, id);
        http_reply_empty(req, 204);
    }
}

/* The token the request is signed with: what a console shows of who is
 * signed in, and which actions to offer (its scope). */
void api_tokens_current(struct http_request *req)
{
    api_reply_get(req, store_token_get, req->who.token_id, PROBLEM_TOKEN_NOT_FOUND);
}
