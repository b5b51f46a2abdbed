/* timeutil.h -- clocks and RFC 3339 timestamps. */
#ifndef CAIRN_TIMEUTIL_H
#define CAIRN_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Cairn's timestamp text: RFC 3339 in UTC with microseconds,
 *
 *     2026-11-30T08:30:19.123456Z
 *
 * -- every instant the API returns, whether cairnd writes it with
 * time_format() or PostgreSQL with TIME_SQL_FORMAT, which is the same
 * format spelled for to_char(). Years 0001 to 9999, so always
 * TIME_TEXT_LEN characters. */
#define TIME_TEXT_LEN  27
#define TIME_TEXT_SIZE (TIME_TEXT_LEN + 1)

/* The format above as a PostgreSQL to_char() pattern, for a timestamp
 * already in UTC: to_char(t AT TIME ZONE 'UTC', '<TIME_SQL_FORMAT>'). */
#define TIME_SQL_FORMAT "YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\""

/* Fraction digits: the full format, and the shorter forms of the same
 * shape that logs (milliseconds) and whole-second series use. */
#define TIME_US      6
#define TIME_MS      3
#define TIME_SECONDS 0

/* Monotonic clock in microseconds, for durations and deadlines. */
int64_t time_mono_us(void);

/* Wall clock (CLOCK_REALTIME) in microseconds since the Unix epoch. */
int64_t time_wall_us(void);

/* Write the instant unix_us (microseconds since the Unix epoch) into out,
 * which holds TIME_TEXT_SIZE bytes, in the format above with its fraction
 * cut to digits (TIME_US, TIME_MS, or TIME_SECONDS for none, without the
 * dot). Instants outside years 0001 to 9999 are clamped to them. Returns
 * out. Pure: no time zone database or locale is consulted. */
char *time_format(int64_t unix_us, int digits, char *out);

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
