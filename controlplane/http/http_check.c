/* http_check.c -- checks on the request line and headers before routing. */
#include "http_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crypto.h"
#include "utf8.h"
#include "xalloc.h"

/* RFC 9110 section 5.6.2: tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool is_token(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        if (n == max || !is_tchar((unsigned char)s[n]))
            return false;
    }
    return n > 0;
}

bool http_check_method(const char *method)
{
    return is_token(method, HTTP_CHECK_METHOD_MAX);
}

/* What a part of the target may decode to. */
enum part { PART_PATH, PART_QUERY };

/* Decode s[0..n) into out (room for n + 1 bytes); false with err set when
 * it breaks a rule of http_check_target(). */
static bool decode(const char *s, size_t n, enum part part, char *out, char *err, size_t errsize)
{
    const char *what = part == PART_PATH ? "the path" : "the query";
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e) {
            snprintf(err, errsize, "%s holds a byte (0x%02x) that must be percent-encoded", what,
                     c);
            return false;
        }
        if (c == '%') {
            if (i + 2 >= n || !crypto_unhex(s + i + 1, 1, &c)) {
                snprintf(err, errsize, "%s holds a '%%' that is not followed by two hex digits",
                         what);
                return false;
            }
            i += 2;
            if (c < 0x20 || c == 0x7f) {
                snprintf(err, errsize, "%s holds a control character (%%%02X)", what, c);
                return false;
            }
            if (c == '/' && part == PART_PATH) {
                snprintf(err, errsize, "%s holds an encoded '/' (%%2F)", what);
                return false;
            }
        } else if (c == '+' && part == PART_QUERY) {
            c = ' ';
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    if (!utf8_valid(out, o)) {
        snprintf(err, errsize, "%s is not UTF-8 once decoded", what);
        return false;
    }
    return true;
}

/* Every name and value of the query s[0..n). */
static bool check_query(const char *s, size_t n, char *err, size_t errsize)
{
    char *scratch = xmalloc(n + 1);
    bool ok = true;

    for (size_t start = 0; ok && start <= n;) {
        const char *amp = memchr(s + start, '&', n - start);
        size_t end = amp != NULL ? (size_t)(amp - s) : n;
        const char *eq = memchr(s + start, '=', end - start);
        size_t name_end = eq != NULL ? (size_t)(eq - s) : end;
        ok = decode(s + start, name_end - start, PART_QUERY, scratch, err, errsize) &&
             (eq == NULL || decode(eq + 1, end - name_end - 1, PART_QUERY, scratch, err, errsize));
        start = end + 1;
    }
    free(scratch);
    return ok;
}

bool http_check_target(const char *target, char **path, char *err, size_t errsize)
{
    size_t n = strlen(target);
    const char *q = memchr(target, '?', n);
    size_t path_len = q != NULL ? (size_t)(q - target) : n;

    *path = NULL;
    if (target[0] != '/') {
        snprintf(err, errsize, "the request target must be a path starting with '/'");
        return false;
    }
    char *decoded = xmalloc(path_len + 1);
    if (!decode(target, path_len, PART_PATH, decoded, err, errsize) ||
        (q != NULL && !check_query(q + 1, n - path_len - 1, err, errsize))) {
        free(decoded);
        return false;
    }
    *path = decoded;
    return true;
}

bool http_check_header(const char *name, const char *value)
{
    if (!is_token(name, (size_t)-1))
        return false;
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    }
    return true;
}

/* Whether s is a decimal number (of any size: one too large for any
 * limit is still a length, refused later as too large). */
static bool is_length(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n > 0 && s[n] == '\0';
}

/* s without its leading zeros ("0" stays "0"). */
static const char *significant(const char *s)
{
    while (s[0] == '0' && s[1] != '\0')
        s++;
    return s;
}

int http_check_framing(const char *const *lengths, size_t nlengths, const char *const *codings,
                       size_t ncodings, char *err, size_t errsize)
{
    if (ncodings > 0) {
        if (nlengths > 0) {
            snprintf(err, errsize, "send Content-Length or Transfer-Encoding, not both");
            return 400;
        }
        if (ncodings > 1 || strcasecmp(codings[0], "chunked") != 0) {
            snprintf(err, errsize, "the only transfer coding cairnd reads is chunked");
            return 501;
        }
        return 0;
    }
    for (size_t i = 0; i < nlengths; i++) {
        if (!is_length(lengths[i])) {
            snprintf(err, errsize, "Content-Length must be a decimal number of bytes");
            return 400;
        }
        if (i > 0 && strcmp(significant(lengths[i]), significant(lengths[0])) != 0) {
            snprintf(err, errsize, "the request has Content-Length headers that differ");
            return 400;
        }
    }
    return 0;
}

/* application/json, or application/merge-patch+json (RFC 7396), with or
 * without parameters such as charset. */
bool http_check_json_type(const char *type)
{
    static const char *const accepted[] = {"application/json", "application/merge-patch+json"};
    for (size_t i = 0; type != NULL && i < sizeof(accepted) / sizeof(accepted[0]); i++) {
        size_t n = strlen(accepted[i]);
        if (strncasecmp(type, accepted[i], n) == 0 &&
            (type[n] == '\0' || type[n] == ';' || type[n] == ' '))
            return true;
    }
    return false;
}

/* Whether a body sent with Content-Encoding coding (NULL: none) can be
 * read, and if so whether it is gzip. */
bool http_check_coding(const char *coding, bool *gzip)
{
    static const struct {
        const char *name;
        bool gzip;
    } codings[] = {{"identity", false}, {"gzip", true}, {"x-gzip", true}}; /* RFC 9110 8.4.1.3 */

    *gzip = false;
    if (coding == NULL)
        return true;
    for (size_t i = 0; i < sizeof(codings) / sizeof(codings[0]); i++) {
        if (strcasecmp(coding, codings[i].name) == 0) {
            *gzip = codings[i].gzip;
            return true;
        }
    }
    return false;
}
