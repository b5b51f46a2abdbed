/* gzip.h -- gzip (RFC 1952) bodies on zlib: the agent compresses its
 * metric pushes and the snapshot files it uploads, cairnd expands any
 * request body sent with `Content-Encoding: gzip`, never past a size it is
 * given, and snapshot files piece by piece as they are read. */
#ifndef CAIRN_GZIP_H
#define CAIRN_GZIP_H

#include <stdbool.h>
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

/* The same at zlib's level (1, fastest, to 9, smallest). */
unsigned char *gzip_compress_level(const void *data, size_t len, int level, size_t *out_len);

/* Expand the gzip data in[0..len) (one member, or several one after the
 * other) into a newly allocated buffer, NUL-terminated after its *out_len
 * bytes, that the caller frees. Stops as soon as the output would pass max
 * bytes, so a small input that expands hugely costs no more than max bytes
 * of memory. Returns GZIP_OK with *out set, or GZIP_TOO_LARGE or
 * GZIP_CORRUPT with *out NULL; for GZIP_CORRUPT, err says what is wrong.
 * Aborts when out of memory. */
enum gzip_status gzip_decompress(const void *in, size_t len, size_t max, char **out,
                                 size_t *out_len, char *err, size_t errsize);

/* A gzip stream (one member or several) expanded as it arrives, in pieces
 * of any size, without holding it whole: each piece of output goes to a
 * callback. */
struct gzip_inflater;
typedef void (*gzip_out_fn)(const void *data, size_t len, void *arg);
struct gzip_inflater *gzip_inflater_new(void);
/* Expand in[0..len), handing the output to out(arg) in pieces. GZIP_OK once
 * all of in is taken; GZIP_TOO_LARGE as soon as the output so far passes
 * max bytes; GZIP_CORRUPT, with err, for data that is not gzip. */
enum gzip_status gzip_inflater_feed(struct gzip_inflater *g, const void *in, size_t len,
                                    unsigned long long max, gzip_out_fn out, void *arg, char *err,
                                    size_t errsize);
/* Whether what was fed ends a member: false when it was cut short. */
bool gzip_inflater_whole(const struct gzip_inflater *g);
/* The bytes of output so far. */
unsigned long long gzip_inflater_total(const struct gzip_inflater *g);
void gzip_inflater_free(struct gzip_inflater *g);

#endif
