/* slot_advice.h -- which slots to move to cool a hot shard, from per-slot
 * statistics (CLUSTER SLOT-STATS). Pure.
 *
 * A shard is hot when its load is more than HOT_FACTOR times the mean of
 * the shards'. Moving its hottest slot would only move the hot spot (often
 * one hot key) to another shard; the advice moves the second-hottest slot
 * and the next ones, in order of load, until the shard would be down to the
 * mean, to the coolest shard. */
#ifndef CAIRN_SLOT_ADVICE_H
#define CAIRN_SLOT_ADVICE_H

#include <stdbool.h>
#include <stddef.h>

#define SLOT_ADVICE_HOT_FACTOR 1.2

struct slot_load {
    int slot;
    double load; /* cpu-usec, or key count when the engine does not measure CPU */
};

struct shard_slots {
    struct slot_load *slots; /* sorted here, hottest first */
    size_t n;
    /* results */
    double load;
    bool hot;
    size_t move_from, move_count; /* slots[move_from .. move_from + move_count) */
    int to_shard;                 /* index of the shard to move them to; -1: none */
    double load_after;
};

/* Fill the results of every shard; returns the mean load. */
double slot_advise(struct shard_slots *shards, size_t n);

/* Whether a shard of load is hot among n shards whose mean load is mean:
 * there are others to take load, and it carries more than HOT_FACTOR times
 * the mean. The rule slot_advise() marks shards by, for any measure of load
 * (slot CPU or keys here, a shard's metrics for right-sizing). */
bool slot_advice_hot(double load, double mean, size_t n);

#endif
