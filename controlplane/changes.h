/* changes.h -- what changing each field of a cluster's spec means: the one
 * table behind PATCH and PUT of a cluster (cluster_modify.c), and behind
 * what the API documents about them.
 *
 * A row per spec field says how a change of it is carried out:
 *
 *   CHANGE_AT_ONCE       stored, and in effect as soon as it is (tags, ...)
 *   CHANGE_BY_OPERATION  stored, and an operation carries it out (row->op)
 *   CHANGE_IMMUTABLE     fixed at creation: 400 VALIDATION_FAILED
 *   CHANGE_NOT_YET       valid, not yet carried out: 409 CHANGE_NOT_SUPPORTED_YET
 *
 * An operation that runs alone (an engine upgrade restarts every node) is
 * not combined with changes whose rows say they do not combine unless the
 * request says "allow_combined_changes": true; then its restart carries
 * them, and their own operations are not queued. Two operations that run
 * alone are never combined.
 *
 * To add a change that runs an operation: define a struct change_op beside
 * the operation's steps (ops_*.c), with its precheck and its queue function,
 * and point the field's row at it. Nothing else in the request path moves. */
#ifndef CAIRN_CHANGES_H
#define CAIRN_CHANGES_H

#include <jansson.h>
#include <stdbool.h>

#include "app.h"
#include "db.h"
#include "problem.h"
#include "runner.h"

/* One modification as its prechecks and queue functions see it, inside the
 * request's transaction (the cluster's row is locked). */
struct change_request {
    struct app *app;
    const char *cluster_id;
    const json_t *stored, *next; /* the spec before and after */
    bool apply_now;              /* the request's apply_immediately */
    json_t *facts;               /* what a precheck learnt, for its queue function */
    char op_id[40];              /* out: the operation queued or scheduled */
    bool poke;                   /* out: an operation was queued to start now */
};

/* A transaction step of a change: DB_OK, DB_REFUSED with p filled, or the
 * database's failure. */
typedef enum db_status (*change_fn)(struct db_conn *conn, struct change_request *r,
                                    struct problem *p);

struct change_op {
    const struct op_kind *kind; /* the operation it queues */
    const char *what;           /* for messages: "an engine upgrade" */
    bool alone;                 /* runs alone; see the top of this file */
    bool accepted;              /* the reply is 202 with the operation's Location */
    change_fn precheck;         /* may refuse before anything is stored; may be NULL */
    change_fn queue;            /* queue (or schedule) the operation */
};

enum change_how { CHANGE_AT_ONCE, CHANGE_BY_OPERATION, CHANGE_IMMUTABLE, CHANGE_NOT_YET };

struct change_row {
    const char *field;
    enum change_how how;
    const struct change_op *op; /* CHANGE_BY_OPERATION */
    bool combines;              /* may go with an operation that runs alone */
    change_fn precheck;         /* a check of its own; may be NULL */
};

/* The row of a top-level spec field; a name that is no field of the spec
 * (or is fixed, like id) gets the immutable row. Never NULL. */
const struct change_row *change_row(const char *field);

/* What a request's changed fields (a JSON array of names) come to. */
#define CHANGE_MAX_OPS 4
struct change_plan {
    const struct change_row *rows[32]; /* the changed fields' rows, in order */
    int nrows;
    const struct change_op *ops[CHANGE_MAX_OPS]; /* to queue, each once */
    int nops;
};

/* Plan the change of the fields in changed. False with p filled when the
 * combination is refused (COMBINED_CHANGES), a field is immutable
 * (VALIDATION_FAILED, one error per field) or not supported yet
 * (CHANGE_NOT_SUPPORTED_YET): checked in that order. Pure. */
bool change_plan(const json_t *changed, bool allow_combined, struct change_plan *plan,
                 struct problem *p);

/* The table as `cairnd changes` prints it, for the documents' tests:
 * [{field, change: at_once|operation|immutable|not_yet, operation, alone,
 * combines}]. The caller json_decref()s it. */
json_t *change_table_json(void);

/* What every queue function of a change_op ends with, in the request's
 * transaction: the cluster is modifying with pending_changes[key] =
 * pending, and an operation of kind is queued with context to start now
 * (r->op_id, r->poke); another operation queued meanwhile is
 * OPERATION_IN_PROGRESS. st is what the queue function did before: nothing
 * is done unless it is DB_OK. */
enum db_status change_queue(struct db_conn *conn, struct change_request *r, struct problem *p,
                            enum db_status st, const char *key, const json_t *pending,
                            const struct op_kind *kind, const json_t *context);

/* Refuse the change of one not-yet field, as change_plan() does. */
bool change_not_yet(const char *fields, struct problem *p);

#endif
