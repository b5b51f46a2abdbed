/* fuzz_access.c -- a tenant user's access string (engine/access.h).
 *
 * Promises: an accepted string is at most ENGINE_ACCESS_MAX bytes of
 * printable ASCII; none of its rules sets or clears a password, resets the
 * user or opens a selector; a refusal always says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "fuzz.h"

/* Whether a rule of an accepted string could touch passwords or selectors. */
static bool forbidden_rule(const char *w, size_t len)
{
    static const char *const words[] = {"nopass", "resetpass", "reset", "clearselectors"};
    if (strchr("><#!()", w[0]) != NULL)
        return true;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strlen(words[i]) == len && strncasecmp(w, words[i], len) == 0)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), msg[256] = "";
    memcpy(text, data, size);
    text[size] = '\0'; /* a JSON string cairnd reads has no NUL */

    if (engine_access_check(text, msg, sizeof(msg))) {
        size_t n = strlen(text);
        FUZZ_ASSERT(n <= ENGINE_ACCESS_MAX);
        for (size_t i = 0; i < n; i++)
            FUZZ_ASSERT(text[i] >= 0x20 && text[i] <= 0x7e);
        for (const char *p = text; *p != '\0';) {
            size_t len = strcspn(p, " ");
            FUZZ_ASSERT(len == 0 || !forbidden_rule(p, len));
            p += len > 0 ? len : 1;
        }
    } else {
        FUZZ_ASSERT(msg[0] != '\0');
    }
    free(text);
    return 0;
}
