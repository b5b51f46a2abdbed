/* series_codec.c -- see series_codec.h for the format. */
#include "series_codec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "xalloc.h"

#define MAX_SCALE 6 /* decimals tried: 10^0 .. 10^6 */

static const double pow10s[MAX_SCALE + 1] = {1, 10, 100, 1000, 10000, 100000, 1000000};

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* v's integer at k decimals, when that gives v back bit for bit. */
static bool decimal_at(float v, int k, int64_t *out)
{
    double x = (double)v * pow10s[k];
    if (!(fabs(x) < 0x1p52)) /* also NaN */
        return false;
    int64_t i = (int64_t)llround(x);
    if (bits_of((float)((double)i / pow10s[k])) != bits_of(v))
        return false;
    *out = i;
    return true;
}

/* The fewest decimals every present value is exact at; -1: none. */
static int series_scale(const float *values, const bool *present, size_t n)
{
    int k = 0;
    int64_t ignored;
    for (size_t i = 0; i < n; i++) {
        if (!present[i])
            continue;
        while (k <= MAX_SCALE && !decimal_at(values[i], k, &ignored))
            k++;
        if (k > MAX_SCALE)
            return -1;
    }
    /* A later value may have raised k past what an earlier one is exact at
     * (rare: 0.1f is exact at 1 decimal, not always at more). */
    for (size_t i = 0; i < n; i++)
        if (present[i] && !decimal_at(values[i], k, &ignored))
            return -1;
    return k;
}

struct out {
    unsigned char *p;
    size_t len, cap;
};

static void put_byte(struct out *o, unsigned char b)
{
    if (o->len == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->p = xrealloc(o->p, o->cap);
    }
    o->p[o->len++] = b;
}

static void put_varint(struct out *o, uint64_t v)
{
    while (v >= 0x80) {
        put_byte(o, (unsigned char)(v | 0x80));
        v >>= 7;
    }
    put_byte(o, (unsigned char)v);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void encode_body(struct out *o, const float *values, const bool *present, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += present[i];

    put_varint(o, n);
    put_byte(o, count == n ? 0 : 1);
    if (count != n) {
        for (size_t i = 0; i < n; i += 8) {
            unsigned char b = 0;
            for (size_t j = 0; j < 8 && i + j < n; j++)
                b |= (unsigned char)(present[i + j] << j);
            put_byte(o, b);
        }
    }
    if (count == 0) {
        put_byte(o, SERIES_EMPTY);
        return;
    }
    int k = series_scale(values, present, n);
    if (k >= 0) {
        int64_t prev = 0, cur = 0;
        put_byte(o, SERIES_DECIMAL);
        put_byte(o, (unsigned char)k);
        for (size_t i = 0; i < n; i++) {
            if (!present[i])
                continue;
            decimal_at(values[i], k, &cur);
            put_varint(o, zigzag(cur - prev));
            prev = cur;
        }
        return;
    }
    put_byte(o, SERIES_XOR);
    for (int plane = 0; plane < 4; plane++) {
        uint32_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            if (!present[i])
                continue;
            uint32_t b = bits_of(values[i]);
            put_byte(o, (unsigned char)((b ^ prev) >> (8 * plane)));
            prev = b;
        }
    }
}

/* Raw deflate: no zlib header or checksum, which would be a tenth of a
 * small series; the decoder checks the body's structure instead. */
static bool deflate_raw(const unsigned char *in, size_t len, unsigned char *out, size_t cap,
                        size_t *outlen)
{
    z_stream z = {0};
    if (deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END;
}

static bool inflate_raw(const unsigned char *in, size_t len, unsigned char *out, size_t cap,
                        size_t *outlen)
{
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return false;
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    *outlen = z.total_out;
    inflateEnd(&z);
    return rc == Z_STREAM_END && z.avail_in == 0;
}

unsigned char *series_encode(const float *values, const bool *present, size_t n, size_t *len)
{
    struct out body = {0};
    encode_body(&body, values, present, n);

    size_t zlen = 0;
    unsigned char *out = xmalloc(1 + compressBound(body.len));
    if (deflate_raw(body.p, body.len, out + 1, compressBound(body.len), &zlen) && zlen < body.len) {
        out[0] = SERIES_DEFLATED;
        *len = 1 + zlen;
    } else {
        out[0] = SERIES_RAW;
        memcpy(out + 1, body.p, body.len);
        *len = 1 + body.len;
    }
    free(body.p);
    return out;
}

struct in {
    const unsigned char *p, *end;
};

static bool get_byte(struct in *in, unsigned char *b)
{
    if (in->p >= in->end)
        return false;
    *b = *in->p++;
    return true;
}

static bool get_varint(struct in *in, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        unsigned char b;
        if (!get_byte(in, &b))
            return false;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The decimal mode's values: a scale, then zigzag deltas of the scaled
 * integers; true when the input held exactly those. */
static bool decode_decimal(struct in *in, float *values, const bool *present, size_t slots)
{
    unsigned char k;
    int64_t cur = 0;
    if (!get_byte(in, &k) || k > MAX_SCALE)
        return false;
    for (size_t i = 0; i < slots; i++) {
        uint64_t d;
        if (!present[i])
            continue;
        if (!get_varint(in, &d))
            return false;
        cur = (int64_t)((uint64_t)cur + (uint64_t)unzigzag(d));
        values[i] = (float)((double)cur / pow10s[k]);
    }
    return in->p == in->end;
}

/* The XOR mode's values: each float's bits XORed with the previous one's,
 * stored as four byte planes; true when the input held exactly those. */
static bool decode_xor(struct in *in, float *values, const bool *present, size_t slots)
{
    size_t count = 0;
    for (size_t i = 0; i < slots; i++)
        count += present[i];
    if ((size_t)(in->end - in->p) != 4 * count)
        return false;
    uint32_t prev = 0;
    for (size_t i = 0, j = 0; i < slots; i++) {
        if (!present[i])
            continue;
        uint32_t x = 0;
        for (int plane = 0; plane < 4; plane++)
            x |= (uint32_t)in->p[plane * count + j] << (8 * plane);
        prev ^= x;
        values[i] = float_of(prev);
        j++;
    }
    return true;
}

static long decode_body(struct in *in, float *values, bool *present, size_t n)
{
    uint64_t slots;
    unsigned char bitmap, mode;

    if (!get_varint(in, &slots) || slots > n || !get_byte(in, &bitmap) || bitmap > 1)
        return -1;
    for (size_t i = 0; i < n; i++)
        present[i] = i < slots;
    for (size_t i = 0; bitmap && i < slots; i += 8) {
        unsigned char b;
        if (!get_byte(in, &b))
            return -1;
        for (size_t j = 0; j < 8 && i + j < slots; j++)
            present[i + j] = (b >> j) & 1;
    }
    if (!get_byte(in, &mode))
        return -1;
    bool ok = false;
    if (mode == SERIES_EMPTY) {
        ok = true;
        for (size_t i = 0; i < slots; i++)
            ok &= !present[i];
    } else if (mode == SERIES_DECIMAL) {
        ok = decode_decimal(in, values, present, slots);
    } else if (mode == SERIES_XOR) {
        ok = decode_xor(in, values, present, slots);
    }
    return ok ? (long)slots : -1;
}

long series_decode(const unsigned char *buf, size_t len, float *values, bool *present, size_t n)
{
    if (len < 1 || n > SERIES_MAX_SLOTS)
        return -1;
    if (buf[0] == SERIES_RAW) {
        struct in in = {buf + 1, buf + len};
        return decode_body(&in, values, present, n);
    }
    if (buf[0] != SERIES_DEFLATED)
        return -1;
    /* The body is at most: a varint, the bitmap, two bytes and 10 per slot. */
    size_t cap = 16 + n / 8 + 10 * n, blen = 0;
    unsigned char *body = xmalloc(cap);
    long slots = -1;
    if (inflate_raw(buf + 1, len - 1, body, cap, &blen)) {
        struct in in = {body, body + blen};
        slots = decode_body(&in, values, present, n);
    }
    free(body);
    return slots;
}
