/* reshard.h -- which hash slots move where when a cluster's shards change
 * or its load is uneven: the plan behind adding and removing shards and
 * behind a rebalance. Pure: slot owners and per-slot weights in, moves out.
 *
 * A slot's weight is what it costs its shard -- its key count, or its CPU
 * time where the engine measures it (CLUSTER SLOT-STATS), as the caller
 * decides; when every weight is 0 (an empty cluster) the slots themselves
 * are balanced. Each shard that stays should end with a fair share, the
 * total over the shards that stay or arrive; shards that leave give every
 * slot away. The plan moves as little as it can: a shard above its share
 * gives slots from the end of its ranges until it is not, shards that
 * leave give all, and the slots given go, in slot order, to the shards
 * furthest below their share -- so a new shard gets few, long ranges, and
 * no slot moves between two shards that both stay unless one is above its
 * share. A single slot heavier than a share (one hot key) is never split,
 * only placed. */
#ifndef CAIRN_RESHARD_H
#define CAIRN_RESHARD_H

#include <stdbool.h>
#include <stddef.h>

#define RESHARD_SLOTS 16384

/* The cluster as it is and as it is to be. */
struct reshard_input {
    int nshards;          /* shards before and after: 0..nshards-1 */
    const int *owner;     /* [RESHARD_SLOTS]: the shard that serves each slot now */
    const double *weight; /* [RESHARD_SLOTS], >= 0; NULL: every slot the same */
    const bool *leaving;  /* [nshards]: gives all its slots away; NULL: none */
    double tolerance;     /* a shard within share * (1 + tolerance) is left alone */
};

struct reshard_move {
    int slot, from, to;
};

struct reshard_plan {
    struct reshard_move *moves; /* in slot order */
    size_t nmoves;
    double share;           /* the fair weight of a shard that stays */
    double *before, *after; /* [nshards]: each shard's weight */
};

/* Plan the moves; false (nothing allocated) when the input is impossible:
 * no shard stays, a slot's owner out of range, a negative weight. Free the
 * plan with reshard_plan_free(). */
bool reshard_plan(const struct reshard_input *in, struct reshard_plan *out);

void reshard_plan_free(struct reshard_plan *plan);

#endif
