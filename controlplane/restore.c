/* restore.c -- the request side of a restore (restore.h). */
#include "restore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "engine_config.h"
#include "jspec.h"
#include "sizing.h"
#include "store.h"

struct get_call {
    const char *id;
    char *doc;
};

static enum db_status get_fn(struct db_conn *conn, void *arg)
{
    struct get_call *c = arg;
    free(c->doc);
    c->doc = NULL;
    return store_snapshot_get(conn, c->id, &c->doc);
}

/* What a restore takes from its snapshot when the body does not say. */
static const char *const inherited[] = {
    "engine",     "engine_version",     "node_type", "cluster_mode",
    "num_shards", "replicas_per_shard", NULL};

json_t *restore_fill(struct app *app, const json_t *body, json_t **snapshot, json_t *errors,
                     struct problem *p)
{
    const char *id =
        json_string_value(json_object_get(json_object_get(body, "restore_from"), "snapshot_id"));
    *snapshot = NULL;
    if (id == NULL)
        return json_incref((json_t *)body);
    struct get_call c = {id, NULL};
    enum db_status st = db_run(app->db, get_fn, &c);
    if (st == DB_NOT_FOUND) {
        jspec_error(errors, "restore_from.snapshot_id",
                    "names no snapshot (see GET /v1/snapshots)");
        return json_incref((json_t *)body);
    }
    if (!problem_db(p, st))
        return NULL;
    *snapshot = json_loads(c.doc, 0, NULL);
    free(c.doc);
    json_t *filled = json_deep_copy(body);
    bool disabled =
        json_is_string(json_object_get(body, "cluster_mode")) &&
        strcmp(json_string_value(json_object_get(body, "cluster_mode")), "disabled") == 0;
    for (int i = 0; inherited[i] != NULL; i++) {
        if (json_object_get(filled, inherited[i]) != NULL)
            continue;
        /* Into cluster mode disabled, one shard, whatever the snapshot had. */
        if (strcmp(inherited[i], "num_shards") == 0 && disabled)
            continue;
        json_t *v = json_object_get(*snapshot, inherited[i]);
        if (v != NULL)
            json_object_set(filled, inherited[i], v);
    }
    return filled;
}

/* Whether an engine can load data saved by another: the same engine, the
 * same or a newer line; or valkey loading redis's up to 7.2. */
static bool restore_engine_ok(const char *to_engine, const char *to_line, const char *from_engine,
                              const char *from_line)
{
    if (!engine_line_parse(to_line, NULL, NULL) || !engine_line_parse(from_line, NULL, NULL))
        return false;
    if (strcmp(to_engine, from_engine) == 0)
        return engine_line_compare(to_line, from_line) >= 0;
    return strcmp(to_engine, "valkey") == 0 && strcmp(from_engine, "redis") == 0 &&
           engine_line_compare(from_line, "7.2") <= 0;
}

struct memory_call {
    const char *node_type;
    long long bytes;
};

static enum db_status memory_fn(struct db_conn *conn, void *arg)
{
    struct memory_call *c = arg;
    return store_node_type_memory(conn, c->node_type, &c->bytes);
}

/* A database other than 0 with keys in any shard, or -1. */
static int other_database(const json_t *snapshot)
{
    size_t i;
    const json_t *shard;
    json_array_foreach (json_object_get(snapshot, "shards"), i, shard) {
        const char *db;
        const json_t *n;
        json_object_foreach ((json_t *)json_object_get(shard, "databases"), db, n) {
            if (strcmp(db, "0") != 0 && json_integer_value(n) > 0)
                return atoi(db);
        }
    }
    return -1;
}

bool restore_check(struct app *app, const json_t *spec, const json_t *snapshot, struct problem *p)
{
    const char *name = json_string_value(json_object_get(snapshot, "name"));
    const char *status = json_string_value(json_object_get(snapshot, "status"));
    const char *engine = json_string_value(json_object_get(spec, "engine"));
    const char *line = json_string_value(json_object_get(spec, "engine_version"));
    const char *from = json_string_value(json_object_get(snapshot, "engine"));
    const char *from_line = json_string_value(json_object_get(snapshot, "engine_version"));
    const char *mode = json_string_value(json_object_get(spec, "cluster_mode"));
    json_t *errors = json_array();
    char msg[256];

    if (status == NULL || strcmp(status, "available") != 0) {
        json_decref(errors);
        problem_set(p, PROBLEM_SNAPSHOT_NOT_AVAILABLE,
                    "snapshot %s is %s: only an available snapshot is restored", name,
                    status != NULL ? status : "unknown");
        return false;
    }
    if (!restore_engine_ok(engine, line, from, from_line)) {
        snprintf(msg, sizeof(msg),
                 "must be the snapshot's engine (%s %s) or a newer one: an engine cannot load "
                 "data saved by a newer or another engine",
                 from, from_line);
        jspec_error(errors, "engine_version", msg);
    }
    int db = other_database(snapshot);
    if (db >= 0 && mode != NULL && strcmp(mode, "enabled") == 0) {
        snprintf(msg, sizeof(msg),
                 "cannot be enabled: the snapshot has keys in database %d, and cluster mode "
                 "has database 0 only",
                 db);
        jspec_error(errors, "cluster_mode", msg);
    }
    if (json_array_size(errors) > 0) {
        problem_set(p, PROBLEM_VALIDATION_FAILED, "%zu field(s) of the request body are invalid",
                    json_array_size(errors));
        p->errors = errors;
        return false;
    }
    json_decref(errors);

    /* The data spreads evenly over the shards (slots in cluster mode); each
     * keeps the reserve free, as a resize does. */
    struct memory_call m = {json_string_value(json_object_get(spec, "node_type")), 0};
    if (!problem_db(p, db_run(app->db, memory_fn, &m)))
        return false;
    long long data = json_integer_value(json_object_get(snapshot, "memory_bytes"));
    long long shards = json_integer_value(json_object_get(spec, "num_shards"));
    long long usable = (long long)((double)m.bytes * (1.0 - SIZING_RESERVED_FRACTION));
    if (shards > 0 && data / shards > usable) {
        problem_set(p, PROBLEM_INSUFFICIENT_MEMORY,
                    "snapshot %s holds %lld bytes of data, %lld per shard over %lld shard(s), and "
                    "%s keeps %lld of its %lld bytes for data (%.0f%% is reserved): choose a "
                    "larger node type or more shards",
                    name, data, data / shards, shards, m.node_type, usable, m.bytes,
                    SIZING_RESERVED_FRACTION * 100.0);
        return false;
    }
    return true;
}
