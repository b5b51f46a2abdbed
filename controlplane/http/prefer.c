/* prefer.c -- the Prefer header's grammar (RFC 7240 §2, with RFC 9110's
 * token, quoted-string and whitespace) and its wait preference. */
#include "prefer.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 §5.6.2: tchar. */
static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A token at p: its end, or NULL when there is none. */
static const char *token_end(const char *p)
{
    const char *start = p;
    while (is_tchar(*p))
        p++;
    return p > start ? p : NULL;
}

/* A quoted-string at p (which is '"'): its end, past the closing quote, or
 * NULL when it is not one. */
static const char *quoted_end(const char *p)
{
    for (p++; *p != '"'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\\') {
            c = (unsigned char)*++p;
            if (c != '\t' && (c < ' ' || c == 0x7f))
                return NULL; /* quoted-pair: HTAB, SP, VCHAR or obs-text */
        } else if (c != '\t' && (c < ' ' || c == 0x7f)) {
            return NULL; /* qdtext: no controls; the end of the string is one */
        }
    }
    return p + 1;
}

/* One name with an optional "=" value, at p. Returns the end, or NULL when
 * it is malformed; the value's text is [*value, *value_end), both NULL when
 * there is none. */
static const char *pair(const char *p, const char **name_end, const char **value,
                        const char **value_end)
{
    if ((*name_end = token_end(p)) == NULL)
        return NULL;
    *value = *value_end = NULL;
    const char *q = skip_ows(*name_end);
    if (*q != '=')
        return *name_end;
    *value = skip_ows(q + 1);
    *value_end = **value == '"' ? quoted_end(*value) : token_end(*value);
    return *value_end;
}

/* Whether the n bytes at p are delta-seconds; their value, saturated, in
 * *seconds. */
static bool parse_seconds(const char *p, size_t n, long long *seconds)
{
    long long v = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v < PREFER_SECONDS_MAX ? v * 10 + (p[i] - '0') : v;
    }
    *seconds = v < PREFER_SECONDS_MAX ? v : PREFER_SECONDS_MAX;
    return true;
}

bool prefer_seconds(const char *text, long long *seconds)
{
    return parse_seconds(text, strlen(text), seconds);
}

enum prefer_result prefer_wait(const char *value, long long *seconds)
{
    bool seen = false, found = false;
    long long wait = 0;
    const char *p = value;

    for (;;) {
        p = skip_ows(p);
        if (*p == ',') { /* empty list elements are allowed (RFC 9110 §5.6.1.2) */
            p++;
            continue;
        }
        if (*p == '\0')
            break;
        const char *name = p, *name_end, *v, *v_end;
        if ((p = pair(p, &name_end, &v, &v_end)) == NULL)
            return PREFER_INVALID;
        for (p = skip_ows(p); *p == ';'; p = skip_ows(p)) {
            const char *pname_end, *pv, *pv_end;
            p = skip_ows(p + 1);
            if (*p == ';' || *p == ',' || *p == '\0')
                continue; /* an empty parameter */
            if ((p = pair(p, &pname_end, &pv, &pv_end)) == NULL)
                return PREFER_INVALID;
        }
        if (*p != ',' && *p != '\0')
            return PREFER_INVALID;
        if (!seen && name_end - name == 4 && strncasecmp(name, "wait", 4) == 0) {
            seen = true;
            found = v != NULL && parse_seconds(v, (size_t)(v_end - v), &wait);
        }
    }
    if (!found)
        return PREFER_NO_WAIT;
    *seconds = wait;
    return PREFER_WAIT;
}
