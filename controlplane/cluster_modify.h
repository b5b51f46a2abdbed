/* cluster_modify.h -- PATCH and PUT of a cluster (cluster_modify.c). */
#ifndef CAIRN_CLUSTER_MODIFY_H
#define CAIRN_CLUSTER_MODIFY_H

#include <jansson.h>
#include <stdbool.h>

#include "app.h"
#include "problem.h"

/* What a modification did beyond storing the spec. */
struct cluster_modify_out {
    char op_id[40]; /* the operation queued or scheduled, or "" */
    bool accepted;  /* the reply is 202 with op_id's Location (an engine upgrade) */
};

/* Change a cluster's spec: body is a JSON merge patch of the spec (replace
 * false) or a whole spec (replace true, defaults filled in), with the
 * request's flags apply_immediately and allow_combined_changes. if_match is
 * the generation the client read, or -1. Each changed field is carried out
 * as its row in the change table says (changes.h): stored at once, or by an
 * operation queued in the same transaction; refused, with nothing stored,
 * when the table or a check says no. A request that changes nothing
 * succeeds and stores nothing. False with p filled on any refusal or
 * database failure. */
bool cluster_modify(struct app *app, const char *cluster_id, const json_t *body, bool replace,
                    long long if_match, struct cluster_modify_out *out, struct problem *p);

#endif
