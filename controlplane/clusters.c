/* clusters.c -- the cluster transactions and the facts operations need. */
#include "clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_spec.h"
#include "crypto.h"
#include "jspec.h"
#include "log.h"
#include "runner.h"
#include "scheduler.h"
#include "secretbox.h"
#include "store.h"
#include "upgrades.h"
#include "xalloc.h"

/* pg_advisory_xact_lock key for placements ("place" in ASCII): two creates
 * must not both count the same free capacity. */
#define PLACEMENT_LOCK_KEY "482184995685"

#define PASSWORD_BYTES 32

long long cluster_now_s(void)
{
    return (long long)time(NULL);
}

long long cluster_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- secrets ------------------------------------------------------------- */

char *cluster_open_secret(struct app *app, const char *cluster_id, const char *hex)
{
    size_t n = strlen(hex) / 2;
    if (!app->have_secret_key || n <= SECRETBOX_OVERHEAD)
        return NULL;
    unsigned char *box = xmalloc(n);
    if (!crypto_unhex(hex, n, box)) {
        free(box);
        return NULL;
    }
    char *plain = xcalloc(n - SECRETBOX_OVERHEAD + 1, 1);
    if (!secretbox_open(app->secret_key, box, n, cluster_id, (unsigned char *)plain)) {
        log_error("cannot open a cluster's engine password: wrong secret key file?", "cluster=%s",
                  cluster_id);
        free(plain);
        plain = NULL;
    }
    free(box);
    return plain;
}

/* Seal password for cluster_id as "\x<hex>" bytea text (caller frees). */
static char *seal_secret(struct app *app, const char *cluster_id, const char *password)
{
    size_t len = strlen(password), boxlen = len + SECRETBOX_OVERHEAD;
    unsigned char *box = xmalloc(boxlen);
    char *text = xmalloc(2 * boxlen + 3);

    secretbox_seal(app->secret_key, password, len, cluster_id, box);
    strcpy(text, "\\x");
    crypto_hex(box, boxlen, text + 2);
    free(box);
    return text;
}

/* ---- nodes for the operations ------------------------------------------- */

static const struct db_stmt load_nodes = {
    "SELECT n.id, coalesce(n.host_id::text, ''), coalesce(h.address, ''), coalesce(n.port, 0),"
    "  s.index, n.ordinal, coalesce(lower(s.slots[1]), -1), coalesce(upper(s.slots[1]) - 1, -1),"
    "  coalesce(n.process_state, ''), coalesce(h.status = 'lost', false), coalesce(n.role, ''),"
    "  coalesce(h.az, ''), n.engine, n.engine_version, coalesce(n.running_version, '')"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id LEFT JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 AND n.desired_state <> 'deleted'"
    " ORDER BY s.index, n.ordinal"};

static const struct db_stmt load_cluster = {
    "SELECT coalesce(spec ->> 'cluster_mode', 'enabled') = 'enabled',"
    "  encode(auth_secret, 'hex') FROM clusters WHERE id = $1"};

struct load_call {
    const char *id;
    struct cluster_nodes *out;
    bool cluster_mode;
    char *secret_hex;
};

static enum db_status load_fn(struct db_conn *conn, void *arg)
{
    struct load_call *c = arg;
    const char *params[1] = {c->id};
    enum db_status st;
    PGresult *res = db_query(conn, &load_cluster, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    c->cluster_mode = PQgetvalue(res, 0, 0)[0] == 't';
    free(c->secret_hex);
    c->secret_hex = PQgetisnull(res, 0, 1) ? NULL : xstrdup(PQgetvalue(res, 0, 1));
    PQclear(res);
    if ((res = db_query(conn, &load_nodes, 1, params, &st)) == NULL)
        return st;
    cluster_nodes_free(c->out);
    c->out->count = (size_t)PQntuples(res);
    c->out->items = xcalloc(c->out->count + 1, sizeof(struct cluster_node));
    for (size_t i = 0; i < c->out->count; i++) {
        struct cluster_node *n = &c->out->items[i];
        int r = (int)i;
        snprintf(n->id, sizeof(n->id), "%s", PQgetvalue(res, r, 0));
        snprintf(n->host_id, sizeof(n->host_id), "%s", PQgetvalue(res, r, 1));
        snprintf(n->address, sizeof(n->address), "%s", PQgetvalue(res, r, 2));
        n->port = atoi(PQgetvalue(res, r, 3));
        n->shard = atoi(PQgetvalue(res, r, 4));
        n->ordinal = atoi(PQgetvalue(res, r, 5));
        n->slot_first = atoi(PQgetvalue(res, r, 6));
        n->slot_last = atoi(PQgetvalue(res, r, 7));
        snprintf(n->process_state, sizeof(n->process_state), "%s", PQgetvalue(res, r, 8));
        n->host_lost = PQgetvalue(res, r, 9)[0] == 't';
        snprintf(n->role, sizeof(n->role), "%s", PQgetvalue(res, r, 10));
        snprintf(n->az, sizeof(n->az), "%s", PQgetvalue(res, r, 11));
        snprintf(n->engine, sizeof(n->engine), "%s", PQgetvalue(res, r, 12));
        snprintf(n->engine_version, sizeof(n->engine_version), "%s", PQgetvalue(res, r, 13));
        snprintf(n->running_version, sizeof(n->running_version), "%s", PQgetvalue(res, r, 14));
    }
    PQclear(res);
    return DB_OK;
}

bool cluster_nodes_load(struct app *app, const char *cluster_id, struct cluster_nodes *out,
                        char **password, bool *cluster_mode, char *err, size_t errsize)
{
    struct load_call call = {.id = cluster_id, .out = out};
    enum db_status st = db_run(app->db, load_fn, &call);

    *password = NULL;
    if (st != DB_OK) {
        snprintf(err, errsize, "could not read cluster %s from the database", cluster_id);
        free(call.secret_hex);
        return false;
    }
    *cluster_mode = call.cluster_mode;
    if (call.secret_hex != NULL) {
        *password = cluster_open_secret(app, cluster_id, call.secret_hex);
        free(call.secret_hex);
        if (*password == NULL) {
            snprintf(err, errsize, "cannot open the engine password of cluster %s", cluster_id);
            cluster_nodes_free(out);
            return false;
        }
    }
    return true;
}

const struct cluster_node *cluster_nodes_find(const struct cluster_nodes *nodes, const char *id)
{
    for (size_t i = 0; id != NULL && i < nodes->count; i++) {
        if (strcmp(nodes->items[i].id, id) == 0)
            return &nodes->items[i];
    }
    return NULL;
}

void cluster_nodes_free(struct cluster_nodes *nodes)
{
    free(nodes->items);
    nodes->items = NULL;
    nodes->count = 0;
}

/* ---- milestones ------------------------------------------------------------ */

static const struct db_stmt cluster_event = {
    "INSERT INTO events (cluster_id, operation_id, type, severity, message, detail)"
    " VALUES ($1, $2::uuid, $3, $4, $5, coalesce($6::jsonb, '{}'))"};

enum db_status cluster_add_event(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                 const char *type, const char *severity, const char *message,
                                 const char *detail)
{
    const char *params[6] = {cluster_id, op_id, type, severity, message, detail};
    enum db_status st;
    PQclear(db_query(conn, &cluster_event, 6, params, &st));
    return st;
}

static const struct db_stmt set_available = {
    "UPDATE clusters SET status = 'available', observed_generation = generation,"
    "  engine_version_actual = (SELECT max(running_version) FROM nodes WHERE cluster_id = $1),"
    "  updated_at = now() WHERE id = $1"};

static const struct db_stmt set_status = {
    "UPDATE clusters SET status = $2, updated_at = now() WHERE id = $1"};

enum db_status cluster_mark_available(struct db_conn *conn, const char *cluster_id,
                                      const char *op_id)
{
    const char *params[1] = {cluster_id};
    enum db_status st;
    PQclear(db_query(conn, &set_available, 1, params, &st));
    if (st != DB_OK)
        return st;
    return cluster_add_event(conn, cluster_id, op_id, "ClusterAvailable", "info",
                             "the cluster is available", NULL);
}

enum db_status cluster_mark_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                   const char *code, const char *error, const char *status)
{
    const char *params[2] = {cluster_id, status};
    enum db_status st = DB_OK;
    char *detail = NULL;
    json_t *d = json_pack("{s:s, s:s}", "code", code, "message", error);

    if (status != NULL)
        PQclear(db_query(conn, &set_status, 2, params, &st));
    if (st == DB_OK) {
        detail = json_dumps(d, JSON_COMPACT);
        st = cluster_add_event(conn, cluster_id, op_id, "OperationFailed", "error", error, detail);
    }
    free(detail);
    json_decref(d);
    return st;
}

/* ---- delete steps ------------------------------------------------------------ */

static const struct db_stmt mark_deleted = {
    "UPDATE nodes SET desired_state = 'deleted', updated_at = now()"
    " WHERE cluster_id = $1 AND desired_state <> 'deleted'"};

static const struct db_stmt drop_lost = {
    "DELETE FROM nodes n USING hosts h WHERE n.cluster_id = $1 AND h.id = n.host_id"
    " AND h.status = 'lost'"};

static const struct db_stmt count_nodes = {"SELECT count(*) FROM nodes WHERE cluster_id = $1"};

static const struct db_stmt drop = {"DELETE FROM clusters WHERE id = $1"};

static enum db_status exec1(struct db_conn *conn, const struct db_stmt *stmt, const char *id)
{
    const char *params[1] = {id};
    enum db_status st;
    PQclear(db_query(conn, stmt, 1, params, &st));
    return st;
}

enum db_status cluster_nodes_mark_deleted(struct db_conn *conn, const char *cluster_id)
{
    return exec1(conn, &mark_deleted, cluster_id);
}

struct count_call {
    const char *id;
    int left;
};

static enum db_status remaining_fn(struct db_conn *conn, void *arg)
{
    struct count_call *c = arg;
    const char *params[1] = {c->id};
    enum db_status st = exec1(conn, &drop_lost, c->id);
    if (st != DB_OK)
        return st;
    PGresult *res = db_query(conn, &count_nodes, 1, params, &st);
    if (res == NULL)
        return st;
    c->left = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return DB_OK;
}

int cluster_nodes_remaining(struct app *app, const char *cluster_id)
{
    struct count_call c = {cluster_id, -1};
    return db_tx(app->db, DB_READ_COMMITTED, remaining_fn, &c) == DB_OK ? c.left : -1;
}

enum db_status cluster_drop(struct db_conn *conn, const char *cluster_id, const char *op_id)
{
    enum db_status st = exec1(conn, &drop, cluster_id);
    if (st != DB_OK)
        return st;
    return cluster_add_event(conn, cluster_id, op_id, "ClusterDeleted", "info",
                             "the cluster was deleted", NULL);
}

/* ---- create ---------------------------------------------------------------- */

static const struct db_stmt existing_spec = {
    "SELECT spec = $2::jsonb FROM clusters WHERE id = $1 FOR UPDATE"};

static const struct db_stmt placement_lock = {"SELECT pg_advisory_xact_lock(" PLACEMENT_LOCK_KEY
                                              ")"};

static const struct db_stmt node_type_shape = {
    "SELECT vcpus, round(memory_gib * 1024)::bigint FROM node_types WHERE name = $1"};

/* Every host with what it has left, and whether it can run engine/line. */
static const struct db_stmt placement_hosts = {
    "SELECT h.id, h.az, h.vcpus - coalesce(a.vcpus, 0), h.memory_mib - coalesce(a.memory_mib, 0),"
    "  h.status = 'healthy' AND EXISTS (SELECT 1 FROM host_engines e"
    "    WHERE e.host_id = h.id AND e.engine = $1 AND e.version = $2)"
    " FROM hosts h LEFT JOIN ("
    "   SELECT n.host_id, sum(t.vcpus) AS vcpus, round(sum(t.memory_gib) * 1024)::bigint"
    "     AS memory_mib"
    "   FROM nodes n JOIN node_types t ON t.name = n.node_type"
    "   WHERE n.desired_state <> 'deleted' GROUP BY n.host_id) a ON a.host_id = h.id"
    " ORDER BY h.name"};

static const struct db_stmt insert_cluster = {
    "INSERT INTO clusters (id, spec, auth_secret, status) VALUES ($1, $2::jsonb, $3::bytea,"
    " 'creating')"};

static const struct db_stmt insert_shard = {
    "INSERT INTO shards (cluster_id, index, name, slots) VALUES ($1, $2::int,"
    " lpad(($2::int + 1)::text, 4, '0'),"
    " CASE WHEN $3::int < 0 THEN '{}'::int4range[]"
    "      ELSE ARRAY[int4range($3::int, $4::int, '[]')] END) RETURNING id"};

static const struct db_stmt insert_node = {
    "INSERT INTO nodes (cluster_id, shard_id, host_id, engine, engine_version, node_type, ordinal)"
    " VALUES ($1, $2::uuid, $3::uuid, $4, $5, $6, $7::int)"};

static const struct db_stmt insert_create_op = {
    "INSERT INTO operations (cluster_id, kind) VALUES ($1, 'create') RETURNING id"};

static const struct db_stmt placed_events = {
    "INSERT INTO events (cluster_id, operation_id, host_id, type, message, detail)"
    " SELECT n.cluster_id, $2::uuid, n.host_id, 'NodePlaced',"
    "   format('node %s of shard %s placed on %s in %s, port %s', n.id, s.name, h.name, h.az,"
    "          n.port),"
    "   json_build_object('node_id', n.id, 'shard', s.name, 'host_id', h.id, 'az', h.az,"
    "                     'port', n.port, 'placed_as', CASE WHEN n.ordinal = 0 THEN 'primary'"
    "                     ELSE 'replica' END)"
    " FROM nodes n JOIN shards s ON s.id = n.shard_id JOIN hosts h ON h.id = n.host_id"
    " WHERE n.cluster_id = $1 ORDER BY s.index, n.ordinal"};

struct create_call {
    struct app *app;
    const json_t *spec;
    const char *spec_text;
    const char *password;
    enum cluster_create_result result;
    char *err;
    size_t errsize;
    char op_id[40];
};

struct placement {
    struct sched_host *hosts;
    size_t nhosts;
    PGresult *rows; /* owns the strings hosts point into */
};

static enum db_status read_hosts(struct db_conn *conn, const char *engine, const char *line,
                                 struct placement *p)
{
    const char *params[2] = {engine, line};
    enum db_status st;

    p->rows = db_query(conn, &placement_hosts, 2, params, &st);
    if (p->rows == NULL)
        return st;
    p->nhosts = (size_t)PQntuples(p->rows);
    p->hosts = xcalloc(p->nhosts + 1, sizeof(*p->hosts));
    for (size_t i = 0; i < p->nhosts; i++) {
        int r = (int)i;
        p->hosts[i].id = PQgetvalue(p->rows, r, 0);
        p->hosts[i].az = PQgetvalue(p->rows, r, 1);
        p->hosts[i].free_vcpus = atoi(PQgetvalue(p->rows, r, 2));
        p->hosts[i].free_memory_mib = atoll(PQgetvalue(p->rows, r, 3));
        p->hosts[i].eligible = PQgetvalue(p->rows, r, 4)[0] == 't';
    }
    return DB_OK;
}

static const char *spec_str(const json_t *spec, const char *key)
{
    return json_string_value(json_object_get(spec, key));
}

static int spec_int(const json_t *spec, const char *key)
{
    return (int)json_integer_value(json_object_get(spec, key));
}

/* Store shards and nodes as placed; host_of as sched_place() filled it. */
static enum db_status store_layout(struct db_conn *conn, struct create_call *c,
                                   const struct placement *p, const int *host_of)
{
    const json_t *spec = c->spec;
    const char *id = spec_str(spec, "id");
    int shards = spec_int(spec, "num_shards"), per = 1 + spec_int(spec, "replicas_per_shard");
    bool cluster_mode = strcmp(spec_str(spec, "cluster_mode"), "enabled") == 0;
    enum db_status st = DB_OK;

    for (int s = 0; s < shards && st == DB_OK; s++) {
        char index[16], first[16], last[16], ordinal[16], shard_id[40];
        int f = -1, l = -1;
        if (cluster_mode)
            cspec_split_slots(shards, s, &f, &l);
        snprintf(index, sizeof(index), "%d", s);
        snprintf(first, sizeof(first), "%d", f);
        snprintf(last, sizeof(last), "%d", l);
        const char *sp[4] = {id, index, first, last};
        PGresult *res = db_query(conn, &insert_shard, 4, sp, &st);
        if (res == NULL)
            break;
        snprintf(shard_id, sizeof(shard_id), "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        for (int k = 0; k < per && st == DB_OK; k++) {
            snprintf(ordinal, sizeof(ordinal), "%d", k);
            const char *np[7] = {id,
                                 shard_id,
                                 p->hosts[host_of[s * per + k]].id,
                                 spec_str(spec, "engine"),
                                 spec_str(spec, "engine_version"),
                                 spec_str(spec, "node_type"),
                                 ordinal};
            PQclear(db_query(conn, &insert_node, 7, np, &st));
        }
    }
    /* Ports: the lowest free ones of each host used. */
    for (size_t i = 0; i < p->nhosts && st == DB_OK; i++) {
        bool used = false;
        for (int n = 0; n < shards * per && !used; n++)
            used = (size_t)host_of[n] == i;
        if (used)
            st = store_host_assign_ports(conn, p->hosts[i].id);
    }
    return st;
}

static enum db_status create_fn(struct db_conn *conn, void *arg)
{
    struct create_call *c = arg;
    const json_t *spec = c->spec;
    const char *id = spec_str(spec, "id");
    const char *exist_params[2] = {id, c->spec_text};
    struct placement p = {0};
    int *host_of = NULL;
    enum db_status st;

    /* Same id: the same spec is a retried POST, another spec a conflict. */
    PGresult *res = db_query(conn, &existing_spec, 2, exist_params, &st);
    if (res == NULL)
        return st;
    if (PQntuples(res) == 1) {
        c->result = PQgetvalue(res, 0, 0)[0] == 't' ? CLUSTER_EXISTS_SAME : CLUSTER_EXISTS_OTHER;
        PQclear(res);
        return DB_NOT_FOUND; /* roll back: nothing to do */
    }
    PQclear(res);

    PQclear(db_query(conn, &placement_lock, 0, NULL, &st));
    if (st != DB_OK)
        return st;
    const char *nt_params[1] = {spec_str(spec, "node_type")};
    if ((res = db_query(conn, &node_type_shape, 1, nt_params, &st)) == NULL)
        return st;
    struct sched_request req = {.shards = spec_int(spec, "num_shards"),
                                .replicas = spec_int(spec, "replicas_per_shard"),
                                .vcpus = atoi(PQgetvalue(res, 0, 0)),
                                .memory_mib = atoll(PQgetvalue(res, 0, 1)),
                                .multi_az = json_is_true(json_object_get(spec, "multi_az"))};
    PQclear(res);
    if ((st = read_hosts(conn, spec_str(spec, "engine"), spec_str(spec, "engine_version"), &p)) !=
        DB_OK)
        return st;
    host_of = xcalloc((size_t)req.shards * (size_t)(1 + req.replicas), sizeof(int));
    if (!sched_place(p.hosts, p.nhosts, &req, host_of, c->err, c->errsize)) {
        c->result = CLUSTER_NO_CAPACITY;
        st = DB_NOT_FOUND; /* roll back: nothing is allocated */
        goto out;
    }
    char *sealed = seal_secret(c->app, id, c->password);
    const char *cp[3] = {id, c->spec_text, sealed};
    PQclear(db_query(conn, &insert_cluster, 3, cp, &st));
    free(sealed);
    if (st == DB_CONFLICT) {
        c->result = CLUSTER_EXISTS_OTHER; /* created meanwhile by another request */
        st = DB_NOT_FOUND;
        goto out;
    }
    if (st != DB_OK || (st = store_layout(conn, c, &p, host_of)) != DB_OK)
        goto out;
    const char *op_params[1] = {id};
    if ((res = db_query(conn, &insert_create_op, 1, op_params, &st)) == NULL)
        goto out;
    snprintf(c->op_id, sizeof(c->op_id), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    char detail[160];
    snprintf(detail, sizeof(detail), "{\"shards\": %d, \"replicas_per_shard\": %d}", req.shards,
             req.replicas);
    if ((st = cluster_add_event(conn, id, c->op_id, "ClusterCreating", "info",
                                "creating the cluster", detail)) != DB_OK)
        goto out;
    const char *ev_params[2] = {id, c->op_id};
    PQclear(db_query(conn, &placed_events, 2, ev_params, &st));
    c->result = CLUSTER_CREATED;
out:
    free(host_of);
    free(p.hosts);
    PQclear(p.rows);
    return st;
}

enum cluster_create_result cluster_create(struct app *app, const json_t *spec,
                                          const char *auth_token, enum db_status *db_status,
                                          char *err, size_t errsize)
{
    char generated[64];
    struct create_call c = {.app = app, .spec = spec, .err = err, .errsize = errsize};

    if (!app->have_secret_key) {
        snprintf(err, errsize,
                 "cairnd has no secret key to seal engine passwords with: start it "
                 "with --secret-key-file");
        return CLUSTER_NO_KEY;
    }
    if (auth_token == NULL) {
        unsigned char raw[PASSWORD_BYTES];
        crypto_random(raw, sizeof(raw));
        crypto_b64url(raw, sizeof(raw), generated);
        auth_token = generated;
    }
    c.password = auth_token;
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    c.spec_text = text;
    *db_status = db_tx(app->db, DB_READ_COMMITTED, create_fn, &c);
    free(text);
    if (*db_status == DB_NOT_FOUND)
        return c.result;
    if (*db_status != DB_OK)
        return CLUSTER_DB_ERROR;
    log_info("cluster placed", "cluster=%s operation=%s", spec_str(spec, "id"), c.op_id);
    if (app->runner != NULL)
        runner_poke(app->runner);
    return CLUSTER_CREATED;
}

/* ---- delete request ---------------------------------------------------------- */

static const struct db_stmt lock_cluster = {"SELECT status FROM clusters WHERE id = $1 FOR UPDATE"};

static const struct db_stmt insert_delete_op = {
    "INSERT INTO operations (cluster_id, kind) VALUES ($1, 'delete') RETURNING id"};

struct delete_call {
    const char *id;
    enum cluster_delete_result result;
};

static enum db_status delete_fn(struct db_conn *conn, void *arg)
{
    struct delete_call *c = arg;
    const char *params[2] = {c->id, "deleting"};
    enum db_status st;
    PGresult *res = db_query(conn, &lock_cluster, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        c->result = CLUSTER_DELETE_NOT_FOUND;
        return DB_NOT_FOUND;
    }
    PQclear(res);
    if ((res = db_query(conn, &insert_delete_op, 1, params, &st)) == NULL) {
        if (st == DB_CONFLICT) {
            c->result = CLUSTER_DELETE_BUSY; /* operations_one_active */
            return DB_NOT_FOUND;
        }
        return st;
    }
    char op_id[40];
    snprintf(op_id, sizeof(op_id), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    PQclear(db_query(conn, &set_status, 2, params, &st));
    if (st != DB_OK)
        return st;
    c->result = CLUSTER_DELETE_QUEUED;
    return cluster_add_event(conn, c->id, op_id, "ClusterDeleting", "info", "deleting the cluster",
                             NULL);
}

enum cluster_delete_result cluster_delete(struct app *app, const char *cluster_id,
                                          enum db_status *db_status)
{
    struct delete_call c = {cluster_id, CLUSTER_DELETE_DB_ERROR};
    *db_status = db_tx(app->db, DB_READ_COMMITTED, delete_fn, &c);
    if (*db_status == DB_OK && app->runner != NULL)
        runner_poke(app->runner);
    if (*db_status == DB_OK || *db_status == DB_NOT_FOUND)
        return c.result;
    return CLUSTER_DELETE_DB_ERROR;
}

static const struct db_stmt sealed_secret = {
    "SELECT encode(auth_secret, 'hex') FROM clusters WHERE id = $1"};

struct secret_call {
    const char *id;
    char *hex; /* NULL: the cluster has no password */
};

static enum db_status secret_fn(struct db_conn *conn, void *arg)
{
    struct secret_call *c = arg;
    const char *params[1] = {c->id};
    enum db_status st;
    PGresult *res = db_query(conn, &sealed_secret, 1, params, &st);

    if (res == NULL)
        return st;
    st = PQntuples(res) == 1 ? DB_OK : DB_NOT_FOUND;
    free(c->hex);
    c->hex = st == DB_OK && !PQgetisnull(res, 0, 0) ? xstrdup(PQgetvalue(res, 0, 0)) : NULL;
    PQclear(res);
    return st;
}

char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status)
{
    struct secret_call call = {cluster_id, NULL};
    char *password = NULL;

    *status = db_run(app->db, secret_fn, &call);
    if (*status == DB_OK && call.hex != NULL &&
        (password = cluster_open_secret(app, cluster_id, call.hex)) == NULL)
        *status = DB_ERROR; /* sealed with another key, or altered */
    free(call.hex);
    return password;
}

/* ---- modify --------------------------------------------------------------- */

static const struct db_stmt lock_spec = {
    "SELECT spec::text, generation, EXISTS (SELECT 1 FROM operations o"
    "  WHERE o.cluster_id = c.id AND o.status IN ('pending', 'running'))"
    " FROM clusters c WHERE id = $1 FOR UPDATE"};

/* New parameters are applied by an apply_parameters operation: the cluster
 * is modifying, and pending_changes says what is on its way. */
static const struct db_stmt store_spec = {
    "UPDATE clusters SET spec = $2::jsonb, generation = generation + 1, updated_at = now(),"
    "  status = CASE WHEN $3::boolean THEN 'modifying' ELSE status END,"
    "  pending_changes = CASE WHEN $3::boolean THEN pending_changes || jsonb_build_object("
    "    'parameters', jsonb_build_object('values', $2::jsonb -> 'parameters',"
    "      'applies', 'now, where the engine can change them live'))"
    "    ELSE pending_changes END"
    " WHERE id = $1"};

static const struct db_stmt insert_apply_op = {
    "INSERT INTO operations (cluster_id, kind, context) VALUES ($1, 'apply_parameters',"
    " jsonb_build_object('parameters', $2::jsonb -> 'parameters',"
    "   'removed', (SELECT coalesce(jsonb_agg(k), '[]'::jsonb)"
    "     FROM jsonb_object_keys($3::jsonb -> 'parameters') k"
    "     WHERE NOT ($2::jsonb -> 'parameters') ? k)))"};

struct modify_call {
    struct app *app;
    struct cluster_modify_out *out;
    bool apply_now, allow_combined;
    const char *id;
    const json_t *body;
    bool replace;
    long long if_match;
    json_t *errors;
    char *err;
    size_t errsize;
    enum cluster_modify_result result;
    bool queued; /* an operation was queued */
};

static bool is_upgrade_field(const char *name)
{
    return strcmp(name, "engine") == 0 || strcmp(name, "engine_version") == 0;
}

/* Check each changed field; fills errors or err. An engine upgrade is
 * handled by the caller. */
static enum cluster_modify_result classify(const json_t *changed, json_t *errors, char *err,
                                           size_t errsize)
{
    size_t i, used = 0;
    json_t *f;

    err[0] = '\0';
    json_array_foreach (changed, i, f) {
        const char *name = json_string_value(f);
        if (is_upgrade_field(name))
            continue;
        switch (cspec_field_change(name)) {
        case CSPEC_APPLIED:
            break;
        case CSPEC_IMMUTABLE:
            jspec_error(errors, name, "cannot be changed after the cluster is created");
            break;
        case CSPEC_NOT_YET:
            used += (size_t)snprintf(err + used, used < errsize ? errsize - used : 0, "%s%s",
                                     used ? ", " : "", name);
            break;
        }
    }
    if (json_array_size(errors) > 0)
        return CLUSTER_MODIFY_INVALID;
    return err[0] != '\0' ? CLUSTER_MODIFY_NOT_YET : CLUSTER_MODIFIED;
}

/* A shard with a replica in its primary's AZ, which multi_az forbids. */
static const struct db_stmt multi_az_breach = {
    "SELECT s.name, h.az FROM shards s"
    " JOIN nodes p ON p.shard_id = s.id AND p.role = 'primary' AND p.desired_state <> 'deleted'"
    " JOIN hosts h ON h.id = p.host_id"
    " WHERE s.cluster_id = $1 AND EXISTS (SELECT 1 FROM nodes r JOIN hosts rh ON rh.id = r.host_id"
    "   WHERE r.shard_id = s.id AND r.id <> p.id AND r.desired_state <> 'deleted'"
    "   AND rh.az = h.az)"
    " ORDER BY s.index LIMIT 1"};

/* Other changes a request makes besides an engine upgrade; false if none. */
static bool combined_with(const json_t *changed, char *err, size_t errsize)
{
    static const char *const kept_apart[] = {"node_type", "num_shards", "replicas_per_shard",
                                             "parameters"};
    size_t i, used = 0;
    json_t *f;

    err[0] = '\0';
    json_array_foreach (changed, i, f) {
        for (size_t k = 0; k < sizeof(kept_apart) / sizeof(kept_apart[0]); k++)
            if (strcmp(json_string_value(f), kept_apart[k]) == 0)
                used += (size_t)snprintf(err + used, used < errsize ? errsize - used : 0, "%s%s",
                                         used ? ", " : "", kept_apart[k]);
    }
    return err[0] != '\0';
}

/* The catalog's path, then the cluster's state. */
static enum db_status check_upgrade(struct db_conn *conn, struct modify_call *c,
                                    const json_t *stored, const json_t *next, json_t **downtime)
{
    const char *from_engine = json_string_value(json_object_get(stored, "engine"));
    const char *from_version = json_string_value(json_object_get(stored, "engine_version"));
    const char *to_engine = json_string_value(json_object_get(next, "engine"));
    const char *to_version = json_string_value(json_object_get(next, "engine_version"));
    char allowed[256];
    bool ok = false;
    enum db_status st = upgrade_path_allowed(conn, from_engine, from_version, to_engine, to_version,
                                             &ok, allowed, sizeof(allowed));
    if (st != DB_OK)
        return st;
    if (!ok) {
        char *msg =
            xasprintf("cannot go from %s %s to %s %s: %s%s", from_engine, from_version, to_engine,
                      to_version, allowed[0] ? "the upgrades allowed are to " : "it is the newest",
                      allowed[0] ? allowed : "; engines are never downgraded");
        jspec_error(c->errors, "engine_version", msg);
        free(msg);
        c->result = CLUSTER_MODIFY_INVALID;
        return DB_NOT_FOUND;
    }
    struct upgrade_refusal refusal;
    if ((st = upgrade_check(conn, c->id, to_engine, to_version, &refusal, downtime)) != DB_OK)
        return st;
    if (refusal.code[0] != '\0') {
        snprintf(c->out->code, sizeof(c->out->code), "%s", refusal.code);
        snprintf(c->err, c->errsize, "%s", refusal.detail);
        c->result = CLUSTER_MODIFY_REFUSED;
        return DB_NOT_FOUND;
    }
    return DB_OK;
}

static enum db_status modify_fn(struct db_conn *conn, void *arg)
{
    struct modify_call *c = arg;
    const char *params[3] = {c->id, NULL, NULL};
    enum db_status st;
    PGresult *res = db_query(conn, &lock_spec, 1, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        c->result = CLUSTER_MODIFY_NOT_FOUND;
        return DB_NOT_FOUND;
    }
    json_t *stored = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
    long long generation = atoll(PQgetvalue(res, 0, 1));
    bool busy = PQgetvalue(res, 0, 2)[0] == 't';
    PQclear(res);
    json_t *target = c->replace ? json_deep_copy(c->body) : cspec_merge_patch(stored, c->body);
    json_t *changed = json_array(), *next = NULL;
    if (json_object_get(target, "id") == NULL)
        json_object_set_new(target, "id", json_string(c->id));
    st = DB_NOT_FOUND; /* every refusal below rolls back */
    if (c->if_match >= 0 && c->if_match != generation) {
        c->result = CLUSTER_MODIFY_STALE;
        snprintf(c->err, c->errsize, "the cluster is at generation %lld, not %lld", generation,
                 c->if_match);
        goto out;
    }
    if (cspec_auth_token(c->body) != NULL) {
        c->result = CLUSTER_MODIFY_NOT_YET;
        snprintf(c->err, c->errsize, "auth_token");
        goto out;
    }
    json_object_del(target, "auth_token");
    if ((next = cspec_normalize(target, c->errors)) == NULL) {
        c->result = CLUSTER_MODIFY_INVALID;
        goto out;
    }
    cspec_diff(stored, next, changed);
    bool upgrade = false;
    size_t k;
    json_t *field;
    json_array_foreach (changed, k, field) {
        upgrade |= is_upgrade_field(json_string_value(field));
    }
    if (upgrade && !c->allow_combined && combined_with(changed, c->err, c->errsize)) {
        c->result = CLUSTER_MODIFY_COMBINED;
        goto out;
    }
    if ((c->result = classify(changed, c->errors, c->err, c->errsize)) != CLUSTER_MODIFIED)
        goto out;
    if (json_array_size(changed) == 0) {
        st = DB_OK;
        goto out;
    }
    if (busy) {
        c->result = CLUSTER_MODIFY_BUSY;
        goto out;
    }
    if (json_is_true(json_object_get(next, "multi_az")) &&
        !json_is_true(json_object_get(stored, "multi_az"))) {
        PGresult *shared = db_query(conn, &multi_az_breach, 1, params, &st);
        if (shared == NULL)
            goto out;
        bool breach = PQntuples(shared) > 0;
        if (breach)
            snprintf(c->err, c->errsize,
                     "multi_az needs every replica outside its primary's AZ, and shard %s has one "
                     "in %s with its primary; replace that node first",
                     PQgetvalue(shared, 0, 0), PQgetvalue(shared, 0, 1));
        PQclear(shared);
        if (breach) {
            c->result = CLUSTER_MODIFY_PLACEMENT;
            st = DB_NOT_FOUND;
            goto out;
        }
        st = DB_NOT_FOUND;
    }
    json_t *downtime = NULL;
    if (upgrade && (st = check_upgrade(conn, c, stored, next, &downtime)) != DB_OK)
        goto out;
    bool params_changed = false;
    size_t i;
    json_t *f;
    json_array_foreach (changed, i, f) {
        /* An upgrade restarts every node with the new spec's config. */
        params_changed |= !upgrade && strcmp(json_string_value(f), "parameters") == 0;
    }
    char *text = json_dumps(next, JSON_COMPACT | JSON_SORT_KEYS);
    char *before = json_dumps(stored, JSON_COMPACT);
    params[1] = text;
    params[2] = params_changed ? "true" : "false";
    PQclear(db_query(conn, &store_spec, 3, params, &st));
    if (st == DB_OK && params_changed) {
        const char *op_params[3] = {c->id, text, before};
        PQclear(db_query(conn, &insert_apply_op, 3, op_params, &st));
        c->queued = true;
    }
    if (st == DB_OK && upgrade) {
        json_t *from = json_pack("{s:O, s:O}", "engine", json_object_get(stored, "engine"),
                                 "engine_version", json_object_get(stored, "engine_version"));
        json_t *to = json_pack("{s:O, s:O}", "engine", json_object_get(next, "engine"),
                               "engine_version", json_object_get(next, "engine_version"));
        st = upgrade_queue(c->app, conn, c->id, from, to, c->apply_now,
                           json_string_value(json_object_get(next, "maintenance_window")), downtime,
                           c->out->op_id);
        json_decref(from);
        json_decref(to);
        c->queued = c->apply_now;
        c->result = CLUSTER_MODIFY_UPGRADE;
    }
    json_decref(downtime);
    free(before);
    free(text);
    if (st == DB_OK) {
        char *names = json_dumps(changed, JSON_COMPACT);
        char *detail = xasprintf("{\"changed\": %s}", names);
        st = cluster_add_event(conn, c->id, NULL, "ClusterModified", "info",
                               "the cluster's spec changed", detail);
        free(names);
        free(detail);
    }
out:
    json_decref(stored);
    json_decref(target);
    json_decref(next);
    json_decref(changed);
    return st;
}

enum cluster_modify_result cluster_modify(struct app *app, const char *cluster_id,
                                          const json_t *body, bool replace, long long if_match,
                                          json_t *errors, enum db_status *db_status, char *err,
                                          size_t errsize, struct cluster_modify_out *out)
{
    /* The request's flags are not part of the spec. */
    json_t *patch = json_deep_copy(body);
    json_t *apply = json_object_get(patch, "apply_immediately");
    json_t *combined = json_object_get(patch, "allow_combined_changes");
    if (apply != NULL && !json_is_boolean(apply))
        jspec_error(errors, "apply_immediately", "must be true or false");
    if (combined != NULL && !json_is_boolean(combined))
        jspec_error(errors, "allow_combined_changes", "must be true or false");
    if (json_array_size(errors) > 0) {
        json_decref(patch);
        *db_status = DB_OK;
        return CLUSTER_MODIFY_INVALID;
    }
    struct modify_call c = {app,
                            out,
                            apply == NULL || json_is_true(apply),
                            json_is_true(combined),
                            cluster_id,
                            patch,
                            replace,
                            if_match,
                            errors,
                            err,
                            errsize,
                            CLUSTER_MODIFY_DB_ERROR};
    json_object_del(patch, "apply_immediately");
    json_object_del(patch, "allow_combined_changes");
    memset(out, 0, sizeof(*out));
    *db_status = db_tx(app->db, DB_READ_COMMITTED, modify_fn, &c);
    json_decref(patch);
    if (*db_status == DB_OK && c.queued && app->runner != NULL)
        runner_poke(app->runner);
    if (*db_status == DB_OK || *db_status == DB_NOT_FOUND)
        return c.result;
    return CLUSTER_MODIFY_DB_ERROR;
}

/* ---- apply_parameters ------------------------------------------------------ */

static const struct db_stmt parameters_done = {
    "UPDATE clusters SET status = 'available', updated_at = now(),"
    "  pending_changes = CASE WHEN jsonb_array_length($2::jsonb) = 0"
    "    THEN pending_changes - 'parameters'"
    "    ELSE pending_changes || jsonb_build_object('parameters', jsonb_build_object("
    "      'values', spec -> 'parameters', 'restart_needed', $2::jsonb,"
    "      'applies', 'at each node''s next restart')) END"
    " WHERE id = $1"};

enum db_status cluster_parameters_applied(struct db_conn *conn, const char *cluster_id,
                                          const char *op_id, const json_t *restart_needed)
{
    char *text = json_dumps(restart_needed, JSON_COMPACT);
    const char *params[2] = {cluster_id, text};
    enum db_status st;
    PQclear(db_query(conn, &parameters_done, 2, params, &st));
    if (st == DB_OK) {
        char *detail = xasprintf("{\"restart_needed\": %s}", text);
        st = cluster_add_event(conn, cluster_id, op_id, "ParametersApplied", "info",
                               "the cluster's parameters were applied", detail);
        free(detail);
    }
    free(text);
    return st;
}

/* ---- observed roles ----------------------------------------------------------- */

static const struct db_stmt record_role = {
    "UPDATE nodes SET role = $2, observed_role = $2,"
    "  master_link_status = CASE WHEN $2 = 'replica' THEN 'up' END,"
    "  loading = false, sync_in_progress = false, reported_at = now(), role_observed_at = now()"
    " WHERE id = $1::uuid"};

static enum db_status roles_fn(struct db_conn *conn, void *arg)
{
    const struct cluster_nodes *nodes = arg;
    enum db_status st = DB_OK;

    for (size_t i = 0; i < nodes->count && st == DB_OK; i++) {
        const char *params[2] = {nodes->items[i].id,
                                 nodes->items[i].ordinal == 0 ? "primary" : "replica"};
        PQclear(db_query(conn, &record_role, 2, params, &st));
    }
    return st;
}

bool cluster_roles_observed(struct app *app, const struct cluster_nodes *nodes)
{
    return db_tx(app->db, DB_READ_COMMITTED, roles_fn, (void *)nodes) == DB_OK;
}

/* ---- planned failover ----------------------------------------------------------- */

static const struct db_stmt failover_target = {
    "SELECT s.index, c.spec ->> 'cluster_mode',"
    "  EXISTS (SELECT 1 FROM nodes n WHERE n.shard_id = s.id AND n.role = 'replica'"
    "    AND n.process_state = 'running' AND n.master_link_status = 'up'"
    "    AND NOT coalesce(n.loading, false) AND NOT coalesce(n.sync_in_progress, false))"
    " FROM clusters c JOIN shards s ON s.cluster_id = c.id"
    " WHERE c.id = $1 AND ($2::text IS NULL OR s.name = $2) ORDER BY s.index"};

static const struct db_stmt cluster_exists = {"SELECT 1 FROM clusters WHERE id = $1 FOR UPDATE"};

static const struct db_stmt insert_failover_op = {
    "INSERT INTO operations (cluster_id, kind, context) VALUES ($1, 'failover',"
    " jsonb_build_object('shard', $2::int)) RETURNING id"};

struct failover_call {
    const char *id, *shard;
    char *op_id;
    enum cluster_failover_result result;
};

static enum db_status failover_fn(struct db_conn *conn, void *arg)
{
    struct failover_call *c = arg;
    const char *params[2] = {c->id, c->shard};
    enum db_status st;
    PGresult *res = db_query(conn, &cluster_exists, 1, params, &st);

    if (res == NULL)
        return st;
    bool exists = PQntuples(res) == 1;
    PQclear(res);
    if (!exists) {
        c->result = CLUSTER_FAILOVER_NOT_FOUND;
        return DB_NOT_FOUND;
    }
    if ((res = db_query(conn, &failover_target, 2, params, &st)) == NULL)
        return st;
    int rows = PQntuples(res);
    bool cluster_mode = rows > 0 && strcmp(PQgetvalue(res, 0, 1), "disabled") != 0;
    if (rows != 1 || (cluster_mode && c->shard == NULL)) {
        PQclear(res);
        c->result = CLUSTER_FAILOVER_NO_SHARD;
        return DB_NOT_FOUND;
    }
    char index[16];
    snprintf(index, sizeof(index), "%s", PQgetvalue(res, 0, 0));
    bool in_sync = PQgetvalue(res, 0, 2)[0] == 't';
    PQclear(res);
    if (!in_sync) {
        c->result = CLUSTER_FAILOVER_NO_REPLICA;
        return DB_NOT_FOUND;
    }
    const char *op_params[2] = {c->id, index};
    if ((res = db_query(conn, &insert_failover_op, 2, op_params, &st)) == NULL) {
        if (st == DB_CONFLICT) {
            c->result = CLUSTER_FAILOVER_BUSY;
            return DB_NOT_FOUND;
        }
        return st;
    }
    snprintf(c->op_id, 40, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    c->result = CLUSTER_FAILOVER_QUEUED;
    return cluster_add_event(conn, c->id, c->op_id, "FailoverRequested", "info",
                             "a planned failover was requested", NULL);
}

enum cluster_failover_result cluster_failover(struct app *app, const char *cluster_id,
                                              const char *shard, char *op_id,
                                              enum db_status *db_status)
{
    struct failover_call c = {cluster_id, shard, op_id, CLUSTER_FAILOVER_DB_ERROR};
    *db_status = db_tx(app->db, DB_READ_COMMITTED, failover_fn, &c);
    if (*db_status == DB_OK && app->runner != NULL)
        runner_poke(app->runner);
    if (*db_status == DB_OK || *db_status == DB_NOT_FOUND)
        return c.result;
    return CLUSTER_FAILOVER_DB_ERROR;
}

static const struct db_stmt swap_roles = {
    "UPDATE nodes SET role = CASE WHEN id = $2::uuid THEN 'primary' ELSE 'replica' END,"
    "  observed_role = CASE WHEN id = $2::uuid THEN 'primary' ELSE 'replica' END,"
    "  master_link_status = CASE WHEN id = $2::uuid THEN NULL ELSE master_link_status END,"
    "  reported_at = now(), role_observed_at = now()"
    " WHERE id IN ($1::uuid, $2::uuid)"};

enum db_status cluster_failover_done(struct db_conn *conn, const char *cluster_id,
                                     const char *op_id, const char *previous, const char *target,
                                     long long pause_ms)
{
    const char *params[2] = {previous, target};
    enum db_status st;

    PQclear(db_query(conn, &swap_roles, 2, params, &st));
    if (st != DB_OK)
        return st;
    char *detail = xasprintf("{\"from\": \"%s\", \"to\": \"%s\", \"write_pause_ms\": %lld, "
                             "\"planned\": true}",
                             previous, target, pause_ms);
    char *message = xasprintf("planned failover done; writes paused for %lld ms", pause_ms);
    st = cluster_add_event(conn, cluster_id, op_id, "FailoverComplete", "info", message, detail);
    free(detail);
    free(message);
    return st;
}

/* ---- node replacement ------------------------------------------------------------ */

static const struct db_stmt dead_node = {
    "SELECT n.shard_id, n.node_type, n.engine, n.engine_version, coalesce(h.address, ''),"
    "  coalesce(n.port, 0), n.desired_state, coalesce((c.spec ->> 'multi_az')::boolean, false),"
    "  s.index"
    " FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN shards s ON s.id = n.shard_id"
    " LEFT JOIN hosts h ON h.id = n.host_id WHERE n.id = $1::uuid AND n.cluster_id = $2"
    " FOR UPDATE OF n"};

static const struct db_stmt shard_mates = {
    "SELECT n.host_id, h.az, n.role FROM nodes n JOIN hosts h ON h.id = n.host_id"
    " WHERE n.shard_id = $1::uuid AND n.id <> $2::uuid AND n.desired_state <> 'deleted'"};

/* The new node is a replica from the start; while cairnd joins it (the
 * operation's limits add up to under 5 minutes), its own reading of the role
 * wins over reports: role_observed_at is in the future until the join
 * records it. */
static const struct db_stmt insert_replacement = {
    "INSERT INTO nodes (cluster_id, shard_id, host_id, engine, engine_version, node_type, ordinal,"
    "  role, role_observed_at)"
    " SELECT $1, $2::uuid, $3::uuid, $4, $5, $6, max(ordinal) + 1, 'replica',"
    "  now() + interval '5 minutes'"
    " FROM nodes WHERE shard_id = $2::uuid RETURNING id"};

static const struct db_stmt retire_node = {
    "UPDATE nodes SET desired_state = 'deleted' WHERE id = $1::uuid"};

struct replace_call {
    struct app *app;
    const char *cluster_id, *dead_id, *op_id;
    struct cluster_replacement *out;
    char *err;
    size_t errsize;
    bool placed;
};

static enum db_status replace_fn(struct db_conn *conn, void *arg)
{
    struct replace_call *c = arg;
    struct cluster_replacement *out = c->out;
    const char *params[2] = {c->dead_id, c->cluster_id};
    struct placement p = {0};
    PGresult *mates = NULL;
    enum db_status st;

    PQclear(db_query(conn, &placement_lock, 0, NULL, &st));
    if (st != DB_OK)
        return st;
    PGresult *res = db_query(conn, &dead_node, 2, params, &st);
    if (res == NULL)
        return st;
    if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 6), "deleted") == 0) {
        PQclear(res);
        snprintf(c->err, c->errsize, "node %s is not a live node of cluster %s", c->dead_id,
                 c->cluster_id);
        return DB_NOT_FOUND;
    }
    char shard_id[40], node_type[64], engine[16], line[16];
    snprintf(shard_id, sizeof(shard_id), "%s", PQgetvalue(res, 0, 0));
    snprintf(node_type, sizeof(node_type), "%s", PQgetvalue(res, 0, 1));
    snprintf(engine, sizeof(engine), "%s", PQgetvalue(res, 0, 2));
    snprintf(line, sizeof(line), "%s", PQgetvalue(res, 0, 3));
    snprintf(out->dead_address, sizeof(out->dead_address), "%s", PQgetvalue(res, 0, 4));
    out->dead_port = atoi(PQgetvalue(res, 0, 5));
    bool multi_az = PQgetvalue(res, 0, 7)[0] == 't';
    out->shard = atoi(PQgetvalue(res, 0, 8));
    PQclear(res);

    const char *nt[1] = {node_type};
    if ((res = db_query(conn, &node_type_shape, 1, nt, &st)) == NULL)
        return st;
    struct sched_replacement r = {.vcpus = atoi(PQgetvalue(res, 0, 0)),
                                  .memory_mib = atoll(PQgetvalue(res, 0, 1)),
                                  .multi_az = multi_az};
    PQclear(res);
    const char *mp[2] = {shard_id, c->dead_id};
    if ((mates = db_query(conn, &shard_mates, 2, mp, &st)) == NULL)
        return st;
    size_t n = (size_t)PQntuples(mates);
    const char **hosts = xcalloc(n + 1, sizeof(*hosts)), **azs = xcalloc(n + 1, sizeof(*azs));
    for (size_t i = 0; i < n; i++) {
        hosts[i] = PQgetvalue(mates, (int)i, 0);
        azs[i] = PQgetvalue(mates, (int)i, 1);
        if (strcmp(PQgetvalue(mates, (int)i, 2), "primary") == 0)
            r.primary_az = azs[i];
    }
    r.shard_hosts = hosts;
    r.shard_azs = azs;
    r.n_shard = n;
    if ((st = read_hosts(conn, engine, line, &p)) != DB_OK)
        goto out;
    int pick = sched_pick_replacement(p.hosts, p.nhosts, &r, c->err, c->errsize);
    if (pick < 0) {
        st = DB_NOT_FOUND;
        goto out;
    }
    const char *ip[6] = {c->cluster_id, shard_id, p.hosts[pick].id, engine, line, node_type};
    if ((res = db_query(conn, &insert_replacement, 6, ip, &st)) == NULL)
        goto out;
    snprintf(out->new_id, sizeof(out->new_id), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    const char *dp[1] = {c->dead_id};
    PQclear(db_query(conn, &retire_node, 1, dp, &st));
    if (st != DB_OK || (st = store_host_assign_ports(conn, p.hosts[pick].id)) != DB_OK)
        goto out;
    char *message =
        xasprintf("shard %04d: replacing node %s with node %s on host %s in %s", out->shard + 1,
                  c->dead_id, out->new_id, p.hosts[pick].id, p.hosts[pick].az);
    json_t *detail = json_pack("{s:s, s:s, s:s, s:s}", "replaced", c->dead_id, "node_id",
                               out->new_id, "host_id", p.hosts[pick].id, "az", p.hosts[pick].az);
    char *text = json_dumps(detail, JSON_COMPACT);
    st =
        cluster_add_event(conn, c->cluster_id, c->op_id, "NodeReplacing", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    c->placed = st == DB_OK;
out:
    free(hosts);
    free(azs);
    PQclear(mates);
    free(p.hosts);
    PQclear(p.rows);
    return st;
}

bool cluster_replacement_place(struct app *app, const char *cluster_id, const char *op_id,
                               const char *dead_id, struct cluster_replacement *out, char *err,
                               size_t errsize)
{
    struct replace_call c = {app, cluster_id, dead_id, op_id, out, err, errsize, false};
    err[0] = '\0';
    if (db_tx(app->db, DB_READ_COMMITTED, replace_fn, &c) == DB_OK && c.placed)
        return true;
    if (err[0] == '\0')
        snprintf(err, errsize, "could not store the replacement");
    return false;
}

static const struct db_stmt joined_node = {
    "UPDATE nodes SET role = 'replica', observed_role = 'replica', master_link_status = 'up',"
    "  sync_in_progress = false, role_observed_at = now() WHERE id = $1::uuid"};

enum db_status cluster_replacement_done(struct db_conn *conn, const char *cluster_id,
                                        const char *op_id, const char *dead_id, const char *new_id)
{
    const char *params[1] = {new_id};
    enum db_status st;

    PQclear(db_query(conn, &joined_node, 1, params, &st));
    if (st != DB_OK)
        return st;
    char *message =
        xasprintf("node %s replaced node %s and is in sync with its primary", new_id, dead_id);
    json_t *detail = json_pack("{s:s, s:s}", "replaced", dead_id, "node_id", new_id);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = cluster_add_event(conn, cluster_id, op_id, "NodeReplaced", "info", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}
