/* changes.c -- the field -> change table described in changes.h. */
#include "changes.h"

#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "store.h"

/* multi_az asked of a cluster placed without it holds only if no replica
 * shares its primary's AZ: the nodes do not move by themselves. */
static enum db_status multi_az_check(struct db_conn *conn, struct change_request *r,
                                     struct problem *p)
{
    char shard[16], az[64];
    bool breach = false;

    if (!json_is_true(json_object_get(r->next, "multi_az")) ||
        json_is_true(json_object_get(r->stored, "multi_az")))
        return DB_OK;
    enum db_status st = store_cluster_multi_az_breach(conn, r->cluster_id, &breach, shard,
                                                      sizeof(shard), az, sizeof(az));
    if (st != DB_OK || !breach)
        return st;
    problem_set(p, PROBLEM_INSUFFICIENT_CAPACITY,
                "multi_az needs every replica outside its primary's AZ, and shard %s has one in %s "
                "with its primary; replace that node first",
                shard, az);
    return DB_REFUSED;
}

/* In the order the API documents them. */
static const struct change_row rows[] = {
    {"description", CHANGE_AT_ONCE, NULL, true, NULL},
    {"tags", CHANGE_AT_ONCE, NULL, true, NULL},
    {"maintenance_window", CHANGE_AT_ONCE, NULL, true, NULL},
    {"snapshot_window", CHANGE_AT_ONCE, NULL, true, NULL},
    {"snapshot_retention_days", CHANGE_AT_ONCE, NULL, true, NULL},
    {"automatic_failover", CHANGE_AT_ONCE, NULL, true, NULL},
    {"multi_az", CHANGE_AT_ONCE, NULL, true, multi_az_check},
    {"parameters", CHANGE_BY_OPERATION, &change_op_apply_parameters, false, NULL},
    {"engine", CHANGE_BY_OPERATION, &change_op_upgrade_engine, false, NULL},
    {"engine_version", CHANGE_BY_OPERATION, &change_op_upgrade_engine, false, NULL},
    {"node_type", CHANGE_BY_OPERATION, &change_op_change_node_type, false, NULL},
    {"num_shards", CHANGE_BY_OPERATION, &change_op_scale_shards, false, NULL},
    {"replicas_per_shard", CHANGE_BY_OPERATION, &change_op_scale_replicas, false, NULL},
    {"auth_token", CHANGE_AT_ONCE, NULL, true, NULL}, /* cluster_modify.c: change_auth */
    {"id", CHANGE_IMMUTABLE, NULL, true, NULL},
    {"cluster_mode", CHANGE_IMMUTABLE, NULL, true, NULL},
    {"restore_from", CHANGE_IMMUTABLE, NULL, true, NULL},
    /* ElastiCache moves a cluster to TLS through a "preferred" mode serving
     * both; Cairn sets it at creation only, for now. */
    {"transit_encryption", CHANGE_NOT_YET, NULL, true, NULL},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const struct change_row immutable = {"", CHANGE_IMMUTABLE, NULL, true, NULL};

const struct change_row *change_row(const char *field)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(rows[i].field, field) == 0)
            return &rows[i];
    return &immutable;
}

/* Append name to a comma-separated list in buf. */
static void list_add(char *buf, size_t size, const char *name)
{
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, "%s%s", used > 0 ? ", " : "", name);
}

bool change_not_yet(const char *fields, struct problem *p)
{
    char can[256] = "";
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].how == CHANGE_AT_ONCE || rows[i].how == CHANGE_BY_OPERATION)
            list_add(can, sizeof(can), rows[i].field);
    return problem_set(p, PROBLEM_CHANGE_NOT_SUPPORTED_YET,
                       "this version of Cairn cannot change %s of an existing cluster yet; "
                       "these can be changed: %s",
                       fields, can);
}

/* Another operation that runs alone is never carried by this one's run,
 * whatever the request allows. */
static bool refuse_combined(const struct change_plan *plan, const struct change_op *alone,
                            bool allow_combined, struct problem *p)
{
    char apart[256] = "";
    bool other_alone = false;
    for (int i = 0; i < plan->nrows; i++) {
        const struct change_row *row = plan->rows[i];
        if (row->combines || row->op == alone)
            continue;
        list_add(apart, sizeof(apart), row->field);
        other_alone |= row->op != NULL && row->op->alone;
    }
    if (apart[0] == '\0' || (allow_combined && !other_alone))
        return true;
    if (other_alone)
        return problem_set(p, PROBLEM_COMBINED_CHANGES,
                           "%s is not combined with changes to %s, which run an operation of "
                           "their own: make them one at a time",
                           alone->what, apart);
    return problem_set(p, PROBLEM_COMBINED_CHANGES,
                       "%s is not combined with changes to %s: make them one at a time so that "
                       "cause and effect stay apart, or say \"allow_combined_changes\": true",
                       alone->what, apart);
}

static void add_op(struct change_plan *plan, const struct change_op *op)
{
    for (int i = 0; i < plan->nops; i++)
        if (plan->ops[i] == op)
            return;
    if (plan->nops < CHANGE_MAX_OPS)
        plan->ops[plan->nops++] = op;
}

bool change_plan(const json_t *changed, bool allow_combined, struct change_plan *plan,
                 struct problem *p)
{
    const struct change_op *alone = NULL;
    char not_yet[256] = "";
    size_t i;
    json_t *name;

    memset(plan, 0, sizeof(*plan));
    json_array_foreach (changed, i, name) {
        const struct change_row *row = change_row(json_string_value(name));
        if (plan->nrows < (int)(sizeof(plan->rows) / sizeof(plan->rows[0])))
            plan->rows[plan->nrows++] = row;
        if (row->op != NULL && row->op->alone)
            alone = row->op;
    }
    if (alone != NULL && !refuse_combined(plan, alone, allow_combined, p))
        return false;
    for (int k = 0; k < plan->nrows; k++) {
        const char *field = json_string_value(json_array_get(changed, (size_t)k));
        if (plan->rows[k]->how == CHANGE_IMMUTABLE)
            problem_field(p, field, "cannot be changed after the cluster is created");
        else if (plan->rows[k]->how == CHANGE_NOT_YET)
            list_add(not_yet, sizeof(not_yet), field);
    }
    if (p->set)
        return false;
    if (not_yet[0] != '\0')
        return change_not_yet(not_yet, p);
    if (alone != NULL)
        add_op(plan, alone); /* its restart carries the rest */
    for (int k = 0; alone == NULL && k < plan->nrows; k++)
        if (plan->rows[k]->op != NULL)
            add_op(plan, plan->rows[k]->op);
    return true;
}

json_t *change_table_json(void)
{
    static const char *const hows[] = {[CHANGE_AT_ONCE] = "at_once",
                                       [CHANGE_BY_OPERATION] = "operation",
                                       [CHANGE_IMMUTABLE] = "immutable",
                                       [CHANGE_NOT_YET] = "not_yet"};
    json_t *out = json_array();
    for (size_t i = 0; i < NROWS; i++) {
        const struct change_row *r = &rows[i];
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s?, s:b, s:b}", "field", r->field, "change", hows[r->how],
                           "operation", r->op != NULL ? r->op->kind->name : NULL, "alone",
                           r->op != NULL && r->op->alone, "combines", r->combines));
    }
    return out;
}

enum db_status change_queue(struct db_conn *conn, struct change_request *r, struct problem *p,
                            enum db_status st, const char *key, const json_t *pending,
                            const struct op_kind *kind, const json_t *context)
{
    if (st == DB_OK)
        st = store_cluster_mark_modifying(conn, r->cluster_id, key, pending);
    if (st == DB_OK)
        st = store_operation_queue(conn, r->cluster_id, kind->name, context, r->op_id);
    if (st == DB_CONFLICT)
        st = problem_busy(p, r->cluster_id);
    r->poke = true;
    return st;
}
