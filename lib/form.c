/* form.c -- application/x-www-form-urlencoded bodies (form.h). */
#include "form.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "utf8.h"
#include "xalloc.h"

/* Decode n bytes of s ("+" a space, %XX a byte) into a new string; NULL
 * with err filled on a bad escape, a NUL or bytes that are not UTF-8. */
static char *decode(const char *s, size_t n, const char *what, char *err, size_t errsize)
{
    char *out = xmalloc(n + 1);
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[k++] = ' ';
        } else if (s[i] != '%') {
            out[k++] = s[i];
        } else {
            int hi = i + 2 < n ? crypto_hex_digit(s[i + 1]) : -1,
                lo = hi >= 0 ? crypto_hex_digit(s[i + 2]) : -1;
            if (lo < 0) {
                snprintf(err, errsize, "a %s has a bad %%-escape", what);
                free(out);
                return NULL;
            }
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        }
        if (out[k - 1] == '\0') {
            snprintf(err, errsize, "a %s holds a NUL byte", what);
            free(out);
            return NULL;
        }
    }
    out[k] = '\0';
    if (!utf8_valid(out, k)) {
        snprintf(err, errsize, "a %s is not UTF-8", what);
        free(out);
        return NULL;
    }
    return out;
}

bool form_parse(const char *body, size_t len, struct form *f, char *err, size_t errsize)
{
    const char *end = body + len;
    size_t cap = 0;

    memset(f, 0, sizeof(*f));
    for (const char *s = body; s < end;) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        size_t n = (size_t)((amp != NULL ? amp : end) - s);
        if (n > 0) {
            if (f->count == FORM_MAX_FIELDS) {
                snprintf(err, errsize, "the body has more than %d fields", FORM_MAX_FIELDS);
                return false;
            }
            const char *eq = memchr(s, '=', n);
            size_t nn = eq != NULL ? (size_t)(eq - s) : n;
            char *name = decode(s, nn, "name", err, errsize);
            char *value = name == NULL ? NULL
                          : eq != NULL ? decode(eq + 1, n - nn - 1, "value", err, errsize)
                                       : xstrdup("");
            if (name != NULL && value != NULL && (name[0] == '\0' || form_get(f, name) != NULL)) {
                snprintf(err, errsize,
                         name[0] == '\0' ? "a field has no name" : "a field's name is repeated");
                free(value);
                value = NULL;
            }
            if (value == NULL) {
                free(name);
                return false;
            }
            if (f->count == cap)
                f->fields = xrealloc(f->fields, (cap = cap ? cap * 2 : 16) * sizeof(*f->fields));
            f->fields[f->count++] = (struct form_field){name, value};
        }
        s += n + 1;
    }
    return true;
}

const char *form_get(const struct form *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->fields[i].name, name) == 0)
            return f->fields[i].value;
    return NULL;
}

const char *form_item(const struct form *f, const char *prefix, size_t n, const char *suffix)
{
    char name[256];
    int w = suffix != NULL ? snprintf(name, sizeof(name), "%s.%zu.%s", prefix, n, suffix)
                           : snprintf(name, sizeof(name), "%s.%zu", prefix, n);
    return w > 0 && (size_t)w < sizeof(name) ? form_get(f, name) : NULL;
}

size_t form_count(const struct form *f, const char *prefix, const char *suffix)
{
    size_t n = 0;
    while (n < FORM_MAX_FIELDS && form_item(f, prefix, n + 1, suffix) != NULL)
        n++;
    return n;
}

void form_free(struct form *f)
{
    for (size_t i = 0; i < f->count; i++) {
        free(f->fields[i].name);
        free(f->fields[i].value);
    }
    free(f->fields);
    memset(f, 0, sizeof(*f));
}
