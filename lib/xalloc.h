/* xalloc.h -- allocation that never returns NULL.
 *
 * Out of memory is not a condition Cairn tries to survive: every wrapper here
 * prints a message and aborts, so callers never check for NULL. */
#ifndef CAIRN_XALLOC_H
#define CAIRN_XALLOC_H

#include <stddef.h>

/* malloc/calloc/realloc/strdup that abort on failure. Free with free(). */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Format into a newly allocated string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
