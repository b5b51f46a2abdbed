/* prefer.h -- the Prefer request header (RFC 7240), as far as cairnd
 * honours it: the "wait" preference, and the delta-seconds it and the
 * equivalent ?wait= query parameter carry.
 *
 * A Prefer value is a comma-separated list of preferences, each a token
 * with an optional "=" value (a token or a quoted string) and optional
 * ";"-separated parameters of the same shape; names are matched without
 * regard to case, whitespace may stand around the separators, and empty
 * list elements are allowed. Pure string work. */
#ifndef CAIRN_PREFER_H
#define CAIRN_PREFER_H

#include <stdbool.h>

/* Where delta-seconds saturate (RFC 9111 §1.2.2 says a recipient may take
 * any value past what it can hold as this one: 2^31). */
#define PREFER_SECONDS_MAX 2147483648LL

enum prefer_result {
    PREFER_WAIT,    /* a valid wait preference: *seconds is set */
    PREFER_NO_WAIT, /* a valid Prefer value without one, or whose first wait
                       is not delta-seconds (it is then ignored, RFC 7240 §2) */
    PREFER_INVALID, /* not a Prefer value: the whole header is ignored */
};

/* Read the first "wait" preference of one Prefer header value (RFC 7240
 * §2: of a preference given twice, only the first counts). On PREFER_WAIT
 * stores its seconds, at most PREFER_SECONDS_MAX, in *seconds. */
enum prefer_result prefer_wait(const char *value, long long *seconds);

/* Parse delta-seconds (one or more ASCII digits, nothing else) into
 * *seconds, saturating at PREFER_SECONDS_MAX. False when text is not
 * delta-seconds. */
bool prefer_seconds(const char *text, long long *seconds);

#endif
