/* fuzz_engine_text.c -- the engine's text replies as cairnd and the agent
 * read them: the first input byte picks INFO (engine/info.h, then the
 * agent's metric snapshot of it, agent/collect.h) or CLUSTER NODES
 * (engine/cluster.h), which is also healed as a nodes.conf and read as
 * CLUSTER INFO for the configuration epoch (engine/topology.h); the rest is
 * the reply.
 *
 * Promises: a parsed CLUSTER NODES holds ports and slot ranges within
 * their bounds; a nodes.conf is healed only where it says it was; nothing
 * leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "collect.h"
#include "fuzz.h"
#include "info.h"
#include "topology.h"

static void check_info(const char *text, size_t len)
{
    struct engine_info *info = engine_info_parse(text, len);
    struct agent_engine_snap snap, later;
    struct agent_values out = {0};
    long long v;
    double d;

    if (info == NULL)
        return;
    engine_info_get(info, "server", "run_id");
    engine_info_get_ll(info, "replication", "master_repl_offset", &v);
    engine_info_get_double(info, "memory", "mem_fragmentation_ratio", &d);
    if (agent_collect_engine(info, NULL, 1000000, &snap) &&
        agent_collect_engine(info, NULL, 61000000, &later)) {
        struct agent_engine_first young = {
            .since_us = 1000000, .started = true, .started_us = 1000000};
        agent_collect_engine_interval(&snap, &later, NULL, &out);
        agent_collect_engine_interval(NULL, &later, &young, &out);
        agent_collect_engine_interval(NULL, &later, NULL, &out);
        agent_collect_lag(&later, NULL, &out);
    }
    engine_info_free(info);
}

static void check_cluster_nodes(const char *text, size_t len)
{
    struct engine_cluster_nodes nodes;
    char err[256];
    int myself = 0;

    if (!engine_cluster_nodes_parse(text, len, &nodes, err, sizeof(err))) {
        FUZZ_ASSERT(nodes.count == 0 && nodes.nodes == NULL);
        return;
    }
    for (size_t i = 0; i < nodes.count; i++) {
        const struct engine_cluster_node *n = &nodes.nodes[i];
        FUZZ_ASSERT(n->port >= 0 && n->port <= 65535);
        for (size_t r = 0; r < n->nranges; r++)
            FUZZ_ASSERT(n->ranges[r].start >= 0 && n->ranges[r].start <= n->ranges[r].end &&
                        n->ranges[r].end < 16384);
        engine_cluster_node_slot_count(n);
        myself += (n->flags & ENGINE_CLUSTER_MYSELF) != 0;
    }
    FUZZ_ASSERT(myself <= 1 || engine_cluster_nodes_myself(&nodes) != NULL);
    engine_cluster_nodes_free(&nodes);
}

static void check_nodes_conf(const char *text, size_t len)
{
    size_t healed = 0, again = 0;
    char *fixed = engine_nodes_conf_heal(text, len, &healed);

    if (fixed == NULL) {
        FUZZ_ASSERT(healed == 0);
        return;
    }
    FUZZ_ASSERT(healed > 0 && memcmp(fixed, text, len) != 0);
    char *twice = engine_nodes_conf_heal(fixed, len, &again);
    /* A replica's primary may itself be a replica in a file no engine
     * wrote; short of that, one pass heals everything. */
    free(twice);
    free(fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        check_info((const char *)data + 1, size - 1);
    else
        check_cluster_nodes((const char *)data + 1, size - 1);
    if (!(data[0] & 1)) {
        long long epoch = -1;
        check_nodes_conf((const char *)data + 1, size - 1);
        if (engine_cluster_info_epoch_parse((const char *)data + 1, size - 1, &epoch))
            FUZZ_ASSERT(epoch >= 0);
    }
    return 0;
}
