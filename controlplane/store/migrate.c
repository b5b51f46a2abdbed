/* migrate.c -- ordering checks and the transactional, advisory-locked
 * application of schema migrations. */
#include "migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

/* pg_advisory_lock key: "cairn" in ASCII, shared by every cairnd. */
#define MIGRATE_LOCK_KEY "426836062830"

bool migrate_check_list(const struct migration *known, size_t n, char *err, size_t errsize)
{
    for (size_t i = 0; i < n; i++) {
        if (known[i].version != (int)i + 1) {
            snprintf(err, errsize, "migration %04d_%s is out of sequence: expected version %04zu",
                     known[i].version, known[i].name, i + 1);
            return false;
        }
    }
    return true;
}

bool migrate_plan(const struct migration *known, size_t n, const int *applied, size_t napplied,
                  size_t *first_pending, char *err, size_t errsize)
{
    int latest = n > 0 ? known[n - 1].version : 0;

    if (napplied > 0 && applied[napplied - 1] > latest) {
        snprintf(err, errsize,
                 "database schema is at version %d, newer than this cairnd knows (%d); "
                 "run a newer cairnd",
                 applied[napplied - 1], latest);
        return false;
    }
    for (size_t i = 0; i < napplied; i++) {
        if (i >= n || applied[i] != known[i].version) {
            snprintf(err, errsize,
                     "database records migration version %d where this cairnd expects %d; "
                     "the schema history does not match",
                     applied[i], i < n ? known[i].version : -1);
            return false;
        }
    }
    *first_pending = napplied;
    return true;
}

int migrate_latest(void)
{
    return migration_count > 0 ? migration_list[migration_count - 1].version : 0;
}

static bool exec_ok(PGconn *pg, const char *sql, char *err, size_t errsize)
{
    PGresult *res = PQexec(pg, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        snprintf(err, errsize, "%s", PQresultErrorMessage(res));
    PQclear(res);
    return ok;
}

/* Read the applied versions, ascending, into a new array (caller frees). */
static bool read_applied(PGconn *pg, int **out, size_t *n, char *err, size_t errsize)
{
    PGresult *res = PQexec(pg, "SELECT version FROM schema_migrations ORDER BY version");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(err, errsize, "could not read schema_migrations: %s", PQresultErrorMessage(res));
        PQclear(res);
        return false;
    }
    *n = (size_t)PQntuples(res);
    *out = xcalloc(*n + 1, sizeof(int));
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = atoi(PQgetvalue(res, (int)i, 0));
    PQclear(res);
    return true;
}

static bool apply_one(PGconn *pg, const struct migration *m, char *err, size_t errsize)
{
    char version[16];
    const char *params[2] = {version, m->name};
    char msg[512];

    if (!exec_ok(pg, "BEGIN", msg, sizeof(msg)))
        goto fail;
    if (!exec_ok(pg, m->sql, msg, sizeof(msg))) {
        (void)exec_ok(pg, "ROLLBACK", (char[16]){0}, 16);
        goto fail;
    }
    snprintf(version, sizeof(version), "%d", m->version);
    PGresult *res =
        PQexecParams(pg, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, NULL,
                     params, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(res));
    PQclear(res);
    if (!ok) {
        (void)exec_ok(pg, "ROLLBACK", (char[16]){0}, 16);
        goto fail;
    }
    if (!exec_ok(pg, "COMMIT", msg, sizeof(msg)))
        goto fail;
    log_info("migration applied", "version=%d name=%s", m->version, m->name);
    return true;
fail:
    msg[strcspn(msg, "\n")] = '\0';
    snprintf(err, errsize, "migration %04d_%s failed: %s", m->version, m->name, msg);
    return false;
}

bool migrate_apply(PGconn *pg, int *version, int *applied, char *err, size_t errsize)
{
    int *done = NULL;
    size_t ndone = 0, first = 0;
    bool ok = false;

    *applied = 0;
    if (!migrate_check_list(migration_list, migration_count, err, errsize))
        return false;
    if (!exec_ok(pg, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", err, errsize))
        return false;
    if (!exec_ok(pg,
                 "CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version integer PRIMARY KEY,"
                 " name text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())",
                 err, errsize))
        goto out;
    if (!read_applied(pg, &done, &ndone, err, errsize))
        goto out;
    if (!migrate_plan(migration_list, migration_count, done, ndone, &first, err, errsize))
        goto out;
    for (size_t i = first; i < migration_count; i++) {
        if (!apply_one(pg, &migration_list[i], err, errsize))
            goto out;
        (*applied)++;
    }
    *version = migrate_latest();
    ok = true;
out:
    free(done);
    (void)exec_ok(pg, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")", (char[256]){0}, 256);
    return ok;
}

enum migrate_state migrate_state(PGconn *pg, int *version)
{
    PGresult *res = PQexec(pg, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    enum migrate_state state = MIGRATE_UNKNOWN;

    *version = 0;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        *version = atoi(PQgetvalue(res, 0, 0));
        int latest = migrate_latest();
        state = *version == latest  ? MIGRATE_CURRENT
                : *version < latest ? MIGRATE_BEHIND
                                    : MIGRATE_AHEAD;
    } else {
        const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        /* 42P01: the table does not exist yet, so nothing has been applied. */
        if (sqlstate != NULL && strcmp(sqlstate, "42P01") == 0)
            state = migration_count > 0 ? MIGRATE_BEHIND : MIGRATE_CURRENT;
    }
    PQclear(res);
    return state;
}
