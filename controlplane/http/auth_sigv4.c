/* auth_sigv4.c -- requests signed with AWS Signature Version 4 by an API
 * token (auth.h): the access key finds the token, its sealed secret gives
 * the signature the request must carry. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "secretbox.h"
#include "store.h"
#include "tokens.h"

struct sigv4_lookup {
    const char *id;
    struct store_token_secret found;
};

static enum db_status lookup_fn(struct db_conn *conn, void *arg)
{
    struct sigv4_lookup *l = arg;
    enum db_status st = store_token_secret(conn, l->id, &l->found);
    if (st == DB_OK && !l->found.revoked && l->found.stale_last_used)
        (void)store_token_touch(conn, l->id);
    return st;
}

static enum db_status refuse(struct auth_sigv4 *a, enum auth_sigv4_result result, const char *fmt,
                             const char *arg)
{
    a->result = result;
    snprintf(a->detail, sizeof(a->detail), fmt, arg);
    return DB_OK;
}

/* Whether the ";"-separated list of signed header names has "host". */
static bool signs_host(const char *names)
{
    for (const char *s = names; *s != '\0';) {
        size_t n = strcspn(s, ";");
        if (n == 4 && memcmp(s, "host", 4) == 0)
            return true;
        s += n + (s[n] == ';');
    }
    return false;
}

/* Epoch seconds as X-Amz-Date writes them: 20261201T101500Z. */
static void format_amz(int64_t epoch_s, char out[17])
{
    time_t t = (time_t)epoch_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* The request time against the clock, as AWS words a request signed too
 * long ago or too far ahead. */
static bool fresh(struct auth_sigv4 *a, int64_t signed_at)
{
    char now[17], edge[17];
    bool past = signed_at < a->now_s - AUTH_SIGV4_SKEW_S;

    if (!past && signed_at <= a->now_s + AUTH_SIGV4_SKEW_S)
        return true;
    format_amz(a->now_s, now);
    format_amz(past ? a->now_s - AUTH_SIGV4_SKEW_S : a->now_s + AUTH_SIGV4_SKEW_S, edge);
    a->result = AUTH_SIGV4_EXPIRED;
    snprintf(a->detail, sizeof(a->detail),
             past ? "Signature expired: %s is now earlier than %s (%s - 15 min.)"
                  : "Signature not yet current: %s is still later than %s (%s + 15 min.)",
             a->amz_date, edge, now);
    return false;
}

enum db_status auth_verify_sigv4(struct db_pool *pool, const unsigned char *key,
                                 struct auth_sigv4 *a, struct auth_identity *who)
{
    struct sigv4_credential cred;
    char why[128];
    int64_t signed_at;

    memset(who, 0, sizeof(*who));
    a->region[0] = '\0';
    if (a->authorization == NULL)
        return refuse(a, AUTH_SIGV4_MISSING, "%s",
                      "Request is missing Authentication Token: sign it with AWS Signature "
                      "Version 4, a Cairn API token's id as the access key");
    if (!sigv4_parse(a->authorization, &cred, why, sizeof(why)))
        return refuse(a, AUTH_SIGV4_MALFORMED, "Authorization header is not AWS4-HMAC-SHA256: %s",
                      why);
    snprintf(a->region, sizeof(a->region), "%s", cred.region);
    if (a->amz_date == NULL || !sigv4_parse_date(a->amz_date, &signed_at))
        return refuse(a, AUTH_SIGV4_MALFORMED, "%s",
                      "X-Amz-Date must be the request time, YYYYMMDDTHHMMSSZ");
    if (strncmp(a->amz_date, cred.date, 8) != 0)
        return refuse(a, AUTH_SIGV4_MALFORMED,
                      "the credential's date %s is not the date of X-Amz-Date", cred.date);
    if (strcmp(cred.service, a->service) != 0)
        return refuse(a, AUTH_SIGV4_MALFORMED, "the credential's scope must name service %s",
                      a->service);
    if (!signs_host(cred.signed_headers))
        return refuse(a, AUTH_SIGV4_MALFORMED, "%s", "the signed headers must include host");
    if (!fresh(a, signed_at))
        return DB_OK;
    if (strlen(cred.access_key) != AUTH_ID_LEN ||
        strspn(cred.access_key, "0123456789abcdef") != AUTH_ID_LEN)
        return refuse(a, AUTH_SIGV4_UNKNOWN_KEY,
                      "The security token included in the request is invalid: %s is not a "
                      "Cairn API token id",
                      cred.access_key);

    struct sigv4_lookup look = {cred.access_key};
    enum db_status st = db_run(pool, lookup_fn, &look);
    if (st == DB_NOT_FOUND || (st == DB_OK && look.found.revoked))
        return refuse(a, AUTH_SIGV4_UNKNOWN_KEY,
                      "The security token included in the request is invalid: no active API "
                      "token has id %s",
                      cred.access_key);
    if (st != DB_OK)
        return st;

    char label[AUTH_ID_LEN + 11], secret[AUTH_SECRET_LEN + 1];
    tokens_seal_label(cred.access_key, label);
    if (key == NULL || !look.found.has_sealed ||
        !secretbox_open(key, look.found.sealed, STORE_TOKEN_SEALED_LEN, label,
                        (unsigned char *)secret))
        return refuse(a, AUTH_SIGV4_UNKNOWN_KEY,
                      "API token %s cannot sign requests: it was made without cairnd's secret key "
                      "(make a new token with POST /v1/tokens)",
                      cred.access_key);
    secret[AUTH_SECRET_LEN] = '\0';

    char want[SIGV4_HEX_LEN + 1];
    bool signable = sigv4_signature(a->req, &cred, a->amz_date, secret, want);
    memset(secret, 0, sizeof(secret));
    if (!signable)
        return refuse(a, AUTH_SIGV4_MALFORMED, "%s",
                      "a header named in SignedHeaders is not in the request");
    if (!crypto_equal(want, cred.signature, SIGV4_HEX_LEN))
        return refuse(a, AUTH_SIGV4_MISMATCH, "%s",
                      "The request signature we calculated does not match the signature you "
                      "provided. Check your AWS Secret Access Key and signing method.");
    a->result = AUTH_SIGV4_OK;
    who->authenticated = true;
    who->kind = AUTH_KIND_TOKEN;
    who->scope = look.found.scope;
    who->host_details = look.found.host_details;
    memcpy(who->token_id, cred.access_key, AUTH_ID_LEN + 1);
    return DB_OK;
}
