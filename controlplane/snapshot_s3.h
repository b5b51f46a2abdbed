/* snapshot_s3.h -- the snapshot store's S3-compatible side (snapshot_store.h):
 * multipart uploads, ranged reads and deletes of the objects under
 * s3://bucket/prefix, path-style, over libcurl, each request signed with
 * AWS Signature Version 4 (sigv4.h). Used by snapshot_store.c, which
 * checks keys and dispatches to it.
 *
 * An object's URL is endpoint/bucket/prefix/key, each part percent-encoded
 * as SigV4 canonicalizes it. Every call makes its own curl handle, so any
 * number of threads may call at once; each waits at most 5 s to connect and
 * 120 s in all. A failure fills err with what a user can act on:
 * "S3 PUT part 3 of KEY: HTTP 403 SignatureDoesNotMatch: <S3's message>",
 * or the connection's error. Replies are distrusted: at most 64 KiB of one
 * is kept, and a read never writes past the buffer it was given. */
#ifndef CAIRN_SNAPSHOT_S3_H
#define CAIRN_SNAPSHOT_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An upload's id (S3's UploadId) and a part's tag (its ETag), with their
 * terminators. */
#define SNAPSHOT_S3_ID_MAX  256
#define SNAPSHOT_S3_TAG_MAX 128

/* An S3-compatible store's settings; the bucket and key prefix come from
 * the s3:// URL (snapshot_store.h). */
struct snapshot_s3_config {
    const char *endpoint;   /* "https://s3.eu-west-1.amazonaws.com" or "http://127.0.0.1:4568";
                               path-style requests: endpoint/bucket/key */
    const char *region;     /* "us-east-1" when NULL */
    const char *access_key; /* AWS_ACCESS_KEY_ID */
    const char *secret_key; /* AWS_SECRET_ACCESS_KEY */
    const char *ca_file;    /* PEM authorities for an https endpoint; NULL: the system's */
};

struct snapshot_s3;

/* A client for bucket's objects under prefix ("" or "a/b", no "/" at
 * either end) with cfg's endpoint, region ("us-east-1" when NULL) and
 * keys, copied. NULL with err when cfg cannot be used: no endpoint or
 * keys, an endpoint that is not an http(s) URL of a host alone. Nothing is
 * sent: the first call finds out whether the store answers. */
struct snapshot_s3 *snapshot_s3_open(const char *bucket, const char *prefix,
                                     const struct snapshot_s3_config *cfg, char *err,
                                     size_t errsize);

/* Free c (NULL is fine); no call may be under way on it. */
void snapshot_s3_close(struct snapshot_s3 *c);

/* CreateMultipartUpload of key: upload_id gets S3's UploadId. */
bool snapshot_s3_begin(struct snapshot_s3 *c, const char *key, char upload_id[SNAPSHOT_S3_ID_MAX],
                       char *err, size_t errsize);

/* UploadPart: part number part (1..10000) of the upload, len bytes; tag
 * gets the part's ETag, quotes included, as finishing names it. */
bool snapshot_s3_put(struct snapshot_s3 *c, const char *key, const char *upload_id, int part,
                     const void *data, size_t len, char tag[SNAPSHOT_S3_TAG_MAX], char *err,
                     size_t errsize);

/* CompleteMultipartUpload of parts 1..nparts, tags[i] the ETag of part
 * i + 1. S3 may refuse in a 200 reply; that is a failure here too. */
bool snapshot_s3_finish(struct snapshot_s3 *c, const char *key, const char *upload_id,
                        const char *const *tags, int nparts, char *err, size_t errsize);

/* AbortMultipartUpload; an upload S3 does not know (404) is aborted. */
bool snapshot_s3_abort(struct snapshot_s3 *c, const char *key, const char *upload_id, char *err,
                       size_t errsize);

/* GetObject of bytes offset..offset+len-1 into buf: how many came (fewer
 * than len at the object's end, 0 past it), or -1 with err ("no such
 * object" when it is missing); buf's contents are undefined then. */
ssize_t snapshot_s3_read(struct snapshot_s3 *c, const char *key, uint64_t offset, void *buf,
                         size_t len, char *err, size_t errsize);

/* DeleteObject; an object that is not there is deleted. */
bool snapshot_s3_delete(struct snapshot_s3 *c, const char *key, char *err, size_t errsize);

#endif
