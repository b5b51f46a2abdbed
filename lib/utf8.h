/* utf8.h -- UTF-8 as cairnd meets it in untrusted bytes: checked before it
 * can reach an encoder that refuses it (jansson), and scrubbed where bytes
 * from outside must be shown anyway (problem details, logs).
 *
 * Well-formed means RFC 3629: no overlong forms, no surrogates, nothing
 * past U+10FFFF. */
#ifndef CAIRN_UTF8_H
#define CAIRN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1 to 4) of the well-formed sequence that s[0..n) starts
 * with, or 0 when it does not start with one (n == 0 included). */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* Whether s[0..n) is well-formed UTF-8 throughout (a NUL is a character
 * like any other: callers that refuse it check for it themselves). */
bool utf8_valid(const char *s, size_t n);

/* Copy the NUL-terminated s into out[0..size) as well-formed UTF-8: every
 * byte that does not start a well-formed sequence becomes U+FFFD, and the
 * copy is cut at a character boundary so that it fits. out is always
 * terminated (size > 0). Returns out. */
char *utf8_scrub(const char *s, char *out, size_t size);

#endif
