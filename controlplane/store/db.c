/* db.c -- the connection pool, lazily prepared statements and the
 * transaction wrapper described in db.h. */
#define _GNU_SOURCE
#include "db.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

#define ACQUIRE_WAIT_MS      5000
#define RECONNECT_BACKOFF_US 500000
#define TX_ATTEMPTS          5

struct db_conn {
    PGconn *pg;
    bool busy;
    bool fresh; /* connected since it was last used: a failure is not staleness */
    const struct db_stmt **prepared;
    size_t nprepared, cap;
};

struct db_pool {
    char *url;
    int size;
    struct db_conn *conns;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    int64_t down_until_us; /* a connect failed recently: fail fast until then */
};

/* Server notices ("relation already exists, skipping") go to the debug log
 * instead of standard error. */
static void on_notice(void *arg, const char *message)
{
    char quoted[512];
    (void)arg;
    log_debug("database notice", "detail=%s", log_quote(quoted, sizeof(quoted), message));
}

PGconn *db_connect(const char *url, char *err, size_t errsize)
{
    const char *const keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *const values[] = {url, "3", "cairnd", NULL};
    PGconn *pg = PQconnectdbParams(keys, values, 1);

    if (PQstatus(pg) != CONNECTION_OK) {
        snprintf(err, errsize, "could not connect to the database: %s", PQerrorMessage(pg));
        size_t len = strlen(err);
        while (len > 0 && (err[len - 1] == '\n' || err[len - 1] == ' '))
            err[--len] = '\0';
        PQfinish(pg);
        return NULL;
    }
    PQsetNoticeProcessor(pg, on_notice, NULL);
    return pg;
}

struct db_pool *db_pool_new(const char *url, int size)
{
    struct db_pool *pool = xcalloc(1, sizeof(*pool));
    pool->url = xstrdup(url);
    pool->size = size < 1 ? 1 : size;
    pool->conns = xcalloc((size_t)pool->size, sizeof(*pool->conns));
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->freed, NULL);
    return pool;
}

static void conn_close(struct db_conn *c)
{
    if (c->pg != NULL)
        PQfinish(c->pg);
    c->pg = NULL;
    c->nprepared = 0;
}

void db_pool_free(struct db_pool *pool)
{
    if (pool == NULL)
        return;
    for (int i = 0; i < pool->size; i++) {
        conn_close(&pool->conns[i]);
        free(pool->conns[i].prepared);
    }
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->freed);
    free(pool->conns);
    free(pool->url);
    free(pool);
}

/* Make c usable: connect if it has no live connection. Called without the
 * pool lock (connecting can take seconds). */
static enum db_status conn_ensure(struct db_pool *pool, struct db_conn *c)
{
    char err[512];
    int64_t now = time_mono_us();

    if (c->pg != NULL && PQstatus(c->pg) == CONNECTION_OK)
        return DB_OK;
    conn_close(c);
    pthread_mutex_lock(&pool->lock);
    bool backing_off = now < pool->down_until_us;
    pthread_mutex_unlock(&pool->lock);
    if (backing_off)
        return DB_UNAVAILABLE;
    c->pg = db_connect(pool->url, err, sizeof(err));
    pthread_mutex_lock(&pool->lock);
    pool->down_until_us = c->pg == NULL ? now + RECONNECT_BACKOFF_US : 0;
    pthread_mutex_unlock(&pool->lock);
    if (c->pg == NULL) {
        log_warn("database unavailable", "error=%s", log_quote((char[512]){0}, 512, err));
        return DB_UNAVAILABLE;
    }
    c->fresh = true;
    return DB_OK;
}

enum db_status db_acquire(struct db_pool *pool, struct db_conn **out)
{
    struct timespec deadline;
    struct db_conn *c = NULL;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ACQUIRE_WAIT_MS / 1000;
    pthread_mutex_lock(&pool->lock);
    while (c == NULL) {
        /* Prefer a connection that is already open. */
        for (int i = 0; i < pool->size && c == NULL; i++) {
            if (!pool->conns[i].busy && pool->conns[i].pg != NULL)
                c = &pool->conns[i];
        }
        for (int i = 0; i < pool->size && c == NULL; i++) {
            if (!pool->conns[i].busy)
                c = &pool->conns[i];
        }
        if (c == NULL && pthread_cond_timedwait(&pool->freed, &pool->lock, &deadline) == ETIMEDOUT)
            break;
    }
    if (c != NULL)
        c->busy = true;
    pthread_mutex_unlock(&pool->lock);
    if (c == NULL) {
        log_warn("database pool exhausted", "size=%d wait_ms=%d", pool->size, ACQUIRE_WAIT_MS);
        return DB_UNAVAILABLE;
    }
    enum db_status st = conn_ensure(pool, c);
    if (st != DB_OK) {
        db_release(pool, c);
        return st;
    }
    *out = c;
    return DB_OK;
}

void db_release(struct db_pool *pool, struct db_conn *c)
{
    /* A connection left inside a transaction (a caller bug or a failed
     * ROLLBACK) is not safe to hand out again. */
    if (c->pg != NULL && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        conn_close(c);
    c->fresh = false;
    pthread_mutex_lock(&pool->lock);
    c->busy = false;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->lock);
}

PGconn *db_pgconn(struct db_conn *conn)
{
    return conn->pg;
}

enum db_status db_classify(PGconn *pg, const PGresult *res)
{
    ExecStatusType st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    const char *state;

    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return DB_OK;
    if (PQstatus(pg) != CONNECTION_OK)
        return DB_UNAVAILABLE;
    state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL)
        return DB_ERROR;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
        return DB_RETRY;
    if (strcmp(state, "23505") == 0)
        return DB_CONFLICT;
    /* Class 08 is connection exceptions; 57P01..57P03 are shutdowns. */
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P0", 4) == 0)
        return DB_UNAVAILABLE;
    return DB_ERROR;
}

static void log_failure(PGconn *pg, const PGresult *res, enum db_status st, const char *sql)
{
    char q1[512], q2[256];
    const char *msg = res != NULL ? PQresultErrorMessage(res) : PQerrorMessage(pg);
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

    if (st == DB_CONFLICT)
        return; /* an expected outcome the caller turns into a reply */
    log_write(st == DB_RETRY ? LOG_INFO : LOG_WARN, "database command failed",
              "sqlstate=%s error=%s sql=%s", state ? state : "none", log_quote(q1, sizeof(q1), msg),
              log_quote(q2, sizeof(q2), sql));
}

/* Statement names: "s" followed by the statement's address, unique in this
 * process and stable for its life. */
static void stmt_name(const struct db_stmt *stmt, char *buf, size_t size)
{
    snprintf(buf, size, "s%lx", (unsigned long)(uintptr_t)stmt);
}

static enum db_status ensure_prepared(struct db_conn *c, const struct db_stmt *stmt, int nparams)
{
    char name[32];

    for (size_t i = 0; i < c->nprepared; i++) {
        if (c->prepared[i] == stmt)
            return DB_OK;
    }
    stmt_name(stmt, name, sizeof(name));
    PGresult *res = PQprepare(c->pg, name, stmt->sql, nparams, NULL);
    enum db_status st = db_classify(c->pg, res);
    if (st != DB_OK) {
        log_failure(c->pg, res, st, stmt->sql);
        PQclear(res);
        return st;
    }
    PQclear(res);
    if (c->nprepared == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->prepared = xrealloc(c->prepared, c->cap * sizeof(*c->prepared));
    }
    c->prepared[c->nprepared++] = stmt;
    return DB_OK;
}

PGresult *db_query(struct db_conn *c, const struct db_stmt *stmt, int nparams,
                   const char *const *params, enum db_status *status)
{
    return db_query_formats(c, stmt, nparams, params, NULL, NULL, status);
}

PGresult *db_query_formats(struct db_conn *c, const struct db_stmt *stmt, int nparams,
                           const char *const *params, const int *lengths, const int *formats,
                           enum db_status *status)
{
    char name[32];

    *status = ensure_prepared(c, stmt, nparams);
    if (*status != DB_OK)
        return NULL;
    stmt_name(stmt, name, sizeof(name));
    PGresult *res = PQexecPrepared(c->pg, name, nparams, params, lengths, formats, 0);
    *status = db_classify(c->pg, res);
    if (*status != DB_OK) {
        log_failure(c->pg, res, *status, stmt->sql);
        PQclear(res);
        return NULL;
    }
    return res;
}

/* The result of one statement of a pipeline: the first of its results,
 * the rest (its end) consumed. */
static PGresult *next_result(PGconn *pg)
{
    PGresult *res = PQgetResult(pg), *more;
    while ((more = PQgetResult(pg)) != NULL)
        PQclear(more);
    return res;
}

enum db_status db_batch(struct db_conn *c, struct db_batch_item *items, size_t n)
{
    char name[32];
    enum db_status st = DB_OK;
    size_t sent = 0;

    for (size_t i = 0; i < n; i++) {
        items[i].result = NULL;
        if ((st = ensure_prepared(c, items[i].stmt, items[i].nparams)) != DB_OK)
            return st;
    }
    if (!PQenterPipelineMode(c->pg))
        return db_classify(c->pg, NULL);
    for (; sent < n; sent++) {
        stmt_name(items[sent].stmt, name, sizeof(name));
        if (!PQsendQueryPrepared(c->pg, name, items[sent].nparams, items[sent].params, NULL, NULL,
                                 0))
            break;
    }
    bool synced = PQpipelineSync(c->pg) == 1;
    /* Every statement sent has a result (PGRES_PIPELINE_ABORTED after a
     * failure); the first failure is the batch's. */
    for (size_t i = 0; i < sent && synced; i++) {
        PGresult *res = next_result(c->pg);
        enum db_status one =
            PQresultStatus(res) == PGRES_PIPELINE_ABORTED ? DB_ERROR : db_classify(c->pg, res);
        if (one == DB_OK && st == DB_OK) {
            items[i].result = res;
            continue;
        }
        if (st == DB_OK) {
            st = one;
            log_failure(c->pg, res, st, items[i].stmt->sql);
        }
        PQclear(res);
    }
    if (synced) {
        PGresult *res = PQgetResult(c->pg); /* PGRES_PIPELINE_SYNC */
        PQclear(res);
    }
    if (st == DB_OK && (sent < n || !synced))
        st = db_classify(c->pg, NULL);
    if (!PQexitPipelineMode(c->pg) && st == DB_OK)
        st = DB_ERROR;
    if (st != DB_OK) {
        for (size_t i = 0; i < n; i++) {
            PQclear(items[i].result);
            items[i].result = NULL;
        }
    }
    return st;
}

void db_param_text(struct db_params *p, const char *value)
{
    assert(p->n < DB_MAX_PARAMS);
    p->values[p->n++] = value;
}

static void param_number(struct db_params *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void param_number(struct db_params *p, const char *fmt, ...)
{
    va_list ap;
    assert(p->n < DB_MAX_PARAMS);
    va_start(ap, fmt);
    vsnprintf(p->numbers[p->n], sizeof(p->numbers[p->n]), fmt, ap);
    va_end(ap);
    p->values[p->n] = p->numbers[p->n];
    p->n++;
}

void db_param_int(struct db_params *p, long long value)
{
    param_number(p, "%lld", value);
}

void db_param_bool(struct db_params *p, bool value)
{
    db_param_text(p, value ? "true" : "false");
}

/* %.17g: every double reads back as itself. */
void db_param_double(struct db_params *p, double value)
{
    param_number(p, "%.17g", value);
}

PGresult *db_query_params(struct db_conn *conn, const struct db_stmt *stmt,
                          const struct db_params *p, enum db_status *status)
{
    return db_query(conn, stmt, p->n, p->values, status);
}

enum db_status db_exec_params(struct db_conn *conn, const struct db_stmt *stmt,
                              const struct db_params *p)
{
    enum db_status st;
    PQclear(db_query_params(conn, stmt, p, &st));
    return st;
}

long long db_int(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

bool db_bool(const PGresult *res, int row, int col)
{
    return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] == 't';
}

double db_double(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0.0 : strtod(PQgetvalue(res, row, col), NULL);
}

const char *db_text(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

enum db_status db_exec(struct db_conn *c, const char *sql)
{
    PGresult *res = PQexec(c->pg, sql);
    enum db_status st = db_classify(c->pg, res);
    if (st != DB_OK)
        log_failure(c->pg, res, st, sql);
    PQclear(res);
    return st;
}

static void backoff(int attempt)
{
    /* 5, 10, 20, 40 ms plus up to 5 ms of jitter, so the retries of two
     * conflicting transactions do not collide again. */
    usleep((useconds_t)((5000 << attempt) + time_mono_us() % 5000));
}

/* The leadership term this thread decides under; 0: none. */
static _Thread_local long long fence_term;

void db_fence(long long term)
{
    fence_term = term;
}

/* The term still current, held FOR SHARE until the transaction ends: a
 * takeover's UPDATE of it waits for this transaction, or comes first and
 * leaves no row. */
static const struct db_stmt fence_check = {
    "SELECT set_config('cairn.leader_term', term::text, true) FROM leadership"
    " WHERE term = $1::bigint FOR SHARE"};

static enum db_status fence(struct db_conn *c)
{
    char term[24];
    const char *params[1] = {term};
    enum db_status st;

    snprintf(term, sizeof(term), "%lld", fence_term);
    PGresult *res = db_query(c, &fence_check, 1, params, &st);
    if (res != NULL && PQntuples(res) == 0)
        st = DB_FENCED;
    PQclear(res);
    return st;
}

enum db_status db_tx(struct db_pool *pool, enum db_isolation isolation, db_fn fn, void *arg)
{
    const char *begin =
        isolation == DB_SERIALIZABLE ? "BEGIN ISOLATION LEVEL SERIALIZABLE" : "BEGIN";
    enum db_status st = DB_ERROR;

    for (int attempt = 0; attempt < TX_ATTEMPTS; attempt++) {
        struct db_conn *c;
        if ((st = db_acquire(pool, &c)) != DB_OK)
            return st;
        bool fresh = c->fresh;
        st = db_exec(c, begin);
        if (st == DB_OK) {
            if (fence_term == 0 || (st = fence(c)) == DB_OK)
                st = fn(c, arg);
            if (st == DB_OK)
                st = db_exec(c, "COMMIT");
            else
                (void)db_exec(c, "ROLLBACK");
            db_release(pool, c);
        } else {
            db_release(pool, c);
            /* BEGIN failing on a pooled connection means it died while idle:
             * nothing ran, so one more attempt on a new connection is safe. */
            if (st == DB_UNAVAILABLE && !fresh)
                continue;
        }
        if (st != DB_RETRY)
            return st;
        backoff(attempt);
    }
    return st;
}

enum db_status db_run(struct db_pool *pool, db_fn fn, void *arg)
{
    enum db_status st = DB_ERROR;

    for (int attempt = 0; attempt < 2; attempt++) {
        struct db_conn *c;
        if ((st = db_acquire(pool, &c)) != DB_OK)
            return st;
        bool fresh = c->fresh;
        st = fn(c, arg);
        db_release(pool, c);
        if (st != DB_UNAVAILABLE || fresh)
            break;
    }
    return st;
}
