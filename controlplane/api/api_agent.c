/* api_agent.c -- the agent protocol: POST /v1/agent/register (bootstrap
 * token) and POST /v1/agent/sync (agent credential), the long-poll through
 * which every VM learns what to run. See docs/agent-protocol.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "catalog.h"
#include "cluster_nodes.h"
#include "engine_config.h"
#include "ha.h"
#include "log.h"
#include "monitor.h"
#include "timeutil.h"
#include "tls.h"
#include "xalloc.h"

#define AGENT_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

bool api_check_host_name(const json_t *value, char *msg, size_t msgsize)
{
    const char *s = json_string_value(value);
    if (strspn(s, AGENT_NAME_CHARS) == strlen(s))
        return true;
    snprintf(msg, msgsize, "may contain only letters, digits, '.', '_' and '-'");
    return false;
}

static bool check_uuid(const json_t *value, char *msg, size_t msgsize)
{
    if (page_is_uuid(json_string_value(value)))
        return true;
    snprintf(msg, msgsize, "must be a UUID");
    return false;
}

static const char *const statuses[] = {"starting", "running",      "loading", "stopped",
                                       "crashed",  "unresponsive", NULL};
static const char *const roles[] = {"primary", "replica", NULL};

static const struct jspec_field engine_fields[] = {
    {.name = "engine", .type = JSPEC_STRING, .required = true, .one_of = engine_kind_names},
    {.name = "version", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 32},
    {.name = "line", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 16},
    {.name = "path", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 4096},
    {0},
};
static const struct jspec_field engine_item = {.type = JSPEC_OBJECT, .fields = engine_fields};

static const struct jspec_field port_range_fields[] = {
    {.name = "min",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 1024,
     .max = 65535},
    {.name = "max",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 1024,
     .max = 65535},
    {0},
};

const struct jspec_field api_agent_register_spec[] = {
    {.name = "name",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = 63,
     .check = api_check_host_name},
    {.name = "az",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = 32,
     .check = api_check_host_name},
    {.name = "address", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 255},
    {.name = "vcpus",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 1,
     .max = 1024},
    {.name = "memory_mib",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 64,
     .max = 16777216},
    {.name = "ports", .type = JSPEC_OBJECT, .required = true, .fields = port_range_fields},
    {.name = "engines",
     .type = JSPEC_ARRAY,
     .required = true,
     .max_len = 16,
     .items = &engine_item},
    {.name = "agent_version", .type = JSPEC_STRING, .max_len = 32},
    {0},
};

static const struct jspec_field node_fields[] = {
    {.name = "node_id", .type = JSPEC_STRING, .required = true, .check = check_uuid},
    {.name = "pid",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 1,
     .max = 4194304},
    {.name = "status", .type = JSPEC_STRING, .required = true, .one_of = statuses},
    {.name = "port",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 1,
     .max = 65535},
    {.name = "role", .type = JSPEC_STRING, .nullable = true, .one_of = roles},
    {.name = "engine", .type = JSPEC_STRING, .nullable = true, .one_of = engine_kind_names},
    {.name = "version", .type = JSPEC_STRING, .nullable = true, .max_len = 32},
    {.name = "replication_offset", .type = JSPEC_INTEGER, .nullable = true},
    {.name = "master_link_status", .type = JSPEC_STRING, .nullable = true, .max_len = 16},
    {.name = "sync_in_progress", .type = JSPEC_BOOLEAN, .nullable = true},
    {.name = "loading", .type = JSPEC_BOOLEAN, .nullable = true},
    {.name = "restarts", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e9},
    {.name = "users_repairs", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e9},
    {.name = "repoints", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e9},
    {.name = "config_repairs", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e9},
    {.name = "login_repairs", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1e9},
    {.name = "observed_ms_ago",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 0,
     .max = 1e9},
    {.name = "primary_silent_ms",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 0,
     .max = 1e9},
    {.name = "config_epoch",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 0,
     .max = 9e18},
    {0},
};
static const struct jspec_field node_item = {.type = JSPEC_OBJECT, .fields = node_fields};

const struct jspec_field api_agent_sync_spec[] = {
    {.name = "generation",
     .type = JSPEC_INTEGER,
     .required = true,
     .has_range = true,
     .min = 0,
     .max = 9e18},
    {.name = "wait_ms", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 10000},
    {.name = "engines",
     .type = JSPEC_ARRAY,
     .required = true,
     .max_len = 16,
     .items = &engine_item},
    {.name = "nodes", .type = JSPEC_ARRAY, .required = true, .max_len = 1024, .items = &node_item},
    {0},
};

/* ---- register ------------------------------------------------------------ */

/* Hosts registered with the bootstrap token that may wait for approval at
 * once: a holder of the token cannot fill the table. */
#define HOSTS_PENDING_MAX 100

struct register_call {
    struct store_host_registration reg;
    const char *join_token_id; /* NULL: registered with the bootstrap token */
    struct auth_token credential;
    char host_id[AUTH_UUID_LEN + 1];
    char status[16];
    struct problem problem;
};

/* A join token is spent by the registration it opens, in its transaction;
 * it is the only way to a name that is registered already (the agent that
 * has it keeps its credential). */
static enum db_status register_fn(struct db_conn *conn, void *arg)
{
    struct register_call *c = arg;
    enum db_status st;
    long long pending;

    problem_clear(&c->problem);
    if (c->join_token_id != NULL) {
        st = store_join_token_spend(conn, c->join_token_id, c->reg.name);
        if (st == DB_NOT_FOUND) {
            problem_set(&c->problem, PROBLEM_FORBIDDEN,
                        "join token %s is for another host name than %s, or was used meanwhile",
                        c->join_token_id, c->reg.name);
            return DB_REFUSED;
        }
        if (st != DB_OK)
            return st;
    } else if (!c->reg.approved) {
        if ((st = store_hosts_pending(conn, &pending)) != DB_OK)
            return st;
        if (pending >= HOSTS_PENDING_MAX) {
            problem_set(&c->problem, PROBLEM_TOO_MANY_PENDING_HOSTS,
                        "%lld hosts wait for approval; approve or delete some "
                        "(GET /v1/hosts?status=pending) before more register",
                        pending);
            return DB_REFUSED;
        }
    }
    auth_agent_credential_new(&c->credential);
    st = store_host_register(conn, &c->reg, &c->credential, c->host_id, c->status);
    if (st == DB_CONFLICT) {
        problem_set(&c->problem, PROBLEM_HOST_NAME_TAKEN,
                    "host %s is registered, and its agent keeps its credential; to give the "
                    "name to a new agent (a rebuilt VM), register it with a join token for "
                    "%s (POST /v1/host-join-tokens)",
                    c->reg.name, c->reg.name);
        return DB_REFUSED;
    }
    if (st == DB_OK && c->join_token_id != NULL)
        st = store_join_token_used_by(conn, c->join_token_id, c->host_id);
    return st;
}

void api_agent_register(struct http_request *req)
{
    json_t *body = req->json, *ports = json_object_get(body, "ports");
    bool join = req->who.kind == AUTH_KIND_JOIN;
    struct register_call call = {
        .reg = {.takeover = join, .approved = join || req->app->cfg.approve_bootstrap_hosts},
        .join_token_id = join ? req->who.token_id : NULL,
    };
    char *engines_text = json_dumps(json_object_get(body, "engines"), JSON_COMPACT);

    call.reg.name = json_string_value(json_object_get(body, "name"));
    call.reg.az = json_string_value(json_object_get(body, "az"));
    call.reg.address = json_string_value(json_object_get(body, "address"));
    call.reg.agent_version = json_string_value(json_object_get(body, "agent_version"));
    call.reg.vcpus = (int)json_integer_value(json_object_get(body, "vcpus"));
    call.reg.memory_mib = json_integer_value(json_object_get(body, "memory_mib"));
    call.reg.port_min = (int)json_integer_value(json_object_get(ports, "min"));
    call.reg.port_max = (int)json_integer_value(json_object_get(ports, "max"));
    call.reg.engines = engines_text;
    if (call.reg.port_min > call.reg.port_max) {
        json_t *errors = json_array();
        jspec_error(errors, "ports", "min must not be greater than max");
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors, "the port range is empty");
        free(engines_text);
        return;
    }
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, register_fn, &call);
    free(engines_text);
    if (!problem_db(&call.problem, st)) {
        log_warn("registration refused", "name=%s join_token=%s detail=\"%s\"", call.reg.name,
                 join ? call.join_token_id : "-", call.problem.detail);
        http_reply_error(req, &call.problem);
        return;
    }
    log_info("host registered", "host_id=%s name=%s az=%s status=%s join_token=%s", call.host_id,
             call.reg.name, call.reg.az, call.status, join ? call.join_token_id : "-");
    http_reply_json(req, 200,
                    json_pack("{s:s, s:s, s:s, s:i, s:i}", "host_id", call.host_id, "credential",
                              call.credential.text, "status", call.status, "sync_wait_ms",
                              req->app->cfg.sync_wait_ms, "heartbeat_timeout_s",
                              req->app->cfg.heartbeat_timeout_s));
}

/* ---- sync ------------------------------------------------------------------ */

struct sync_call {
    struct app *app;
    const char *host_id;
    const char *engines, *nodes; /* JSON texts of the report */
    long long generation;
    int heartbeat_timeout_s;
    char *desired;
    bool announce_trouble; /* to the leader's monitor, another cairnd's */
    struct store_report_facts facts;
};

/* What of the report its recording depends on (store.h). */
static struct store_report_facts report_facts(const json_t *nodes)
{
    static const char *const repairs[] = {"users_repairs", "repoints", "config_repairs",
                                          "login_repairs"};
    struct store_report_facts f = {false, false};
    size_t i;
    const json_t *n;

    json_array_foreach (nodes, i, n) {
        const char *role = json_string_value(json_object_get(n, "role"));
        if (role != NULL && strcmp(role, "primary") == 0)
            f.primaries = true;
        for (size_t k = 0; k < sizeof(repairs) / sizeof(repairs[0]); k++) {
            if (json_integer_value(json_object_get(n, repairs[k])) > 0)
                f.repairs = true;
        }
    }
    return f;
}

static enum db_status record_fn(struct db_conn *conn, void *arg)
{
    struct sync_call *c = arg;
    enum db_status st =
        store_host_sync(conn, c->host_id, c->engines, c->nodes, &c->facts, &c->generation);
    if (st == DB_OK && c->announce_trouble)
        st = store_trouble_announce(conn, c->host_id);
    return st;
}

static enum db_status generation_fn(struct db_conn *conn, void *arg)
{
    struct sync_call *c = arg;
    return store_host_generation(conn, c->host_id, &c->generation);
}

/* Nodes placed without a port get one as their desired set is read, in the
 * same transaction, so the reply already carries it; so does a host that
 * needs a certificate (tls.h). */
static enum db_status desired_fn(struct db_conn *conn, void *arg)
{
    struct sync_call *c = arg;
    enum db_status st = store_host_assign_ports(conn, c->host_id);

    free(c->desired);
    c->desired = NULL;
    if (st == DB_OK)
        st = tls_host_certificate(c->app, conn, c->host_id);
    if (st != DB_OK)
        return st;
    return store_host_desired(conn, c->host_id, c->heartbeat_timeout_s, &c->desired);
}

/* config.key = password (taken; null when NULL). */
static void set_password(json_t *config, const char *key, char *password)
{
    json_object_set_new(config, key, password != NULL ? json_string(password) : json_null());
    free(password);
}

/* A node's TLS material, as the agent needs it: the host's key opened, and
 * the authority the engines check each other (and the agent its engines)
 * by. A key that cannot be opened leaves none: the agent will not start
 * the node. */
static void open_tls(struct app *app, json_t *tls)
{
    const char *box = json_string_value(json_object_get(tls, "key_box"));

    if (!json_is_object(tls))
        return;
    set_password(tls, "key", box != NULL ? tls_open_host_key(app, box) : NULL);
    json_object_set_new(tls, "ca",
                        app->ca != NULL ? json_string(x509_ca_cert_pem(app->ca)) : json_null());
    json_object_del(tls, "key_box");
}

/* The store leaves each node's tenant password (and the one before it,
 * while an AUTH token rotates) sealed and Cairn's own users' underived;
 * both are done here, the only place the passwords leave cairnd (over the
 * agent's authenticated channel). */
static char *open_passwords(struct app *app, const char *desired)
{
    json_t *doc = json_loads(desired, 0, NULL), *node;
    size_t i;

    if (doc == NULL)
        return NULL;
    json_array_foreach (json_object_get(doc, "nodes"), i, node) {
        json_t *config = json_object_get(node, "config");
        const char *box = json_string_value(json_object_get(config, "password_box"));
        const char *previous = json_string_value(json_object_get(config, "previous_password_box"));
        const char *cluster = json_string_value(json_object_get(config, "cluster_id"));
        const char *uid = json_string_value(json_object_get(config, "cluster_uid"));
        if (config == NULL)
            continue; /* a tombstone */
        set_password(config, "password",
                     box != NULL && cluster != NULL ? cluster_open_secret(app, cluster, box)
                                                    : NULL);
        if (previous != NULL && cluster != NULL)
            set_password(config, "previous_password", cluster_open_secret(app, cluster, previous));
        set_password(config, "admin_password",
                     cluster_engine_password(app, uid, ENGINE_ADMIN_USER));
        set_password(config, "replication_password",
                     cluster_engine_password(app, uid, ENGINE_REPLICATION_USER));
        open_tls(app, json_object_get(config, "tls"));
        json_object_del(config, "password_box");
        json_object_del(config, "previous_password_box");
        json_object_del(config, "cluster_id");
        json_object_del(config, "cluster_uid");
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return text;
}

static void reply_desired(struct http_request *req, struct sync_call *call)
{
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, desired_fn, call);
    if (st != DB_OK) {
        http_reply_db_error(req, st);
        return;
    }
    char *text = open_passwords(req->app, call->desired);
    free(call->desired);
    call->desired = NULL;
    if (text == NULL)
        http_reply_problem(req, PROBLEM_INTERNAL_ERROR, NULL, "the desired set is not JSON");
    else
        http_reply_json_text(req, 200, text);
}

/* Whether a report says an engine crashed or stopped answering: the
 * failover monitor looks at once instead of at its next tick. */
static bool reports_trouble(const json_t *nodes)
{
    size_t i;
    const json_t *n;

    json_array_foreach (nodes, i, n) {
        const char *status = json_string_value(json_object_get(n, "status"));
        if (status != NULL &&
            (strcmp(status, "crashed") == 0 || strcmp(status, "unresponsive") == 0))
            return true;
        if (json_integer_value(json_object_get(n, "primary_silent_ms")) >= HA_SUSPECT_MS)
            return true;
    }
    return false;
}

/* The first pass records the agent's report; every pass (the first and each
 * wake-up) then answers when the desired generation differs from the
 * agent's, when the wait is over or cairnd is stopping, and parks the
 * request otherwise. A NOTIFY from any cairnd wakes it (see notify.c). */
void api_agent_sync(struct http_request *req)
{
    json_t *body = req->json;
    long long known = json_integer_value(json_object_get(body, "generation"));
    struct sync_call call = {.app = req->app,
                             .host_id = req->who.host_id,
                             .heartbeat_timeout_s = req->app->cfg.heartbeat_timeout_s};
    enum db_status st;

    if (!req->resumed) {
        char *installed = json_dumps(json_object_get(body, "engines"), JSON_COMPACT);
        char *nodes = json_dumps(json_object_get(body, "nodes"), JSON_COMPACT);
        bool trouble = reports_trouble(json_object_get(body, "nodes"));
        call.engines = installed;
        call.nodes = nodes;
        call.announce_trouble = trouble && monitor_leader_term(req->app->monitor) == 0;
        call.facts = report_facts(json_object_get(body, "nodes"));
        st = db_tx(req->app->db, DB_READ_COMMITTED, record_fn, &call);
        free(installed);
        free(nodes);
        if (st != DB_OK) {
            http_reply_db_error(req, st);
            return;
        }
        monitor_heard_late(req->app->monitor, time_mono_us() - req->started_us);
        if (trouble && req->app->monitor != NULL)
            monitor_poke(req->app->monitor);
        long long wait_ms = json_integer_value(json_object_get(body, "wait_ms"));
        if (wait_ms > req->app->cfg.sync_wait_ms)
            wait_ms = req->app->cfg.sync_wait_ms;
        /* Counted from the report's arrival, not from its recording: a
         * report held up by a lock must not delay the next one past the
         * heartbeat timeout. */
        req->park_deadline_us = req->started_us + wait_ms * 1000;
    }
    for (;;) {
        uint64_t epoch = http_wake_epoch(req);
        if (req->resumed && (st = db_run(req->app->db, generation_fn, &call)) != DB_OK) {
            http_reply_db_error(req, st);
            return;
        }
        if (call.generation != known || time_mono_us() >= req->park_deadline_us ||
            http_stopping(req)) {
            reply_desired(req, &call);
            return;
        }
        if (http_suspend(req, call.host_id, epoch, req->park_deadline_us))
            return;
        req->resumed = true; /* woken before parking: read the generation again */
    }
}
