/* slot_advice.c -- see slot_advice.h. */
#include "slot_advice.h"

#include <stdlib.h>

static int hottest_first(const void *a, const void *b)
{
    const struct slot_load *x = a, *y = b;
    if (x->load != y->load)
        return x->load > y->load ? -1 : 1;
    return x->slot - y->slot;
}

bool slot_advice_hot(double load, double mean, size_t n)
{
    return n > 1 && load > 0 && load > SLOT_ADVICE_HOT_FACTOR * mean;
}

double slot_advise(struct shard_slots *shards, size_t n)
{
    double total = 0, mean;
    size_t coolest = 0;

    for (size_t i = 0; i < n; i++) {
        struct shard_slots *s = &shards[i];
        if (s->n > 1)
            qsort(s->slots, s->n, sizeof(*s->slots), hottest_first);
        s->load = 0;
        for (size_t k = 0; k < s->n; k++)
            s->load += s->slots[k].load;
        total += s->load;
        if (s->load < shards[coolest].load)
            coolest = i;
    }
    mean = n > 0 ? total / (double)n : 0;
    for (size_t i = 0; i < n; i++) {
        struct shard_slots *s = &shards[i];
        s->hot = slot_advice_hot(s->load, mean, n);
        s->move_from = 1;
        s->move_count = 0;
        s->to_shard = -1;
        s->load_after = s->load;
        if (!s->hot || i == coolest)
            continue;
        /* Skip the hottest; take the next ones until the shard would be
         * down to the mean (idle slots would move nothing). */
        double moved = 0;
        for (size_t k = 1; k < s->n && s->slots[k].load > 0 && s->load - moved > mean; k++) {
            moved += s->slots[k].load;
            s->move_count++;
        }
        if (s->move_count > 0) {
            s->to_shard = (int)coolest;
            s->load_after = s->load - moved;
        }
    }
    return mean;
}
