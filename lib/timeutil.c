/* timeutil.c -- clocks, and Cairn's RFC 3339 timestamps written and checked. */
#include "timeutil.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

int64_t time_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t time_now_ms(void)
{
    return time_wall_us() / 1000;
}

int64_t time_now_s(void)
{
    return time_wall_us() / 1000000;
}

int64_t time_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z, in microseconds
 * since the epoch. */
#define FIRST_US (-62135596800LL * 1000000)
#define LAST_US  (253402300800LL * 1000000 - 1)

/* Write v as exactly n decimal digits (zero-padded) at out; returns the end. */
static char *put(char *out, long long v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        out[i] = (char)('0' + v % 10);
    return out + n;
}

/* The civil date of day z since 1970-01-01 in the proleptic Gregorian
 * calendar: H. Hinnant's civil_from_days, on 400-year eras of 146097 days
 * that start on March 1st so the leap day ends each year. */
static void civil_from_days(long long z, int *year, int *month, int *day)
{
    z += 719468; /* days from 0000-03-01 to 1970-01-01 */
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;                                      /* [0, 146096] */
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    long long mp = (5 * doy + 2) / 153;                                    /* March is 0 */
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(yoe + era * 400 + (*month <= 2));
}

char *time_format(int64_t unix_us, int digits, char *out)
{
    int64_t us = unix_us < FIRST_US ? FIRST_US : unix_us > LAST_US ? LAST_US : unix_us;
    long long s = us >= 0 ? us / 1000000 : -1 - (-us - 1) / 1000000; /* floor */
    long long frac = us - s * 1000000;
    long long days = s >= 0 ? s / 86400 : -1 - (-s - 1) / 86400, sec = s - days * 86400;
    int year, month, day;
    char *p = out;

    civil_from_days(days, &year, &month, &day);
    p = put(p, year, 4);
    *p++ = '-';
    p = put(p, month, 2);
    *p++ = '-';
    p = put(p, day, 2);
    *p++ = 'T';
    p = put(p, sec / 3600, 2);
    *p++ = ':';
    p = put(p, sec / 60 % 60, 2);
    *p++ = ':';
    p = put(p, sec % 60, 2);
    if (digits > 0) {
        int n = digits < TIME_US ? digits : TIME_US;
        for (int i = n; i < TIME_US; i++)
            frac /= 10;
        *p++ = '.';
        p = put(p, frac, n);
    }
    *p++ = 'Z';
    *p = '\0';
    return out;
}

/* Read exactly n digits at *p into *out and advance; false if not digits. */
static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static int days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

bool time_is_rfc3339(const char *s)
{
    const char *p = s;
    int year, month, day, hour, min, sec, oh, om;

    if (!digits(&p, 4, &year) || *p++ != '-' || !digits(&p, 2, &month) || *p++ != '-' ||
        !digits(&p, 2, &day))
        return false;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return false;
    p++;
    if (!digits(&p, 2, &hour) || *p++ != ':' || !digits(&p, 2, &min) || *p++ != ':' ||
        !digits(&p, 2, &sec))
        return false;
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
        hour > 23 || min > 59 || sec > 60)
        return false;
    if (*p == '.') {
        const char *frac = ++p;
        while (isdigit((unsigned char)*p))
            p++;
        if (p == frac || p - frac > 9)
            return false;
    }
    if (*p == 'Z' || *p == 'z')
        return p[1] == '\0';
    if (*p != '+' && *p != '-')
        return false;
    p++;
    if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
        return false;
    return oh <= 15 && om <= 59 && *p == '\0';
}
