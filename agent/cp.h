/* cp.h -- the agent's one HTTP channel to cairnd, on the libcurl multi
 * interface so it shares the agent's single event loop.
 *
 * At most one request is in flight. The loop passes agent_cp_multi() to
 * curl_multi_poll() together with its own descriptors, then calls
 * agent_cp_perform() to drive the transfer; when that reports a finished
 * request, the result stays readable until the next agent_cp_start(). An
 * in-flight request (typically a long-poll) can be dropped at any time with
 * agent_cp_abort(). */
#ifndef CAIRN_AGENT_CP_H
#define CAIRN_AGENT_CP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

/* Cap on an answer's size; a larger one fails the request. */
#define AGENT_CP_MAX_ANSWER (4u << 20)

struct agent_cp_result {
    CURLcode code;    /* CURLE_OK when an HTTP answer arrived */
    long status;      /* its HTTP status */
    const char *body; /* NUL-terminated, owned by the channel */
    size_t len;
    char error[CURL_ERROR_SIZE]; /* when code != CURLE_OK */
};

struct agent_cp {
    CURLM *multi;
    CURL *easy;
    char *base_url;
    char *body; /* of the request in flight */
    struct curl_slist *headers;
    char *answer;
    size_t answer_len, answer_cap;
    bool busy;
    struct agent_cp_result result;
};

/* Set up the channel to base_url ("http://host:port", no trailing '/').
 * Initialises libcurl for the whole process. */
void agent_cp_init(struct agent_cp *cp, const char *base_url);

/* Release everything; the channel may not be used afterwards. */
void agent_cp_close(struct agent_cp *cp);

/* Start POST base_url + path with a JSON body (taken over: freed by the
 * channel) and `Authorization: Bearer token`, failing after timeout_ms.
 * Aborts any request still in flight. */
void agent_cp_start(struct agent_cp *cp, const char *path, const char *token, char *body,
                    long timeout_ms);

/* Drop the request in flight, if any. */
void agent_cp_abort(struct agent_cp *cp);

/* Whether a request is in flight. */
bool agent_cp_busy(const struct agent_cp *cp);

/* Drive the transfer after a poll. Returns the result once the request has
 * finished (successfully or not), else NULL. */
const struct agent_cp_result *agent_cp_perform(struct agent_cp *cp);

/* The multi handle, for curl_multi_poll(). */
CURLM *agent_cp_multi(struct agent_cp *cp);

#endif
