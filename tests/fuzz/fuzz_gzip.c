/* fuzz_gzip.c -- gzip request bodies as cairnd expands them: any input
 * either expands within the limit, is refused as too large, or is corrupt;
 * never more than the limit is held, and what compresses comes back. The
 * same of a snapshot's part expanded piece by piece as it arrives: in any
 * slicing it agrees with the whole-body expansion. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gzip.h"

#define LIMIT 4096

struct counted {
    size_t len;
};

static void count(const void *data, size_t len, void *arg)
{
    (void)data;
    ((struct counted *)arg)->len += len;
}

/* The input fed in slices whose sizes its first byte chooses. */
static enum gzip_status inflate_sliced(const uint8_t *data, size_t size, size_t *out_len)
{
    struct counted c = {0};
    struct gzip_inflater *g = gzip_inflater_new();
    size_t step = size > 0 ? (size_t)data[0] % 7 + 1 : 1;
    enum gzip_status st = GZIP_OK;
    char err[128];
    for (size_t at = 0; at < size && st == GZIP_OK; at += step) {
        size_t n = size - at < step ? size - at : step;
        st = gzip_inflater_feed(g, data + at, n, LIMIT, count, &c, err, sizeof(err));
    }
    if (st == GZIP_OK && (!gzip_inflater_whole(g) || size == 0))
        st = GZIP_CORRUPT; /* cut short, as the whole-body expansion says */
    FUZZ_ASSERT(gzip_inflater_total(g) == c.len);
    FUZZ_ASSERT(st == GZIP_TOO_LARGE || c.len <= LIMIT);
    gzip_inflater_free(g);
    *out_len = c.len;
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = NULL, err[128];
    size_t len = 0;

    enum gzip_status whole = gzip_decompress(data, size, LIMIT, &out, &len, err, sizeof(err));
    switch (whole) {
    case GZIP_OK:
        FUZZ_ASSERT(out != NULL && len <= LIMIT && out[len] == '\0');
        break;
    case GZIP_TOO_LARGE:
    case GZIP_CORRUPT:
        FUZZ_ASSERT(out == NULL);
        break;
    }
    free(out);
    size_t sliced_len = 0;
    enum gzip_status sliced = inflate_sliced(data, size, &sliced_len);
    FUZZ_ASSERT(sliced == whole || (whole == GZIP_CORRUPT && sliced == GZIP_TOO_LARGE));
    FUZZ_ASSERT(whole != GZIP_OK || sliced_len == len);

    /* Round trip: what is compressed expands to itself. */
    size_t zlen = 0;
    unsigned char *z = gzip_compress(data, size, &zlen);
    FUZZ_ASSERT(gzip_decompress(z, zlen, size, &out, &len, err, sizeof(err)) == GZIP_OK);
    FUZZ_ASSERT(len == size && memcmp(out, data, size) == 0);
    free(out);
    free(z);
    return 0;
}
