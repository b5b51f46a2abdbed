/* api_audit.c -- GET /v1/audit: the calls that changed something or tried
 * to, oldest first, optionally from a point in time or of one token
 * (admin tokens only). */
#include <string.h>

#include "api.h"
#include "auth_token.h"
#include "timeutil.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_audit_list(conn, filter, page, items, next_key);
}

static const struct api_list audit = {"entries", "audit", PAGE_KEY_INT, fetch_page};

static bool token_id_ok(const char *s)
{
    if (s == NULL)
        return true;
    if (strlen(s) != AUTH_ID_LEN)
        return false;
    for (const char *p = s; *p != '\0'; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    }
    return true;
}

void api_audit_list(struct http_request *req)
{
    const char *since = http_query(req, "since");
    const char *token_id = http_query(req, "token_id");
    json_t *errors = json_array();

    if (since != NULL && !time_is_rfc3339(since))
        jspec_error(errors, "since", "must be an RFC 3339 timestamp such as 2026-11-30T08:00:00Z");
    if (!token_id_ok(token_id))
        jspec_error(errors, "token_id", "must be a token id: 12 lower-case hex digits");
    if (json_array_size(errors) > 0) {
        http_reply_problem(req, PROBLEM_INVALID_QUERY_PARAMETER, errors,
                           "the audit log's filters are invalid");
        return;
    }
    json_decref(errors);
    struct store_audit_filter f = {since, token_id};
    api_reply_list(req, &audit, &f);
}
