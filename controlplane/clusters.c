/* clusters.c -- the cluster transactions and the facts operations need. */
#include "clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "log.h"
#include "scheduler.h"
#include "secretbox.h"
#include "store.h"
#include "xalloc.h"

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

char *cluster_seal_secret(struct app *app, const char *cluster_id, const char *password)
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

struct load_call {
    const char *id;
    struct cluster_nodes *out;
    bool cluster_mode;
    char *secret_hex;
};

static enum db_status load_fn(struct db_conn *conn, void *arg)
{
    struct load_call *c = arg;
    return store_cluster_nodes(conn, c->id, c->out, &c->cluster_mode, &c->secret_hex);
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

enum db_status cluster_mark_available(struct db_conn *conn, const char *cluster_id,
                                      const char *op_id)
{
    enum db_status st = store_cluster_set_available(conn, cluster_id);
    if (st != DB_OK)
        return st;
    return store_event_add(conn, cluster_id, op_id, "ClusterAvailable", "info",
                           "the cluster is available", NULL);
}

enum db_status cluster_mark_failed(struct db_conn *conn, const char *cluster_id, const char *op_id,
                                   const char *code, const char *error, const char *status)
{
    enum db_status st = DB_OK;
    char *detail = NULL;
    json_t *d = json_pack("{s:s, s:s}", "code", code, "message", error);

    if (status != NULL)
        st = store_cluster_set_status(conn, cluster_id, status);
    if (st == DB_OK) {
        detail = json_dumps(d, JSON_COMPACT);
        st = store_event_add(conn, cluster_id, op_id, "OperationFailed", "error", error, detail);
    }
    free(detail);
    json_decref(d);
    return st;
}

/* ---- delete steps ------------------------------------------------------------ */

enum db_status cluster_nodes_mark_deleted(struct db_conn *conn, const char *cluster_id)
{
    return store_nodes_mark_deleted(conn, cluster_id);
}

struct count_call {
    const char *id;
    int left;
};

static enum db_status remaining_fn(struct db_conn *conn, void *arg)
{
    struct count_call *c = arg;
    return store_nodes_remaining(conn, c->id, &c->left);
}

int cluster_nodes_remaining(struct app *app, const char *cluster_id)
{
    struct count_call c = {cluster_id, -1};
    return db_tx(app->db, DB_READ_COMMITTED, remaining_fn, &c) == DB_OK ? c.left : -1;
}

enum db_status cluster_drop(struct db_conn *conn, const char *cluster_id, const char *op_id)
{
    enum db_status st = store_cluster_drop(conn, cluster_id);
    if (st != DB_OK)
        return st;
    return store_event_add(conn, cluster_id, op_id, "ClusterDeleted", "info",
                           "the cluster was deleted", NULL);
}

/* ---- the engine password -------------------------------------------------- */

static enum db_status secret_fn(struct db_conn *conn, void *arg)
{
    char **hex = arg;
    return store_cluster_secret(conn, hex[0], &hex[1]);
}

char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status)
{
    char *call[2] = {(char *)cluster_id, NULL}; /* id, then the sealed password */
    char *password = NULL;

    *status = db_run(app->db, secret_fn, call);
    if (*status == DB_OK && call[1] != NULL &&
        (password = cluster_open_secret(app, cluster_id, call[1])) == NULL)
        *status = DB_ERROR; /* sealed with another key, or altered */
    free(call[1]);
    return password;
}

/* ---- apply_parameters ------------------------------------------------------ */

enum db_status cluster_parameters_applied(struct db_conn *conn, const char *cluster_id,
                                          const char *op_id, const json_t *restart_needed)
{
    char *text = json_dumps(restart_needed, JSON_COMPACT);
    enum db_status st = store_cluster_parameters_applied(conn, cluster_id, text);
    if (st == DB_OK) {
        char *detail = xasprintf("{\"restart_needed\": %s}", text);
        st = store_event_add(conn, cluster_id, op_id, "ParametersApplied", "info",
                             "the cluster's parameters were applied", detail);
        free(detail);
    }
    free(text);
    return st;
}

/* ---- observed roles ----------------------------------------------------------- */

static enum db_status roles_fn(struct db_conn *conn, void *arg)
{
    const struct cluster_nodes *nodes = arg;
    enum db_status st = DB_OK;

    for (size_t i = 0; i < nodes->count && st == DB_OK; i++)
        st = store_node_set_role(conn, nodes->items[i].id,
                                 nodes->items[i].ordinal == 0 ? "primary" : "replica");
    return st;
}

bool cluster_roles_observed(struct app *app, const struct cluster_nodes *nodes)
{
    return db_tx(app->db, DB_READ_COMMITTED, roles_fn, (void *)nodes) == DB_OK;
}

/* ---- planned failover ----------------------------------------------------------- */

enum db_status cluster_failover_done(struct db_conn *conn, const char *cluster_id,
                                     const char *op_id, const char *previous, const char *target,
                                     long long pause_ms)
{
    enum db_status st = store_nodes_swap_roles(conn, previous, target);
    if (st != DB_OK)
        return st;
    char *detail = xasprintf("{\"from\": \"%s\", \"to\": \"%s\", \"write_pause_ms\": %lld, "
                             "\"planned\": true}",
                             previous, target, pause_ms);
    char *message = xasprintf("planned failover done; writes paused for %lld ms", pause_ms);
    st = store_event_add(conn, cluster_id, op_id, "FailoverComplete", "info", message, detail);
    free(detail);
    free(message);
    return st;
}

/* ---- node replacement ------------------------------------------------------------ */

struct replace_call {
    const char *cluster_id, *dead_id, *op_id;
    struct cluster_replacement *out;
    char *err;
    size_t errsize;
    bool placed;
};

/* The replacement's NodeReplacing event. */
static enum db_status replacing_event(struct db_conn *conn, const struct replace_call *c,
                                      const struct sched_host *host)
{
    char *message = xasprintf("shard %04d: replacing node %s with node %s on host %s in %s",
                              c->out->shard + 1, c->dead_id, c->out->new_id, host->id, host->az);
    json_t *detail = json_pack("{s:s, s:s, s:s, s:s}", "replaced", c->dead_id, "node_id",
                               c->out->new_id, "host_id", host->id, "az", host->az);
    char *text = json_dumps(detail, JSON_COMPACT);
    enum db_status st =
        store_event_add(conn, c->cluster_id, c->op_id, "NodeReplacing", "warning", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}

/* Pick a host by the scheduler's rules for a replica of dead's shard. */
static int pick_host(struct db_conn *conn, struct replace_call *c,
                     const struct store_node_to_replace *dead, const struct store_placement *p,
                     enum db_status *st)
{
    struct store_shard_mates mates = {0};
    if ((*st = store_shard_mates(conn, dead->shard_id, c->dead_id, &mates)) != DB_OK)
        return -1;
    struct sched_replacement r = {.vcpus = p->vcpus,
                                  .memory_mib = p->memory_mib,
                                  .multi_az = dead->multi_az,
                                  .shard_hosts = (const char **)mates.hosts,
                                  .shard_azs = (const char **)mates.azs,
                                  .n_shard = mates.n,
                                  .primary_az = mates.primary_az};
    int pick = sched_pick_replacement(p->hosts, p->nhosts, &r, c->err, c->errsize);
    store_shard_mates_free(&mates);
    return pick;
}

static enum db_status replace_fn(struct db_conn *conn, void *arg)
{
    struct replace_call *c = arg;
    struct store_node_to_replace dead;
    struct store_placement p = {0};

    c->placed = false;
    enum db_status st = store_node_to_replace(conn, c->cluster_id, c->dead_id, &dead);
    if (st == DB_NOT_FOUND)
        snprintf(c->err, c->errsize, "node %s is not a live node of cluster %s", c->dead_id,
                 c->cluster_id);
    if (st != DB_OK)
        return st;
    snprintf(c->out->dead_address, sizeof(c->out->dead_address), "%s", dead.address);
    c->out->dead_port = dead.port;
    c->out->shard = dead.shard;
    st = store_placement_read(conn, dead.engine, dead.engine_version, dead.node_type, &p);
    if (st != DB_OK)
        return st;
    int pick = pick_host(conn, c, &dead, &p, &st);
    if (pick < 0 && st == DB_OK)
        st = DB_REFUSED;
    if (st == DB_OK)
        st = store_node_replace(conn, c->cluster_id, c->dead_id, &dead, p.hosts[pick].id,
                                c->out->new_id);
    if (st == DB_OK)
        st = store_host_assign_ports(conn, p.hosts[pick].id);
    if (st == DB_OK)
        st = replacing_event(conn, c, &p.hosts[pick]);
    c->placed = st == DB_OK;
    store_placement_free(&p);
    return st;
}

bool cluster_replacement_place(struct app *app, const char *cluster_id, const char *op_id,
                               const char *dead_id, struct cluster_replacement *out, char *err,
                               size_t errsize)
{
    struct replace_call c = {cluster_id, dead_id, op_id, out, err, errsize, false};
    err[0] = '\0';
    if (db_tx(app->db, DB_READ_COMMITTED, replace_fn, &c) == DB_OK && c.placed)
        return true;
    if (err[0] == '\0')
        snprintf(err, errsize, "could not store the replacement");
    return false;
}

enum db_status cluster_replacement_done(struct db_conn *conn, const char *cluster_id,
                                        const char *op_id, const char *dead_id, const char *new_id)
{
    enum db_status st = store_node_joined(conn, new_id);
    if (st != DB_OK)
        return st;
    char *message =
        xasprintf("node %s replaced node %s and is in sync with its primary", new_id, dead_id);
    json_t *detail = json_pack("{s:s, s:s}", "replaced", dead_id, "node_id", new_id);
    char *text = json_dumps(detail, JSON_COMPACT);
    st = store_event_add(conn, cluster_id, op_id, "NodeReplaced", "info", message, text);
    free(text);
    json_decref(detail);
    free(message);
    return st;
}
