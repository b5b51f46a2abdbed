/* ha.h -- high availability: automatic failover of cluster-mode-disabled
 * groups, fencing of old primaries that return, and forced failover of
 * cluster-mode shards left without a primary. The host monitor runs one
 * tick every HA period on every cairnd; the database decides which of them
 * acts on a group. See ha.c for the rules. */
#ifndef CAIRN_HA_H
#define CAIRN_HA_H

#include <stdbool.h>

#include "app.h"

/* A replica's agent that reports its primary silent this long (its
 * primary_silent_ms) makes cairnd look at the primary's host at once: its
 * agent is asked to report, and the host is lost if that agent stays
 * silent and the host's engines do not answer a majority of the vantage
 * points (cairnd and the replicas' agents) for HA_LOST_MS. */
#define HA_SUSPECT_MS 500
#define HA_LOST_MS    1000

struct ha;

struct ha *ha_new(struct app *app);
void ha_free(struct ha *h);

/* Look for groups to fail over, stray primaries to demote and leaderless
 * shards to repair, and act on each; a host's loss counts only with
 * trust_losses (monitor_trusts_losses()). Blocks for the engine commands it
 * sends (bounded by short timeouts). */
void ha_tick(struct ha *h, bool trust_losses);

#endif
