/* operation_cancel.c -- POST /v1/operations/{id}/cancel: an operation whose
 * kind can stop half way (runner.h: it has cancelled()) is asked to, and
 * stops at its next safe point -- a slot boundary, for the slot moves of
 * scaling and rebalancing -- ending cancelled. Kinds that cannot (a
 * failover, an engine upgrade mid-restart) say so rather than pretend. */
#include "clusters.h"

#include <string.h>

#include "ops.h"
#include "store.h"

struct cancel_call {
    const char *id;
    struct problem *p;
};

static const struct op_kind *kind_named(const char *name)
{
    for (const struct op_kind *const *k = op_kinds; *k != NULL; k++) {
        if (strcmp((*k)->name, name) == 0)
            return *k;
    }
    return NULL;
}

static enum db_status cancel_fn(struct db_conn *conn, void *arg)
{
    struct cancel_call *c = arg;
    struct store_operation_state s;

    problem_clear(c->p);
    enum db_status st = store_operation_state(conn, c->id, &s);
    if (st == DB_NOT_FOUND) {
        problem_set(c->p, PROBLEM_OPERATION_NOT_FOUND, "%s does not exist", c->id);
        return DB_REFUSED;
    }
    if (st != DB_OK)
        return st;
    const struct op_kind *kind = kind_named(s.kind);
    if (kind == NULL || kind->cancelled == NULL) {
        problem_set(c->p, PROBLEM_OPERATION_NOT_CANCELLABLE,
                    "a %s operation cannot stop half way; the operations that can are scaling "
                    "the number of shards and rebalancing",
                    s.kind);
        return DB_REFUSED;
    }
    if (strcmp(s.status, "pending") != 0 && strcmp(s.status, "running") != 0) {
        problem_set(c->p, PROBLEM_OPERATION_NOT_CANCELLABLE, "the operation has ended (%s)",
                    s.status);
        return DB_REFUSED;
    }
    return store_operation_request_cancel(conn, c->id);
}

bool operation_cancel(struct app *app, const char *op_id, struct problem *p)
{
    struct cancel_call c = {op_id, p};
    return problem_db(p, db_tx(app->db, DB_READ_COMMITTED, cancel_fn, &c));
}
