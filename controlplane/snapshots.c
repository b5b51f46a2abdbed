/* snapshots.c -- backups asked for, deleted, scheduled and expired
 * (snapshots.h). */
#include "snapshots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_spec.h"
#include "log.h"
#include "runner.h"
#include "snapshot_store.h"
#include "store.h"
#include "xalloc.h"

const struct jspec_field snapshot_create_spec[] = {
    {.name = "name",
     .type = JSPEC_STRING,
     .min_len = 1,
     .max_len = SNAPSHOT_NAME_MAX,
     .check = snapshot_check_name},
    {0},
};

bool snapshot_check_name(const json_t *value, char *msg, size_t msgsize)
{
    /* The rule of cluster ids, longer: a default name is the cluster's id
     * and a time. */
    return cspec_check_id(value, msg, msgsize);
}

void snapshot_key(const char *snapshot_id, int shard, char out[SNAPSHOT_KEY_MAX])
{
    snprintf(out, SNAPSHOT_KEY_MAX, "%.36s/shard-%04d.rdb.gz", snapshot_id, shard);
}

/* A snapshot's default name: "<cluster id>-<yyyymmdd-hhmmss>", or for an
 * automatic one (at most one a day) "automatic-<cluster id>-<yyyymmdd-hhmm>";
 * either fits SNAPSHOT_NAME_MAX whatever the cluster's id. */
static void default_name(bool automatic, const char *cluster_id, char *out, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    char when[32];
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), automatic ? "%Y%m%d-%H%M" : "%Y%m%d-%H%M%S", &tm);
    snprintf(out, size, "%s%s-%s", automatic ? "automatic-" : "", cluster_id, when);
}

enum db_status snapshot_begin(struct app *app, struct db_conn *conn, const char *cluster_id,
                              const char *name, const char *source, int retention_days,
                              const char *kind, char *snapshot_id, char *op_id, struct problem *p)
{
    char named[SNAPSHOT_NAME_MAX + 32];
    bool taken = false;

    if (app->snapshots == NULL) {
        problem_set(p, PROBLEM_NO_SNAPSHOT_STORE,
                    "cairnd has nowhere to keep snapshots: start it with --snapshot-store DIR "
                    "or s3://BUCKET/PREFIX");
        return DB_REFUSED;
    }
    if (name == NULL) {
        default_name(strcmp(source, "automatic") == 0, cluster_id, named, sizeof(named));
        name = named;
    }
    enum db_status st = store_snapshot_name_taken(conn, name, &taken);
    if (st == DB_OK && taken) {
        problem_set(p, PROBLEM_SNAPSHOT_NAME_TAKEN, "a snapshot named %s exists", name);
        return DB_REFUSED;
    }
    struct store_snapshot_new row = {name, cluster_id, source, retention_days};
    if (st == DB_OK)
        st = store_snapshot_insert(conn, &row, snapshot_id);
    if (st == DB_CONFLICT) {
        problem_set(p, PROBLEM_SNAPSHOT_NAME_TAKEN, "a snapshot named %s exists", name);
        return DB_REFUSED;
    }
    json_t *context = json_pack("{s:s}", "snapshot_id", snapshot_id);
    if (st == DB_OK)
        st = store_operation_queue(conn, cluster_id, kind, context, op_id);
    json_decref(context);
    if (st == DB_CONFLICT)
        return problem_busy(p, cluster_id);
    if (st == DB_OK)
        st = store_snapshot_set_operation(conn, snapshot_id, op_id);
    if (st != DB_OK)
        return st;
    json_t *detail =
        json_pack("{s:s, s:s, s:s}", "snapshot_id", snapshot_id, "name", name, "source", source);
    char *text = json_dumps(detail, JSON_COMPACT);
    char *message = xasprintf("snapshot %s is being taken", name);
    st = store_event_add(conn, cluster_id, op_id, "SnapshotCreating", "info", message, text);
    free(message);
    free(text);
    json_decref(detail);
    return st;
}

struct create_call {
    struct app *app;
    const char *cluster_id, *name;
    char *snapshot_id;
    char op_id[STORE_UUID_SIZE];
    struct problem *p;
};

static enum db_status create_fn(struct db_conn *conn, void *arg)
{
    struct create_call *c = arg;
    struct store_cluster_locked row = {0};

    problem_clear(c->p);
    enum db_status st = store_cluster_lock(conn, c->cluster_id, &row);
    json_decref(row.spec);
    if (st == DB_NOT_FOUND)
        return problem_no_cluster(c->p, c->cluster_id);
    if (st == DB_OK && row.busy)
        return problem_busy(c->p, c->cluster_id);
    if (st != DB_OK)
        return st;
    return snapshot_begin(c->app, conn, c->cluster_id, c->name, "manual", 0, "snapshot",
                          c->snapshot_id, c->op_id, c->p);
}

bool snapshot_create(struct app *app, const char *cluster_id, const char *name, char *snapshot_id,
                     struct problem *p)
{
    struct create_call c = {app, cluster_id, name, snapshot_id, "", p};
    if (!problem_db(p, db_tx(app->db, DB_READ_COMMITTED, create_fn, &c)))
        return false;
    if (app->runner != NULL)
        runner_poke(app->runner);
    return true;
}

/* ---- deleting ------------------------------------------------------------------- */

struct delete_call {
    const char *id_or_name;
    char *snapshot_id;
    struct problem *p;
};

static enum db_status delete_fn(struct db_conn *conn, void *arg)
{
    struct delete_call *c = arg;
    struct store_snapshot_locked s;

    problem_clear(c->p);
    enum db_status st = store_snapshot_lock(conn, c->id_or_name, &s);
    if (st == DB_NOT_FOUND) {
        problem_set(c->p, PROBLEM_SNAPSHOT_NOT_FOUND, "%s does not exist", c->id_or_name);
        return DB_REFUSED;
    }
    if (st != DB_OK)
        return st;
    snprintf(c->snapshot_id, STORE_UUID_SIZE, "%s", s.id);
    if (strcmp(s.status, "creating") == 0) {
        problem_set(c->p, PROBLEM_SNAPSHOT_NOT_AVAILABLE,
                    "snapshot %s is still being taken: delete it once it is available or "
                    "has failed",
                    c->id_or_name);
        return DB_REFUSED;
    }
    if (s.restoring) {
        problem_set(c->p, PROBLEM_SNAPSHOT_NOT_AVAILABLE,
                    "a cluster is being restored from snapshot %s: delete it once that is done",
                    c->id_or_name);
        return DB_REFUSED;
    }
    if (strcmp(s.status, "deleting") == 0)
        return DB_OK;
    return store_snapshot_set_status(conn, s.id, "deleting");
}

bool snapshot_delete(struct app *app, const char *id_or_name, char *snapshot_id, struct problem *p)
{
    struct delete_call c = {id_or_name, snapshot_id, p};
    return problem_db(p, db_tx(app->db, DB_READ_COMMITTED, delete_fn, &c));
}

/* ---- removing files --------------------------------------------------------------- */

static enum db_status to_remove_fn(struct db_conn *conn, void *arg)
{
    json_t **out = arg;
    json_decref(*out);
    *out = NULL;
    return store_snapshots_to_remove(conn, out);
}

static enum db_status removed_fn(struct db_conn *conn, void *arg)
{
    return store_snapshot_removed(conn, arg);
}

/* Every file of one snapshot: the whole objects and unfinished uploads. */
static bool remove_one(struct app *app, const json_t *snapshot)
{
    const char *id = json_string_value(json_object_get(snapshot, "id"));
    size_t i;
    const json_t *shard;
    char key[SNAPSHOT_KEY_MAX], err[512];
    bool ok = true;

    json_array_foreach (json_object_get(snapshot, "shards"), i, shard) {
        const char *upload = json_string_value(json_object_get(shard, "upload_id"));
        snapshot_key(id, (int)json_integer_value(json_object_get(shard, "shard")), key);
        if (!snapshot_store_delete(app->snapshots, key, err, sizeof(err)) ||
            (upload != NULL &&
             !snapshot_store_abort(app->snapshots, key, upload, err, sizeof(err)))) {
            log_warn("a snapshot file could not be removed", "snapshot=%s key=%s error=\"%s\"", id,
                     key, err);
            ok = false;
        }
    }
    return ok;
}

void snapshot_remove_files(struct app *app)
{
    json_t *list = NULL;
    size_t i;
    const json_t *snapshot;

    if (app->snapshots == NULL || db_run(app->db, to_remove_fn, &list) != DB_OK)
        return;
    json_array_foreach (list, i, snapshot) {
        const char *id = json_string_value(json_object_get(snapshot, "id"));
        if (remove_one(app, snapshot) &&
            db_tx(app->db, DB_READ_COMMITTED, removed_fn, (void *)id) == DB_OK)
            log_info("snapshot files removed", "snapshot=%s status=%s", id,
                     json_string_value(json_object_get(snapshot, "status")));
    }
    json_decref(list);
}

/* ---- the schedule --------------------------------------------------------------- */

struct tick_call {
    struct app *app;
    int started;
};

/* Begin the automatic snapshot of one cluster whose window is open and
 * has not had one since it opened. */
static enum db_status begin_automatic(struct db_conn *conn, struct tick_call *c, const json_t *due)
{
    const char *cluster_id = json_string_value(json_object_get(due, "cluster_id"));
    char snapshot_id[STORE_UUID_SIZE], op_id[STORE_UUID_SIZE];
    struct store_cluster_locked row = {0};
    struct problem p = {0};

    enum db_status st = store_cluster_lock(conn, cluster_id, &row);
    json_decref(row.spec);
    if (st != DB_OK || row.busy)
        return st == DB_NOT_FOUND ? DB_OK : st; /* gone, or busy: next tick */
    st = snapshot_begin(c->app, conn, cluster_id, NULL, "automatic",
                        (int)json_integer_value(json_object_get(due, "retention_days")), "snapshot",
                        snapshot_id, op_id, &p);
    if (st == DB_REFUSED) {
        log_warn("automatic snapshot not begun", "cluster=%s reason=\"%s\"", cluster_id, p.detail);
        problem_clear(&p);
        return DB_OK;
    }
    if (st == DB_OK) {
        c->started++;
        log_info("snapshot window open: automatic snapshot begins", "cluster=%s snapshot=%s",
                 cluster_id, snapshot_id);
    }
    return st;
}

static enum db_status tick_fn(struct db_conn *conn, void *arg)
{
    struct tick_call *c = arg;
    json_t *clusters = NULL;
    size_t i;
    const json_t *due;
    long long now = (long long)time(NULL) + c->app->cfg.test_clock_offset_s;

    c->started = 0; /* a retried transaction counts again */
    enum db_status st = store_snapshots_expire(conn, c->app->cfg.test_clock_offset_s);
    if (st == DB_OK)
        st = store_snapshots_automatic(conn, &clusters);
    json_array_foreach (clusters, i, due) {
        int start, end;
        char msg[128];
        const json_t *last = json_object_get(due, "last");
        if (st != DB_OK || json_is_true(json_object_get(due, "busy")) ||
            !cspec_daily_window_parse(json_string_value(json_object_get(due, "window")), &start,
                                      &end, msg, sizeof(msg)))
            continue;
        long long opened = cspec_daily_window_opened(start, end, now);
        if (opened < 0)
            continue;
        /* The last one is compared by the real clock, by which it was taken. */
        opened -= c->app->cfg.test_clock_offset_s;
        if (!json_is_integer(last) || json_integer_value(last) < opened)
            st = begin_automatic(conn, c, due);
    }
    json_decref(clusters);
    return st;
}

void snapshot_schedule_tick(struct app *app)
{
    struct tick_call c = {app, 0};
    if (app->snapshots == NULL)
        return;
    if (db_tx(app->db, DB_READ_COMMITTED, tick_fn, &c) == DB_OK && c.started > 0 &&
        app->runner != NULL)
        runner_poke(app->runner);
    snapshot_remove_files(app);
}
