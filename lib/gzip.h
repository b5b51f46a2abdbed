/* gzip.h -- gzip (RFC 1952) bodies on zlib: the agent compresses its
 * metric pushes, cairnd expands any request body sent with
 * `Content-Encoding: gzip`, never past a size it is given. */
#ifndef CAIRN_GZIP_H
#define CAIRN_GZIP_H

#include <stddef.h>

enum gzip_status {
    GZIP_OK,
    GZIP_TOO_LARGE, /* the data expands past the limit */
    GZIP_CORRUPT,   /* not gzip, damaged, or cut short */
};

/* Compress data[0..len) into one gzip member, in a newly allocated buffer
 * of *out_len bytes that the caller frees. It may be larger than data
 * (some 20 bytes of framing). Aborts when out of memory. */
unsigned char *gzip_compress(const void *data, size_t len, size_t *out_len);

/* Expand the gzip data in[0..len) (one member, or several one after the
 * other) into a newly allocated buffer, NUL-terminated after its *out_len
 * bytes, that the caller frees. Stops as soon as the output would pass max
 * bytes, so a small input that expands hugely costs no more than max bytes
 * of memory. Returns GZIP_OK with *out set, or GZIP_TOO_LARGE or
 * GZIP_CORRUPT with *out NULL; for GZIP_CORRUPT, err says what is wrong.
 * Aborts when out of memory. */
enum gzip_status gzip_decompress(const void *in, size_t len, size_t max, char **out,
                                 size_t *out_len, char *err, size_t errsize);

#endif
