/* page.c -- page sizes, page tokens and list envelopes. */
#include "page.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "timeutil.h"
#include "xalloc.h"

#define PAGE_TOKEN_VERSION "p1"

bool page_size_parse(const char *text, int *size, char *msg, size_t msgsize)
{
    char *end;
    long v;

    if (text == NULL) {
        *size = PAGE_SIZE_DEFAULT;
        return true;
    }
    errno = 0;
    v = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno != 0 || v < 1 || v > PAGE_SIZE_MAX ||
        !isdigit((unsigned char)text[0])) {
        snprintf(msg, msgsize, "must be an integer from 1 to %d", PAGE_SIZE_MAX);
        return false;
    }
    *size = (int)v;
    return true;
}

void page_token_encode(const char *list, const char *key, char *out)
{
    char plain[PAGE_KEY_MAX + 32];
    int n = snprintf(plain, sizeof(plain), "%s:%s:%s", PAGE_TOKEN_VERSION, list, key);
    if (n < 0 || (size_t)n >= sizeof(plain))
        n = (int)sizeof(plain) - 1;
    crypto_b64url(plain, (size_t)n, out);
}

bool page_is_uuid(const char *s)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return s[36] == '\0';
}

static bool is_hex12(const char *s)
{
    for (int i = 0; i < 12; i++) {
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    }
    return s[12] == '\0';
}

static bool key_has_shape(char *key, enum page_key shape)
{
    char *bar;
    bool ok;

    if (shape == PAGE_KEY_INT) {
        if (key[0] == '\0' || strlen(key) > 18)
            return false;
        for (const char *p = key; *p; p++) {
            if (!isdigit((unsigned char)*p))
                return false;
        }
        return true;
    }
    if (shape == PAGE_KEY_NAME) {
        size_t n = strlen(key);
        return n > 0 && n <= 63 &&
               strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
                   n;
    }
    bar = strchr(key, '|');
    if (bar == NULL)
        return false;
    *bar = '\0';
    ok = time_is_rfc3339(key) &&
         (shape == PAGE_KEY_TIME_UUID ? page_is_uuid(bar + 1) : is_hex12(bar + 1));
    *bar = '|';
    return ok;
}

bool page_token_decode(const char *token, const char *list, enum page_key shape, char *key)
{
    unsigned char plain[PAGE_TOKEN_MAX];
    size_t len = strlen(token);
    char prefix[64];

    if (len == 0 || len >= PAGE_TOKEN_MAX)
        return false;
    long n = crypto_b64url_decode(token, len, plain);
    if (n <= 0)
        return false;
    plain[n] = '\0';
    if (memchr(plain, '\0', (size_t)n) != NULL)
        return false;
    int plen = snprintf(prefix, sizeof(prefix), "%s:%s:", PAGE_TOKEN_VERSION, list);
    if (plen < 0 || (size_t)plen >= sizeof(prefix) || strncmp((char *)plain, prefix, (size_t)plen))
        return false;
    if (strlen((char *)plain + plen) >= PAGE_KEY_MAX)
        return false;
    strcpy(key, (char *)plain + plen);
    return key_has_shape(key, shape);
}

char *page_envelope(const char *name, char *items, const char *list, const char *next_key)
{
    char token[PAGE_TOKEN_MAX];
    char *out;

    /* Names and base64url tokens need no JSON escaping. */
    if (next_key == NULL) {
        out = xasprintf("{\"%s\":%s}", name, items);
    } else {
        page_token_encode(list, next_key, token);
        out = xasprintf("{\"%s\":%s,\"next_page_token\":\"%s\"}", name, items, token);
    }
    free(items);
    return out;
}
