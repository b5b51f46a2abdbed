/* api_slots.c -- GET /v1/clusters/{id}/slot-stats: per-slot statistics of a
 * cluster-mode Valkey 8+ cluster, read live from each shard's primary with
 * CLUSTER SLOT-STATS, and hot-slot advice per shard (slot_advice.h).
 *
 * The load of a slot is its CPU time (cpu-usec) when the engines measure it
 * (cluster-slot-stats-enabled, on by default from Valkey 8.1), else its key
 * count; the answer says which. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cluster_nodes.h"
#include "nodeio.h"
#include "slot_advice.h"
#include "topology.h"
#include "xalloc.h"

#define HOTTEST_LISTED 10 /* slots listed per shard */

struct shard_stats {
    const struct cluster_node *primary;
    struct engine_slot_stats slots;
};

struct engine_call {
    const char *id;
    struct store_cluster_engine e;
};

static enum db_status engine_fn(struct db_conn *conn, void *arg)
{
    struct engine_call *c = arg;
    return store_cluster_engine(conn, c->id, &c->e);
}

/* The slots node serves, with their figures; false with err. */
static bool read_slot_stats(const struct cluster_node *node, const char *password,
                            struct shard_stats *out, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(node, password, NODEIO_PATIENT, err, errsize);
    bool ok = c != NULL &&
              engine_cluster_slot_stats(c, 0, ENGINE_CLUSTER_SLOTS - 1, &out->slots, err, errsize);
    resp_close(c);
    out->primary = node;
    return ok;
}

static json_t *slot_json(const struct engine_slot_stat *s)
{
    json_t *j = json_pack("{s:i, s:I}", "slot", s->slot, "key_count", (json_int_t)s->keys);
    if (s->cpu_usec >= 0)
        json_object_set_new(j, "cpu_usec", json_integer(s->cpu_usec));
    return j;
}

static const struct engine_slot_stat *find_stat(const struct shard_stats *sh, int slot)
{
    for (size_t i = 0; i < sh->slots.count; i++) {
        if (sh->slots.stats[i].slot == slot)
            return &sh->slots.stats[i];
    }
    return NULL;
}

/* What slot_advise() says a shard should do, or JSON null: move slots. */
static json_t *advice_json(const struct shard_slots *load, const struct shard_stats *sh)
{
    if (load->to_shard < 0)
        return json_null();
    json_t *move = json_array();
    for (size_t k = 0; k < load->move_count; k++)
        json_array_append_new(move, json_integer(load->slots[load->move_from + k].slot));
    char to[16];
    snprintf(to, sizeof(to), "%04d", sh[load->to_shard].primary->shard + 1);
    return json_pack("{s:o, s:s, s:f, s:s}", "move_slots", move, "to_shard", to, "load_after",
                     load->load_after, "reason",
                     "the hottest slot stays: moving it would move the hot spot (often one key) "
                     "with it; the next hottest slots move until the shard is down to the mean");
}

static json_t *answer(const char *id, struct shard_stats *sh, size_t nshards)
{
    bool by_cpu = false;
    struct shard_slots *loads = xcalloc(nshards + 1, sizeof(*loads));

    for (size_t i = 0; i < nshards; i++) {
        for (size_t k = 0; k < sh[i].slots.count && !by_cpu; k++)
            by_cpu = sh[i].slots.stats[k].cpu_usec >= 0;
    }
    for (size_t i = 0; i < nshards; i++) {
        loads[i].slots = xcalloc(sh[i].slots.count + 1, sizeof(struct slot_load));
        loads[i].n = sh[i].slots.count;
        for (size_t k = 0; k < sh[i].slots.count; k++) {
            const struct engine_slot_stat *s = &sh[i].slots.stats[k];
            loads[i].slots[k].slot = s->slot;
            loads[i].slots[k].load = (double)(by_cpu ? s->cpu_usec : s->keys);
        }
    }
    double mean = slot_advise(loads, nshards);
    json_t *shards = json_array();
    for (size_t i = 0; i < nshards; i++) {
        long long keys = 0, cpu = 0, in = 0, out = 0;
        for (size_t k = 0; k < sh[i].slots.count; k++) {
            keys += sh[i].slots.stats[k].keys > 0 ? sh[i].slots.stats[k].keys : 0;
            cpu += sh[i].slots.stats[k].cpu_usec > 0 ? sh[i].slots.stats[k].cpu_usec : 0;
            in += sh[i].slots.stats[k].net_in > 0 ? sh[i].slots.stats[k].net_in : 0;
            out += sh[i].slots.stats[k].net_out > 0 ? sh[i].slots.stats[k].net_out : 0;
        }
        char name[16];
        snprintf(name, sizeof(name), "%04d", sh[i].primary->shard + 1);
        json_t *hottest = json_array();
        for (size_t k = 0; k < loads[i].n && k < HOTTEST_LISTED; k++) {
            if (loads[i].slots[k].load <= 0)
                break;
            json_array_append_new(hottest, slot_json(find_stat(&sh[i], loads[i].slots[k].slot)));
        }
        json_t *advice = advice_json(&loads[i], sh);
        json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:f, s:b, s:o, s:o}", "id", name, "node_id",
                              sh[i].primary->id, "slots", (json_int_t)sh[i].slots.count,
                              "key_count", (json_int_t)keys, "load", loads[i].load, "hot",
                              loads[i].hot, "hottest", hottest, "advice", advice);
        if (by_cpu) {
            json_object_set_new(j, "cpu_usec", json_integer(cpu));
            json_object_set_new(j, "network_bytes_in", json_integer(in));
            json_object_set_new(j, "network_bytes_out", json_integer(out));
        }
        json_array_append_new(shards, j);
        free(loads[i].slots);
    }
    free(loads);
    return json_pack("{s:s, s:s, s:f, s:o}", "cluster_id", id, "load_measure",
                     by_cpu ? "cpu-usec" : "key-count", "mean_load", mean, "shards", shards);
}

bool api_slot_stats_read(struct app *app, const char *id, json_t **out, struct problem *p)
{
    struct engine_call call = {.id = id};
    const struct store_cluster_engine *e = &call.e;
    struct cluster_nodes nodes = {0};
    char *password = NULL, err[256];
    bool cluster_mode;
    enum db_status st = db_run(app->db, engine_fn, &call);

    if (st == DB_NOT_FOUND)
        return problem_set(p, PROBLEM_CLUSTER_NOT_FOUND, "cluster %s does not exist", id);
    if (!problem_db(p, st))
        return false;
    if (strcmp(e->engine, "valkey") != 0 || !e->cluster_mode || strncmp(e->version, "7.", 2) == 0)
        return problem_set(p, PROBLEM_NOT_SUPPORTED_BY_ENGINE,
                           "per-slot statistics need Valkey 8 or later in cluster mode; cluster %s "
                           "runs %s %s with cluster mode %s",
                           id, e->engine, e->version, e->cluster_mode ? "enabled" : "disabled");
    if (!cluster_nodes_load(app, id, &nodes, &password, &cluster_mode, err, sizeof(err)))
        return problem_set(p, PROBLEM_INTERNAL_ERROR, "%s", err);
    struct shard_stats *sh = xcalloc(nodes.count + 1, sizeof(*sh));
    size_t n = 0;
    bool ok = true;
    for (size_t i = 0; i < nodes.count && ok; i++) {
        const struct cluster_node *node = &nodes.items[i];
        if (strcmp(node->role, "primary") != 0 || node->host_lost ||
            strcmp(node->process_state, "running") != 0)
            continue;
        ok = read_slot_stats(node, password, &sh[n++], err, sizeof(err));
    }
    if (ok)
        *out = answer(id, sh, n);
    else
        problem_set(p, PROBLEM_INTERNAL_ERROR, "could not read slot statistics: %s", err);
    for (size_t i = 0; i < n; i++)
        engine_slot_stats_free(&sh[i].slots);
    free(sh);
    cluster_nodes_free(&nodes);
    free(password);
    return ok;
}

void api_clusters_slot_stats(struct http_request *req)
{
    struct problem p = {0};
    json_t *out = NULL;

    if (api_slot_stats_read(req->app, http_param(req, "id"), &out, &p))
        http_reply_json(req, 200, out);
    else
        http_reply_error(req, &p);
}
