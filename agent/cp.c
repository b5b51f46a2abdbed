/* cp.c -- HTTP requests to cairnd, one at a time per channel, over one
 * shared curl multi handle (see cp.h). */
#include "cp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "version.h"
#include "xalloc.h"

/* The retry backoff (see agent_cp_backoff_us()). */
#define AGENT_CP_BACKOFF_MIN_US 100000LL
#define AGENT_CP_BACKOFF_MAX_US 5000000LL

/* Append a chunk of the answer; refusing it (returning less) fails the
 * transfer when the answer grows past the cap. */
static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct agent_cp *cp = arg;
    size_t n = size * nmemb;

    if (cp->answer_len + n + 1 > AGENT_CP_MAX_ANSWER)
        return 0;
    if (cp->answer_len + n + 1 > cp->answer_cap) {
        size_t cap = cp->answer_cap ? cp->answer_cap : 4096;
        while (cap < cp->answer_len + n + 1)
            cap *= 2;
        cp->answer = xrealloc(cp->answer, cap);
        cp->answer_cap = cap;
    }
    memcpy(cp->answer + cp->answer_len, data, n);
    cp->answer_len += n;
    cp->answer[cp->answer_len] = '\0';
    return n;
}

CURLM *agent_cp_multi_init(const char *base_url)
{
    /* TLS is only set up when cairnd is reached over https: plain http
     * keeps the agent's memory smaller. */
    long flags = strstr(base_url, "https:") != NULL ? CURL_GLOBAL_DEFAULT : CURL_GLOBAL_NOTHING;
    CURLM *multi;

    if (curl_global_init(flags) != CURLE_OK) {
        fprintf(stderr, "cairn-agent: curl_global_init failed\n");
        abort();
    }
    multi = curl_multi_init();
    if (multi == NULL) {
        fprintf(stderr, "cairn-agent: out of memory setting up libcurl\n");
        abort();
    }
    return multi;
}

void agent_cp_multi_cleanup(CURLM *multi)
{
    curl_multi_cleanup(multi);
    curl_global_cleanup();
}

void agent_cp_init(struct agent_cp *cp, CURLM *multi, const char *base_url, const char *ca_file,
                   enum agent_cp_encoding encoding)
{
    memset(cp, 0, sizeof(*cp));
    cp->multi = multi;
    cp->encoding = encoding;
    cp->easy = curl_easy_init();
    if (cp->easy == NULL) {
        fprintf(stderr, "cairn-agent: out of memory setting up libcurl\n");
        abort();
    }
    for (const char *p = base_url;; p++) {
        size_t len = strcspn(p, ",");
        cp->urls = xrealloc(cp->urls, (cp->nurls + 1) * sizeof(*cp->urls));
        cp->urls[cp->nurls++] = xstrndup(p, len);
        p += len;
        if (*p == '\0')
            break;
    }
    curl_easy_setopt(cp->easy, CURLOPT_PRIVATE, cp);
    curl_easy_setopt(cp->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cp->easy, CURLOPT_USERAGENT, AGENT_USER_AGENT);
    curl_easy_setopt(cp->easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(cp->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(cp->easy, CURLOPT_WRITEDATA, cp);
    curl_easy_setopt(cp->easy, CURLOPT_ERRORBUFFER, cp->result.error);
    curl_easy_setopt(cp->easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(cp->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    /* libcurl verifies the peer and its name by default; said here so that
     * no one wonders. */
    curl_easy_setopt(cp->easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(cp->easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (ca_file != NULL)
        curl_easy_setopt(cp->easy, CURLOPT_CAINFO, ca_file);
}

void agent_cp_close(struct agent_cp *cp)
{
    agent_cp_abort(cp);
    curl_easy_cleanup(cp->easy);
    curl_slist_free_all(cp->headers);
    for (size_t i = 0; i < cp->nurls; i++)
        free(cp->urls[i]);
    free(cp->urls);
    free(cp->answer);
    memset(cp, 0, sizeof(*cp));
}

void agent_cp_abort(struct agent_cp *cp)
{
    if (cp->busy)
        curl_multi_remove_handle(cp->multi, cp->easy);
    cp->busy = false;
    cp->finished = false;
    free(cp->body);
    cp->body = NULL;
}

/* The gzip of body[0..*len) in place of body (freed), with its length in
 * *len, when it is the smaller of the two; otherwise body itself. A body of
 * a few dozen bytes, or one that does not repeat itself, stays as it is. */
static char *smaller_gzip(char *body, size_t *len)
{
    size_t zlen = 0;
    unsigned char *z = gzip_compress(body, *len, &zlen);

    if (zlen >= *len) {
        free(z);
        return body;
    }
    free(body);
    *len = zlen;
    return (char *)z;
}

void agent_cp_start(struct agent_cp *cp, const char *path, const char *token, char *body,
                    long timeout_ms, bool urgent)
{
    char *url = xasprintf("%s%s", cp->urls[cp->current], path);
    char *auth = xasprintf("Authorization: Bearer %s", token);
    size_t body_len = strlen(body), len = body_len;

    agent_cp_abort(cp);
    if (cp->encoding == AGENT_CP_GZIP)
        body = smaller_gzip(body, &len);
    curl_slist_free_all(cp->headers);
    cp->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (len < body_len)
        cp->headers = curl_slist_append(cp->headers, "Content-Encoding: gzip");
    cp->headers = curl_slist_append(cp->headers, "Accept: application/json");
    cp->headers = curl_slist_append(cp->headers, auth);
    cp->headers = curl_slist_append(cp->headers, "Expect:"); /* no 100-continue round trip */
    if (urgent)
        cp->headers = curl_slist_append(cp->headers, "Priority: u=0");
    if (cp->headers == NULL) {
        fprintf(stderr, "cairn-agent: out of memory building request headers\n");
        abort();
    }
    free(auth);
    cp->body = body;
    cp->answer_len = 0;
    if (cp->answer != NULL)
        cp->answer[0] = '\0';
    memset(&cp->result, 0, sizeof(cp->result));
    cp->result.body_len = body_len;
    cp->result.sent_len = len;
    curl_easy_setopt(cp->easy, CURLOPT_URL, url);
    curl_easy_setopt(cp->easy, CURLOPT_HTTPHEADER, cp->headers);
    curl_easy_setopt(cp->easy, CURLOPT_POSTFIELDS, cp->body);
    curl_easy_setopt(cp->easy, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(cp->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    free(url); /* libcurl keeps its own copy of string options */
    curl_multi_add_handle(cp->multi, cp->easy);
    cp->busy = true;
}

bool agent_cp_busy(const struct agent_cp *cp)
{
    return cp->busy;
}

void agent_cp_perform(CURLM *multi)
{
    int running = 0, left = 0;
    CURLMsg *msg;

    curl_multi_perform(multi, &running);
    while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
        struct agent_cp *cp = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&cp);
        if (cp == NULL || !cp->busy)
            continue;
        cp->result.code = msg->data.result;
        curl_easy_getinfo(cp->easy, CURLINFO_RESPONSE_CODE, &cp->result.status);
        if (cp->result.code != CURLE_OK && cp->result.error[0] == '\0')
            snprintf(cp->result.error, sizeof(cp->result.error), "%s",
                     curl_easy_strerror(cp->result.code));
        if (cp->result.code != CURLE_OK || (cp->result.status >= 502 && cp->result.status <= 504))
            cp->current = (cp->current + 1) % cp->nurls; /* the next cairnd, if any */
        cp->result.body = cp->answer != NULL ? cp->answer : "";
        cp->result.len = cp->answer_len;
        curl_multi_remove_handle(multi, cp->easy); /* msg is invalid from here on */
        cp->busy = false;
        cp->finished = true;
        free(cp->body);
        cp->body = NULL;
    }
}

const struct agent_cp_result *agent_cp_take(struct agent_cp *cp)
{
    if (!cp->finished)
        return NULL;
    cp->finished = false;
    return &cp->result;
}

void agent_cp_problem(const struct agent_cp_result *r, char *buf, size_t size)
{
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    const char *code = json_string_value(json_object_get(j, "code"));
    const char *detail = json_string_value(json_object_get(j, "detail"));
    const json_t *first = json_array_get(json_object_get(j, "errors"), 0);
    const char *field = json_string_value(json_object_get(first, "field"));
    const char *message = json_string_value(json_object_get(first, "message"));

    snprintf(buf, size, "HTTP %ld%s%s%s%s%s%s%s%s%s", r->status, code ? " " : "", code ? code : "",
             detail ? ": " : "", detail ? detail : "", field ? " (" : "", field ? field : "",
             field ? ": " : "", field && message ? message : "", field ? ")" : "");
    for (char *p = buf; *p; p++) {
        if (*p == '"')
            *p = '\'';
    }
    json_decref(j);
}

int64_t agent_cp_backoff_us(unsigned failures, int heartbeat_timeout_s)
{
    int64_t d = AGENT_CP_BACKOFF_MIN_US, most = AGENT_CP_BACKOFF_MAX_US;

    if (heartbeat_timeout_s > 0 && heartbeat_timeout_s * 500000LL < most)
        most = heartbeat_timeout_s * 500000LL;
    for (unsigned i = 1; i < failures && d < most; i++)
        d *= 2;
    return d < most ? d : most;
}
