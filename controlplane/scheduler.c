/* scheduler.c -- placement arithmetic. */
#include "scheduler.h"

#include <stdbool.h>
#include <stdlib.h>

#include "xalloc.h"

int sched_pick_port(int min, int max, const int *used, size_t n)
{
    if (max < min)
        return -1;
    size_t span = (size_t)(max - min) + 1;
    bool *taken = xcalloc(span, sizeof(bool));
    int port = -1;

    for (size_t i = 0; i < n; i++) {
        if (used[i] >= min && used[i] <= max)
            taken[used[i] - min] = true;
    }
    for (size_t i = 0; i < span; i++) {
        if (!taken[i]) {
            port = min + (int)i;
            break;
        }
    }
    free(taken);
    return port;
}
