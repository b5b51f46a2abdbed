/* slot_view.h -- a cluster-mode cluster's hash slots as its primaries say
 * they are right now: which shard serves each slot, which moves are open (a
 * slot MIGRATING on one primary or IMPORTING on another, left half done by
 * a cairnd that died or by another tool), what each slot weighs, and about
 * how many bytes its keys take. Read live, by the rebalance preview and by
 * the scaling operations before they plan (reshard.h), so a plan never
 * rests on what the store last heard.
 *
 * A slot's weight is its CPU time where the engines measure it (CLUSTER
 * SLOT-STATS cpu-usec, Valkey 8.1 with cluster-slot-stats-enabled), else
 * its key count (SLOT-STATS key-count, Valkey 8.0), else nothing: on Redis
 * 7.0, which has no SLOT-STATS, every slot weighs the same -- keys spread
 * over slots by a hash, so slot counts are a fair proxy unless the keys
 * share hash tags. Bytes are an estimate: a slot's keys times its shard's
 * data bytes per key (INFO used_memory_dataset over db0's keys). */
#ifndef CAIRN_SLOT_VIEW_H
#define CAIRN_SLOT_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "cluster.h"
#include "cluster_nodes.h"
#include "reshard.h"

struct slot_shard {
    const struct cluster_node *primary; /* the node that says it is one; NULL: none */
    char id[ENGINE_CLUSTER_ID_LEN + 1]; /* its engine node id */
    long long keys, data_bytes;         /* db0's keys, used_memory_dataset */
    long long used_memory;              /* used_memory: what the data takes */
};

struct slot_open_move {
    int slot, from, to; /* shard indexes */
};

struct slot_view {
    struct cluster_nodes nodes;
    char *password;
    bool cluster_mode;
    int nshards; /* shard indexes 0..nshards-1 */
    struct slot_shard *shards;
    int *owner;               /* [RESHARD_SLOTS]: the serving shard; -1: none */
    long long *keys;          /* [RESHARD_SLOTS]: keys, measured or estimated */
    double *weight;           /* [RESHARD_SLOTS], or NULL: every slot the same */
    const char *load_measure; /* "cpu-usec", "key-count" or "slot-count", as slot-stats says */
    struct slot_open_move *open;
    size_t nopen;
};

/* Read the view of the cluster: every shard must have a primary that
 * answers. Without weigh, no per-slot figures are read (weight stays NULL,
 * keys estimated): enough to move slots, not to plan. False with err when
 * it cannot be read. Free with slot_view_free() either way. */
bool slot_view_load(struct app *app, const char *cluster_id, bool weigh, struct slot_view *v,
                    char *err, size_t errsize);
void slot_view_free(struct slot_view *v);

/* The estimated bytes of slot's keys. */
long long slot_view_bytes(const struct slot_view *v, int slot);

/* The plan's moves as the journal takes them: [{slot, from_shard, to_shard,
 * keys, bytes}]. */
json_t *slot_view_moves_json(const struct slot_view *v, const struct reshard_plan *plan);

/* The plan as a preview shows it: the moves grouped into runs of
 * consecutive slots between the same two shards ([{from_shard, to_shard,
 * slots: "first-last", slot_count, keys, bytes_estimate}]), the totals, and
 * each shard's weight before and after. */
json_t *slot_view_preview_json(const struct slot_view *v, const struct reshard_plan *plan);

/* A shard's index as users see it: "0001" for 0. */
void slot_view_shard_name(int index, char out[16]);

#endif
