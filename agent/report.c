/* report.c -- JSON bodies of register and sync. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "converge.h"
#include "watch.h"

/* Encode j (a reference taken over) to text, aborting on out of memory. */
static char *dump(json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

    if (text == NULL) {
        fprintf(stderr, "cairn-agent: out of memory encoding a request\n");
        abort();
    }
    json_decref(j);
    return text;
}

json_t *agent_report_engines(const struct engine_binary *bins, size_t n)
{
    json_t *arr = json_array();

    for (size_t i = 0; i < n && i < AGENT_REPORT_MAX_ENGINES; i++)
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:s}", "engine", engine_kind_name(bins[i].kind),
                           "version", bins[i].version, "line", bins[i].line, "path", bins[i].path));
    return arr;
}

/* What the node's own engine is known to be and do (agent_report_node()). */
static json_t *engine_report(const struct agent_node *n, int64_t now_us)
{
    bool alive = n->pid != 0;
    /* Only what was read of this very process: a reading of the one before
     * a restart says nothing of it. */
    bool seen = alive && n->seen.valid && n->seen.process_id == n->pid;
    bool settled = seen && n->healthy_since_us > 0 &&
                   n->seen.at_us - n->healthy_since_us >= AGENT_ROLE_SETTLE_US;
    const char *engine = n->has_run  ? engine_kind_name(n->run.kind)
                         : n->wanted ? engine_kind_name(n->want.kind)
                                     : NULL;
    int port = n->has_run && (alive || !n->wanted) ? n->run.port : n->wanted ? n->want.port : 0;
    const char *version = NULL;
    const char *link = NULL;

    if (engine == NULL)
        return NULL;
    if (alive)
        version = n->seen.version[0] ? n->seen.version : n->run.version;
    if (seen && n->seen.link_up >= 0)
        link = n->seen.link_up ? "up" : "down";
    /* How old the INFO behind role, link and sync is: cairnd keeps its
     * own, newer reading of them over an older one. */
    json_t *age = seen ? json_integer((now_us - n->seen.at_us) / 1000) : json_null();
    return json_pack("{s:s, s:o, s:s, s:i, s:o, s:s, s:o, s:o, s:o, s:b, s:b, s:i, s:o}", "node_id",
                     n->id, "pid", alive ? json_integer(n->pid) : json_null(), "status",
                     agent_converge_state_name(n->state), "port", port, "role",
                     settled ? json_string(n->seen.replica ? "replica" : "primary") : json_null(),
                     "engine", engine, "version", version ? json_string(version) : json_null(),
                     "replication_offset",
                     seen && n->seen.has_offset ? json_integer(n->seen.offset) : json_null(),
                     "master_link_status", link ? json_string(link) : json_null(),
                     "sync_in_progress", seen && n->seen.sync_in_progress, "loading",
                     alive && (n->state == AGENT_NODE_LOADING || (seen && n->seen.loading)),
                     "restarts", (int)n->restarts, "observed_ms_ago", age);
}

json_t *agent_report_node(const struct agent_node *n, int64_t now_us)
{
    json_t *j = engine_report(n, now_us);

    /* A replica whose primary this host watches: how long that primary has
     * not answered, one vantage point's word on whether it is gone. */
    if (j != NULL && n->watch != NULL)
        json_object_set_new(j, "primary_silent_ms",
                            json_integer(agent_watch_silent_ms(&n->heard, now_us)));
    /* A cluster-mode node's epoch, read with the INFO behind its role:
     * cairnd tells a stale claim to be primary by it. */
    if (j != NULL && n->pid != 0 && n->seen.valid && n->seen.process_id == n->pid &&
        n->seen.has_epoch)
        json_object_set_new(j, "config_epoch", json_integer(n->seen.config_epoch));
    /* What the agent put back since it started: the engine's users, the
     * primary a replica follows, its guarded settings, and Cairn's login
     * (by a restart). */
    if (j != NULL && n->users_repairs > 0)
        json_object_set_new(j, "users_repairs", json_integer(n->users_repairs));
    if (j != NULL && n->repoints > 0)
        json_object_set_new(j, "repoints", json_integer(n->repoints));
    if (j != NULL && n->config_repairs > 0)
        json_object_set_new(j, "config_repairs", json_integer(n->config_repairs));
    if (j != NULL && n->login_repairs > 0)
        json_object_set_new(j, "login_repairs", json_integer(n->login_repairs));
    return j;
}

char *agent_report_register(const struct agent *a)
{
    const struct agent_settings *c = a->cfg;

    return dump(json_pack("{s:s, s:s, s:s, s:i, s:I, s:{s:i, s:i}, s:O, s:s}", "name", c->name,
                          "az", c->az, "address", c->address, "vcpus", c->vcpus, "memory_mib",
                          (json_int_t)c->memory_mib, "ports", "min", c->port_min, "max",
                          c->port_max, "engines", a->engines, "agent_version", AGENT_VERSION));
}

bool agent_report_urgent(const struct agent *a)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct agent_node *n = a->nodes[i];
        if (n->state == AGENT_NODE_CRASHED || n->state == AGENT_NODE_UNRESPONSIVE ||
            n->primary_silent)
            return true;
    }
    return false;
}

char *agent_report_sync(const struct agent *a, int wait_ms, int64_t now_us)
{
    json_t *nodes = json_array();

    for (size_t i = 0; i < a->n_nodes; i++) {
        json_t *node = agent_report_node(a->nodes[i], now_us);
        if (node != NULL)
            json_array_append_new(nodes, node);
    }
    return dump(json_pack("{s:I, s:i, s:O, s:o}", "generation", (json_int_t)a->generation,
                          "wait_ms", wait_ms, "engines", a->engines, "nodes", nodes));
}
