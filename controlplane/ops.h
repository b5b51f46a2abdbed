/* ops.h -- every kind of operation, in one list.
 *
 * Each kind is defined next to its steps (ops_cluster.c, ops_upgrade.c);
 * op_kinds lists them all, in the order the API documents them. cairnd
 * hands it to the runner; the API's ?kind= filter takes its names from it;
 * `cairnd operation-kinds` prints them, and tests compare that with the
 * OpenAPI document's OperationKind, the operations table's CHECK and the
 * kinds the SQL names. A new kind is added here and nowhere else in C.
 *
 * Some kinds are reserved: the API and the operations table know their
 * names, but no version of cairnd runs them yet. They have no steps, so
 * no runner claims one. */
#ifndef CAIRN_OPS_H
#define CAIRN_OPS_H

#include "runner.h"

/* Every kind, NULL-terminated. */
extern const struct op_kind *const op_kinds[];

/* The names of op_kinds, in its order, NULL-terminated: a one_of list.
 * Static; built on the first call, from any thread. */
const char *const *op_kind_names(void);

#endif
