/* snapshot_s3.c -- the snapshot store's S3-compatible side (snapshot_s3.h):
 * one signed libcurl request per call, its reply read with suspicion. */
#include "snapshot_s3.h"

#include <assert.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto.h"
#include "sigv4.h"
#include "strbuf.h"
#include "version.h"
#include "xalloc.h"
#include "xmlw.h"

#define S3_CONNECT_TIMEOUT_MS 5000L
#define S3_TIMEOUT_MS         120000L
#define S3_REPLY_MAX          (64u << 10) /* what is kept of a reply that is not data */
#define S3_DETAIL_MAX         512         /* of an error's <Code> or <Message> */
#define S3_PART_MAX           10000

struct snapshot_s3 {
    char *origin; /* "http://127.0.0.1:4568": scheme, host and port, for URLs */
    char *host;   /* "127.0.0.1:4568": the Host header, as signed */
    char *base;   /* "/bucket" or "/bucket/prefix", encoded */
    char *access_key, *secret, *region, *ca_file;
};

/* ---- opening ------------------------------------------------------------ */

/* Split endpoint into c->origin and c->host; false with err for anything
 * but http(s)://host[:port][/]. */
static bool parse_endpoint(struct snapshot_s3 *c, const char *endpoint, char *err, size_t errsize)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *user = NULL;
    bool ok = false;

    if (u == NULL) {
        fprintf(stderr, "cairnd: out of memory parsing a URL\n");
        abort();
    }
    if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        snprintf(err, errsize, "the S3 endpoint \"%s\" is not a URL", endpoint);
        goto done;
    }
    (void)curl_url_get(u, CURLUPART_PORT, &port, CURLU_NO_DEFAULT_PORT);
    (void)curl_url_get(u, CURLUPART_PATH, &path, 0);
    (void)curl_url_get(u, CURLUPART_QUERY, &query, 0);
    (void)curl_url_get(u, CURLUPART_USER, &user, 0);
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        snprintf(err, errsize, "the S3 endpoint \"%s\" is not http:// or https://", endpoint);
        goto done;
    }
    if ((path != NULL && strcmp(path, "/") != 0) || query != NULL || user != NULL) {
        snprintf(err, errsize,
                 "the S3 endpoint \"%s\" has more than a scheme, a host and a port "
                 "(the bucket comes from the s3:// URL)",
                 endpoint);
        goto done;
    }
    c->host = port != NULL ? xasprintf("%s:%s", host, port) : xstrdup(host);
    c->origin = xasprintf("%s://%s", scheme, c->host);
    ok = true;
done:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_free(user);
    curl_url_cleanup(u);
    return ok;
}

struct snapshot_s3 *snapshot_s3_open(const char *bucket, const char *prefix,
                                     const struct snapshot_s3_config *cfg, char *err,
                                     size_t errsize)
{
    if (bucket == NULL || bucket[0] == '\0' || strchr(bucket, '/') != NULL) {
        snprintf(err, errsize, "an S3 store needs a bucket name (s3://bucket[/prefix])");
        return NULL;
    }
    if (cfg == NULL || cfg->endpoint == NULL || cfg->access_key == NULL ||
        cfg->secret_key == NULL || cfg->access_key[0] == '\0' || cfg->secret_key[0] == '\0') {
        snprintf(err, errsize, "an S3 store needs an endpoint, an access key and a secret key");
        return NULL;
    }
    /* Thread-safe in the libcurl we build on (7.84 and later); one
     * curl_global_cleanup() per store closed keeps the count even. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errsize, "libcurl could not be initialised");
        return NULL;
    }
    struct snapshot_s3 *c = xcalloc(1, sizeof(*c));
    if (!parse_endpoint(c, cfg->endpoint, err, errsize)) {
        snapshot_s3_close(c);
        return NULL;
    }
    char *b = sigv4_uri_encode(bucket, false);
    char *p = sigv4_uri_encode(prefix != NULL ? prefix : "", true);
    c->base = p[0] != '\0' ? xasprintf("/%s/%s", b, p) : xasprintf("/%s", b);
    free(b);
    free(p);
    c->access_key = xstrdup(cfg->access_key);
    c->secret = xstrdup(cfg->secret_key);
    c->region = xstrdup(cfg->region != NULL ? cfg->region : "us-east-1");
    c->ca_file = cfg->ca_file != NULL ? xstrdup(cfg->ca_file) : NULL;
    return c;
}

void snapshot_s3_close(struct snapshot_s3 *c)
{
    if (c == NULL)
        return;
    free(c->origin);
    free(c->host);
    free(c->base);
    free(c->access_key);
    free(c->secret);
    free(c->region);
    free(c->ca_file);
    free(c);
    curl_global_cleanup();
}

/* ---- one request ---------------------------------------------------------- */

/* What one call sends. */
struct s3_request {
    const char *method; /* "GET", "PUT", "POST", "DELETE" */
    const char *key;
    const char *query; /* encoded, without "?"; "" when none */
    const void *body;  /* NULL: none */
    size_t body_len;
    const char *range; /* "bytes=0-9", or NULL */
    char *into;        /* a GET's buffer for the object's bytes, into_cap long */
    size_t into_cap;
};

/* What came back: the status, a reply's first S3_REPLY_MAX bytes (or the
 * object's bytes in into), and the two headers the calls read. */
struct s3_reply {
    CURL *easy;
    long status;
    char *into;
    size_t into_cap, got;
    char *body; /* NUL-terminated, S3_REPLY_MAX + 1 bytes once anything came */
    size_t body_len;
    bool cut; /* more came than there was room for: the transfer was stopped */
    char etag[SNAPSHOT_S3_TAG_MAX];
    bool etag_too_long;
    char content_range[96];
};

/* libcurl's write callback: an object's bytes (a 200 or 206 to a GET) go
 * to into, anything else to body. Past the room there is, the transfer
 * stops (returning less than was given): nothing more is worth reading. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct s3_reply *r = arg;
    size_t n = size * nmemb, room, take;
    long status = 0;

    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (r->into != NULL && (status == 200 || status == 206)) {
        room = r->into_cap - r->got;
        take = n < room ? n : room;
        memcpy(r->into + r->got, data, take);
        r->got += take;
    } else {
        if (r->body == NULL)
            r->body = xcalloc(1, S3_REPLY_MAX + 1);
        room = S3_REPLY_MAX - r->body_len;
        take = n < room ? n : room;
        memcpy(r->body + r->body_len, data, take);
        r->body_len += take;
        r->body[r->body_len] = '\0';
    }
    if (take < n)
        r->cut = true;
    return take < n ? 0 : n;
}

/* Copy header line's value into out (size bytes) when its name is name;
 * *too_long when it does not fit. */
static void header_value(const char *line, size_t n, const char *name, char *out, size_t size,
                         bool *too_long)
{
    size_t len = strlen(name);
    if (n <= len || line[len] != ':' || strncasecmp(line, name, len) != 0)
        return;
    const char *v = line + len + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if ((size_t)(end - v) >= size) {
        if (too_long != NULL)
            *too_long = true;
        return;
    }
    memcpy(out, v, (size_t)(end - v));
    out[end - v] = '\0';
}

/* libcurl's header callback: ETag and Content-Range, bounded. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
    struct s3_reply *r = arg;
    size_t n = size * nmemb;
    header_value(line, n, "ETag", r->etag, sizeof(r->etag), &r->etag_too_long);
    header_value(line, n, "Content-Range", r->content_range, sizeof(r->content_range), NULL);
    return n;
}

static struct curl_slist *add_line(struct curl_slist *list, const char *line)
{
    struct curl_slist *l = curl_slist_append(list, line);
    if (l == NULL) {
        fprintf(stderr, "cairnd: out of memory building an S3 request\n");
        abort();
    }
    return l;
}

static struct curl_slist *add_header(struct curl_slist *list, const char *name, const char *value)
{
    char *line = xasprintf("%s: %s", name, value);
    list = add_line(list, line);
    free(line);
    return list;
}

/* The signed headers of rq, as sigv4 canonicalizes them: x-amz-date is the
 * time now, the payload's hash the body's SHA-256. */
struct s3_signed {
    char amz_date[17];
    char payload_hash[SIGV4_HEX_LEN + 1];
    struct sigv4_header headers[4];
    size_t nheaders;
    const char *names;
    char *authorization;
};

static void sign_request(const struct snapshot_s3 *c, const struct s3_request *rq, const char *path,
                         struct s3_signed *s)
{
    unsigned char digest[CRYPTO_SHA256_LEN];
    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(s->amz_date, sizeof(s->amz_date), "%Y%m%dT%H%M%SZ", &tm);
    crypto_sha256(rq->body != NULL ? rq->body : "", rq->body_len, digest);
    crypto_hex(digest, sizeof(digest), s->payload_hash);
    s->nheaders = 0;
    s->headers[s->nheaders++] = (struct sigv4_header){"host", c->host};
    if (rq->range != NULL)
        s->headers[s->nheaders++] = (struct sigv4_header){"range", rq->range};
    s->headers[s->nheaders++] = (struct sigv4_header){"x-amz-content-sha256", s->payload_hash};
    s->headers[s->nheaders++] = (struct sigv4_header){"x-amz-date", s->amz_date};
    s->names = rq->range != NULL ? "host;range;x-amz-content-sha256;x-amz-date"
                                 : "host;x-amz-content-sha256;x-amz-date";

    const struct sigv4_request req = {.method = rq->method,
                                      .path = path,
                                      .query = rq->query,
                                      .headers = s->headers,
                                      .nheaders = s->nheaders,
                                      .payload_hash = s->payload_hash,
                                      .path_as_sent = true};
    const struct sigv4_signer signer = {c->access_key, c->secret, c->region, "s3"};
    s->authorization = sigv4_authorization(&req, s->names, s->amz_date, &signer);
    assert(s->authorization != NULL); /* every signed header is in headers */
}

/* Send rq and read its reply into r (whose into fields rq sets). False,
 * with "<what>: <libcurl's reason>" in err, when no reply came; an HTTP
 * error is a reply, for the caller to judge by r->status. */
static bool perform(const struct snapshot_s3 *c, const struct s3_request *rq, struct s3_reply *r,
                    const char *what, char *err, size_t errsize)
{
    char *key = sigv4_uri_encode(rq->key, true);
    char *path = xasprintf("%s/%s", c->base, key);
    char *url = xasprintf("%s%s%s%s", c->origin, path, rq->query[0] != '\0' ? "?" : "", rq->query);
    char curl_error[CURL_ERROR_SIZE] = "";
    struct s3_signed s;
    struct curl_slist *headers = NULL;

    memset(r, 0, sizeof(*r));
    r->into = rq->into;
    r->into_cap = rq->into_cap;
    r->easy = curl_easy_init();
    if (r->easy == NULL) {
        fprintf(stderr, "cairnd: out of memory setting up libcurl\n");
        abort();
    }
    sign_request(c, rq, path, &s);
    for (size_t i = 0; i < s.nheaders; i++)
        headers = add_header(headers, s.headers[i].name, s.headers[i].value);
    headers = add_header(headers, "Authorization", s.authorization);
    /* No 100-continue round trip, and none of the Content-Type libcurl
     * gives a POST: the object's type would become a form's. */
    headers = add_line(headers, "Expect:");
    headers = add_line(headers, "Content-Type:");

    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "cairnd/" CAIRN_VERSION);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, S3_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, S3_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    if (c->ca_file != NULL)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
    if (strcmp(rq->method, "GET") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
    if (rq->body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    }

    CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    bool ok = rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && r->cut);
    if (!ok)
        snprintf(err, errsize, "%s: %s", what,
                 curl_error[0] != '\0' ? curl_error : curl_easy_strerror(rc));
    curl_easy_cleanup(e);
    r->easy = NULL;
    curl_slist_free_all(headers);
    free(s.authorization);
    free(url);
    free(path);
    free(key);
    return ok;
}

static void reply_free(struct s3_reply *r)
{
    free(r->body);
    r->body = NULL;
}

/* The text of the first <tag>...</tag> in the reply's body, as much as
 * fits into out (size bytes), control characters made spaces: its whole
 * length, or -1 when there is none. */
static long reply_text(const struct s3_reply *r, const char *tag, char *out, size_t size)
{
    char open[32], close[33];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *start = r->body != NULL ? strstr(r->body, open) : NULL;
    const char *end = start != NULL ? strstr(start + strlen(open), close) : NULL;
    if (end == NULL)
        return -1;
    start += strlen(open);
    size_t len = (size_t)(end - start), n = len < size - 1 ? len : size - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)start[i] < 0x20 ? ' ' : start[i];
    out[n] = '\0';
    return (long)len;
}

/* "HTTP <status> <Code>: <Message>", as much of it as the reply says. */
static void reply_detail(const struct s3_reply *r, char *out, size_t size)
{
    char code[S3_DETAIL_MAX], message[S3_DETAIL_MAX];
    if (reply_text(r, "Code", code, sizeof(code)) < 0)
        snprintf(out, size, "HTTP %ld", r->status);
    else if (reply_text(r, "Message", message, sizeof(message)) <= 0)
        snprintf(out, size, "HTTP %ld %s", r->status, code);
    else
        snprintf(out, size, "HTTP %ld %s: %s", r->status, code, message);
}

/* err = "<what>: HTTP <status> <Code>: <Message>". */
static void reply_error(const struct s3_reply *r, const char *what, char *err, size_t errsize)
{
    char detail[2 * S3_DETAIL_MAX + 32];
    reply_detail(r, detail, sizeof(detail));
    snprintf(err, errsize, "%s: %s", what, detail);
}

/* A 404 for what the call meant to remove: gone already, unless it is the
 * bucket that is missing (a store misconfigured is not a store emptied). */
static bool gone(const struct s3_reply *r)
{
    char code[S3_DETAIL_MAX];
    return r->status == 404 &&
           !(reply_text(r, "Code", code, sizeof(code)) >= 0 && strcmp(code, "NoSuchBucket") == 0);
}

/* ---- the calls ------------------------------------------------------------ */

bool snapshot_s3_begin(struct snapshot_s3 *c, const char *key, char upload_id[SNAPSHOT_S3_ID_MAX],
                       char *err, size_t errsize)
{
    char *what = xasprintf("S3 begin upload of %s", key);
    const struct s3_request rq = {.method = "POST", .key = key, .query = "uploads", .body = ""};
    struct s3_reply r;
    bool ok = perform(c, &rq, &r, what, err, errsize);

    if (ok && r.status != 200) {
        reply_error(&r, what, err, errsize);
        ok = false;
    } else if (ok) {
        long n = reply_text(&r, "UploadId", upload_id, SNAPSHOT_S3_ID_MAX);
        if (n <= 0 || n >= SNAPSHOT_S3_ID_MAX) {
            snprintf(err, errsize, "%s: the reply has no UploadId of at most %d bytes", what,
                     SNAPSHOT_S3_ID_MAX - 1);
            ok = false;
        }
    }
    reply_free(&r);
    free(what);
    return ok;
}

bool snapshot_s3_put(struct snapshot_s3 *c, const char *key, const char *upload_id, int part,
                     const void *data, size_t len, char tag[SNAPSHOT_S3_TAG_MAX], char *err,
                     size_t errsize)
{
    assert(part >= 1 && part <= S3_PART_MAX);
    char *what = xasprintf("S3 PUT part %d of %s", part, key);
    char *id = sigv4_uri_encode(upload_id, false);
    char *query = xasprintf("partNumber=%d&uploadId=%s", part, id);
    const struct s3_request rq = {
        .method = "PUT", .key = key, .query = query, .body = len > 0 ? data : "", .body_len = len};
    struct s3_reply r;
    bool ok = perform(c, &rq, &r, what, err, errsize);

    if (ok && r.status != 200) {
        reply_error(&r, what, err, errsize);
        ok = false;
    } else if (ok && (r.etag[0] == '\0' || r.etag_too_long)) {
        snprintf(err, errsize, "%s: the reply has no ETag of at most %d bytes", what,
                 SNAPSHOT_S3_TAG_MAX - 1);
        ok = false;
    } else if (ok) {
        memcpy(tag, r.etag, sizeof(r.etag));
    }
    reply_free(&r);
    free(query);
    free(id);
    free(what);
    return ok;
}

/* CompleteMultipartUpload's body: each part's number and ETag. */
static char *part_list(const char *const *tags, int nparts)
{
    struct strbuf b;
    char number[16];
    strbuf_init(&b, 64 + (size_t)nparts * 96);
    xmlw_open(&b, "CompleteMultipartUpload");
    for (int i = 0; i < nparts; i++) {
        snprintf(number, sizeof(number), "%d", i + 1);
        xmlw_open(&b, "Part");
        xmlw_elem(&b, "PartNumber", number);
        xmlw_elem(&b, "ETag", tags[i]);
        xmlw_close(&b, "Part");
    }
    xmlw_close(&b, "CompleteMultipartUpload");
    return b.p;
}

bool snapshot_s3_finish(struct snapshot_s3 *c, const char *key, const char *upload_id,
                        const char *const *tags, int nparts, char *err, size_t errsize)
{
    assert(nparts >= 1 && nparts <= S3_PART_MAX);
    char *what = xasprintf("S3 finish upload of %s", key);
    char *id = sigv4_uri_encode(upload_id, false);
    char *query = xasprintf("uploadId=%s", id);
    char *body = part_list(tags, nparts);
    const struct s3_request rq = {
        .method = "POST", .key = key, .query = query, .body = body, .body_len = strlen(body)};
    struct s3_reply r;
    bool ok = perform(c, &rq, &r, what, err, errsize);

    /* S3 answers 200 as soon as it starts, and says in the body when it
     * then failed. */
    if (ok && (r.status != 200 || (r.body != NULL && strstr(r.body, "<Error>") != NULL))) {
        reply_error(&r, what, err, errsize);
        ok = false;
    }
    reply_free(&r);
    free(body);
    free(query);
    free(id);
    free(what);
    return ok;
}

bool snapshot_s3_abort(struct snapshot_s3 *c, const char *key, const char *upload_id, char *err,
                       size_t errsize)
{
    char *what = xasprintf("S3 abort upload of %s", key);
    char *id = sigv4_uri_encode(upload_id, false);
    char *query = xasprintf("uploadId=%s", id);
    const struct s3_request rq = {.method = "DELETE", .key = key, .query = query};
    struct s3_reply r;
    bool ok = perform(c, &rq, &r, what, err, errsize);

    if (ok && r.status != 204 && r.status != 200 && !gone(&r)) {
        reply_error(&r, what, err, errsize);
        ok = false;
    }
    reply_free(&r);
    free(query);
    free(id);
    free(what);
    return ok;
}

/* Whether a 206's Content-Range ("bytes 100-199/1000") starts at offset. */
static bool range_starts_at(const char *content_range, uint64_t offset)
{
    char *end;
    if (strncmp(content_range, "bytes ", 6) != 0)
        return false;
    unsigned long long start = strtoull(content_range + 6, &end, 10);
    return end != content_range + 6 && *end == '-' && start == offset;
}

ssize_t snapshot_s3_read(struct snapshot_s3 *c, const char *key, uint64_t offset, void *buf,
                         size_t len, char *err, size_t errsize)
{
    if (len == 0)
        return 0;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    char *what = xasprintf("S3 GET %s", key);
    char range[64];
    snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
    const struct s3_request rq = {
        .method = "GET", .key = key, .query = "", .range = range, .into = buf, .into_cap = len};
    struct s3_reply r;
    ssize_t n = -1;

    if (!perform(c, &rq, &r, what, err, errsize)) {
        n = -1;
    } else if (r.status == 416) {
        n = 0; /* the range starts at or past the end */
    } else if (r.status == 404) {
        char detail[2 * S3_DETAIL_MAX + 32];
        reply_detail(&r, detail, sizeof(detail));
        snprintf(err, errsize, "%s: no such object (%s)", what, detail);
    } else if (r.status == 206 && r.cut) {
        snprintf(err, errsize, "%s: the reply holds more than the %zu bytes asked for", what, len);
    } else if (r.status == 206 && !range_starts_at(r.content_range, offset)) {
        snprintf(err, errsize, "%s: the reply's Content-Range \"%s\" does not start at %" PRIu64,
                 what, r.content_range, offset);
    } else if (r.status == 200 && offset != 0) {
        /* The whole object: a server that ignores Range. From the start,
         * its first len bytes are what was asked for. */
        snprintf(err, errsize, "%s: the server ignored the Range header (HTTP 200)", what);
    } else if (r.status == 200 || r.status == 206) {
        n = (ssize_t)r.got;
    } else {
        reply_error(&r, what, err, errsize);
    }
    reply_free(&r);
    free(what);
    return n;
}

bool snapshot_s3_delete(struct snapshot_s3 *c, const char *key, char *err, size_t errsize)
{
    char *what = xasprintf("S3 DELETE %s", key);
    const struct s3_request rq = {.method = "DELETE", .key = key, .query = ""};
    struct s3_reply r;
    bool ok = perform(c, &rq, &r, what, err, errsize);

    if (ok && r.status != 204 && r.status != 200 && !gone(&r)) {
        reply_error(&r, what, err, errsize);
        ok = false;
    }
    reply_free(&r);
    free(what);
    return ok;
}
