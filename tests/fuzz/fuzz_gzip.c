/* fuzz_gzip.c -- gzip request bodies as cairnd expands them: any input
 * either expands within the limit, is refused as too large, or is corrupt;
 * never more than the limit is held, and what compresses comes back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gzip.h"

#define LIMIT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = NULL, err[128];
    size_t len = 0;

    switch (gzip_decompress(data, size, LIMIT, &out, &len, err, sizeof(err))) {
    case GZIP_OK:
        FUZZ_ASSERT(out != NULL && len <= LIMIT && out[len] == '\0');
        break;
    case GZIP_TOO_LARGE:
    case GZIP_CORRUPT:
        FUZZ_ASSERT(out == NULL);
        break;
    }
    free(out);

    /* Round trip: what is compressed expands to itself. */
    size_t zlen = 0;
    unsigned char *z = gzip_compress(data, size, &zlen);
    FUZZ_ASSERT(gzip_decompress(z, zlen, size, &out, &len, err, sizeof(err)) == GZIP_OK);
    FUZZ_ASSERT(len == size && memcmp(out, data, size) == 0);
    free(out);
    free(z);
    return 0;
}
