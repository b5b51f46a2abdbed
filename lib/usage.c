/* usage.c -- help text laid out in wrapped lines. */
#include "usage.h"

#include <stdarg.h>
#include <string.h>

void usage_start(struct usage *u, FILE *out, const char *first, int indent)
{
    u->out = out;
    u->indent = indent;
    u->column = fprintf(out, "%s", first);
}

void usage_word(struct usage *u, const char *fmt, ...)
{
    char word[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(word, sizeof(word), fmt, ap);
    va_end(ap);
    if (u->column + 1 + n > USAGE_WIDTH && u->column > u->indent)
        u->column = fprintf(u->out, "\n%*s%s", u->indent, "", word) - 1;
    else
        u->column += fprintf(u->out, " %s", word);
}

void usage_text(struct usage *u, const char *text)
{
    while (*text != '\0') {
        size_t n = strcspn(text, " ");
        if (n > 0)
            usage_word(u, "%.*s", (int)n, text);
        text += n + (text[n] == ' ');
    }
}

void usage_end(struct usage *u)
{
    fputc('\n', u->out);
    u->column = 0;
}
