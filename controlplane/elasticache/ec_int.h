/* ec_int.h -- what the ElastiCache endpoint's files share: one call's
 * state, its parameters, its answer and its refusal. */
#ifndef CAIRN_EC_INT_H
#define CAIRN_EC_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "api.h"
#include "form.h"
#include "http.h"
#include "strbuf.h"

/* The region named when a request's credential scope has none to offer. */
#define EC_ACCOUNT "000000000000"

/* A refusal, as the Query protocol answers it. */
struct ec_error {
    bool set;
    int status;       /* 400, 403, 404, 500, 503 */
    const char *code; /* "ReplicationGroupNotFoundFault" */
    char message[768];
};

struct ec_call {
    struct http_request *req;
    struct app *app;
    struct form form;
    const char *action;
    char region[64];   /* from the credential scope */
    struct strbuf out; /* the content of <ActionResult> */
    struct ec_error err;
};

/* Refuse with code and status; returns false, so `return ec_fail(...)`. */
bool ec_fail(struct ec_call *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* InvalidParameterValue (400) about a parameter. */
bool ec_invalid(struct ec_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Refuse with what a cluster service's problem says, its code translated
 * to ElastiCache's (a missing cluster is ReplicationGroupNotFoundFault, a
 * busy one InvalidReplicationGroupState, ...); clears p. */
bool ec_fail_problem(struct ec_call *c, struct problem *p);

/* Refuse for a database failure. */
bool ec_fail_db(struct ec_call *c, enum db_status st);

/* Parameters. Each returns false after refusing when the value is there
 * but malformed; *present says whether it was sent. */
const char *ec_param(struct ec_call *c, const char *name);
bool ec_param_bool(struct ec_call *c, const char *name, bool *value, bool *present);
bool ec_param_int(struct ec_call *c, const char *name, long min, long max, long *value,
                  bool *present);

/* A required string parameter; refuses (MissingParameter) when absent. */
bool ec_param_required(struct ec_call *c, const char *name, const char **value);

/* Refuse every parameter of the request that is not in allowed (names, or
 * list prefixes ending in '.', NULL-terminated), nor Action / Version. */
bool ec_params_known(struct ec_call *c, const char *const *allowed);

/* ReplicationGroupId, required, as ElastiCache keeps it: lower case. out
 * holds 64 bytes. False after refusing. */
bool ec_group_id(struct ec_call *c, char *out);

/* A snapshot's name in parameter param (required), checked as Cairn names
 * snapshots (snapshots.h); false after refusing. */
bool ec_snapshot_name(struct ec_call *c, const char *param, const char **name);

/* Paging (ec_actions.c): MaxRecords (20 to max_records, default
 * max_records) and Marker as a page of the REST API's list named list;
 * false after refusing. ec_marker() writes the Marker of the page after
 * next_key (nothing when it is ""). */
bool ec_paging(struct ec_call *c, const char *list, enum page_key shape, long max_records,
               struct page *page);
void ec_marker(struct ec_call *c, const char *list, const char *next_key);

/* One page of a REST list as a parsed array (the caller's); NULL after
 * refusing. */
json_t *ec_fetch(struct ec_call *c, const struct api_list *list, const void *filter,
                 const struct page *page, char *next_key);

/* A cluster's document (GET /v1/clusters/{id}) parsed; NULL after refusing
 * (ReplicationGroupNotFoundFault, or the database's failure). */
json_t *ec_cluster_doc(struct ec_call *c, const char *id);

/* As ec_cluster_doc(), but a missing cluster is no refusal: NULL with
 * *missing set (NULL without it: refused for the database). */
json_t *ec_cluster_find(struct ec_call *c, const char *id, bool *missing);

/* A snapshot's document (GET /v1/snapshots/{id or name}) parsed, as
 * ec_cluster_find() and ec_cluster_doc() find a cluster's; a missing one is
 * SnapshotNotFoundFault for ec_snapshot_doc(). */
json_t *ec_snapshot_find(struct ec_call *c, const char *id_or_name, bool *missing);
json_t *ec_snapshot_doc(struct ec_call *c, const char *id_or_name);

/* The ARN of a replication group, and back: the id an ARN names, for a
 * replication group ("...:replicationgroup:ID") or one of its cache
 * clusters ("...:cluster:ID-0001-001"); NULL after refusing (InvalidARN). */
void ec_arn(struct ec_call *c, const char *id, char *out, size_t size);
char *ec_arn_cluster(struct ec_call *c, const char *arn);

/* The replication group a cache cluster id names ("<rg>-0001-001" or
 * "<rg>-001"), for the caller to free; NULL when it is shaped like neither. */
char *ec_member_group(const char *member);

/* The XML of documents (ec_render.c). */
void ec_render_group(struct ec_call *c, const json_t *doc);
/* Every node of doc as a CacheCluster, or only the one named member (NULL:
 * all); with_nodes adds CacheNodes. Returns how many were written. */
int ec_render_cache_clusters(struct ec_call *c, const json_t *doc, const char *member,
                             bool with_nodes);
void ec_render_tags(struct ec_call *c, const json_t *tags);
/* A snapshot's document as a Snapshot; group is the document of the
 * replication group it was taken of while that still exists (NULL: gone),
 * for what a Snapshot says of its source; node_groups adds each
 * NodeSnapshot's NodeGroupConfiguration (ShowNodeGroupConfig). */
void ec_render_snapshot(struct ec_call *c, const json_t *snap, const json_t *group,
                        bool node_groups);

/* The cache cluster id of the k-th node (0-based) of shard s in doc:
 * "<id>-0001-001" in cluster mode, "<id>-001" without. */
void ec_member_id(const json_t *doc, size_t shard, size_t k, char *out, size_t size);

/* The snapshot actions (ec_snapshots.c), in ec_actions[]. */
bool ec_create_snapshot(struct ec_call *c);
bool ec_describe_snapshots(struct ec_call *c);
bool ec_delete_snapshot(struct ec_call *c);

/* The actions (ec_actions.c): the table ec_serve() dispatches on. */
struct ec_action {
    const char *name;
    bool admin; /* changes something: an admin token */
    bool (*run)(struct ec_call *c);
};
extern const struct ec_action ec_actions[];

#endif
