/* outbox.c -- metric samples waiting for cairnd, and the push body (see
 * outbox.h). */
#include "outbox.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "strbuf.h"
#include "xalloc.h"

/* ---- samples ------------------------------------------------------------- */

struct agent_sample *agent_sample_new(const char *node_id, int64_t at, const struct agent_values *v)
{
    uint64_t present = 0;
    unsigned n = 0;

    for (size_t i = 0; i < metric_count && i < AGENT_METRICS_MAX; i++) {
        if (v->has[i] && isfinite(v->v[i])) {
            present |= UINT64_C(1) << i;
            n++;
        }
    }
    if (n == 0)
        return NULL;
    struct agent_sample *s = xmalloc(sizeof(*s) + n * sizeof(s->v[0]));
    snprintf(s->node_id, sizeof(s->node_id), "%s", node_id);
    s->at = at;
    s->present = present;
    n = 0;
    for (size_t i = 0; i < AGENT_METRICS_MAX; i++) {
        if (present & (UINT64_C(1) << i))
            s->v[n++] = v->v[i];
    }
    return s;
}

bool agent_sample_get(const struct agent_sample *s, size_t i, double *out)
{
    uint64_t bit;

    if (i >= AGENT_METRICS_MAX || !(s->present & (bit = UINT64_C(1) << i)))
        return false;
    *out = s->v[__builtin_popcountll(s->present & (bit - 1))];
    return true;
}

/* ---- the queue ----------------------------------------------------------- */

void agent_outbox_init(struct agent_outbox *o, size_t limit)
{
    assert(limit >= 1);
    memset(o, 0, sizeof(*o));
    o->limit = limit;
}

void agent_outbox_free(struct agent_outbox *o)
{
    for (size_t i = 0; i < o->count; i++)
        free(o->ring[(o->head + i) % o->cap]);
    free(o->ring);
    memset(o, 0, sizeof(*o));
}

static void drop_oldest(struct agent_outbox *o)
{
    free(o->ring[o->head]);
    o->head = (o->head + 1) % o->cap;
    o->count--;
    if (o->inflight > 0)
        o->inflight--; /* gone from the request's share too: it is not removed twice */
}

/* Grow the ring (it starts small: an agent that reaches cairnd keeps a
 * handful of samples), unwrapping it into the new array. */
static void grow(struct agent_outbox *o)
{
    size_t cap = o->cap ? o->cap * 2 : 64;
    struct agent_sample **ring;

    if (cap > o->limit)
        cap = o->limit;
    ring = xcalloc(cap, sizeof(*ring));
    for (size_t i = 0; i < o->count; i++)
        ring[i] = o->ring[(o->head + i) % o->cap];
    free(o->ring);
    o->ring = ring;
    o->cap = cap;
    o->head = 0;
}

bool agent_outbox_add(struct agent_outbox *o, struct agent_sample *s)
{
    bool dropped = false;

    if (o->count == o->limit) {
        drop_oldest(o);
        o->dropped++;
        dropped = true;
    } else if (o->count == o->cap) {
        grow(o);
    }
    o->ring[(o->head + o->count) % o->cap] = s;
    o->count++;
    return dropped;
}

size_t agent_outbox_count(const struct agent_outbox *o)
{
    return o->count;
}

/* ---- the body ------------------------------------------------------------ */

/* A JSON number: integers as such, others with 15 significant digits. */
static void buf_number(struct strbuf *b, double v)
{
    if (fabs(v) < 1e15 && v == (double)(long long)v)
        strbuf_printf(b, "%lld", (long long)v);
    else
        strbuf_printf(b, "%.15g", v);
}

static void buf_sample(struct strbuf *b, const struct agent_sample *s)
{
    unsigned k = 0;

    /* Node ids are UUIDs (agent_desired_valid_id) and metric names plain
     * ASCII words: nothing needs escaping. */
    strbuf_printf(b, "{\"node_id\":\"%s\",\"at\":%lld,\"values\":{", s->node_id, (long long)s->at);
    for (size_t i = 0; i < AGENT_METRICS_MAX; i++) {
        if (!(s->present & (UINT64_C(1) << i)))
            continue;
        strbuf_printf(b, "%s\"%s\":", k > 0 ? "," : "", metric_catalog[i].name);
        buf_number(b, s->v[k++]);
    }
    strbuf_printf(b, "}}");
}

char *agent_outbox_begin(struct agent_outbox *o, int period_s, size_t max_samples, size_t max_bytes)
{
    struct strbuf b;
    size_t n = 0;

    if (o->count == 0 || o->sending)
        return NULL;
    strbuf_init(&b, 4096);
    strbuf_printf(&b, "{\"period_s\":%d,\"dropped\":%llu,\"samples\":[", period_s, o->dropped);
    while (n < o->count && n < max_samples) {
        size_t mark = b.len;
        if (n > 0)
            strbuf_printf(&b, ",");
        buf_sample(&b, o->ring[(o->head + n) % o->cap]);
        if (n > 0 && b.len + 2 > max_bytes) {
            b.len = mark; /* this one waits for the next request */
            b.p[b.len] = '\0';
            break;
        }
        n++;
    }
    strbuf_printf(&b, "]}");
    o->sending = true;
    o->inflight = n;
    o->dropped_out = o->dropped;
    return b.p;
}

void agent_outbox_end(struct agent_outbox *o, enum agent_outbox_end how)
{
    if (how != AGENT_OUTBOX_FAILED) {
        while (o->inflight > 0) {
            free(o->ring[o->head]);
            o->head = (o->head + 1) % o->cap;
            o->count--;
            o->inflight--;
        }
    }
    if (how == AGENT_OUTBOX_ACCEPTED)
        o->dropped -= o->dropped_out;
    o->sending = false;
    o->inflight = 0;
    o->dropped_out = 0;
}
