/* runner.h -- the operation runner: durable workflows made of idempotent
 * steps (ARCHITECTURE.md §2).
 *
 * Each cairnd runs one runner thread. It claims a runnable operation with a
 * lease (FOR UPDATE SKIP LOCKED), runs its current step, and records the
 * outcome -- the next step index, the step's timing, the context -- while
 * still holding the lease; a runner that dies loses its lease and another
 * cairnd (or the same one restarted) resumes the operation at the recorded
 * step. A step must therefore be safe to run again: it checks before it
 * acts.
 *
 * A step has two halves. run() acts on the world outside the database
 * (engines, agents' desired sets) and decides: next, wait or fail. commit()
 * writes the step's effect on the store, and runs in the same transaction
 * that records the step as done -- so a reader never sees a cluster marked
 * available while its create still runs, and a runner that dies between the
 * two leaves neither. A kind's failed() runs in the transaction that records
 * the failure, for the same reason. If the lease was lost meanwhile, the
 * whole transaction rolls back and the new holder redoes the step. */
#ifndef CAIRN_RUNNER_H
#define CAIRN_RUNNER_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>

#include "app.h"
#include "db.h"
#include "problem.h"

enum op_result {
    OP_NEXT,      /* the step is done: go on to the next one */
    OP_WAIT,      /* not yet: run this step again after wait_ms */
    OP_FAILED,    /* give up: the operation fails with error */
    OP_CANCELLED, /* stop here, as asked (POST /v1/operations/{id}/cancel): the
                     operation ends cancelled, with its kind's cancelled() */
};

/* What a step works with. context is the operation's JSON context: a step
 * may read and change it, and it is saved with the step's outcome. */
/* The shortest wait that is a poll rather than a step's own tight loop. */
#define OP_POLL_MS 100

struct op_ctx {
    struct app *app;
    const char *op_id;
    const char *cluster_id;
    json_t *context;
    int step;
    int wait_ms;                  /* OP_WAIT: how long until the step runs again */
    int min_wait_ms;              /* op_wait() stretches a poll (a wait of OP_POLL_MS or more)
                                     to at least this long (ops_topo_load()) */
    char error[512];              /* OP_FAILED: why, for users */
    char code[64];                /* OP_FAILED: a stable code, e.g. ENGINE_START_FAILED */
    struct op_deferred *deferred; /* what op_defer() noted, written with the record */
    size_t ndeferred;
    int progress; /* percent, when the step knows better than its index (-1: it does not) */
};

/* A step's store half: DB_OK to record the step, anything else rolls the
 * record back and the step runs again later. It may run more than once
 * (serialization retries), so it only reads ctx. */
typedef enum db_status (*op_commit_fn)(struct db_conn *conn, const struct op_ctx *ctx);

struct op_step {
    const char *name;
    enum op_result (*run)(struct op_ctx *ctx); /* NULL: nothing outside the store; OP_NEXT */
    op_commit_fn commit;                       /* after OP_NEXT, may be NULL */
};

/* A kind of operation: its steps, and what happens when it ends. */
struct op_kind {
    const char *name; /* operations.kind */
    const struct op_step *steps;
    int nsteps;
    op_commit_fn failed;    /* after OP_FAILED, may be NULL */
    op_commit_fn cancelled; /* after OP_CANCELLED; NULL: the kind cannot be cancelled */
};

struct runner;

/* Start the runner thread over the given kinds (NULL-terminated array);
 * it claims operations of the kinds with steps, and leaves the others (the
 * reserved kinds of ops.h) alone. */
struct runner *runner_start(struct app *app, const struct op_kind *const *kinds);

/* Wake the runner now (a new operation was queued in this process). */
void runner_poke(struct runner *r);

/* Stop after the step in progress; the lease lapses for others to resume. */
void runner_stop(struct runner *r);

/* Fail a step with a code from the registry (problem.h) and a printf-style
 * message; returns OP_FAILED. */
enum op_result op_fail(struct op_ctx *ctx, enum problem_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Run a step of an operation nested in another's step (a failover inside
 * an upgrade): its run(), then after OP_NEXT its commit() in a transaction
 * of its own, as the outer step is recorded only later. A commit that
 * fails turns the result into a short OP_WAIT; the step runs again. */
enum op_result op_run_nested(struct op_ctx *ctx, const struct op_step *s);

/* A change to the store that a step decided on while it waits: done in the
 * transaction that records this run of the step (whatever its result), so
 * it is in the store exactly when the progress it belongs to is in the
 * operation's context -- a runner that dies before the record leaves
 * neither, and the step that runs again decides again. fn gets arg, which
 * op_defer() takes (and frees after the record). */
typedef enum db_status (*op_deferred_fn)(struct db_conn *conn, const struct op_ctx *ctx,
                                         const json_t *arg);
struct op_deferred {
    op_deferred_fn fn;
    json_t *arg;
};
void op_defer(struct op_ctx *ctx, op_deferred_fn fn, json_t *arg);

/* Note an event of the operation's cluster (detail: a JSON object, or
 * NULL; borrowed), written as op_defer() says. */
void op_event(struct op_ctx *ctx, const char *type, const char *severity, const char *message,
              const json_t *detail);

/* op_fail() with a va_list. */
enum op_result op_failv(struct op_ctx *ctx, enum problem_code code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Wait ms before running the step again; returns OP_WAIT. */
enum op_result op_wait(struct op_ctx *ctx, int ms);

#endif
