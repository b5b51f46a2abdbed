/* http_request.c -- what a handler does with its request (http.h): read its
 * parameters and headers, add reply headers, and reply -- with a document,
 * a problem, a file or nothing. The reply is recorded here and sent by the
 * request lifecycle in http.c. */
#include "http.h"

#include <assert.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "prefer.h"
#include "utf8.h"
#include "xalloc.h"

/* ---- replies ---------------------------------------------------------- */

/* Record the reply, taking ownership of body. Returns false, having freed
 * body, when the request was answered already: the caller frees anything
 * else it was to hand over. */
static bool set_reply(struct http_request *req, int status, char *body, size_t len,
                      const char *content_type)
{
    if (req->replied) {
        log_error("second reply to one request ignored", "request_id=%s status=%d", req->request_id,
                  status);
        free(body);
        return false;
    }
    req->replied = true;
    req->status = status;
    req->reply = body;
    req->reply_len = len;
    req->content_type = content_type;
    return true;
}

void http_add_header(struct http_request *req, const char *name, const char *value)
{
    if (req->nheaders == req->headers_room) {
        req->headers_room = req->headers_room == 0 ? 4 : req->headers_room * 2;
        req->headers = xrealloc(req->headers, req->headers_room * sizeof(req->headers[0]));
    }
    req->headers[req->nheaders++] = (struct http_header){name, xstrdup(value)};
}

/* What is sent when a document cannot be encoded: a bug of ours (a string
 * that is not UTF-8 reached jansson), answered as one, never an abort. */
static const char unencodable[] =
    "{\"type\":\"urn:cairn:problem:internal-error\",\"title\":\"Internal error\","
    "\"status\":500,\"code\":\"INTERNAL_ERROR\","
    "\"detail\":\"the reply could not be encoded; see the server log\"}";

static void reply_document(struct http_request *req, int status, json_t *doc,
                           const char *content_type)
{
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(doc);
    if (text == NULL) {
        log_error("reply could not be encoded", "request_id=%s status=%d", req->request_id, status);
        set_reply(req, 500, xstrdup(unencodable), sizeof(unencodable) - 1,
                  "application/problem+json");
        return;
    }
    set_reply(req, status, text, strlen(text), content_type);
}

void http_reply_json(struct http_request *req, int status, json_t *body)
{
    reply_document(req, status, body, "application/json");
}

void http_reply_json_text(struct http_request *req, int status, char *text)
{
    set_reply(req, status, text, strlen(text), "application/json");
}

void http_reply_text(struct http_request *req, int status, char *text, const char *content_type)
{
    set_reply(req, status, text, strlen(text), content_type);
}

void http_reply_file(struct http_request *req, int status, int fd, uint64_t size,
                     const char *content_type)
{
    if (set_reply(req, status, NULL, (size_t)size, content_type))
        req->reply_fd = fd;
    else
        close(fd);
}

void http_reply_empty(struct http_request *req, int status)
{
    set_reply(req, status, NULL, 0, NULL);
}

/* The problem document for code, with the extension members of members
 * (an object, taken; NULL for none) added, as the reply. */
static void reply_problem(struct http_request *req, enum problem_code code, json_t *members,
                          const char *detail_fmt, va_list ap)
{
    const struct problem_info *info = problem_info(code);
    char raw[1024], detail[1024], instance[512];

    assert(info->status != 0); /* an operation's own code is never a reply */
    /* A detail may quote what the client sent, and vsnprintf may cut a
     * character in two: scrubbed, it is always UTF-8 for jansson. */
    vsnprintf(raw, sizeof(raw), detail_fmt, ap);
    utf8_scrub(raw, detail, sizeof(detail));
    if (req->path != NULL) {
        utf8_scrub(req->path, instance, sizeof(instance));
    } else { /* a target refused before decoding: its path part, as sent */
        char sent[sizeof(instance)];
        snprintf(sent, sizeof(sent), "%.*s", (int)strcspn(req->target, "?"), req->target);
        utf8_scrub(sent, instance, sizeof(instance));
    }
    json_t *doc = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "type", info->type, "title",
                            info->title, "status", info->status, "detail", detail, "code",
                            info->code, "instance", instance, "request_id", req->request_id);
    if (members != NULL)
        json_object_update(doc, members);
    json_decref(members);
    if (info->status == 401)
        http_add_header(req, "WWW-Authenticate", "Bearer realm=\"cairn\"");
    reply_document(req, info->status, doc, "application/problem+json");
}

void http_reply_problem(struct http_request *req, enum problem_code code, json_t *errors,
                        const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    reply_problem(req, code, errors != NULL ? json_pack("{s:o}", "errors", errors) : NULL,
                  detail_fmt, ap);
    va_end(ap);
}

void http_reply_problem_with(struct http_request *req, enum problem_code code, json_t *members,
                             const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    reply_problem(req, code, members, detail_fmt, ap);
    va_end(ap);
}

void http_reply_error(struct http_request *req, struct problem *p)
{
    assert(p->set);
    json_t *errors = p->errors;
    p->errors = NULL;
    if (p->code == PROBLEM_INTERNAL_ERROR && p->detail[0] == '\0')
        http_reply_problem(req, p->code, errors,
                           "the request failed on a database error; see the server log for "
                           "request %s",
                           req->request_id);
    else if (p->detail[0] == '\0' && errors != NULL)
        http_reply_problem(req, p->code, errors, "%zu field(s) of the request body are invalid",
                           json_array_size(errors));
    else
        http_reply_problem(req, p->code, errors, "%s", p->detail);
    problem_clear(p);
}

void http_reply_db_error(struct http_request *req, enum db_status status)
{
    struct problem p = {0};
    (void)problem_db(&p, status == DB_REFUSED ? DB_ERROR : status);
    http_reply_error(req, &p);
}

const char *http_query(struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_header(struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

struct prefer_scan {
    bool found;
    long long seconds;
};

static enum MHD_Result scan_prefer(void *cls, enum MHD_ValueKind kind, const char *name,
                                   const char *value)
{
    struct prefer_scan *ps = cls;
    (void)kind;

    /* Several Prefer headers are one list (RFC 9110 §5.3): the first wait
     * of the first header that has one is the first of the list. */
    if (strcasecmp(name, "Prefer") == 0 && value != NULL &&
        prefer_wait(value, &ps->seconds) == PREFER_WAIT)
        ps->found = true;
    return ps->found ? MHD_NO : MHD_YES;
}

bool http_prefer_wait(struct http_request *req, long long *seconds)
{
    struct prefer_scan ps = {false, 0};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, scan_prefer, &ps);
    if (ps.found)
        *seconds = ps.seconds;
    return ps.found;
}

const char *http_param(struct http_request *req, const char *name)
{
    return route_param(&req->params, name);
}
