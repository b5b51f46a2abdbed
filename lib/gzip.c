/* gzip.c -- gzip bodies on zlib, expanded within a bound (see gzip.h). */
#define ZLIB_CONST
#include "gzip.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "xalloc.h"

/* zlib's window of 32 kB (15), plus 16: a gzip wrapper, not zlib's own. */
#define GZIP_WINDOW_BITS (15 + 16)

/* zlib's default trade of speed for size: a 1 MB metrics push compresses
 * in some 5 ms, to within a tenth of what level 9 makes of it in twice the
 * time. */
#define GZIP_LEVEL 6

static void out_of_memory(void)
{
    fprintf(stderr, "cairn: out of memory in zlib\n");
    abort();
}

unsigned char *gzip_compress(const void *data, size_t len, size_t *out_len)
{
    return gzip_compress_level(data, len, GZIP_LEVEL, out_len);
}

unsigned char *gzip_compress_level(const void *data, size_t len, int level, size_t *out_len)
{
    z_stream zs = {0};

    assert(len < UINT_MAX);
    if (deflateInit2(&zs, level, Z_DEFLATED, GZIP_WINDOW_BITS, 8 /* zlib default memLevel */,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        out_of_memory();
    size_t bound = deflateBound(&zs, len);
    unsigned char *out = xmalloc(bound);
    zs.next_in = data;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);
    assert(rc == Z_STREAM_END); /* deflateBound() left room for all of it */
    (void)rc;
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return xrealloc(out, *out_len);
}

enum gzip_status gzip_decompress(const void *in, size_t len, size_t max, char **out,
                                 size_t *out_len, char *err, size_t errsize)
{
    /* Room for one byte more than max: writing it tells output over the
     * limit from output that ends exactly at it. */
    size_t limit = max + 1;
    size_t cap = 0;
    char *buf = NULL;
    enum gzip_status st;
    z_stream zs = {0};

    assert(len < UINT_MAX && limit < UINT_MAX);
    *out = NULL;
    *out_len = 0;
    if (inflateInit2(&zs, GZIP_WINDOW_BITS) != Z_OK)
        out_of_memory();
    zs.next_in = in;
    zs.avail_in = (uInt)len;
    for (;;) {
        if (zs.avail_out == 0) {
            if (cap == limit) {
                st = GZIP_TOO_LARGE;
                break;
            }
            size_t full = cap;
            cap = cap == 0 ? 4 * len + 4096 : 2 * cap;
            cap = cap < limit ? cap : limit;
            buf = xrealloc(buf, cap + 1); /* and a NUL */
            zs.next_out = (Bytef *)buf + full;
            zs.avail_out = (uInt)(cap - full);
        }
        int rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_OK)
            continue;
        if (rc == Z_STREAM_END && zs.avail_in > 0) {
            inflateReset(&zs); /* another member follows */
            continue;
        }
        if (rc == Z_STREAM_END) {
            st = GZIP_OK;
            break;
        }
        if (rc == Z_MEM_ERROR)
            out_of_memory();
        /* Z_BUF_ERROR: no progress although there is room to write, so
         * the input ran out before the end of the stream. */
        snprintf(err, errsize, "%s",
                 rc == Z_BUF_ERROR ? "the gzip data ends early"
                 : zs.msg != NULL  ? zs.msg
                                   : "not gzip data");
        st = GZIP_CORRUPT;
        break;
    }
    size_t used = (size_t)((char *)zs.next_out - buf);
    inflateEnd(&zs);
    if (st == GZIP_OK && used > max)
        st = GZIP_TOO_LARGE; /* it ended on the byte past the limit */
    if (st != GZIP_OK) {
        free(buf);
        return st;
    }
    buf[used] = '\0';
    *out = buf;
    *out_len = used;
    return GZIP_OK;
}

/* ---- expanding as it arrives ---------------------------------------------------- */

#define INFLATE_PIECE (256u << 10)

struct gzip_inflater {
    z_stream zs;
    bool in_member; /* input taken since the last member ended */
    unsigned long long total;
    unsigned char piece[INFLATE_PIECE];
};

struct gzip_inflater *gzip_inflater_new(void)
{
    struct gzip_inflater *g = xcalloc(1, sizeof(*g));
    if (inflateInit2(&g->zs, GZIP_WINDOW_BITS) != Z_OK)
        out_of_memory();
    return g;
}

enum gzip_status gzip_inflater_feed(struct gzip_inflater *g, const void *in, size_t len,
                                    unsigned long long max, gzip_out_fn out, void *arg, char *err,
                                    size_t errsize)
{
    const unsigned char *p = in;
    while (len > 0) {
        uInt take = len < UINT_MAX ? (uInt)len : UINT_MAX;
        g->zs.next_in = p;
        g->zs.avail_in = take;
        while (g->zs.avail_in > 0) {
            g->zs.next_out = g->piece;
            g->zs.avail_out = sizeof(g->piece);
            uInt before = g->zs.avail_in;
            int rc = inflate(&g->zs, Z_NO_FLUSH);
            if (g->zs.avail_in < before)
                g->in_member = true;
            size_t made = sizeof(g->piece) - g->zs.avail_out;
            g->total += made;
            if (g->total > max)
                return GZIP_TOO_LARGE;
            if (made > 0)
                out(g->piece, made, arg);
            if (rc == Z_STREAM_END) {
                inflateReset(&g->zs); /* another member may follow */
                g->in_member = false;
            } else if (rc == Z_MEM_ERROR) {
                out_of_memory();
            } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && g->zs.avail_in == 0)) {
                snprintf(err, errsize, "%s", g->zs.msg != NULL ? g->zs.msg : "not gzip data");
                return GZIP_CORRUPT;
            }
        }
        p += take;
        len -= take;
    }
    return GZIP_OK;
}

bool gzip_inflater_whole(const struct gzip_inflater *g)
{
    return !g->in_member;
}

unsigned long long gzip_inflater_total(const struct gzip_inflater *g)
{
    return g->total;
}

void gzip_inflater_free(struct gzip_inflater *g)
{
    if (g == NULL)
        return;
    inflateEnd(&g->zs);
    free(g);
}
