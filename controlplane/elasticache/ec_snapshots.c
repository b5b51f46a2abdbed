/* ec_snapshots.c -- ElastiCache's snapshot actions on Cairn's backups
 * (snapshots.h, docs/backups.md): CreateSnapshot is POST
 * /v1/clusters/{id}/snapshots, DescribeSnapshots GET /v1/snapshots,
 * DeleteSnapshot DELETE /v1/snapshots/{name}, each through the same calls
 * and answered from the same documents. A Cairn snapshot is a whole
 * replication group's, every shard; a snapshot is named by its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec_int.h"
#include "snapshots.h"
#include "store.h"
#include "xmlw.h"

/* DescribeSnapshots pages hold 20 to 50, as ElastiCache's. */
#define EC_SNAPSHOT_RECORDS_MAX 50

bool ec_snapshot_name(struct ec_call *c, const char *param, const char **name)
{
    char msg[128] = "";

    if (!ec_param_required(c, param, name))
        return false;
    json_t *v = json_string(*name);
    bool ok =
        strlen(*name) <= SNAPSHOT_NAME_MAX && v != NULL && snapshot_check_name(v, msg, sizeof(msg));
    json_decref(v);
    if (ok)
        return true;
    if (msg[0] == '\0')
        snprintf(msg, sizeof(msg), "must be at most %d characters", SNAPSHOT_NAME_MAX);
    return ec_invalid(c, "%s %s", param, msg);
}

/* The replication group snap was taken of into *group while it exists
 * (NULL: gone, or another cluster of the same id stands in its place).
 * groups caches the lookups of one call: cluster id -> its document, or
 * null. False after refusing (the database). */
static bool source_group(struct ec_call *c, json_t *groups, const json_t *snap,
                         const json_t **group)
{
    const char *id = json_string_value(json_object_get(snap, "cluster_id"));
    const char *uid = json_string_value(json_object_get(snap, "cluster_uid"));
    json_t *doc = json_object_get(groups, id);
    bool missing = false;

    if (doc == NULL) {
        doc = ec_cluster_find(c, id, &missing);
        if (doc == NULL && !missing)
            return false; /* refused: the database */
        json_object_set_new(groups, id, doc != NULL ? doc : json_null());
    }
    const char *doc_uid = json_string_value(json_object_get(doc, "uid"));
    *group = doc_uid != NULL && uid != NULL && strcmp(doc_uid, uid) == 0 ? doc : NULL;
    return true;
}

/* Answer with the snapshot named (by id or name). */
static bool answer_snapshot(struct ec_call *c, const char *id_or_name)
{
    json_t *snap = ec_snapshot_doc(c, id_or_name), *groups = json_object();
    const json_t *group = NULL;
    bool ok = snap != NULL && source_group(c, groups, snap, &group);

    if (ok)
        ec_render_snapshot(c, snap, group, false);
    json_decref(groups);
    json_decref(snap);
    return ok;
}

bool ec_create_snapshot(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId", "SnapshotName", "CacheClusterId",
                                          "KmsKeyId",           "Tags.",        NULL};
    char id[64], snapshot_id[STORE_UUID_SIZE];
    const char *name;
    struct problem p = {0};

    if (!ec_params_known(c, allowed))
        return false;
    if (ec_param(c, "CacheClusterId") != NULL)
        return ec_invalid(c, "CacheClusterId: a Cairn snapshot is a whole replication group's, "
                             "every shard, taken from in-sync replicas; send ReplicationGroupId");
    if (ec_param(c, "KmsKeyId") != NULL)
        return ec_invalid(c, "KmsKeyId is not supported: Cairn keeps a snapshot's files as the "
                             "engines saved them, gzipped, not encrypted with a key of yours");
    for (size_t i = 0; i < c->form.count; i++)
        if (strncmp(c->form.fields[i].name, "Tags.", 5) == 0)
            return ec_invalid(c, "%s: Cairn's snapshots carry no tags", c->form.fields[i].name);
    if (!ec_group_id(c, id) || !ec_snapshot_name(c, "SnapshotName", &name))
        return false;
    if (!snapshot_create(c->app, id, name, snapshot_id, &p))
        return ec_fail_problem(c, &p);
    return answer_snapshot(c, snapshot_id);
}

static enum db_status snapshots_page(struct db_conn *conn, const void *filter,
                                     const struct page *page, char **items, char *next_key)
{
    return store_snapshots_list(conn, filter, page, items, next_key);
}

static const struct api_list snapshot_list = {"snapshots", "snapshots", PAGE_KEY_TIME_UUID,
                                              snapshots_page};

/* SnapshotSource as Cairn's sources: "system" (and "automated", the word a
 * Snapshot carries) the automatic snapshots, "user" (and "manual") the
 * others. *automatic is -1 for both. False after refusing. */
static bool source_filter(struct ec_call *c, int *automatic)
{
    const char *s = ec_param(c, "SnapshotSource");

    *automatic = -1;
    if (s == NULL)
        return true;
    if (strcmp(s, "system") == 0 || strcmp(s, "automated") == 0)
        *automatic = 1;
    else if (strcmp(s, "user") == 0 || strcmp(s, "manual") == 0)
        *automatic = 0;
    else
        return ec_invalid(c, "SnapshotSource must be system or user");
    return true;
}

/* Whether snap is of group_id (NULL: any) and of the source asked for. */
static bool wanted(const json_t *snap, const char *group_id, int automatic)
{
    const char *source = json_string_value(json_object_get(snap, "source"));
    const char *cluster = json_string_value(json_object_get(snap, "cluster_id"));

    if (group_id != NULL && (cluster == NULL || strcmp(cluster, group_id) != 0))
        return false;
    return automatic < 0 || (source != NULL && (strcmp(source, "automatic") == 0) == automatic);
}

/* The snapshot of a name, as a list of one; NULL after refusing. */
static json_t *named(struct ec_call *c, const char *name)
{
    json_t *snap = ec_snapshot_doc(c, name);
    return snap != NULL ? json_pack("[o]", snap) : NULL;
}

bool ec_describe_snapshots(struct ec_call *c)
{
    static const char *const allowed[] = {
        "ReplicationGroupId", "CacheClusterId", "SnapshotName",        "SnapshotSource",
        "MaxRecords",         "Marker",         "ShowNodeGroupConfig", NULL};
    const char *name = ec_param(c, "SnapshotName");
    char id[64], next[PAGE_KEY_MAX] = "";
    const char *group_id = NULL;
    bool node_groups = false, present;
    int automatic;
    struct page page;

    if (!ec_params_known(c, allowed) ||
        !ec_paging(c, "snapshots", PAGE_KEY_TIME_UUID, EC_SNAPSHOT_RECORDS_MAX, &page) ||
        !ec_param_bool(c, "ShowNodeGroupConfig", &node_groups, &present) ||
        !source_filter(c, &automatic))
        return false;
    if (ec_param(c, "CacheClusterId") != NULL)
        return ec_invalid(c, "CacheClusterId: a Cairn snapshot is a whole replication group's; "
                             "filter by ReplicationGroupId");
    if (ec_param(c, "ReplicationGroupId") != NULL) {
        if (!ec_group_id(c, id))
            return false;
        group_id = id;
    }
    /* SnapshotSource is a filter of the page read: a page may hold fewer
     * than MaxRecords, and still have a Marker after it. */
    json_t *snaps =
        name != NULL ? named(c, name) : ec_fetch(c, &snapshot_list, group_id, &page, next);
    json_t *groups = json_object(), *snap;
    size_t i;
    bool ok = snaps != NULL;

    if (ok)
        xmlw_open(&c->out, "Snapshots");
    json_array_foreach (snaps, i, snap) {
        const json_t *group = NULL;
        if (!wanted(snap, group_id, automatic))
            continue;
        if (!(ok = source_group(c, groups, snap, &group)))
            break;
        ec_render_snapshot(c, snap, group, node_groups);
    }
    if (ok) {
        xmlw_close(&c->out, "Snapshots");
        ec_marker(c, "snapshots", next);
    }
    json_decref(groups);
    json_decref(snaps);
    return ok;
}

bool ec_delete_snapshot(struct ec_call *c)
{
    static const char *const allowed[] = {"SnapshotName", NULL};
    const char *name;
    char id[STORE_UUID_SIZE] = "";
    struct problem p = {0};

    if (!ec_params_known(c, allowed) || !ec_param_required(c, "SnapshotName", &name))
        return false;
    if (!snapshot_delete(c->app, name, id, &p))
        return ec_fail_problem(c, &p);
    bool ok = answer_snapshot(c, id); /* says "deleting" */
    snapshot_remove_files(c->app);
    return ok;
}
