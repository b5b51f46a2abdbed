/* timeutil.h -- clocks and RFC 3339 timestamps. */
#ifndef CAIRN_TIMEUTIL_H
#define CAIRN_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Monotonic clock in microseconds, for durations and deadlines. */
int64_t time_mono_us(void);

/* The wall clock in milliseconds / seconds since the epoch, for times kept
 * in durable records (an operation's context) that outlive the process. */
int64_t time_now_ms(void);
int64_t time_now_s(void);

/* Check that s is an RFC 3339 date-time ("2026-11-30T08:30:00Z",
 * optional fraction, "Z" or a +hh:mm / -hh:mm offset), with every field in
 * range, that PostgreSQL's timestamptz can also read: year 0001 or later,
 * at most 9 fraction digits, offsets within +-15:59. Pure: no time zone
 * database or locale is consulted. */
bool time_is_rfc3339(const char *s);

#endif
