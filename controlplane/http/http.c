/* http.c -- the request lifecycle on libmicrohttpd: request ids, body cap,
 * routing, authentication, query and body checks, replies, access log and
 * graceful shutdown. */
#define _GNU_SOURCE
#include "http.h"

#include <assert.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"
#include "gzip.h"
#include "http_check.h"
#include "listen_addr.h"
#include "log.h"
#include "ratelimit.h"
#include "store.h"
#include "timeutil.h"
#include "utf8.h"
#include "xalloc.h"

#define CONNECTION_TIMEOUT_S 30

/* Seconds a client refused for want of connections is told to wait. */
#define BUSY_RETRY_AFTER_S "1"

/* Handlers waiting for a worker, and the workers that run them. */
struct worker {
    struct work_pool *pool;
    pthread_t thread;
    int64_t busy_since_us; /* when the heartbeat it runs was queued; 0: none */
};

struct work_pool {
    struct http_server *srv;
    /* Urgent requests first (head to last_urgent), each kind in order. */
    struct http_request *head, *tail, *last_urgent;
    pthread_cond_t ready;
    bool stopping;
    struct worker *workers;
    int count;
};

struct http_server {
    struct MHD_Daemon *daemon;
    struct app *app;
    const struct route *table;
    size_t nroutes;
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int active; /* requests between their first callback and completion */

    /* Long-polls: parked requests, woken by http_wake() or the park timer. */
    struct http_request *parked;
    uint64_t wake_epoch;
    bool stopping;
    pthread_cond_t park_changed;
    pthread_t park_timer;

    _Atomic int connections; /* open now, counted by on_connection */

    /* Workers: the handlers, run off the connection threads (see
     * offload()), the users' routes on some and the agents' on others. */
    struct work_pool users, agents;
};

/* Process-wide request counters, for GET /metrics. */
static _Atomic unsigned long long requests_by_class[6];
static _Atomic unsigned long long request_us_total;

void http_stats_read(struct http_stats *out)
{
    for (int i = 0; i < 6; i++)
        out->requests_by_class[i] = requests_by_class[i];
    out->request_seconds_total = (double)request_us_total / 1e6;
}

/* ---- the request lifecycle --------------------------------------------- */

static bool valid_request_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

/* A request's life starts when its request line has arrived: the raw
 * target is all there is yet (see on_uri). */
static struct http_request *request_new(struct http_server *srv, struct MHD_Connection *conn,
                                        const char *target)
{
    struct http_request *req = xcalloc(1, sizeof(*req));

    req->app = srv->app;
    req->server = srv;
    req->conn = conn;
    req->target = xstrdup(target);
    req->reply_fd = -1;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL ||
        getnameinfo(ci->client_addr,
                    ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                           : sizeof(struct sockaddr_in),
                    req->remote_address, sizeof(req->remote_address), NULL, 0, NI_NUMERICHOST) != 0)
        strcpy(req->remote_address, "unknown");
    req->started_us = time_mono_us();
    pthread_mutex_lock(&srv->lock);
    srv->active++;
    pthread_mutex_unlock(&srv->lock);
    return req;
}

/* The request id: the client's X-Request-Id when it is a sane one, else
 * a new one. */
static void set_request_id(struct http_request *req)
{
    const char *rid = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "X-Request-Id");

    if (rid != NULL && valid_request_id(rid)) {
        strcpy(req->request_id, rid);
    } else {
        unsigned char raw[8];
        crypto_random(raw, sizeof(raw));
        strcpy(req->request_id, "req_");
        crypto_hex(raw, sizeof(raw), req->request_id + 4);
    }
}

static void request_free(struct http_request *req)
{
    route_params_clear(&req->params);
    for (size_t i = 0; i < req->nheaders; i++)
        free(req->headers[i].value);
    free(req->headers);
    if (req->reply_fd >= 0)
        close(req->reply_fd);
    free(req->reply);
    free(req->body);
    json_decref(req->json);
    free(req->path);
    free(req->target);
    free(req);
}

struct query_check {
    struct http_request *req;
    json_t *errors;
};

static enum MHD_Result check_one_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct query_check *qc = cls;
    const char *const *allowed = qc->req->route->query;
    (void)kind;
    (void)value;

    for (; allowed != NULL && *allowed != NULL; allowed++) {
        if (strcmp(*allowed, key) == 0)
            return MHD_YES;
    }
    jspec_error(qc->errors, key, "is not a known query parameter");
    return MHD_YES;
}

/* Every query parameter must be one the route accepts. Returns false after
 * replying when one is not. */
static bool check_query(struct http_request *req)
{
    struct query_check qc = {req, json_array()};

    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, check_one_arg, &qc);
    if (json_array_size(qc.errors) > 0) {
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, qc.errors,
                           "the request has query parameters this route does not accept");
        return false;
    }
    json_decref(qc.errors);
    return true;
}

/* The largest body req's route takes. */
static size_t body_limit(const struct http_server *srv, const struct http_request *req)
{
    if (req->route != NULL && req->route->max_body > 0)
        return req->route->max_body;
    return srv->app->cfg.max_body_bytes;
}

/* Every header as http_check.h wants them: each field checked, the
 * framing headers gathered. */
#define MAX_FRAMING_HEADERS 8

struct header_scan {
    char bad[64]; /* the first field that failed, "" when none did */
    const char *lengths[MAX_FRAMING_HEADERS], *codings[MAX_FRAMING_HEADERS];
    size_t nlengths, ncodings;
    bool too_many;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                   const char *value)
{
    struct header_scan *hs = cls;
    (void)kind;

    if (hs->bad[0] == '\0' && !http_check_header(name, value))
        utf8_scrub(name, hs->bad, sizeof(hs->bad));
    const char **slot = NULL;
    if (strcasecmp(name, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        slot = hs->nlengths < MAX_FRAMING_HEADERS ? &hs->lengths[hs->nlengths++] : NULL;
    else if (strcasecmp(name, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        slot = hs->ncodings < MAX_FRAMING_HEADERS ? &hs->codings[hs->ncodings++] : NULL;
    else
        return MHD_YES;
    if (slot == NULL)
        hs->too_many = true;
    else
        *slot = value;
    return MHD_YES;
}

/* The request line and headers, checked before anything reads them
 * (http_check.h); on success req->path is the decoded path. Returns false
 * after replying (and asking for the connection to close: after a
 * malformed request nothing on it can be trusted). */
static bool admit(struct http_request *req)
{
    struct header_scan hs = {0};
    char err[160];
    int status;

    if (!http_check_method(req->method)) {
        http_add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        http_reply_problem(req, PROBLEM_MALFORMED_REQUEST, NULL,
                           "the method is not an HTTP token of at most %d characters",
                           HTTP_CHECK_METHOD_MAX);
        return false;
    }
    if (!http_check_target(req->target, &req->path, err, sizeof(err))) {
        http_add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        http_reply_problem(req, PROBLEM_MALFORMED_REQUEST, NULL, "%s", err);
        return false;
    }
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, scan_header, &hs);
    if (hs.bad[0] != '\0' || hs.too_many) {
        http_add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        http_reply_problem(req, PROBLEM_MALFORMED_REQUEST, NULL,
                           hs.too_many ? "too many Content-Length or Transfer-Encoding headers"
                                       : "header %s is not a token or holds a control character",
                           hs.bad);
        return false;
    }
    status = http_check_framing(hs.lengths, hs.nlengths, hs.codings, hs.ncodings, err, sizeof(err));
    if (status != 0) {
        http_add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        http_reply_problem(
            req, status == 501 ? PROBLEM_UNSUPPORTED_TRANSFER_CODING : PROBLEM_MALFORMED_REQUEST,
            NULL, "%s", err);
        return false;
    }
    return true;
}

/* Whether the server has no connection to spare for route: past
 * --max-connections only agents and health probes are served, from the
 * reserve (the console's files need no token, but are neither). */
static bool over_capacity(const struct http_server *srv, const struct route *route)
{
    bool reserved = !route->console && (route->scope == SCOPE_NONE || route->scope == SCOPE_AGENT ||
                                        route->scope == SCOPE_BOOTSTRAP);
    return !reserved && srv->connections > srv->app->cfg.max_connections;
}

/* Everything that can be decided from the request line and headers, before
 * any body is read: the route, the token, the query, the content type and
 * the content encoding. Returns false after replying when the request
 * cannot proceed. */
/* The route of the request, or a 404 / 405 reply. */
static const struct route *find_route(struct http_server *srv, struct http_request *req)
{
    char allow[128];
    const struct route *route = route_find(srv->table, srv->nroutes, req->method, req->path,
                                           &req->params, allow, sizeof(allow));
    if (route != NULL)
        return route;
    if (allow[0] != '\0') {
        http_add_header(req, "Allow", allow);
        http_reply_problem(req, PROBLEM_METHOD_NOT_ALLOWED, NULL,
                           "%s is not allowed on %s; allowed: %s", req->method, req->path, allow);
    } else {
        http_reply_problem(req, PROBLEM_ROUTE_NOT_FOUND, NULL, "no route matches %s %s",
                           req->method, req->path);
    }
    return NULL;
}

/* An API token over its rate (--rate-limit) is answered 429 here, once it
 * is known and before its handler runs, whatever its scope allows.
 * Agents' credentials are not limited: their syncs and pushes are paced by
 * cairnd itself. */
static bool within_rate(struct http_server *srv, struct http_request *req)
{
    int retry_s;
    if (req->who.kind != AUTH_KIND_TOKEN ||
        ratelimit_take(srv->app->limits, req->who.token_id, time_mono_us(), &retry_s))
        return true;
    char text[16];
    snprintf(text, sizeof(text), "%d", retry_s);
    http_add_header(req, "Retry-After", text);
    http_reply_problem(req, PROBLEM_RATE_LIMITED, NULL,
                       "token %s sent more than %d requests a second (bursts of %d); retry in %d s",
                       req->who.token_id, srv->app->cfg.rate_limit, srv->app->cfg.rate_limit_burst,
                       retry_s);
    return false;
}

/* Who calls, and whether they may call this route; a 401 or 403 if not. */
static bool authenticate(struct http_server *srv, struct http_request *req)
{
    const struct route *route = req->route;
    if (route->scope == SCOPE_NONE || route->scope == SCOPE_SIGV4)
        return true; /* a signature is the handler's to check: it covers the body */
    const char *header =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *bearer = auth_bearer(header);
    if (route->scope == SCOPE_BOOTSTRAP && srv->app->cfg.agent_bootstrap_token == NULL &&
        (bearer == NULL || strncmp(bearer, AUTH_JOIN_PREFIX, strlen(AUTH_JOIN_PREFIX)) != 0)) {
        http_reply_problem(req, PROBLEM_FORBIDDEN, NULL,
                           "registering with a bootstrap token is disabled: register with a "
                           "host's join token (POST /v1/host-join-tokens), or start cairnd "
                           "with --agent-bootstrap-token");
        return false;
    }
    enum db_status st =
        auth_verify(srv->app->db, srv->app->tokens, srv->app->cfg.agent_bootstrap_token,
                    route->scope, header, &req->who);
    if (st == DB_NOT_FOUND) {
        http_reply_problem(req, PROBLEM_UNAUTHENTICATED, NULL,
                           header == NULL
                               ? "send an API token as 'Authorization: Bearer <token>'"
                               : "the API token is malformed, unknown, revoked or expired");
        return false;
    }
    if (st != DB_OK) {
        http_reply_db_error(req, st);
        return false;
    }
    if (!within_rate(srv, req))
        return false;
    if (auth_allows(&req->who, route->scope))
        return true;
    if (req->who.kind == AUTH_KIND_AGENT)
        http_reply_problem(req, PROBLEM_FORBIDDEN, NULL,
                           "agent credentials only open the agent routes");
    else if (route->scope == SCOPE_AGENT)
        http_reply_problem(req, PROBLEM_FORBIDDEN, NULL,
                           "this route takes an agent credential, not an API token");
    else
        http_reply_problem(req, PROBLEM_FORBIDDEN, NULL,
                           "this route needs a token with scope '%s'; token %s has scope '%s'",
                           route_scope_name(route->scope), req->who.token_id,
                           auth_scope_name(req->who.scope));
    return false;
}

static bool has_body(struct MHD_Connection *conn);

/* The body's declared size, type and coding, before it is read. */
static bool check_body_headers(struct http_server *srv, struct http_request *req)
{
    const char *length =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length != NULL && strtoull(length, NULL, 10) > body_limit(srv, req)) {
        req->body_too_large = true;
        http_reply_problem(req, PROBLEM_PAYLOAD_TOO_LARGE, NULL,
                           "the body has %s bytes; the limit is %zu", length, body_limit(srv, req));
        return false;
    }
    if (req->route->body == NULL || (req->route->body_optional && !has_body(req->conn)))
        return true;
    const char *type =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!http_check_json_type(type)) {
        http_reply_problem(req, PROBLEM_UNSUPPORTED_MEDIA_TYPE, NULL,
                           "send the body as application/json (got %s)",
                           type != NULL ? type : "no Content-Type");
        return false;
    }
    const char *coding =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (!http_check_coding(coding, &req->gzipped)) {
        http_add_header(req, MHD_HTTP_HEADER_ACCEPT_ENCODING, "gzip"); /* RFC 7694 */
        http_reply_problem(req, PROBLEM_UNSUPPORTED_MEDIA_TYPE, NULL,
                           "send the body as it is or with Content-Encoding: gzip (got %s)",
                           coding);
        return false;
    }
    return true;
}

/* Everything known before the body is read: route, capacity, identity,
 * query, body headers. False once a refusal is queued. */
static bool preflight(struct http_server *srv, struct http_request *req)
{
    if ((req->route = find_route(srv, req)) == NULL)
        return false;
    if (over_capacity(srv, req->route)) {
        http_add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, BUSY_RETRY_AFTER_S);
        http_add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        http_reply_problem(req, PROBLEM_TOO_MANY_CONNECTIONS, NULL,
                           "cairnd has %d connections open, its limit is %d; retry in %s s",
                           srv->connections, srv->app->cfg.max_connections, BUSY_RETRY_AFTER_S);
        return false;
    }
    return authenticate(srv, req) && (req->route->console || check_query(req)) &&
           check_body_headers(srv, req);
}

/* Replace a gzip body with what it expands to, which must fit the route's
 * limit as the body itself did. Returns false after replying when it does
 * not fit or is not gzip. */
static bool expand_body(struct http_server *srv, struct http_request *req)
{
    size_t limit = body_limit(srv, req), len = 0;
    char *plain = NULL, err[128];

    if (!req->gzipped || req->body_len == 0)
        return true;
    switch (gzip_decompress(req->body, req->body_len, limit, &plain, &len, err, sizeof(err))) {
    case GZIP_OK:
        break;
    case GZIP_TOO_LARGE:
        http_reply_problem(req, PROBLEM_PAYLOAD_TOO_LARGE, NULL,
                           "the gzip body expands to more than the limit of %zu bytes", limit);
        return false;
    case GZIP_CORRUPT:
        http_reply_problem(req, PROBLEM_MALFORMED_JSON, NULL,
                           "the body is sent with Content-Encoding: gzip but is not gzip: %s", err);
        return false;
    }
    free(req->body);
    req->body = plain;
    req->body_len = len;
    return true;
}

/* Parse and check the body against the route's spec. Returns false after
 * replying when it does not pass. */
static bool check_body(struct http_request *req)
{
    json_error_t jerr;
    json_t *errors;

    if (req->route->body == NULL)
        return true;
    if (req->body_len == 0 && req->route->body_optional) {
        req->json = json_object();
        return true;
    }
    if (req->body_len == 0) {
        http_reply_problem(req, PROBLEM_MALFORMED_JSON, NULL, "the request body is empty");
        return false;
    }
    req->json =
        json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (req->json == NULL) {
        http_reply_problem(req, PROBLEM_MALFORMED_JSON, NULL, "line %d, column %d: %s", jerr.line,
                           jerr.column, jerr.text);
        return false;
    }
    errors = json_array();
    if (!jspec_check(req->json, req->route->body, errors)) {
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors,
                           "%zu field(s) of the request body are invalid", json_array_size(errors));
        return false;
    }
    json_decref(errors);
    return true;
}

/* ---- long-polls --------------------------------------------------------- */

uint64_t http_wake_epoch(struct http_request *req)
{
    struct http_server *srv = req->server;
    pthread_mutex_lock(&srv->lock);
    uint64_t epoch = srv->wake_epoch;
    pthread_mutex_unlock(&srv->lock);
    return epoch;
}

bool http_stopping(struct http_request *req)
{
    struct http_server *srv = req->server;
    pthread_mutex_lock(&srv->lock);
    bool stopping = srv->stopping;
    pthread_mutex_unlock(&srv->lock);
    return stopping;
}

bool http_suspend(struct http_request *req, const char *key, uint64_t epoch, int64_t deadline_us)
{
    struct http_server *srv = req->server;

    pthread_mutex_lock(&srv->lock);
    if (srv->wake_epoch != epoch || srv->stopping) {
        pthread_mutex_unlock(&srv->lock);
        return false;
    }
    snprintf(req->park_key, sizeof(req->park_key), "%s", key);
    req->park_deadline_us = deadline_us;
    req->resumed = true;
    req->suspended = true;
    req->parked = true;
    req->park_next = srv->parked;
    srv->parked = req;
    if (!req->on_worker) /* a worker's connection is suspended already (offload()) */
        MHD_suspend_connection(req->conn);
    pthread_cond_signal(&srv->park_changed);
    pthread_mutex_unlock(&srv->lock);
    return true;
}

/* Resume every parked request for which pick() says so. Holds srv->lock. */
static void resume_where(struct http_server *srv, bool (*pick)(struct http_request *, const void *),
                         const void *arg)
{
    struct http_request **link = &srv->parked;

    while (*link != NULL) {
        struct http_request *req = *link;
        if (pick(req, arg)) {
            *link = req->park_next;
            req->suspended = false;
            if (!req->on_worker) /* else its worker resumes it once the handler returns */
                MHD_resume_connection(req->conn);
        } else {
            link = &req->park_next;
        }
    }
}

static bool key_matches(struct http_request *req, const void *key)
{
    return key == NULL || strcmp(req->park_key, key) == 0;
}

static bool deadline_passed(struct http_request *req, const void *now)
{
    return req->park_deadline_us <= *(const int64_t *)now;
}

void http_wake(struct http_server *srv, const char *key)
{
    pthread_mutex_lock(&srv->lock);
    srv->wake_epoch++;
    resume_where(srv, key_matches, key);
    pthread_mutex_unlock(&srv->lock);
}

/* The park timer: resumes parked requests whose deadline has passed. */
static void *park_timer_main(void *arg)
{
    struct http_server *srv = arg;

    pthread_mutex_lock(&srv->lock);
    while (!srv->stopping) {
        int64_t now = time_mono_us(), next = now + 1000000;
        resume_where(srv, deadline_passed, &now);
        for (struct http_request *r = srv->parked; r != NULL; r = r->park_next)
            next = r->park_deadline_us < next ? r->park_deadline_us : next;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (next - now) * 1000;
        until.tv_sec += ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        pthread_cond_timedwait(&srv->park_changed, &srv->lock, &until);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

/* ---- handlers ----------------------------------------------------------- */

static void call_handler(struct http_request *req)
{
    req->parked = false;
    req->route->handler(req);
    if (!req->replied && !req->parked) {
        log_error("handler sent no reply", "request_id=%s route=%s", req->request_id,
                  req->route->pattern);
        http_reply_problem(req, PROBLEM_INTERNAL_ERROR, NULL, "the server sent no reply");
    }
}

static void run_handler(struct http_server *srv, struct http_request *req)
{
    if (req->body_too_large) {
        http_reply_problem(req, PROBLEM_PAYLOAD_TOO_LARGE, NULL,
                           "the body is over the limit of %zu bytes", body_limit(srv, req));
        return;
    }
    if (!expand_body(srv, req) || !check_body(req))
        return;
    call_handler(req);
}

/* ---- workers ------------------------------------------------------------ *
 *
 * libmicrohttpd gives each of its threads a share of the connections, and a
 * thread busy in a handler serves none of its other connections meanwhile:
 * a dashboard's small request kept alive on the same connection thread as
 * another's slow query, or as an agent's metric push, would wait for it. So
 * the handlers that read the database run on workers: the connection is
 * suspended, a worker runs the handler, and resuming the connection sends
 * the reply from its own thread. The users' routes (read, admin and
 * Signature V4 scope) and the agents' (a fleet's syncs and pushes) have
 * workers of their own, so that neither waits in line behind the other;
 * probes and the console's files stay on the connection threads.
 *
 * A handler may park its request (an agent's long-poll, a write that waits
 * for its operation, Prefer: wait). It parks holding neither thread: its
 * connection stays suspended as offload() left it, and the worker goes on
 * to other work. A wake-up resumes the connection, which offloads the
 * handler's next run to a worker like the first. A wake-up that comes while
 * the handler that parked is still on its worker finds on_worker set and
 * leaves the connection to that worker, which resumes it when the handler
 * returns: a handler never runs twice at once. */

static struct work_pool *pool_of(struct http_server *srv, const struct http_request *req)
{
    switch (req->route->scope) {
    case SCOPE_READ:
    case SCOPE_ADMIN:
    case SCOPE_SIGV4:
        return &srv->users;
    case SCOPE_AGENT:
    case SCOPE_BOOTSTRAP:
        return &srv->agents;
    default:
        return NULL;
    }
}

/* An agent's request that says it is urgent (RFC 9218's Priority header,
 * an urgency below the default 3: its agent reports an engine in trouble)
 * goes before the fleet's routine syncs and pushes; a user's never does. */
static bool urgent(const struct http_request *req)
{
    const char *value = req->route->scope == SCOPE_AGENT
                            ? MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Priority")
                            : NULL;

    for (const char *p = value; p != NULL && *p != '\0'; p++) {
        bool member_starts = p == value || p[-1] == ',' || p[-1] == ' ';
        if (member_starts && p[0] == 'u' && p[1] == '=' && p[2] >= '0' && p[2] <= '7' &&
            (p[3] == '\0' || p[3] == ',' || p[3] == ';' || p[3] == ' '))
            return p[2] < '3';
    }
    return false;
}

static bool offload(struct http_server *srv, struct http_request *req)
{
    struct work_pool *pool = pool_of(srv, req);

    if (pool == NULL)
        return false;
    bool first = urgent(req);
    pthread_mutex_lock(&srv->lock);
    if (pool->count == 0 || pool->stopping) {
        /* Shutting down: no worker may be left to run it (a fleet's agents
         * sync again at once on their kept-alive connections), and the
         * daemon must not stop with a connection suspended. */
        pthread_mutex_unlock(&srv->lock);
        return false;
    }
    req->queued_us = time_mono_us();
    if (first) {
        struct http_request **at =
            pool->last_urgent != NULL ? &pool->last_urgent->work_next : &pool->head;
        req->work_next = *at;
        *at = req;
        pool->last_urgent = req;
        if (req->work_next == NULL)
            pool->tail = req;
    } else {
        req->work_next = NULL;
        if (pool->tail != NULL)
            pool->tail->work_next = req;
        else
            pool->head = req;
        pool->tail = req;
    }
    MHD_suspend_connection(req->conn);
    pthread_cond_signal(&pool->ready);
    pthread_mutex_unlock(&srv->lock);
    return true;
}

static void *worker_main(void *arg)
{
    struct worker *me = arg;
    struct work_pool *pool = me->pool;
    struct http_server *srv = pool->srv;

    pthread_mutex_lock(&srv->lock);
    for (;;) {
        while (pool->head == NULL && !pool->stopping)
            pthread_cond_wait(&pool->ready, &srv->lock);
        struct http_request *req = pool->head;
        if (req == NULL)
            break; /* stopping, and nothing is left */
        pool->head = req->work_next;
        if (pool->head == NULL)
            pool->tail = NULL;
        if (pool->last_urgent == req)
            pool->last_urgent = NULL;
        req->on_worker = true;
        me->busy_since_us = req->route->heartbeat ? req->queued_us : 0;
        bool again = req->resumed;
        pthread_mutex_unlock(&srv->lock);
        if (again)
            call_handler(req);
        else
            run_handler(srv, req);
        pthread_mutex_lock(&srv->lock);
        me->busy_since_us = 0;
        req->on_worker = false;
        /* Replied, or parked and woken meanwhile: on_request sends the
         * reply or offloads the next run. Parked and waiting: the wake-up
         * resumes it. */
        if (!req->suspended)
            MHD_resume_connection(req->conn);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

static void start_workers(struct http_server *srv, struct work_pool *pool, int count)
{
    pool->srv = srv;
    pthread_cond_init(&pool->ready, NULL);
    pool->workers = xcalloc((size_t)count, sizeof(*pool->workers));
    for (; pool->count < count; pool->count++) {
        struct worker *w = &pool->workers[pool->count];
        w->pool = pool;
        pthread_create(&w->thread, NULL, worker_main, w);
    }
}

/* Run every queued handler, then end the workers. */
static void stop_workers(struct http_server *srv, struct work_pool *pool)
{
    pthread_mutex_lock(&srv->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->ready);
    pthread_mutex_unlock(&srv->lock);
    for (int i = 0; i < pool->count; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_mutex_lock(&srv->lock);
    free(pool->workers);
    pool->workers = NULL;
    pool->count = 0;
    pthread_mutex_unlock(&srv->lock);
    pthread_cond_destroy(&pool->ready);
}

int64_t http_agents_behind_us(struct http_server *srv)
{
    int64_t oldest = INT64_MAX;

    if (srv == NULL)
        return 0;
    pthread_mutex_lock(&srv->lock);
    /* The queue holds what is in flight at most (urgent ones first, so not
     * in arrival order): ten looks a second at it cost nothing. */
    for (const struct http_request *r = srv->agents.head; r != NULL; r = r->work_next) {
        if (r->route->heartbeat && r->queued_us < oldest)
            oldest = r->queued_us;
    }
    for (int i = 0; i < srv->agents.count; i++) {
        int64_t since = srv->agents.workers[i].busy_since_us;
        if (since != 0 && since < oldest)
            oldest = since;
    }
    pthread_mutex_unlock(&srv->lock);
    return oldest == INT64_MAX ? 0 : time_mono_us() - oldest;
}

/* Whether req goes into the audit log (migrations/0023_audit_log.sql): a
 * call by a caller cairnd knows that changes something or tries to, or
 * reads a cluster's AUTH token. Agents' syncs and pushes are their own
 * record; a refusal for the rate (429) is the request log's only. */
static bool audited(const struct http_request *req)
{
    if (req->route == NULL || req->method == NULL || !req->who.authenticated || req->status == 429)
        return false;
    switch (req->route->scope) {
    case SCOPE_BOOTSTRAP:
        return true;
    case SCOPE_SIGV4:
        return req->action[0] != '\0' && strncmp(req->action, "Describe", 8) != 0 &&
               strncmp(req->action, "List", 4) != 0;
    case SCOPE_READ:
    case SCOPE_ADMIN:
        return strcmp(req->method, "GET") != 0 ||
               strcmp(req->route->pattern, "/v1/clusters/{id}/auth") == 0;
    case SCOPE_NONE:
    case SCOPE_AGENT:
        break;
    }
    return false;
}

static enum db_status audit_fn(struct db_conn *conn, void *arg)
{
    return store_audit_add(conn, arg);
}

static void audit(const struct http_request *req)
{
    bool token = req->who.kind == AUTH_KIND_TOKEN, join = req->who.kind == AUTH_KIND_JOIN;
    struct store_audit_entry e = {
        .request_id = req->request_id,
        .caller_kind = token  ? "token"
                       : join ? "host_join_token"
                              : "agent_bootstrap",
        .token_id = token || join ? req->who.token_id : NULL,
        .token_scope = token ? auth_scope_name(req->who.scope) : NULL,
        .remote_address = req->remote_address,
        .method = req->method,
        .path = req->path != NULL ? req->path : req->target,
        .action = req->action[0] != '\0' ? req->action : NULL,
        .status = req->status,
    };
    enum db_status st = db_run(req->app->db, audit_fn, &e);
    if (st != DB_OK)
        log_warn("could not write the audit log", "request_id=%s db_status=%d", req->request_id,
                 (int)st);
}

static enum MHD_Result queue_reply(struct http_request *req)
{
    struct MHD_Response *resp =
        req->reply_fd >= 0
            ? MHD_create_response_from_fd64(req->reply_len, req->reply_fd)
            : MHD_create_response_from_buffer(req->reply_len, req->reply, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret;

    /* Written before the answer leaves: a caller holding its answer finds
     * its call in the log. */
    if (audited(req))
        audit(req);
    req->reply = NULL; /* MHD frees it now, or closes the file */
    req->reply_fd = -1;
    if (req->content_type != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, req->content_type);
    MHD_add_response_header(resp, "X-Request-Id", req->request_id);
    for (size_t i = 0; i < req->nheaders; i++)
        MHD_add_response_header(resp, req->headers[i].name, req->headers[i].value);
    ret = MHD_queue_response(req->conn, (unsigned)req->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static bool has_body(struct MHD_Connection *conn)
{
    const char *length =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *chunked =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return chunked != NULL || (length != NULL && strcmp(length, "0") != 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    (void)version;
    (void)url; /* decoded by libmicrohttpd up to the first NUL: cairnd decodes req->target */

    if (req->method == NULL) {
        req->method = method;
        set_request_id(req);
        /* A refusal is sent at once only when a body is on its way (that
         * spares reading it, but costs the connection) or the request is
         * malformed. Otherwise replying on the final call keeps the
         * connection alive. */
        if (!admit(req))
            return queue_reply(req);
        if (!preflight(srv, req) && has_body(conn))
            return queue_reply(req);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->replied || req->body_too_large)
            return MHD_YES;
        if (req->body_len + n > body_limit(srv, req)) {
            req->body_too_large = true;
            free(req->body);
            req->body = NULL;
            req->body_len = 0;
            return MHD_YES;
        }
        req->body = xrealloc(req->body, req->body_len + n + 1);
        memcpy(req->body + req->body_len, upload_data, n);
        req->body_len += n;
        req->body[req->body_len] = '\0';
        return MHD_YES;
    }
    if (!req->replied && offload(srv, req))
        return MHD_YES; /* called again when the worker is done with it */
    if (req->resumed && !req->replied)
        call_handler(req);
    else if (!req->replied)
        run_handler(srv, req);
    if (req->parked)
        return MHD_YES; /* the handler runs again when woken */
    return queue_reply(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    char path[512];
    (void)conn;

    if (req == NULL)
        return;
    *con_cls = NULL;
    int64_t took_us = time_mono_us() - req->started_us;
    requests_by_class[req->status >= 100 && req->status < 600 ? req->status / 100 : 0]++;
    request_us_total += (unsigned long long)(took_us > 0 ? took_us : 0);
    char method[64];
    /* A request libmicrohttpd refused itself (a malformed Content-Length,
     * headers past its memory) never reached on_request: no method, no
     * status of ours. */
    log_info("request",
             "request_id=%s method=%s path=%s status=%d duration_ms=%.2f bytes=%zu token=%s%s",
             req->request_id[0] != '\0' ? req->request_id : "-",
             log_quote(method, sizeof(method), req->method != NULL ? req->method : "-"),
             log_quote(path, sizeof(path), req->path != NULL ? req->path : req->target),
             req->status, (double)took_us / 1000.0, req->reply_len,
             req->who.authenticated ? req->who.token_id : "-",
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=true");
    request_free(req);
    pthread_mutex_lock(&srv->lock);
    if (--srv->active == 0)
        pthread_cond_broadcast(&srv->idle);
    pthread_mutex_unlock(&srv->lock);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512], quoted[600];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    log_warn("http server", "detail=%s", log_quote(quoted, sizeof(quoted), msg));
}

/* The request line has arrived: the request starts here, with the target
 * exactly as sent (libmicrohttpd has not decoded it yet). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    return request_new(cls, conn, uri);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_server *srv = cls;
    (void)conn;
    (void)socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        srv->connections++;
    else
        srv->connections--;
}

/* ---- server ------------------------------------------------------------ */

struct http_server *http_start(struct app *app, const struct route *table, size_t n, char *err,
                               size_t errsize)
{
    struct addrinfo *ai =
        listen_addr_resolve(app->cfg.listen_host, app->cfg.listen_port, "listen", err, errsize);
    if (ai == NULL)
        return NULL;
    struct http_server *srv = xcalloc(1, sizeof(*srv));
    srv->app = app;
    srv->table = table;
    srv->nroutes = n;
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->idle, NULL);

    pthread_cond_init(&srv->park_changed, NULL);
    bool tls = app->tls_cert_pem != NULL && app->tls_key_pem != NULL;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (tls ? MHD_USE_TLS : 0);
    /* HTTPS (tls.h): libmicrohttpd's TLS, with the certificate in memory. */
    struct MHD_OptionItem https[] = {
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, app->tls_cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, app->tls_key_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)app->cfg.listen_port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR,
        ai->ai_addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)app->cfg.http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(app->cfg.max_connections + HTTP_RESERVED_CONNECTIONS),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)app->cfg.max_connections_per_address,
        MHD_OPTION_ARRAY, https, MHD_OPTION_END);
    int saved = errno;
    freeaddrinfo(ai);
    if (srv->daemon == NULL) {
        snprintf(err, errsize, "could not listen on %s:%d: %s", app->cfg.listen_host,
                 app->cfg.listen_port, strerror(saved));
        pthread_mutex_destroy(&srv->lock);
        pthread_cond_destroy(&srv->idle);
        pthread_cond_destroy(&srv->park_changed);
        free(srv);
        return NULL;
    }
    pthread_create(&srv->park_timer, NULL, park_timer_main, srv);
    start_workers(srv, &srv->users, app->cfg.http_threads);
    start_workers(srv, &srv->agents, app->cfg.http_threads);
    return srv;
}

void http_stop(struct http_server *srv, int timeout_s)
{
    struct timespec deadline;
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);

    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    /* Long-polls answer now rather than hold the shutdown up. */
    pthread_mutex_lock(&srv->lock);
    srv->stopping = true;
    resume_where(srv, key_matches, NULL);
    pthread_cond_signal(&srv->park_changed);
    pthread_mutex_unlock(&srv->lock);
    pthread_join(srv->park_timer, NULL);

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_s;
    pthread_mutex_lock(&srv->lock);
    while (srv->active > 0) {
        if (pthread_cond_timedwait(&srv->idle, &srv->lock, &deadline) == ETIMEDOUT) {
            log_warn("shutdown deadline passed with requests in flight", "active=%d", srv->active);
            break;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    /* A worker still in a handler resumes its connection when it is done;
     * the daemon must outlive that. */
    stop_workers(srv, &srv->users);
    stop_workers(srv, &srv->agents);
    MHD_stop_daemon(srv->daemon);
    pthread_mutex_destroy(&srv->lock);
    pthread_cond_destroy(&srv->idle);
    pthread_cond_destroy(&srv->park_changed);
    free(srv);
}
