/* s3_store.c -- controlplane/snapshot_s3.c from the command line, for
 * tests/system/test_snapshot_store_s3.py: a whole upload's round trip
 * against an S3-compatible server, and single calls whose errors the test
 * reads.
 *
 *     s3_store ENDPOINT BUCKET PREFIX roundtrip KEY
 *         begin, put 3 parts (5 MiB, 5 MiB, 1000 bytes; part 2 put twice),
 *         finish, read ranges back and check them, delete; then an upload
 *         begun and aborted; prints a line per step, exit 1 at the first
 *         that fails
 *     s3_store ENDPOINT BUCKET PREFIX begin KEY
 *         prints the upload id
 *     s3_store ENDPOINT BUCKET PREFIX put KEY UPLOAD_ID PART SIZE
 *         puts SIZE bytes as part PART, prints its tag
 *     s3_store ENDPOINT BUCKET PREFIX read KEY OFFSET LEN
 *         prints how many bytes came
 *     s3_store ENDPOINT BUCKET PREFIX delete KEY
 *
 * The keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the
 * region from AWS_REGION. A call that fails prints its error on stdout and
 * exits 1; bad arguments exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot_store.h"
#include "xalloc.h"

#define BIG_PART   SNAPSHOT_STORE_PART_MIN
#define SMALL_PART 1000u
#define OBJECT_LEN (2 * BIG_PART + SMALL_PART)

static char err[1024];

/* The object's byte at offset: a pattern that differs across parts and
 * within them, so a misplaced range shows. */
static unsigned char byte_at(size_t offset)
{
    return (unsigned char)((offset * 7 + offset / 4093) & 0xff);
}

static bool step(bool ok, const char *what)
{
    if (ok)
        printf("ok %s\n", what);
    else
        printf("FAIL %s: %s\n", what, err);
    return ok;
}

/* Read [offset, offset+len) and compare with the pattern; want is how many
 * bytes should come. */
static bool check_range(struct snapshot_s3 *s3, const char *key, size_t offset, size_t len,
                        size_t want)
{
    unsigned char *buf = xmalloc(len + 1);
    ssize_t n = snapshot_s3_read(s3, key, offset, buf, len, err, sizeof(err));
    bool ok = n == (ssize_t)want;
    if (n >= 0 && !ok)
        snprintf(err, sizeof(err), "read %zd bytes at %zu, expected %zu", n, offset, want);
    for (size_t i = 0; ok && i < want; i++)
        if (buf[i] != byte_at(offset + i)) {
            snprintf(err, sizeof(err), "byte %zu is %u, expected %u", offset + i, buf[i],
                     byte_at(offset + i));
            ok = false;
        }
    free(buf);
    char what[96];
    snprintf(what, sizeof(what), "read %zu bytes at %zu", want, offset);
    return step(ok, what);
}

static int roundtrip(struct snapshot_s3 *s3, const char *key)
{
    static const size_t sizes[3] = {BIG_PART, BIG_PART, SMALL_PART};
    unsigned char *object = xmalloc(OBJECT_LEN);
    char id[SNAPSHOT_STORE_ID_MAX], tags[3][SNAPSHOT_STORE_TAG_MAX], again[SNAPSHOT_STORE_TAG_MAX];
    const char *const tag_list[3] = {tags[0], tags[1], tags[2]};
    size_t offset = 0;
    bool ok;

    for (size_t i = 0; i < OBJECT_LEN; i++)
        object[i] = byte_at(i);
    ok = step(snapshot_s3_begin(s3, key, id, err, sizeof(err)), "begin");
    for (int part = 1; ok && part <= 3; part++) {
        char what[32];
        snprintf(what, sizeof(what), "put part %d", part);
        ok = step(snapshot_s3_put(s3, key, id, part, object + offset, sizes[part - 1],
                                  tags[part - 1], err, sizeof(err)),
                  what);
        offset += sizes[part - 1];
    }
    /* A part put again after a lost reply: the same bytes, the same tag. */
    ok = ok && step(snapshot_s3_put(s3, key, id, 2, object + BIG_PART, BIG_PART, again, err,
                                    sizeof(err)) &&
                        strcmp(again, tags[1]) == 0,
                    "put part 2 again");
    ok = ok && step(snapshot_s3_finish(s3, key, id, tag_list, 3, err, sizeof(err)), "finish");
    ok = ok && check_range(s3, key, 0, 100, 100);
    ok = ok && check_range(s3, key, BIG_PART - 10, 20, 20);                  /* across parts 1-2 */
    ok = ok && check_range(s3, key, 2 * BIG_PART - 1, 4096, SMALL_PART + 1); /* to the end */
    ok = ok && check_range(s3, key, 0, OBJECT_LEN + 100, OBJECT_LEN);        /* all of it */
    ok = ok && check_range(s3, key, OBJECT_LEN, 10, 0);                      /* past the end */
    ok = ok && step(snapshot_s3_delete(s3, key, err, sizeof(err)), "delete");
    ok = ok && step(snapshot_s3_read(s3, key, 0, object, 10, err, sizeof(err)) == -1 &&
                        strstr(err, "no such object") != NULL,
                    "read after delete: no such object");
    ok = ok && step(snapshot_s3_delete(s3, key, err, sizeof(err)), "delete again");

    ok = ok && step(snapshot_s3_begin(s3, key, id, err, sizeof(err)), "begin another");
    ok = ok && step(snapshot_s3_put(s3, key, id, 1, object, SMALL_PART, tags[0], err, sizeof(err)),
                    "put its part 1");
    ok = ok && step(snapshot_s3_abort(s3, key, id, err, sizeof(err)), "abort");
    ok = ok && step(snapshot_s3_abort(s3, key, id, err, sizeof(err)), "abort again");
    ok = ok && step(snapshot_s3_read(s3, key, 0, object, 10, err, sizeof(err)) == -1,
                    "read after abort: no such object");
    free(object);
    return ok ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: s3_store ENDPOINT BUCKET PREFIX roundtrip KEY\n"
                    "       s3_store ENDPOINT BUCKET PREFIX begin KEY\n"
                    "       s3_store ENDPOINT BUCKET PREFIX put KEY UPLOAD_ID PART SIZE\n"
                    "       s3_store ENDPOINT BUCKET PREFIX read KEY OFFSET LEN\n"
                    "       s3_store ENDPOINT BUCKET PREFIX delete KEY\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 6)
        return usage();
    const struct snapshot_s3_config cfg = {argv[1], getenv("AWS_REGION"),
                                           getenv("AWS_ACCESS_KEY_ID"),
                                           getenv("AWS_SECRET_ACCESS_KEY"), NULL};
    const char *command = argv[4], *key = argv[5];
    struct snapshot_s3 *s3 = snapshot_s3_open(argv[2], argv[3], &cfg, err, sizeof(err));
    int rc = 2;

    if (s3 == NULL) {
        printf("%s\n", err);
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(command, "roundtrip") == 0 && argc == 6) {
        rc = roundtrip(s3, key);
    } else if (strcmp(command, "begin") == 0 && argc == 6) {
        char id[SNAPSHOT_STORE_ID_MAX];
        rc = snapshot_s3_begin(s3, key, id, err, sizeof(err)) ? 0 : 1;
        printf("%s\n", rc == 0 ? id : err);
    } else if (strcmp(command, "put") == 0 && argc == 9) {
        size_t size = strtoull(argv[8], NULL, 10);
        char *data = xcalloc(1, size + 1), tag[SNAPSHOT_STORE_TAG_MAX];
        rc = snapshot_s3_put(s3, key, argv[6], atoi(argv[7]), data, size, tag, err, sizeof(err))
                 ? 0
                 : 1;
        printf("%s\n", rc == 0 ? tag : err);
        free(data);
    } else if (strcmp(command, "read") == 0 && argc == 8) {
        size_t len = strtoull(argv[7], NULL, 10);
        char *buf = xmalloc(len + 1);
        ssize_t n =
            snapshot_s3_read(s3, key, strtoull(argv[6], NULL, 10), buf, len, err, sizeof(err));
        rc = n >= 0 ? 0 : 1;
        if (n >= 0)
            printf("%zd\n", n);
        else
            printf("%s\n", err);
        free(buf);
    } else if (strcmp(command, "delete") == 0 && argc == 6) {
        rc = snapshot_s3_delete(s3, key, err, sizeof(err)) ? 0 : 1;
        printf("%s\n", rc == 0 ? "deleted" : err);
    } else {
        rc = usage();
    }
    snapshot_s3_close(s3);
    return rc;
}
