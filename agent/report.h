/* report.h -- the bodies the agent sends to cairnd: registration and the
 * sync report of every local engine (see the agent protocol). */
#ifndef CAIRN_AGENT_REPORT_H
#define CAIRN_AGENT_REPORT_H

#include <jansson.h>

#include "agent.h"

/* The protocol allows this many entries in "engines". */
#define AGENT_REPORT_MAX_ENGINES 16

/* The "engines" array, [{engine, version, line, path}], for the first
 * AGENT_REPORT_MAX_ENGINES of n binaries. Returns a new reference. Pure. */
json_t *agent_report_engines(const struct engine_binary *bins, size_t n);

/* One entry of the sync report's "nodes" for node n, or NULL when nothing
 * is known of its engine (a directory without node.json that nobody
 * wants); with primary_silent_ms when n is a replica whose primary this
 * host watches. Returns a new reference. Pure. */
json_t *agent_report_node(const struct agent_node *n, int64_t now_us);

/* The register body for the agent's settings and engines (text to free). */
char *agent_report_register(const struct agent *a);

/* The sync body: the applied generation, wait_ms, engines and every node
 * (text to free). */
char *agent_report_sync(const struct agent *a, int wait_ms, int64_t now_us);

/* Whether a sync reports trouble cairnd acts on at once -- an engine
 * crashed or not answering, a primary its replica here finds silent -- and
 * should be heard before the fleet's routine syncs. */
bool agent_report_urgent(const struct agent *a);

#endif
