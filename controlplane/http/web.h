/* web.h -- the web console's files, served from --web-root.
 *
 * Every path outside the API that no other route names is a file below the
 * web root (the tail wildcard in routes.c). "/", and a directory's path
 * ending in '/', is that directory's index.html; a directory named without
 * the '/' is redirected to it, so the page's relative links resolve.
 *
 * What may be served is decided twice. The path is refused outright when a
 * segment starts with '.' (so no "..", no "." and no dot-file) or is empty
 * (but the last). Then it is opened one segment at a time below the root,
 * never through a symbolic link, and served only when it is a regular
 * file. Refused, missing and not configured alike get a small HTML 404.
 *
 * A file is streamed from its descriptor with a Content-Type from its
 * extension, an ETag made of its size and modification time, and
 * Cache-Control: no-cache: a browser revalidates every file (an
 * If-None-Match naming the ETag gets a bodiless 304), so a new console is
 * picked up on the next load without hashed file names. */
#ifndef CAIRN_WEB_H
#define CAIRN_WEB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "http.h"

/* Room for an ETag from web_etag(), its quotes and NUL included. */
#define WEB_ETAG_MAX 64

/* The media type of a file by the extension of its name (the text after
 * the last '.' of its last segment, of any case): html, css, js, mjs, svg,
 * png, ico, json, woff2, map and txt; application/octet-stream for any
 * other. Text types carry charset=utf-8. Static strings. */
const char *web_content_type(const char *name);

/* Whether tail, a decoded path below the web root without its leading '/',
 * may name a file: no segment starts with '.', and none is empty but the
 * last (which stands for a directory's index.html). Pure. */
bool web_path_allowed(const char *tail);

/* Write the ETag of the file st describes to out (WEB_ETAG_MAX bytes): a
 * quoted string of its size and modification time, which change whenever
 * the file is rewritten or replaced. */
void web_etag(const struct stat *st, char *out);

/* Whether an If-None-Match value (a comma-separated list of entity tags,
 * or "*") names etag, by the weak comparison of RFC 9110 section 8.8.3.2
 * (a "W/" prefix is ignored). A malformed list names nothing. Pure. */
bool web_etag_matches(const char *if_none_match, const char *etag);

/* The console's route handler, for GET and HEAD: the file, a redirect to a
 * directory's index, 304, or the HTML 404 page. */
void web_serve(struct http_request *req);

#endif
