/* api_wait.c -- the answer to a write that started an operation, and
 * Prefer: wait (RFC 7240) or ?wait= on it: such a write answers when its
 * operation has ended, or when the wait is over, parked meanwhile
 * (http_suspend(): no thread is held) and woken when the operation ends on
 * any cairnd (notify.c).
 *
 * What each answer is, by the operation's kind:
 *
 *   ended well    create: 201 with the cluster and its Location; delete:
 *                 204; any other: 200 with the cluster
 *   ended badly   the operation's problem document (reply_failed())
 *   still running 202 as without a wait: the cluster (a failover's: the
 *                 operation), Location naming the operation (a create's:
 *                 the cluster, its status monitor since the first
 *                 release), and Retry-After
 *
 * An answer that honoured a wait says so: Preference-Applied: wait=N. An
 * operation scheduled for the maintenance window is not waited for: it
 * answers 202 at once, as without a wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "prefer.h"
#include "timeutil.h"
#include "xalloc.h"

/* Seconds a client that got 202 is told to wait before it looks again:
 * most operations take seconds, an engine upgrade minutes. */
#define RETRY_AFTER_S "5"

/* The wait req asks for, capped at --max-wait, or -1; *bad when ?wait= is
 * not delta-seconds. */
static int wait_asked(struct http_request *req, bool *bad)
{
    const char *q = http_query(req, "wait");
    long long seconds;

    *bad = false;
    if (q != NULL) {
        if (!prefer_seconds(q, &seconds)) {
            *bad = true;
            return -1;
        }
    } else if (!http_prefer_wait(req, &seconds)) {
        return -1;
    }
    return seconds < req->app->cfg.max_wait_s ? (int)seconds : req->app->cfg.max_wait_s;
}

bool api_wait_requested(struct http_request *req, int *seconds)
{
    bool bad;
    *seconds = wait_asked(req, &bad);
    if (!bad)
        return true;
    json_t *errors = json_array();
    jspec_error(errors, "wait", "must be a whole number of seconds, such as 60");
    http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors,
                       "wait must be a whole number of seconds");
    return false;
}

struct op_call {
    const char *id;
    char *text;
};

static enum db_status op_fn(struct db_conn *conn, void *arg)
{
    struct op_call *c = arg;
    free(c->text);
    c->text = NULL;
    return store_operation_get(conn, c->id, &c->text);
}

/* The operation as the API shows it, in *out (the caller's). */
static enum db_status read_operation(struct app *app, const char *id, json_t **out)
{
    struct op_call call = {id, NULL};
    enum db_status st = db_run(app->db, op_fn, &call);

    *out = st == DB_OK ? json_loads(call.text, 0, NULL) : NULL;
    free(call.text);
    return st == DB_OK && *out == NULL ? DB_ERROR : st;
}

static const char *member(const json_t *op, const char *key)
{
    return json_string_value(json_object_get(op, key));
}

static bool is(const json_t *op, const char *key, const char *value)
{
    const char *v = member(op, key);
    return v != NULL && strcmp(v, value) == 0;
}

static void preference_applied(struct http_request *req, int seconds)
{
    char value[32];
    snprintf(value, sizeof(value), "wait=%d", seconds);
    http_add_header(req, "Preference-Applied", value);
}

/* 202: the operation goes on; seconds is the wait honoured, or -1. */
static void reply_accepted(struct http_request *req, json_t *op, int seconds)
{
    const char *cluster = member(op, "cluster_id");
    bool create = is(op, "kind", "create");

    if (!create) {
        char *location = xasprintf("/v1/operations/%s", member(op, "id"));
        http_add_header(req, "Location", location);
        free(location);
    }
    if (is(op, "status", "pending") || is(op, "status", "running"))
        http_add_header(req, "Retry-After", RETRY_AFTER_S);
    if (seconds >= 0)
        preference_applied(req, seconds);
    if (is(op, "kind", "failover"))
        http_reply_json(req, 202, json_incref(op));
    else
        api_reply_cluster(req, cluster, 202, create);
}

/* The operation failed (or was cancelled): its error, as the problem of
 * the code it failed with when requests answer with that code too (an
 * engine upgrade whose checks failed as it started: CLUSTER_UNHEALTHY,
 * 409), else OPERATION_FAILED; the operation goes along as "operation". */
static void reply_failed(struct http_request *req, json_t *op)
{
    const json_t *error = json_object_get(op, "error");
    const char *name = json_string_value(json_object_get(error, "code"));
    const char *message = json_string_value(json_object_get(error, "message"));
    enum problem_code code;

    if (name == NULL || !problem_find(name, &code) || problem_info(code)->status == 0)
        code = PROBLEM_OPERATION_FAILED;
    json_t *members = json_pack("{s:O}", "operation", op);
    if (message != NULL)
        http_reply_problem_with(req, code, members, "the %s operation %s failed: %s",
                                member(op, "kind"), member(op, "id"), message);
    else
        http_reply_problem_with(req, code, members, "the %s operation %s was %s",
                                member(op, "kind"), member(op, "id"), member(op, "status"));
}

/* The operation has ended: the final resource, or why there is none. */
static void reply_ended(struct http_request *req, json_t *op, int seconds)
{
    const char *cluster = member(op, "cluster_id");

    preference_applied(req, seconds);
    if (!is(op, "status", "succeeded"))
        reply_failed(req, op);
    else if (is(op, "kind", "create"))
        api_reply_cluster(req, cluster, 201, true);
    else if (is(op, "kind", "delete"))
        http_reply_empty(req, 204);
    else
        api_reply_cluster(req, cluster, 200, false);
}

/* Reply, or park until the operation ends or the deadline (set before the
 * first call) passes; seconds is the wait asked, or -1. */
static void answer(struct http_request *req, const char *operation, int seconds)
{
    char id[STORE_UUID_SIZE];

    snprintf(id, sizeof(id), "%s", operation); /* it may be req->park_key */
    for (;;) {
        uint64_t epoch = http_wake_epoch(req);
        json_t *op;
        enum db_status st = read_operation(req->app, id, &op);
        if (st == DB_NOT_FOUND) { /* only a database emptied under cairnd does this */
            http_reply_problem(req, PROBLEM_OPERATION_NOT_FOUND, NULL,
                               "operation %s no longer exists", id);
            return;
        }
        if (st != DB_OK) {
            http_reply_db_error(req, st);
            return;
        }
        bool ended = is(op, "status", "succeeded") || is(op, "status", "failed") ||
                     is(op, "status", "cancelled");
        if (seconds >= 0 && ended) {
            reply_ended(req, op, seconds);
        } else if (seconds < 0 || is(op, "status", "scheduled")) {
            reply_accepted(req, op, -1);
        } else if (time_mono_us() >= req->park_deadline_us || http_stopping(req)) {
            reply_accepted(req, op, seconds);
        } else {
            json_decref(op);
            if (http_suspend(req, id, epoch, req->park_deadline_us))
                return;
            continue; /* woken before it parked: look again */
        }
        json_decref(op);
        return;
    }
}

void api_wait_for(struct http_request *req, const char *op_id, int seconds)
{
    req->park_deadline_us = time_mono_us() + (int64_t)(seconds > 0 ? seconds : 0) * 1000000;
    answer(req, op_id, seconds);
}

void api_wait_resume(struct http_request *req)
{
    bool bad;
    answer(req, req->park_key, wait_asked(req, &bad));
}
