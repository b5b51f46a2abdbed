/* ops_calibrate.c -- the calibrate operation (calibration.h), on the
 * temporary one-node cluster POST /v1/sizing/calibrations placed with it:
 *
 *   wait_engine, wait_ready   the node starts (create's own steps); it is
 *                             available
 *   benchmark                 the engine's load generator runs against it
 *                             from here: a pilot, then the run that counts
 *   record                    the figures go to the calibration's row
 *   stop_node, wait_removed,  the node is removed, its cluster dropped
 *   drop_cluster              (delete's own steps)
 *   finish                    the operation succeeds, or fails with what
 *                             went wrong before
 *
 * The node is removed even when the calibration fails: a step before the
 * removal that fails notes the failure in the context ("failure": code and
 * message) instead of failing the operation, the steps up to the removal
 * then do nothing, and finish fails the operation with it. Only a removal
 * that cannot finish (DELETE_STUCK) fails at once and leaves the cluster
 * deleting, for a DELETE to try again, as a delete operation would.
 *
 * The benchmark is a child process of the cairnd that started it (child.h),
 * watched without blocking the runner: the step starts it and runs again
 * every POLL_MS until it has ended or its deadline has passed (then it is
 * killed and the calibration fails). The context says which process's it
 * is ("bench": instance, and until when it may run): another cairnd that
 * claims the step meanwhile waits for that time to pass, and only then
 * starts the benchmark again itself. If cairnd dies mid-way, its child dies
 * with it, and the operation resumes where it was recorded, on another
 * cairnd or on this one restarted: at the benchmark, that starts again once
 * the dead one's deadline has passed; anywhere later, it goes on to remove
 * the node. So a temporary node never stays behind. */
#include "ops.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchmark.h"
#include "calibration.h"
#include "child.h"
#include "crypto.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define POLL_MS    200
#define OUTPUT_MAX 8192 /* of the benchmark's output: a few lines of CSV, or an error */

/* ---- a failure noted, the node removed before it counts ----------------- */

static bool failed_before(const struct op_ctx *ctx)
{
    return json_object_get(ctx->context, "failure") != NULL;
}

/* Note the failure code/message for finish and go on to the removal. */
static enum op_result note_failure(struct op_ctx *ctx, const char *code, const char *message)
{
    log_warn("calibration failed; removing its node",
             "operation=%s cluster=%s code=%s error=\"%s\"", ctx->op_id, ctx->cluster_id, code,
             message);
    json_object_set_new(ctx->context, "failure",
                        json_pack("{s:s, s:s}", "code", code, "message", message));
    ctx->code[0] = ctx->error[0] = '\0';
    return OP_NEXT;
}

static enum op_result fail_later(struct op_ctx *ctx, enum problem_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum op_result fail_later(struct op_ctx *ctx, enum problem_code code, const char *fmt, ...)
{
    char message[sizeof(ctx->error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return note_failure(ctx, problem_info(code)->code, message);
}

/* The step of another kind called name. */
static const struct op_step *step_of(const struct op_kind *kind, const char *name)
{
    for (int i = 0; i < kind->nsteps; i++) {
        if (strcmp(kind->steps[i].name, name) == 0)
            return &kind->steps[i];
    }
    assert(!"the kind has a step of that name");
    return NULL;
}

/* A step of another kind, run on this operation's cluster; its failure is
 * noted. */
static enum op_result borrowed(struct op_ctx *ctx, const struct op_kind *kind, const char *name)
{
    enum op_result r = op_run_nested(ctx, step_of(kind, name));
    if (r == OP_FAILED) {
        char code[sizeof(ctx->code)], message[sizeof(ctx->error)];
        snprintf(code, sizeof(code), "%s", ctx->code);
        snprintf(message, sizeof(message), "%s", ctx->error);
        return note_failure(ctx, code, message);
    }
    return r;
}

/* ---- the node starts ------------------------------------------------------ */

static enum op_result wait_engine(struct op_ctx *ctx)
{
    return failed_before(ctx) ? OP_NEXT : borrowed(ctx, &op_cluster_create, "wait_engines");
}

static enum op_result wait_ready(struct op_ctx *ctx)
{
    return failed_before(ctx) ? OP_NEXT : borrowed(ctx, &op_cluster_create, "wait_ready");
}

static enum db_status mark_ready(struct db_conn *conn, const struct op_ctx *ctx)
{
    if (failed_before(ctx))
        return DB_OK;
    enum db_status st = store_cluster_set_available(conn, ctx->cluster_id);
    if (st != DB_OK)
        return st;
    return ops_event(conn, ctx, "ClusterAvailable", "info",
                     "the calibration's temporary node is available; benchmarking it", NULL);
}

/* ---- the benchmark -------------------------------------------------------- */

/* A benchmark this process runs: its child, for which operation, and what
 * it was started with. Touched by the runner thread alone. */
struct job {
    char op_id[STORE_UUID_SIZE];
    struct child *child;
    bool pilot;
    long long requests, keys; /* per test */
    int64_t deadline_us;
    char program[PATH_MAX];
    char engine_version[32]; /* what the node runs, "8.0.1" */
};

static struct job **jobs;
static size_t njobs;

/* This process among the cairnds: which benchmarks are its own. */
static char instance[33];
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;

static void make_instance(void)
{
    unsigned char raw[16];
    crypto_random(raw, sizeof(raw));
    crypto_hex(raw, sizeof(raw), instance);
}

static const char *instance_id(void)
{
    pthread_once(&instance_once, make_instance);
    return instance;
}

static struct job *job_find(const char *op_id)
{
    for (size_t i = 0; i < njobs; i++) {
        if (strcmp(jobs[i]->op_id, op_id) == 0)
            return jobs[i];
    }
    return NULL;
}

static void job_end(struct job *j)
{
    for (size_t i = 0; i < njobs; i++) {
        if (jobs[i] == j) {
            jobs[i] = jobs[--njobs];
            break;
        }
    }
    child_free(j->child);
    free(j);
}

/* Benchmarks of other operations past their deadline: their operation has
 * gone on elsewhere (another cairnd waited the deadline out). */
static void jobs_reap_stale(const char *op_id)
{
    int64_t now = time_mono_us();
    for (size_t i = 0; i < njobs;) {
        if (strcmp(jobs[i]->op_id, op_id) != 0 && now > jobs[i]->deadline_us)
            job_end(jobs[i]);
        else
            i++;
    }
}

/* The program to run: --calibration-benchmark, else the engine's own load
 * generator on cairnd's PATH. */
static bool find_program(const struct op_ctx *ctx, char *out, size_t outsize)
{
    const char *configured = ctx->app->cfg.calibration_benchmark;
    if (configured != NULL && configured[0] != '\0') {
        snprintf(out, outsize, "%s", configured);
        return true;
    }
    const char *path = getenv("PATH");
    return engine_bench_find_program(ops_context_str(ctx, "engine"),
                                     path != NULL ? path : "/usr/local/bin:/usr/bin:/bin", out,
                                     outsize);
}

/* Start the pilot (pilot) or the run that counts, of requests per test. */
static enum op_result start_run(struct op_ctx *ctx, bool pilot, long long requests)
{
    struct calib_params p;
    struct ops_topo t;
    struct job *j = xcalloc(1, sizeof(*j));
    char err[512];

    calib_params_read(ctx->context, &p);
    if (!find_program(ctx, j->program, sizeof(j->program))) {
        free(j);
        return fail_later(ctx, PROBLEM_BENCHMARK_FAILED,
                          "no valkey-benchmark or redis-benchmark on cairnd's PATH: install "
                          "valkey-tools or redis-tools, or name one with --calibration-benchmark");
    }
    if (!ops_topo_load(ctx, &t)) {
        free(j);
        return op_wait(ctx, POLL_MS);
    }
    const struct cluster_node *n = t.nodes.count == 1 ? &t.nodes.items[0] : NULL;
    if (n == NULL || n->port <= 0 || strcmp(n->process_state, "running") != 0 || n->host_lost) {
        ops_topo_free(&t);
        free(j);
        return fail_later(ctx, PROBLEM_NODE_UNREACHABLE,
                          "the calibration's node is no longer running");
    }
    j->keys = calib_keys(requests, &p, ops_context_str(ctx, "engine"),
                         ops_context_str(ctx, "engine_version"),
                         json_number_value(json_object_get(ctx->context, "node_memory_gib")));
    /* The load is a tenant's: it runs as the default user, with the
     * cluster's AUTH token, never with Cairn's own password. */
    enum db_status st;
    char *token = cluster_password(ctx->app, ctx->cluster_id, &st);
    struct engine_bench_args a = {j->program, n->address,    n->port,    token,  p.clients,
                                  requests,   p.value_bytes, p.pipeline, j->keys};
    char **argv = engine_bench_argv(&a);
    free(token);
    j->child = child_start(argv, OUTPUT_MAX, err, sizeof(err));
    engine_bench_argv_free(argv);
    snprintf(j->engine_version, sizeof(j->engine_version), "%s", n->running_version);
    ops_topo_free(&t);
    if (j->child == NULL) {
        free(j);
        return fail_later(ctx, PROBLEM_BENCHMARK_FAILED, "%s", err);
    }
    int deadline_s = calib_deadline_s(&p, pilot);
    snprintf(j->op_id, sizeof(j->op_id), "%s", ctx->op_id);
    j->pilot = pilot;
    j->requests = requests;
    j->deadline_us = time_mono_us() + (int64_t)deadline_s * 1000000;
    jobs = xrealloc(jobs, (njobs + 1) * sizeof(*jobs));
    jobs[njobs++] = j;
    json_object_set_new(ctx->context, "bench",
                        json_pack("{s:s, s:s, s:I}", "instance", instance_id(), "run",
                                  pilot ? "pilot" : "measure", "until",
                                  (json_int_t)(time_now_s() + deadline_s + 1)));
    log_info("calibration benchmark started",
             "operation=%s run=%s program=%s requests=%lld keys=%lld deadline_s=%d", ctx->op_id,
             pilot ? "pilot" : "measure", j->program, requests, j->keys, deadline_s);
    return op_wait(ctx, POLL_MS);
}

/* The last line of what the program wrote, for an error message. */
static void last_line(const char *out, size_t len, char *line, size_t size)
{
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' '))
        len--;
    size_t start = len;
    while (start > 0 && out[start - 1] != '\n')
        start--;
    size_t n = len - start < size - 1 ? len - start : size - 1;
    for (size_t i = 0; i < n; i++)
        line[i] = out[start + i] >= 0x20 && out[start + i] < 0x7f ? out[start + i] : '?';
    line[n] = '\0';
}

/* The run j has ended with status: the pilot starts the run that counts;
 * that one's figures become the results. */
static enum op_result run_ended(struct op_ctx *ctx, struct job *j, int status)
{
    struct calib_params p;
    struct engine_bench_csv csv;
    struct calib_figures mix;
    char err[256], line[200];
    size_t len;
    const char *out = child_output(j->child, &len);
    const char *name = strrchr(j->program, '/') != NULL ? strrchr(j->program, '/') + 1 : j->program;

    calib_params_read(ctx->context, &p);
    last_line(out, len, line, sizeof(line));
    if (status != 0) {
        enum op_result r = fail_later(ctx, PROBLEM_BENCHMARK_FAILED, "%s exited with status %d%s%s",
                                      name, status, line[0] != '\0' ? ": " : "", line);
        job_end(j);
        return r;
    }
    if (!engine_bench_parse_csv(out, len, &csv, err, sizeof(err)) ||
        !calib_combine(&csv, p.read_ratio, &mix, err, sizeof(err))) {
        enum op_result r =
            fail_later(ctx, PROBLEM_BENCHMARK_FAILED, "could not read %s's output: %s", name, err);
        job_end(j);
        return r;
    }
    double elapsed = child_elapsed_s(j->child);
    long long next = j->pilot ? calib_main_requests(&p, j->requests, elapsed) : 0;
    if (next > 0) {
        job_end(j);
        return start_run(ctx, false, next);
    }
    json_t *results = calib_results_json(&csv, &mix, (int)ops_context_int(ctx, "host_vcpus"));
    json_object_set_new(results, "requests", json_integer(2 * j->requests));
    json_object_set_new(results, "keys", json_integer(j->keys));
    json_object_set_new(results, "elapsed_s", json_real(round(elapsed * 1000) / 1000));
    json_object_set_new(results, "benchmark", json_string(name));
    json_object_set_new(results, "engine_version_actual", json_string(j->engine_version));
    json_object_set_new(ctx->context, "results", results);
    json_object_del(ctx->context, "bench");
    log_info("calibration benchmark done", "operation=%s requests_per_second=%.0f elapsed_s=%.2f",
             ctx->op_id, mix.rps, elapsed);
    job_end(j);
    return OP_NEXT;
}

static enum op_result benchmark(struct op_ctx *ctx)
{
    if (failed_before(ctx) || json_object_get(ctx->context, "results") != NULL)
        return OP_NEXT;
    jobs_reap_stale(ctx->op_id);
    const json_t *bench = json_object_get(ctx->context, "bench");
    const char *owner = json_string_value(json_object_get(bench, "instance"));
    bool ours = owner == NULL || strcmp(owner, instance_id()) == 0;
    struct job *j = job_find(ctx->op_id);
    if (j != NULL && !ours) {
        job_end(j); /* another cairnd waited ours out and runs its own */
        j = NULL;
    }
    if (j == NULL) {
        if (!ours && time_now_s() <= json_integer_value(json_object_get(bench, "until")))
            return op_wait(ctx, POLL_MS); /* another cairnd's run: it collects it */
        struct calib_params p;
        calib_params_read(ctx->context, &p);
        return start_run(ctx, true, calib_pilot_requests(&p));
    }
    int status;
    if (child_poll(j->child, &status))
        return run_ended(ctx, j, status);
    if (time_mono_us() < j->deadline_us)
        return op_wait(ctx, POLL_MS);
    enum op_result r = fail_later(ctx, PROBLEM_BENCHMARK_FAILED,
                                  "%s did not finish %s of %lld requests per test in time; it was "
                                  "killed",
                                  j->program, j->pilot ? "its pilot" : "its run", j->requests);
    job_end(j);
    return r;
}

static enum db_status record(struct db_conn *conn, const struct op_ctx *ctx)
{
    const json_t *results = json_object_get(ctx->context, "results");
    if (failed_before(ctx) || results == NULL)
        return DB_OK;
    char *text = json_dumps(results, JSON_COMPACT);
    enum db_status st = store_calibration_record(conn, ctx->op_id, text);
    free(text);
    return st;
}

/* ---- the node goes ---------------------------------------------------------- */

static enum db_status stop_node(struct db_conn *conn, const struct op_ctx *ctx)
{
    enum db_status st = store_cluster_set_status(conn, ctx->cluster_id, "deleting");
    if (st == DB_OK)
        st = store_nodes_mark_deleted(conn, ctx->cluster_id);
    if (st == DB_OK)
        st = ops_event(conn, ctx, "ClusterDeleting", "info",
                       "removing the calibration's temporary node", NULL);
    return st;
}

/* Delete's own removal, whose failure is not noted but fails the operation
 * now: the cluster stays deleting, and a DELETE tries again. */
static enum op_result wait_removed(struct op_ctx *ctx)
{
    return op_run_nested(ctx, step_of(&op_cluster_delete, "wait_removed"));
}

static enum db_status drop_cluster(struct db_conn *conn, const struct op_ctx *ctx)
{
    return step_of(&op_cluster_delete, "drop_cluster")->commit(conn, ctx);
}

/* The failure noted before the removal, if any, is the operation's. */
static enum op_result finish(struct op_ctx *ctx)
{
    const json_t *failure = json_object_get(ctx->context, "failure");
    enum problem_code code;

    if (failure == NULL)
        return OP_NEXT;
    if (!problem_find(json_string_value(json_object_get(failure, "code")), &code))
        code = PROBLEM_BENCHMARK_FAILED;
    return op_fail(ctx, code, "%s", json_string_value(json_object_get(failure, "message")));
}

static enum db_status calibrate_failed(struct db_conn *conn, const struct op_ctx *ctx)
{
    return ops_failed_event(conn, ctx, NULL);
}

static const struct op_step calibrate_steps[] = {
    {"wait_engine", wait_engine},
    {"wait_ready", wait_ready, mark_ready},
    {"benchmark", benchmark},
    {"record", NULL, record},
    {"stop_node", NULL, stop_node},
    {"wait_removed", wait_removed},
    {"drop_cluster", NULL, drop_cluster},
    {"finish", finish},
};

const struct op_kind op_calibrate = {"calibrate", calibrate_steps,
                                     sizeof(calibrate_steps) / sizeof(calibrate_steps[0]),
                                     calibrate_failed};
