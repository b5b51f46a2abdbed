/* api_users.c -- /v1/clusters/{id}/users: a cluster's tenant users beside
 * the default one (its AUTH token), as ElastiCache's RBAC users are: a
 * user name, an access string, and one or two passwords -- two while an
 * application moves from one to the other.
 *
 * An access string is checked three times: its words here
 * (engine_access_check()), its command and category names against a live
 * node of the cluster (engine_access_known()), and on every engine the
 * agent caps it with what the cluster's AUTH token may not do either
 * (engine_access_cap()), so that no user can reconfigure a node or take
 * it away from Cairn. Only SHA-256 of a password is kept, and no reply
 * holds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "api.h"
#include "cluster_nodes.h"
#include "cluster_spec.h"
#include "crypto.h"
#include "nodeio.h"
#include "xalloc.h"

#define USERS_MAX     100 /* per cluster */
#define USER_NAME_MAX 64

/* A user name: letters, digits, '.', '_' and '-', beginning with a letter
 * or digit; not the default user's, nor one of Cairn's own. */
static bool user_name_problem(const char *name, size_t len, char *msg, size_t msgsize)
{
    if (len == 0 || len > USER_NAME_MAX || strlen(name) != len) {
        snprintf(msg, msgsize, "must be 1 to %d characters", USER_NAME_MAX);
        return true;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        bool alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || (ch != '.' && ch != '_' && ch != '-'))) {
            snprintf(msg, msgsize,
                     "may contain only letters, digits, '.', '_' and '-', and begins with a "
                     "letter or digit");
            return true;
        }
    }
    if (strcmp(name, "default") == 0) {
        snprintf(msg, msgsize,
                 "the default user is the cluster's AUTH token: change it with PATCH "
                 "/v1/clusters/{id} {\"auth_token\": ...}");
        return true;
    }
    if (strncasecmp(name, "cairn", 5) == 0) {
        snprintf(msg, msgsize, "names beginning with \"cairn\" are Cairn's own");
        return true;
    }
    return false;
}

static bool check_user_name(const json_t *value, char *msg, size_t msgsize)
{
    return !user_name_problem(json_string_value(value), json_string_length(value), msg, msgsize);
}

static bool check_access(const json_t *value, char *msg, size_t msgsize)
{
    if (strlen(json_string_value(value)) != json_string_length(value)) {
        snprintf(msg, msgsize, "may not contain NUL");
        return false;
    }
    return engine_access_check(json_string_value(value), msg, msgsize);
}

/* One or two passwords, each as an AUTH token is, not the same twice. */
static bool check_passwords(const json_t *value, char *msg, size_t msgsize)
{
    if (json_array_size(value) == 2 &&
        json_equal(json_array_get(value, 0), json_array_get(value, 1))) {
        snprintf(msg, msgsize, "the two passwords must differ");
        return false;
    }
    return true;
}

static const struct jspec_field password_item = {
    .name = "password", .type = JSPEC_STRING, .check = cspec_auth_token_check};

#define ACCESS_FIELD(req)                                                                          \
    {                                                                                              \
        .name = "access_string", .type = JSPEC_STRING, .required = (req), .check = check_access    \
    }
#define PASSWORDS_FIELD(req)                                                                       \
    {                                                                                              \
        .name = "passwords", .type = JSPEC_ARRAY, .required = (req), .min_len = 1, .max_len = 2,   \
        .check = check_passwords, .items = &password_item                                          \
    }

const struct jspec_field api_user_create_spec[] = {
    {.name = "user_name", .type = JSPEC_STRING, .required = true, .check = check_user_name},
    ACCESS_FIELD(true),
    PASSWORDS_FIELD(true),
    {0},
};

const struct jspec_field api_user_modify_spec[] = {
    ACCESS_FIELD(false),
    PASSWORDS_FIELD(false),
    {0},
};

/* The passwords of body as SHA-256 in hex, into out (NULL when absent). */
static void hash_passwords(const json_t *body, char out[2][STORE_USER_HASH_LEN + 1],
                           struct store_user_change *u)
{
    const json_t *list = json_object_get(body, "passwords");
    unsigned char digest[CRYPTO_SHA256_LEN];

    for (size_t i = 0; i < 2; i++) {
        const json_t *pw = json_array_get(list, i);
        u->password_hashes[i] = NULL;
        if (pw == NULL)
            continue;
        crypto_sha256(json_string_value(pw), json_string_length(pw), digest);
        crypto_hex(digest, sizeof(digest), out[i]);
        u->password_hashes[i] = out[i];
    }
}

/* Whether a live node of the cluster knows every name access uses. False
 * with p: VALIDATION_FAILED naming the unknown one, or CLUSTER_UNHEALTHY
 * when no node answers (an access string is not taken unchecked). */
static bool known_to_engine(struct app *app, const char *id, const char *access, struct problem *p)
{
    struct cluster_nodes nodes = {0};
    char *password = NULL, why[256] = "no node of the cluster is running";
    bool cluster_mode;
    enum engine_access_known known = ENGINE_ACCESS_UNCHECKED;

    if (!cluster_nodes_load(app, id, &nodes, &password, &cluster_mode, why, sizeof(why)))
        return problem_set(p, PROBLEM_INTERNAL_ERROR, "%s", why);
    for (size_t i = 0; i < nodes.count && known == ENGINE_ACCESS_UNCHECKED; i++) {
        const struct cluster_node *n = &nodes.items[i];
        if (n->host_lost || strcmp(n->process_state, "running") != 0)
            continue;
        struct resp_conn *c = nodeio_connect(n, password, NODEIO_QUICK, why, sizeof(why));
        if (c != NULL)
            known = engine_access_known(c, access, why, sizeof(why));
        resp_close(c);
    }
    cluster_nodes_free(&nodes);
    free(password);
    if (known == ENGINE_ACCESS_UNKNOWN)
        problem_field(p, "access_string", why);
    else if (known == ENGINE_ACCESS_UNCHECKED)
        problem_set(p, PROBLEM_CLUSTER_UNHEALTHY,
                    "the access string cannot be checked against the cluster's engine (%s); "
                    "try again when cluster %s is available",
                    why, id);
    return known == ENGINE_ACCESS_KNOWN;
}

/* The user named in the path: 404 for a name no user can have. */
static const char *path_user(struct http_request *req)
{
    const char *name = http_param(req, "name");
    char msg[256];

    if (user_name_problem(name, strlen(name), msg, sizeof(msg))) {
        http_reply_problem(req, PROBLEM_USER_NOT_FOUND, NULL,
                           "cluster %s has no user %s: a user name %s", http_param(req, "id"), name,
                           msg);
        return NULL;
    }
    return name;
}

struct users_call {
    struct store_user_change u;
    char *text;
    bool changed;
    const char *event; /* UserCreated, UserModified, UserDeleted */
    struct problem p;
};

/* The event for a change of a user, in the transaction that made it. */
static enum db_status user_event(struct db_conn *conn, const struct users_call *c, const char *what)
{
    json_t *detail = json_pack("{s:s}", "user_name", c->u.name);
    char *message = xasprintf("user %s was %s", c->u.name, what), *text;

    if (c->u.access_string != NULL)
        json_object_set_new(detail, "access_string", json_string(c->u.access_string));
    if (c->u.password_hashes[0] != NULL)
        json_object_set_new(detail, "password_count",
                            json_integer(c->u.password_hashes[1] != NULL ? 2 : 1));
    text = json_dumps(detail, JSON_COMPACT);
    enum db_status st =
        store_event_add(conn, c->u.cluster_id, NULL, c->event, "info", message, text);
    free(text);
    free(message);
    json_decref(detail);
    return st;
}

static enum db_status create_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    long long count = 0;
    enum db_status st = store_users_count(conn, c->u.cluster_id, &count);

    problem_clear(&c->p);
    free(c->text);
    c->text = NULL;
    if (st == DB_NOT_FOUND)
        return problem_no_cluster(&c->p, c->u.cluster_id);
    if (st != DB_OK)
        return st;
    if (count >= USERS_MAX) {
        problem_set(&c->p, PROBLEM_USER_QUOTA_EXCEEDED,
                    "cluster %s has %lld users, as many as a cluster may; delete one first",
                    c->u.cluster_id, count);
        return DB_REFUSED;
    }
    st = store_user_insert(conn, &c->u, &c->text);
    if (st == DB_CONFLICT) {
        problem_set(&c->p, PROBLEM_USER_ALREADY_EXISTS,
                    "cluster %s has a user %s; change it with PATCH", c->u.cluster_id, c->u.name);
        return DB_REFUSED;
    }
    return st == DB_OK ? user_event(conn, c, "created") : st;
}

static enum db_status cluster_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    long long count;
    enum db_status st = store_users_count(conn, c->u.cluster_id, &count);
    return st == DB_NOT_FOUND ? problem_no_cluster(&c->p, c->u.cluster_id) : st;
}

void api_users_create(struct http_request *req)
{
    char hashes[2][STORE_USER_HASH_LEN + 1];
    struct users_call c = {
        .u = {.cluster_id = http_param(req, "id"),
              .name = json_string_value(json_object_get(req->json, "user_name")),
              .access_string = json_string_value(json_object_get(req->json, "access_string"))},
        .event = "UserCreated"};

    hash_passwords(req->json, hashes, &c.u);
    /* The cluster is there before its engine is asked; the transaction
     * asks again. */
    if (!problem_db(&c.p, db_run(req->app->db, cluster_fn, &c)) ||
        !known_to_engine(req->app, c.u.cluster_id, c.u.access_string, &c.p) ||
        !problem_db(&c.p, db_tx(req->app->db, DB_READ_COMMITTED, create_fn, &c))) {
        free(c.text);
        http_reply_error(req, &c.p);
        return;
    }
    char *location = xasprintf("/v1/clusters/%s/users/%s", c.u.cluster_id, c.u.name);
    http_add_header(req, "Location", location);
    free(location);
    http_reply_json_text(req, 201, c.text);
}

static enum db_status list_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    return store_users_list(conn, c->u.cluster_id, &c->text);
}

void api_users_list(struct http_request *req)
{
    struct users_call c = {.u = {.cluster_id = http_param(req, "id")}};
    enum db_status st = db_run(req->app->db, list_fn, &c);

    if (st == DB_NOT_FOUND) {
        http_reply_problem(req, PROBLEM_CLUSTER_NOT_FOUND, NULL, "cluster %s does not exist",
                           c.u.cluster_id);
    } else if (st != DB_OK) {
        http_reply_db_error(req, st);
    } else {
        json_t *users = json_loads(c.text, 0, NULL);
        http_reply_json(req, 200, json_pack("{s:o}", "users", users ? users : json_array()));
    }
    free(c.text);
}

static enum db_status get_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    free(c->text);
    c->text = NULL;
    return store_user_get(conn, c->u.cluster_id, c->u.name, &c->text);
}

/* Reply with the user c names (read by get_fn), or 404. */
static void reply_user(struct http_request *req, struct users_call *c, enum db_status st)
{
    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_USER_NOT_FOUND, NULL, "cluster %s has no user %s",
                           c->u.cluster_id, c->u.name);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    if (st == DB_OK)
        http_reply_json_text(req, 200, c->text);
    else
        free(c->text);
}

void api_users_get(struct http_request *req)
{
    struct users_call c = {.u = {.cluster_id = http_param(req, "id")}};

    if ((c.u.name = path_user(req)) != NULL)
        reply_user(req, &c, db_run(req->app->db, get_fn, &c));
}

static enum db_status modify_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    enum db_status st = store_user_update(conn, &c->u, &c->changed);

    if (st == DB_OK && c->changed)
        st = user_event(conn, c, "modified");
    return st == DB_OK ? get_fn(conn, c) : st;
}

/* A new access string, new passwords, or both. Passwords replace the
 * user's as a whole: [old, new] keeps both valid while applications move,
 * [new] then ends the old one. Asking for what is so changes nothing. */
void api_users_modify(struct http_request *req)
{
    char hashes[2][STORE_USER_HASH_LEN + 1];
    struct users_call c = {
        .u = {.cluster_id = http_param(req, "id"),
              .access_string = json_string_value(json_object_get(req->json, "access_string"))},
        .event = "UserModified"};

    if ((c.u.name = path_user(req)) == NULL)
        return;
    hash_passwords(req->json, hashes, &c.u);
    if (c.u.access_string == NULL && c.u.password_hashes[0] == NULL) {
        problem_field(&c.p, "access_string", "give access_string, passwords or both");
        http_reply_error(req, &c.p);
        return;
    }
    if (c.u.access_string != NULL) {
        enum db_status st = db_run(req->app->db, get_fn, &c);
        if (st != DB_OK) {
            reply_user(req, &c, st);
            return;
        }
        if (!known_to_engine(req->app, c.u.cluster_id, c.u.access_string, &c.p)) {
            free(c.text);
            http_reply_error(req, &c.p);
            return;
        }
    }
    reply_user(req, &c, db_tx(req->app->db, DB_READ_COMMITTED, modify_fn, &c));
}

static enum db_status delete_fn(struct db_conn *conn, void *arg)
{
    struct users_call *c = arg;
    enum db_status st = store_user_delete(conn, c->u.cluster_id, c->u.name);
    return st == DB_OK ? user_event(conn, c, "deleted") : st;
}

void api_users_delete(struct http_request *req)
{
    struct users_call c = {.u = {.cluster_id = http_param(req, "id")}, .event = "UserDeleted"};

    if ((c.u.name = path_user(req)) == NULL)
        return;
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, delete_fn, &c);
    if (st == DB_NOT_FOUND)
        http_reply_problem(req, PROBLEM_USER_NOT_FOUND, NULL, "cluster %s has no user %s",
                           c.u.cluster_id, c.u.name);
    else if (st != DB_OK)
        http_reply_db_error(req, st);
    else
        http_reply_empty(req, 204);
}
