/* files.c -- whole-file reads, atomic writes and directory trees. */
#define _GNU_SOURCE
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

char *agent_files_read(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *buf;
    size_t n = 0;

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return NULL;
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    buf = xmalloc((size_t)st.st_size + 1);
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* shrank meanwhile: keep what there is */
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len != NULL)
        *len = n;
    return buf;
}

/* Write all of data to fd; false with errno set. */
static bool write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        data += w;
        len -= (size_t)w;
    }
    return true;
}

/* Make a rename in the directory of path durable (best effort). */
static void sync_dir_of(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int fd;

    if (slash == dir)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    fd = open(slash != NULL ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

bool agent_files_write_atomic(const char *path, const void *data, size_t len, int mode, char *err,
                              size_t errsize)
{
    char *tmp = xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    bool ok;

    if (fd < 0) {
        snprintf(err, errsize, "could not create file \"%s\": %s", tmp, strerror(errno));
        free(tmp);
        return false;
    }
    ok = fchmod(fd, (mode_t)mode) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
    if (!ok)
        snprintf(err, errsize, "could not write file \"%s\": %s", tmp, strerror(errno));
    close(fd);
    if (ok && rename(tmp, path) != 0) {
        snprintf(err, errsize, "could not rename file \"%s\" to \"%s\": %s", tmp, path,
                 strerror(errno));
        ok = false;
    }
    if (ok)
        sync_dir_of(path);
    else
        (void)unlink(tmp);
    free(tmp);
    return ok;
}

bool agent_files_mkdirs(const char *path, int mode, char *err, size_t errsize)
{
    char *p = xstrdup(path);

    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
            snprintf(err, errsize, "could not create directory \"%s\": %s", p, strerror(errno));
            free(p);
            return false;
        }
        if (c == '\0')
            break;
        *s = c;
    }
    free(p);
    return true;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP ? rmdir(path) : unlink(path))
        return errno;
    return 0;
}

bool agent_files_remove_tree(const char *path, char *err, size_t errsize)
{
    int rc;

    if (access(path, F_OK) != 0 && errno == ENOENT)
        return true;
    rc = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (rc != 0) {
        snprintf(err, errsize, "could not remove \"%s\": %s", path, strerror(rc > 0 ? rc : errno));
        return false;
    }
    return true;
}

/* nftw() takes no argument for its callback: the owner being given, for
 * the one walk at a time a single-threaded agent makes. */
static uid_t tree_uid;
static gid_t tree_gid;

static int chown_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    if (st->st_uid == tree_uid && st->st_gid == tree_gid)
        return 0;
    return lchown(path, tree_uid, tree_gid) != 0 ? errno : 0;
}

bool agent_files_chown_tree(const char *path, uid_t uid, gid_t gid, char *err, size_t errsize)
{
    tree_uid = uid;
    tree_gid = gid;
    int rc = nftw(path, chown_one, 16, FTW_PHYS);
    if (rc != 0) {
        snprintf(err, errsize, "could not give \"%s\" to uid %d: %s", path, (int)uid,
                 strerror(rc > 0 ? rc : errno));
        return false;
    }
    return true;
}
