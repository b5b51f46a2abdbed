/* sizing.c -- the sizing model (sizing.h). */
#include "sizing.h"

double sizing_usable_gib(double node_gib)
{
    return node_gib * (1.0 - SIZING_RESERVED_FRACTION - SIZING_HEADROOM_FRACTION);
}
