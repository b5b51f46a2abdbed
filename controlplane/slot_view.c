/* slot_view.c -- see slot_view.h. */
#include "slot_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "nodeio.h"
#include "topology.h"
#include "xalloc.h"

void slot_view_shard_name(int index, char out[16])
{
    snprintf(out, 16, "%04d", index + 1);
}

/* Each shard's primary: the node that says role:master (the store's role
 * may lag a failover by an agent report). */
static bool find_primaries(struct slot_view *v, char *err, size_t errsize)
{
    for (size_t i = 0; i < v->nodes.count; i++) {
        const struct cluster_node *n = &v->nodes.items[i];
        struct nodeio_repl repl;
        if (n->host_lost || n->port <= 0 || v->shards[n->shard].primary != NULL)
            continue;
        if (nodeio_replication(n, v->password, NODEIO_PATIENT, &repl, err, errsize) && repl.primary)
            v->shards[n->shard].primary = n;
    }
    for (int s = 0; s < v->nshards; s++) {
        if (v->shards[s].primary == NULL) {
            char name[16];
            slot_view_shard_name(s, name);
            snprintf(err, errsize, "shard %s has no primary that answers", name);
            return false;
        }
    }
    return true;
}

static int shard_of_id(const struct slot_view *v, const char *id)
{
    for (int s = 0; s < v->nshards; s++) {
        if (strcmp(v->shards[s].id, id) == 0)
            return s;
    }
    return -1;
}

/* Note an open move, once per slot. */
static void add_open(struct slot_view *v, int slot, int from, int to)
{
    for (size_t i = 0; i < v->nopen; i++) {
        if (v->open[i].slot == slot)
            return;
    }
    v->open = xrealloc(v->open, (v->nopen + 1) * sizeof(*v->open));
    v->open[v->nopen++] = (struct slot_open_move){slot, from, to};
}

/* What each primary says it serves, and its open moves; then the figures
 * INFO gives of its data. */
static bool read_primary(struct slot_view *v, int s, struct engine_cluster_nodes *view, char *err,
                         size_t errsize)
{
    struct slot_shard *sh = &v->shards[s];
    struct resp_conn *c = nodeio_connect(sh->primary, v->password, NODEIO_PATIENT, err, errsize);
    if (c == NULL || !engine_cluster_nodes(c, view, err, errsize)) {
        resp_close(c);
        return false;
    }
    const struct engine_cluster_node *me = engine_cluster_nodes_myself(view);
    if (me == NULL) {
        resp_close(c);
        snprintf(err, errsize, "node %s does not name itself in CLUSTER NODES", sh->primary->id);
        return false;
    }
    snprintf(sh->id, sizeof(sh->id), "%s", me->id);
    for (size_t r = 0; r < me->nranges; r++) {
        for (int slot = me->ranges[r].start; slot <= me->ranges[r].end; slot++)
            v->owner[slot] = s;
    }
    struct engine_info *info = resp_info(c, "memory keyspace", err, errsize);
    resp_close(c);
    if (info == NULL)
        return false;
    const char *db0 = engine_info_get(info, "keyspace", "db0");
    if (db0 == NULL || !engine_info_field_ll(db0, "keys", &sh->keys))
        sh->keys = 0;
    if (!engine_info_get_ll(info, "memory", "used_memory_dataset", &sh->data_bytes))
        sh->data_bytes = 0;
    if (!engine_info_get_ll(info, "memory", "used_memory", &sh->used_memory))
        sh->used_memory = 0;
    engine_info_free(info);
    return true;
}

/* The open moves a primary's own line shows, once every primary's id is
 * known. */
static void read_open_moves(struct slot_view *v, int s, const struct engine_cluster_nodes *view)
{
    const struct engine_cluster_node *me = engine_cluster_nodes_myself(view);
    for (size_t k = 0; me != NULL && k < me->nmigrations; k++) {
        const struct engine_cluster_migration *m = &me->migrations[k];
        int peer = shard_of_id(v, m->peer);
        if (peer < 0 || m->slot < 0 || m->slot >= RESHARD_SLOTS)
            continue; /* a peer that is no primary of ours: nothing to finish with it */
        if (m->importing)
            add_open(v, m->slot, peer, s);
        else
            add_open(v, m->slot, s, peer);
    }
}

/* Per-slot figures from SLOT-STATS; false (no weights) where the engines
 * have none. */
static bool read_weights(struct slot_view *v)
{
    bool cpu = true;
    char err[256];
    struct engine_slot_stats *stats = xcalloc((size_t)v->nshards, sizeof(*stats));
    bool ok = true;

    for (int s = 0; s < v->nshards && ok; s++) {
        struct resp_conn *c =
            nodeio_connect(v->shards[s].primary, v->password, NODEIO_PATIENT, err, sizeof(err));
        ok = c != NULL &&
             engine_cluster_slot_stats(c, 0, RESHARD_SLOTS - 1, &stats[s], err, sizeof(err));
        resp_close(c);
    }
    for (int s = 0; s < v->nshards && ok; s++) {
        for (size_t k = 0; k < stats[s].count; k++)
            cpu = cpu && stats[s].stats[k].cpu_usec >= 0;
    }
    if (ok) {
        double total_cpu = 0;
        v->weight = xcalloc(RESHARD_SLOTS, sizeof(double));
        for (int s = 0; s < v->nshards; s++) {
            for (size_t k = 0; k < stats[s].count; k++) {
                const struct engine_slot_stat *st = &stats[s].stats[k];
                if (st->slot < 0 || st->slot >= RESHARD_SLOTS || v->owner[st->slot] != s)
                    continue;
                v->keys[st->slot] = st->keys > 0 ? st->keys : 0;
                v->weight[st->slot] = (double)(cpu ? st->cpu_usec : v->keys[st->slot]);
                total_cpu += cpu ? (double)st->cpu_usec : 0;
            }
        }
        /* A cluster that has served no commands yet has no CPU to weigh by. */
        if (cpu && total_cpu <= 0) {
            cpu = false;
            for (int slot = 0; slot < RESHARD_SLOTS; slot++)
                v->weight[slot] = (double)v->keys[slot];
        }
        v->load_measure = cpu ? "cpu-usec" : "key-count";
    }
    for (int s = 0; s < v->nshards; s++)
        engine_slot_stats_free(&stats[s]);
    free(stats);
    return ok;
}

/* Without per-slot counts: a shard's keys spread evenly over its slots. */
static void estimate_keys(struct slot_view *v)
{
    long long *slots = xcalloc((size_t)v->nshards, sizeof(long long));
    for (int slot = 0; slot < RESHARD_SLOTS; slot++) {
        if (v->owner[slot] >= 0)
            slots[v->owner[slot]]++;
    }
    for (int slot = 0; slot < RESHARD_SLOTS; slot++) {
        int s = v->owner[slot];
        v->keys[slot] = s >= 0 && slots[s] > 0 ? v->shards[s].keys / slots[s] : 0;
    }
    free(slots);
}

bool slot_view_load(struct app *app, const char *cluster_id, bool weigh, struct slot_view *v,
                    char *err, size_t errsize)
{
    memset(v, 0, sizeof(*v));
    if (!cluster_nodes_load(app, cluster_id, &v->nodes, &v->password, &v->cluster_mode, err,
                            errsize))
        return false;
    if (!v->cluster_mode) {
        snprintf(err, errsize, "the cluster does not run in cluster mode: it has no hash slots");
        return false;
    }
    for (size_t i = 0; i < v->nodes.count; i++) {
        if (v->nodes.items[i].shard + 1 > v->nshards)
            v->nshards = v->nodes.items[i].shard + 1;
    }
    v->shards = xcalloc((size_t)v->nshards + 1, sizeof(*v->shards));
    v->owner = xcalloc(RESHARD_SLOTS, sizeof(int));
    v->keys = xcalloc(RESHARD_SLOTS, sizeof(long long));
    for (int slot = 0; slot < RESHARD_SLOTS; slot++)
        v->owner[slot] = -1;
    if (!find_primaries(v, err, errsize))
        return false;
    struct engine_cluster_nodes *views = xcalloc((size_t)v->nshards, sizeof(*views));
    bool ok = true;
    for (int s = 0; s < v->nshards && ok; s++)
        ok = read_primary(v, s, &views[s], err, errsize);
    for (int s = 0; s < v->nshards && ok; s++)
        read_open_moves(v, s, &views[s]);
    for (int s = 0; s < v->nshards; s++)
        engine_cluster_nodes_free(&views[s]);
    free(views);
    if (!ok)
        return false;
    if (!weigh || !read_weights(v)) {
        v->load_measure = "slot-count";
        estimate_keys(v);
    }
    return true;
}

void slot_view_free(struct slot_view *v)
{
    cluster_nodes_free(&v->nodes);
    free(v->password);
    free(v->shards);
    free(v->owner);
    free(v->keys);
    free(v->weight);
    free(v->open);
    memset(v, 0, sizeof(*v));
}

long long slot_view_bytes(const struct slot_view *v, int slot)
{
    int s = v->owner[slot];
    if (s < 0 || v->shards[s].keys <= 0)
        return 0;
    return v->keys[slot] * (v->shards[s].data_bytes / v->shards[s].keys);
}

json_t *slot_view_moves_json(const struct slot_view *v, const struct reshard_plan *plan)
{
    json_t *out = json_array();
    for (size_t i = 0; i < plan->nmoves; i++) {
        const struct reshard_move *m = &plan->moves[i];
        json_array_append_new(out, json_pack("{s:i, s:i, s:i, s:I, s:I}", "slot", m->slot,
                                             "from_shard", m->from, "to_shard", m->to, "keys",
                                             (json_int_t)v->keys[m->slot], "bytes",
                                             (json_int_t)slot_view_bytes(v, m->slot)));
    }
    return out;
}

json_t *slot_view_preview_json(const struct slot_view *v, const struct reshard_plan *plan)
{
    json_t *runs = json_array();
    long long keys = 0, bytes = 0;
    for (size_t i = 0; i < plan->nmoves;) {
        const struct reshard_move *first = &plan->moves[i];
        long long run_keys = 0, run_bytes = 0;
        size_t j = i;
        while (j < plan->nmoves && plan->moves[j].from == first->from &&
               plan->moves[j].to == first->to &&
               plan->moves[j].slot == first->slot + (int)(j - i)) {
            run_keys += v->keys[plan->moves[j].slot];
            run_bytes += slot_view_bytes(v, plan->moves[j].slot);
            j++;
        }
        char from[16], to[16], slots[32];
        slot_view_shard_name(first->from, from);
        slot_view_shard_name(first->to, to);
        snprintf(slots, sizeof(slots), "%d-%d", first->slot, plan->moves[j - 1].slot);
        json_array_append_new(runs, json_pack("{s:s, s:s, s:s, s:i, s:I, s:I}", "from_shard", from,
                                              "to_shard", to, "slots", slots, "slot_count",
                                              (int)(j - i), "keys", (json_int_t)run_keys,
                                              "bytes_estimate", (json_int_t)run_bytes));
        keys += run_keys;
        bytes += run_bytes;
        i = j;
    }
    json_t *shards = json_array();
    for (int s = 0; s < v->nshards; s++) {
        char name[16];
        slot_view_shard_name(s, name);
        json_array_append_new(shards, json_pack("{s:s, s:f, s:f}", "id", name, "weight_before",
                                                plan->before[s], "weight_after", plan->after[s]));
    }
    return json_pack("{s:s, s:f, s:I, s:I, s:I, s:o, s:o}", "load_measure", v->load_measure,
                     "share", plan->share, "slots", (json_int_t)plan->nmoves, "keys",
                     (json_int_t)keys, "bytes_estimate", (json_int_t)bytes, "shards", shards,
                     "moves", runs);
}
