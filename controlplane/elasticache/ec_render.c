/* ec_render.c -- Cairn's cluster and snapshot documents as ElastiCache's
 * XML: a cluster is a ReplicationGroup, a shard a NodeGroup, a node a
 * member CacheCluster of one CacheNode; a snapshot is a Snapshot of one
 * NodeSnapshot per shard.
 *
 * One departure: a Cairn endpoint is a node's address and port, and the
 * nodes of a cluster listen on ports of their own, where ElastiCache gives
 * a whole group one port. The group's endpoints (ConfigurationEndpoint,
 * PrimaryEndpoint, ReaderEndpoint) are therefore answered with an address
 * and no port -- the AWS provider treats a port it did not set as a change
 * that replaces the group -- and each node's own endpoint, address and
 * port, is in its NodeGroupMember and CacheNode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_int.h"
#include "xmlw.h"

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static bool disabled_mode(const json_t *doc)
{
    const char *mode = str(doc, "cluster_mode");
    return mode != NULL && strcmp(mode, "disabled") == 0;
}

/* The group's status as ElastiCache words it: Cairn's degraded (a node
 * down, the group serving) is an available group whose member shows it,
 * and a group with an operation queued or running (a failover, an upgrade
 * about to start) is modifying from the moment it is accepted, as the AWS
 * tools' waiters expect -- snapshotting when the operation is a snapshot. */
static const char *group_status(const json_t *doc)
{
    const char *s = str(doc, "status");
    const json_t *op = json_object_get(doc, "current_operation");
    const char *kind = str(op, "kind");

    if (s != NULL && strcmp(s, "degraded") != 0 && strcmp(s, "available") != 0)
        return s;
    if (!json_is_object(op))
        return "available";
    return kind != NULL && strcmp(kind, "snapshot") == 0 ? "snapshotting" : "modifying";
}

/* A node's status as a cache cluster's. */
static const char *member_status(const json_t *doc, const json_t *node)
{
    const char *group = group_status(doc), *s = str(node, "status");
    if (strcmp(group, "creating") == 0 || strcmp(group, "deleting") == 0 ||
        strcmp(group, "create-failed") == 0)
        return group;
    if (s != NULL && strcmp(s, "running") == 0)
        return group;
    return "rebooting cluster nodes";
}

static void elem_int(struct strbuf *b, const char *tag, long long v)
{
    strbuf_printf(b, "<%s>%lld</%s>", tag, v, tag);
}

static void elem_bool(struct strbuf *b, const char *tag, bool v)
{
    xmlw_elem(b, tag, v ? "true" : "false");
}

/* A cluster's automatic snapshots: SnapshotRetentionLimit (0: none) and
 * SnapshotWindow, from its spec. */
static void snapshot_settings(struct strbuf *b, const json_t *doc)
{
    elem_int(b, "SnapshotRetentionLimit",
             json_integer_value(json_object_get(doc, "snapshot_retention_days")));
    xmlw_elem(b, "SnapshotWindow", str(doc, "snapshot_window"));
}

/* <tag><Address/>[<Port/>]</tag> for an {address, port} object. */
/* TransitEncryptionEnabled, and with it the one mode Cairn's TLS has. */
static void transit_encryption(struct strbuf *b, const json_t *doc)
{
    bool tls = json_is_true(json_object_get(doc, "transit_encryption"));

    elem_bool(b, "TransitEncryptionEnabled", tls);
    if (tls)
        xmlw_elem(b, "TransitEncryptionMode", "required");
}

static void endpoint(struct strbuf *b, const char *tag, const json_t *ep, bool with_port)
{
    if (!json_is_string(json_object_get(ep, "address")))
        return;
    xmlw_open(b, tag);
    xmlw_elem(b, "Address", str(ep, "address"));
    if (with_port && json_is_integer(json_object_get(ep, "port")))
        elem_int(b, "Port", json_integer_value(json_object_get(ep, "port")));
    xmlw_close(b, tag);
}

static void node_group(struct strbuf *b, const json_t *doc, size_t s, const json_t *shard)
{
    bool disabled = disabled_mode(doc);
    const json_t *nodes = json_object_get(shard, "nodes"), *n, *slot;
    size_t k;
    char member[96];
    bool healthy = true;

    json_array_foreach (nodes, k, n) {
        healthy = healthy && str(n, "status") != NULL && strcmp(str(n, "status"), "running") == 0;
    }
    xmlw_open(b, "NodeGroup");
    xmlw_elem(b, "NodeGroupId", str(shard, "id"));
    xmlw_elem(b, "Status", healthy ? "available" : "modifying");
    if (disabled) {
        const json_t *eps = json_object_get(doc, "endpoints");
        endpoint(b, "PrimaryEndpoint", json_object_get(eps, "primary"), false);
        endpoint(b, "ReaderEndpoint", json_array_get(json_object_get(eps, "readers"), 0), false);
    } else {
        struct strbuf slots;
        strbuf_init(&slots, 32);
        json_array_foreach (json_object_get(shard, "slots"), k, slot) {
            strbuf_printf(&slots, "%s%s", k > 0 ? "," : "", json_string_value(slot));
        }
        xmlw_elem(b, "Slots", slots.p);
        free(slots.p);
    }
    xmlw_open(b, "NodeGroupMembers");
    json_array_foreach (nodes, k, n) {
        ec_member_id(doc, s, k, member, sizeof(member));
        xmlw_open(b, "NodeGroupMember");
        xmlw_elem(b, "CacheClusterId", member);
        xmlw_elem(b, "CacheNodeId", "0001");
        if (disabled) {
            endpoint(b, "ReadEndpoint", n, true);
            xmlw_elem(b, "PreferredAvailabilityZone", str(n, "az"));
            const char *role = str(n, "role");
            if (role != NULL)
                xmlw_elem(b, "CurrentRole", strcmp(role, "primary") == 0 ? "primary" : "replica");
        } else {
            xmlw_elem(b, "PreferredAvailabilityZone", str(n, "az"));
        }
        xmlw_close(b, "NodeGroupMember");
    }
    xmlw_close(b, "NodeGroupMembers");
    xmlw_close(b, "NodeGroup");
}

void ec_render_group(struct ec_call *c, const json_t *doc)
{
    struct strbuf *b = &c->out;
    const json_t *shards = json_object_get(doc, "shards"), *shard, *n;
    size_t s, k;
    char member[96], arn[256];
    bool disabled = disabled_mode(doc);

    xmlw_open(b, "ReplicationGroup");
    xmlw_elem(b, "ReplicationGroupId", str(doc, "id"));
    xmlw_elem(b, "Description", str(doc, "description"));
    xmlw_elem(b, "Status", group_status(doc));
    xmlw_open(b, "PendingModifiedValues");
    xmlw_close(b, "PendingModifiedValues");
    xmlw_open(b, "MemberClusters");
    json_array_foreach (shards, s, shard) {
        json_array_foreach (json_object_get(shard, "nodes"), k, n) {
            ec_member_id(doc, s, k, member, sizeof(member));
            xmlw_elem(b, "ClusterId", member);
        }
    }
    xmlw_close(b, "MemberClusters");
    xmlw_open(b, "NodeGroups");
    json_array_foreach (shards, s, shard) {
        node_group(b, doc, s, shard);
    }
    xmlw_close(b, "NodeGroups");
    xmlw_elem(b, "AutomaticFailover",
              json_is_true(json_object_get(doc, "automatic_failover")) ? "enabled" : "disabled");
    xmlw_elem(b, "MultiAZ",
              json_is_true(json_object_get(doc, "multi_az")) ? "enabled" : "disabled");
    if (!disabled)
        endpoint(
            b, "ConfigurationEndpoint",
            json_array_get(json_object_get(json_object_get(doc, "endpoints"), "configuration"), 0),
            false);
    snapshot_settings(b, doc);
    elem_bool(b, "ClusterEnabled", !disabled);
    xmlw_elem(b, "ClusterMode", disabled ? "disabled" : "enabled");
    xmlw_elem(b, "CacheNodeType", str(doc, "node_type"));
    elem_bool(b, "AuthTokenEnabled", true);
    transit_encryption(b, doc);
    elem_bool(b, "AtRestEncryptionEnabled", false);
    ec_arn(c, str(doc, "id"), arn, sizeof(arn));
    xmlw_elem(b, "ARN", arn);
    xmlw_elem(b, "ReplicationGroupCreateTime", str(doc, "created_at"));
    xmlw_elem(b, "DataTiering", "disabled");
    elem_bool(b, "AutoMinorVersionUpgrade", true);
    xmlw_elem(b, "NetworkType", "ipv4");
    xmlw_elem(b, "IpDiscovery", "ipv4");
    xmlw_elem(b, "Engine", str(doc, "engine"));
    xmlw_close(b, "ReplicationGroup");
}

/* The parameter group a cluster's settings stand for (or a snapshot's,
 * taken of such a cluster): Cairn keeps them per cluster, and answers with
 * the default group of its engine line. out holds 96 bytes. */
static void parameter_group_name(const json_t *doc, char *out)
{
    const char *engine = str(doc, "engine"), *version = str(doc, "engine_version");
    int major = version != NULL ? atoi(version) : 0;

    snprintf(out, 96, "default.%s%d%s", engine != NULL ? engine : "", major,
             disabled_mode(doc) ? "" : ".cluster.on");
}

static void parameter_group(struct strbuf *b, const json_t *doc)
{
    char name[96];

    parameter_group_name(doc, name);
    xmlw_open(b, "CacheParameterGroup");
    xmlw_elem(b, "CacheParameterGroupName", name);
    xmlw_elem(b, "ParameterApplyStatus", "in-sync");
    xmlw_close(b, "CacheParameterGroup");
}

static void cache_cluster(struct ec_call *c, const json_t *doc, size_t s, size_t k,
                          const json_t *node, bool with_nodes)
{
    struct strbuf *b = &c->out;
    char member[96], arn[256];
    const char *status = member_status(doc, node);
    const char *version = str(node, "engine_version");
    const json_t *pending = json_object_get(doc, "pending_changes");

    ec_member_id(doc, s, k, member, sizeof(member));
    xmlw_open(b, "CacheCluster");
    xmlw_elem(b, "CacheClusterId", member);
    xmlw_elem(b, "CacheNodeType", str(doc, "node_type"));
    xmlw_elem(b, "Engine", str(node, "engine") != NULL ? str(node, "engine") : str(doc, "engine"));
    xmlw_elem(b, "EngineVersion", version != NULL ? version : str(doc, "engine_version"));
    xmlw_elem(b, "CacheClusterStatus", status);
    elem_int(b, "NumCacheNodes", 1);
    xmlw_elem(b, "PreferredAvailabilityZone", str(node, "az"));
    xmlw_elem(b, "CacheClusterCreateTime", str(doc, "created_at"));
    xmlw_elem(b, "PreferredMaintenanceWindow", str(doc, "maintenance_window"));
    xmlw_open(b, "PendingModifiedValues");
    if (json_is_string(json_object_get(pending, "engine_version")))
        xmlw_elem(b, "EngineVersion", str(pending, "engine_version"));
    xmlw_close(b, "PendingModifiedValues");
    xmlw_open(b, "CacheSecurityGroups");
    xmlw_close(b, "CacheSecurityGroups");
    parameter_group(b, doc);
    if (with_nodes) {
        xmlw_open(b, "CacheNodes");
        xmlw_open(b, "CacheNode");
        xmlw_elem(b, "CacheNodeId", "0001");
        xmlw_elem(b, "CacheNodeStatus",
                  strcmp(status, "rebooting cluster nodes") == 0 ? "rebooting" : status);
        xmlw_elem(b, "CacheNodeCreateTime", str(doc, "created_at"));
        endpoint(b, "Endpoint", node, true);
        xmlw_elem(b, "ParameterGroupStatus", "in-sync");
        xmlw_elem(b, "CustomerAvailabilityZone", str(node, "az"));
        xmlw_close(b, "CacheNode");
        xmlw_close(b, "CacheNodes");
    }
    elem_bool(b, "AutoMinorVersionUpgrade", true);
    xmlw_open(b, "SecurityGroups");
    xmlw_close(b, "SecurityGroups");
    xmlw_elem(b, "ReplicationGroupId", str(doc, "id"));
    snapshot_settings(b, doc);
    elem_bool(b, "AuthTokenEnabled", true);
    transit_encryption(b, doc);
    elem_bool(b, "AtRestEncryptionEnabled", false);
    snprintf(arn, sizeof(arn), "arn:aws:elasticache:%s:" EC_ACCOUNT ":cluster:%s", c->region,
             member);
    xmlw_elem(b, "ARN", arn);
    elem_bool(b, "ReplicationGroupLogDeliveryEnabled", false);
    xmlw_elem(b, "NetworkType", "ipv4");
    xmlw_elem(b, "IpDiscovery", "ipv4");
    xmlw_close(b, "CacheCluster");
}

int ec_render_cache_clusters(struct ec_call *c, const json_t *doc, const char *member,
                             bool with_nodes)
{
    const json_t *shard, *n;
    size_t s, k;
    char id[96];
    int written = 0;

    json_array_foreach (json_object_get(doc, "shards"), s, shard) {
        json_array_foreach (json_object_get(shard, "nodes"), k, n) {
            ec_member_id(doc, s, k, id, sizeof(id));
            if (member != NULL && strcmp(member, id) != 0)
                continue;
            cache_cluster(c, doc, s, k, n, with_nodes);
            written++;
        }
    }
    return written;
}

void ec_render_tags(struct ec_call *c, const json_t *tags)
{
    const char *key;
    const json_t *value;

    xmlw_open(&c->out, "TagList");
    json_object_foreach ((json_t *)tags, key, value) {
        xmlw_open(&c->out, "Tag");
        xmlw_elem(&c->out, "Key", key);
        xmlw_elem(&c->out, "Value", json_string_value(value));
        xmlw_close(&c->out, "Tag");
    }
    xmlw_close(&c->out, "TagList");
}

/* ---- snapshots ------------------------------------------------------------ */

/* Whole days from one of Cairn's timestamps to another; -1 when either is
 * not one. */
static long days_between(const char *from, const char *to)
{
    struct tm t[2] = {{0}, {0}};
    const char *text[2] = {from, to};

    for (int i = 0; i < 2; i++) {
        if (text[i] == NULL ||
            sscanf(text[i], "%d-%d-%dT%d:%d:%d", &t[i].tm_year, &t[i].tm_mon, &t[i].tm_mday,
                   &t[i].tm_hour, &t[i].tm_min, &t[i].tm_sec) != 6)
            return -1;
        t[i].tm_year -= 1900;
        t[i].tm_mon -= 1;
    }
    return (long)((timegm(&t[1]) - timegm(&t[0])) / 86400);
}

/* A shard's slot ranges ([[first, last], ...]) as "0-5460,...". */
static void slot_ranges(struct strbuf *b, const json_t *slots)
{
    const json_t *r;
    size_t i;

    json_array_foreach (slots, i, r) {
        strbuf_printf(b, "%s%lld-%lld", i > 0 ? "," : "",
                      (long long)json_integer_value(json_array_get(r, 0)),
                      (long long)json_integer_value(json_array_get(r, 1)));
    }
}

/* One shard of a snapshot as a NodeSnapshot: its node group, the data the
 * engine held when it saved (CacheSize, in MB as ElastiCache gives it) and
 * when the snapshot began. */
static void node_snapshot(struct strbuf *b, const json_t *snap, const json_t *shard,
                          bool node_groups)
{
    char group[24], size[32];
    const json_t *memory = json_object_get(shard, "memory_bytes");

    snprintf(group, sizeof(group), "%04lld",
             (long long)json_integer_value(json_object_get(shard, "index")) + 1);
    xmlw_open(b, "NodeSnapshot");
    xmlw_elem(b, "NodeGroupId", group);
    if (node_groups) {
        xmlw_open(b, "NodeGroupConfiguration");
        xmlw_elem(b, "NodeGroupId", group);
        if (json_array_size(json_object_get(shard, "slots")) > 0) {
            struct strbuf slots;
            strbuf_init(&slots, 32);
            slot_ranges(&slots, json_object_get(shard, "slots"));
            xmlw_elem(b, "Slots", slots.p);
            free(slots.p);
        }
        elem_int(b, "ReplicaCount",
                 json_integer_value(json_object_get(snap, "replicas_per_shard")));
        xmlw_close(b, "NodeGroupConfiguration");
    }
    if (json_is_integer(memory)) {
        snprintf(size, sizeof(size), "%lld MB",
                 ((long long)json_integer_value(memory) + (1 << 20) - 1) / (1 << 20));
        xmlw_elem(b, "CacheSize", size);
    }
    xmlw_elem(b, "SnapshotCreateTime", str(snap, "created_at"));
    xmlw_close(b, "NodeSnapshot");
}

void ec_render_snapshot(struct ec_call *c, const json_t *snap, const json_t *group,
                        bool node_groups)
{
    struct strbuf *b = &c->out;
    const char *source = str(snap, "source");
    bool automatic = source != NULL && strcmp(source, "automatic") == 0;
    long retention =
        automatic ? days_between(str(snap, "created_at"), str(snap, "expires_at")) : -1;
    const json_t *shard;
    size_t i;
    char name[96], arn[256];

    xmlw_open(b, "Snapshot");
    xmlw_elem(b, "SnapshotName", str(snap, "name"));
    xmlw_elem(b, "ReplicationGroupId", str(snap, "cluster_id"));
    xmlw_elem(b, "ReplicationGroupDescription", str(group, "description"));
    xmlw_elem(b, "SnapshotStatus", str(snap, "status"));
    /* ElastiCache's two sources: a final snapshot is one a user asked for. */
    xmlw_elem(b, "SnapshotSource", automatic ? "automated" : "manual");
    xmlw_elem(b, "CacheNodeType", str(snap, "node_type"));
    xmlw_elem(b, "Engine", str(snap, "engine"));
    xmlw_elem(b, "EngineVersion", str(snap, "engine_version"));
    xmlw_elem(b, "PreferredMaintenanceWindow", str(group, "maintenance_window"));
    parameter_group_name(snap, name);
    xmlw_elem(b, "CacheParameterGroupName", name);
    elem_bool(b, "AutoMinorVersionUpgrade", true);
    /* An automatic snapshot's own retention; a manual one's, as
     * ElastiCache has it, the source group's. */
    if (retention < 0 && group != NULL)
        retention = (long)json_integer_value(json_object_get(group, "snapshot_retention_days"));
    if (retention >= 0)
        elem_int(b, "SnapshotRetentionLimit", retention);
    xmlw_elem(b, "SnapshotWindow", str(group, "snapshot_window"));
    elem_int(b, "NumNodeGroups", json_integer_value(json_object_get(snap, "num_shards")));
    if (group != NULL)
        xmlw_elem(b, "AutomaticFailover",
                  json_is_true(json_object_get(group, "automatic_failover")) ? "enabled"
                                                                             : "disabled");
    xmlw_open(b, "NodeSnapshots");
    json_array_foreach (json_object_get(snap, "shards"), i, shard) {
        node_snapshot(b, snap, shard, node_groups);
    }
    xmlw_close(b, "NodeSnapshots");
    snprintf(arn, sizeof(arn), "arn:aws:elasticache:%s:" EC_ACCOUNT ":snapshot:%s", c->region,
             str(snap, "name"));
    xmlw_elem(b, "ARN", arn);
    xmlw_elem(b, "DataTiering", "disabled");
    xmlw_close(b, "Snapshot");
}
