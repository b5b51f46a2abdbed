/* strbuf.h -- a NUL-terminated string that grows as printf appends to it. */
#ifndef CAIRN_STRBUF_H
#define CAIRN_STRBUF_H

#include <stddef.h>

/* p holds len bytes and a NUL, in cap bytes of storage. The fields are
 * public: a caller may cut the string back by lowering len and writing
 * the NUL at p[len], and takes p (to free() it) when done. */
struct strbuf {
    char *p;
    size_t len, cap;
};

/* Start b empty, with room for cap bytes (at least 1). Allocation aborts
 * on failure (xalloc.h). */
void strbuf_init(struct strbuf *b, size_t cap);

/* Append printf(fmt, ...) to b, growing it as needed. */
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
