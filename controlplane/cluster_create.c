/* cluster_create.c -- POST (and PUT of a new) cluster: placed by the
 * scheduler's rules, stored with its shards, nodes and sealed engine
 * password, and its create operation queued, in one transaction -- nothing
 * is left allocated when it cannot be placed. */
#include "clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "crypto.h"
#include "log.h"
#include "ops.h"
#include "restore.h"
#include "runner.h"
#include "scheduler.h"
#include "store.h"
#include "xalloc.h"

#define PASSWORD_BYTES 32

struct create_call {
    struct app *app;
    const json_t *spec;
    const char *spec_text, *password;
    const struct cluster_create_how *how;
    bool created;
    char op_id[STORE_UUID_SIZE];
    struct problem *p;
};

static const char *spec_str(const json_t *spec, const char *key)
{
    return json_string_value(json_object_get(spec, key));
}

static int spec_int(const json_t *spec, const char *key)
{
    return (int)json_integer_value(json_object_get(spec, key));
}

enum db_status cluster_store_shards(struct db_conn *conn, const json_t *spec, int first_shard,
                                    int shards, const struct store_placement *pl,
                                    const int *host_of)
{
    const char *id = spec_str(spec, "id");
    int per = 1 + spec_int(spec, "replicas_per_shard");
    bool split = first_shard == 0 && strcmp(spec_str(spec, "cluster_mode"), "enabled") == 0;
    enum db_status st = DB_OK;

    for (int s = 0; s < shards && st == DB_OK; s++) {
        char shard_id[STORE_UUID_SIZE];
        int first = -1, last = -1;
        if (split)
            cspec_split_slots(shards, s, &first, &last);
        if ((st = store_shard_insert(conn, id, first_shard + s, first, last, shard_id)) != DB_OK)
            break;
        for (int k = 0; k < per && st == DB_OK; k++) {
            struct store_node_placed n = {id,
                                          shard_id,
                                          pl->hosts[host_of[s * per + k]].id,
                                          spec_str(spec, "engine"),
                                          spec_str(spec, "engine_version"),
                                          spec_str(spec, "node_type"),
                                          k};
            st = store_node_insert(conn, &n);
        }
    }
    for (size_t i = 0; i < pl->nhosts && st == DB_OK; i++) {
        bool used = false;
        for (int n = 0; n < shards * per && !used; n++)
            used = (size_t)host_of[n] == i;
        if (used)
            st = store_host_assign_ports(conn, pl->hosts[i].id);
    }
    return st;
}

/* A restore's operation names its snapshot by id, locked until the
 * operation is queued: a DELETE of it waits, then sees the restore. */
static enum db_status restore_context(struct db_conn *conn, struct create_call *c, json_t *context)
{
    const char *named =
        json_string_value(json_object_get(json_object_get(c->spec, "restore_from"), "snapshot_id"));
    struct store_snapshot_locked s;
    if (named == NULL)
        return DB_OK;
    enum db_status st = store_snapshot_lock(conn, named, &s);
    if (st == DB_OK && strcmp(s.status, "available") != 0)
        st = DB_NOT_FOUND;
    if (st == DB_NOT_FOUND) {
        problem_set(c->p, PROBLEM_SNAPSHOT_NOT_AVAILABLE,
                    "snapshot %s is no longer available to restore", named);
        return DB_REFUSED;
    }
    if (st == DB_OK)
        json_object_set_new(context, "restore_from", json_string(s.id));
    return st;
}

/* The cluster's rows, its operation (create, unless how names another),
 * its events and how's own rows. */
static enum db_status store_cluster(struct db_conn *conn, struct create_call *c,
                                    const struct store_placement *pl, const int *host_of)
{
    const struct op_kind *kind = c->how->kind != NULL ? c->how->kind : &op_cluster_create;
    const char *id = spec_str(c->spec, "id");
    char *sealed = cluster_seal_secret(c->app, id, c->password),
         *lookup = cluster_auth_lookup(c->app, c->password, strlen(c->password));
    enum db_status st = store_cluster_insert(conn, id, c->spec_text, sealed, lookup);
    free(sealed);
    free(lookup);
    if (st == DB_CONFLICT) { /* created meanwhile by another request */
        problem_set(c->p, PROBLEM_CLUSTER_ALREADY_EXISTS,
                    "cluster %s exists with another spec; change it with PATCH", id);
        return DB_REFUSED;
    }
    json_t *context = c->how->context != NULL ? json_deep_copy(c->how->context) : json_object();
    if (st == DB_OK)
        st = restore_context(conn, c, context);
    if (st != DB_OK ||
        (st = cluster_store_shards(conn, c->spec, 0, spec_int(c->spec, "num_shards"), pl,
                                   host_of)) != DB_OK ||
        (st = store_operation_queue(conn, id, kind->name, context, c->op_id)) != DB_OK) {
        json_decref(context);
        return st;
    }
    json_decref(context);
    char detail[160];
    snprintf(detail, sizeof(detail), "{\"shards\": %d, \"replicas_per_shard\": %d}",
             spec_int(c->spec, "num_shards"), spec_int(c->spec, "replicas_per_shard"));
    st = store_event_add(conn, id, c->op_id, "ClusterCreating", "info", "creating the cluster",
                         detail);
    if (st == DB_OK)
        st = store_events_nodes_placed(conn, id, c->op_id, 0);
    if (st == DB_OK && c->how->also != NULL)
        st = c->how->also(conn, c->op_id, c->how->arg);
    c->created = st == DB_OK;
    return st;
}

static enum db_status create_fn(struct db_conn *conn, void *arg)
{
    struct create_call *c = arg;
    const json_t *spec = c->spec;
    const char *id = spec_str(spec, "id");
    struct store_placement pl;
    bool exists, same;
    char err[512];

    problem_clear(c->p);
    c->created = false;
    /* Same id: the same spec is a retried POST, another spec a conflict. */
    enum db_status st = store_cluster_same_spec(conn, id, c->spec_text, &exists, &same);
    if (st != DB_OK || same)
        return st == DB_OK ? DB_REFUSED : st; /* nothing to do: roll back */
    if (exists) {
        problem_set(c->p, PROBLEM_CLUSTER_ALREADY_EXISTS,
                    "cluster %s exists with another spec; change it with PATCH", id);
        return DB_REFUSED;
    }
    st = store_placement_read(conn, spec_str(spec, "engine"), spec_str(spec, "engine_version"),
                              spec_str(spec, "node_type"), &pl);
    if (st != DB_OK)
        return st;
    struct sched_request req = {.shards = spec_int(spec, "num_shards"),
                                .replicas = spec_int(spec, "replicas_per_shard"),
                                .vcpus = pl.vcpus,
                                .memory_mib = pl.memory_mib,
                                .multi_az = json_is_true(json_object_get(spec, "multi_az")),
                                .only_host = c->how->host_id};
    int *host_of = xcalloc((size_t)req.shards * (size_t)(1 + req.replicas), sizeof(int));
    if (!sched_place(pl.hosts, pl.nhosts, &req, host_of, err, sizeof(err))) {
        problem_set(c->p, PROBLEM_INSUFFICIENT_CAPACITY, "%s", err);
        st = DB_REFUSED; /* roll back: nothing is allocated */
    } else {
        st = store_cluster(conn, c, &pl, host_of);
    }
    free(host_of);
    store_placement_free(&pl);
    return st;
}

bool cluster_create(struct app *app, const json_t *spec, const char *auth_token, bool *created,
                    char *op_id, struct problem *p)
{
    static const struct cluster_create_how plain = {0};
    return cluster_create_with(app, spec, auth_token, &plain, created, op_id, p);
}

bool cluster_create_with(struct app *app, const json_t *spec, const char *auth_token,
                         const struct cluster_create_how *how, bool *created, char *op_id,
                         struct problem *p)
{
    char generated[64];
    struct create_call c = {.app = app, .spec = spec, .how = how, .p = p};

    if (!app->have_secret_key)
        return problem_set(p, PROBLEM_SECRET_KEY_UNAVAILABLE,
                           "cairnd has no secret key to seal engine passwords with: start it "
                           "with --secret-key-file");
    if (auth_token == NULL) {
        unsigned char raw[PASSWORD_BYTES];
        crypto_random(raw, sizeof(raw));
        crypto_b64url(raw, sizeof(raw), generated);
        auth_token = generated;
    }
    c.password = auth_token;
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    c.spec_text = text;
    enum db_status st = db_tx(app->db, DB_READ_COMMITTED, create_fn, &c);
    free(text);
    *created = c.created;
    snprintf(op_id, STORE_UUID_SIZE, "%s", c.created ? c.op_id : "");
    if (st == DB_REFUSED && !p->set)
        return true; /* the same cluster exists: a retried request */
    if (!problem_db(p, st))
        return false;
    log_info("cluster placed", "cluster=%s operation=%s", spec_str(spec, "id"), c.op_id);
    if (app->runner != NULL)
        runner_poke(app->runner);
    return true;
}

struct catalog_call {
    const json_t *body;
    bool version_ok, node_type_ok;
};

static enum db_status catalog_fn(struct db_conn *conn, void *arg)
{
    struct catalog_call *c = arg;
    return store_catalog_has(conn, spec_str(c->body, "engine"), spec_str(c->body, "engine_version"),
                             spec_str(c->body, "node_type"), &c->version_ok, &c->node_type_ok);
}

json_t *cluster_spec_check(struct app *app, const json_t *given, struct problem *p)
{
    json_t *errors = json_array();
    json_t *snapshot = NULL;
    /* A restore's body takes what it leaves out from its snapshot. */
    json_t *body = restore_fill(app, given, &snapshot, errors, p);
    if (body == NULL) {
        json_decref(errors);
        return NULL;
    }
    json_t *spec = cspec_normalize(body, errors);
    enum db_status st;

    /* The catalog is checked whenever the fields are there to check, so one
     * reply names every problem of the body. */
    struct catalog_call cat = {body, true, true};
    if (json_is_string(json_object_get(body, "engine")) &&
        json_is_string(json_object_get(body, "engine_version")) &&
        json_is_string(json_object_get(body, "node_type")) &&
        (st = db_run(app->db, catalog_fn, &cat)) != DB_OK) {
        json_decref(spec);
        json_decref(errors);
        json_decref(body);
        json_decref(snapshot);
        (void)problem_db(p, st);
        return NULL;
    }
    /* A version cannot be looked up for an engine that is itself wrong. */
    const char *engine = spec_str(body, "engine");
    if (!cat.version_ok && engine != NULL && engine_kind_known(engine))
        jspec_error(errors, "engine_version",
                    "is not a version of this engine in the catalog (see GET /v1/engine-versions)");
    if (!cat.node_type_ok)
        jspec_error(errors, "node_type", "is not in the catalog (see GET /v1/node-types)");
    json_decref(body);
    if (spec == NULL || json_array_size(errors) > 0) {
        json_decref(spec);
        json_decref(snapshot);
        problem_set(p, PROBLEM_VALIDATION_FAILED, "%zu field(s) of the request body are invalid",
                    json_array_size(errors));
        p->errors = errors;
        return NULL;
    }
    json_decref(errors);
    if (snapshot != NULL && !restore_check(app, spec, snapshot, p)) {
        json_decref(spec);
        spec = NULL;
    }
    json_decref(snapshot);
    return spec;
}
