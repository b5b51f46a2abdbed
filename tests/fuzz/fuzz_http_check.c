/* fuzz_http_check.c -- the request line and headers as cairnd checks them
 * before routing (controlplane/http/http_check.h), and the scrubbing of what it
 * quotes back (lib/utf8.h, lib/log.h). The input is read as a method line,
 * a target line, then header lines "name:value".
 *
 * Promises: an accepted target decodes to a path that is UTF-8, holds no
 * control character and starts with '/'; scrubbed and quoted text is
 * always UTF-8, and quoted text holds no control character. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http_check.h"
#include "log.h"
#include "utf8.h"
#include "xalloc.h"

static void check_shown(const char *s)
{
    char scrubbed[256], quoted[256];

    utf8_scrub(s, scrubbed, sizeof(scrubbed));
    FUZZ_ASSERT(utf8_valid(scrubbed, strlen(scrubbed)));
    log_quote(quoted, sizeof(quoted), s);
    FUZZ_ASSERT(utf8_valid(quoted, strlen(quoted)));
    for (const unsigned char *p = (const unsigned char *)quoted; *p != '\0'; p++)
        FUZZ_ASSERT(*p >= 0x20 && *p != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = xmalloc(size + 1), *lines[16];
    size_t n = 0;

    memcpy(text, data, size);
    text[size] = '\0';
    for (char *p = text; n < 16;) {
        lines[n++] = p;
        p = strchr(p, '\n');
        if (p == NULL)
            break;
        *p++ = '\0';
    }

    http_check_method(lines[0]);
    check_shown(lines[0]);

    if (n > 1) {
        char *path = NULL, err[160];
        if (http_check_target(lines[1], &path, err, sizeof(err))) {
            size_t len = strlen(path);
            FUZZ_ASSERT(path[0] == '/' && utf8_valid(path, len));
            for (size_t i = 0; i < len; i++)
                FUZZ_ASSERT((unsigned char)path[i] >= 0x20 && path[i] != 0x7f);
        } else {
            FUZZ_ASSERT(path == NULL && utf8_valid(err, strlen(err)));
        }
        free(path);
        check_shown(lines[1]);
    }

    const char *lengths[16], *codings[16];
    size_t nlengths = 0, ncodings = 0;
    for (size_t i = 2; i < n; i++) {
        char *colon = strchr(lines[i], ':');
        if (colon == NULL)
            continue;
        *colon = '\0';
        http_check_header(lines[i], colon + 1);
        if (strcmp(lines[i], "l") == 0)
            lengths[nlengths++] = colon + 1;
        else if (strcmp(lines[i], "t") == 0)
            codings[ncodings++] = colon + 1;
    }
    char err[160];
    int status = http_check_framing(lengths, nlengths, codings, ncodings, err, sizeof(err));
    FUZZ_ASSERT(status == 0 || status == 400 || status == 501);
    free(text);
    return 0;
}
