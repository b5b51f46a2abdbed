/* usage.h -- help text laid out as it is written: words appended to a
 * line, which wraps at USAGE_WIDTH columns, continuation lines indented.
 * For usage messages built from a table of settings. */
#ifndef CAIRN_USAGE_H
#define CAIRN_USAGE_H

#include <stdio.h>

#define USAGE_WIDTH 90

struct usage {
    FILE *out;
    int column; /* of the next character */
    int indent; /* where continuation lines start */
};

/* Begin a line on out with first (written as is); the lines it wraps onto
 * start at column indent. */
void usage_start(struct usage *u, FILE *out, const char *first, int indent);

/* Append one word (printf-style), after a space, on a new line if it
 * would not fit. */
void usage_word(struct usage *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append each space-separated word of text, as usage_word() would. */
void usage_text(struct usage *u, const char *text);

/* End the line. */
void usage_end(struct usage *u);

#endif
