/* api_hosts.c -- /v1/hosts: the VMs that run cairn-agent, their capacity,
 * what is allocated on them, their engines and their health, for admins;
 * approving a host that registered with the bootstrap token, forgetting
 * one that has no nodes; and /v1/host-join-tokens, with which an operator
 * pre-authorises one host by name (migrations/0025_host_enrolment.sql). */
#include <stdlib.h>

#include "api.h"
#include "xalloc.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_hosts_list(conn, filter, page, items, next_key);
}

static const struct api_list hosts = {"hosts", "hosts", PAGE_KEY_NAME, fetch_page};

static const char *const statuses[] = {"pending", "healthy", "lost", "draining", NULL};

void api_hosts_list(struct http_request *req)
{
    if (!api_query_one_of(req, "status", statuses))
        return;
    struct store_host_filter f = {http_query(req, "az"), http_query(req, "status")};
    api_reply_list(req, &hosts, &f);
}

/* The {id} of the request when it can name a host; a 404 otherwise. */
static const char *host_param(struct http_request *req)
{
    const char *id = http_param(req, "id");
    if (page_is_uuid(id))
        return id;
    http_reply_problem(req, PROBLEM_HOST_NOT_FOUND, NULL, "%s does not exist", id);
    return NULL;
}

void api_hosts_get(struct http_request *req)
{
    const char *id = host_param(req);
    if (id != NULL)
        api_reply_get(req, store_host_get, id, PROBLEM_HOST_NOT_FOUND);
}

static enum db_status approve_fn(struct db_conn *conn, void *arg)
{
    return store_host_approve(conn, arg);
}

static enum db_status delete_fn(struct db_conn *conn, void *arg)
{
    return store_host_delete(conn, arg);
}

/* Run fn on host {id} in a transaction; true when it did. Otherwise the
 * reply is sent: 404, conflict when fn says DB_CONFLICT (detail names why,
 * after the host's id), or the database's error. */
static bool change_host(struct http_request *req, enum db_status (*fn)(struct db_conn *, void *),
                        enum problem_code conflict, const char *why, const char **id)
{
    *id = host_param(req);
    if (*id == NULL)
        return false;
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, fn, (void *)*id);
    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_HOST_NOT_FOUND, NULL, "%s does not exist", *id);
    else if (st == DB_CONFLICT)
        http_reply_problem(req, conflict, NULL, "host %s %s", *id, why);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    return st == DB_OK;
}

void api_hosts_approve(struct http_request *req)
{
    const char *id;
    if (change_host(req, approve_fn, PROBLEM_HOST_NOT_PENDING,
                    "was approved already; only a host registered with the bootstrap token "
                    "waits for approval",
                    &id))
        api_reply_get(req, store_host_get, id, PROBLEM_HOST_NOT_FOUND);
}

void api_hosts_delete(struct http_request *req)
{
    const char *id;
    if (change_host(req, delete_fn, PROBLEM_HOST_IN_USE,
                    "has nodes placed on it; delete or move their clusters first", &id))
        http_reply_empty(req, 204);
}

/* ---- join tokens ------------------------------------------------------------ */

/* A join token lives an hour unless asked otherwise, a week at most. */
#define JOIN_TOKEN_MINUTES_DEFAULT 60
#define JOIN_TOKEN_MINUTES_MAX     (7 * 24 * 60)

const struct jspec_field api_join_token_spec[] = {
    {.name = "host_name",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = 63,
     .check = api_check_host_name},
    {.name = "expires_in_minutes",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 1,
     .max = JOIN_TOKEN_MINUTES_MAX},
    {0},
};

static enum db_status fetch_join_tokens(struct db_conn *conn, const void *filter,
                                        const struct page *page, char **items, char *next_key)
{
    (void)filter;
    return store_join_tokens_list(conn, page, items, next_key);
}

static const struct api_list join_tokens = {"join_tokens", "host-join-tokens", PAGE_KEY_TIME_HEX12,
                                            fetch_join_tokens};

void api_join_tokens_list(struct http_request *req)
{
    api_reply_list(req, &join_tokens, NULL);
}

struct join_create {
    const char *host_name, *created_by;
    int minutes;
    struct auth_token token;
    json_t *out;
};

static enum db_status join_create_fn(struct db_conn *conn, void *arg)
{
    struct join_create *c = arg;
    json_decref(c->out);
    c->out = NULL;
    auth_join_token_new(&c->token);
    return store_join_token_insert(conn, &c->token, c->host_name, c->minutes, c->created_by,
                                   &c->out);
}

/* The secret is in this reply and nowhere else. */
void api_join_tokens_create(struct http_request *req)
{
    const json_t *minutes = json_object_get(req->json, "expires_in_minutes");
    struct join_create c = {
        .host_name = json_string_value(json_object_get(req->json, "host_name")),
        .created_by = req->who.token_id,
        .minutes = json_is_integer(minutes) ? (int)json_integer_value(minutes)
                                            : JOIN_TOKEN_MINUTES_DEFAULT,
    };
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, join_create_fn, &c);
    if (st != DB_OK) {
        json_decref(c.out);
        http_reply_db_error(req, st);
        return;
    }
    json_object_set_new(c.out, "token", json_string(c.token.text));
    char *location = xasprintf("/v1/host-join-tokens/%s", c.token.id);
    http_add_header(req, "Location", location);
    free(location);
    http_reply_json(req, 201, c.out);
}

static enum db_status join_delete_fn(struct db_conn *conn, void *arg)
{
    return store_join_token_delete(conn, arg);
}

void api_join_tokens_delete(struct http_request *req)
{
    const char *id = http_param(req, "id");
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, join_delete_fn, (void *)id);
    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_JOIN_TOKEN_NOT_FOUND, NULL,
                           "no unused join token has id %s", id);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    else
        http_reply_empty(req, 204);
}
