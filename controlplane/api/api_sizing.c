/* api_sizing.c -- POST /v1/sizing: options for a workload (sizing.h), from
 * the catalog's node types and engine lines. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "catalog.h"
#include "cluster_spec.h"
#include "sizing.h"
#include "xalloc.h"

static const char *const availabilities[] = {"none", "standard", "production", NULL};
static const char *const modes[] = {"any", "enabled", "disabled", NULL};

#define NUMBER(field, lo, hi)                                                                      \
    {                                                                                              \
        .name = field, .type = JSPEC_NUMBER, .has_range = true, .min = lo, .max = hi               \
    }
#define INTEGER(field, lo, hi)                                                                     \
    {                                                                                              \
        .name = field, .type = JSPEC_INTEGER, .has_range = true, .min = lo, .max = hi              \
    }

/* The fractions of the keys of each data type (sizing_type_names). */
static const struct jspec_field type_mix[] = {
    NUMBER("strings", 0, 1),     NUMBER("hashes", 0, 1), NUMBER("sets", 0, 1),
    NUMBER("sorted_sets", 0, 1), NUMBER("lists", 0, 1),  {0},
};
static const struct jspec_field family_item = {.type = JSPEC_STRING, .min_len = 1, .max_len = 16};

const struct jspec_field api_sizing_spec[] = {
    {.name = "id",
     .type = JSPEC_STRING,
     .min_len = 1,
     .max_len = CSPEC_ID_MAX,
     .check = cspec_check_id},
    {.name = "engine", .type = JSPEC_STRING, .one_of = engine_kind_names},
    {.name = "engine_version", .type = JSPEC_STRING, .min_len = 1, .max_len = 16},
    NUMBER("data_gib", 0.000001, 1e6),
    NUMBER("keys", 1, 1e12),
    NUMBER("avg_key_bytes", 1, 512 * 1024 * 1024),
    NUMBER("avg_value_bytes", 0, 512 * 1024 * 1024),
    {.name = "data_types", .type = JSPEC_OBJECT, .fields = type_mix},
    {.name = "ttl", .type = JSPEC_BOOLEAN},
    NUMBER("growth_percent", 0, 10000),
    INTEGER("growth_horizon_months", 1, 120),
    NUMBER("requests_per_second", 0, 1e9),
    NUMBER("read_ratio", 0, 1),
    INTEGER("connections", 0, 10000000),
    INTEGER("pipeline", 1, 1000),
    {.name = "read_from_replicas", .type = JSPEC_BOOLEAN},
    {.name = "availability", .type = JSPEC_STRING, .one_of = availabilities},
    INTEGER("replicas_per_shard", 0, 20),
    {.name = "cluster_mode", .type = JSPEC_STRING, .one_of = modes},
    {.name = "node_families",
     .type = JSPEC_ARRAY,
     .min_len = 1,
     .max_len = 32,
     .items = &family_item},
    NUMBER("max_monthly_usd", 0.01, 1e9),
    INTEGER("azs", 1, 16),
    INTEGER("max_options", 1, SIZING_OPTIONS_MAX),
    {0},
};

/* ---- the catalog ------------------------------------------------------- */

struct sizing_node_type *api_node_types(const json_t *types, const char *engine)
{
    struct sizing_node_type *out = xcalloc(json_array_size(types) + 1, sizeof(*out));
    size_t i;
    json_t *t;

    json_array_foreach (types, i, t) {
        struct sizing_node_type *n = &out[i];
        n->name = json_string_value(json_object_get(t, "name"));
        n->family = json_string_value(json_object_get(t, "family"));
        n->size = json_string_value(json_object_get(t, "size"));
        n->vcpus = (int)json_integer_value(json_object_get(t, "vcpus"));
        n->memory_gib = json_number_value(json_object_get(t, "memory_gib"));
        n->network_gbps =
            json_number_value(json_object_get(json_object_get(t, "network_gbps"), "baseline"));
        n->burstable = json_is_true(json_object_get(t, "burstable"));
        n->price_usd_hour =
            json_number_value(json_object_get(json_object_get(t, "price_usd_per_hour"), engine));
    }
    return out;
}

struct catalog {
    json_t *doc;                 /* store_sizing_catalog()'s */
    json_t *calibrations;        /* store_sizing_calibrations()'s */
    const json_t *types, *lines; /* in doc */
    struct sizing_node_type *nodes;
    size_t n;
};

struct catalog_call {
    const char *engine;
    char *text, *calibrations;
};

static enum db_status catalog_fn(struct db_conn *conn, void *arg)
{
    struct catalog_call *c = arg;
    free(c->text);
    free(c->calibrations);
    c->text = c->calibrations = NULL;
    enum db_status st = store_sizing_catalog(conn, c->engine, &c->text);
    return st == DB_OK ? store_sizing_calibrations(conn, c->engine, &c->calibrations) : st;
}

/* A node type's capacity from its latest calibration on this fleet (cal,
 * one of store_sizing_calibrations()'s), in the model's terms: without
 * pipelining. The note, naming the calibration, lives in cal. */
static void calibrated(struct sizing_node_type *n, const char *engine, json_t *cal)
{
    int pipeline = (int)json_integer_value(json_object_get(cal, "pipeline"));
    char note[320];

    n->capacity_rps = json_number_value(json_object_get(cal, "requests_per_second")) /
                      sizing_pipeline_factor(pipeline);
    snprintf(note, sizeof(note),
             "calibration %s with %s %s: %lld-byte values, %.0f%% GET, pipeline %d, "
             "%lld clients, ended %s%s",
             json_string_value(json_object_get(cal, "id")), engine,
             json_string_value(json_object_get(cal, "engine_version")),
             json_integer_value(json_object_get(cal, "value_bytes")),
             json_number_value(json_object_get(cal, "read_ratio")) * 100, pipeline,
             json_integer_value(json_object_get(cal, "clients")),
             json_string_value(json_object_get(cal, "finished_at")),
             pipeline > 1 ? " (divided by the pipeline factor)" : "");
    json_object_set_new(cal, "note", json_string(note));
    n->capacity_source = "calibration";
    n->capacity_note = json_string_value(json_object_get(cal, "note"));
}

static enum db_status catalog_load(struct app *app, const char *engine, struct catalog *cat)
{
    struct catalog_call call = {engine, NULL, NULL};
    enum db_status st = db_run(app->db, catalog_fn, &call);

    memset(cat, 0, sizeof(*cat));
    if (st == DB_OK && ((cat->doc = json_loads(call.text, 0, NULL)) == NULL ||
                        (cat->calibrations = json_loads(call.calibrations, 0, NULL)) == NULL))
        st = DB_ERROR;
    free(call.text);
    free(call.calibrations);
    if (st != DB_OK) {
        json_decref(cat->doc);
        return st;
    }
    cat->types = json_object_get(cat->doc, "node_types");
    cat->lines = json_object_get(cat->doc, "lines");
    cat->n = json_array_size(cat->types);
    cat->nodes = api_node_types(cat->types, engine);
    for (size_t i = 0; i < cat->n; i++) {
        json_t *cal = json_object_get(cat->calibrations, cat->nodes[i].name);
        if (cal != NULL)
            calibrated(&cat->nodes[i], engine, cal);
    }
    return DB_OK;
}

static void catalog_free(struct catalog *cat)
{
    json_decref(cat->doc);
    json_decref(cat->calibrations);
    free(cat->nodes);
}

/* ---- the body ------------------------------------------------------------- */

static double number(const json_t *body, const char *key, double otherwise)
{
    const json_t *v = json_object_get(body, key);
    return json_is_number(v) ? json_number_value(v) : otherwise;
}

/* The rules between fields and against the catalog; errors named. */
static void check_body(const json_t *body, const struct catalog *cat, const char *engine,
                       const char *version, json_t *errors)
{
    bool data = json_object_get(body, "data_gib") != NULL;
    bool keys = json_object_get(body, "keys") != NULL;
    const json_t *mix = json_object_get(body, "data_types");

    if (data == keys)
        jspec_error(errors, "data_gib",
                    data ? "give the dataset as data_gib or as keys with their sizes, not both"
                         : "give the dataset as data_gib, or as keys with avg_key_bytes and "
                           "avg_value_bytes");
    if (keys && json_object_get(body, "avg_key_bytes") == NULL)
        jspec_error(errors, "avg_key_bytes", "is required with keys");
    if (keys && json_object_get(body, "avg_value_bytes") == NULL)
        jspec_error(errors, "avg_value_bytes", "is required with keys");
    if (!keys &&
        (json_object_get(body, "avg_key_bytes") || json_object_get(body, "avg_value_bytes")))
        jspec_error(errors, "keys", "is required with avg_key_bytes and avg_value_bytes");
    if (mix != NULL) {
        double sum = 0;
        const char *k;
        const json_t *v;
        json_object_foreach ((json_t *)mix, k, v) {
            sum += json_number_value(v);
        }
        if (fabs(sum - 1.0) > 0.001)
            jspec_error(errors, "data_types", "the fractions of the keys must add up to 1");
    }
    bool line = false;
    size_t i;
    json_t *l;
    json_array_foreach (cat->lines, i, l) {
        line = line || strcmp(json_string_value(json_object_get(l, "version")), version) == 0;
    }
    if (!line) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "is not a line of %s in the catalog (see GET "
                 "/v1/engine-versions)",
                 engine);
        jspec_error(errors, "engine_version", msg);
    }
    json_t *f;
    json_array_foreach (json_object_get(body, "node_families"), i, f) {
        bool known = false;
        for (size_t n = 0; n < cat->n && !known; n++)
            known = strcmp(cat->nodes[n].family, json_string_value(f)) == 0;
        if (!known) {
            char field[48];
            snprintf(field, sizeof(field), "node_families[%zu]", i);
            jspec_error(errors, field,
                        "is not a node family of the catalog (see GET "
                        "/v1/node-types)");
        }
    }
}

static void read_input(const json_t *body, const char *engine, const char *version,
                       const char **families, struct sizing_input *in)
{
    const json_t *mix = json_object_get(body, "data_types");
    const char *avail = json_string_value(json_object_get(body, "availability"));
    const char *mode = json_string_value(json_object_get(body, "cluster_mode"));

    memset(in, 0, sizeof(*in));
    in->id = json_is_string(json_object_get(body, "id"))
                 ? json_string_value(json_object_get(body, "id"))
                 : "my-cache";
    in->engine = engine;
    in->engine_version = version;
    in->has_keys = json_object_get(body, "keys") != NULL;
    in->keys = number(body, "keys", 0);
    in->avg_key_bytes = number(body, "avg_key_bytes", 0);
    in->avg_value_bytes = number(body, "avg_value_bytes", 0);
    in->data_bytes = number(body, "data_gib", 0) * 1024.0 * 1024.0 * 1024.0;
    for (int t = 0; t < SIZING_TYPE_COUNT; t++)
        in->mix[t] = mix != NULL ? number(mix, sizing_type_names[t], 0) : t == SIZING_STRINGS;
    in->ttl = json_is_true(json_object_get(body, "ttl"));
    in->growth_percent = number(body, "growth_percent", 0);
    in->horizon_months = (int)number(body, "growth_horizon_months", 12);
    in->rps = number(body, "requests_per_second", 0);
    in->read_ratio = number(body, "read_ratio", 0.8);
    in->connections = (int)number(body, "connections", 0);
    in->pipeline = (int)number(body, "pipeline", 1);
    in->read_from_replicas = json_is_true(json_object_get(body, "read_from_replicas"));
    in->availability = avail == NULL || strcmp(avail, "standard") == 0
                           ? SIZING_AVAILABILITY_STANDARD
                       : strcmp(avail, "production") == 0 ? SIZING_AVAILABILITY_PRODUCTION
                                                          : SIZING_AVAILABILITY_NONE;
    in->replicas = (int)number(body, "replicas_per_shard", -1);
    in->mode = mode == NULL || strcmp(mode, "any") == 0 ? SIZING_MODE_ANY
               : strcmp(mode, "enabled") == 0           ? SIZING_MODE_ENABLED
                                                        : SIZING_MODE_DISABLED;
    in->families = families;
    in->max_monthly_usd = number(body, "max_monthly_usd", 0);
    in->azs = (int)number(body, "azs", 0);
    in->max_options = (int)number(body, "max_options", 5);
}

void api_sizing(struct http_request *req)
{
    const json_t *body = req->json;
    const char *engine = json_string_value(json_object_get(body, "engine"));
    struct catalog cat;
    enum db_status st;

    if (engine == NULL)
        engine = "valkey";
    if ((st = catalog_load(req->app, engine, &cat)) != DB_OK) {
        http_reply_db_error(req, st);
        return;
    }
    /* No version asked: the engine's newest line some host runs, else its
     * newest. */
    const char *version = json_string_value(json_object_get(body, "engine_version"));
    const char *newest = NULL, *newest_run = NULL;
    size_t k;
    json_t *line;
    json_array_foreach (cat.lines, k, line) {
        newest = json_string_value(json_object_get(line, "version"));
        if (json_is_true(json_object_get(line, "schedulable")))
            newest_run = newest;
    }
    if (version == NULL)
        version = newest_run != NULL ? newest_run : newest;
    json_t *errors = json_array();
    check_body(body, &cat, engine, version != NULL ? version : "", errors);
    if (json_array_size(errors) > 0) {
        catalog_free(&cat);
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors,
                           "%zu field(s) of the request body are invalid", json_array_size(errors));
        return;
    }
    json_decref(errors);

    const json_t *fam = json_object_get(body, "node_families");
    const char **families = NULL;
    if (fam != NULL) {
        families = xcalloc(json_array_size(fam) + 1, sizeof(*families));
        for (size_t i = 0; i < json_array_size(fam); i++)
            families[i] = json_string_value(json_array_get(fam, i));
    }
    struct sizing_input in;
    read_input(body, engine, version, families, &in);
    json_t *out = sizing_recommend(&in, cat.nodes, cat.n);
    json_array_insert_new(
        json_object_get(out, "assumptions"), 0,
        json_pack("{s:s, s:s, s:s, s:s}", "name", "engine_version", "value", version, "source",
                  json_object_get(body, "engine_version") != NULL ? "input" : "catalog", "note",
                  json_object_get(body, "engine_version") != NULL
                      ? "as asked"
                      : "the engine's newest line a healthy host runs (else its newest)"));
    free(families);
    catalog_free(&cat);
    http_reply_json(req, 200, out);
}
