/* cluster_modify.c -- PATCH and PUT of a cluster: the new spec is checked,
 * stored, and carried out as the change table (changes.h) says, in one
 * transaction with the cluster's row locked. The AUTH token, which is not
 * part of the spec, changes in the same transaction (change_auth). */
#include "clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "cluster_nodes.h"
#include "cluster_spec.h"
#include "runner.h"
#include "store.h"
#include "xalloc.h"

/* How a new AUTH token replaces the one in use (ElastiCache's
 * AuthTokenUpdateStrategy): beside it until a set, or at once. */
enum auth_strategy { AUTH_ROTATE, AUTH_SET };

struct modify_call {
    const json_t *body; /* the spec part of the request */
    bool replace, allow_combined, dry_run;
    const char *auth_token; /* the new AUTH token, or NULL */
    enum auth_strategy strategy;
    long long if_match;
    struct change_request req;
    bool accepted;   /* an operation queued whose reply is 202 */
    json_t *preview; /* dry run: what the change would do */
    struct problem *p;
};

/* The spec the request asks for, normalized; NULL with c->p filled. */
static json_t *target_spec(struct modify_call *c, const struct store_cluster_locked *row)
{
    const char *id = c->req.cluster_id;

    if (c->if_match >= 0 && c->if_match != row->generation) {
        problem_set(c->p, PROBLEM_PRECONDITION_FAILED,
                    "the cluster is at generation %lld, not %lld; read it again", row->generation,
                    c->if_match);
        return NULL;
    }
    json_t *target = c->replace ? json_deep_copy(c->body) : cspec_merge_patch(row->spec, c->body);
    if (json_object_get(target, "id") == NULL)
        json_object_set_new(target, "id", json_string(id));
    json_object_del(target, "auth_token");
    json_t *errors = json_array();
    json_t *next = cspec_normalize(target, errors);
    json_decref(target);
    if (next == NULL) {
        c->p->errors = errors;
        problem_set(c->p, PROBLEM_VALIDATION_FAILED, "%zu field(s) cannot take these values",
                    json_array_size(errors));
        return NULL;
    }
    json_decref(errors);
    return next;
}

/* Every check of the plan, before anything is stored. */
static enum db_status precheck(struct db_conn *conn, struct modify_call *c,
                               const struct change_plan *plan)
{
    enum db_status st = DB_OK;
    for (int i = 0; i < plan->nrows && st == DB_OK; i++)
        if (plan->rows[i]->precheck != NULL)
            st = plan->rows[i]->precheck(conn, &c->req, c->p);
    for (int i = 0; i < plan->nops && st == DB_OK; i++)
        if (plan->ops[i]->precheck != NULL)
            st = plan->ops[i]->precheck(conn, &c->req, c->p);
    return st;
}

/* What a dry run answers: the fields that would change, the operations
 * that would carry them out, the spec that would be stored, and what the
 * prechecks learnt on the way (an upgrade's downtime). */
static json_t *preview(const struct modify_call *c, const struct change_plan *plan,
                       const json_t *changed, const json_t *next)
{
    json_t *ops = json_array();
    for (int i = 0; i < plan->nops; i++)
        json_array_append_new(ops, json_string(plan->ops[i]->kind->name));
    json_t *out = json_pack("{s:b, s:O, s:o, s:O}", "dry_run", 1, "changes", changed, "operations",
                            ops, "spec", next);
    json_t *downtime = json_object_get(c->req.facts, "downtime");
    if (downtime != NULL)
        json_object_set(out, "downtime", downtime);
    return out;
}

/* The AUTH token as the request asks, the token in use kept valid beside
 * it by a rotation. Asking again for what is already so changes nothing (a
 * retried request): rotating to the token in use, or setting it when no
 * other is valid. The agents give the engines' default user the tokens at
 * once (migration 0027's trigger wakes them). */
static enum db_status change_auth(struct db_conn *conn, struct modify_call *c)
{
    const char *id = c->req.cluster_id;
    struct store_cluster_auth now = {0};
    enum db_status st = store_cluster_auth(conn, id, &now);
    char *current =
        st == DB_OK && now.hex != NULL ? cluster_open_secret(c->req.app, id, now.hex) : NULL;

    if (st == DB_OK && now.hex != NULL && current == NULL)
        st = DB_ERROR; /* sealed with another key: refuse rather than lose it */
    bool same = current != NULL && strcmp(current, c->auth_token) == 0;
    bool rotate = c->strategy == AUTH_ROTATE;
    if (st == DB_OK && !(same && (rotate || !now.rotating))) {
        char *sealed = same ? NULL : cluster_seal_secret(c->req.app, id, c->auth_token);
        char *lookup =
            same ? NULL : cluster_auth_lookup(c->req.app, c->auth_token, strlen(c->auth_token));
        st = store_cluster_auth_update(conn, id, sealed, lookup, rotate && current != NULL);
        free(sealed);
        free(lookup);
        if (st == DB_OK)
            st = store_event_add(conn, id, NULL, "AuthTokenUpdated", "info",
                                 rotate ? "the AUTH token was rotated: the one in use stays "
                                          "valid beside the new one until a set"
                                        : "the AUTH token was set: only it is valid",
                                 rotate ? "{\"strategy\": \"rotate\"}" : "{\"strategy\": \"set\"}");
    }
    free(current);
    store_cluster_auth_free(&now);
    return st;
}

/* Store the spec, queue the plan's operations, record the change. */
static enum db_status carry_out(struct db_conn *conn, struct modify_call *c,
                                const struct change_plan *plan, const json_t *changed)
{
    const char *id = c->req.cluster_id;
    enum db_status st = store_cluster_set_spec(conn, id, c->req.next);
    for (int i = 0; i < plan->nops && st == DB_OK; i++) {
        st = plan->ops[i]->queue(conn, &c->req, c->p);
        c->accepted |= plan->ops[i]->accepted;
    }
    if (st != DB_OK)
        return st;
    char *names = json_dumps(changed, JSON_COMPACT);
    char *detail = xasprintf("{\"changed\": %s}", names);
    st = store_event_add(conn, id, NULL, "ClusterModified", "info", "the cluster's spec changed",
                         detail);
    free(names);
    free(detail);
    return st;
}

static enum db_status modify_fn(struct db_conn *conn, void *arg)
{
    struct modify_call *c = arg;
    struct store_cluster_locked row = {0};
    struct change_plan plan;
    json_t *changed = json_array(), *next = NULL;

    problem_clear(c->p); /* a retried transaction starts afresh */
    json_object_clear(c->req.facts);
    c->req.op_id[0] = '\0';
    c->req.poke = false;
    c->accepted = false;
    json_decref(c->preview);
    c->preview = NULL;
    enum db_status st = store_cluster_lock(conn, c->req.cluster_id, &row);
    if (st == DB_NOT_FOUND)
        st = problem_no_cluster(c->p, c->req.cluster_id);
    if (st != DB_OK)
        goto out;
    st = DB_REFUSED;
    if ((next = target_spec(c, &row)) == NULL)
        goto out;
    cspec_diff(row.spec, next, changed);
    if (!change_plan(changed, c->allow_combined, &plan, c->p))
        goto out;
    st = DB_OK;
    if (c->auth_token != NULL)
        json_array_append_new(changed, json_string("auth_token"));
    if (json_array_size(changed) == 0 || (c->auth_token != NULL && json_array_size(changed) == 1)) {
        if (c->dry_run)
            c->preview = preview(c, &plan, changed, next);
        else if (c->auth_token != NULL)
            st = change_auth(conn, c);
        goto out;
    }
    if (row.busy) {
        st = problem_busy(c->p, c->req.cluster_id);
        goto out;
    }
    c->req.stored = row.spec;
    c->req.next = next;
    if ((st = precheck(conn, c, &plan)) == DB_OK) {
        if (c->dry_run)
            c->preview = preview(c, &plan, changed, next);
        else if ((st = carry_out(conn, c, &plan, changed)) == DB_OK && c->auth_token != NULL)
            st = change_auth(conn, c);
    }
out:
    json_decref(row.spec);
    json_decref(next);
    json_decref(changed);
    return st;
}

/* The request's flags, which are not part of the spec; nor is the AUTH
 * token, with how it replaces the one in use. */
static const char *const request_flags[] = {"apply_immediately", "allow_combined_changes",
                                            "dry_run"};
static const char *const auth_fields[] = {"auth_token", "auth_token_update_strategy"};
#define NFLAGS (sizeof(request_flags) / sizeof(request_flags[0]))

static bool read_auth(const json_t *body, struct modify_call *c, struct problem *p)
{
    const json_t *token = json_object_get(body, "auth_token");
    const json_t *strategy = json_object_get(body, "auth_token_update_strategy");
    const char *how = json_string_value(strategy);
    char msg[128];

    if (token != NULL && !cspec_auth_token_check(token, msg, sizeof(msg)))
        problem_field(p, "auth_token", msg);
    if (strategy == NULL || (how != NULL && strcmp(how, "rotate") == 0))
        c->strategy = AUTH_ROTATE;
    else if (how != NULL && strcmp(how, "set") == 0)
        c->strategy = AUTH_SET;
    else if (how != NULL && strcmp(how, "delete") == 0)
        problem_field(p, "auth_token_update_strategy",
                      "cannot be delete: a Cairn cluster always has an AUTH token; rotate to "
                      "another or set one");
    else
        problem_field(p, "auth_token_update_strategy", "must be rotate or set");
    if (strategy != NULL && token == NULL)
        problem_field(p, "auth_token_update_strategy", "needs auth_token: the token to use");
    c->auth_token = json_string_value(token);
    return !p->set;
}

static bool read_flags(const json_t *body, struct modify_call *c, struct problem *p)
{
    for (size_t i = 0; i < NFLAGS; i++) {
        const json_t *flag = json_object_get(body, request_flags[i]);
        if (flag != NULL && !json_is_boolean(flag))
            problem_field(p, request_flags[i], "must be true or false");
    }
    c->req.apply_now = !json_is_false(json_object_get(body, "apply_immediately"));
    c->allow_combined = json_is_true(json_object_get(body, "allow_combined_changes"));
    c->dry_run = json_is_true(json_object_get(body, "dry_run"));
    return read_auth(body, c, p);
}

bool cluster_modify(struct app *app, const char *cluster_id, const json_t *body, bool replace,
                    long long if_match, struct cluster_modify_out *out, struct problem *p)
{
    struct modify_call c = {.replace = replace, .if_match = if_match, .p = p};
    memset(out, 0, sizeof(*out));
    if (!read_flags(body, &c, p))
        return false;
    json_t *spec = json_deep_copy(body);
    for (size_t i = 0; i < NFLAGS; i++)
        json_object_del(spec, request_flags[i]);
    for (size_t i = 0; i < sizeof(auth_fields) / sizeof(auth_fields[0]); i++)
        json_object_del(spec, auth_fields[i]);
    c.body = spec;
    c.req.app = app;
    c.req.cluster_id = cluster_id;
    c.req.facts = json_object();
    enum db_status st = db_tx(app->db, DB_READ_COMMITTED, modify_fn, &c);
    json_decref(spec);
    json_decref(c.req.facts);
    if (!problem_db(p, st)) {
        json_decref(c.preview);
        return false;
    }
    out->preview = c.preview;
    snprintf(out->op_id, sizeof(out->op_id), "%s", c.req.op_id);
    out->accepted = c.accepted;
    if (c.req.poke && app->runner != NULL)
        runner_poke(app->runner);
    return true;
}
