/* timeutil.c -- clocks and RFC 3339 validation. */
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
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_now_s(void)
{
    return time_now_ms() / 1000;
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
