/* log.h -- one-line structured logging (logfmt) to standard error.
 *
 * Every line carries ts=, level= and msg=; callers add their own key=value
 * pairs already formatted, e.g.
 *     log_info("request", "method=%s status=%d", method, status);
 * Values that may hold spaces or quotes go through log_quote(). */
#ifndef CAIRN_LOG_H
#define CAIRN_LOG_H

#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Lines below this level are dropped. Default LOG_INFO. */
void log_set_level(enum log_level level);

/* Parse "debug", "info", "warn" or "error"; returns 0 on success, -1 otherwise. */
int log_parse_level(const char *s, enum log_level *out);

/* Write one line: msg is a short fixed phrase, fmt (may be NULL) adds pairs. */
void log_write(enum log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(msg, ...) log_write(LOG_DEBUG, msg, __VA_ARGS__)
#define log_info(msg, ...)  log_write(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...)  log_write(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_write(LOG_ERROR, msg, __VA_ARGS__)

/* Quote s for a logfmt value into buf (always NUL-terminated, truncated to
 * size at a character boundary). '"' and '\\' are escaped with a backslash;
 * control characters and bytes that are not UTF-8 become \xNN, so a line
 * always shows what was sent and is always UTF-8. Returns buf, so it can be
 * used inline in a log call. */
const char *log_quote(char *buf, size_t size, const char *s);

#endif
