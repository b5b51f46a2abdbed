/* fuzz_sigv4.c -- an AWS Signature Version 4 as the ElastiCache endpoint
 * will read it (lib/sigv4.h): the Authorization header, X-Amz-Date, and the
 * canonical request of whatever method, path, query, headers and body
 * came with it. The input is read as lines: Authorization, X-Amz-Date,
 * method, path, query, then "name:value" headers up to an empty line, and
 * the body after it.
 *
 * Promises: an accepted header has a 64-hex signature, a key, an 8-digit
 * date and lower-case signed header names; a signature computed is 64 hex
 * digits and is the same when computed again; a canonical request names
 * the signed headers on its second-to-last line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sigv4.h"
#include "xalloc.h"

#define MAX_HEADERS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = xmalloc(size + 1), *line[5] = {"", "", "", "", ""};
    struct sigv4_header headers[MAX_HEADERS];
    size_t nheaders = 0;
    char *p = text, *body = NULL;

    memcpy(text, data, size);
    text[size] = '\0';
    for (int i = 0; i < 5 && p != NULL; i++) {
        line[i] = p;
        if ((p = strchr(p, '\n')) != NULL)
            *p++ = '\0';
    }
    while (p != NULL && nheaders < MAX_HEADERS) {
        char *next = strchr(p, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (*p == '\0') {
            body = next;
            break;
        }
        char *colon = strchr(p, ':');
        if (colon != NULL) {
            *colon = '\0';
            headers[nheaders++] = (struct sigv4_header){p, colon + 1};
        }
        p = next;
    }

    struct sigv4_credential cred;
    char err[160];
    int64_t t;
    (void)sigv4_parse_date(line[1], &t);
    if (sigv4_parse(line[0], &cred, err, sizeof(err))) {
        FUZZ_ASSERT(strlen(cred.signature) == SIGV4_HEX_LEN);
        FUZZ_ASSERT(strspn(cred.signature, "0123456789abcdef") == SIGV4_HEX_LEN);
        FUZZ_ASSERT(cred.access_key[0] != '\0' && strlen(cred.date) == 8);
        FUZZ_ASSERT(strspn(cred.signed_headers, "abcdefghijklmnopqrstuvwxyz0123456789-_.;") ==
                    strlen(cred.signed_headers));
        const struct sigv4_request req = {
            line[2], line[3], line[4], headers, nheaders, body, body != NULL ? strlen(body) : 0};
        char a[SIGV4_HEX_LEN + 1], b[SIGV4_HEX_LEN + 1];
        if (sigv4_signature(&req, &cred, line[1], "secret", a)) {
            FUZZ_ASSERT(strlen(a) == SIGV4_HEX_LEN);
            FUZZ_ASSERT(sigv4_signature(&req, &cred, line[1], "secret", b));
            FUZZ_ASSERT(strcmp(a, b) == 0);
            char *canonical = sigv4_canonical_request(&req, cred.signed_headers);
            FUZZ_ASSERT(canonical != NULL);
            char *last = strrchr(canonical, '\n');
            FUZZ_ASSERT(last != NULL && strlen(last + 1) == 64);
            *last = '\0';
            char *second = strrchr(canonical, '\n');
            FUZZ_ASSERT(second != NULL && strcmp(second + 1, cred.signed_headers) == 0);
            free(canonical);
        }
    }
    free(text);
    return 0;
}
