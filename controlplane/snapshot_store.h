/* snapshot_store.h -- where cairnd keeps snapshots' files: a directory on
 * its own side (the default, --snapshot-store /path) or an S3-compatible
 * object store (--snapshot-store s3://bucket/prefix), behind one interface.
 *
 * An object is named by a key ("<snapshot id>/shard-0003.rdb.gz": letters,
 * digits, '-', '.', '/' only) and written in parts, in order, each a slice
 * of the object that starts where the one before ended: an upload is begun,
 * its parts put (a part may be put again, the same bytes at the same
 * offset, after a reply was lost), then finished -- only then does the
 * object exist under its key -- or aborted. Every part but the last is at
 * least SNAPSHOT_STORE_PART_MIN bytes (S3's multipart rule). Any number of
 * threads and cairnd processes may use a store at once, on different keys;
 * what one upload has done so far is the caller's to remember (the upload
 * id, each part's tag), in the database, so any cairnd may take it on.
 *
 * Every call blocks for at most the store's timeouts and is safe to repeat:
 * beginning again starts the upload afresh, deleting what is gone is done. */
#ifndef CAIRN_SNAPSHOT_STORE_H
#define CAIRN_SNAPSHOT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot_s3.h"

#define SNAPSHOT_STORE_PART_MIN (5u << 20)
#define SNAPSHOT_STORE_TAG_MAX  SNAPSHOT_S3_TAG_MAX /* a part's tag, with its terminator */
#define SNAPSHOT_STORE_ID_MAX   SNAPSHOT_S3_ID_MAX  /* an upload's id, with its terminator */

struct snapshot_store;

/* Open the store url names: a directory ("/var/lib/cairn/snapshots",
 * created when missing) or "s3://bucket[/prefix]" with s3's settings
 * (required then). NULL with err when it cannot be used. */
struct snapshot_store *snapshot_store_open(const char *url, const struct snapshot_s3_config *s3,
                                           char *err, size_t errsize);
void snapshot_store_close(struct snapshot_store *s);

/* "directory" or "s3", and where: the directory's path or the s3:// URL. */
const char *snapshot_store_kind(const struct snapshot_store *s);
const char *snapshot_store_where(const struct snapshot_store *s);

/* Begin an upload of key: upload_id gets its id ("" for a directory). */
bool snapshot_store_begin(struct snapshot_store *s, const char *key,
                          char upload_id[SNAPSHOT_STORE_ID_MAX], char *err, size_t errsize);

/* Put part number part (1, 2, ...), len bytes that start at offset in the
 * object; tag gets what finishing needs to name it by. */
bool snapshot_store_put(struct snapshot_store *s, const char *key, const char *upload_id, int part,
                        uint64_t offset, const void *data, size_t len,
                        char tag[SNAPSHOT_STORE_TAG_MAX], char *err, size_t errsize);

/* Finish the upload of the parts 1..nparts, whose tags are tags[0..nparts):
 * the object is then whole under key, of size bytes. */
bool snapshot_store_finish(struct snapshot_store *s, const char *key, const char *upload_id,
                           const char *const *tags, int nparts, uint64_t size, char *err,
                           size_t errsize);

/* Give an upload up, dropping its parts (an unknown one is fine). */
bool snapshot_store_abort(struct snapshot_store *s, const char *key, const char *upload_id,
                          char *err, size_t errsize);

/* Read up to len bytes of key's object from offset into buf: how many
 * were read (0 at its end), or -1 with err (a missing object says so). */
ssize_t snapshot_store_read(struct snapshot_store *s, const char *key, uint64_t offset, void *buf,
                            size_t len, char *err, size_t errsize);

/* Delete key's object; one that is not there is deleted already. */
bool snapshot_store_delete(struct snapshot_store *s, const char *key, char *err, size_t errsize);

#endif
