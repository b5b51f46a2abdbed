/* benchmark.c -- valkey-benchmark and redis-benchmark: their command line
 * and their CSV output (benchmark.h). */
#include "benchmark.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

#define FIELDS_MAX 32
#define FIELD_MAX  64 /* bytes of one field, unquoted, NUL included */

/* The columns the parser needs, by their header names. */
enum column { COL_TEST, COL_RPS, COL_P50, COL_P99, COL_COUNT };
static const char *const column_names[COL_COUNT] = {"test", "rps", "p50_latency_ms",
                                                    "p99_latency_ms"};

struct fields {
    char text[FIELDS_MAX][FIELD_MAX];
    size_t n;
};

static bool failf(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool failf(char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
    return false;
}

/* Split line[0..len) at its commas into f, unquoting quoted fields. */
static bool split(const char *line, size_t len, struct fields *f, int lineno, char *err,
                  size_t errsize)
{
    size_t i = 0;

    f->n = 0;
    for (;;) {
        if (f->n == FIELDS_MAX)
            return failf(err, errsize, "line %d: more than %d fields", lineno, FIELDS_MAX);
        char *out = f->text[f->n++];
        size_t o = 0;
        bool quoted = i < len && line[i] == '"';
        if (quoted) {
            for (i++;; i++) {
                if (i == len)
                    return failf(err, errsize, "line %d: a quote is not closed", lineno);
                if (line[i] == '"' && (i + 1 == len || line[i + 1] != '"'))
                    break;
                if (line[i] == '"')
                    i++; /* "" stands for one quote */
                if (o + 1 == FIELD_MAX)
                    return failf(err, errsize, "line %d: a field is longer than %d bytes", lineno,
                                 FIELD_MAX - 1);
                out[o++] = line[i];
            }
            i++; /* the closing quote */
            if (i < len && line[i] != ',')
                return failf(err, errsize, "line %d: text after a quoted field", lineno);
        } else {
            for (; i < len && line[i] != ','; i++) {
                if (o + 1 == FIELD_MAX)
                    return failf(err, errsize, "line %d: a field is longer than %d bytes", lineno,
                                 FIELD_MAX - 1);
                out[o++] = line[i];
            }
        }
        out[o] = '\0';
        if (i == len)
            return true;
        i++; /* the comma */
    }
}

static bool figure(const char *text, double *out)
{
    char *end;
    if (text[0] == '\0')
        return false;
    *out = strtod(text, &end);
    return *end == '\0' && isfinite(*out) && *out >= 0;
}

/* Whether f is the header: one of its fields is "test". */
static bool names_test(const struct fields *f)
{
    for (size_t k = 0; k < f->n; k++) {
        if (strcmp(f->text[k], column_names[COL_TEST]) == 0)
            return true;
    }
    return false;
}

/* Where each needed column is in the header f; false when one is missing. */
static bool find_columns(const struct fields *f, size_t *at, int lineno, char *err, size_t errsize)
{
    for (int c = 0; c < COL_COUNT; c++) {
        at[c] = FIELDS_MAX;
        for (size_t k = 0; k < f->n && at[c] == FIELDS_MAX; k++) {
            if (strcmp(f->text[k], column_names[c]) == 0)
                at[c] = k;
        }
        if (at[c] == FIELDS_MAX)
            return failf(err, errsize, "line %d: the header has no column %s", lineno,
                         column_names[c]);
    }
    return true;
}

/* One test's line f, with the header's columns at and n fields. */
static bool read_test(const struct fields *f, const size_t *at, size_t n,
                      struct engine_bench_csv *out, int lineno, char *err, size_t errsize)
{
    if (f->n != n)
        return failf(err, errsize, "line %d: %zu fields where the header has %zu", lineno, f->n, n);
    const char *name = f->text[at[COL_TEST]];
    if (name[0] == '\0' || strlen(name) >= ENGINE_BENCH_NAME_MAX)
        return failf(err, errsize, "line %d: a test's name must be 1 to %d bytes", lineno,
                     ENGINE_BENCH_NAME_MAX - 1);
    if (engine_bench_find(out, name) != NULL)
        return failf(err, errsize, "line %d: test %s is listed twice", lineno, name);
    if (out->count == ENGINE_BENCH_TESTS_MAX)
        return failf(err, errsize, "line %d: more than %d tests", lineno, ENGINE_BENCH_TESTS_MAX);
    struct engine_bench_test *t = &out->tests[out->count];
    if (!figure(f->text[at[COL_RPS]], &t->rps) || !figure(f->text[at[COL_P50]], &t->p50_ms) ||
        !figure(f->text[at[COL_P99]], &t->p99_ms))
        return failf(err, errsize, "line %d: a figure of test %s is not a number >= 0", lineno,
                     name);
    snprintf(t->name, sizeof(t->name), "%s", name);
    out->count++;
    return true;
}

bool engine_bench_parse_csv(const char *text, size_t len, struct engine_bench_csv *out, char *err,
                            size_t errsize)
{
    struct fields *f = xcalloc(1, sizeof(*f));
    size_t at[COL_COUNT], header_fields = 0, pos = 0;
    bool header = false, ok = true;
    int lineno = 0;

    memset(out, 0, sizeof(*out));
    while (ok && pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        lineno++;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        if (!header) {
            /* Anything before the header (a warning) is not ours to read. */
            if (!split(line, n, f, lineno, err, errsize) || !names_test(f))
                continue;
            ok = find_columns(f, at, lineno, err, errsize);
            header = true;
            header_fields = f->n;
            continue;
        }
        ok = split(line, n, f, lineno, err, errsize) &&
             read_test(f, at, header_fields, out, lineno, err, errsize);
    }
    free(f);
    if (ok && !header)
        ok = failf(err, errsize, "no header line (\"test\",\"rps\",...): not --csv output");
    if (!ok)
        out->count = 0;
    return ok;
}

const struct engine_bench_test *engine_bench_find(const struct engine_bench_csv *csv,
                                                  const char *name)
{
    for (size_t i = 0; i < csv->count; i++) {
        if (strcasecmp(csv->tests[i].name, name) == 0)
            return &csv->tests[i];
    }
    return NULL;
}

char **engine_bench_argv(const struct engine_bench_args *a)
{
    char **argv = xcalloc(24, sizeof(*argv));
    size_t n = 0;

    argv[n++] = xstrdup(a->program);
    argv[n++] = xstrdup("-h");
    argv[n++] = xstrdup(a->host);
    argv[n++] = xstrdup("-p");
    argv[n++] = xasprintf("%d", a->port);
    if (a->password != NULL) {
        argv[n++] = xstrdup("-a");
        argv[n++] = xstrdup(a->password);
    }
    argv[n++] = xstrdup("-c");
    argv[n++] = xasprintf("%d", a->clients);
    argv[n++] = xstrdup("-n");
    argv[n++] = xasprintf("%lld", a->requests);
    argv[n++] = xstrdup("-d");
    argv[n++] = xasprintf("%d", a->value_bytes);
    argv[n++] = xstrdup("-P");
    argv[n++] = xasprintf("%d", a->pipeline);
    argv[n++] = xstrdup("-r");
    argv[n++] = xasprintf("%lld", a->keys);
    argv[n++] = xstrdup("-t");
    argv[n++] = xstrdup("set,get");
    argv[n++] = xstrdup("--csv");
    return argv;
}

void engine_bench_argv_free(char **argv)
{
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}

/* The first absolute directory of search_path holding an executable file
 * called name. */
static bool find_in_path(const char *name, const char *search_path, char *out, size_t outsize)
{
    const char *p = search_path;

    while (p != NULL && *p != '\0') {
        size_t len = strcspn(p, ":");
        if (len > 0 && p[0] == '/') {
            struct stat st;
            snprintf(out, outsize, "%.*s/%s", (int)len, p, name);
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
                return true;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return false;
}

bool engine_bench_find_program(const char *engine, const char *search_path, char *out,
                               size_t outsize)
{
    bool redis = strcmp(engine, "redis") == 0;
    const char *first = redis ? "redis-benchmark" : "valkey-benchmark";
    const char *second = redis ? "valkey-benchmark" : "redis-benchmark";
    return find_in_path(first, search_path, out, outsize) ||
           find_in_path(second, search_path, out, outsize);
}
