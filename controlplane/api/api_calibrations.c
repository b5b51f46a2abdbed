/* api_calibrations.c -- /v1/sizing/calibrations: start a calibration of
 * the sizing model on one of the fleet's hosts, list them, read one
 * (calibration.h). Starting one places its temporary one-node cluster
 * through the cluster services, on the host chosen, and queues the
 * calibrate operation that benchmarks and removes it (ops_calibrate.c),
 * with the calibration's row, in one transaction. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "calibration.h"
#include "cluster_spec.h"
#include "clusters.h"
#include "crypto.h"
#include "ops.h"
#include "xalloc.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_calibrations_list(conn, *(const bool *)filter, page, items, next_key);
}

static const struct api_list calibrations = {"calibrations", "calibrations", PAGE_KEY_TIME_UUID,
                                             fetch_page};

void api_calibrations_list(struct http_request *req)
{
    bool host_details = api_host_details(req);
    api_reply_list(req, &calibrations, &host_details);
}

void api_calibrations_get(struct http_request *req)
{
    const char *id = http_param(req, "id");
    if (!page_is_uuid(id)) {
        http_reply_problem(req, PROBLEM_CALIBRATION_NOT_FOUND, NULL, "%s does not exist", id);
        return;
    }
    api_reply_get(
        req, api_host_details(req) ? store_calibration_get : store_calibration_get_without_host, id,
        PROBLEM_CALIBRATION_NOT_FOUND);
}

/* ---- starting one ----------------------------------------------------------- */

struct choices_call {
    char *text;
};

static enum db_status choices_fn(struct db_conn *conn, void *arg)
{
    struct choices_call *c = arg;
    free(c->text);
    c->text = NULL;
    return store_calibration_choices(conn, &c->text);
}

/* A random (version 4) UUID. */
static void random_uuid(char out[37])
{
    unsigned char b[16];
    char hex[33];

    crypto_random(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    crypto_hex(b, sizeof(b), hex);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/* The temporary cluster: one node of the type, cluster mode disabled, no
 * replica, tagged with what it is for. */
static json_t *temporary_spec(const char *cluster_id, const char *calibration_id,
                              const struct calib_choice *c)
{
    char description[128];
    snprintf(description, sizeof(description),
             "temporary node of calibration %s; removed when it ends", calibration_id);
    json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:{s:s, s:s}}",
                             "id", cluster_id, "description", description, "engine", c->engine,
                             "engine_version", c->engine_version, "node_type", c->node_type,
                             "cluster_mode", "disabled", "num_shards", 1, "replicas_per_shard", 0,
                             "automatic_failover", false, "multi_az", false, "tags",
                             "cairn:purpose", "calibration", "cairn:calibration", calibration_id);
    json_t *errors = json_array();
    json_t *spec = cspec_normalize(body, errors);
    assert(spec != NULL); /* every field above is valid by construction */
    json_decref(errors);
    json_decref(body);
    return spec;
}

/* What the operation works with besides its cluster. */
static json_t *operation_context(const struct calib_choice *c, const struct calib_params *p)
{
    return json_pack("{s:s, s:s, s:f, s:i, s:i, s:f, s:i, s:i, s:i}", "engine", c->engine,
                     "engine_version", c->engine_version, "node_memory_gib", c->node_memory_gib,
                     "host_vcpus", c->host_vcpus, "value_bytes", p->value_bytes, "read_ratio",
                     p->read_ratio, "pipeline", p->pipeline, "clients", p->clients, "duration_s",
                     p->duration_s);
}

static enum db_status insert_row(struct db_conn *conn, const char *op_id, void *arg)
{
    struct store_calibration *row = arg;
    row->op_id = op_id;
    return store_calibration_insert(conn, row);
}

void api_calibrations_create(struct http_request *req)
{
    struct choices_call call = {NULL};
    struct problem p = {0};
    struct calib_choice choice;
    struct calib_params params;
    enum db_status st = db_run(req->app->db, choices_fn, &call);

    if (st != DB_OK) {
        free(call.text);
        http_reply_db_error(req, st);
        return;
    }
    json_t *choices = json_loads(call.text, 0, NULL);
    free(call.text);
    bool chosen = choices != NULL && calib_choose(req->json, choices, &choice, &p);
    json_decref(choices);
    if (!chosen) {
        if (!p.set)
            problem_db(&p, DB_ERROR);
        http_reply_error(req, &p);
        return;
    }
    calib_params_read(req->json, &params);

    char id[37], cluster_id[48], op_id[STORE_UUID_SIZE];
    bool created;
    random_uuid(id);
    snprintf(cluster_id, sizeof(cluster_id), "calibration-%.8s%.4s", id, id + 9);
    json_t *spec = temporary_spec(cluster_id, id, &choice);
    json_t *context = operation_context(&choice, &params);
    struct store_calibration row = {.id = id,
                                    .cluster_id = cluster_id,
                                    .host_id = choice.host_id,
                                    .host_name = choice.host_name,
                                    .host_vcpus = choice.host_vcpus,
                                    .node_type = choice.node_type,
                                    .engine = choice.engine,
                                    .engine_version = choice.engine_version,
                                    .value_bytes = params.value_bytes,
                                    .read_ratio = params.read_ratio,
                                    .pipeline = params.pipeline,
                                    .clients = params.clients,
                                    .duration_s = params.duration_s};
    struct cluster_create_how how = {choice.host_id, &op_calibrate, context, insert_row, &row};
    bool ok = cluster_create_with(req->app, spec, NULL, &how, &created, op_id, &p);
    json_decref(spec);
    json_decref(context);
    if (!ok) {
        http_reply_error(req, &p);
        return;
    }
    char *location = xasprintf("/v1/sizing/calibrations/%s", id);
    http_add_header(req, "Location", location);
    free(location);
    api_reply_get_status(req, store_calibration_get, id, PROBLEM_CALIBRATION_NOT_FOUND, 202);
}
