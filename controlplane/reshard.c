/* reshard.c -- the slot moves of a reshard or rebalance (reshard.h). */
#include "reshard.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct given {
    int slot, from;
};

/* The shard that should take a slot of weight w: the one furthest below
 * the share, staying with the current one while it is still below by more
 * than half the slot (so ranges stay long). */
static int receiver(const struct reshard_input *in, const double *cur, double share, int current,
                    double w)
{
    if (current >= 0 && share - cur[current] > w / 2)
        return current;
    int best = -1;
    for (int k = 0; k < in->nshards; k++) {
        if (in->leaving != NULL && in->leaving[k])
            continue;
        if (best < 0 || share - cur[k] > share - cur[best])
            best = k;
    }
    return best;
}

bool reshard_plan(const struct reshard_input *in, struct reshard_plan *out)
{
    double *w = xcalloc(RESHARD_SLOTS, sizeof(*w)), total = 0;
    int staying = 0;

    memset(out, 0, sizeof(*out));
    for (int k = 0; k < in->nshards; k++)
        staying += in->leaving == NULL || !in->leaving[k];
    for (int s = 0; s < RESHARD_SLOTS && staying > 0; s++) {
        w[s] = in->weight != NULL ? in->weight[s] : 1.0;
        if (in->owner[s] < 0 || in->owner[s] >= in->nshards || !(w[s] >= 0)) {
            staying = 0; /* refused below */
            break;
        }
        total += w[s];
    }
    if (staying == 0) {
        free(w);
        return false;
    }
    if (total == 0) { /* nothing measured: the slots themselves */
        for (int s = 0; s < RESHARD_SLOTS; s++)
            w[s] = 1.0;
        total = RESHARD_SLOTS;
    }

    out->share = total / staying;
    out->before = xcalloc((size_t)in->nshards, sizeof(double));
    out->after = xcalloc((size_t)in->nshards, sizeof(double));
    for (int s = 0; s < RESHARD_SLOTS; s++)
        out->before[in->owner[s]] += w[s];
    memcpy(out->after, out->before, (size_t)in->nshards * sizeof(double));

    /* What each shard gives: all of a leaving one's slots; from one above
     * its share (and the tolerance), slots from its end while keeping them
     * would leave it further from the share than giving them. */
    struct given *pool = xcalloc(RESHARD_SLOTS, sizeof(*pool));
    bool *given = xcalloc(RESHARD_SLOTS, sizeof(*given));
    size_t npool = 0;
    double limit = out->share * (1.0 + in->tolerance);
    for (int k = 0; k < in->nshards; k++) {
        bool leave = in->leaving != NULL && in->leaving[k];
        if (!leave && out->after[k] <= limit)
            continue;
        for (int s = RESHARD_SLOTS - 1; s >= 0; s--) {
            if (in->owner[s] != k)
                continue;
            double left = out->after[k] - w[s];
            if (!leave &&
                (out->after[k] <= out->share || out->share - left > out->after[k] - out->share))
                break;
            given[s] = true;
            out->after[k] = left;
        }
    }
    for (int s = 0; s < RESHARD_SLOTS; s++)
        if (given[s])
            pool[npool++] = (struct given){s, in->owner[s]};

    /* Where the given slots go, in slot order. */
    out->moves = xcalloc(npool + 1, sizeof(*out->moves));
    int current = -1;
    for (size_t i = 0; i < npool; i++) {
        int s = pool[i].slot, to = receiver(in, out->after, out->share, current, w[s]);
        current = to;
        out->after[to] += w[s];
        if (to != pool[i].from)
            out->moves[out->nmoves++] = (struct reshard_move){s, pool[i].from, to};
    }
    free(pool);
    free(given);
    free(w);
    return true;
}

void reshard_plan_free(struct reshard_plan *plan)
{
    free(plan->moves);
    free(plan->before);
    free(plan->after);
    memset(plan, 0, sizeof(*plan));
}
