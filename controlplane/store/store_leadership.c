/* store_leadership.c -- the control-plane leadership's lock and term
 * (migrations/0033_leadership.sql), on the leader's own connection. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>

/* pg_advisory_lock key: "leader" in ASCII, shared by every cairnd. */
#define LEADERSHIP_LOCK_KEY "119182681466226"

/* One row or none (then *term = 0); the status of the statement. */
static enum db_status term_of(PGconn *pg, const char *sql, int nparams, const char *const *params,
                              long long *term)
{
    PGresult *res = PQexecParams(pg, sql, nparams, NULL, params, NULL, NULL, 0);
    enum db_status st = db_classify(pg, res);

    *term = 0;
    if (st == DB_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
        *term = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    return st;
}

enum db_status store_leadership_seek(PGconn *pg, const char *holder, long long *term)
{
    const char *params[1] = {holder};
    enum db_status st =
        term_of(pg, "SELECT 1 WHERE pg_try_advisory_lock(" LEADERSHIP_LOCK_KEY ")", 0, NULL, term);

    if (st != DB_OK || *term == 0)
        return st;
    /* The lock is ours: the next term begins, fencing the last one. */
    return term_of(pg,
                   "UPDATE leadership SET term = term + 1, holder = $1, since = now()"
                   " RETURNING term",
                   1, params, term);
}

enum db_status store_leadership_term(PGconn *pg, long long *term)
{
    return term_of(pg, "SELECT term FROM leadership", 0, NULL, term);
}

enum db_status store_leadership_resign(PGconn *pg)
{
    PGresult *res = PQexec(pg, "SELECT pg_advisory_unlock(" LEADERSHIP_LOCK_KEY ")");
    enum db_status st = db_classify(pg, res);
    PQclear(res);
    return st;
}
