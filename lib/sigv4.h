/* sigv4.h -- AWS Signature Version 4, the way the AWS tools (Terraform's AWS
 * provider, aws-cli, boto3) sign a request: the Authorization header's
 * parts, the canonical request and the signature a secret gives it. Pure:
 * no clock, no I/O; whoever verifies decides which key, scope and time to
 * accept (and compares with crypto_equal).
 *
 * The canonical request is, each line ending in \n but the last:
 *   method, canonical URI (the path as sent, percent-encoded once more,
 *   "/" kept; S3 takes the path as sent), canonical query (parameters
 *   sorted, each name and value encoded as RFC 3986's unreserved set
 *   allows), one "name:value" line per signed header (names lower-case,
 *   values trimmed, runs of spaces made one, repeated headers joined with
 *   ","), an empty line, the signed header names joined with ";", and the
 *   hex SHA-256 of the payload (S3: the x-amz-content-sha256 the client
 *   sent, which S3 checks against the body separately).
 * The string to sign is the algorithm, the request time, the scope
 * (date/region/service/aws4_request) and the canonical request's hex
 * SHA-256, one per line; the key is HMAC-SHA-256 chained from
 * "AWS4" + secret through the date, region, service and "aws4_request". */
#ifndef CAIRN_SIGV4_H
#define CAIRN_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_HEX_LEN   64

/* A header as it arrived, or as it will be sent. */
struct sigv4_header {
    const char *name, *value;
};

/* A request as a server received it or as a client will send it. */
struct sigv4_request {
    const char *method;
    const char *path;  /* as sent, still percent-encoded; "" is "/" */
    const char *query; /* as sent, without the "?"; "" or NULL when none */
    const struct sigv4_header *headers;
    size_t nheaders;
    const void *payload;
    size_t payload_len;
    const char *payload_hash; /* the payload's hex SHA-256 as the client states
                                 it (S3's x-amz-content-sha256); NULL: computed
                                 from payload */
    bool path_as_sent;        /* S3: the canonical URI is the path as sent, not
                                 percent-encoded once more */
};

/* What an Authorization header says. */
struct sigv4_credential {
    char access_key[129];
    char date[9]; /* YYYYMMDD */
    char region[64];
    char service[64];
    char signed_headers[1024]; /* "content-type;host;x-amz-date" */
    char signature[SIGV4_HEX_LEN + 1];
};

/* Parse "AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/
 * aws4_request, SignedHeaders=<a;b;...>, Signature=<64 hex>". False, with
 * a reason in err, for anything else: another algorithm, a missing or
 * repeated part, a field too long, signed header names that are not
 * lower-case and sorted, a signature that is not 64 lower-case hex. */
bool sigv4_parse(const char *authorization, struct sigv4_credential *out, char *err,
                 size_t errsize);

/* The canonical request of req with the headers named in signed_headers
 * (";"-separated), NUL-terminated, for the caller to free(); NULL when a
 * signed header is absent from the request. */
char *sigv4_canonical_request(const struct sigv4_request *req, const char *signed_headers);

/* The hex signature of req, signed at amz_date ("20261201T101500Z") in
 * cred's scope with secret; false when a signed header is absent. */
bool sigv4_signature(const struct sigv4_request *req, const struct sigv4_credential *cred,
                     const char *amz_date, const char *secret, char out[SIGV4_HEX_LEN + 1]);

/* What a client signs with: its key, and the scope it signs in. */
struct sigv4_signer {
    const char *access_key, *secret;
    const char *region;  /* "us-east-1" */
    const char *service; /* "s3" */
};

/* The Authorization header's value for req as signer signs it at amz_date
 * ("20261201T101500Z") over the headers named in signed_headers (lower
 * case, sorted, ";"-separated), for the caller to free(); NULL when a
 * signed header is absent from the request. The same canonical request
 * and key as sigv4_signature(), so what one signs the other verifies. */
char *sigv4_authorization(const struct sigv4_request *req, const char *signed_headers,
                          const char *amz_date, const struct sigv4_signer *signer);

/* s percent-encoded as the canonical request encodes: every byte but
 * RFC 3986's unreserved ones (and "/", when keep_slash) as %XX, for the
 * caller to free(). What a client puts in a path segment or a query value
 * so that the server's canonical form is the same. */
char *sigv4_uri_encode(const char *s, bool keep_slash);

/* An X-Amz-Date ("YYYYMMDDTHHMMSSZ", UTC) as seconds since the epoch;
 * false when it is not one. */
bool sigv4_parse_date(const char *amz_date, int64_t *epoch_s);

#endif
