/* desired.c -- reading cairnd's desired set (see desired.h). */
#include "desired.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

bool agent_desired_valid_id(const char *s)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return s[36] == '\0';
}

/* The string member key of obj, or NULL when absent or not a string. */
static const char *str_member(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* Name the field of nodes[index] at fault; always false. */
static bool refuse(size_t index, const char *field, char *err, size_t errsize)
{
    snprintf(err, errsize, "nodes[%zu]%s is missing or invalid", index, field);
    return false;
}

static bool parse_node(const json_t *j, size_t index, struct agent_desired_node *n, char *err,
                       size_t errsize)
{
    const char *id = str_member(j, "node_id");
    const char *engine = str_member(j, "engine");
    const char *line = str_member(j, "version");
    const char *policy = str_member(j, "restart_policy");
    const json_t *port = json_object_get(j, "port");
    const json_t *run = json_object_get(j, "run");
    const json_t *deleted = json_object_get(j, "deleted");
    const json_t *config = json_object_get(j, "config");

    memset(n, 0, sizeof(*n));
    n->policy = AGENT_RESTART_ALWAYS;
    if (!json_is_object(j))
        return refuse(index, "", err, errsize);
    if (id == NULL || !agent_desired_valid_id(id))
        return refuse(index, ".node_id", err, errsize);
    if (engine == NULL || !engine_kind_from_name(engine, &n->kind))
        return refuse(index, ".engine", err, errsize);
    if (line == NULL || !engine_line_parse(line, NULL, NULL))
        return refuse(index, ".version", err, errsize);
    if (!json_is_integer(port) || json_integer_value(port) < 1 || json_integer_value(port) > 65535)
        return refuse(index, ".port", err, errsize);
    if (!json_is_boolean(run))
        return refuse(index, ".run", err, errsize);
    if (deleted != NULL && !json_is_boolean(deleted))
        return refuse(index, ".deleted", err, errsize);
    if (policy != NULL && !agent_converge_parse_policy(policy, &n->policy))
        return refuse(index, ".restart_policy", err, errsize);
    if (config != NULL && !json_is_object(config) && !json_is_null(config))
        return refuse(index, ".config", err, errsize);
    snprintf(n->node_id, sizeof(n->node_id), "%s", id);
    snprintf(n->line, sizeof(n->line), "%s", line);
    n->port = (int)json_integer_value(port);
    n->run = json_is_true(run);
    n->deleted = json_is_true(deleted);
    n->config = json_is_object(config) ? json_incref((json_t *)config) : json_object();
    n->spec = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    if (n->spec == NULL)
        n->spec = xstrdup("");
    return true;
}

bool agent_desired_parse(const json_t *body, struct agent_desired *out, char *err, size_t errsize)
{
    const json_t *gen = json_object_get(body, "generation");
    const json_t *hb = json_object_get(body, "heartbeat_timeout_s");
    const json_t *nodes = json_object_get(body, "nodes");
    size_t i;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(body)) {
        snprintf(err, errsize, "the answer is not a JSON object");
        return false;
    }
    if (!json_is_integer(gen) || json_integer_value(gen) < 0) {
        snprintf(err, errsize, "generation is missing or invalid");
        return false;
    }
    if (!json_is_array(nodes)) {
        snprintf(err, errsize, "nodes is missing or not an array");
        return false;
    }
    out->generation = json_integer_value(gen);
    if (json_is_integer(hb) && json_integer_value(hb) > 0 && json_integer_value(hb) < 86400)
        out->heartbeat_timeout_s = (int)json_integer_value(hb);
    out->nodes = xcalloc(json_array_size(nodes), sizeof(*out->nodes));
    for (i = 0; i < json_array_size(nodes); i++) {
        if (!parse_node(json_array_get(nodes, i), i, &out->nodes[i], err, errsize))
            goto fail;
        out->n_nodes = i + 1;
        if (agent_desired_find(out, out->nodes[i].node_id) != &out->nodes[i]) {
            snprintf(err, errsize, "nodes[%zu].node_id repeats \"%s\"", i, out->nodes[i].node_id);
            goto fail;
        }
    }
    /* Each upload is checked where it is taken on (upload.c). */
    const json_t *uploads = json_object_get(body, "uploads");
    out->uploads = json_is_array(uploads) ? json_deep_copy(uploads) : json_array();
    return true;
fail:
    agent_desired_free(out);
    return false;
}

const struct agent_desired_node *agent_desired_find(const struct agent_desired *d,
                                                    const char *node_id)
{
    for (size_t i = 0; i < d->n_nodes; i++) {
        if (strcmp(d->nodes[i].node_id, node_id) == 0)
            return &d->nodes[i];
    }
    return NULL;
}

void agent_desired_node_copy(struct agent_desired_node *dst, const struct agent_desired_node *src)
{
    *dst = *src;
    dst->config = json_incref(src->config);
    dst->spec = xstrdup(src->spec);
}

void agent_desired_node_clear(struct agent_desired_node *node)
{
    json_decref(node->config);
    free(node->spec);
    memset(node, 0, sizeof(*node));
}

void agent_desired_free(struct agent_desired *d)
{
    for (size_t i = 0; i < d->n_nodes; i++)
        agent_desired_node_clear(&d->nodes[i]);
    free(d->nodes);
    json_decref(d->uploads);
    memset(d, 0, sizeof(*d));
}
