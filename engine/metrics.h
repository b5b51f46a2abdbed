/* metrics.h -- the metrics Cairn collects, by their ElastiCache names: one
 * catalog shared by cairn-agent (which derives them) and cairnd (which
 * stores them by their position here and answers queries about them).
 *
 * Positions are part of the stored format: append new metrics at the end,
 * never reorder or remove one (retire it by leaving it unused). */
#ifndef CAIRN_METRICS_H
#define CAIRN_METRICS_H

#include <stdbool.h>
#include <stddef.h>

enum metric_kind {
    METRIC_GAUGE,   /* a level: the period's value is the average of its samples */
    METRIC_COUNTER, /* a count of events in the period (a delta, never a raw total) */
};

enum metric_source {
    METRIC_HOST,   /* /proc of the VM */
    METRIC_ENGINE, /* the engine's INFO */
};

struct metric_def {
    const char *name; /* "CPUUtilization" */
    const char *unit; /* CloudWatch units: "Percent", "Bytes", "Count", "Microseconds"... */
    enum metric_kind kind;
    enum metric_source source;
    const char *description; /* one sentence, for the catalog */
};

/* The catalog, in stored order. */
extern const struct metric_def metric_catalog[];
extern const size_t metric_count;

/* The position of name in the catalog, or -1. */
int metric_index(const char *name);

#endif
