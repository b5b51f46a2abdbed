/* db.h -- PostgreSQL access for cairnd: a connection pool shared by the HTTP
 * worker threads, prepared statements, and a transaction wrapper.
 *
 * Transaction contract: the function given to db_tx() runs inside BEGIN ...
 * COMMIT on one connection and only talks to the database; it does not send
 * HTTP replies. It returns DB_OK to commit, anything else to roll back.
 * Serialization failures and deadlocks (SQLSTATE 40001, 40P01) roll back and
 * run the function again, a few times, with a short backoff; so it must not
 * keep state across attempts except through its argument, which it resets
 * itself. The caller maps the final status to a reply. */
#ifndef CAIRN_DB_H
#define CAIRN_DB_H

#include <libpq-fe.h>
#include <stdbool.h>

enum db_status {
    DB_OK = 0,
    DB_NOT_FOUND,   /* the row asked for does not exist */
    DB_CONFLICT,    /* a unique constraint refused the change */
    DB_RETRY,       /* serialization failure or deadlock: try the transaction again */
    DB_UNAVAILABLE, /* no connection to the database */
    DB_ERROR,       /* anything else: logged where it happened */
    DB_REFUSED,     /* the transaction's function refused the change and said why (a
                       struct problem in its argument): roll back, do not retry */
    DB_FENCED,      /* the calling thread's leadership term is over (db_fence()): its
                       decision was not taken */
};

enum db_isolation { DB_READ_COMMITTED, DB_SERIALIZABLE };

struct db_pool;
struct db_conn;

/* A statement prepared lazily on each connection the first time it runs
 * there. Declare them static const; their address names them. */
struct db_stmt {
    const char *sql;
};

/* Create a pool of at most size connections to url (a libpq URI or
 * key=value string). Connections are opened on first use, so this succeeds
 * even while the database is down. Free with db_pool_free(). */
struct db_pool *db_pool_new(const char *url, int size);
void db_pool_free(struct db_pool *pool);

/* Borrow a healthy connection, reconnecting if needed; waits up to a few
 * seconds for a free one. Returns DB_OK or DB_UNAVAILABLE. Every borrowed
 * connection goes back through db_release(). */
enum db_status db_acquire(struct db_pool *pool, struct db_conn **out);
void db_release(struct db_pool *pool, struct db_conn *conn);

/* Run stmt with text parameters (NULL for SQL NULL). On success returns the
 * result, which the caller PQclear()s, and sets *status to DB_OK; on failure
 * logs, returns NULL and sets *status. */
PGresult *db_query(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                   const char *const *params, enum db_status *status);

/* db_query with some parameters in binary form: formats[i] 1 for binary
 * (lengths[i] bytes, in PostgreSQL's send format for the parameter's type),
 * 0 for text; NULL arrays: all text. For large arrays of numbers, which
 * cost more to print and parse than to send. */
PGresult *db_query_formats(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                           const char *const *params, const int *lengths, const int *formats,
                           enum db_status *status);

/* Typed parameters, so callers neither print numbers into buffers nor
 * count slots by hand:
 *
 *     struct db_params p = {0};
 *     db_param_text(&p, cluster_id);
 *     db_param_int(&p, generation);
 *     PGresult *res = db_query_params(conn, &stmt, &p, &st);
 *
 * $1 is the first parameter added. Numbers are kept in the struct itself;
 * text is borrowed and must outlive the query. More than DB_MAX_PARAMS is a
 * bug (asserted). */
#define DB_MAX_PARAMS 16
struct db_params {
    int n;
    const char *values[DB_MAX_PARAMS];
    char numbers[DB_MAX_PARAMS][24];
};
void db_param_text(struct db_params *p, const char *value); /* NULL: SQL NULL */
void db_param_int(struct db_params *p, long long value);
void db_param_bool(struct db_params *p, bool value);
void db_param_double(struct db_params *p, double value);
PGresult *db_query_params(struct db_conn *conn, const struct db_stmt *stmt,
                          const struct db_params *p, enum db_status *status);
/* Run stmt with p for its effect alone (its rows, if any, are dropped). */
enum db_status db_exec_params(struct db_conn *conn, const struct db_stmt *stmt,
                              const struct db_params *p);

/* Typed results: column col of row of res. NULL reads as 0, false, 0.0 or
 * NULL (db_text); db_text's string belongs to res. */
long long db_int(const PGresult *res, int row, int col);
bool db_bool(const PGresult *res, int row, int col);
double db_double(const PGresult *res, int row, int col);
const char *db_text(const PGresult *res, int row, int col);

/* Run one or more SQL commands without parameters (BEGIN, a migration). */
enum db_status db_exec(struct db_conn *conn, const char *sql);

/* One statement of a batch: its parameters, and its result when the batch
 * succeeded (the caller PQclear()s it). */
struct db_batch_item {
    const struct db_stmt *stmt;
    int nparams;
    const char *const *params;
    PGresult *result;
};

/* Run n statements in order in one round trip (libpq's pipeline mode), in
 * the caller's transaction: for the hot paths where the waits between
 * statements would cost more than the statements. The first failure is
 * the batch's status (the statements after it do not run) and leaves no
 * result. */
enum db_status db_batch(struct db_conn *conn, struct db_batch_item *items, size_t n);

/* The underlying libpq connection, for code that needs more than the above. */
PGconn *db_pgconn(struct db_conn *conn);

typedef enum db_status (*db_fn)(struct db_conn *conn, void *arg);

/* Run fn in a transaction at the given isolation level, with the retries
 * described at the top of this file. Returns fn's status or the database's.
 * On a thread fenced by a leadership term (db_fence()) the transaction
 * first reads that term FOR SHARE, and is DB_FENCED without running fn
 * when the term is over; the term is then the transaction's leader_term()
 * (migrations/0033_leadership.sql), written with its events and
 * operations. */
enum db_status db_tx(struct db_pool *pool, enum db_isolation isolation, db_fn fn, void *arg);

/* Run fn on a borrowed connection outside an explicit transaction (each
 * statement commits on its own); for reads. If the connection turns out to
 * have died while idle in the pool, fn runs once more on a fresh one. */
enum db_status db_run(struct db_pool *pool, db_fn fn, void *arg);

/* Fence the calling thread's transactions by a leadership term (leader.h);
 * 0: unfenced. */
void db_fence(long long term);

/* Map a libpq result status and SQLSTATE to a db_status. */
enum db_status db_classify(PGconn *conn, const PGresult *res);

/* Open a single connection outside any pool (command-line tools, the
 * migrator). Returns NULL and writes a message to err on failure. */
PGconn *db_connect(const char *url, char *err, size_t errsize);

#endif
