/* http.h -- cairnd's HTTP server on libmicrohttpd, and what a request
 * handler sees.
 *
 * The server owns the request lifecycle: it assigns the request id, reads the
 * body up to the cap, matches the route, authenticates, rejects unknown query
 * parameters (but on the console's routes, route.h), expands a gzip body
 * (Content-Encoding: gzip, within the same cap), parses and validates a JSON
 * body against the route's spec, then calls the handler. A handler sends
 * exactly one reply with one of the http_reply_* functions, then returns --
 * or parks the request with http_suspend() to answer later (long-polls); the
 * handler then runs again, with resumed set, when the request is woken or
 * its deadline passes. */
#ifndef CAIRN_HTTP_H
#define CAIRN_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "auth.h"
#include "db.h"
#include "problem.h"
#include "route.h"

/* Connections beyond --max-connections that only agents and health probes
 * may use: a flood of API clients must not lock out the agents reporting
 * their nodes or the probe deciding whether cairnd is alive. Past both,
 * new connections are closed at once; past --max-connections-per-address
 * from one address too. */
#define HTTP_RESERVED_CONNECTIONS 64

struct MHD_Connection;

struct http_server;

/* A header of the reply: its name is a string that outlives the request
 * (a literal), its value a copy the request owns. */
struct http_header {
    const char *name;
    char *value;
};

struct http_request {
    struct app *app;
    struct http_server *server;
    struct MHD_Connection *conn;
    const char *method; /* NULL until the request's headers have arrived */
    char *target;       /* the request target as sent: path and query, still encoded */
    char *path;         /* the target's path decoded (http_check.h); NULL until checked */
    char request_id[129];
    char remote_address[64]; /* the client's IP address, for the audit log */
    char action[64];         /* the ElastiCache action it names, once read: audit log */
    int64_t started_us;

    const struct route *route;
    struct route_params params;
    struct auth_identity who; /* the caller, for routes with a scope */

    char *body; /* the body as sent, then as expanded when gzipped; NUL-terminated */
    size_t body_len;
    bool body_too_large;
    bool gzipped; /* sent with Content-Encoding: gzip */
    json_t *json; /* the parsed body, for routes that declare one */

    /* Long-polls: see http_suspend(). */
    bool resumed;      /* the handler runs again after a suspension */
    bool suspended;    /* parked now (under the server's lock) */
    bool parked;       /* the handler parked it in this call (handler thread only) */
    char park_key[64]; /* the key it was last parked under: a resumed handler may read it */
    int64_t park_deadline_us;
    struct http_request *park_next;

    /* Handlers of the user routes run on a worker (see on_request), parked
     * or not: each run, the first and every one after a wake-up. */
    struct http_request *work_next;
    bool on_worker;    /* a worker runs its handler now (under the server's lock) */
    int64_t queued_us; /* when it was last queued for a worker (time_mono_us) */

    /* The reply, filled by http_reply_*. */
    bool replied;
    int status;
    char *reply;
    int reply_fd;     /* a file to send reply_len bytes of instead of reply; -1 when none */
    size_t reply_len; /* the body's length */
    const char *content_type;
    struct http_header *headers; /* added by http_add_header(), in order */
    size_t nheaders, headers_room;
};

/* Start serving app->cfg.listen_host:listen_port with table[0..n) on a pool
 * of app->cfg.http_threads threads. Returns NULL and writes a message to err
 * when the address cannot be bound. */
struct http_server *http_start(struct app *app, const struct route *table, size_t n, char *err,
                               size_t errsize);

/* Stop accepting connections, let in-flight requests finish (up to
 * timeout_s seconds), then stop and free the server. */
void http_stop(struct http_server *server, int timeout_s);

/* Reply with a JSON document; takes ownership of body. */
void http_reply_json(struct http_request *req, int status, json_t *body);

/* Reply with JSON text already encoded; takes ownership of text. */
void http_reply_json_text(struct http_request *req, int status, char *text);

/* Reply with text of content_type; takes ownership of text. */
void http_reply_text(struct http_request *req, int status, char *text, const char *content_type);

/* Reply with the first size bytes of the file open on fd, of content_type
 * (a string that outlives the request), streamed from the descriptor
 * rather than read into memory; takes ownership of fd, which is closed
 * once the reply is sent. A HEAD request gets the headers alone. */
void http_reply_file(struct http_request *req, int status, int fd, uint64_t size,
                     const char *content_type);

/* Requests answered since start, by status class (index 2: 2xx ... 5: 5xx;
 * 0: none), and the seconds spent on them. */
struct http_stats {
    unsigned long long requests_by_class[6];
    double request_seconds_total;
};
void http_stats_read(struct http_stats *out);

/* Reply with no body (204, for instance). */
void http_reply_empty(struct http_request *req, int status);

/* Reply with a problem document for code. errors (may be NULL) is an array of
 * {field, message}, owned by the call. detail is printf-style. */
void http_reply_problem(struct http_request *req, enum problem_code code, json_t *errors,
                        const char *detail_fmt, ...) __attribute__((format(printf, 4, 5)));

/* As http_reply_problem(), with the members of members (an object, owned
 * by the call; may be NULL) added to the document: extension members such
 * as "operation". */
void http_reply_problem_with(struct http_request *req, enum problem_code code, json_t *members,
                             const char *detail_fmt, ...) __attribute__((format(printf, 4, 5)));

/* Reply with what p says (problem.h), and clear it. An INTERNAL_ERROR
 * without a detail names the request, whose log lines say more. */
void http_reply_error(struct http_request *req, struct problem *p);

/* Reply for a database failure: 503 DATABASE_UNAVAILABLE or 500. */
void http_reply_db_error(struct http_request *req, enum db_status status);

/* Add a header to the reply; name must outlive the request (a literal),
 * value is copied. */
void http_add_header(struct http_request *req, const char *name, const char *value);

/* A counter that moves on every http_wake(); read it before checking the
 * condition a long-poll waits for, and hand it to http_suspend(). */
uint64_t http_wake_epoch(struct http_request *req);

/* Park req until http_wake() names key (or all) or deadline_us (monotonic,
 * see time_mono_us) passes; the handler then runs again with req->resumed
 * set and must reply or park again. Returns false without parking when a
 * wake-up came after epoch was read or the server is stopping: the caller
 * checks its condition again (and replies if http_stopping()). */
bool http_suspend(struct http_request *req, const char *key, uint64_t epoch, int64_t deadline_us);

/* Whether the server is shutting down: long-polls answer at once. */
bool http_stopping(struct http_request *req);

/* Wake the parked requests waiting on key, or all of them when key is NULL.
 * Safe from any thread. */
void http_wake(struct http_server *server, const char *key);

/* How long the oldest heartbeat (an agent's sync: struct route's
 * heartbeat) waiting for a worker, or being run by one, has been at it (0:
 * none; any thread; NULL: 0): how far behind its agents cairnd is. A
 * parked long-poll does not count, nor a metric push however large. */
int64_t http_agents_behind_us(struct http_server *server);

/* A query parameter's value, or NULL when absent. */
const char *http_query(struct http_request *req, const char *name);

/* A request header's value (name matched without regard to case), or NULL
 * when absent. */
const char *http_header(struct http_request *req, const char *name);

/* The first wait preference (RFC 7240) of the request's Prefer headers, in
 * seconds (prefer.h): false when there is none. A Prefer header that is
 * not a valid Prefer value is ignored, as is a wait that is not
 * delta-seconds. */
bool http_prefer_wait(struct http_request *req, long long *seconds);

/* A path parameter's value (never NULL for a name in the route's pattern). */
const char *http_param(struct http_request *req, const char *name);

#endif
