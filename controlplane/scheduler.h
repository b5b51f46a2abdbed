/* scheduler.h -- placement arithmetic shared by everything that puts nodes on
 * hosts. Pure functions; the store applies their answers. */
#ifndef CAIRN_SCHED_H
#define CAIRN_SCHED_H

#include <stddef.h>

/* The lowest port in [min, max] that is not in used[0..n) (any order), or
 * -1 when the range is full. */
int sched_pick_port(int min, int max, const int *used, size_t n);

#endif
