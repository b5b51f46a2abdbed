/* http_check.h -- what arrives before routing, checked as the hostile bytes
 * it may be: the method, the request target (decoded into the path the
 * router sees, its query checked), the header fields and the framing of
 * the body. Pure, so it can be tested and fuzzed alone.
 *
 * libmicrohttpd hands cairnd these as C strings: a NUL decoded from %00
 * would cut a path short ("/v1/clusters/x%00/auth" reaching the cluster's
 * route), bytes that are not UTF-8 would reach jansson, which refuses them.
 * So cairnd decodes the raw target itself and routes on the whole of it. */
#ifndef CAIRN_HTTP_CHECK_H
#define CAIRN_HTTP_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Longest method cairnd reads; every route's is far shorter. */
#define HTTP_CHECK_METHOD_MAX 16

/* Whether method is an HTTP token (RFC 9110 section 5.6.2) of 1 to
 * HTTP_CHECK_METHOD_MAX characters. */
bool http_check_method(const char *method);

/* Decode the raw request target (origin form: a path, then optionally '?'
 * and a query) into the path the router matches, newly allocated into
 * *path (the caller frees it). Refused, with *path NULL and the reason in
 * err: a target that does not start with '/'; a raw byte that is not
 * visible ASCII; a '%' not followed by two hex digits; a decoded control
 * character (NUL included) anywhere; an encoded '/' in the path (it would
 * split a segment); a path, or a query name or value once decoded ('+' is a
 * space there), that is not UTF-8. */
bool http_check_target(const char *target, char **path, char *err, size_t errsize);

/* Whether a header field's name is a token and its value holds no control
 * character but tabs (RFC 9110 section 5.5). */
bool http_check_header(const char *name, const char *value);

/* The framing of a request body, from every Content-Length value the
 * request sent (nlengths of them) and every Transfer-Encoding value
 * (ncodings). Returns 0 when cairnd can read it; 400 for a Content-Length
 * that is not a decimal number, for several that differ, or for both
 * headers at once (a smuggling vector, RFC 9112 section 6.3); 501 for a
 * transfer coding other than one "chunked". err says which. */
int http_check_framing(const char *const *lengths, size_t nlengths, const char *const *codings,
                       size_t ncodings, char *err, size_t errsize);

/* Whether a Content-Type is one a JSON body may come as:
 * application/json or application/merge-patch+json, parameters allowed. */
bool http_check_json_type(const char *type);

/* Whether a body sent with Content-Encoding coding (NULL: none) can be
 * read, and if so whether it is gzip (*gzip). */
bool http_check_coding(const char *coding, bool *gzip);

#endif
