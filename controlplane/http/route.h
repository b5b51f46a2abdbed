/* route.h -- the route table's shape and path matching.
 *
 * Every route cairnd serves is one row of a static table (routes.c): method,
 * path pattern with {param} segments, the scope a token needs, the query
 * parameters it accepts and the declared spec of its body. A pattern may
 * end in a tail wildcard, "*": the web console's files are served that way,
 * at whatever paths the API leaves free. Matching is pure string work, kept
 * here so it can be tested alone. */
#ifndef CAIRN_ROUTE_H
#define CAIRN_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "jspec.h"

#define ROUTE_MAX_PARAMS    4
#define ROUTE_MAX_PARAM_LEN 256

struct http_request;

/* Who may call a route. */
enum route_scope {
    SCOPE_NONE,      /* no token: health probes */
    SCOPE_READ,      /* a read or an admin token */
    SCOPE_ADMIN,     /* an admin token */
    SCOPE_SIGV4,     /* an API token's AWS Signature Version 4, checked by the handler (it
                        signs the body; the action decides between read and admin) */
    SCOPE_AGENT,     /* an agent's credential */
    SCOPE_BOOTSTRAP, /* the agents' bootstrap token */
};

struct route {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/v1/node-types/{name}" */
    enum route_scope scope;
    void (*handler)(struct http_request *req);
    const char *const *query;       /* accepted query parameters, NULL-terminated, or NULL */
    const struct jspec_field *body; /* the body's spec, or NULL when the route takes none */
    size_t max_body;                /* bytes; 0: --max-body-bytes (bulk uploads may take more) */
    bool console;       /* the web console's files (web.h), not the REST API: left out of
                           api/openapi.yaml, never served from the connections kept for agents and
                           probes, and its query string is the page's, not checked */
    bool body_optional; /* the body may be left out: it reads as {} */
    bool heartbeat;     /* an agent's heartbeat: how long one waits to be heard is how far behind
                       its agents cairnd is (http_agents_behind_us()) */
};

/* Path parameters captured by a match, in pattern order. Start from a
 * zeroed struct; each match frees what the previous one captured, and
 * route_params_clear() frees the last. */
struct route_params {
    int count;
    const char *names[ROUTE_MAX_PARAMS]; /* point into the pattern's text; not terminated */
    size_t name_lens[ROUTE_MAX_PARAMS];
    char *values[ROUTE_MAX_PARAMS]; /* owned copies */
};

/* Match path against pattern segment by segment; a {name} segment matches
 * one non-empty segment, of any length, and captures it. A '*' ending the
 * pattern matches the rest of the path, empty or of any number of segments,
 * and captures it as the parameter named "*". Returns false on mismatch
 * (capturing nothing). */
bool route_match(const char *pattern, const char *path, struct route_params *params);

/* Free the captured values and reset params to no parameters. */
void route_params_clear(struct route_params *params);

/* Find the route for method and path in table[0..n). Rows whose pattern
 * ends in a tail wildcard give way to all others: they are tried only when
 * no other row matches the path, whatever its method, and never for a path
 * in the API's namespace, "/v1" and below (there a path no row names is
 * unknown to the API). When the path matches but no route has that method,
 * returns NULL and writes the methods that do match, comma-separated, to
 * allow (empty when the path matches nothing). */
const struct route *route_find(const struct route *table, size_t n, const char *method,
                               const char *path, struct route_params *params, char *allow,
                               size_t allow_size);

/* The value of path parameter name, or NULL. */
const char *route_param(const struct route_params *params, const char *name);

/* The scope's name as the API documents it: "none", "read", "admin",
 * "sigv4", "agent" or "bootstrap". */
const char *route_scope_name(enum route_scope scope);

#endif
