/* web.c -- the web console's files: path checks, media types, ETags and
 * the handler that streams them from --web-root. */
#include "web.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

/* Flags every file and directory below the root is opened with: never
 * through a symbolic link (ELOOP), and without blocking on a FIFO. */
#define OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

static const char not_found_page[] = "<!doctype html>\n"
                                     "<html lang=\"en\">\n"
                                     "<meta charset=\"utf-8\">\n"
                                     "<title>Not found</title>\n"
                                     "<h1>Not found</h1>\n"
                                     "<p>Nothing is served at this address.</p>\n"
                                     "</html>\n";

const char *web_content_type(const char *name)
{
    static const struct {
        const char *extension, *type;
    } types[] = {
        {"html", "text/html; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"ico", "image/vnd.microsoft.icon"},
        {"json", "application/json"},
        {"woff2", "font/woff2"},
        {"map", "application/json"},
        {"txt", "text/plain; charset=utf-8"},
    };
    const char *base = strrchr(name, '/');
    const char *dot = strrchr(base != NULL ? base : name, '.');

    for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcasecmp(dot + 1, types[i].extension) == 0)
            return types[i].type;
    }
    return "application/octet-stream";
}

bool web_path_allowed(const char *tail)
{
    for (const char *seg = tail;; seg++) {
        size_t len = strcspn(seg, "/");
        if (seg[0] == '.' || (len == 0 && seg[len] != '\0'))
            return false;
        seg += len;
        if (*seg == '\0')
            return true;
    }
}

void web_etag(const struct stat *st, char *out)
{
    snprintf(out, WEB_ETAG_MAX, "\"%llx-%llx.%09ld\"", (unsigned long long)st->st_size,
             (unsigned long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
}

bool web_etag_matches(const char *if_none_match, const char *etag)
{
    const char *p = if_none_match;
    size_t n = strlen(etag);

    for (;;) {
        p += strspn(p, " \t,");
        if (*p == '\0')
            return false;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        const char *close = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (close == NULL)
            return false;
        if ((size_t)(close + 1 - p) == n && memcmp(p, etag, n) == 0)
            return true;
        p = close + 1;
    }
}

/* Open path (relative, no empty segment) below root one segment at a time,
 * so that no symbolic link below the root is followed (the root itself may
 * be one). Returns the descriptor, or -1 with errno set. */
static int open_below(const char *root, const char *path)
{
    char *copy = xstrdup(path), *save = NULL;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    for (char *seg = strtok_r(copy, "/", &save); seg != NULL && fd >= 0;
         seg = strtok_r(NULL, "/", &save)) {
        int next = openat(fd, seg, OPEN_FLAGS);
        int saved = errno;
        close(fd);
        errno = saved;
        fd = next;
    }
    free(copy);
    return fd;
}

/* The console runs only its own files: no inline script or style, no other
 * origin, not framed; it talks to the API it came from. */
#define WEB_CSP                                                                                    \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "                    \
    "form-action 'self'; frame-ancestors 'none'"

static void reply_not_found(struct http_request *req)
{
    http_reply_text(req, 404, xstrdup(not_found_page), "text/html; charset=utf-8");
}

/* "/dir" names a directory: send the browser to "/dir/", query kept, so
 * that the index's relative links resolve inside it. */
static void redirect_to_directory(struct http_request *req)
{
    size_t path_len = strcspn(req->target, "?");
    char *location = xasprintf("%.*s/%s", (int)path_len, req->target, req->target + path_len);

    http_add_header(req, "Location", location);
    free(location);
    http_reply_empty(req, 301);
}

/* Serve the open file fd (st its status) named name: 304 when the client
 * holds this version, else the file. Takes ownership of fd. */
static void reply_file(struct http_request *req, int fd, const struct stat *st, const char *name)
{
    const char *held = http_header(req, "If-None-Match");
    char etag[WEB_ETAG_MAX];

    web_etag(st, etag);
    http_add_header(req, "ETag", etag);
    http_add_header(req, "Cache-Control", "no-cache");
    if (held != NULL && web_etag_matches(held, etag)) {
        close(fd);
        http_reply_empty(req, 304);
        return;
    }
    http_add_header(req, "X-Content-Type-Options", "nosniff");
    http_add_header(req, "Content-Security-Policy", WEB_CSP);
    http_add_header(req, "Referrer-Policy", "no-referrer");
    http_reply_file(req, 200, fd, (uint64_t)st->st_size, web_content_type(name));
}

/* Errors that mean there is nothing to serve at the path: missing, a
 * symbolic link (O_NOFOLLOW), a file where a directory was named. */
static bool nothing_there(int err)
{
    return err == ENOENT || err == ENOTDIR || err == ELOOP || err == ENAMETOOLONG;
}

/* Log why the file name could not be opened and answer 500. */
static void reply_open_error(struct http_request *req, const char *root, const char *name, int err)
{
    char qroot[512], qname[512];

    log_error("could not open a console file", "request_id=%s root=%s path=%s error=\"%s\"",
              req->request_id, log_quote(qroot, sizeof(qroot), root),
              log_quote(qname, sizeof(qname), name), strerror(err));
    http_reply_problem(req, PROBLEM_INTERNAL_ERROR, NULL,
                       "the file could not be opened; see the server log for request %s",
                       req->request_id);
}

void web_serve(struct http_request *req)
{
    const char *root = req->app->cfg.web_root, *tail = http_param(req, "*");
    if (tail == NULL)
        tail = ""; /* the row of "/" itself */
    size_t len = strlen(tail);
    bool wants_index = len == 0 || tail[len - 1] == '/'; /* "/" and "dir/": the directory's index */
    struct stat st;

    if (root == NULL || root[0] == '\0' || !web_path_allowed(tail)) {
        reply_not_found(req);
        return;
    }
    char *name = wants_index ? xasprintf("%sindex.html", tail) : xstrdup(tail);
    int fd = open_below(root, name);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        if (nothing_there(err))
            reply_not_found(req);
        else
            reply_open_error(req, root, name, err);
    } else if (S_ISREG(st.st_mode)) {
        reply_file(req, fd, &st, name);
    } else {
        close(fd);
        if (S_ISDIR(st.st_mode) && !wants_index)
            redirect_to_directory(req);
        else
            reply_not_found(req);
    }
    free(name);
}
