/* snapshot_store.c -- the snapshot store (snapshot_store.h): a directory on
 * cairnd's side, where an upload is written to "<key>.part" and renamed to
 * its key, synced, once whole; or an S3-compatible object store
 * (snapshot_s3.h). */
#include "snapshot_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

struct snapshot_store {
    char *where; /* the directory, or the s3:// URL */
    void *s3;    /* an S3 store (not yet): NULL, a directory */
};

#define KEY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-./"

/* A key names a file below the directory and nothing else. */
static bool key_ok(const char *key, char *err, size_t errsize)
{
    if (key[0] != '\0' && key[0] != '/' && strspn(key, KEY_CHARS) == strlen(key) &&
        strstr(key, "..") == NULL && strlen(key) < 200)
        return true;
    snprintf(err, errsize, "not a snapshot object's key: %s", key);
    return false;
}

/* mkdir -p of path's first len bytes. */
static bool make_dirs(const char *path, size_t len, char *err, size_t errsize)
{
    char buf[PATH_MAX];
    if (len >= sizeof(buf)) {
        snprintf(err, errsize, "the path is too long: %s", path);
        return false;
    }
    memcpy(buf, path, len);
    buf[len] = '\0';
    for (char *p = buf + 1;; p++) {
        bool end = *p == '\0';
        if (*p != '/' && !end)
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errsize, "cannot make the directory %s: %s", buf, strerror(errno));
            return false;
        }
        if (end)
            return true;
        *p = '/';
    }
}

struct snapshot_store *snapshot_store_open(const char *url, const struct snapshot_s3_config *s3,
                                           char *err, size_t errsize)
{
    struct snapshot_store *s = xcalloc(1, sizeof(*s));
    s->where = xstrdup(url);
    if (strncmp(url, "s3://", 5) == 0) {
        const char *bucket = url + 5, *slash = strchr(bucket, '/');
        char *name = slash != NULL ? xstrndup(bucket, (size_t)(slash - bucket)) : xstrdup(bucket);
        char *prefix = xstrdup(slash != NULL ? slash + 1 : "");
        size_t plen = strlen(prefix);
        while (plen > 0 && prefix[plen - 1] == '/')
            prefix[--plen] = '\0';
        if (name[0] == '\0')
            snprintf(err, errsize, "the snapshot store %s names no bucket", url);
        else
            s->s3 = snapshot_s3_open(name, prefix, s3, err, errsize);
        free(name);
        free(prefix);
        if (s->s3 != NULL)
            return s;
    } else {
        struct stat st;
        size_t len = strlen(url);
        while (len > 1 && url[len - 1] == '/')
            s->where[--len] = '\0';
        if (len > 0 && make_dirs(s->where, len, err, errsize)) {
            if (stat(s->where, &st) == 0 && S_ISDIR(st.st_mode) && access(s->where, W_OK) == 0)
                return s;
            snprintf(err, errsize, "the snapshot store %s is not a directory cairnd can write",
                     s->where);
        } else if (len == 0) {
            snprintf(err, errsize, "the snapshot store is named by an empty path");
        }
    }
    snapshot_store_close(s);
    return NULL;
}

void snapshot_store_close(struct snapshot_store *s)
{
    if (s == NULL)
        return;
    snapshot_s3_close(s->s3);
    free(s->where);
    free(s);
}

const char *snapshot_store_kind(const struct snapshot_store *s)
{
    return s->s3 != NULL ? "s3" : "directory";
}

const char *snapshot_store_where(const struct snapshot_store *s)
{
    return s->where;
}

/* The file of key (part: the upload's, before it is whole). */
static char *file_of(const struct snapshot_store *s, const char *key, bool part)
{
    return xasprintf("%s/%s%s", s->where, key, part ? ".part" : "");
}

static bool fail_errno(const char *what, const char *path, char *err, size_t errsize)
{
    snprintf(err, errsize, "cannot %s %s: %s", what, path, strerror(errno));
    return false;
}

bool snapshot_store_begin(struct snapshot_store *s, const char *key,
                          char upload_id[SNAPSHOT_STORE_ID_MAX], char *err, size_t errsize)
{
    upload_id[0] = '\0';
    if (!key_ok(key, err, errsize))
        return false;
    if (s->s3 != NULL)
        return snapshot_s3_begin(s->s3, key, upload_id, err, errsize);
    char *path = file_of(s, key, true);
    bool ok = make_dirs(path, (size_t)(strrchr(path, '/') - path), err, errsize);
    int fd = ok ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (ok && fd < 0)
        ok = fail_errno("create", path, err, errsize);
    if (fd >= 0)
        close(fd);
    free(path);
    return ok;
}

bool snapshot_store_put(struct snapshot_store *s, const char *key, const char *upload_id, int part,
                        uint64_t offset, const void *data, size_t len,
                        char tag[SNAPSHOT_STORE_TAG_MAX], char *err, size_t errsize)
{
    tag[0] = '\0';
    if (!key_ok(key, err, errsize))
        return false;
    if (s->s3 != NULL)
        return snapshot_s3_put(s->s3, key, upload_id, part, data, len, tag, err, errsize);
    char *path = file_of(s, key, true);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 || fail_errno("open", path, err, errsize);
    for (size_t done = 0; ok && done < len;) {
        ssize_t n = pwrite(fd, (const char *)data + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno != EINTR)
            ok = fail_errno("write", path, err, errsize);
        else if (n > 0)
            done += (size_t)n;
    }
    /* A part put again after later ones (a retried upload) ends the file. */
    if (ok && ftruncate(fd, (off_t)(offset + len)) != 0)
        ok = fail_errno("truncate", path, err, errsize);
    if (fd >= 0)
        close(fd);
    free(path);
    return ok;
}

/* Make a rename in directory dir durable. */
static void sync_dir(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

bool snapshot_store_finish(struct snapshot_store *s, const char *key, const char *upload_id,
                           const char *const *tags, int nparts, uint64_t size, char *err,
                           size_t errsize)
{
    if (!key_ok(key, err, errsize))
        return false;
    if (s->s3 != NULL)
        return snapshot_s3_finish(s->s3, key, upload_id, tags, nparts, err, errsize);
    char *part = file_of(s, key, true), *whole = file_of(s, key, false);
    struct stat st;
    int fd = open(part, O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 || fail_errno("open", part, err, errsize);
    if (ok && (fstat(fd, &st) != 0 || (uint64_t)st.st_size != size)) {
        snprintf(err, errsize, "%s holds %lld bytes, not the %llu uploaded", part,
                 (long long)st.st_size, (unsigned long long)size);
        ok = false;
    }
    if (ok && fsync(fd) != 0)
        ok = fail_errno("sync", part, err, errsize);
    if (fd >= 0)
        close(fd);
    if (ok && rename(part, whole) != 0)
        ok = fail_errno("rename", part, err, errsize);
    if (ok)
        sync_dir(whole);
    free(part);
    free(whole);
    return ok;
}

bool snapshot_store_abort(struct snapshot_store *s, const char *key, const char *upload_id,
                          char *err, size_t errsize)
{
    if (!key_ok(key, err, errsize))
        return false;
    if (s->s3 != NULL)
        return snapshot_s3_abort(s->s3, key, upload_id, err, errsize);
    char *path = file_of(s, key, true);
    bool ok = unlink(path) == 0 || errno == ENOENT || fail_errno("remove", path, err, errsize);
    free(path);
    return ok;
}

ssize_t snapshot_store_read(struct snapshot_store *s, const char *key, uint64_t offset, void *buf,
                            size_t len, char *err, size_t errsize)
{
    if (!key_ok(key, err, errsize))
        return -1;
    if (s->s3 != NULL)
        return snapshot_s3_read(s->s3, key, offset, buf, len, err, errsize);
    char *path = file_of(s, key, false);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = -1;
    if (fd < 0) {
        if (errno == ENOENT)
            snprintf(err, errsize, "the snapshot file %s is missing", path);
        else
            fail_errno("open", path, err, errsize);
    } else {
        do
            n = pread(fd, buf, len, (off_t)offset);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            fail_errno("read", path, err, errsize);
        close(fd);
    }
    free(path);
    return n;
}

bool snapshot_store_delete(struct snapshot_store *s, const char *key, char *err, size_t errsize)
{
    if (!key_ok(key, err, errsize))
        return false;
    if (s->s3 != NULL)
        return snapshot_s3_delete(s->s3, key, err, errsize);
    char *path = file_of(s, key, false), *part = file_of(s, key, true);
    bool ok = (unlink(path) == 0 || errno == ENOENT || fail_errno("remove", path, err, errsize)) &&
              (unlink(part) == 0 || errno == ENOENT || fail_errno("remove", part, err, errsize));
    if (ok) {
        /* The snapshot's directory goes with its last file. */
        char *slash = strrchr(path, '/');
        *slash = '\0';
        if (strcmp(path, s->where) != 0)
            rmdir(path);
    }
    free(path);
    free(part);
    return ok;
}
