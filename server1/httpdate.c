/*
 * httpdate.c - see httpdate.h. The calendar arithmetic is the proleptic Gregorian days <-> civil
 * date conversion of Howard Hinnant's "chrono-Compatible Low-Level Date Algorithms", so no
 * gmtime_r, timegm or locale is involved.
 */
#include "httpdate.h"

#include <stdbool.h>
#include <string.h>

#define SECS_PER_DAY 86400

/* A broken-down UTC time as the parsers read it. */
struct civil {
    int year; /* 0-9999 once validated */
    int mon;  /* 1-12 */
    int day;  /* 1-31 */
    int hour; /* 0-23 */
    int min;  /* 0-59 */
    int sec;  /* 0-59 */
};

static const char wday_short[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const wday_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
static const char mon_short[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of y-m-d (m 1-12, d 1-31; out-of-month days simply run on). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era;
    int64_t yoe;
    int64_t doy;
    int64_t doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The civil date of z days since 1970-01-01. */
static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    int64_t era;
    int64_t doe;
    int64_t yoe;
    int64_t doy;
    int64_t mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static bool is_leap(int y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int days_in_month(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

static int64_t clamp_time(int64_t t)
{
    return t < HTTPDATE_MIN ? HTTPDATE_MIN : t > HTTPDATE_MAX ? HTTPDATE_MAX : t;
}

/* t (already clamped) broken down. */
static void civil_from_time(int64_t t, struct civil *c)
{
    int64_t days = t / SECS_PER_DAY;
    int64_t secs = t % SECS_PER_DAY;

    if (secs < 0) {
        secs += SECS_PER_DAY;
        days--;
    }
    civil_from_days(days, &c->year, &c->mon, &c->day);
    c->hour = (int)(secs / 3600);
    c->min = (int)(secs / 60 % 60);
    c->sec = (int)(secs % 60);
}

static void put2(char *p, int v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
}

size_t httpdate_format(int64_t t, char out[HTTPDATE_LEN + 1])
{
    struct civil c;
    int64_t days;
    int wday;

    t = clamp_time(t);
    civil_from_time(t, &c);
    days = days_from_civil(c.year, c.mon, c.day);
    wday = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */

    memcpy(out, wday_short[wday], 3);
    out[3] = ',';
    out[4] = ' ';
    put2(out + 5, c.day);
    out[7] = ' ';
    memcpy(out + 8, mon_short[c.mon - 1], 3);
    out[11] = ' ';
    put2(out + 12, c.year / 100);
    put2(out + 14, c.year % 100);
    out[16] = ' ';
    put2(out + 17, c.hour);
    out[19] = ':';
    put2(out + 20, c.min);
    out[22] = ':';
    put2(out + 23, c.sec);
    memcpy(out + 25, " GMT", 5); /* with the NUL */
    return HTTPDATE_LEN;
}

/* The value of the n ASCII digits at p, or -1. */
static int digits(const char *p, size_t n)
{
    int v = 0;

    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* 1-12 for the three bytes of a month name at p, or -1. */
static int month_at(const char *p)
{
    for (int i = 0; i < 12; i++) {
        if (memcmp(p, mon_short[i], 3) == 0)
            return i + 1;
    }
    return -1;
}

static bool is_wday_short(const char *p)
{
    for (int i = 0; i < 7; i++) {
        if (memcmp(p, wday_short[i], 3) == 0)
            return true;
    }
    return false;
}

/* The length of the full day name s[0..len) starts with, or 0. */
static size_t wday_long_len(const char *s, size_t len)
{
    for (int i = 0; i < 7; i++) {
        size_t n = strlen(wday_long[i]);
        if (len >= n && memcmp(s, wday_long[i], n) == 0)
            return n;
    }
    return 0;
}

/* "HH:MM:SS" at p (8 bytes); ranges are checked later. */
static int time_at(const char *p, struct civil *c)
{
    if (p[2] != ':' || p[5] != ':')
        return -1;
    c->hour = digits(p, 2);
    c->min = digits(p + 3, 2);
    c->sec = digits(p + 6, 2);
    return c->hour < 0 || c->min < 0 || c->sec < 0 ? -1 : 0;
}

/* Range-checks c and converts it to seconds since the epoch. */
static int civil_to_time(const struct civil *c, int64_t *out)
{
    if (c->year < 0 || c->year > 9999 || c->mon < 1 || c->mon > 12 || c->day < 1 ||
        c->day > days_in_month(c->year, c->mon) || c->hour > 23 || c->min > 59 || c->sec > 59)
        return -1;
    *out = days_from_civil(c->year, c->mon, c->day) * SECS_PER_DAY + c->hour * 3600 +
           c->min * 60 + c->sec;
    return 0;
}

/* "Sun, 06 Nov 1994 08:49:37 GMT" (len is HTTPDATE_LEN) */
static int parse_imf(const char *s, struct civil *c)
{
    if (!is_wday_short(s) || memcmp(s + 3, ", ", 2) != 0 || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || memcmp(s + 25, " GMT", 4) != 0)
        return -1;
    c->day = digits(s + 5, 2);
    c->mon = month_at(s + 8);
    c->year = digits(s + 12, 4);
    return time_at(s + 17, c);
}

/* "Sun Nov  6 08:49:37 1994" or "Sun Nov 06 08:49:37 1994" (len is 24) */
static int parse_asctime(const char *s, struct civil *c)
{
    if (!is_wday_short(s) || s[3] != ' ' || s[7] != ' ' || s[10] != ' ' || s[19] != ' ')
        return -1;
    c->mon = month_at(s + 4);
    c->day = s[8] == ' ' ? digits(s + 9, 1) : digits(s + 8, 2);
    c->year = digits(s + 20, 4);
    return time_at(s + 11, c);
}

/* a > b as (year, month, day, hour, minute, second) */
static bool civil_after(const struct civil *a, const struct civil *b)
{
    const int x[6] = {a->year, a->mon, a->day, a->hour, a->min, a->sec};
    const int y[6] = {b->year, b->mon, b->day, b->hour, b->min, b->sec};

    for (int i = 0; i < 6; i++) {
        if (x[i] != y[i])
            return x[i] > y[i];
    }
    return false;
}

/*
 * The full year for the two-digit yy of c: the latest year ending in yy that is not more than
 * 50 years after now (compared field by field, so Feb 29 needs no special case).
 */
static int resolve_year(int yy, struct civil *c, int64_t now)
{
    struct civil limit;
    int y;

    civil_from_time(clamp_time(now), &limit);
    y = limit.year - limit.year % 100 + yy + 100;
    limit.year += 50;
    for (;;) {
        c->year = y;
        if (!civil_after(c, &limit))
            return y;
        y -= 100; /* at most twice: the third candidate is before now */
    }
}

/* "Sunday, 06-Nov-94 08:49:37 GMT" */
static int parse_rfc850(const char *s, size_t len, int64_t now, struct civil *c)
{
    size_t n = wday_long_len(s, len);
    int yy;

    if (n == 0 || len != n + 24)
        return -1;
    s += n;
    if (memcmp(s, ", ", 2) != 0 || s[4] != '-' || s[8] != '-' || s[11] != ' ' ||
        memcmp(s + 20, " GMT", 4) != 0)
        return -1;
    c->day = digits(s + 2, 2);
    c->mon = month_at(s + 5);
    yy = digits(s + 9, 2);
    if (time_at(s + 12, c) < 0 || yy < 0 || c->mon < 0)
        return -1;
    c->year = resolve_year(yy, c, now);
    return 0;
}

int httpdate_parse(const char *s, size_t len, int64_t now, int64_t *out)
{
    struct civil c;
    int rc;

    if (len == HTTPDATE_LEN && s[3] == ',')
        rc = parse_imf(s, &c);
    else if (len == 24 && s[3] == ' ')
        rc = parse_asctime(s, &c);
    else
        rc = parse_rfc850(s, len, now, &c);
    if (rc < 0)
        return -1;
    return civil_to_time(&c, out);
}

void httpdate_cache_init(struct httpdate_cache *c)
{
    c->sec = -1;
    httpdate_format(c->sec, c->text);
}

const char *httpdate_cached(struct httpdate_cache *c, int64_t now_sec)
{
    if (now_sec != c->sec) {
        httpdate_format(now_sec, c->text);
        c->sec = now_sec;
    }
    return c->text;
}
