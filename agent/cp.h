/* cp.h -- the agent's HTTP channels to cairnd, on the libcurl multi
 * interface so they share the agent's single event loop.
 *
 * Every channel carries at most one request at a time; several channels
 * (the sync long-poll, the metrics push) share one multi handle, so their
 * transfers run side by side. The loop passes that handle to
 * curl_multi_poll() together with its own descriptors, then calls
 * agent_cp_perform() once to drive every transfer, and agent_cp_take() on
 * each channel to collect a finished request; its result stays readable
 * until the channel's next agent_cp_start(). An in-flight request
 * (typically a long-poll) can be dropped at any time with agent_cp_abort().
 * A channel set up with AGENT_CP_GZIP sends its bodies gzipped
 * (Content-Encoding: gzip) whenever that makes them smaller. */
#ifndef CAIRN_AGENT_CP_H
#define CAIRN_AGENT_CP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "version.h"

/* How the agent names itself to cairnd. */
#define AGENT_USER_AGENT "cairn-agent/" CAIRN_VERSION

/* Cap on an answer's size; a larger one fails the request. */
#define AGENT_CP_MAX_ANSWER (4u << 20)

/* How a channel sends request bodies. */
enum agent_cp_encoding {
    AGENT_CP_PLAIN,
    AGENT_CP_GZIP, /* gzipped, unless that would not make them smaller */
};

struct agent_cp_result {
    CURLcode code;    /* CURLE_OK when an HTTP answer arrived */
    long status;      /* its HTTP status */
    const char *body; /* NUL-terminated, owned by the channel */
    size_t len;
    char error[CURL_ERROR_SIZE]; /* when code != CURLE_OK */
    size_t body_len;             /* the request's body, as given to agent_cp_start() */
    size_t sent_len;             /* the same as sent: fewer bytes when gzipped */
};

struct agent_cp {
    CURLM *multi; /* shared, not owned */
    CURL *easy;
    char **urls; /* the cairnd it may reach, tried in turn */
    size_t nurls;
    size_t current; /* the one requests go to: the next after one fails */
    enum agent_cp_encoding encoding;
    char *body; /* of the request in flight */
    struct curl_slist *headers;
    char *answer;
    size_t answer_len, answer_cap;
    bool busy;
    bool finished; /* a result waits for agent_cp_take() */
    struct agent_cp_result result;
};

/* Initialise libcurl for the whole process (TLS only when base_url names
 * an https cairnd) and return the multi handle the channels share. Aborts when
 * libcurl cannot be set up. */
CURLM *agent_cp_multi_init(const char *base_url);

/* Release the multi handle and libcurl, after every channel is closed. */
void agent_cp_multi_cleanup(CURLM *multi);

/* Set up a channel to base_url ("http://host:port", no trailing '/') on
 * multi (from agent_cp_multi_init()), sending bodies as encoding says.
 * base_url may name several cairnd, comma-separated: requests go to one
 * until it fails to answer (no connection, a timeout, or 502, 503, 504),
 * then to the next. An
 * https:// cairnd's certificate is verified -- name and chain -- against
 * the authority in the PEM file ca_file, or the system's (NULL). */
void agent_cp_init(struct agent_cp *cp, CURLM *multi, const char *base_url, const char *ca_file,
                   enum agent_cp_encoding encoding);

/* Release everything; the channel may not be used afterwards. */
void agent_cp_close(struct agent_cp *cp);

/* Start POST base_url + path with a JSON body (taken over: freed by the
 * channel) and `Authorization: Bearer token`, failing after timeout_ms;
 * urgent ones say so (`Priority: u=0`, RFC 9218): cairnd hears them before
 * its fleet's routine syncs. Aborts any request still in flight. */
void agent_cp_start(struct agent_cp *cp, const char *path, const char *token, char *body,
                    long timeout_ms, bool urgent);

/* Drop the request in flight, if any. */
void agent_cp_abort(struct agent_cp *cp);

/* Whether a request is in flight. */
bool agent_cp_busy(const struct agent_cp *cp);

/* Drive every transfer on multi after a poll, and mark the channels whose
 * request has finished (successfully or not). */
void agent_cp_perform(CURLM *multi);

/* The result of the channel's request once it has finished, returned once;
 * NULL while it runs or when nothing was started. */
const struct agent_cp_result *agent_cp_take(struct agent_cp *cp);

/* "HTTP 400 CODE: detail (field: message)" from an answer that is a
 * problem document, with as much of it as it has, and double quotes turned
 * into single ones so it fits a logfmt value. */
void agent_cp_problem(const struct agent_cp_result *r, char *buf, size_t size);

/* Delay before retrying cairnd after the given number of failures in a
 * row (1 → 100 ms, doubling, capped at 5 s, or at half of cairnd's
 * heartbeat_timeout_s when that is shorter; 0: not known). cairnd gives
 * every host one heartbeat timeout to report once it is back, so the
 * agent must try again well within it. Pure. */
int64_t agent_cp_backoff_us(unsigned failures, int heartbeat_timeout_s);

#endif
