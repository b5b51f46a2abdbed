/* problem.c -- the table behind problem.h. */
#include "problem.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jspec.h"

static const struct problem_info registry[PROBLEM_COUNT] = {
#define PROBLEM_ROW(code, status, title) [PROBLEM_##code] = {#code, status, title, NULL},
#define OPERATION_ROW(code, title)       [PROBLEM_##code] = {#code, 0, title, NULL},
    PROBLEM_CODES(PROBLEM_ROW) OPERATION_ERROR_CODES(OPERATION_ROW)
#undef PROBLEM_ROW
#undef OPERATION_ROW
};

/* "urn:cairn:problem:" followed by the code in lower-kebab case, computed
 * once at first use. */
static char types[PROBLEM_COUNT][64];
static struct problem_info infos[PROBLEM_COUNT];

static void build_types(void)
{
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        const char *prefix = "urn:cairn:problem:";
        size_t o = 0;
        for (const char *p = prefix; *p; p++)
            types[i][o++] = *p;
        for (const char *p = registry[i].code; *p && o + 1 < sizeof(types[i]); p++)
            types[i][o++] = *p == '_' ? '-' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        types[i][o] = '\0';
        infos[i] = registry[i];
        infos[i].type = types[i];
    }
}

const struct problem_info *problem_info(enum problem_code code)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    assert(code >= 0 && code < PROBLEM_COUNT);
    pthread_once(&once, build_types);
    return &infos[code];
}

bool problem_find(const char *name, enum problem_code *out)
{
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        if (strcmp(registry[i].code, name) == 0) {
            *out = (enum problem_code)i;
            return true;
        }
    }
    return false;
}

bool problem_set(struct problem *p, enum problem_code code, const char *fmt, ...)
{
    va_list ap;
    p->set = true;
    p->code = code;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
    va_end(ap);
    return false;
}

void problem_field(struct problem *p, const char *field, const char *message)
{
    if (p->errors == NULL)
        p->errors = json_array();
    jspec_error(p->errors, field, message);
    if (!p->set) {
        p->set = true;
        p->code = PROBLEM_VALIDATION_FAILED;
    }
}

bool problem_db(struct problem *p, enum db_status st)
{
    if (st == DB_OK)
        return true;
    if (st == DB_REFUSED && p->set)
        return false;
    if (st == DB_UNAVAILABLE)
        return problem_set(p, PROBLEM_DATABASE_UNAVAILABLE,
                           "the database cannot be reached; retry shortly");
    return problem_set(p, PROBLEM_INTERNAL_ERROR, "%s", "");
}

enum db_status problem_busy(struct problem *p, const char *cluster_id)
{
    problem_set(p, PROBLEM_OPERATION_IN_PROGRESS,
                "cluster %s has an operation in progress; retry when it has ended "
                "(GET /v1/operations?cluster_id=%s)",
                cluster_id, cluster_id);
    return DB_REFUSED;
}

enum db_status problem_no_cluster(struct problem *p, const char *cluster_id)
{
    problem_set(p, PROBLEM_CLUSTER_NOT_FOUND, "cluster %s does not exist", cluster_id);
    return DB_REFUSED;
}

void problem_clear(struct problem *p)
{
    json_decref(p->errors);
    memset(p, 0, sizeof(*p));
}
