/* sigv4.c -- AWS Signature Version 4 (sigv4.h). */
#include "sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crypto.h"
#include "strbuf.h"
#include "xalloc.h"

/* ---- the Authorization header ------------------------------------------ */

/* Copy the n bytes at s into out (size bytes) as a string; false when they
 * do not fit or are empty. */
static bool copy_part(char *out, size_t size, const char *s, size_t n)
{
    if (n == 0 || n >= size)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static bool fail(char *err, size_t errsize, const char *why)
{
    snprintf(err, errsize, "%s", why);
    return false;
}

/* Credential=<key>/<date>/<region>/<service>/aws4_request */
static bool parse_credential(const char *s, size_t n, struct sigv4_credential *out)
{
    const char *end = s + n, *part[5];
    size_t len[5];
    for (int i = 0; i < 5; i++) {
        const char *slash = i < 4 ? memchr(s, '/', (size_t)(end - s)) : end;
        if (slash == NULL)
            return false;
        part[i] = s;
        len[i] = (size_t)(slash - s);
        s = slash + 1;
    }
    if (len[4] != strlen("aws4_request") || memcmp(part[4], "aws4_request", len[4]) != 0)
        return false;
    if (len[1] != 8 || strspn(part[1], "0123456789") < 8)
        return false;
    return copy_part(out->access_key, sizeof(out->access_key), part[0], len[0]) &&
           copy_part(out->date, sizeof(out->date), part[1], len[1]) &&
           copy_part(out->region, sizeof(out->region), part[2], len[2]) &&
           copy_part(out->service, sizeof(out->service), part[3], len[3]);
}

/* Lower-case names, each after the one before, separated by ";". */
static bool valid_signed_headers(const char *s)
{
    const char *prev = NULL;
    size_t prev_len = 0;
    for (;;) {
        size_t n = strcspn(s, ";");
        if (n == 0)
            return false;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (!(islower(c) || isdigit(c) || c == '-' || c == '_' || c == '.'))
                return false;
        }
        if (prev != NULL) {
            int cmp = strncmp(prev, s, prev_len < n ? prev_len : n);
            if (cmp > 0 || (cmp == 0 && prev_len >= n))
                return false;
        }
        prev = s;
        prev_len = n;
        if (s[n] == '\0')
            return true;
        s += n + 1;
    }
}

bool sigv4_parse(const char *authorization, struct sigv4_credential *out, char *err, size_t errsize)
{
    static const char *const names[3] = {"Credential=", "SignedHeaders=", "Signature="};
    bool seen[3] = {false, false, false};
    size_t alg = strlen(SIGV4_ALGORITHM);

    memset(out, 0, sizeof(*out));
    if (authorization == NULL)
        return fail(err, errsize, "no Authorization header");
    if (strncmp(authorization, SIGV4_ALGORITHM, alg) != 0 || authorization[alg] != ' ')
        return fail(err, errsize, "the Authorization header is not AWS4-HMAC-SHA256");
    const char *s = authorization + alg;
    while (*s != '\0') {
        s += strspn(s, " ,");
        if (*s == '\0')
            break;
        size_t n = strcspn(s, ",");
        int which = -1;
        for (int i = 0; i < 3; i++)
            if (strncmp(s, names[i], strlen(names[i])) == 0)
                which = i;
        if (which < 0 || seen[which])
            return fail(err, errsize, "the Authorization header has an unknown or repeated part");
        seen[which] = true;
        const char *v = s + strlen(names[which]);
        size_t vn = n - strlen(names[which]);
        while (vn > 0 && v[vn - 1] == ' ')
            vn--;
        bool ok = which == 0   ? parse_credential(v, vn, out)
                  : which == 1 ? copy_part(out->signed_headers, sizeof(out->signed_headers), v, vn)
                               : copy_part(out->signature, sizeof(out->signature), v, vn);
        if (!ok)
            return fail(err, errsize,
                        which == 0   ? "the Credential is malformed"
                        : which == 1 ? "the SignedHeaders are malformed"
                                     : "the Signature is malformed");
        s += n;
    }
    if (!seen[0] || !seen[1] || !seen[2])
        return fail(err, errsize,
                    "the Authorization header lacks Credential, SignedHeaders or "
                    "Signature");
    if (!valid_signed_headers(out->signed_headers))
        return fail(err, errsize, "the SignedHeaders are not lower-case names in order");
    if (strlen(out->signature) != SIGV4_HEX_LEN ||
        strspn(out->signature, "0123456789abcdef") != SIGV4_HEX_LEN)
        return fail(err, errsize, "the Signature is not 64 hex digits");
    return true;
}

/* ---- the canonical request ---------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

/* Append the n bytes at s percent-encoded (upper-case hex), keeping the
 * unreserved characters and, when keep_slash, "/". */
static void encode(struct strbuf *b, const char *s, size_t n, bool keep_slash)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/'))
            strbuf_printf(b, "%c", c);
        else
            strbuf_printf(b, "%%%02X", c);
    }
}

char *sigv4_uri_encode(const char *s, bool keep_slash)
{
    struct strbuf b;
    strbuf_init(&b, strlen(s) * 3 + 1);
    encode(&b, s, strlen(s), keep_slash);
    return b.p;
}

/* The n bytes at s with %XX decoded (a bad escape stays as it is), into a
 * new string of *len bytes. */
static char *decode(const char *s, size_t n, size_t *len)
{
    char *out = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = i + 2 < n && s[i] == '%' ? crypto_hex_digit(s[i + 1]) : -1;
        int lo = hi >= 0 ? crypto_hex_digit(s[i + 2]) : -1;
        if (lo >= 0) {
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = '\0';
    *len = k;
    return out;
}

/* A query parameter, its name and value encoded the canonical way. */
struct param {
    char *name, *value;
};

static int param_cmp(const void *a, const void *b)
{
    const struct param *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->value, y->value);
}

/* "a=1&b=2" with each part decoded, then encoded as AWS does. */
static char *encoded_part(const char *s, size_t n)
{
    size_t len;
    char *raw = decode(s, n, &len);
    struct strbuf b;
    strbuf_init(&b, len * 3 + 1);
    encode(&b, raw, len, false);
    free(raw);
    return b.p;
}

static void canonical_query(struct strbuf *b, const char *query)
{
    size_t count = 0, cap = 8;
    struct param *params = xmalloc(cap * sizeof(*params));

    for (const char *s = query != NULL ? query : ""; *s != '\0';) {
        size_t n = strcspn(s, "&");
        if (n > 0) {
            const char *eq = memchr(s, '=', n);
            size_t nn = eq != NULL ? (size_t)(eq - s) : n;
            if (count == cap)
                params = xrealloc(params, (cap *= 2) * sizeof(*params));
            params[count].name = encoded_part(s, nn);
            params[count].value = eq != NULL ? encoded_part(eq + 1, n - nn - 1) : xstrdup("");
            count++;
        }
        s += n + (s[n] == '&');
    }
    qsort(params, count, sizeof(*params), param_cmp);
    for (size_t i = 0; i < count; i++) {
        strbuf_printf(b, "%s%s=%s", i > 0 ? "&" : "", params[i].name, params[i].value);
        free(params[i].name);
        free(params[i].value);
    }
    free(params);
}

/* Append a header value trimmed, with each run of spaces and tabs made one
 * space. */
static void header_value(struct strbuf *b, const char *v)
{
    v += strspn(v, " \t");
    bool space = false;
    for (; *v != '\0'; v++) {
        if (*v == ' ' || *v == '\t') {
            space = true;
            continue;
        }
        if (space)
            strbuf_printf(b, " ");
        space = false;
        strbuf_printf(b, "%c", *v);
    }
}

/* "name:value[,value...]\n" for the signed header name (n bytes); false
 * when the request has no such header. */
static bool canonical_header(struct strbuf *b, const struct sigv4_request *req, const char *name,
                             size_t n)
{
    bool found = false;
    strbuf_printf(b, "%.*s:", (int)n, name);
    for (size_t i = 0; i < req->nheaders; i++) {
        if (strlen(req->headers[i].name) != n || strncasecmp(req->headers[i].name, name, n) != 0)
            continue;
        if (found)
            strbuf_printf(b, ",");
        header_value(b, req->headers[i].value);
        found = true;
    }
    strbuf_printf(b, "\n");
    return found;
}

char *sigv4_canonical_request(const struct sigv4_request *req, const char *signed_headers)
{
    struct strbuf b;
    unsigned char digest[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];
    const char *path = req->path != NULL && req->path[0] != '\0' ? req->path : "/";

    strbuf_init(&b, 512);
    strbuf_printf(&b, "%s\n", req->method);
    if (req->path_as_sent)
        strbuf_printf(&b, "%s", path);
    else
        encode(&b, path, strlen(path), true);
    strbuf_printf(&b, "\n");
    canonical_query(&b, req->query);
    strbuf_printf(&b, "\n");
    for (const char *s = signed_headers;;) {
        size_t n = strcspn(s, ";");
        if (!canonical_header(&b, req, s, n)) {
            free(b.p);
            return NULL;
        }
        if (s[n] == '\0')
            break;
        s += n + 1;
    }
    if (req->payload_hash == NULL) {
        crypto_sha256(req->payload != NULL ? req->payload : "", req->payload_len, digest);
        crypto_hex(digest, sizeof(digest), hex);
    }
    strbuf_printf(&b, "\n%s\n%s", signed_headers,
                  req->payload_hash != NULL ? req->payload_hash : hex);
    return b.p;
}

/* ---- the signature ------------------------------------------------------ */

static void hmac_text(const unsigned char *key, size_t key_len, const char *text,
                      unsigned char out[CRYPTO_SHA256_LEN])
{
    crypto_hmac_sha256(key, key_len, text, strlen(text), out);
}

/* The hex signature of the canonical request canonical, made at amz_date
 * in the scope date/region/service with secret: the one path both a
 * verifier and a client take. */
static void sign_canonical(const char *canonical, const char *amz_date, const char *date,
                           const char *region, const char *service, const char *secret,
                           char out[SIGV4_HEX_LEN + 1])
{
    unsigned char digest[CRYPTO_SHA256_LEN], key[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];
    crypto_sha256(canonical, strlen(canonical), digest);
    crypto_hex(digest, sizeof(digest), hex);

    struct strbuf to_sign, first;
    strbuf_init(&to_sign, 256);
    strbuf_printf(&to_sign, "%s\n%s\n%s/%s/%s/aws4_request\n%s", SIGV4_ALGORITHM, amz_date, date,
                  region, service, hex);
    strbuf_init(&first, 64);
    strbuf_printf(&first, "AWS4%s", secret);
    hmac_text((const unsigned char *)first.p, first.len, date, key);
    free(first.p);
    hmac_text(key, sizeof(key), region, key);
    hmac_text(key, sizeof(key), service, key);
    hmac_text(key, sizeof(key), "aws4_request", key);
    hmac_text(key, sizeof(key), to_sign.p, digest);
    free(to_sign.p);
    crypto_hex(digest, sizeof(digest), out);
}

bool sigv4_signature(const struct sigv4_request *req, const struct sigv4_credential *cred,
                     const char *amz_date, const char *secret, char out[SIGV4_HEX_LEN + 1])
{
    char *canonical = sigv4_canonical_request(req, cred->signed_headers);
    if (canonical == NULL)
        return false;
    sign_canonical(canonical, amz_date, cred->date, cred->region, cred->service, secret, out);
    free(canonical);
    return true;
}

char *sigv4_authorization(const struct sigv4_request *req, const char *signed_headers,
                          const char *amz_date, const struct sigv4_signer *signer)
{
    char date[9], signature[SIGV4_HEX_LEN + 1];
    char *canonical = sigv4_canonical_request(req, signed_headers);
    if (canonical == NULL)
        return NULL;
    snprintf(date, sizeof(date), "%.8s", amz_date);
    sign_canonical(canonical, amz_date, date, signer->region, signer->service, signer->secret,
                   signature);
    free(canonical);
    return xasprintf("%s Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
                     SIGV4_ALGORITHM, signer->access_key, date, signer->region, signer->service,
                     signed_headers, signature);
}

bool sigv4_parse_date(const char *amz_date, int64_t *epoch_s)
{
    int y, mo, d, h, mi, s;
    char z[2];
    if (amz_date == NULL || strlen(amz_date) != 16 || amz_date[8] != 'T' ||
        strspn(amz_date, "0123456789") != 8 || strspn(amz_date + 9, "0123456789") != 6 ||
        sscanf(amz_date, "%4d%2d%2dT%2d%2d%2d%1[Z]", &y, &mo, &d, &h, &mi, &s, z) != 7)
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return false;
    /* Days since 1970-01-01 of a proleptic Gregorian date. */
    int yy = mo <= 2 ? y - 1 : y;
    int era = yy / 400;
    int yoe = yy - era * 400;
    int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t)era * 146097 + doe - 719468;
    *epoch_s = days * 86400 + h * 3600 + mi * 60 + s;
    return true;
}
