/* fuzz_bench_csv.c -- a load generator's --csv output as a calibration
 * reads it (engine/benchmark.h), and its GET and SET lines combined for a
 * mix of reads (controlplane/calibration.h). The first input byte picks
 * the read ratio (0 to 1 in 255 steps); the rest is the output.
 *
 * Promises: a refused output keeps no test; a parsed one has at most
 * ENGINE_BENCH_TESTS_MAX tests, each with a name of 1 to 31 bytes that no
 * other has (in any case), found by that name, and figures that are
 * finite and >= 0; a combination that succeeds answers a finite rate
 * between its commands' (those with a share), with the larger of their
 * latencies. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "benchmark.h"
#include "calibration.h"
#include "fuzz.h"

static void check_combined(const struct engine_bench_csv *csv, double ratio)
{
    struct calib_figures mix;
    char err[256];

    if (!calib_combine(csv, ratio, &mix, err, sizeof(err)))
        return;
    const struct engine_bench_test *get = engine_bench_find(csv, "GET");
    const struct engine_bench_test *set = engine_bench_find(csv, "SET");
    double lo = INFINITY, hi = 0, p50 = 0, p99 = 0;
    if (ratio > 0) {
        FUZZ_ASSERT(get != NULL && get->rps > 0);
        lo = fmin(lo, get->rps);
        hi = fmax(hi, get->rps);
        p50 = fmax(p50, get->p50_ms);
        p99 = fmax(p99, get->p99_ms);
    }
    if (ratio < 1) {
        FUZZ_ASSERT(set != NULL && set->rps > 0);
        lo = fmin(lo, set->rps);
        hi = fmax(hi, set->rps);
        p50 = fmax(p50, set->p50_ms);
        p99 = fmax(p99, set->p99_ms);
    }
    FUZZ_ASSERT(isfinite(mix.rps) && mix.rps > 0);
    FUZZ_ASSERT(mix.rps >= lo * (1 - 1e-9) && mix.rps <= hi * (1 + 1e-9));
    FUZZ_ASSERT(mix.p50_ms == p50 && mix.p99_ms == p99);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct engine_bench_csv csv;
    char err[256];

    if (size == 0)
        return 0;
    double ratio = data[0] / 255.0;
    /* A copy of exactly the bytes, so that reading past them is caught. */
    char *text = malloc(size - 1 > 0 ? size - 1 : 1);
    memcpy(text, data + 1, size - 1);
    if (!engine_bench_parse_csv(text, size - 1, &csv, err, sizeof(err))) {
        FUZZ_ASSERT(csv.count == 0);
        FUZZ_ASSERT(err[0] != '\0');
        free(text);
        return 0;
    }
    FUZZ_ASSERT(csv.count <= ENGINE_BENCH_TESTS_MAX);
    for (size_t i = 0; i < csv.count; i++) {
        const struct engine_bench_test *t = &csv.tests[i];
        size_t len = strnlen(t->name, sizeof(t->name));
        FUZZ_ASSERT(len >= 1 && len < sizeof(t->name));
        FUZZ_ASSERT(engine_bench_find(&csv, t->name) == t);
        for (size_t k = 0; k < i; k++)
            FUZZ_ASSERT(strcasecmp(csv.tests[k].name, t->name) != 0);
        FUZZ_ASSERT(isfinite(t->rps) && t->rps >= 0);
        FUZZ_ASSERT(isfinite(t->p50_ms) && t->p50_ms >= 0);
        FUZZ_ASSERT(isfinite(t->p99_ms) && t->p99_ms >= 0);
    }
    check_combined(&csv, ratio);
    free(text);
    return 0;
}
