/* fuzz_prefer.c -- a Prefer header's value and the ?wait= query parameter
 * (controlplane/http/prefer.h).
 *
 * Promises: the result is one of the three; a wait found is within
 * 0..PREFER_SECONDS_MAX, and the value names "wait" somewhere; seconds are
 * written only with PREFER_WAIT; delta-seconds are accepted exactly when
 * the text is one or more digits, and their value never exceeds the cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "prefer.h"

/* Whether text holds "wait" in any case. */
static bool names_wait(const char *text)
{
    for (const char *p = text; *p != '\0'; p++)
        if (strncasecmp(p, "wait", 4) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0'; /* a header value ends at its first NUL */

    long long seconds = -1;
    enum prefer_result r = prefer_wait(text, &seconds);
    FUZZ_ASSERT(r == PREFER_WAIT || r == PREFER_NO_WAIT || r == PREFER_INVALID);
    if (r == PREFER_WAIT) {
        FUZZ_ASSERT(seconds >= 0 && seconds <= PREFER_SECONDS_MAX);
        FUZZ_ASSERT(names_wait(text));
    } else {
        FUZZ_ASSERT(seconds == -1);
    }

    seconds = -1;
    size_t len = strlen(text);
    bool digits = len > 0 && strspn(text, "0123456789") == len;
    FUZZ_ASSERT(prefer_seconds(text, &seconds) == digits);
    FUZZ_ASSERT(digits ? seconds >= 0 && seconds <= PREFER_SECONDS_MAX : seconds == -1);
    free(text);
    return 0;
}
