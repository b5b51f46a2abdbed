/* desired.h -- the desired set of engine processes, as cairnd's sync
 * answer states it.
 *
 * A tolerant reader: fields the agent does not know are ignored (cairnd may
 * grow the answer); the fields it needs are checked, and a malformed answer
 * is refused as a whole rather than half-applied. */
#ifndef CAIRN_AGENT_DESIRED_H
#define CAIRN_AGENT_DESIRED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "converge.h"

/* Node ids are UUIDs ("0b9f4a1e-5d2c-4f7e-9a3b-1c2d3e4f5a6b") and name
 * directories; room for one and its terminator. */
#define AGENT_NODE_ID_MAX 37

struct agent_desired_node {
    char node_id[AGENT_NODE_ID_MAX];
    enum engine_kind kind;
    char line[ENGINE_LINE_MAX]; /* catalog line: "8.0" */
    int port;
    bool run;
    bool deleted;
    enum agent_restart_policy policy;
    json_t *config; /* the "config" object, one reference owned */
    char *spec;     /* the whole node object as canonical JSON, to spot changes */
};

struct agent_desired {
    int64_t generation;
    int heartbeat_timeout_s; /* 0 when not given */
    struct agent_desired_node *nodes;
    size_t n_nodes;
    json_t *uploads; /* the snapshot files cairnd asks for (upload.h): an array, owned */
};

/* Parse a sync answer (or a saved copy of one) into out. Returns false
 * with a message naming the field, leaving out empty. Pure. */
bool agent_desired_parse(const json_t *body, struct agent_desired *out, char *err, size_t errsize);

/* The desired node with this id, or NULL. */
const struct agent_desired_node *agent_desired_find(const struct agent_desired *d,
                                                    const char *node_id);

/* Whether s is a node id: a UUID in text form, which is also safe as a
 * directory name. Pure. */
bool agent_desired_valid_id(const char *s);

/* Copy / free one node (deep; the copy holds its own config reference). */
void agent_desired_node_copy(struct agent_desired_node *dst, const struct agent_desired_node *src);
void agent_desired_node_clear(struct agent_desired_node *node);

/* Free everything out owns and zero it. */
void agent_desired_free(struct agent_desired *d);

#endif
