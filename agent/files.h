/* files.h -- the few file-system chores of the agent: whole-file reads,
 * atomic private writes, directory trees. */
#ifndef CAIRN_AGENT_FILES_H
#define CAIRN_AGENT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Read the whole file at path into a new NUL-terminated buffer (the caller
 * frees it) of at most max bytes; *len (may be NULL) gets its length.
 * Returns NULL with errno set when the file cannot be read or is larger. */
char *agent_files_read(const char *path, size_t max, size_t *len);

/* Replace the file at path with data, atomically and durably: write
 * PATH.tmp with the given mode, fsync it, rename it over path, fsync the
 * directory. A reader sees the old file or the new one, never a mix.
 * Returns false with a message in err. */
bool agent_files_write_atomic(const char *path, const void *data, size_t len, int mode, char *err,
                              size_t errsize);

/* Create path and its missing parents with the given mode (existing
 * directories are fine). Returns false with a message in err. */
bool agent_files_mkdirs(const char *path, int mode, char *err, size_t errsize);

/* Give path and everything below it (symbolic links themselves, never
 * what they point to) to uid:gid. Returns false with a message in err. */
bool agent_files_chown_tree(const char *path, uid_t uid, gid_t gid, char *err, size_t errsize);

/* Remove path and everything below it, not following symbolic links. A
 * missing path is success. Returns false with a message in err. */
bool agent_files_remove_tree(const char *path, char *err, size_t errsize);

#endif
