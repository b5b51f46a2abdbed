/* runner.c -- claims operations with leases and runs their steps. */
#define _GNU_SOURCE
#include "runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define LEASE_S      5
#define IDLE_POLL_MS 100

struct runner {
    struct app *app;
    const struct op_kind *const *kinds;
    char owner[96];   /* this runner's name in lease_owner */
    char *kind_array; /* the kinds it runs, as a text[] literal: {create,delete} */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop, poked;
};

enum op_result op_failv(struct op_ctx *ctx, enum problem_code code, const char *fmt, va_list ap)
{
    /* Formatted apart first: an argument may be ctx->error itself. */
    char message[sizeof(ctx->error)];
    vsnprintf(message, sizeof(message), fmt, ap);
    snprintf(ctx->code, sizeof(ctx->code), "%s", problem_info(code)->code);
    memcpy(ctx->error, message, sizeof(message));
    return OP_FAILED;
}

enum op_result op_fail(struct op_ctx *ctx, enum problem_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum op_result r = op_failv(ctx, code, fmt, ap);
    va_end(ap);
    return r;
}

enum op_result op_wait(struct op_ctx *ctx, int ms)
{
    ctx->wait_ms = ms >= OP_POLL_MS && ms < ctx->min_wait_ms ? ctx->min_wait_ms : ms;
    return OP_WAIT;
}

struct nested_call {
    const struct op_step *s;
    const struct op_ctx *ctx;
};

static enum db_status nested_fn(struct db_conn *conn, void *arg)
{
    struct nested_call *n = arg;
    return n->s->commit(conn, n->ctx);
}

enum op_result op_run_nested(struct op_ctx *ctx, const struct op_step *s)
{
    enum op_result r = s->run != NULL ? s->run(ctx) : OP_NEXT;
    struct nested_call n = {s, ctx};
    if (r == OP_NEXT && s->commit != NULL &&
        db_tx(ctx->app->db, DB_READ_COMMITTED, nested_fn, &n) != DB_OK)
        return op_wait(ctx, IDLE_POLL_MS);
    return r;
}

static const struct op_kind *find_kind(struct runner *r, const char *name)
{
    for (const struct op_kind *const *k = r->kinds; *k != NULL; k++) {
        if (strcmp((*k)->name, name) == 0)
            return *k;
    }
    return NULL;
}

struct claim_call {
    struct runner *r;
    struct store_claimed *c;
};

static enum db_status claim_fn(struct db_conn *conn, void *arg)
{
    struct claim_call *cc = arg;
    return store_operation_claim(conn, cc->r->owner, LEASE_S, cc->r->kind_array, cc->c);
}

struct record_call {
    const struct store_step_record *record;
    op_commit_fn effect; /* the step's commit() or the kind's failed(), or NULL */
    const struct op_ctx *ctx;
};

void op_defer(struct op_ctx *ctx, op_deferred_fn fn, json_t *arg)
{
    ctx->deferred = xrealloc(ctx->deferred, (ctx->ndeferred + 1) * sizeof(*ctx->deferred));
    ctx->deferred[ctx->ndeferred++] = (struct op_deferred){fn, arg};
}

static enum db_status write_event(struct db_conn *conn, const struct op_ctx *ctx, const json_t *e)
{
    json_t *detail = json_object_get(e, "detail");
    char *text = detail != NULL ? json_dumps(detail, JSON_COMPACT) : NULL;
    enum db_status st = store_event_add(conn, ctx->cluster_id, ctx->op_id,
                                        json_string_value(json_object_get(e, "type")),
                                        json_string_value(json_object_get(e, "severity")),
                                        json_string_value(json_object_get(e, "message")), text);
    free(text);
    return st;
}

void op_event(struct op_ctx *ctx, const char *type, const char *severity, const char *message,
              const json_t *detail)
{
    op_defer(ctx, write_event,
             json_pack("{s:s, s:s, s:s, s:O?}", "type", type, "severity", severity, "message",
                       message, "detail", detail));
}

/* What the step deferred, in the order it did. */
static enum db_status write_deferred(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = DB_OK;
    for (size_t i = 0; i < ctx->ndeferred && st == DB_OK; i++)
        st = ctx->deferred[i].fn(conn, ctx, ctx->deferred[i].arg);
    return st;
}

static void free_deferred(struct op_ctx *ctx)
{
    for (size_t i = 0; i < ctx->ndeferred; i++)
        json_decref(ctx->deferred[i].arg);
    free(ctx->deferred);
    ctx->deferred = NULL;
    ctx->ndeferred = 0;
}

/* What the step deferred, its effect and its record, together; nothing if
 * the lease is gone. */
static enum db_status record_fn(struct db_conn *conn, void *arg)
{
    struct record_call *rc = arg;
    enum db_status st = write_deferred(conn, rc->ctx);
    if (st == DB_OK && rc->effect != NULL)
        st = rc->effect(conn, rc->ctx);
    if (st != DB_OK)
        return st;
    return store_operation_record(conn, rc->record);
}

/* Run the claimed operation's current step; *effect gets what is to be
 * committed with its record: the step's commit() after OP_NEXT, the kind's
 * failed() after OP_FAILED. */
static enum op_result run_current(const struct op_kind *kind, const struct store_claimed *c,
                                  struct op_ctx *ctx, op_commit_fn *effect)
{
    *effect = NULL;
    if (kind == NULL || c->step >= kind->nsteps)
        return op_fail(ctx, PROBLEM_UNKNOWN_OPERATION, "this cairnd cannot run %s step %d", c->kind,
                       c->step);
    const struct op_step *s = &kind->steps[c->step];
    enum op_result result = s->run != NULL ? s->run(ctx) : OP_NEXT;
    if (result == OP_NEXT)
        *effect = s->commit;
    else if (result == OP_FAILED)
        *effect = kind->failed;
    else if (result == OP_CANCELLED)
        *effect = kind->cancelled;
    return result;
}

/* The record of a step's outcome (all but the context and timing), logged
 * when the step ended. */
static void describe(const struct op_kind *kind, const struct store_claimed *c,
                     enum op_result result, const struct op_ctx *ctx, struct store_step_record *rec)
{
    const char *name = kind != NULL && c->step < kind->nsteps ? kind->steps[c->step].name : NULL;
    rec->op_id = c->id;
    rec->step = c->step;
    rec->step_name = name;
    rec->status = "running";
    rec->error = ctx->error;
    if (result == OP_NEXT) {
        rec->done = name;
        rec->step++;
        if (rec->step >= kind->nsteps)
            rec->status = "succeeded";
        else
            rec->step_name = kind->steps[rec->step].name;
        log_info("operation step done", "operation=%s kind=%s step=%s cluster=%s", c->id, c->kind,
                 name, c->cluster_id);
    } else if (result == OP_FAILED) {
        rec->status = "failed";
        rec->done = name;
        rec->code = ctx->code;
        log_warn("operation failed", "operation=%s kind=%s step=%s code=%s error=\"%s\"", c->id,
                 c->kind, name ? name : "-", ctx->code, ctx->error);
    } else if (result == OP_CANCELLED) {
        rec->status = "cancelled";
        log_info("operation cancelled", "operation=%s kind=%s step=%s cluster=%s", c->id, c->kind,
                 name ? name : "-", c->cluster_id);
    } else {
        rec->wait_ms = ctx->wait_ms;
    }
    rec->progress = strcmp(rec->status, "succeeded") == 0 ? 100
                    : ctx->progress >= 0                  ? ctx->progress
                    : kind != NULL && kind->nsteps > 0    ? rec->step * 100 / kind->nsteps
                                                          : 0;
}

/* Run the claimed operation's current step and record what came of it. */
static void run_step(struct runner *r, struct store_claimed *c)
{
    const struct op_kind *kind = find_kind(r, c->kind);
    struct op_ctx ctx = {.app = r->app,
                         .op_id = c->id,
                         .cluster_id = c->cluster_id,
                         .context = c->context,
                         .step = c->step,
                         .progress = -1};
    struct store_step_record record = {.owner = r->owner};
    op_commit_fn effect;
    char started[80];

    /* A step that waits runs many times; its timing spans all of them. */
    time_format(time_wall_us(), TIME_US, started);
    json_t *first = json_object_get(c->context, "step_started_at");
    if (json_is_string(first))
        snprintf(started, sizeof(started), "%s", json_string_value(first));
    enum op_result result = run_current(kind, c, &ctx, &effect);
    describe(kind, c, result, &ctx, &record);
    if (result == OP_WAIT)
        json_object_set_new(c->context, "step_started_at", json_string(started));
    else
        json_object_del(c->context, "step_started_at");
    char *context_text = json_dumps(c->context, JSON_COMPACT);
    record.context = context_text;
    record.started_at = started;
    struct record_call rc = {&record, effect, &ctx};
    enum db_status st = db_tx(r->app->db, DB_READ_COMMITTED, record_fn, &rc);
    if (st != DB_OK)
        log_warn("could not record an operation step; it runs again", "operation=%s step=%s", c->id,
                 record.done != NULL ? record.done : "-");
    free(context_text);
    free_deferred(&ctx);
}

static void *runner_main(void *arg)
{
    struct runner *r = arg;

    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        pthread_mutex_unlock(&r->lock);
        struct store_claimed c = {0};
        struct claim_call cc = {r, &c};
        bool worked = db_run(r->app->db, claim_fn, &cc) == DB_OK;
        if (worked) {
            run_step(r, &c);
            json_decref(c.context);
        }
        pthread_mutex_lock(&r->lock);
        if (worked || r->poked) {
            r->poked = false;
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += IDLE_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!r->stop && !r->poked &&
               pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

struct runner *runner_start(struct app *app, const struct op_kind *const *kinds)
{
    struct runner *r = xcalloc(1, sizeof(*r));
    char host[64] = "localhost";

    r->app = app;
    r->kinds = kinds;
    gethostname(host, sizeof(host) - 1);
    snprintf(r->owner, sizeof(r->owner), "%s:%d:%lld", host, (int)getpid(),
             (long long)time_mono_us());
    /* The kinds it claims: those with steps. */
    size_t len = 3;
    for (const struct op_kind *const *k = kinds; *k != NULL; k++)
        len += strlen((*k)->name) + 1;
    r->kind_array = xcalloc(len, 1);
    strcat(r->kind_array, "{");
    for (const struct op_kind *const *k = kinds; *k != NULL; k++) {
        if ((*k)->nsteps == 0)
            continue;
        if (r->kind_array[1] != '\0')
            strcat(r->kind_array, ",");
        strcat(r->kind_array, (*k)->name);
    }
    strcat(r->kind_array, "}");
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_create(&r->thread, NULL, runner_main, r);
    return r;
}

void runner_poke(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->poked = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

void runner_stop(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    free(r->kind_array);
    free(r);
}
