/* render_config.c -- print the engine configuration file rendered from a
 * JSON node spec, so the system tests can start real engines with it.
 *
 *     render_config SPEC.json
 *     render_config --parameters ENGINE LINE
 *
 * SPEC.json holds the fields of struct engine_config_spec by their names
 * ("engine": "valkey", "line": "8.0", "node_id", "port", "bind", "data_dir",
 * "memory_mib", ... and "parameters": {"timeout": "300"}); absent fields
 * keep engine_config_defaults(). Prints the file and exits 0, or prints
 * the error and exits 2.
 *
 * --parameters prints the allowlist entries available on ENGINE LINE as a
 * JSON array of {"name", "type", "min", "max", "values"}. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "engine_config.h"
#include "jspec.h"
#include "xalloc.h"

/* Integers that fit an int; the renderer judges the real range. */
#define INT_RANGE .has_range = true, .min = INT_MIN, .max = INT_MAX

static const struct jspec_field spec_fields[] = {
    {.name = "engine", .type = JSPEC_STRING, .required = true, .one_of = engine_kind_names},
    {.name = "line", .type = JSPEC_STRING, .required = true},
    {.name = "node_id", .type = JSPEC_STRING, .required = true},
    {.name = "port", .type = JSPEC_INTEGER, .required = true, INT_RANGE},
    {.name = "bind", .type = JSPEC_STRING, .required = true},
    {.name = "data_dir", .type = JSPEC_STRING, .required = true},
    {.name = "pidfile", .type = JSPEC_STRING, .nullable = true},
    {.name = "logfile", .type = JSPEC_STRING, .nullable = true},
    {.name = "memory_mib",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 0,
     .max = 1e15},
    {.name = "reserved_memory_percent", .type = JSPEC_INTEGER, INT_RANGE},
    {.name = "maxmemory_policy", .type = JSPEC_STRING},
    {.name = "appendonly", .type = JSPEC_BOOLEAN},
    {.name = "cluster_enabled", .type = JSPEC_BOOLEAN},
    {.name = "cluster_node_timeout_ms", .type = JSPEC_INTEGER, INT_RANGE},
    {.name = "password", .type = JSPEC_STRING, .nullable = true},
    {.name = "admin_password", .type = JSPEC_STRING, .nullable = true},
    {.name = "replication_password", .type = JSPEC_STRING, .nullable = true},
    {.name = "replicaof", .type = JSPEC_OBJECT, .nullable = true},
    {.name = "availability_zone", .type = JSPEC_STRING, .nullable = true},
    {.name = "parameters", .type = JSPEC_OBJECT},
    {0},
};

static const char *str(const json_t *body, const char *name)
{
    return json_string_value(json_object_get(body, name)); /* NULL when absent or null */
}

static int fail(const char *fmt, const char *detail)
{
    fprintf(stderr, "render_config: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
    return 2;
}

/* Copy the "parameters" object into params (values as text). Returns false
 * naming a value that is neither a string nor an integer. */
static bool read_params(const json_t *obj, struct engine_config_param *params, char **texts,
                        const char **bad)
{
    const char *key;
    json_t *value;
    size_t i = 0;

    json_object_foreach ((json_t *)obj, key, value) {
        if (json_is_string(value))
            texts[i] = xstrdup(json_string_value(value));
        else if (json_is_integer(value))
            texts[i] = xasprintf("%lld", (long long)json_integer_value(value));
        else {
            *bad = key;
            return false;
        }
        params[i].name = key;
        params[i].value = texts[i];
        i++;
    }
    return true;
}

static const char *const type_names[] = {
    [ENGINE_PARAM_INT] = "integer",
    [ENGINE_PARAM_BOOL] = "boolean",
    [ENGINE_PARAM_ENUM] = "enum",
    [ENGINE_PARAM_EVENTS] = "keyspace-events",
};

static int list_parameters(const char *engine, const char *line)
{
    enum engine_kind kind;
    const struct engine_config_param_spec *p;
    json_t *list;

    if (!engine_kind_from_name(engine, &kind))
        return fail("unknown engine \"%s\"", engine);
    if (!engine_line_parse(line, NULL, NULL))
        return fail("\"%s\" is not a line like 8.0", line);
    list = json_array();
    for (size_t i = 0; (p = engine_config_param_at(i)) != NULL; i++) {
        if (!engine_config_param_available(kind, line, p->name))
            continue;
        json_t *entry = json_pack("{s:s, s:s}", "name", p->name, "type", type_names[p->type]);
        if (p->type == ENGINE_PARAM_INT) {
            json_object_set_new(entry, "min", json_integer(p->min));
            json_object_set_new(entry, "max", json_integer(p->max));
        } else if (p->type == ENGINE_PARAM_ENUM) {
            json_t *values = json_array();
            for (const char *const *v = p->values; *v != NULL; v++)
                json_array_append_new(values, json_string(*v));
            json_object_set_new(entry, "values", values);
        } else if (p->type == ENGINE_PARAM_EVENTS) {
            json_object_set_new(entry, "values", json_string(ENGINE_CONFIG_EVENT_CLASSES));
        }
        json_array_append_new(list, entry);
    }
    json_dumpf(list, stdout, JSON_INDENT(1));
    fputc('\n', stdout);
    json_decref(list);
    return 0;
}

int main(int argc, char **argv)
{
    struct engine_config_spec spec;
    json_error_t jerr;
    json_t *body, *errors, *item, *obj;
    const char *bad = NULL;
    char err[512];
    size_t i, n = 0;
    int rc = 0;

    if (argc == 4 && strcmp(argv[1], "--parameters") == 0)
        return list_parameters(argv[2], argv[3]);
    if (argc != 2)
        return fail("usage: render_config %s", "SPEC.json | --parameters ENGINE LINE");
    body = json_load_file(argv[1], JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return fail("%s", jerr.text);
    errors = json_array();
    if (!jspec_check(body, spec_fields, errors)) {
        json_array_foreach (errors, i, item)
            fprintf(stderr, "render_config: %s: %s\n",
                    json_string_value(json_object_get(item, "field")),
                    json_string_value(json_object_get(item, "message")));
        json_decref(errors);
        json_decref(body);
        return 2;
    }
    json_decref(errors);

    engine_config_defaults(&spec);
    engine_kind_from_name(str(body, "engine"), &spec.kind);
    spec.line = str(body, "line");
    spec.node_id = str(body, "node_id");
    spec.port = (int)json_integer_value(json_object_get(body, "port"));
    spec.bind = str(body, "bind");
    spec.data_dir = str(body, "data_dir");
    spec.pidfile = str(body, "pidfile");
    spec.logfile = str(body, "logfile");
    spec.memory_mib = (uint64_t)json_integer_value(json_object_get(body, "memory_mib"));
    if ((obj = json_object_get(body, "reserved_memory_percent")) != NULL)
        spec.reserved_memory_percent = (int)json_integer_value(obj);
    if ((obj = json_object_get(body, "maxmemory_policy")) != NULL)
        spec.maxmemory_policy = json_string_value(obj);
    if ((obj = json_object_get(body, "appendonly")) != NULL)
        spec.appendonly = json_is_true(obj);
    if ((obj = json_object_get(body, "cluster_enabled")) != NULL)
        spec.cluster_enabled = json_is_true(obj);
    if ((obj = json_object_get(body, "cluster_node_timeout_ms")) != NULL)
        spec.cluster_node_timeout_ms = (int)json_integer_value(obj);
    spec.password = str(body, "password");
    spec.admin_password = str(body, "admin_password");
    spec.replication_password = str(body, "replication_password");
    if ((obj = json_object_get(body, "replicaof")) != NULL && json_is_object(obj)) {
        spec.replicaof_host = str(obj, "address");
        spec.replicaof_port = (int)json_integer_value(json_object_get(obj, "port"));
    }
    spec.availability_zone = str(body, "availability_zone");

    obj = json_object_get(body, "parameters");
    n = json_object_size(obj);
    struct engine_config_param *params = xcalloc(n, sizeof(*params));
    char **texts = xcalloc(n, sizeof(*texts));
    if (!read_params(obj, params, texts, &bad)) {
        rc = fail("parameters.%s: must be a string or an integer", bad);
    } else {
        spec.params = params;
        spec.n_params = n;
        char *text = engine_config_render(&spec, err, sizeof(err));
        if (text == NULL) {
            rc = fail("%s", err);
        } else {
            fputs(text, stdout);
            free(text);
        }
    }
    for (i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(params);
    json_decref(body);
    return rc;
}
