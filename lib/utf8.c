/* utf8.c -- checking and scrubbing UTF-8. */
#include "utf8.h"

#include <string.h>

/* U+FFFD REPLACEMENT CHARACTER */
static const char replacement[] = "\xef\xbf\xbd";

size_t utf8_sequence(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range (RFC 3629 section 4) */

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* past U+10FFFF */
    } else {
        return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5 and up */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    }
    return len;
}

bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        size_t len = utf8_sequence(p + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

char *utf8_scrub(const char *s, char *out, size_t size)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, o = 0;

    while (i < n) {
        size_t len = utf8_sequence(p + i, n - i);
        const char *from = len > 0 ? s + i : replacement;
        size_t take = len > 0 ? len : sizeof(replacement) - 1;
        if (o + take >= size)
            break;
        memcpy(out + o, from, take);
        o += take;
        i += len > 0 ? len : 1;
    }
    out[o] = '\0';
    return out;
}
