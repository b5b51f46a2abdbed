/* migrate.h -- schema migrations: migrations/NNNN_name.sql, compiled into
 * cairnd, applied in order, each once, each in its own transaction, recorded
 * in schema_migrations, under an advisory lock so concurrent cairnd processes
 * cannot race. */
#ifndef CAIRN_MIGRATE_H
#define CAIRN_MIGRATE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

struct migration {
    int version;      /* NNNN from the file name */
    const char *name; /* the rest of the file name, without .sql */
    const char *sql;  /* the file's text */
};

/* The migrations this binary knows, in file-name order (generated at build
 * time from migrations/). */
extern const struct migration migration_list[];
extern const size_t migration_count;

/* Check that known[0..n) is numbered 1, 2, 3, ... with no gap or repeat.
 * Returns true, or false with a message in err. Pure. */
bool migrate_check_list(const struct migration *known, size_t n, char *err, size_t errsize);

/* Decide what to apply given the versions already recorded (ascending).
 * The applied versions must be exactly the first napplied known ones; on
 * success *first_pending is the index of the first known migration to apply
 * (n when none). A database with versions this binary does not know is
 * refused with a message naming both versions. Returns true on success. Pure. */
bool migrate_plan(const struct migration *known, size_t n, const int *applied, size_t napplied,
                  size_t *first_pending, char *err, size_t errsize);

/* Apply every pending migration on pg. On success returns true and sets
 * *version to the schema version now in the database and *applied to how
 * many were applied by this call. */
bool migrate_apply(PGconn *pg, int *version, int *applied, char *err, size_t errsize);

enum migrate_state {
    MIGRATE_CURRENT, /* the database is at this binary's latest version */
    MIGRATE_BEHIND,  /* migrations are pending */
    MIGRATE_AHEAD,   /* the database is newer than this binary */
    MIGRATE_UNKNOWN, /* could not ask the database */
};

/* Compare the database's schema version with this binary's; *version gets
 * the database's (0 when no migration has run). */
enum migrate_state migrate_state(PGconn *pg, int *version);

/* The newest version this binary knows. */
int migrate_latest(void);

#endif
