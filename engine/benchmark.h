/* benchmark.h -- the engines' own load generators, valkey-benchmark and
 * redis-benchmark: their command line for a run of SET and GET, and what
 * they print with --csv, parsed.
 *
 * With --csv both (Valkey 8.0, Redis 7.0) print a header that names the
 * columns, then one line per test once it has finished, every field quoted:
 *
 *     "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
 *     "SET","35587.19","0.373","0.088","0.359","0.599","0.735","3.775"
 *     "GET","34602.07","0.379","0.080","0.351","0.639","0.919","4.807"
 *
 * Columns are found by their names in the header, so one added or moved
 * does not matter. Everything here but engine_bench_find_program() is
 * pure. */
#ifndef CAIRN_ENGINE_BENCHMARK_H
#define CAIRN_ENGINE_BENCHMARK_H

#include <stdbool.h>
#include <stddef.h>

#define ENGINE_BENCH_TESTS_MAX 16
#define ENGINE_BENCH_NAME_MAX  32

/* One test's line: its name as printed ("SET"), requests per second and
 * the median and 99th percentile latency in milliseconds. */
struct engine_bench_test {
    char name[ENGINE_BENCH_NAME_MAX];
    double rps, p50_ms, p99_ms;
};

struct engine_bench_csv {
    struct engine_bench_test tests[ENGINE_BENCH_TESTS_MAX];
    size_t count;
};

/* Parse len bytes of a benchmark's output (need not be NUL-terminated; LF
 * or CRLF line ends). Lines before the header (a warning) and blank lines
 * are skipped; the header is the first line with a field "test", and must
 * also name the columns rps, p50_latency_ms and p99_latency_ms.
 * Every later line that is not blank is a test: as many fields as the
 * header, the name 1 to 31 bytes, the figures finite numbers >= 0, no name
 * twice, at most ENGINE_BENCH_TESTS_MAX of them. A field may be quoted
 * ("" inside stands for one quote) or not. False, with out->count 0 and a
 * message in err, when there is no header or a line breaks a rule. */
bool engine_bench_parse_csv(const char *text, size_t len, struct engine_bench_csv *out, char *err,
                            size_t errsize);

/* The test named name (ASCII case-insensitive: "get" finds "GET"), or
 * NULL. */
const struct engine_bench_test *engine_bench_find(const struct engine_bench_csv *csv,
                                                  const char *name);

/* A run of SET then GET (-t set,get) against one engine. */
struct engine_bench_args {
    const char *program;  /* absolute path: argv[0] */
    const char *host;     /* -h */
    int port;             /* -p */
    const char *password; /* -a; NULL: none */
    int clients;          /* -c */
    long long requests;   /* -n, per test */
    int value_bytes;      /* -d */
    int pipeline;         /* -P */
    long long keys;       /* -r: keys drawn at random from this many */
};

/* The argument vector for a, NULL-terminated: program, -h, -p, -a (when
 * a password is given), -c, -n, -d, -P, -r, -t set,get, --csv. The caller
 * frees it with engine_bench_argv_free(). */
char **engine_bench_argv(const struct engine_bench_args *a);
void engine_bench_argv_free(char **argv);

/* The load generator to run against engine ("valkey" or "redis"): its own
 * (valkey-benchmark, redis-benchmark) when an executable of that name is in
 * an absolute directory of search_path ($PATH-style), else the other's.
 * Writes the path to out; false when neither is found. */
bool engine_bench_find_program(const char *engine, const char *search_path, char *out,
                               size_t outsize);

#endif
