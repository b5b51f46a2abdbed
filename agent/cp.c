/* cp.c -- one HTTP request at a time to cairnd over the curl multi
 * interface (see cp.h). */
#include "cp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define AGENT_USER_AGENT "cairn-agent/0.1.0"

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

void agent_cp_init(struct agent_cp *cp, const char *base_url)
{
    /* TLS is only set up when cairnd is reached over https: plain http
     * keeps the agent's memory smaller. */
    long flags = strncmp(base_url, "https:", 6) == 0 ? CURL_GLOBAL_DEFAULT : CURL_GLOBAL_NOTHING;

    memset(cp, 0, sizeof(*cp));
    if (curl_global_init(flags) != CURLE_OK) {
        fprintf(stderr, "cairn-agent: curl_global_init failed\n");
        abort();
    }
    cp->multi = curl_multi_init();
    cp->easy = curl_easy_init();
    if (cp->multi == NULL || cp->easy == NULL) {
        fprintf(stderr, "cairn-agent: out of memory setting up libcurl\n");
        abort();
    }
    cp->base_url = xstrdup(base_url);
    curl_easy_setopt(cp->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cp->easy, CURLOPT_USERAGENT, AGENT_USER_AGENT);
    curl_easy_setopt(cp->easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(cp->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(cp->easy, CURLOPT_WRITEDATA, cp);
    curl_easy_setopt(cp->easy, CURLOPT_ERRORBUFFER, cp->result.error);
    curl_easy_setopt(cp->easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(cp->easy, CURLOPT_PROTOCOLS_STR, "http,https");
}

void agent_cp_close(struct agent_cp *cp)
{
    agent_cp_abort(cp);
    curl_easy_cleanup(cp->easy);
    curl_multi_cleanup(cp->multi);
    curl_slist_free_all(cp->headers);
    free(cp->base_url);
    free(cp->answer);
    memset(cp, 0, sizeof(*cp));
    curl_global_cleanup();
}

void agent_cp_abort(struct agent_cp *cp)
{
    if (cp->busy)
        curl_multi_remove_handle(cp->multi, cp->easy);
    cp->busy = false;
    free(cp->body);
    cp->body = NULL;
}

void agent_cp_start(struct agent_cp *cp, const char *path, const char *token, char *body,
                    long timeout_ms)
{
    char *url = xasprintf("%s%s", cp->base_url, path);
    char *auth = xasprintf("Authorization: Bearer %s", token);

    agent_cp_abort(cp);
    curl_slist_free_all(cp->headers);
    cp->headers = curl_slist_append(NULL, "Content-Type: application/json");
    cp->headers = curl_slist_append(cp->headers, "Accept: application/json");
    cp->headers = curl_slist_append(cp->headers, auth);
    cp->headers = curl_slist_append(cp->headers, "Expect:"); /* no 100-continue round trip */
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
    curl_easy_setopt(cp->easy, CURLOPT_URL, url);
    curl_easy_setopt(cp->easy, CURLOPT_HTTPHEADER, cp->headers);
    curl_easy_setopt(cp->easy, CURLOPT_POSTFIELDS, cp->body);
    curl_easy_setopt(cp->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(cp->body));
    curl_easy_setopt(cp->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    free(url); /* libcurl keeps its own copy of string options */
    curl_multi_add_handle(cp->multi, cp->easy);
    cp->busy = true;
}

bool agent_cp_busy(const struct agent_cp *cp)
{
    return cp->busy;
}

const struct agent_cp_result *agent_cp_perform(struct agent_cp *cp)
{
    int running = 0, left = 0;
    CURLMsg *msg;

    if (!cp->busy)
        return NULL;
    curl_multi_perform(cp->multi, &running);
    while ((msg = curl_multi_info_read(cp->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE || msg->easy_handle != cp->easy)
            continue;
        cp->result.code = msg->data.result;
        curl_easy_getinfo(cp->easy, CURLINFO_RESPONSE_CODE, &cp->result.status);
        if (cp->result.code != CURLE_OK && cp->result.error[0] == '\0')
            snprintf(cp->result.error, sizeof(cp->result.error), "%s",
                     curl_easy_strerror(cp->result.code));
        cp->result.body = cp->answer != NULL ? cp->answer : "";
        cp->result.len = cp->answer_len;
        curl_multi_remove_handle(cp->multi, cp->easy);
        cp->busy = false;
        free(cp->body);
        cp->body = NULL;
        return &cp->result;
    }
    return NULL;
}

CURLM *agent_cp_multi(struct agent_cp *cp)
{
    return cp->multi;
}
