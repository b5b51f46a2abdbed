/* catalog.c -- engine names, version strings, and finding and probing the
 * engine binaries installed on this machine. */
#define _GNU_SOURCE /* pipe2 */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "info.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

const char *const engine_kind_names[ENGINE_KIND_COUNT + 1] = {
    [ENGINE_REDIS] = "redis",
    [ENGINE_VALKEY] = "valkey",
    [ENGINE_KIND_COUNT] = NULL,
};

/* Everything else Cairn knows about each engine, indexed by enum
 * engine_kind. An engine forked from an earlier one keeps reporting the
 * earlier one's INFO version key (Valkey has a redis_version), so each
 * comes after the engine it was forked from. */
static const struct kind_info {
    const char *binary;
    const char *banner;   /* how its --version line starts */
    const char *info_key; /* the INFO server field with its version */
    const char *first_line;
} kinds[ENGINE_KIND_COUNT] = {
    [ENGINE_REDIS] = {"redis-server", "Redis server v=", "redis_version", "7.0"},
    [ENGINE_VALKEY] = {"valkey-server", "Valkey server v=", "valkey_version", "7.2"},
};

/* Bytes of --version output kept; the line we parse is about 100. */
#define PROBE_OUTPUT_MAX 1024

const char *engine_kind_name(enum engine_kind kind)
{
    return engine_kind_names[kind];
}

bool engine_kind_from_name(const char *name, enum engine_kind *out)
{
    for (int k = 0; k < ENGINE_KIND_COUNT; k++) {
        if (strcmp(name, engine_kind_names[k]) == 0) {
            *out = (enum engine_kind)k;
            return true;
        }
    }
    return false;
}

bool engine_kind_known(const char *name)
{
    enum engine_kind ignored;
    return name != NULL && engine_kind_from_name(name, &ignored);
}

bool engine_kind_from_info(const struct engine_info *info, enum engine_kind *kind,
                           const char **version)
{
    /* The latest fork first: its own key is the one that names it. */
    for (int k = ENGINE_KIND_COUNT - 1; k >= 0; k--) {
        const char *v = engine_info_get(info, "server", kinds[k].info_key);
        if (v == NULL)
            continue;
        if (kind != NULL)
            *kind = (enum engine_kind)k;
        if (version != NULL)
            *version = v;
        return true;
    }
    return false;
}

const char *engine_kind_binary(enum engine_kind kind)
{
    return kinds[kind].binary;
}

const char *engine_kind_first_line(enum engine_kind kind)
{
    return kinds[kind].first_line;
}

/* Read a version component at *p: 1 to 4 digits, no leading zero (but "0"
 * itself). Advances *p past it. */
static bool component(const char **p, int *out)
{
    const char *s = *p;
    int v = 0, n = 0;

    while (s[n] >= '0' && s[n] <= '9') {
        if (n == 4)
            return false;
        v = v * 10 + (s[n] - '0');
        n++;
    }
    if (n == 0 || (n > 1 && s[0] == '0'))
        return false;
    *p = s + n;
    if (out != NULL)
        *out = v;
    return true;
}

/* Check that the n dot-separated components at s end exactly at end. */
static bool dotted(const char *s, const char *end, int n, int *values)
{
    for (int i = 0; i < n; i++) {
        if (i > 0 && *s++ != '.')
            return false;
        if (!component(&s, values != NULL ? &values[i] : NULL))
            return false;
    }
    return s == end;
}

bool engine_line_parse(const char *text, int *major, int *minor)
{
    int v[2];

    if (!dotted(text, text + strlen(text), 2, v))
        return false;
    if (major != NULL)
        *major = v[0];
    if (minor != NULL)
        *minor = v[1];
    return true;
}

int engine_line_compare(const char *a, const char *b)
{
    int amaj = 0, amin = 0, bmaj = 0, bmin = 0;

    engine_line_parse(a, &amaj, &amin);
    engine_line_parse(b, &bmaj, &bmin);
    if (amaj != bmaj)
        return amaj < bmaj ? -1 : 1;
    return amin < bmin ? -1 : amin > bmin;
}

bool engine_version_line(const char *version, char *line)
{
    const char *second_dot;

    if (!dotted(version, version + strlen(version), 3, NULL))
        return false;
    second_dot = strchr(strchr(version, '.') + 1, '.');
    /* At most 4 + 1 + 4 characters, so it fits ENGINE_LINE_MAX. */
    memcpy(line, version, (size_t)(second_dot - version));
    line[second_dot - version] = '\0';
    return true;
}

bool engine_parse_version(const char *text, enum engine_kind *kind, char *version)
{
    for (int k = 0; k < ENGINE_KIND_COUNT; k++) {
        size_t blen = strlen(kinds[k].banner);
        if (strncmp(text, kinds[k].banner, blen) != 0)
            continue;
        const char *v = text + blen;
        const char *end = v + strcspn(v, " \n");
        if (!dotted(v, end, 3, NULL))
            return false;
        /* Three components of at most 4 digits: at most 14 characters. */
        memcpy(version, v, (size_t)(end - v));
        version[end - v] = '\0';
        *kind = (enum engine_kind)k;
        return true;
    }
    return false;
}

/* Check that path names an absolute, regular, executable file. */
static bool check_executable(const char *path, char *err, size_t errsize)
{
    struct stat st;

    if (path[0] != '/') {
        snprintf(err, errsize, "engine binary path \"%s\" is not absolute", path);
        return false;
    }
    if (stat(path, &st) != 0) {
        int saved = errno;
        snprintf(err, errsize, "could not stat engine binary \"%s\": %s", path, strerror(saved));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errsize, "\"%s\" is a directory, not an engine binary", path);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsize, "\"%s\" is not a regular file", path);
        return false;
    }
    if (access(path, X_OK) != 0) {
        snprintf(err, errsize, "\"%s\" is not executable", path);
        return false;
    }
    return true;
}

/* Start `path --version` in a process group of its own, stdout into a new
 * pipe whose read end goes to *fd. Returns 0 or an errno value. */
static int spawn_version(const char *path, pid_t *pid, int *fd)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    char *argv[] = {(char *)path, (char *)"--version", NULL};
    int fds[2], rc;

    /* Close-on-exec, so that no other child this process starts meanwhile
     * holds the write end open and keeps us from seeing end-of-file. */
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    /* The caller's signal mask and ignored signals (SIGPIPE, often) must
     * not leak into the child. */
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    /* posix_spawn rather than fork: it is safe in a multi-threaded
     * process (cairnd) and reports a failed exec as its return value. */
    rc = posix_spawn(pid, path, &actions, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0)
        close(fds[0]);
    else
        *fd = fds[0];
    return rc;
}

/* Read fd until end-of-file or the deadline, keeping the first
 * bufsize - 1 bytes in buf (NUL-terminated) and draining the rest so the
 * child never blocks on a full pipe. Returns false on timeout; *rerr gets
 * an errno value when reading failed. */
static bool read_until(int fd, int64_t deadline, char *buf, size_t bufsize, int *rerr)
{
    size_t len = 0;
    char chunk[512];

    *rerr = 0;
    buf[0] = '\0';
    for (;;) {
        int64_t left = deadline - time_mono_us();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)((left + 999) / 1000));
        if (n < 0 && errno != EINTR) {
            *rerr = errno;
            return true;
        }
        if (n <= 0)
            continue;
        ssize_t r = read(fd, chunk, sizeof(chunk));
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            *rerr = errno;
            return true;
        }
        if (r == 0)
            return true;
        size_t keep = bufsize - 1 - len;
        if ((size_t)r < keep)
            keep = (size_t)r;
        memcpy(buf + len, chunk, keep);
        len += keep;
        buf[len] = '\0';
    }
}

/* Wait for pid to exit until the deadline. Returns 1 when it exited
 * (*status set), 0 on timeout, -1 when it can no longer be waited for
 * (someone else's waitpid(-1) reaped it). */
static int wait_until(pid_t pid, int64_t deadline, int *status)
{
    const struct timespec pause = {.tv_nsec = 2 * 1000 * 1000};

    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid)
            return 1;
        if (w < 0 && errno == ECHILD)
            return -1;
        if (w < 0 && errno == EINTR)
            continue;
        if (time_mono_us() >= deadline)
            return 0;
        nanosleep(&pause, NULL);
    }
}

/* Kill the whole process group of a child not yet reaped (so its id
 * cannot have been reused) and reap it. */
static void kill_and_reap(pid_t pid)
{
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Copy the first line of text into out, printable ASCII only, for an error
 * message. */
static void printable_line(const char *text, char *out, size_t outsize)
{
    size_t o = 0;

    for (; *text != '\0' && *text != '\n' && o + 1 < outsize; text++)
        out[o++] = (*text >= 0x20 && *text < 0x7f) ? *text : '?';
    out[o] = '\0';
}

bool engine_probe(const char *path, int timeout_ms, struct engine_binary *out, char *err,
                  size_t errsize)
{
    struct engine_binary bin = {0};
    char output[PROBE_OUTPUT_MAX], shown[81];
    int64_t deadline = time_mono_us() + (int64_t)timeout_ms * 1000;
    int fd = -1, rerr, status = 0, waited;
    pid_t pid;
    bool finished;

    if (!check_executable(path, err, errsize))
        return false;
    int rc = spawn_version(path, &pid, &fd);
    if (rc != 0) {
        snprintf(err, errsize, "could not run \"%s\": %s", path, strerror(rc));
        return false;
    }
    finished = read_until(fd, deadline, output, sizeof(output), &rerr);
    close(fd);
    waited = finished ? wait_until(pid, deadline, &status) : 0;
    if (waited == 0) {
        kill_and_reap(pid);
        snprintf(err, errsize, "\"%s --version\" did not finish within %d ms", path, timeout_ms);
        return false;
    }
    if (rerr != 0) {
        snprintf(err, errsize, "could not read the output of \"%s --version\": %s", path,
                 strerror(rerr));
        return false;
    }
    /* waited < 0: the exit status went to someone else; the output decides. */
    if (waited > 0 && WIFSIGNALED(status)) {
        snprintf(err, errsize, "\"%s --version\" was killed by signal %d", path, WTERMSIG(status));
        return false;
    }
    if (waited > 0 && WEXITSTATUS(status) != 0) {
        snprintf(err, errsize, "\"%s --version\" exited with status %d", path, WEXITSTATUS(status));
        return false;
    }
    if (!engine_parse_version(output, &bin.kind, bin.version)) {
        printable_line(output, shown, sizeof(shown));
        snprintf(err, errsize, "\"%s\" is not a Redis or Valkey server: --version printed \"%s\"",
                 path, shown);
        return false;
    }
    engine_version_line(bin.version, bin.line);
    bin.path = xstrdup(path);
    *out = bin;
    return true;
}

void engine_binary_clear(struct engine_binary *bin)
{
    free(bin->path);
    memset(bin, 0, sizeof(*bin));
}

void engine_binaries_free(struct engine_binary *bins, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(bins[i].path);
    free(bins);
}

/* Binaries found so far, each with its resolved path. */
struct found {
    struct engine_binary *bins;
    char **real;
    size_t count, cap;
};

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

/* Whether real is already known. If so, take path instead of the known one
 * when only path carries the engine's own binary name. */
static bool merge_duplicate(struct found *f, const char *real, const char *path)
{
    for (size_t i = 0; i < f->count; i++) {
        if (strcmp(f->real[i], real) != 0)
            continue;
        const char *own = engine_kind_binary(f->bins[i].kind);
        if (strcmp(base_name(f->bins[i].path), own) != 0 && strcmp(base_name(path), own) == 0) {
            free(f->bins[i].path);
            f->bins[i].path = xstrdup(path);
        }
        return true;
    }
    return false;
}

/* Probe path and add it unless it is a duplicate. A failure is an error
 * when required, otherwise a warning. */
static bool consider(struct found *f, const char *path, bool required, int timeout_ms, char *err,
                     size_t errsize)
{
    struct engine_binary bin;
    char msg[512], q1[256], q2[600];
    char *real = NULL;
    bool ok = check_executable(path, msg, sizeof(msg));

    if (ok) {
        real = realpath(path, NULL);
        if (real == NULL) {
            int saved = errno;
            snprintf(msg, sizeof(msg), "could not resolve \"%s\": %s", path, strerror(saved));
            ok = false;
        }
    }
    if (ok && merge_duplicate(f, real, path)) {
        free(real);
        return true;
    }
    if (ok)
        ok = engine_probe(path, timeout_ms, &bin, msg, sizeof(msg));
    if (!ok) {
        free(real);
        if (required) {
            snprintf(err, errsize, "%s", msg);
            return false;
        }
        log_warn("engine binary skipped", "path=%s error=%s", log_quote(q1, sizeof(q1), path),
                 log_quote(q2, sizeof(q2), msg));
        return true;
    }
    if (f->count == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 4;
        f->bins = xrealloc(f->bins, f->cap * sizeof(*f->bins));
        f->real = xrealloc(f->real, f->cap * sizeof(*f->real));
    }
    f->bins[f->count] = bin;
    f->real[f->count] = real;
    f->count++;
    return true;
}

/* Consider every engine binary name in each absolute directory of
 * search_path. */
static void scan_search_path(struct found *f, const char *search_path, int timeout_ms)
{
    const char *p = search_path;

    while (p != NULL && *p != '\0') {
        size_t len = strcspn(p, ":");
        if (len > 0 && p[0] == '/') {
            for (int k = 0; k < ENGINE_KIND_COUNT; k++) {
                struct stat st;
                char *candidate = xasprintf("%.*s/%s", (int)len, p, kinds[k].binary);
                /* Absent is the common case, and no reason to warn. */
                if (stat(candidate, &st) == 0)
                    consider(f, candidate, false, timeout_ms, NULL, 0);
                free(candidate);
            }
        }
        p += len;
        if (*p == ':')
            p++;
    }
}

bool engine_discover(const char *search_path, const char *const *extra, size_t n_extra,
                     int timeout_ms, struct engine_binary **out, size_t *count, char *err,
                     size_t errsize)
{
    struct found f = {0};
    bool ok = true;

    scan_search_path(&f, search_path != NULL ? search_path : getenv("PATH"), timeout_ms);
    for (size_t i = 0; i < n_extra && ok; i++)
        ok = consider(&f, extra[i], true, timeout_ms, err, errsize);
    for (size_t i = 0; i < f.count; i++)
        free(f.real[i]);
    free(f.real);
    if (!ok) {
        engine_binaries_free(f.bins, f.count);
        return false;
    }
    *out = f.bins;
    *count = f.count;
    return true;
}
