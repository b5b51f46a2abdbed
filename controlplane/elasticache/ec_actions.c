/* ec_actions.c -- the ElastiCache actions Cairn answers, each translated
 * onto the cluster services the REST API uses (clusters.h): a create is
 * cluster_spec_check() and cluster_create(), a modification a merge patch
 * through cluster_modify() and so the change table, a delete and a test
 * failover the same calls as DELETE and POST .../failover. The snapshot
 * actions are ec_snapshots.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "cluster_spec.h"
#include "clusters.h"
#include "ec_int.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"
#include "xmlw.h"

#define EC_RECORDS_MIN 20
#define EC_RECORDS_MAX 100

/* ---- shared pieces ------------------------------------------------------- */

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Parameters that are accepted only when they ask for what Cairn does:
 * name, and the one value that is (NULL: the parameter must be absent). */
struct ec_fixed {
    const char *name, *value, *why;
};

static const struct ec_fixed fixed_params[] = {
    {"TransitEncryptionEnabled", "false",
     "Cairn sets transit encryption when a replication group is created, and only then"},
    {"AtRestEncryptionEnabled", "false", "Cairn does not encrypt engine data at rest"},
    {"DataTieringEnabled", "false", "Cairn keeps every key in memory"},
    {"NetworkType", "ipv4", "Cairn's nodes listen on IPv4"},
    {"IpDiscovery", "ipv4", "Cairn's nodes listen on IPv4"},
    {"RetainPrimaryCluster", "false", "a cluster is deleted whole"},
    {"SnapshotArns.", NULL,
     "Cairn restores from the snapshots it keeps itself: name one with SnapshotName (see "
     "DescribeSnapshots)"},
    {"Port", NULL,
     "Cairn gives each node a port of its host (each node's endpoint says which); leave Port "
     "unset"},
    {"PreferredCacheClusterAZs.", NULL, "Cairn spreads each shard's nodes across zones itself"},
    {"NodeGroupConfiguration.", NULL, "Cairn splits the slots and places the shards itself"},
    {"GlobalReplicationGroupId", NULL, "Cairn has no global datastores"},
    {"CacheSubnetGroupName", NULL, "Cairn's hosts are its network; there are no subnet groups"},
    {"SecurityGroupIds.", NULL, "Cairn's hosts are its network; there are no security groups"},
    {"CacheSecurityGroupNames.", NULL, "Cairn has no security groups"},
    {"UserGroupIds.", NULL, "Cairn authenticates with the AUTH token, not user groups"},
    {"UserGroupIdsToAdd.", NULL, "Cairn authenticates with the AUTH token, not user groups"},
    {"NotificationTopicArn", NULL, "Cairn publishes events through DescribeEvents"},
    {"KmsKeyId", NULL, "Cairn does not encrypt engine data at rest"},
    {"TransitEncryptionMode", "required", "a group with transit encryption serves TLS only"},
    {NULL, NULL, NULL},
};

/* Refuse a fixed parameter (fixed_params) sent with another value, but
 * the one named except, which the caller reads itself (NULL: none). */
static bool check_fixed(struct ec_call *c, const char *except)
{
    for (size_t i = 0; i < c->form.count; i++) {
        const char *name = c->form.fields[i].name, *value = c->form.fields[i].value;
        if (except != NULL && strcmp(name, except) == 0)
            continue;
        for (const struct ec_fixed *f = fixed_params; f->name != NULL; f++) {
            size_t n = strlen(f->name);
            bool match =
                f->name[n - 1] == '.' ? strncmp(name, f->name, n) == 0 : strcmp(name, f->name) == 0;
            if (match && (f->value == NULL || strcasecmp(value, f->value) != 0))
                return f->value == NULL
                           ? ec_invalid(c, "%s is not supported: %s", name, f->why)
                           : ec_invalid(c, "%s must be %s: %s", name, f->value, f->why);
        }
    }
    return true;
}

/* The fixed parameters' names, for ec_params_known(). */
#define EC_FIXED_NAMES                                                                             \
    "TransitEncryptionEnabled", "AtRestEncryptionEnabled", "DataTieringEnabled", "NetworkType",    \
        "IpDiscovery", "Port", "PreferredCacheClusterAZs.", "NodeGroupConfiguration.",             \
        "GlobalReplicationGroupId", "CacheSubnetGroupName", "SecurityGroupIds.",                   \
        "CacheSecurityGroupNames.", "UserGroupIds.", "NotificationTopicArn", "KmsKeyId",           \
        "TransitEncryptionMode", "SnapshotArns."

bool ec_paging(struct ec_call *c, const char *list, enum page_key shape, long max_records,
               struct page *page)
{
    long records = max_records;
    bool present;
    const char *marker = ec_param(c, "Marker");

    if (!ec_param_int(c, "MaxRecords", EC_RECORDS_MIN, max_records, &records, &present))
        return false;
    page->size = (int)records;
    page->has_after = marker != NULL && marker[0] != '\0';
    if (page->has_after && !page_token_decode(marker, list, shape, page->after))
        return ec_invalid(c, "Marker is not one this endpoint gave");
    return true;
}

void ec_marker(struct ec_call *c, const char *list, const char *next_key)
{
    char token[PAGE_TOKEN_MAX];
    if (next_key[0] == '\0')
        return;
    page_token_encode(list, next_key, token);
    xmlw_elem(&c->out, "Marker", token);
}

json_t *ec_fetch(struct ec_call *c, const struct api_list *list, const void *filter,
                 const struct page *page, char *next_key)
{
    char *text = NULL;
    enum db_status st = api_fetch_page(c->app->db, list, filter, page, &text, next_key);
    json_t *items = st == DB_OK ? json_loads(text, 0, NULL) : NULL;

    free(text);
    if (st != DB_OK)
        ec_fail_db(c, st);
    else if (items == NULL)
        ec_fail(c, 500, "InternalFailure", "%s", "a list cannot be read");
    return items;
}

static enum db_status clusters_page(struct db_conn *conn, const void *filter,
                                    const struct page *page, char **items, char *next_key)
{
    return store_clusters_list(conn, filter, page, items, next_key);
}

static const struct api_list cluster_list = {"clusters", "clusters", PAGE_KEY_NAME, clusters_page};

static enum db_status versions_page(struct db_conn *conn, const void *filter,
                                    const struct page *page, char **items, char *next_key)
{
    return store_engine_versions_list(conn, filter, page, items, next_key);
}

static const struct api_list version_list = {"engine_versions", "engine-versions", PAGE_KEY_INT,
                                             versions_page};

static enum db_status events_page(struct db_conn *conn, const void *filter, const struct page *page,
                                  char **items, char *next_key)
{
    return store_events_list(conn, filter, page, items, next_key);
}

static const struct api_list event_list = {"events", "events", PAGE_KEY_TIME_UUID, events_page};

/* Every line of engine in the catalog, oldest first; NULL after refusing. */
static json_t *engine_lines(struct ec_call *c, const char *engine)
{
    struct page page = {.size = PAGE_SIZE_MAX};
    char next[PAGE_KEY_MAX];
    return ec_fetch(c, &version_list, engine, &page, next);
}

/* EngineVersion as Cairn's engine line: "7.0" and "7.0.15" are line 7.0,
 * "7.x" the newest line of 7 in the catalog, and none the newest line of
 * the engine. out holds 16 bytes. False after refusing. */
static bool engine_line(struct ec_call *c, const char *engine, const char *asked, char *out)
{
    int major = -1, minor = -1, patch, used = 0;
    bool any_minor =
        asked != NULL && sscanf(asked, "%d.x%n", &major, &used) == 1 && asked[used] == '\0';

    if (asked != NULL && !any_minor &&
        !(sscanf(asked, "%d.%d%n", &major, &minor, &used) == 2 && asked[used] == '\0') &&
        !(sscanf(asked, "%d.%d.%d%n", &major, &minor, &patch, &used) == 3 && asked[used] == '\0'))
        return ec_invalid(c, "EngineVersion %s is not a version such as 7.0, 7.0.15 or 7.x", asked);
    if (asked != NULL && !any_minor) {
        snprintf(out, 16, "%d.%d", major, minor);
        return true;
    }
    json_t *lines = engine_lines(c, engine);
    if (lines == NULL)
        return false;
    size_t i;
    json_t *v;
    out[0] = '\0';
    json_array_foreach (lines, i, v) {
        if (major < 0 || atoi(str(v, "version")) == major)
            snprintf(out, 16, "%s", str(v, "version"));
    }
    json_decref(lines);
    if (out[0] == '\0')
        return ec_invalid(c, "the catalog has no %s %s line (see DescribeCacheEngineVersions)",
                          engine, asked != NULL ? asked : "");
    return true;
}

/* The parameter group a request names must be the default group of the
 * cluster's engine line (Cairn keeps parameters per cluster). */
static bool check_parameter_group(struct ec_call *c, const char *engine, const char *line,
                                  bool *cluster_on)
{
    const char *name = ec_param(c, "CacheParameterGroupName");
    char want[64];

    if (name == NULL)
        return true;
    snprintf(want, sizeof(want), "default.%s%d", engine, atoi(line));
    size_t n = strlen(want);
    if (strncmp(name, want, n) == 0 && (name[n] == '\0' || strcmp(name + n, ".cluster.on") == 0)) {
        if (cluster_on != NULL)
            *cluster_on = name[n] != '\0';
        return true;
    }
    return ec_fail(c, 404, "CacheParameterGroupNotFound",
                   "CacheParameterGroup %s not found: Cairn has the default group of each engine "
                   "line (%s, %s.cluster.on) and keeps parameters per cluster (PATCH "
                   "/v1/clusters/{id} \"parameters\")",
                   name, want, want);
}

/* Tags.Tag.N.Key / .Value into tags (an object); false after refusing. */
static bool read_tags(struct ec_call *c, json_t *tags)
{
    size_t n = form_count(&c->form, "Tags.Tag", "Key");
    for (size_t i = 1; i <= n; i++) {
        const char *key = form_item(&c->form, "Tags.Tag", i, "Key");
        const char *value = form_item(&c->form, "Tags.Tag", i, "Value");
        json_object_set_new(tags, key, json_string(value != NULL ? value : ""));
    }
    for (size_t i = 0; i < c->form.count; i++) {
        const char *name = c->form.fields[i].name;
        if (strncmp(name, "Tags.", 5) == 0 && json_object_size(tags) == 0)
            return ec_invalid(c, "%s: tags are sent as Tags.Tag.N.Key and Tags.Tag.N.Value", name);
    }
    return true;
}

/* Set field of a spec body to parameter name's value, when it was sent. */
static void set_param(struct ec_call *c, json_t *body, const char *field, const char *name)
{
    const char *v = ec_param(c, name);
    if (v != NULL)
        json_object_set_new(body, field, json_string(v));
}

/* Answer with the replication group's document. */
static bool answer_group(struct ec_call *c, const char *id)
{
    json_t *doc = ec_cluster_doc(c, id);
    if (doc == NULL)
        return false;
    ec_render_group(c, doc);
    json_decref(doc);
    return true;
}

bool ec_group_id(struct ec_call *c, char *out)
{
    const char *id;
    if (!ec_param_required(c, "ReplicationGroupId", &id))
        return false;
    if (strlen(id) > CSPEC_ID_MAX)
        return ec_invalid(c, "ReplicationGroupId must be at most %d characters", CSPEC_ID_MAX);
    size_t i;
    for (i = 0; id[i] != '\0'; i++)
        out[i] = (char)(id[i] >= 'A' && id[i] <= 'Z' ? id[i] - 'A' + 'a' : id[i]);
    out[i] = '\0';
    return true;
}

/* Change the cluster by a merge patch of its spec (with the request's flags,
 * as PATCH /v1/clusters/{id} takes them); false after refusing. */
static bool modify(struct ec_call *c, const char *id, json_t *patch)
{
    struct cluster_modify_out out;
    struct problem p = {0};
    bool ok = cluster_modify(c->app, id, patch, false, -1, &out, &p);
    json_decref(patch);
    return ok || ec_fail_problem(c, &p);
}

/* ---- replication groups -------------------------------------------------- */

/* Cluster mode as ElastiCache decides it: ClusterMode when sent, else a
 * ".cluster.on" parameter group or more than one node group. A restore
 * whose request says nothing of it (no ClusterMode, parameter group,
 * NumNodeGroups above 1 or NumCacheClusters) takes its snapshot's. */
static bool cluster_mode(struct ec_call *c, bool cluster_on_group, long shards,
                         const json_t *snapshot, bool *enabled)
{
    const char *mode = ec_param(c, "ClusterMode");
    if (mode == NULL) {
        bool said = cluster_on_group || shards > 1 ||
                    ec_param(c, "CacheParameterGroupName") != NULL ||
                    ec_param(c, "NumCacheClusters") != NULL;
        *enabled =
            cluster_on_group || shards > 1 ||
            (!said && snapshot != NULL && strcmp(str(snapshot, "cluster_mode"), "enabled") == 0);
        return true;
    }
    if (strcmp(mode, "enabled") == 0 || strcmp(mode, "disabled") == 0) {
        *enabled = strcmp(mode, "enabled") == 0;
        return true;
    }
    return ec_invalid(c, "ClusterMode must be enabled or disabled (Cairn has no compatible mode)");
}

/* The spec body of a CreateReplicationGroup, into *out (the caller's). A
 * restore (snapshot: the document SnapshotName names, else NULL) leaves
 * out the shape the request does not give, which the snapshot fills in
 * (restore.h); its engine line is the snapshot's unless another engine or
 * version is asked for. False after refusing. */
static bool create_body(struct ec_call *c, const char *id, const json_t *snapshot, json_t **out)
{
    char line[16];
    long shards = 1, replicas = 0, clusters = 1, retention = 0;
    bool has_shards, has_replicas, has_clusters, has_retention, present, auto_minor;
    bool failover = false, multi_az = false, cluster_on = false, enabled = false, tls = false;
    const char *engine = ec_param(c, "Engine"), *version = ec_param(c, "EngineVersion");

    if (engine == NULL)
        engine = snapshot != NULL ? str(snapshot, "engine") : "redis";
    if (!ec_param_bool(c, "TransitEncryptionEnabled", &tls, &present) ||
        !ec_param_int(c, "NumNodeGroups", 1, CSPEC_SHARDS_MAX, &shards, &has_shards) ||
        !ec_param_int(c, "ReplicasPerNodeGroup", 0, CSPEC_REPLICAS_MAX, &replicas, &has_replicas) ||
        !ec_param_int(c, "NumCacheClusters", 1, CSPEC_REPLICAS_MAX + 1, &clusters, &has_clusters) ||
        !ec_param_int(c, "SnapshotRetentionLimit", 0, CSPEC_SNAPSHOT_RETENTION_MAX, &retention,
                      &has_retention) ||
        !ec_param_bool(c, "AutomaticFailoverEnabled", &failover, &present) ||
        !ec_param_bool(c, "MultiAZEnabled", &multi_az, &present) ||
        !ec_param_bool(c, "AutoMinorVersionUpgrade", &auto_minor, &present))
        return false;
    if (strcmp(engine, "redis") != 0 && strcmp(engine, "valkey") != 0)
        return ec_invalid(c, "Engine must be redis or valkey");
    if (snapshot != NULL && version == NULL && strcmp(engine, str(snapshot, "engine")) == 0)
        snprintf(line, sizeof(line), "%s", str(snapshot, "engine_version"));
    else if (!engine_line(c, engine, version, line))
        return false;
    if (!check_parameter_group(c, engine, line, &cluster_on) ||
        !cluster_mode(c, cluster_on, shards, snapshot, &enabled))
        return false;
    if (enabled && has_clusters)
        return ec_fail(c, 400, "InvalidParameterCombination",
                       "NumCacheClusters is for cluster mode disabled; use NumNodeGroups and "
                       "ReplicasPerNodeGroup");
    if (!enabled && has_shards && shards != 1)
        return ec_fail(c, 400, "InvalidParameterCombination",
                       "cluster mode disabled has one node group; NumNodeGroups must be 1");

    json_t *body =
        json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:b}", "id", id, "engine", engine,
                  "engine_version", line, "cluster_mode", enabled ? "enabled" : "disabled",
                  "automatic_failover", failover, "multi_az", multi_az, "transit_encryption", tls);
    set_param(c, body, "description", "ReplicationGroupDescription");
    set_param(c, body, "node_type", "CacheNodeType");
    set_param(c, body, "maintenance_window", "PreferredMaintenanceWindow");
    set_param(c, body, "snapshot_window", "SnapshotWindow");
    set_param(c, body, "auth_token", "AuthToken");
    if (has_retention)
        json_object_set_new(body, "snapshot_retention_days", json_integer(retention));
    if (snapshot != NULL)
        json_object_set_new(body, "restore_from",
                            json_pack("{s:s}", "snapshot_id", ec_param(c, "SnapshotName")));
    if (!enabled || has_shards || snapshot == NULL)
        json_object_set_new(body, "num_shards", json_integer(enabled ? shards : 1));
    if (has_clusters || has_replicas || (!enabled && snapshot == NULL))
        json_object_set_new(body, "replicas_per_shard",
                            json_integer(has_clusters ? clusters - 1 : replicas));
    json_t *tags = json_object();
    json_object_set_new(body, "tags", tags);
    if (!read_tags(c, tags)) {
        json_decref(body);
        return false;
    }
    *out = body;
    return true;
}

static bool create_group(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId",
                                          "ReplicationGroupDescription",
                                          "Engine",
                                          "EngineVersion",
                                          "CacheNodeType",
                                          "ClusterMode",
                                          "NumNodeGroups",
                                          "ReplicasPerNodeGroup",
                                          "NumCacheClusters",
                                          "AutomaticFailoverEnabled",
                                          "MultiAZEnabled",
                                          "PreferredMaintenanceWindow",
                                          "CacheParameterGroupName",
                                          "Tags.",
                                          "AuthToken",
                                          "AutoMinorVersionUpgrade",
                                          "SnapshotName",
                                          "SnapshotRetentionLimit",
                                          "SnapshotWindow",
                                          EC_FIXED_NAMES,
                                          NULL};
    const char *snapshot_name = ec_param(c, "SnapshotName");
    json_t *snapshot = NULL, *body = NULL;
    char id[64];

    if (!ec_params_known(c, allowed) || !check_fixed(c, "TransitEncryptionEnabled") ||
        !ec_group_id(c, id))
        return false;
    /* A snapshot that does not exist is ElastiCache's own fault. */
    if (snapshot_name != NULL && (snapshot = ec_snapshot_doc(c, snapshot_name)) == NULL)
        return false;
    bool ok = create_body(c, id, snapshot, &body);
    json_decref(snapshot);
    if (!ok)
        return false;

    struct problem p = {0};
    json_t *spec = cluster_spec_check(c->app, body, &p);
    bool created = false;
    char op_id[STORE_UUID_SIZE];
    ok = spec != NULL && cluster_create(c->app, spec, cspec_auth_token(body), &created, op_id, &p);
    json_decref(spec);
    json_decref(body);
    if (!ok)
        return ec_fail_problem(c, &p);
    if (!created)
        return ec_fail(c, 400, "ReplicationGroupAlreadyExists",
                       "Replication group %s already exists", id);
    return answer_group(c, id);
}

static void render_group(struct ec_call *c, const json_t *doc, bool with_nodes)
{
    (void)with_nodes;
    ec_render_group(c, doc);
}

static void render_members(struct ec_call *c, const json_t *doc, bool with_nodes)
{
    (void)ec_render_cache_clusters(c, doc, NULL, with_nodes);
}

/* Render each cluster of a page of the list; false after refusing. */
static bool each_cluster(struct ec_call *c, const struct page *page, char *next,
                         void (*render)(struct ec_call *c, const json_t *doc, bool with_nodes),
                         bool with_nodes)
{
    struct store_cluster_filter f = {0};
    json_t *docs = ec_fetch(c, &cluster_list, &f, page, next), *doc;
    size_t i;

    if (docs == NULL)
        return false;
    json_array_foreach (docs, i, doc) {
        render(c, doc, with_nodes);
    }
    json_decref(docs);
    return true;
}

static bool describe_groups(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId", "MaxRecords", "Marker", NULL};
    struct page page;
    char next[PAGE_KEY_MAX] = "";

    if (!ec_params_known(c, allowed) ||
        !ec_paging(c, "clusters", PAGE_KEY_NAME, EC_RECORDS_MAX, &page))
        return false;
    xmlw_open(&c->out, "ReplicationGroups");
    if (ec_param(c, "ReplicationGroupId") != NULL) {
        char id[64];
        if (!ec_group_id(c, id) || !answer_group(c, id))
            return false;
    } else if (!each_cluster(c, &page, next, render_group, false)) {
        return false;
    }
    xmlw_close(&c->out, "ReplicationGroups");
    ec_marker(c, "clusters", next);
    return true;
}

static bool describe_cache_clusters(struct ec_call *c)
{
    static const char *const allowed[] = {"CacheClusterId",
                                          "MaxRecords",
                                          "Marker",
                                          "ShowCacheNodeInfo",
                                          "ShowCacheClustersNotInReplicationGroups",
                                          NULL};
    const char *member = ec_param(c, "CacheClusterId");
    bool nodes = false, outside = false, present;
    struct page page;
    char next[PAGE_KEY_MAX] = "";

    if (!ec_params_known(c, allowed) ||
        !ec_paging(c, "clusters", PAGE_KEY_NAME, EC_RECORDS_MAX, &page) ||
        !ec_param_bool(c, "ShowCacheNodeInfo", &nodes, &present) ||
        !ec_param_bool(c, "ShowCacheClustersNotInReplicationGroups", &outside, &present))
        return false;
    xmlw_open(&c->out, "CacheClusters");
    if (member != NULL) {
        /* Every cache cluster of Cairn's is in a replication group. */
        char *group = outside ? NULL : ec_member_group(member);
        bool missing = true;
        json_t *doc = group != NULL ? ec_cluster_find(c, group, &missing) : NULL;
        free(group);
        if (doc == NULL && !missing)
            return false; /* refused: the database */
        bool found = doc != NULL && ec_render_cache_clusters(c, doc, member, nodes) == 1;
        json_decref(doc);
        if (!found)
            return ec_fail(c, 404, "CacheClusterNotFound", "CacheCluster %s not found", member);
    } else if (!outside && !each_cluster(c, &page, next, render_members, nodes)) {
        return false;
    }
    xmlw_close(&c->out, "CacheClusters");
    ec_marker(c, "clusters", next);
    return true;
}

/* SnapshottingClusterId names the node ElastiCache takes automatic
 * snapshots from; Cairn chooses each shard's itself, its in-sync replica
 * with the most data (docs/backups.md). A member of the group is taken --
 * the AWS provider names "<id>-001" when it turns automatic snapshots on
 * -- and anything else refused. */
static bool check_snapshotting(struct ec_call *c, const char *id)
{
    const char *member = ec_param(c, "SnapshottingClusterId");
    char *group = member != NULL ? ec_member_group(member) : NULL;
    bool ok = member == NULL || (group != NULL && strcmp(group, id) == 0);

    free(group);
    return ok || ec_invalid(c,
                            "SnapshottingClusterId %s is not a member of %s (Cairn takes each "
                            "shard's snapshot from an in-sync replica it chooses)",
                            member, id);
}

static bool modify_group(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId",
                                          "ReplicationGroupDescription",
                                          "AutomaticFailoverEnabled",
                                          "MultiAZEnabled",
                                          "PreferredMaintenanceWindow",
                                          "CacheParameterGroupName",
                                          "ApplyImmediately",
                                          "Engine",
                                          "EngineVersion",
                                          "CacheNodeType",
                                          "AuthToken",
                                          "AuthTokenUpdateStrategy",
                                          "AutoMinorVersionUpgrade",
                                          "ClusterMode",
                                          "SnapshotRetentionLimit",
                                          "SnapshotWindow",
                                          "SnapshottingClusterId",
                                          EC_FIXED_NAMES,
                                          NULL};
    char id[64], line[16];
    long retention = 0;
    bool failover, multi_az, now = false, has_failover, has_multi_az, present, auto_minor;
    bool has_retention;

    if (!ec_params_known(c, allowed) || !check_fixed(c, NULL) || !ec_group_id(c, id) ||
        !ec_param_bool(c, "AutomaticFailoverEnabled", &failover, &has_failover) ||
        !ec_param_bool(c, "MultiAZEnabled", &multi_az, &has_multi_az) ||
        !ec_param_bool(c, "ApplyImmediately", &now, &present) ||
        !ec_param_bool(c, "AutoMinorVersionUpgrade", &auto_minor, &present) ||
        !ec_param_int(c, "SnapshotRetentionLimit", 0, CSPEC_SNAPSHOT_RETENTION_MAX, &retention,
                      &has_retention) ||
        !check_snapshotting(c, id))
        return false;
    const char *strategy = ec_param(c, "AuthTokenUpdateStrategy");
    if (strategy != NULL && strcmp(strategy, "SET") != 0 && strcmp(strategy, "ROTATE") != 0)
        return ec_invalid(c, "AuthTokenUpdateStrategy must be SET or ROTATE (Cairn has no "
                             "user groups to DELETE the token for)");
    json_t *doc = ec_cluster_doc(c, id);
    if (doc == NULL)
        return false;
    const char *engine = ec_param(c, "Engine") != NULL ? ec_param(c, "Engine") : str(doc, "engine");
    const char *mode = ec_param(c, "ClusterMode");
    bool ok = true;
    if (mode != NULL && strcmp(mode, str(doc, "cluster_mode")) != 0)
        ok = ec_invalid(c, "ClusterMode cannot change: a cluster's mode is fixed when it is "
                           "created");
    if (ok && ec_param(c, "EngineVersion") != NULL)
        ok = engine_line(c, engine, ec_param(c, "EngineVersion"), line);
    else
        snprintf(line, sizeof(line), "%s", str(doc, "engine_version"));
    ok = ok && check_parameter_group(c, engine, line, NULL);
    json_decref(doc);
    if (!ok)
        return false;

    json_t *patch = json_pack("{s:b}", "apply_immediately", now);
    set_param(c, patch, "description", "ReplicationGroupDescription");
    set_param(c, patch, "maintenance_window", "PreferredMaintenanceWindow");
    set_param(c, patch, "snapshot_window", "SnapshotWindow");
    set_param(c, patch, "node_type", "CacheNodeType");
    set_param(c, patch, "auth_token", "AuthToken");
    if (has_retention)
        json_object_set_new(patch, "snapshot_retention_days", json_integer(retention));
    if (strategy != NULL)
        json_object_set_new(patch, "auth_token_update_strategy",
                            json_string(strcmp(strategy, "SET") == 0 ? "set" : "rotate"));
    if (has_failover)
        json_object_set_new(patch, "automatic_failover", json_boolean(failover));
    if (has_multi_az)
        json_object_set_new(patch, "multi_az", json_boolean(multi_az));
    if (ec_param(c, "Engine") != NULL || ec_param(c, "EngineVersion") != NULL) {
        json_object_set_new(patch, "engine", json_string(engine));
        json_object_set_new(patch, "engine_version", json_string(line));
    }
    return modify(c, id, patch) && answer_group(c, id);
}

/* A scaling action: the same change of the spec as PATCH makes, refused
 * or carried out as the change table says. */
static bool scale(struct ec_call *c, const char *field, const char *param, long min, long max)
{
    const char *const allowed[] = {
        "ReplicationGroupId",    "ApplyImmediately",    param,
        "NodeGroupsToRemove.",   "NodeGroupsToRetain.", "ReshardingConfiguration.",
        "ReplicaConfiguration.", "ReplicasToRemove.",   NULL};
    char id[64];
    long n;
    bool present, now;

    if (!ec_params_known(c, allowed) || !ec_group_id(c, id) ||
        !ec_param_int(c, param, min, max, &n, &present) ||
        !ec_param_bool(c, "ApplyImmediately", &now, &present))
        return false;
    if (ec_param(c, param) == NULL)
        return ec_fail(c, 400, "MissingParameter", "The request must contain the parameter %s",
                       param);
    json_t *patch = json_pack("{s:I, s:b}", field, (json_int_t)n, "apply_immediately", true);
    return modify(c, id, patch) && answer_group(c, id);
}

/* Which shards leave, as NodeGroupsToRemove or NodeGroupsToRetain name
 * them: Cairn removes the highest-numbered ones, so a list is taken when it
 * names exactly those (or exactly the others), and refused otherwise rather
 * than ignored. */
static bool shards_named_as_cairn_removes(struct ec_call *c)
{
    const char *count = ec_param(c, "NodeGroupCount");
    char id[64];
    long to = count != NULL ? strtol(count, NULL, 10) : 0;
    int removed = 0, retained = 0, wrong = 0;
    const char *bad = NULL;

    for (size_t i = 0; i < c->form.count; i++) {
        const char *name = c->form.fields[i].name, *value = c->form.fields[i].value;
        bool remove = strncmp(name, "NodeGroupsToRemove.", 19) == 0;
        bool retain = strncmp(name, "NodeGroupsToRetain.", 19) == 0;
        if (strncmp(name, "ReshardingConfiguration.", 24) == 0)
            return ec_invalid(c,
                              "%s: Cairn places the slots of new shards itself, a fair share "
                              "each; send NodeGroupCount alone",
                              name);
        if (!remove && !retain)
            continue;
        long shard = strtol(value, NULL, 10);
        bool high = shard > to;
        if ((remove && !high) || (retain && high) || shard < 1) {
            wrong++;
            bad = value;
        }
        removed += remove;
        retained += retain;
    }
    if (removed == 0 && retained == 0)
        return true;
    json_t *doc = ec_group_id(c, id) ? ec_cluster_doc(c, id) : NULL;
    if (doc == NULL)
        return false;
    long from = (long)json_integer_value(json_object_get(doc, "num_shards"));
    json_decref(doc);
    if (wrong == 0 && (removed == 0 || removed == from - to) && (retained == 0 || retained == to))
        return true;
    return ec_invalid(c,
                      "scaling in removes the highest-numbered shards (%04ld to %04ld here), "
                      "and only those; the list names %s",
                      to + 1, from, bad != NULL ? bad : "others, or not all of them");
}

static bool modify_shards(struct ec_call *c)
{
    return shards_named_as_cairn_removes(c) &&
           scale(c, "num_shards", "NodeGroupCount", 1, CSPEC_SHARDS_MAX);
}

static bool increase_replicas(struct ec_call *c)
{
    return scale(c, "replicas_per_shard", "NewReplicaCount", 0, CSPEC_REPLICAS_MAX);
}

static bool decrease_replicas(struct ec_call *c)
{
    return scale(c, "replicas_per_shard", "NewReplicaCount", 0, CSPEC_REPLICAS_MAX);
}

static bool delete_group(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId", "RetainPrimaryCluster",
                                          "FinalSnapshotIdentifier", NULL};
    const char *final = NULL;
    char id[64], op_id[STORE_UUID_SIZE];
    struct problem p = {0};

    if (!ec_params_known(c, allowed) || !check_fixed(c, NULL) || !ec_group_id(c, id) ||
        (ec_param(c, "FinalSnapshotIdentifier") != NULL &&
         !ec_snapshot_name(c, "FinalSnapshotIdentifier", &final)))
        return false;
    if (!cluster_delete(c->app, id, final, op_id, &p))
        return ec_fail_problem(c, &p);
    return answer_group(c, id);
}

static bool test_failover(struct ec_call *c)
{
    static const char *const allowed[] = {"ReplicationGroupId", "NodeGroupId", NULL};
    char id[64], op_id[STORE_UUID_SIZE];
    const char *shard;
    struct problem p = {0};

    if (!ec_params_known(c, allowed) || !ec_group_id(c, id) ||
        !ec_param_required(c, "NodeGroupId", &shard))
        return false;
    if (strlen(shard) != 4 || strspn(shard, "0123456789") != 4)
        return ec_invalid(c, "NodeGroupId must be a node group id such as 0001");
    json_t *doc = ec_cluster_doc(c, id);
    if (doc == NULL)
        return false;
    bool disabled = strcmp(str(doc, "cluster_mode"), "disabled") == 0;
    json_decref(doc);
    if (disabled && strcmp(shard, "0001") != 0)
        return ec_fail(c, 404, "NodeGroupNotFoundFault", "NodeGroup %s not found", shard);
    if (!cluster_failover(c->app, id, disabled ? NULL : shard, op_id, &p)) {
        if (p.code == PROBLEM_VALIDATION_FAILED) {
            problem_clear(&p);
            return ec_fail(c, 404, "NodeGroupNotFoundFault", "NodeGroup %s not found", shard);
        }
        return ec_fail_problem(c, &p);
    }
    return answer_group(c, id);
}

/* ---- events and engine versions ------------------------------------------ */

static bool describe_events(struct ec_call *c)
{
    static const char *const allowed[] = {"SourceIdentifier", "SourceType", "StartTime", "EndTime",
                                          "Duration",         "MaxRecords", "Marker",    NULL};
    const char *source = ec_param(c, "SourceIdentifier"), *type = ec_param(c, "SourceType");
    const char *start = ec_param(c, "StartTime"), *end = ec_param(c, "EndTime");
    long minutes = 60;
    bool present;
    struct page page;
    char next[PAGE_KEY_MAX] = "", since[TIME_TEXT_SIZE];

    if (!ec_params_known(c, allowed) ||
        !ec_paging(c, "events", PAGE_KEY_TIME_UUID, EC_RECORDS_MAX, &page) ||
        !ec_param_int(c, "Duration", 1, 14 * 24 * 60, &minutes, &present))
        return false;
    if (type != NULL && strcmp(type, "replication-group") != 0 &&
        strcmp(type, "cache-cluster") != 0)
        return ec_invalid(c, "SourceType must be replication-group or cache-cluster: Cairn's "
                             "events are about those");
    if ((start != NULL && !time_is_rfc3339(start)) || (end != NULL && !time_is_rfc3339(end)))
        return ec_invalid(c, "StartTime and EndTime must be ISO 8601 times such as "
                             "2026-12-01T08:00:00Z");
    if (start == NULL) {
        time_format((time_now_s() - minutes * 60) * 1000000, 6, since);
        start = since;
    }
    char *group = NULL;
    if (source != NULL && type != NULL && strcmp(type, "cache-cluster") == 0)
        group = ec_member_group(source);
    struct store_event_filter f = {group != NULL ? group : source, NULL, start, NULL};
    json_t *events = ec_fetch(c, &event_list, &f, &page, next), *e;
    free(group);
    if (events == NULL)
        return false;
    size_t i;
    xmlw_open(&c->out, "Events");
    json_array_foreach (events, i, e) {
        const char *cluster = str(e, "cluster_id"), *at = str(e, "created_at");
        if (cluster == NULL || (end != NULL && strcmp(at, end) > 0))
            continue; /* a host's own event, or past the end */
        xmlw_open(&c->out, "Event");
        xmlw_elem(&c->out, "SourceIdentifier", cluster);
        xmlw_elem(&c->out, "SourceType", "replication-group");
        xmlw_elem(&c->out, "Message", str(e, "message"));
        xmlw_elem(&c->out, "Date", at);
        xmlw_close(&c->out, "Event");
    }
    xmlw_close(&c->out, "Events");
    json_decref(events);
    ec_marker(c, "events", next);
    return true;
}

static bool describe_engine_versions(struct ec_call *c)
{
    static const char *const allowed[] = {
        "Engine",      "EngineVersion", "CacheParameterGroupFamily",
        "DefaultOnly", "MaxRecords",    "Marker",
        NULL};
    const char *engine = ec_param(c, "Engine"), *version = ec_param(c, "EngineVersion");
    const char *family = ec_param(c, "CacheParameterGroupFamily");
    bool default_only = false, present;
    struct page page;
    char next[PAGE_KEY_MAX] = "";

    if (!ec_params_known(c, allowed) ||
        !ec_paging(c, "engine-versions", PAGE_KEY_INT, EC_RECORDS_MAX, &page) ||
        !ec_param_bool(c, "DefaultOnly", &default_only, &present))
        return false;
    if (engine != NULL && strcmp(engine, "redis") != 0 && strcmp(engine, "valkey") != 0)
        return ec_invalid(c, "Engine must be redis or valkey");
    json_t *lines = ec_fetch(c, &version_list, engine, &page, next), *v;
    if (lines == NULL)
        return false;
    size_t i;
    xmlw_open(&c->out, "CacheEngineVersions");
    json_array_foreach (lines, i, v) {
        char fam[32], desc[64];
        const char *e = str(v, "engine"), *line = str(v, "version");
        json_t *after = json_array_get(lines, i + 1);
        snprintf(fam, sizeof(fam), "%s%d", e, atoi(line));
        if ((version != NULL && strncmp(version, line, strlen(line)) != 0) ||
            (family != NULL && strcmp(family, fam) != 0) ||
            (default_only && after != NULL && strcmp(str(after, "engine"), e) == 0))
            continue;
        snprintf(desc, sizeof(desc), "%s version %s", e, line);
        xmlw_open(&c->out, "CacheEngineVersion");
        xmlw_elem(&c->out, "Engine", e);
        xmlw_elem(&c->out, "EngineVersion", line);
        xmlw_elem(&c->out, "CacheParameterGroupFamily", fam);
        xmlw_elem(&c->out, "CacheEngineDescription", strcmp(e, "redis") == 0 ? "Redis" : "Valkey");
        xmlw_elem(&c->out, "CacheEngineVersionDescription", desc);
        xmlw_close(&c->out, "CacheEngineVersion");
    }
    xmlw_close(&c->out, "CacheEngineVersions");
    json_decref(lines);
    ec_marker(c, "engine-versions", next);
    return true;
}

/* ---- tags ---------------------------------------------------------------- */

/* The cluster a ResourceName names; NULL after refusing. */
static char *resource(struct ec_call *c)
{
    const char *arn;
    if (!ec_param_required(c, "ResourceName", &arn))
        return NULL;
    return ec_arn_cluster(c, arn);
}

static bool answer_tags(struct ec_call *c, const char *id)
{
    json_t *doc = ec_cluster_doc(c, id);
    if (doc == NULL)
        return false;
    ec_render_tags(c, json_object_get(doc, "tags"));
    json_decref(doc);
    return true;
}

static bool list_tags(struct ec_call *c)
{
    static const char *const allowed[] = {"ResourceName", NULL};
    char *id;
    if (!ec_params_known(c, allowed) || (id = resource(c)) == NULL)
        return false;
    bool ok = answer_tags(c, id);
    free(id);
    return ok;
}

static bool add_tags(struct ec_call *c)
{
    static const char *const allowed[] = {"ResourceName", "Tags.", NULL};
    char *id;
    if (!ec_params_known(c, allowed) || (id = resource(c)) == NULL)
        return false;
    json_t *tags = json_object();
    json_t *patch = json_pack("{s:o}", "tags", tags);
    bool ok = read_tags(c, tags);
    ok = ok ? modify(c, id, patch) && answer_tags(c, id) : (json_decref(patch), false);
    free(id);
    return ok;
}

static bool remove_tags(struct ec_call *c)
{
    static const char *const allowed[] = {"ResourceName", "TagKeys.", NULL};
    char *id;
    if (!ec_params_known(c, allowed) || (id = resource(c)) == NULL)
        return false;
    json_t *tags = json_object();
    size_t n = form_count(&c->form, "TagKeys.member", NULL);
    for (size_t i = 1; i <= n; i++)
        json_object_set_new(tags, form_item(&c->form, "TagKeys.member", i, NULL), json_null());
    bool ok = modify(c, id, json_pack("{s:o}", "tags", tags)) && answer_tags(c, id);
    free(id);
    return ok;
}

const struct ec_action ec_actions[] = {
    {"CreateReplicationGroup", true, create_group},
    {"DescribeReplicationGroups", false, describe_groups},
    {"DescribeCacheClusters", false, describe_cache_clusters},
    {"ModifyReplicationGroup", true, modify_group},
    {"ModifyReplicationGroupShardConfiguration", true, modify_shards},
    {"IncreaseReplicaCount", true, increase_replicas},
    {"DecreaseReplicaCount", true, decrease_replicas},
    {"DeleteReplicationGroup", true, delete_group},
    {"TestFailover", true, test_failover},
    {"DescribeEvents", false, describe_events},
    {"DescribeCacheEngineVersions", false, describe_engine_versions},
    {"ListTagsForResource", false, list_tags},
    {"AddTagsToResource", true, add_tags},
    {"RemoveTagsFromResource", true, remove_tags},
    {"CreateSnapshot", true, ec_create_snapshot},
    {"DescribeSnapshots", false, ec_describe_snapshots},
    {"DeleteSnapshot", true, ec_delete_snapshot},
    {NULL, false, NULL},
};
