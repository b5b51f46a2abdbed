/* route.c -- path pattern matching for the route table. */
#include "route.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void route_params_clear(struct route_params *params)
{
    for (int i = 0; i < params->count; i++)
        free(params->values[i]);
    params->count = 0;
}

/* Capture value[0..len) as the parameter named name[0..name_len). Returns
 * false when params is full. */
static bool capture(struct route_params *params, const char *name, size_t name_len,
                    const char *value, size_t len)
{
    if (params->count == ROUTE_MAX_PARAMS)
        return false;
    params->names[params->count] = name;
    params->name_lens[params->count] = name_len;
    params->values[params->count] = xstrndup(value, len);
    params->count++;
    return true;
}

bool route_match(const char *pattern, const char *path, struct route_params *params)
{
    const char *p = pattern, *s = path;

    route_params_clear(params);
    while (*p != '\0') {
        if (strcmp(p, "*") == 0) {
            if (!capture(params, p, 1, s, strlen(s)))
                break;
            return true;
        }
        if (*s == '\0')
            break;
        if (*p == '{') {
            const char *close = strchr(p, '}');
            size_t len = strcspn(s, "/");
            if (close == NULL || len == 0 ||
                !capture(params, p + 1, (size_t)(close - p - 1), s, len))
                break;
            p = close + 1;
            s += len;
        } else if (*p++ != *s++) {
            p = "x"; /* mismatch */
            break;
        }
    }
    if (*p == '\0' && *s == '\0')
        return true;
    route_params_clear(params);
    return false;
}

static bool has_tail(const struct route *route)
{
    size_t n = strlen(route->pattern);
    return n > 0 && route->pattern[n - 1] == '*';
}

/* Whether path is in the REST API's namespace: "/v1" and below. */
static bool in_api(const char *path)
{
    return strncmp(path, "/v1", 3) == 0 && (path[3] == '\0' || path[3] == '/');
}

/* Append method to the comma-separated list in allow[0..*used), as far as
 * it fits. */
static void allow_method(char *allow, size_t allow_size, size_t *used, const char *method)
{
    size_t mlen = strlen(method);

    if (*used + mlen + 3 >= allow_size)
        return;
    if (*used > 0) {
        memcpy(allow + *used, ", ", 2);
        *used += 2;
    }
    memcpy(allow + *used, method, mlen + 1);
    *used += mlen;
}

const struct route *route_find(const struct route *table, size_t n, const char *method,
                               const char *path, struct route_params *params, char *allow,
                               size_t allow_size)
{
    size_t used = 0;
    bool matched = false;

    if (allow_size > 0)
        allow[0] = '\0';
    /* The rows without a tail wildcard, then, if none matched, those with one. */
    for (int pass = 0; pass < 2 && !matched; pass++) {
        bool tails = pass == 1;
        if (tails && in_api(path))
            break;
        for (size_t i = 0; i < n; i++) {
            if (has_tail(&table[i]) != tails || !route_match(table[i].pattern, path, params))
                continue;
            if (strcmp(table[i].method, method) == 0)
                return &table[i];
            matched = true;
            allow_method(allow, allow_size, &used, table[i].method);
        }
    }
    return NULL;
}

const char *route_param(const struct route_params *params, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < params->count; i++) {
        if (params->name_lens[i] == len && memcmp(params->names[i], name, len) == 0)
            return params->values[i];
    }
    return NULL;
}

const char *route_scope_name(enum route_scope scope)
{
    switch (scope) {
    case SCOPE_NONE:
        return "none";
    case SCOPE_READ:
        return "read";
    case SCOPE_ADMIN:
        return "admin";
    case SCOPE_SIGV4:
        return "sigv4";
    case SCOPE_AGENT:
        return "agent";
    case SCOPE_BOOTSTRAP:
        return "bootstrap";
    }
    return "unknown";
}
