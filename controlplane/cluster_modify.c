/* cluster_modify.c -- PATCH and PUT of a cluster: the new spec is checked,
 * stored, and carried out as the change table (changes.h) says, in one
 * transaction with the cluster's row locked. */
#include "clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "cluster_spec.h"
#include "runner.h"
#include "store.h"
#include "xalloc.h"

struct modify_call {
    const json_t *body; /* the spec part of the request */
    bool replace, allow_combined, dry_run;
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
    if (cspec_auth_token(c->body) != NULL) {
        change_not_yet("auth_token", c->p);
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
    if (json_array_size(changed) == 0) {
        if (c->dry_run)
            c->preview = preview(c, &plan, changed, next);
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
        else
            st = carry_out(conn, c, &plan, changed);
    }
out:
    json_decref(row.spec);
    json_decref(next);
    json_decref(changed);
    return st;
}

/* The request's flags, which are not part of the spec. */
static const char *const request_flags[] = {"apply_immediately", "allow_combined_changes",
                                            "dry_run"};

static bool read_flags(const json_t *body, struct modify_call *c, struct problem *p)
{
    for (size_t i = 0; i < sizeof(request_flags) / sizeof(request_flags[0]); i++) {
        const json_t *flag = json_object_get(body, request_flags[i]);
        if (flag != NULL && !json_is_boolean(flag))
            problem_field(p, request_flags[i], "must be true or false");
    }
    c->req.apply_now = !json_is_false(json_object_get(body, "apply_immediately"));
    c->allow_combined = json_is_true(json_object_get(body, "allow_combined_changes"));
    c->dry_run = json_is_true(json_object_get(body, "dry_run"));
    return !p->set;
}

bool cluster_modify(struct app *app, const char *cluster_id, const json_t *body, bool replace,
                    long long if_match, struct cluster_modify_out *out, struct problem *p)
{
    struct modify_call c = {.replace = replace, .if_match = if_match, .p = p};
    memset(out, 0, sizeof(*out));
    if (!read_flags(body, &c, p))
        return false;
    json_t *spec = json_deep_copy(body);
    for (size_t i = 0; i < sizeof(request_flags) / sizeof(request_flags[0]); i++)
        json_object_del(spec, request_flags[i]);
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
