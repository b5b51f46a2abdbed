/* strbuf.c -- a growing string built by printf (see strbuf.h). */
#include "strbuf.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "xalloc.h"

void strbuf_init(struct strbuf *b, size_t cap)
{
    b->cap = cap > 0 ? cap : 1;
    b->p = xmalloc(b->cap);
    b->p[0] = '\0';
    b->len = 0;
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        assert(n >= 0); /* only a bad format fails, and formats are ours */
        if ((size_t)n < b->cap - b->len)
            break;
        b->cap = b->cap * 2 + (size_t)n + 1;
        b->p = xrealloc(b->p, b->cap);
    }
    b->len += (size_t)n;
}
