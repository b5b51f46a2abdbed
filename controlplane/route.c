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

bool route_match(const char *pattern, const char *path, struct route_params *params)
{
    const char *p = pattern, *s = path;

    route_params_clear(params);
    while (*p != '\0' && *s != '\0') {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            size_t len = strcspn(s, "/");
            if (close == NULL || len == 0 || params->count == ROUTE_MAX_PARAMS)
                break;
            params->names[params->count] = p + 1;
            params->name_lens[params->count] = (size_t)(close - p - 1);
            params->values[params->count] = xstrndup(s, len);
            params->count++;
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

const struct route *route_find(const struct route *table, size_t n, const char *method,
                               const char *path, struct route_params *params, char *allow,
                               size_t allow_size)
{
    size_t used = 0;

    if (allow_size > 0)
        allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!route_match(table[i].pattern, path, params))
            continue;
        if (strcmp(table[i].method, method) == 0)
            return &table[i];
        size_t mlen = strlen(table[i].method);
        if (used + mlen + 3 < allow_size) {
            if (used > 0) {
                memcpy(allow + used, ", ", 2);
                used += 2;
            }
            memcpy(allow + used, table[i].method, mlen + 1);
            used += mlen;
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
    case SCOPE_AGENT:
        return "agent";
    case SCOPE_BOOTSTRAP:
        return "bootstrap";
    }
    return "unknown";
}
