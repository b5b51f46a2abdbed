/* sched_bench.c -- times sched_place() on a large fleet and checks the result
 * with sched_check(); run by tests/bench/scheduler.
 *
 * Two fleets of 2,000 hosts in 3 AZs, 1,000 shards of 1 primary + 1 replica
 * of 2 vCPU / 6,144 MiB, multi_az:
 *
 *   partly used  16 vCPU / 128 GiB hosts with 0-14 vCPU and 0-120 GiB already
 *                allocated (a fixed pseudo-random sequence), every 97th host
 *                ineligible;
 *   full         every host has room for exactly one node, so the placement
 *                must use all of them (the greedy pass's hardest case).
 *
 * Prints the median, min and max time of sched_place over the runs and of
 * one sched_check, and how the nodes spread. Exits 1 if a placement fails or
 * breaks a rule. Environment: CAIRN_BENCH_RUNS (default 21). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scheduler.h"
#include "xalloc.h"

#define HOSTS    2000
#define SHARDS   1000
#define REPLICAS 1
#define GOAL_MS  100.0

static const char *const azs[] = {"az-a", "az-b", "az-c"};

struct fleet {
    const char *name;
    struct sched_host hosts[HOSTS];
    char ids[HOSTS][16];
};

static void fleet_partly_used(struct fleet *f)
{
    unsigned r = 2026;

    f->name = "partly used";
    for (int i = 0; i < HOSTS; i++) {
        r = r * 1103515245u + 12345u;
        snprintf(f->ids[i], sizeof(f->ids[i]), "host-%04d", i);
        f->hosts[i] = (struct sched_host){f->ids[i], azs[i % 3], 16 - 2 * (int)((r >> 16) % 8),
                                          131072 - 8192 * (long long)((r >> 8) % 16), i % 97 != 0};
    }
}

static void fleet_full(struct fleet *f)
{
    f->name = "full";
    for (int i = 0; i < HOSTS; i++) {
        snprintf(f->ids[i], sizeof(f->ids[i]), "host-%04d", i);
        f->hosts[i] = (struct sched_host){f->ids[i], azs[i % 3], 2, 6144 + i % 100, true};
    }
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How the placement spreads: primaries and nodes per AZ, hosts used and the
 * most nodes on one host. */
static void describe(const struct fleet *f, const int *host_of)
{
    int primaries[3] = {0}, nodes[3] = {0}, *on = xcalloc(HOSTS, sizeof(int));
    int used = 0, most = 0;

    for (int i = 0; i < SHARDS * (1 + REPLICAS); i++) {
        int h = host_of[i], a = 0;
        while (f->hosts[h].az != azs[a])
            a++;
        nodes[a]++;
        primaries[a] += i % (1 + REPLICAS) == 0;
        used += on[h]++ == 0;
        most = on[h] > most ? on[h] : most;
    }
    printf("  primaries per AZ %d/%d/%d, nodes per AZ %d/%d/%d, %d hosts used, at most %d "
           "node(s) on one\n",
           primaries[0], primaries[1], primaries[2], nodes[0], nodes[1], nodes[2], used, most);
    free(on);
}

/* Place on f runs times; print the timings. False if a placement fails or
 * breaks a rule. */
static bool bench(const struct fleet *f, int runs, double *median)
{
    const struct sched_request req = {
        .shards = SHARDS, .replicas = REPLICAS, .vcpus = 2, .memory_mib = 6144, .multi_az = true};
    int *host_of = xcalloc(SHARDS * (1 + REPLICAS), sizeof(int));
    double *ms = xcalloc((size_t)runs, sizeof(double));
    char err[512];
    bool ok = true;

    for (int i = 0; i < runs && ok; i++) {
        double t0 = now_ms();
        ok = sched_place(f->hosts, HOSTS, &req, host_of, err, sizeof(err));
        ms[i] = now_ms() - t0;
    }
    if (!ok) {
        printf("%s: sched_place refused: %s\n", f->name, err);
    } else {
        double t0 = now_ms();
        ok = sched_check(f->hosts, HOSTS, &req, host_of, err, sizeof(err));
        double check_ms = now_ms() - t0;
        qsort(ms, (size_t)runs, sizeof(double), cmp_double);
        *median = ms[runs / 2];
        printf("%s: place median %.2f ms (min %.2f, max %.2f) over %d runs; check %.2f ms; "
               "rules: %s\n",
               f->name, *median, ms[0], ms[runs - 1], runs, check_ms, ok ? "all hold" : err);
        describe(f, host_of);
    }
    free(ms);
    free(host_of);
    return ok;
}

int main(void)
{
    const char *env = getenv("CAIRN_BENCH_RUNS");
    int runs = env ? atoi(env) : 21;
    struct fleet *f = xcalloc(1, sizeof(*f));
    double partly = 0, full = 0;
    bool ok;

    if (runs < 1)
        runs = 1;
    printf("sched_bench: %d shards x %d nodes of 2 vCPU / 6144 MiB, multi_az, onto %d hosts in "
           "3 AZs\n",
           SHARDS, 1 + REPLICAS, HOSTS);
    fleet_partly_used(f);
    ok = bench(f, runs, &partly);
    fleet_full(f);
    ok = bench(f, runs, &full) && ok;
    free(f);
    if (ok)
        printf("goal: place < %.0f ms: %s (median %.2f ms partly used, %.2f ms full)\n", GOAL_MS,
               partly < GOAL_MS && full < GOAL_MS ? "met" : "MISSED", partly, full);
    return ok ? 0 : 1;
}
