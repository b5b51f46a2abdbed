/* outbox.h -- the metric samples waiting to go to cairnd: a bounded queue,
 * oldest first, and the body of POST /v1/agent/metrics made from its head.
 *
 * While cairnd cannot be reached the queue grows up to its limit; past it
 * the oldest sample is dropped and counted, and the count goes out in the
 * next request's "dropped". A request takes samples from the head and marks
 * them in flight; when it ends they are removed (accepted, or refused for
 * good) or kept for the next try (failed). Pure: no I/O. */
#ifndef CAIRN_AGENT_OUTBOX_H
#define CAIRN_AGENT_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect.h"
#include "desired.h"

/* Samples kept while cairnd is unreachable (about 300 bytes each): with
 * 10 nodes and 60 s periods, the last 16 hours. */
#define AGENT_OUTBOX_MAX 10000

/* The protocol's limit on samples per request, and the agent's own limit
 * on a request's size, under cairnd's default --max-body-bytes. */
#define AGENT_PUSH_MAX_SAMPLES 5000
#define AGENT_PUSH_MAX_BYTES   (1000u * 1000u)

/* One node's values for one period: only the metrics that have a value,
 * in catalog order. */
struct agent_sample {
    char node_id[AGENT_NODE_ID_MAX];
    int64_t at;       /* the period's start, epoch seconds */
    uint64_t present; /* bit i: catalog position i has a value */
    double v[];       /* one per bit set, lowest position first */
};

struct agent_outbox {
    struct agent_sample **ring;
    size_t cap, head, count;
    size_t limit;
    bool sending;                   /* a request is under way */
    size_t inflight;                /* the oldest this many are in it (fewer once dropped) */
    unsigned long long dropped;     /* since the last accepted request */
    unsigned long long dropped_out; /* the part of dropped the request under way reports */
};

enum agent_outbox_end {
    AGENT_OUTBOX_ACCEPTED, /* cairnd took them: remove them, and the drops they reported */
    AGENT_OUTBOX_REFUSED,  /* cairnd will never take them (4xx): remove them */
    AGENT_OUTBOX_FAILED,   /* try again later: keep them */
};

/* A sample of node_id for the period starting at `at` with the finite
 * values of v (den 0 throughout, as agent_period_result() gives), or NULL
 * when none has a value. Free with free(). */
struct agent_sample *agent_sample_new(const char *node_id, int64_t at,
                                      const struct agent_values *v);

/* The value of catalog position i in s into *out; false when s has none. */
bool agent_sample_get(const struct agent_sample *s, size_t i, double *out);

/* An empty outbox holding at most limit samples (>= 1). */
void agent_outbox_init(struct agent_outbox *o, size_t limit);

/* Free every sample and the queue. */
void agent_outbox_free(struct agent_outbox *o);

/* Append s (taken over). When the outbox is full the oldest sample is
 * freed and counted in dropped; returns whether that happened. */
bool agent_outbox_add(struct agent_outbox *o, struct agent_sample *s);

/* Samples waiting, in flight included. */
size_t agent_outbox_count(const struct agent_outbox *o);

/* The body of the next request, from the oldest samples: at most
 * max_samples of them and, beyond the first, no more than max_bytes in all:
 *     {"period_s":60,"dropped":0,"samples":[{"node_id":"...","at":1764504000,
 *      "values":{"CPUUtilization":12.5,...}},...]}
 * Marks them in flight. Returns text to free, or NULL when the outbox is
 * empty or a request is already in flight. */
char *agent_outbox_begin(struct agent_outbox *o, int period_s, size_t max_samples,
                         size_t max_bytes);

/* The request begun last has ended as `how`. */
void agent_outbox_end(struct agent_outbox *o, enum agent_outbox_end how);

#endif
