/* calibration.c -- what a calibration runs on, how long and over how many
 * keys its benchmark runs, and what its figures come to (calibration.h). */
#include "calibration.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "page.h"
#include "sizing.h"

#define GIB              (1024.0 * 1024.0 * 1024.0)
#define PILOT_PER_CLIENT 100 /* pilot requests per client and request in flight */
#define PILOT_MIN        20000LL
#define PILOT_MAX        1000000LL
#define MAIN_MAX         100000000LL
#define KEY_BYTES        16 /* "key:" and 12 digits, as the benchmark names keys with -r */
#define KEYS_PER_SET     3  /* a third of the SETs: 1 - e^-3, about 95% of GETs find their key */

static bool check_uuid(const json_t *value, char *msg, size_t msgsize)
{
    if (page_is_uuid(json_string_value(value)))
        return true;
    snprintf(msg, msgsize, "must be a host's id, a UUID (see GET /v1/hosts)");
    return false;
}

#define INTEGER(field, lo, hi)                                                                     \
    {                                                                                              \
        .name = field, .type = JSPEC_INTEGER, .has_range = true, .min = lo, .max = hi              \
    }

const struct jspec_field calib_request_spec[] = {
    {.name = "host_id", .type = JSPEC_STRING, .min_len = 1, .max_len = 64, .check = check_uuid},
    {.name = "node_type", .type = JSPEC_STRING, .min_len = 1, .max_len = 64},
    {.name = "engine", .type = JSPEC_STRING, .one_of = engine_kind_names},
    {.name = "engine_version", .type = JSPEC_STRING, .min_len = 1, .max_len = 16},
    INTEGER("value_bytes", 1, CALIB_VALUE_BYTES_MAX),
    {.name = "read_ratio", .type = JSPEC_NUMBER, .has_range = true, .min = 0, .max = 1},
    INTEGER("pipeline", 1, CALIB_PIPELINE_MAX),
    INTEGER("clients", 1, CALIB_CLIENTS_MAX),
    INTEGER("duration_s", 1, CALIB_DURATION_MAX_S),
    {0},
};

static double number(const json_t *o, const char *key, double otherwise)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : otherwise;
}

static const char *text(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

void calib_params_read(const json_t *body, struct calib_params *out)
{
    out->value_bytes = (int)number(body, "value_bytes", CALIB_VALUE_BYTES_DEFAULT);
    out->read_ratio = number(body, "read_ratio", CALIB_READ_RATIO_DEFAULT);
    out->pipeline = (int)number(body, "pipeline", CALIB_PIPELINE_DEFAULT);
    out->clients = (int)number(body, "clients", CALIB_CLIENTS_DEFAULT);
    out->duration_s = (int)number(body, "duration_s", CALIB_DURATION_DEFAULT_S);
}

/* ---- where it runs ------------------------------------------------------ */

/* The member of array whose key is value, or NULL. */
static const json_t *find_by(const json_t *array, const char *key, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach (array, i, item) {
        const char *v = text(item, key);
        if (v != NULL && strcmp(v, value) == 0)
            return item;
    }
    return NULL;
}

static bool listed(const json_t *strings, const char *value)
{
    size_t i;
    json_t *s;
    json_array_foreach (strings, i, s) {
        if (strcmp(json_string_value(s), value) == 0)
            return true;
    }
    return false;
}

/* The newest of the catalog's lines the host runs (the one asked when
 * version is not NULL), or NULL. */
static const char *host_line(const json_t *host, const char *engine, const json_t *catalog,
                             const char *version)
{
    const json_t *runs = json_object_get(json_object_get(host, "lines"), engine);
    const char *newest = NULL;
    size_t i;
    json_t *line;
    json_array_foreach (catalog, i, line) {
        const char *v = json_string_value(line);
        if (listed(runs, v) && (version == NULL || strcmp(v, version) == 0))
            newest = v;
    }
    return newest;
}

static bool healthy(const json_t *host)
{
    const char *status = text(host, "status");
    return status != NULL && strcmp(status, "healthy") == 0;
}

static bool fits(const json_t *host, const json_t *type)
{
    return number(host, "free_vcpus", 0) >= number(type, "vcpus", 1) &&
           number(host, "free_memory_mib", 0) >= number(type, "memory_mib", 1);
}

/* The smallest non-burstable type that fits the host's free room: by
 * memory, then vCPUs, then the catalog's order. */
static const json_t *smallest_fitting(const json_t *types, const json_t *host)
{
    const json_t *best = NULL;
    size_t i;
    json_t *t;
    json_array_foreach (types, i, t) {
        if (json_is_true(json_object_get(t, "burstable")) || !fits(host, t))
            continue;
        if (best == NULL || number(t, "memory_mib", 0) < number(best, "memory_mib", 0) ||
            (number(t, "memory_mib", 0) == number(best, "memory_mib", 0) &&
             number(t, "vcpus", 0) < number(best, "vcpus", 0)))
            best = t;
    }
    return best;
}

/* No host asked: the healthy host with the most free memory that runs the
 * engine (version, when asked) and has room for type (when asked) or for
 * some non-burstable type. */
static const json_t *pick_host(const json_t *choices, const char *engine, const char *version,
                               const json_t *type, struct problem *p)
{
    const json_t *catalog = json_object_get(json_object_get(choices, "lines"), engine);
    const json_t *best = NULL;
    bool runs = false;
    size_t i;
    json_t *h;
    json_array_foreach (json_object_get(choices, "hosts"), i, h) {
        if (!healthy(h) || host_line(h, engine, catalog, version) == NULL)
            continue;
        runs = true;
        bool room = type != NULL
                        ? fits(h, type)
                        : smallest_fitting(json_object_get(choices, "node_types"), h) != NULL;
        if (room &&
            (best == NULL || number(h, "free_memory_mib", 0) > number(best, "free_memory_mib", 0)))
            best = h;
    }
    if (!runs)
        problem_set(p, PROBLEM_ENGINE_NOT_INSTALLED, "no healthy host runs %s%s%s", engine,
                    version != NULL ? " " : "", version != NULL ? version : "");
    else if (best == NULL)
        problem_set(
            p, PROBLEM_INSUFFICIENT_CAPACITY, "no healthy host that runs %s%s%s has room for %s%s",
            engine, version != NULL ? " " : "", version != NULL ? version : "",
            type != NULL ? "a " : "a non-burstable node", type != NULL ? text(type, "name") : "");
    return best;
}

/* The fields that name nothing: host_id, node_type, engine_version. */
static void check_names(const json_t *body, const json_t *choices, const char *engine,
                        struct problem *p)
{
    const char *host_id = text(body, "host_id"), *type = text(body, "node_type");
    const char *version = text(body, "engine_version");

    if (host_id != NULL && find_by(json_object_get(choices, "hosts"), "id", host_id) == NULL)
        problem_field(p, "host_id", "is not a registered host (see GET /v1/hosts)");
    if (type != NULL && find_by(json_object_get(choices, "node_types"), "name", type) == NULL)
        problem_field(p, "node_type", "is not in the catalog (see GET /v1/node-types)");
    if (version != NULL &&
        !listed(json_object_get(json_object_get(choices, "lines"), engine), version)) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "is not a line of %s in the catalog (see GET /v1/engine-versions)", engine);
        problem_field(p, "engine_version", msg);
    }
}

bool calib_choose(const json_t *body, const json_t *choices, struct calib_choice *out,
                  struct problem *p)
{
    const char *engine = text(body, "engine") != NULL ? text(body, "engine") : "valkey";
    const char *host_id = text(body, "host_id"), *version = text(body, "engine_version");
    const json_t *types = json_object_get(choices, "node_types");
    const json_t *catalog = json_object_get(json_object_get(choices, "lines"), engine);
    const json_t *type = NULL, *host;

    memset(out, 0, sizeof(*out));
    check_names(body, choices, engine, p);
    if (p->set)
        return false;
    if (text(body, "node_type") != NULL)
        type = find_by(types, "name", text(body, "node_type"));
    if (host_id == NULL) {
        if ((host = pick_host(choices, engine, version, type, p)) == NULL)
            return false;
    } else {
        host = find_by(json_object_get(choices, "hosts"), "id", host_id);
        if (!healthy(host))
            return problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                               "host %s is %s: no node can be placed on it", text(host, "name"),
                               text(host, "status"));
    }
    const char *line = host_line(host, engine, catalog, version);
    if (line == NULL)
        return version != NULL
                   ? problem_set(p, PROBLEM_ENGINE_NOT_INSTALLED, "host %s does not run %s %s",
                                 text(host, "name"), engine, version)
                   : problem_set(p, PROBLEM_ENGINE_NOT_INSTALLED,
                                 "host %s runs no line of %s in the catalog", text(host, "name"),
                                 engine);
    if (type != NULL && !fits(host, type))
        return problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                           "host %s has %.0f vCPU and %.0f MiB free; a %s needs %.0f vCPU and "
                           "%.0f MiB",
                           text(host, "name"), number(host, "free_vcpus", 0),
                           number(host, "free_memory_mib", 0), text(type, "name"),
                           number(type, "vcpus", 0), number(type, "memory_mib", 0));
    if (type == NULL)
        type = smallest_fitting(types, host);
    if (type == NULL)
        return problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                           "host %s has room for no non-burstable node type (%.0f vCPU and %.0f "
                           "MiB free)",
                           text(host, "name"), number(host, "free_vcpus", 0),
                           number(host, "free_memory_mib", 0));
    snprintf(out->host_id, sizeof(out->host_id), "%s", text(host, "id"));
    snprintf(out->host_name, sizeof(out->host_name), "%s", text(host, "name"));
    out->host_vcpus = (int)number(host, "vcpus", 1);
    snprintf(out->node_type, sizeof(out->node_type), "%s", text(type, "name"));
    out->node_memory_gib = number(type, "memory_gib", 0);
    snprintf(out->engine, sizeof(out->engine), "%s", engine);
    snprintf(out->engine_version, sizeof(out->engine_version), "%s", line);
    return true;
}

/* ---- how long, over how many keys ---------------------------------------- */

static long long clamp(long long v, long long lo, long long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

long long calib_pilot_requests(const struct calib_params *p)
{
    return clamp((long long)p->clients * p->pipeline * PILOT_PER_CLIENT, PILOT_MIN, PILOT_MAX);
}

long long calib_main_requests(const struct calib_params *p, long long pilot, double pilot_s)
{
    if (pilot_s >= p->duration_s / 2.0)
        return 0;
    if (pilot_s <= 0)
        return MAIN_MAX;
    /* The pilot ran pilot requests of each test in pilot_s: this many per
     * test take duration_s at its pace. */
    double n = (double)pilot * p->duration_s / pilot_s;
    return n >= (double)MAIN_MAX ? MAIN_MAX : clamp((long long)n, pilot, MAIN_MAX);
}

int calib_deadline_s(const struct calib_params *p, bool pilot)
{
    return pilot ? p->duration_s + 2 : p->duration_s * 3 / 2 + 2;
}

long long calib_keys(long long requests, const struct calib_params *p, const char *engine,
                     const char *engine_version, double node_memory_gib)
{
    long long keys = clamp(requests / KEYS_PER_SET, 1, requests > 0 ? requests : 1);
    double maxmemory = node_memory_gib * GIB * (1.0 - SIZING_RESERVED_FRACTION);
    double per_key = KEY_BYTES + p->value_bytes +
                     sizing_key_overhead(engine, engine_version, false, false, (double)keys,
                                         KEY_BYTES, p->value_bytes);
    double fit = maxmemory / 2 / per_key;
    return fit < (double)keys ? (fit >= 1 ? (long long)fit : 1) : keys;
}

/* ---- what the figures come to ---------------------------------------------- */

bool calib_combine(const struct engine_bench_csv *csv, double read_ratio, struct calib_figures *mix,
                   char *err, size_t errsize)
{
    const struct engine_bench_test *cmd[2] = {engine_bench_find(csv, "GET"),
                                              engine_bench_find(csv, "SET")};
    const char *names[2] = {"GET", "SET"};
    double share[2] = {read_ratio, 1.0 - read_ratio}, seconds = 0;

    memset(mix, 0, sizeof(*mix));
    for (int c = 0; c < 2; c++) {
        if (share[c] <= 0)
            continue;
        if (cmd[c] == NULL || cmd[c]->rps <= 0) {
            snprintf(err, errsize, "the benchmark reported %s for %s",
                     cmd[c] == NULL ? "no line" : "no requests", names[c]);
            return false;
        }
        /* Seconds one request of the mix takes: its share of each command's. */
        seconds += share[c] / cmd[c]->rps;
        mix->p50_ms = fmax(mix->p50_ms, cmd[c]->p50_ms);
        mix->p99_ms = fmax(mix->p99_ms, cmd[c]->p99_ms);
    }
    mix->rps = 1.0 / seconds;
    return true;
}

/* v to places decimals, as near as a double gets to what is printed. */
static double round_to(double v, int places)
{
    double scale = pow(10, places);
    return round(v * scale) / scale;
}

static json_t *command_json(const struct engine_bench_test *t)
{
    if (t == NULL)
        return json_null();
    return json_pack("{s:f, s:f, s:f}", "requests_per_second", round_to(t->rps, 2),
                     "p50_latency_ms", round_to(t->p50_ms, 3), "p99_latency_ms",
                     round_to(t->p99_ms, 3));
}

json_t *calib_results_json(const struct engine_bench_csv *csv, const struct calib_figures *mix,
                           int host_vcpus)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:i, s:o, s:o}", "requests_per_second",
                     round_to(mix->rps, 2), "p50_latency_ms", round_to(mix->p50_ms, 3),
                     "p99_latency_ms", round_to(mix->p99_ms, 3), "requests_per_second_per_vcpu",
                     round_to(mix->rps / (host_vcpus > 0 ? host_vcpus : 1), 2), "host_vcpus",
                     host_vcpus, "get", command_json(engine_bench_find(csv, "GET")), "set",
                     command_json(engine_bench_find(csv, "SET")));
}
