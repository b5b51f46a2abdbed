/* log.c -- logfmt lines on standard error, one write(2) per line so lines
 * from concurrent threads never interleave. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "timeutil.h"
#include "utf8.h"

static enum log_level min_level = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    min_level = level;
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

const char *log_quote(char *buf, size_t size, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t n = strlen((const char *)p), o = 0;

    if (size < 3) {
        if (size)
            buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence(p + i, n - i);
        char esc[5];
        const char *out = (const char *)p + i;
        size_t take = len;
        if (p[i] == '"' || p[i] == '\\') {
            snprintf(esc, sizeof(esc), "\\%c", p[i]);
            out = esc;
            take = 2;
        } else if (len == 0 || p[i] < 0x20 || p[i] == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
            out = esc;
            take = 4;
            len = 1;
        }
        if (o + take + 2 > size)
            break;
        memcpy(buf + o, out, take);
        o += take;
        i += len;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

void log_write(enum log_level level, const char *msg, const char *fmt, ...)
{
    char line[4096];
    char quoted[512], ts[TIME_TEXT_SIZE];
    int n;

    if (level < min_level)
        return;
    n = snprintf(line, sizeof(line), "ts=%s level=%s msg=%s",
                 time_format(time_wall_us(), TIME_MS, ts), level_names[level],
                 log_quote(quoted, sizeof(quoted), msg));
    if (fmt != NULL && n > 0 && (size_t)n < sizeof(line) - 2) {
        va_list ap;
        line[n++] = ' ';
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        if (m > 0)
            n += m;
    }
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line) - 1)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, (size_t)n);
}
