/* api_clusters.c -- /v1/clusters: create, read, list and delete clusters,
 * and read a cluster's engine password. Changes run as operations (see
 * ops.h); these handlers validate, place and queue them, and answer as the
 * operation goes (api_wait.c). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "snapshots.h"
#include "catalog.h"
#include "cluster_spec.h"
#include "cluster_nodes.h"
#include "clusters.h"
#include "upgrades.h"
#include "xalloc.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_clusters_list(conn, filter, page, items, next_key);
}

static const struct api_list clusters = {"clusters", "clusters", PAGE_KEY_NAME, fetch_page};

static const char *const statuses[] = {"creating",      "available", "modifying", "deleting",
                                       "create-failed", "degraded",  NULL};
static const char *const engines[] = {"redis", "valkey", NULL};

void api_clusters_list(struct http_request *req)
{
    if (!api_query_one_of(req, "status", statuses) || !api_query_one_of(req, "engine", engines))
        return;
    const char *tag = http_query(req, "tag");
    if (tag != NULL && strchr(tag, ':') == NULL) {
        json_t *errors = json_array();
        jspec_error(errors, "tag", "must be key:value");
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors, "tag must be key:value");
        return;
    }
    struct store_cluster_filter f = {http_query(req, "status"), http_query(req, "engine"), tag,
                                     api_host_details(req)};
    api_reply_list(req, &clusters, &f);
}

struct get_call {
    const char *id;
    bool host_details;
    char *text;
    long long generation;
};

static enum db_status get_fn(struct db_conn *conn, void *arg)
{
    struct get_call *c = arg;
    free(c->text);
    c->text = NULL;
    return store_cluster_get_versioned(conn, c->id, c->host_details, &c->text, &c->generation);
}

struct generation_call {
    const char *id;
    long long *out;
};

static enum db_status generation_fn(struct db_conn *conn, void *arg)
{
    struct generation_call *c = arg;
    return store_cluster_generation(conn, c->id, c->out);
}

/* The cluster's generation: a cheap way to ask whether it exists. */
static enum db_status cluster_generation(struct app *app, const char *id, long long *out)
{
    struct generation_call call = {id, out};
    return db_run(app->db, generation_fn, &call);
}

void api_reply_cluster(struct http_request *req, const char *id, int status, bool created)
{
    struct get_call call = {id, api_host_details(req), NULL, 0};
    enum db_status st = db_run(req->app->db, get_fn, &call);
    char etag[48], *location;

    if (st == DB_NOT_FOUND) {
        free(call.text);
        http_reply_problem(req, PROBLEM_CLUSTER_NOT_FOUND, NULL, "cluster %s does not exist", id);
        return;
    }
    if (st != DB_OK) {
        free(call.text);
        http_reply_db_error(req, st);
        return;
    }
    snprintf(etag, sizeof(etag), "\"%lld\"", call.generation);
    http_add_header(req, "ETag", etag);
    if (created) {
        location = xasprintf("/v1/clusters/%s", id);
        http_add_header(req, "Location", location);
        free(location);
    }
    http_reply_json_text(req, status, call.text);
}

void api_clusters_get(struct http_request *req)
{
    api_reply_cluster(req, http_param(req, "id"), 200, false);
}

void api_clusters_create(struct http_request *req)
{
    int wait;
    if (req->resumed) {
        api_wait_resume(req);
        return;
    }
    if (!api_wait_requested(req, &wait))
        return;
    struct problem p = {0};
    json_t *spec = cluster_spec_check(req->app, req->json, &p);
    char op_id[STORE_UUID_SIZE];
    bool created;

    if (spec == NULL) {
        http_reply_error(req, &p);
        return;
    }
    char *id = xstrdup(json_string_value(json_object_get(spec, "id")));
    if (!cluster_create(req->app, spec, cspec_auth_token(req->json), &created, op_id, &p))
        http_reply_error(req, &p);
    else if (created)
        api_wait_for(req, op_id, wait);
    else
        api_reply_cluster(req, id, 200, false); /* a retry: nothing was started */
    json_decref(spec);
    free(id);
}

const struct jspec_field api_cluster_delete_spec[] = {
    {.name = "final_snapshot",
     .type = JSPEC_STRING,
     .min_len = 1,
     .max_len = SNAPSHOT_NAME_MAX,
     .check = snapshot_check_name},
    {0},
};

/* The final snapshot's name, from the body or the query (not both); false
 * after replying when it is not a name. */
static bool final_snapshot(struct http_request *req, const char **name)
{
    const char *body = json_string_value(json_object_get(req->json, "final_snapshot"));
    const char *query = http_query(req, "final_snapshot");
    if (!api_query_checked(req, "final_snapshot", SNAPSHOT_NAME_MAX, snapshot_check_name))
        return false;
    if (query != NULL && body != NULL) {
        json_t *errors = json_array();
        jspec_error(errors, "final_snapshot", "is given in the body or the query, not both");
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors,
                           "final_snapshot is given in the body or the query, not both");
        return false;
    }
    *name = query != NULL ? query : body;
    return true;
}

void api_clusters_delete(struct http_request *req)
{
    const char *id = http_param(req, "id"), *final = NULL;
    char op_id[STORE_UUID_SIZE];
    struct problem p = {0};
    int wait;

    if (req->resumed)
        api_wait_resume(req);
    else if (!api_wait_requested(req, &wait) || !final_snapshot(req, &final))
        return;
    else if (cluster_delete(req->app, id, final, op_id, &p))
        api_wait_for(req, op_id, wait);
    else
        http_reply_error(req, &p);
}

struct auth_call {
    const char *id;
    struct store_cluster_auth auth;
};

static enum db_status auth_fn(struct db_conn *conn, void *arg)
{
    struct auth_call *c = arg;
    return store_cluster_auth(conn, c->id, &c->auth);
}

/* The AUTH token, whether the one before it is still valid (a rotation
 * under way) and when it last changed. */
void api_clusters_auth(struct http_request *req)
{
    const char *id = http_param(req, "id");
    struct auth_call call = {id, {0}};
    enum db_status st = db_run(req->app->db, auth_fn, &call);
    char *password = st == DB_OK && call.auth.hex != NULL
                         ? cluster_open_secret(req->app, id, call.auth.hex)
                         : NULL;

    if (st == DB_OK && call.auth.hex != NULL && password == NULL)
        st = DB_ERROR; /* sealed with another key, or altered */
    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_CLUSTER_NOT_FOUND, NULL, "cluster %s does not exist", id);
    else if (st == DB_ERROR)
        http_reply_problem(req, PROBLEM_INTERNAL_ERROR, NULL,
                           "the engine password of %s cannot be opened; is cairnd's "
                           "--secret-key-file the one it was sealed with?",
                           id);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    else
        http_reply_json(req, 200,
                        json_pack("{s:s?, s:s, s:s?}", "auth_token", password, "auth_token_status",
                                  call.auth.rotating ? "rotating" : "set",
                                  "auth_token_last_modified_at", call.auth.updated_at));
    free(password);
    store_cluster_auth_free(&call.auth);
}

/* The generation an If-Match header names ("12", W/"12"), -1 without one
 * or for "*"; -2 when it cannot be read. */
static long long if_match(struct http_request *req)
{
    const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "If-Match");
    long long g;

    if (v == NULL || strcmp(v, "*") == 0)
        return -1;
    if (strncmp(v, "W/", 2) == 0)
        v += 2;
    if (sscanf(v, "\"%lld\"", &g) != 1 || g < 0)
        return -2;
    return g;
}

/* PATCH and PUT of an existing cluster. A change that an operation carries
 * out is answered as that operation goes (api_wait.c) when it is what the
 * answer is about -- an engine upgrade, 202 since the first release -- or
 * the request asked to wait; without a wait, a change of parameters answers
 * 200 with the cluster, its operation under way, as it always has. */
static void modify(struct http_request *req, bool replace)
{
    const char *id = http_param(req, "id");
    long long match = if_match(req);
    struct cluster_modify_out out;
    struct problem p = {0};
    int wait;

    if (!api_wait_requested(req, &wait)) {
        return;
    } else if (match == -2) {
        http_reply_problem(req, PROBLEM_PRECONDITION_FAILED, NULL,
                           "If-Match must be an ETag this API gave, such as \"3\"");
    } else if (!cluster_modify(req->app, id, req->json, replace, match, &out, &p)) {
        http_reply_error(req, &p);
    } else if (out.preview != NULL) {
        http_reply_json(req, 200, out.preview);
    } else if (out.op_id[0] != '\0' && (out.accepted || wait >= 0)) {
        api_wait_for(req, out.op_id, wait);
    } else {
        api_reply_cluster(req, id, 200, false);
    }
}

void api_clusters_patch(struct http_request *req)
{
    if (req->resumed)
        api_wait_resume(req);
    else
        modify(req, false);
}

/* PUT creates the cluster when it does not exist (the path names it), and
 * otherwise replaces its spec. */
void api_clusters_put(struct http_request *req)
{
    const char *id = http_param(req, "id");
    const char *body_id = json_string_value(json_object_get(req->json, "id"));

    int wait;

    if (req->resumed) {
        api_wait_resume(req);
        return;
    }
    if (!api_wait_requested(req, &wait)) /* the query before the body */
        return;
    if (body_id != NULL && strcmp(body_id, id) != 0) {
        json_t *errors = json_array();
        jspec_error(errors, "id", "must match the id in the path");
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors, "the body names another id");
        return;
    }
    long long generation = 0;
    enum db_status st = cluster_generation(req->app, id, &generation);
    if (st == DB_NOT_FOUND) {
        json_object_set_new(req->json, "id", json_string(id));
        api_clusters_create(req);
    } else if (st != DB_OK) {
        http_reply_db_error(req, st);
    } else {
        modify(req, true);
    }
}

static bool check_shard_name(const json_t *value, char *msg, size_t msgsize)
{
    const char *s = json_string_value(value);
    if (strlen(s) == 4 && strspn(s, "0123456789") == 4)
        return true;
    snprintf(msg, msgsize, "must be a shard id such as \"0001\"");
    return false;
}

const struct jspec_field api_failover_spec[] = {
    {.name = "shard_id", .type = JSPEC_STRING, .check = check_shard_name},
    {0},
};

/* POST /v1/clusters/{id}/failover: a planned, lossless failover of one
 * shard; 202 with the operation to follow. */
void api_clusters_failover(struct http_request *req)
{
    const char *id = http_param(req, "id");
    const char *shard = json_string_value(json_object_get(req->json, "shard_id"));
    char op_id[STORE_UUID_SIZE];
    struct problem p = {0};
    int wait;

    if (req->resumed)
        api_wait_resume(req);
    else if (!api_wait_requested(req, &wait))
        return;
    else if (cluster_failover(req->app, id, shard, op_id, &p))
        api_wait_for(req, op_id, wait);
    else
        http_reply_error(req, &p);
}

/* DELETE /v1/clusters/{id}/pending-changes: cancel the engine upgrade that
 * waits for the maintenance window; the spec's engine and version go back
 * to what runs. */
void api_clusters_cancel_pending(struct http_request *req)
{
    const char *id = http_param(req, "id");
    struct problem p = {0};
    int wait; /* accepted as on every write; the cancel is done when it answers */

    if (!api_wait_requested(req, &wait))
        return;
    if (upgrade_cancel(req->app, id, &p))
        api_reply_cluster(req, id, 200, false);
    else
        http_reply_error(req, &p);
}

/* POST /v1/clusters/{id}/rebalance: ?dry_run=true answers what would move;
 * otherwise the rebalance operation, as every operation-starting write. */
void api_clusters_rebalance(struct http_request *req)
{
    static const char *const booleans[] = {"true", "false", NULL};
    const char *id = http_param(req, "id");
    char op_id[STORE_UUID_SIZE];
    struct problem p = {0};
    long long tolerance;
    json_t *preview = NULL;
    int wait;

    if (req->resumed) {
        api_wait_resume(req);
        return;
    }
    if (!api_query_one_of(req, "dry_run", booleans) ||
        !api_query_int(req, "tolerance_percent", 0, 100, REBALANCE_TOLERANCE_PERCENT, &tolerance) ||
        !api_wait_requested(req, &wait))
        return;
    const char *dry = http_query(req, "dry_run");
    bool dry_run = dry != NULL && strcmp(dry, "true") == 0;
    if (!cluster_rebalance(req->app, id, (double)tolerance / 100.0, dry_run, &preview, op_id, &p))
        http_reply_error(req, &p);
    else if (dry_run)
        http_reply_json(req, 200, preview);
    else
        api_wait_for(req, op_id, wait);
}
