/* problem.h -- the one registry of API error codes.
 *
 * Every error cairnd sends is an RFC 9457 problem document carrying a stable,
 * machine-readable code from this list. Codes never change meaning once
 * released; titles and details may be reworded. */
#ifndef CAIRN_PROBLEM_H
#define CAIRN_PROBLEM_H

#include <jansson.h>
#include <stdbool.h>

#include "db.h"

#define PROBLEM_CODES(X)                                                                           \
    X(MALFORMED_REQUEST, 400, "Request line or headers are malformed")                             \
    X(MALFORMED_JSON, 400, "Request body is not valid JSON")                                       \
    X(VALIDATION_FAILED, 400, "Request body is invalid")                                           \
    X(COMBINED_CHANGES, 400, "One change at a time")                                               \
    X(INVALID_QUERY_PARAMETER, 400, "Query parameter is invalid")                                  \
    X(INVALID_PAGE_TOKEN, 400, "Page token is invalid")                                            \
    X(UNAUTHENTICATED, 401, "Authentication required")                                             \
    X(FORBIDDEN, 403, "Token scope does not allow this request")                                   \
    X(ROUTE_NOT_FOUND, 404, "No such route")                                                       \
    X(NODE_TYPE_NOT_FOUND, 404, "Node type not found")                                             \
    X(OPERATION_NOT_FOUND, 404, "Operation not found")                                             \
    X(TOKEN_NOT_FOUND, 404, "Token not found")                                                     \
    X(JOIN_TOKEN_NOT_FOUND, 404, "Join token not found")                                           \
    X(HOST_NOT_FOUND, 404, "Host not found")                                                       \
    X(CLUSTER_NOT_FOUND, 404, "Cluster not found")                                                 \
    X(CALIBRATION_NOT_FOUND, 404, "Calibration not found")                                         \
    X(USER_NOT_FOUND, 404, "User not found")                                                       \
    X(SNAPSHOT_NOT_FOUND, 404, "Snapshot not found")                                               \
    X(NO_PENDING_CHANGE, 404, "Nothing is pending")                                                \
    X(METHOD_NOT_ALLOWED, 405, "Method not allowed on this route")                                 \
    X(CLUSTER_ALREADY_EXISTS, 409, "A cluster with this id exists with another spec")              \
    X(INSUFFICIENT_CAPACITY, 409, "No placement satisfies the rules")                              \
    X(OPERATION_IN_PROGRESS, 409, "Another operation is running on this cluster")                  \
    X(CHANGE_NOT_SUPPORTED_YET, 409, "This change is not supported yet")                           \
    X(NO_IN_SYNC_REPLICA, 409, "No replica is in sync")                                            \
    X(NOT_SUPPORTED_BY_ENGINE, 409, "The cluster's engine cannot do this")                         \
    X(ENGINE_NOT_INSTALLED, 409, "The engine is not installed on every host")                      \
    X(CLUSTER_UNHEALTHY, 409, "The cluster is not healthy enough for this")                        \
    X(INSUFFICIENT_MEMORY, 409, "Too little memory for the cluster's data")                        \
    X(OPERATION_NOT_CANCELLABLE, 409, "This operation cannot be cancelled")                        \
    X(HOST_NAME_TAKEN, 409, "A host of this name is registered")                                   \
    X(USER_ALREADY_EXISTS, 409, "The cluster has a user of this name")                             \
    X(USER_QUOTA_EXCEEDED, 409, "The cluster has as many users as it may")                         \
    X(HOST_NOT_PENDING, 409, "The host does not wait for approval")                                \
    X(HOST_IN_USE, 409, "Nodes are placed on the host")                                            \
    X(TOO_MANY_PENDING_HOSTS, 409, "Too many hosts wait for approval")                             \
    X(SNAPSHOT_NAME_TAKEN, 409, "A snapshot of this name exists")                                  \
    X(SNAPSHOT_NOT_AVAILABLE, 409, "The snapshot is not available for this")                       \
    X(SNAPSHOT_PART_OUT_OF_ORDER, 409, "The snapshot upload expects another part")                 \
    X(PRECONDITION_FAILED, 412, "The resource changed since it was read")                          \
    X(PAYLOAD_TOO_LARGE, 413, "Request body is too large")                                         \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "Request body must be application/json, plain or gzip")         \
    X(RATE_LIMITED, 429, "Too many requests with this token")                                      \
    X(INTERNAL_ERROR, 500, "Internal error")                                                       \
    X(OPERATION_FAILED, 500, "The operation the request started failed")                           \
    X(UNSUPPORTED_TRANSFER_CODING, 501, "Transfer coding not supported")                           \
    X(DATABASE_UNAVAILABLE, 503, "Database unavailable")                                           \
    X(NOT_READY, 503, "Service not ready")                                                         \
    X(TOO_MANY_CONNECTIONS, 503, "Too many connections; retry shortly")                            \
    X(SECRET_KEY_UNAVAILABLE, 503, "No secret key configured for engine passwords")                \
    X(NO_SNAPSHOT_STORE, 503, "No snapshot store is configured")

/* Codes an operation fails with (an operation's error.code) that no
 * request answers with; their status is 0. An operation may also fail with
 * a code above (INSUFFICIENT_CAPACITY, CLUSTER_UNHEALTHY, ...). */
#define OPERATION_ERROR_CODES(X)                                                                   \
    X(ENGINE_START_FAILED, "An engine did not start in time")                                      \
    X(HOST_LOST, "A host was lost during the operation")                                           \
    X(CLUSTER_FORMATION_FAILED, "The nodes did not form a cluster")                                \
    X(REPLICATION_FAILED, "A replica did not follow its primary")                                  \
    X(DELETE_STUCK, "Nodes were not removed in time")                                              \
    X(NODE_UNREACHABLE, "A node did not answer")                                                   \
    X(FAILOVER_REFUSED, "The engine refused the failover")                                         \
    X(FAILOVER_TIMEOUT, "The roles did not switch in time")                                        \
    X(FORGET_BLOCKED, "A dead node could not be forgotten")                                        \
    X(NODE_UPGRADE_FAILED, "A node did not come back on the new engine")                           \
    X(ENGINE_UPGRADE_ROLLED_BACK, "The upgrade was rolled back")                                   \
    X(BENCHMARK_FAILED, "The benchmark did not run to its end")                                    \
    X(SLOT_MIGRATION_FAILED, "A hash slot could not be moved")                                     \
    X(SNAPSHOT_FAILED, "An engine could not save its data")                                        \
    X(SNAPSHOT_UPLOAD_FAILED, "A snapshot file could not be carried off its host")                 \
    X(SNAPSHOT_CORRUPT, "A snapshot file does not match its checksum")                             \
    X(RESTORE_FAILED, "The snapshot's data could not be loaded")                                   \
    X(UNKNOWN_OPERATION, "This cairnd cannot run the operation")

enum problem_code {
#define PROBLEM_ENUM(code, status, title) PROBLEM_##code,
#define OPERATION_ENUM(code, title)       PROBLEM_##code,
    PROBLEM_CODES(PROBLEM_ENUM) OPERATION_ERROR_CODES(OPERATION_ENUM)
#undef PROBLEM_ENUM
#undef OPERATION_ENUM
        PROBLEM_COUNT
};

struct problem_info {
    const char *code;  /* "VALIDATION_FAILED" */
    int status;        /* HTTP status; 0 for an operation's own codes */
    const char *title; /* short human summary */
    const char *type;  /* "urn:cairn:problem:validation-failed" */
};

/* What went wrong, as domain code says it and the API replies it: a code
 * from the registry, a detail for people, and for VALIDATION_FAILED the
 * failing fields. A function that can refuse takes a struct problem * and
 * fills it when it returns false (or, inside a transaction, DB_REFUSED);
 * the handler replies with http_reply_error(). Start from {0}; a problem
 * holding errors is freed by http_reply_error() or problem_clear(). */
struct problem {
    bool set;
    enum problem_code code;
    char detail[512];
    json_t *errors; /* [{field, message}], or NULL */
};

/* Fill p (replacing what it held, errors kept) and return false, so that a
 * refusal reads `return problem_set(p, PROBLEM_X, "...")`. */
bool problem_set(struct problem *p, enum problem_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Add a failing field; p becomes VALIDATION_FAILED unless it is set. */
void problem_field(struct problem *p, const char *field, const char *message);

/* Whether st is DB_OK; otherwise p says why: after DB_REFUSED what the
 * transaction put there, after a database failure DATABASE_UNAVAILABLE or
 * INTERNAL_ERROR (the reply adds the request id). */
bool problem_db(struct problem *p, enum db_status st);

/* The cluster has an operation pending or running: OPERATION_IN_PROGRESS.
 * Returns DB_REFUSED, for transactions. */
enum db_status problem_busy(struct problem *p, const char *cluster_id);

/* No cluster has this id: CLUSTER_NOT_FOUND. Returns DB_REFUSED. */
enum db_status problem_no_cluster(struct problem *p, const char *cluster_id);

/* Release what p holds and zero it. */
void problem_clear(struct problem *p);

/* The registry entry for code; never NULL for a valid code. */
const struct problem_info *problem_info(enum problem_code code);

/* The code whose name is name ("CLUSTER_UNHEALTHY"), as an operation's
 * stored error carries it. False when the registry has no such code (one
 * written by a newer cairnd, say). */
bool problem_find(const char *name, enum problem_code *out);

#endif
