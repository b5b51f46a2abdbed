/* ec_endpoint.c -- POST /, the ElastiCache-compatible endpoint (ec.h): the
 * request's signature, its form, the action it names, and the XML answer
 * or error the AWS tools expect. */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ec.h"
#include "ec_int.h"
#include "log.h"
#include "ratelimit.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"
#include "xmlw.h"

#define EC_XMLNS       "http://elasticache.amazonaws.com/doc/2015-02-02/"
#define EC_VERSION     "2015-02-02"
#define EC_MAX_HEADERS 64

/* ---- refusals ------------------------------------------------------------ */

static bool vfail(struct ec_call *c, int status, const char *code, const char *fmt, va_list ap)
{
    if (c->err.set)
        return false; /* the first refusal is the one answered */
    c->err.set = true;
    c->err.status = status;
    c->err.code = code;
    vsnprintf(c->err.message, sizeof(c->err.message), fmt, ap);
    return false;
}

bool ec_fail(struct ec_call *c, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, status, code, fmt, ap);
    va_end(ap);
    return false;
}

bool ec_invalid(struct ec_call *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, 400, "InvalidParameterValue", fmt, ap);
    va_end(ap);
    return false;
}

/* Cairn's problem codes as ElastiCache's faults; a code not listed is an
 * invalid parameter value, with Cairn's detail as the message. */
static const struct {
    enum problem_code problem;
    int status;
    const char *code;
} fault_of[] = {
    {PROBLEM_CLUSTER_NOT_FOUND, 404, "ReplicationGroupNotFoundFault"},
    {PROBLEM_CLUSTER_ALREADY_EXISTS, 400, "ReplicationGroupAlreadyExists"},
    {PROBLEM_INSUFFICIENT_CAPACITY, 400, "InsufficientCacheClusterCapacity"},
    {PROBLEM_INSUFFICIENT_MEMORY, 400, "InsufficientCacheClusterCapacity"},
    {PROBLEM_OPERATION_IN_PROGRESS, 400, "InvalidReplicationGroupState"},
    {PROBLEM_CLUSTER_UNHEALTHY, 400, "InvalidReplicationGroupState"},
    {PROBLEM_NO_IN_SYNC_REPLICA, 400, "TestFailoverNotAvailableFault"},
    {PROBLEM_SNAPSHOT_NOT_FOUND, 404, "SnapshotNotFoundFault"},
    {PROBLEM_SNAPSHOT_NAME_TAKEN, 400, "SnapshotAlreadyExistsFault"},
    {PROBLEM_SNAPSHOT_NOT_AVAILABLE, 400, "InvalidSnapshotState"},
    /* Not retried, as a 503 would be: this cairnd cannot take snapshots. */
    {PROBLEM_NO_SNAPSHOT_STORE, 400, "SnapshotFeatureNotSupportedFault"},
    {PROBLEM_COMBINED_CHANGES, 400, "InvalidParameterCombination"},
    {PROBLEM_NO_PENDING_CHANGE, 400, "InvalidParameterValue"},
    {PROBLEM_DATABASE_UNAVAILABLE, 503, "ServiceUnavailable"},
    {PROBLEM_SECRET_KEY_UNAVAILABLE, 503, "ServiceUnavailable"},
    {PROBLEM_INTERNAL_ERROR, 500, "InternalFailure"},
};

/* The spec's fields as the parameters that set them. */
static const struct {
    const char *field, *param;
} param_of[] = {
    {"id", "ReplicationGroupId"},
    {"description", "ReplicationGroupDescription"},
    {"engine", "Engine"},
    {"engine_version", "EngineVersion"},
    {"node_type", "CacheNodeType"},
    {"cluster_mode", "ClusterMode"},
    {"num_shards", "NumNodeGroups"},
    {"replicas_per_shard", "ReplicasPerNodeGroup"},
    {"automatic_failover", "AutomaticFailoverEnabled"},
    {"multi_az", "MultiAZEnabled"},
    {"maintenance_window", "PreferredMaintenanceWindow"},
    {"snapshot_window", "SnapshotWindow"},
    {"snapshot_retention_days", "SnapshotRetentionLimit"},
    {"restore_from.snapshot_id", "SnapshotName"},
    {"parameters", "CacheParameterGroupName"},
    {"tags", "Tags"},
    {"auth_token", "AuthToken"},
};

/* A field of a problem's errors ("tags.team") named as the request named it
 * ("Tags.team"): the whole field's parameter, else its first part's. */
static void param_name(struct strbuf *b, const char *field)
{
    size_t n = strcspn(field, ".");
    for (size_t i = 0; i < sizeof(param_of) / sizeof(param_of[0]); i++) {
        if (strcmp(param_of[i].field, field) == 0) {
            strbuf_printf(b, "%s", param_of[i].param);
            return;
        }
    }
    for (size_t i = 0; i < sizeof(param_of) / sizeof(param_of[0]); i++) {
        if (strlen(param_of[i].field) == n && strncmp(param_of[i].field, field, n) == 0) {
            strbuf_printf(b, "%s%s", param_of[i].param, field + n);
            return;
        }
    }
    strbuf_printf(b, "%s", field);
}

bool ec_fail_problem(struct ec_call *c, struct problem *p)
{
    int status = 400;
    const char *code = "InvalidParameterValue";
    struct strbuf msg;

    for (size_t i = 0; i < sizeof(fault_of) / sizeof(fault_of[0]); i++) {
        if (fault_of[i].problem == p->code) {
            status = fault_of[i].status;
            code = fault_of[i].code;
        }
    }
    strbuf_init(&msg, 256);
    size_t i;
    json_t *e;
    if (json_array_size(p->errors) == 0)
        strbuf_printf(&msg, "%s", p->detail[0] != '\0' ? p->detail : problem_info(p->code)->title);
    json_array_foreach (p->errors, i, e) {
        strbuf_printf(&msg, "%s", i == 0 ? "" : "; ");
        param_name(&msg, json_string_value(json_object_get(e, "field")));
        strbuf_printf(&msg, " %s", json_string_value(json_object_get(e, "message")));
    }
    ec_fail(c, status, code, "%s", msg.p);
    free(msg.p);
    problem_clear(p);
    return false;
}

bool ec_fail_db(struct ec_call *c, enum db_status st)
{
    struct problem p = {0};
    (void)problem_db(&p, st);
    return ec_fail_problem(c, &p);
}

/* ---- parameters ---------------------------------------------------------- */

const char *ec_param(struct ec_call *c, const char *name)
{
    return form_get(&c->form, name);
}

bool ec_param_required(struct ec_call *c, const char *name, const char **value)
{
    *value = ec_param(c, name);
    if (*value != NULL && **value != '\0')
        return true;
    return ec_fail(c, 400, "MissingParameter", "The request must contain the parameter %s", name);
}

bool ec_param_bool(struct ec_call *c, const char *name, bool *value, bool *present)
{
    const char *v = ec_param(c, name);
    *present = v != NULL;
    if (v == NULL)
        return true;
    if (strcasecmp(v, "true") == 0 || strcasecmp(v, "false") == 0) {
        *value = strcasecmp(v, "true") == 0;
        return true;
    }
    return ec_invalid(c, "%s must be true or false", name);
}

bool ec_param_int(struct ec_call *c, const char *name, long min, long max, long *value,
                  bool *present)
{
    const char *v = ec_param(c, name);
    char *end;
    *present = v != NULL;
    if (v == NULL)
        return true;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < min || n > max)
        return ec_invalid(c, "%s must be an integer from %ld to %ld", name, min, max);
    *value = n;
    return true;
}

bool ec_params_known(struct ec_call *c, const char *const *allowed)
{
    for (size_t i = 0; i < c->form.count; i++) {
        const char *name = c->form.fields[i].name;
        bool known = strcmp(name, "Action") == 0 || strcmp(name, "Version") == 0;
        for (const char *const *a = allowed; !known && *a != NULL; a++) {
            size_t n = strlen(*a);
            known = (*a)[n - 1] == '.' ? strncmp(name, *a, n) == 0 : strcmp(name, *a) == 0;
        }
        if (!known)
            return ec_invalid(c, "%s is not a parameter of %s that Cairn supports", name,
                              c->action);
    }
    return true;
}

/* ---- documents and names ------------------------------------------------- */

struct doc_call {
    enum db_status (*get)(struct db_conn *conn, const char *key, char **out);
    const char *key;
    char *text;
};

static enum db_status doc_fn(struct db_conn *conn, void *arg)
{
    struct doc_call *d = arg;
    free(d->text);
    d->text = NULL;
    return d->get(conn, d->key, &d->text);
}

/* The document get() reads by key, parsed; NULL with *missing when there
 * is none, or after refusing. */
static json_t *find_doc(struct ec_call *c,
                        enum db_status (*get)(struct db_conn *conn, const char *key, char **out),
                        const char *key, bool *missing)
{
    struct doc_call call = {get, key, NULL};
    enum db_status st = db_run(c->app->db, doc_fn, &call);
    json_t *doc = NULL;

    *missing = st == DB_NOT_FOUND;
    if (st == DB_OK && (doc = json_loads(call.text, 0, NULL)) == NULL)
        ec_fail(c, 500, "InternalFailure", "the document of %s cannot be read", key);
    else if (st != DB_OK && !*missing)
        ec_fail_db(c, st);
    free(call.text);
    return doc;
}

static enum db_status cluster_get(struct db_conn *conn, const char *id, char **out)
{
    return store_cluster_get(conn, id, false, out);
}

json_t *ec_cluster_find(struct ec_call *c, const char *id, bool *missing)
{
    return find_doc(c, cluster_get, id, missing);
}

json_t *ec_cluster_doc(struct ec_call *c, const char *id)
{
    bool missing;
    json_t *doc = ec_cluster_find(c, id, &missing);
    if (missing)
        ec_fail(c, 404, "ReplicationGroupNotFoundFault", "ReplicationGroup %s not found", id);
    return doc;
}

json_t *ec_snapshot_find(struct ec_call *c, const char *id_or_name, bool *missing)
{
    return find_doc(c, store_snapshot_get, id_or_name, missing);
}

json_t *ec_snapshot_doc(struct ec_call *c, const char *id_or_name)
{
    bool missing;
    json_t *doc = ec_snapshot_find(c, id_or_name, &missing);
    if (missing)
        ec_fail(c, 404, "SnapshotNotFoundFault", "Snapshot %s not found", id_or_name);
    return doc;
}

void ec_arn(struct ec_call *c, const char *id, char *out, size_t size)
{
    snprintf(out, size, "arn:aws:elasticache:%s:" EC_ACCOUNT ":replicationgroup:%s", c->region, id);
}

char *ec_member_group(const char *member)
{
    size_t n = strlen(member);
    if (n > 9 && member[n - 9] == '-' && member[n - 4] == '-' &&
        strspn(member + n - 8, "0123456789") == 4 && strspn(member + n - 3, "0123456789") == 3)
        return xstrndup(member, n - 9);
    if (n > 4 && member[n - 4] == '-' && strspn(member + n - 3, "0123456789") == 3)
        return xstrndup(member, n - 4);
    return NULL;
}

char *ec_arn_cluster(struct ec_call *c, const char *arn)
{
    const char *rest = arn;
    /* arn:partition:elasticache:region:account:type:id */
    for (int i = 0; i < 5 && rest != NULL; i++) {
        rest = strchr(rest, ':');
        rest = rest != NULL ? rest + 1 : NULL;
    }
    if (strncmp(arn, "arn:", 4) != 0 || rest == NULL || strstr(arn, ":elasticache:") == NULL) {
        ec_fail(c, 400, "InvalidARN", "%s is not an ElastiCache ARN", arn);
        return NULL;
    }
    if (strncmp(rest, "replicationgroup:", 17) == 0 && rest[17] != '\0')
        return xstrdup(rest + 17);
    char *group = strncmp(rest, "cluster:", 8) == 0 ? ec_member_group(rest + 8) : NULL;
    if (group == NULL)
        ec_fail(c, 400, "InvalidARN", "%s names no replication group or cache cluster of Cairn's",
                arn);
    return group;
}

void ec_member_id(const json_t *doc, size_t shard, size_t k, char *out, size_t size)
{
    const char *id = json_string_value(json_object_get(doc, "id"));
    const char *mode = json_string_value(json_object_get(doc, "cluster_mode"));

    if (mode != NULL && strcmp(mode, "disabled") == 0)
        snprintf(out, size, "%s-%03zu", id, k + 1);
    else
        snprintf(out, size, "%s-%04zu-%03zu", id, shard + 1, k + 1);
}

/* ---- the request --------------------------------------------------------- */

struct header_list {
    struct sigv4_header items[EC_MAX_HEADERS];
    size_t count;
    bool too_many;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                      const char *value)
{
    struct header_list *h = cls;
    (void)kind;
    if (h->count == EC_MAX_HEADERS) {
        h->too_many = true;
        return MHD_NO;
    }
    h->items[h->count].name = name;
    h->items[h->count].value = value != NULL ? value : "";
    h->count++;
    return MHD_YES;
}

/* Who signed the request; false after refusing. */
static bool authenticate(struct ec_call *c)
{
    struct http_request *req = c->req;
    struct header_list headers = {0};
    char *path = xstrdup(req->target);
    char *query = strchr(path, '?');

    if (query != NULL)
        *query++ = '\0';
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &headers);
    struct sigv4_request sreq = {req->method,   path,      query,        headers.items,
                                 headers.count, req->body, req->body_len};
    struct auth_sigv4 a = {.req = &sreq,
                           .authorization = http_header(req, "Authorization"),
                           .amz_date = http_header(req, "X-Amz-Date"),
                           .service = "elasticache",
                           .now_s = time_now_s()};
    enum db_status st =
        headers.too_many
            ? DB_OK
            : auth_verify_sigv4(c->app->db, c->app->have_secret_key ? c->app->secret_key : NULL, &a,
                                &req->who);
    free(path);
    snprintf(c->region, sizeof(c->region), "%s", a.region[0] != '\0' ? a.region : "us-east-1");
    if (headers.too_many)
        return ec_fail(c, 400, "IncompleteSignature", "the request has more than %d headers",
                       EC_MAX_HEADERS);
    if (st != DB_OK)
        return ec_fail_db(c, st);
    int retry_s;
    switch (a.result) {
    case AUTH_SIGV4_OK:
        /* Over the token's rate (http/ratelimit.h): as AWS throttles, which
         * the SDKs retry with backoff. */
        if (ratelimit_take(c->app->limits, req->who.token_id, time_mono_us(), &retry_s))
            return true;
        return ec_fail(c, 400, "Throttling", "Rate exceeded: retry in %d s", retry_s);
    case AUTH_SIGV4_MISSING:
        return ec_fail(c, 403, "MissingAuthenticationToken", "%s", a.detail);
    case AUTH_SIGV4_MALFORMED:
        return ec_fail(c, 400, "IncompleteSignature", "%s", a.detail);
    case AUTH_SIGV4_UNKNOWN_KEY:
        return ec_fail(c, 403, "InvalidClientTokenId", "%s", a.detail);
    case AUTH_SIGV4_EXPIRED:
    case AUTH_SIGV4_MISMATCH:
        return ec_fail(c, 403, "SignatureDoesNotMatch", "%s", a.detail);
    }
    return ec_fail(c, 500, "InternalFailure", "%s", "unknown signature check result");
}

/* The form and the action it names; false after refusing. */
static const struct ec_action *parse(struct ec_call *c)
{
    const char *type = http_header(c->req, "Content-Type");
    char why[160];

    if (type == NULL || strncasecmp(type, "application/x-www-form-urlencoded", 33) != 0) {
        ec_fail(c, 400, "InvalidParameterValue",
                "send the request as application/x-www-form-urlencoded (got %s)",
                type != NULL ? type : "no Content-Type");
        return NULL;
    }
    if (!form_parse(c->req->body, c->req->body_len, &c->form, why, sizeof(why))) {
        ec_fail(c, 400, "MalformedQueryString", "the request body cannot be read: %s", why);
        return NULL;
    }
    const char *version = ec_param(c, "Version");
    if (!ec_param_required(c, "Action", &c->action))
        return NULL;
    if (version == NULL || strcmp(version, EC_VERSION) != 0) {
        ec_fail(c, 400, "InvalidParameterValue",
                "Version must be " EC_VERSION ", the ElastiCache API Cairn speaks");
        return NULL;
    }
    for (const struct ec_action *a = ec_actions; a->name != NULL; a++)
        if (strcmp(a->name, c->action) == 0) {
            snprintf(c->req->action, sizeof(c->req->action), "%s", a->name); /* audit log */
            return a;
        }
    ec_fail(c, 400, "InvalidAction",
            "%s is not an action of the ElastiCache API that Cairn supports (see "
            "docs/elasticache.md)",
            c->action);
    return NULL;
}

static void reply_xml(struct ec_call *c)
{
    struct strbuf b;
    strbuf_init(&b, c->out.len + 512);
    strbuf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if (c->err.set) {
        strbuf_printf(&b, "<ErrorResponse xmlns=\"" EC_XMLNS "\">");
        xmlw_open(&b, "Error");
        xmlw_elem(&b, "Type", c->err.status >= 500 ? "Receiver" : "Sender");
        xmlw_elem(&b, "Code", c->err.code);
        xmlw_elem(&b, "Message", c->err.message);
        xmlw_close(&b, "Error");
        xmlw_elem(&b, "RequestId", c->req->request_id);
        xmlw_close(&b, "ErrorResponse");
        log_info("elasticache refusal", "request_id=%s action=%s status=%d code=%s",
                 c->req->request_id, c->action != NULL ? c->action : "-", c->err.status,
                 c->err.code);
    } else {
        strbuf_printf(&b, "<%sResponse xmlns=\"" EC_XMLNS "\"><%sResult>%s</%sResult>", c->action,
                      c->action, c->out.p, c->action);
        xmlw_open(&b, "ResponseMetadata");
        xmlw_elem(&b, "RequestId", c->req->request_id);
        xmlw_close(&b, "ResponseMetadata");
        strbuf_printf(&b, "</%sResponse>", c->action);
    }
    http_add_header(c->req, "x-amzn-RequestId", c->req->request_id);
    http_reply_text(c->req, c->err.set ? c->err.status : 200, b.p, "text/xml");
}

void ec_serve(struct http_request *req)
{
    struct ec_call c = {.req = req, .app = req->app};
    const struct ec_action *action = NULL;

    strbuf_init(&c.out, 1024);
    if (authenticate(&c) && (action = parse(&c)) != NULL) {
        if (action->admin && req->who.scope != TOKEN_SCOPE_ADMIN)
            ec_fail(&c, 403, "AccessDenied", "token %s has scope 'read'; %s needs an admin token",
                    req->who.token_id, action->name);
        else if (!action->run(&c) && !c.err.set)
            ec_fail(&c, 500, "InternalFailure", "%s was refused without a reason", action->name);
    }
    reply_xml(&c);
    form_free(&c.form);
    free(c.out.p);
}
