/*
 * test_httpdate.c - cmocka tests for server1/httpdate: IMF-fixdate formatting, the three date
 * forms a recipient accepts, the RFC 850 century rule and the per-thread Date cache.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <locale.h>
#include <time.h>

#include <cmocka.h>

#include "../../../server1/httpdate.h"

#define RFC_EXAMPLE INT64_C(784111777) /* Sun, 06 Nov 1994 08:49:37 GMT */
#define NOW_2025 INT64_C(1748736000)   /* 2025-06-01 00:00:00 */

/* Parses a NUL-terminated string; returns the time, or INT64_MIN if it was rejected. */
static int64_t parse_at(const char *s, int64_t now)
{
    int64_t t = 12345;

    if (httpdate_parse(s, strlen(s), now, &t) < 0) {
        assert_int_equal(t, 12345); /* *out untouched on failure */
        return INT64_MIN;
    }
    return t;
}

static int64_t parse(const char *s)
{
    return parse_at(s, NOW_2025);
}

static void test_httpdate_parse_rfc_examples(void **state)
{
    (void)state;
    assert_int_equal(parse("Sun, 06 Nov 1994 08:49:37 GMT"), RFC_EXAMPLE);
    assert_int_equal(parse("Sunday, 06-Nov-94 08:49:37 GMT"), RFC_EXAMPLE);
    assert_int_equal(parse("Sun Nov  6 08:49:37 1994"), RFC_EXAMPLE);
    /* asctime's day may also be two digits */
    assert_int_equal(parse("Sun Nov 06 08:49:37 1994"), RFC_EXAMPLE);
    /* the day name must be a valid one, but need not match the date */
    assert_int_equal(parse("Mon, 06 Nov 1994 08:49:37 GMT"), RFC_EXAMPLE);
    assert_int_equal(parse("Wednesday, 06-Nov-94 08:49:37 GMT"), RFC_EXAMPLE);
    assert_int_equal(parse("Sat Nov  6 08:49:37 1994"), RFC_EXAMPLE);
    /* s need not be NUL-terminated: only len bytes are read */
    assert_int_equal(httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMTxyz", HTTPDATE_LEN, 0,
                                    &(int64_t){0}),
                     0);
}

static void test_httpdate_format_examples(void **state)
{
    char buf[HTTPDATE_LEN + 8];

    (void)state;
    memset(buf, 'X', sizeof(buf));
    assert_int_equal(httpdate_format(RFC_EXAMPLE, buf), HTTPDATE_LEN);
    assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(buf[HTTPDATE_LEN + 1], 'X'); /* nothing past the NUL */
    httpdate_format(0, buf);
    assert_string_equal(buf, "Thu, 01 Jan 1970 00:00:00 GMT");
    httpdate_format(-1, buf);
    assert_string_equal(buf, "Wed, 31 Dec 1969 23:59:59 GMT");
    httpdate_format(HTTPDATE_MAX, buf);
    assert_string_equal(buf, "Fri, 31 Dec 9999 23:59:59 GMT");
    httpdate_format(HTTPDATE_MIN, buf);
    assert_string_equal(buf, "Sat, 01 Jan 0000 00:00:00 GMT");
    /* out of range: clamped */
    httpdate_format(INT64_MAX, buf);
    assert_string_equal(buf, "Fri, 31 Dec 9999 23:59:59 GMT");
    httpdate_format(INT64_MIN, buf);
    assert_string_equal(buf, "Sat, 01 Jan 0000 00:00:00 GMT");
    assert_int_equal(parse("Fri, 31 Dec 9999 23:59:59 GMT"), HTTPDATE_MAX);
    assert_int_equal(parse("Sat, 01 Jan 0000 00:00:00 GMT"), HTTPDATE_MIN);
    assert_int_equal(parse("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
}

/*
 * Every day from 1970 to 2200 at a few times of day: our output equals gmtime_r + strftime in
 * the C locale, and each of the three forms (also made by strftime) parses back to t.
 */
static void test_httpdate_round_trip_against_libc(void **state)
{
    static const int64_t times[] = {0, 1, 8 * 3600 + 49 * 60 + 37, 43200, 86399};
    const int64_t last_day = INT64_C(84370); /* 2200-12-31 */
    char ours[HTTPDATE_LEN + 1];
    char libc[64];
    char *year;
    long checked = 0;

    (void)state;
    assert_non_null(setlocale(LC_TIME, "C"));
    for (int64_t day = 0; day <= last_day; day++) {
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
            int64_t t = day * 86400 + times[i];
            time_t tt = (time_t)t;
            struct tm tm;
            size_t n;

            assert_non_null(gmtime_r(&tt, &tm));
            n = strftime(libc, sizeof(libc), "%a, %d %b %Y %H:%M:%S GMT", &tm);
            assert_int_equal(n, HTTPDATE_LEN);
            assert_int_equal(httpdate_format(t, ours), HTTPDATE_LEN);
            if (strcmp(ours, libc) != 0)
                fail_msg("t=%lld: ours '%s', libc '%s'", (long long)t, ours, libc);
            assert_int_equal(parse(ours), t);

            n = strftime(libc, sizeof(libc), "%a %b %e %H:%M:%S %Y", &tm);
            assert_int_equal(n, 24);
            assert_int_equal(parse_at(libc, 0), t);
            /* RFC 850 form: the four-digit year cut to two (%y draws -Wformat-y2k) */
            n = strftime(libc, sizeof(libc), "%A, %d-%b-%Y %H:%M:%S GMT", &tm);
            assert_true(n >= 32);
            year = strrchr(libc, '-') + 1;
            memmove(year, year + 2, strlen(year + 2) + 1);
            assert_int_equal(parse_at(libc, t), t); /* now = t: always this century */
            checked++;
        }
    }
    assert_int_equal(checked, (last_day + 1) * 5);
}

static void test_httpdate_leap_years(void **state)
{
    (void)state;
    assert_int_equal(parse("Tue, 29 Feb 2000 12:00:00 GMT"), INT64_C(951825600));
    assert_int_equal(parse("Tue Feb 29 12:00:00 2000"), INT64_C(951825600));
    assert_int_equal(parse("Tuesday, 29-Feb-00 12:00:00 GMT"), INT64_C(951825600));
    assert_int_equal(parse("Thu, 29 Feb 2024 00:00:00 GMT"), INT64_C(1709164800));
    assert_int_equal(parse("Sun, 28 Feb 2100 23:59:59 GMT"), INT64_C(4107542399));
    assert_int_equal(parse("Mon, 01 Mar 2100 00:00:00 GMT"), INT64_C(4107542400));
    assert_int_equal(parse("Mon, 29 Feb 2100 00:00:00 GMT"), INT64_MIN); /* 2100 is not leap */
    assert_int_equal(parse("Thu, 29 Feb 1900 00:00:00 GMT"), INT64_MIN);
    assert_int_equal(parse("Wed, 29 Feb 2023 00:00:00 GMT"), INT64_MIN);
    assert_int_equal(parse("Mon Feb 29 00:00:00 2100"), INT64_MIN);
    assert_int_equal(parse("Sat, 29 Feb 0000 00:00:00 GMT"), HTTPDATE_MIN + 59 * 86400);
}

static void test_httpdate_parse_rejects(void **state)
{
    static const char *const bad[] = {
        "",
        "Sun",
        "Sun, 06 Foo 1994 08:49:37 GMT",  /* bad month */
        "Sun, 06 nov 1994 08:49:37 GMT",  /* month names are case-sensitive */
        "Sun, 06 NOV 1994 08:49:37 GMT",
        "Sun, 32 Jan 1994 08:49:37 GMT",  /* day 32 */
        "Sun, 00 Jan 1994 08:49:37 GMT",  /* day 0 */
        "Sun, 30 Feb 1994 08:49:37 GMT",  /* Feb 30 */
        "Sun, 31 Apr 1994 08:49:37 GMT",  /* Apr 31 */
        "Sun, 06 Nov 1994 24:00:00 GMT",  /* hour 24 */
        "Sun, 06 Nov 1994 08:60:37 GMT",  /* minute 60 */
        "Sun, 06 Nov 1994 08:49:60 GMT",  /* no leap second */
        "Sun, 06 Nov 1994 08:49:37 gmt",  /* lowercase gmt */
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37",      /* missing GMT */
        "Sun, 06 Nov 1994 08:49:37 GMT ", /* trailing bytes */
        "Sun, 06 Nov 1994 08:49:37 GMTX",
        " Sun, 06 Nov 1994 08:49:37 GMT", /* leading space: the caller strips OWS */
        "Sun,  06 Nov 1994 08:49:37 GMT", /* extra spaces */
        "Sun, 06  Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994  08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",   /* one-digit day */
        "Sun, 06 Nov 94 08:49:37 GMT",    /* 2-digit year in IMF form */
        "Sun, 06 Nov 01994 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08.49.37 GMT",
        "Sun, +6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov -994 08:49:37 GMT",
        "Sun 06 Nov 1994 08:49:37 GMT",
        "sun, 06 Nov 1994 08:49:37 GMT",  /* day names are case-sensitive */
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT", /* long name in IMF form */
        "Sun, 06-Nov-94 08:49:37 GMT",    /* short name in RFC 850 form */
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 gmt",
        "Sunday, 06-Nov-94 08:49:37",
        "Sunday, 06 Nov 94 08:49:37 GMT",
        "Sunday, 31-Nov-94 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT ",
        "Sundays, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994 GMT",   /* asctime has no zone */
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 94",
        "Sun Nov  0 08:49:37 1994",
        "Sun Nov 31 08:49:37 1994",
        "Sun Nov   6 08:49:37 1994",
        "Sun Nov  6 08:49:37  1994",
        "Sun Nov  6 08:49:37 1994 ",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]) != INT64_MIN)
            fail_msg("accepted '%s'", bad[i]);
    }
    /* an embedded NUL */
    assert_int_equal(httpdate_parse("Sun, 06 Nov 1994 08:49:37 G\0T", HTTPDATE_LEN, 0,
                                    &(int64_t){0}),
                     -1);
    assert_int_equal(httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMT", HTTPDATE_LEN - 1, 0,
                                    &(int64_t){0}),
                     -1);
}

/* RFC 9110: a two-digit year more than 50 years in the future is the most recent such past. */
static void test_httpdate_rfc850_century(void **state)
{
    (void)state;
    /* now = 2025-06-01 00:00:00; the limit is 2075-06-01 00:00:00 */
    assert_int_equal(parse_at("Saturday, 01-Jan-00 00:00:00 GMT", NOW_2025), INT64_C(946684800));
    assert_int_equal(parse_at("Tuesday, 01-Jan-75 00:00:00 GMT", NOW_2025),
                     INT64_C(3313526400)); /* 2075: 49.4 years ahead */
    assert_int_equal(parse_at("Thursday, 06-Nov-75 00:00:00 GMT", NOW_2025),
                     INT64_C(184464000)); /* 2075-11-06 would be 50.4 years ahead: 1975 */
    assert_int_equal(parse_at("Saturday, 01-Jun-75 00:00:00 GMT", NOW_2025),
                     INT64_C(3326572800)); /* exactly 50 years ahead: still 2075 */
    assert_int_equal(parse_at("Sunday, 01-Jun-75 00:00:01 GMT", NOW_2025),
                     INT64_C(170812801)); /* one second more: 1975 */
    assert_int_equal(parse_at("Sunday, 06-Nov-94 08:49:37 GMT", NOW_2025), RFC_EXAMPLE);
    /* now = 1970-01-01: the window is 1920-01-01 00:00:01 .. 2020-01-01 00:00:00 */
    assert_int_equal(parse_at("Wednesday, 01-Jan-20 00:00:00 GMT", 0), INT64_C(1577836800));
    assert_int_equal(parse_at("Thursday, 01-Jan-20 00:00:01 GMT", 0), INT64_C(-1577923199));
    assert_int_equal(parse_at("Wednesday, 31-Dec-69 23:59:59 GMT", 0), -1);
    /* now = 2090-01-01: "10" is 2110, not 2010 */
    assert_int_equal(parse_at("Wednesday, 01-Jan-10 00:00:00 GMT", INT64_C(3786912000)),
                     INT64_C(4417977600));
    /* the year decides Feb 29: "00" as 2000 is leap, as 2100 is not */
    assert_int_equal(parse_at("Tuesday, 29-Feb-00 00:00:00 GMT", NOW_2025), INT64_C(951782400));
    assert_int_equal(parse_at("Tuesday, 29-Feb-00 00:00:00 GMT", INT64_C(3786912000)),
                     INT64_MIN);
    /* a year outside 0000-9999 is rejected, a now out of range is clamped */
    assert_int_equal(parse_at("Saturday, 01-Jan-10 00:00:00 GMT", HTTPDATE_MAX), INT64_MIN);
    assert_int_equal(parse_at("Friday, 31-Dec-99 23:59:59 GMT", INT64_MAX), HTTPDATE_MAX);
    assert_int_equal(parse_at("Friday, 31-Dec-99 23:59:59 GMT", INT64_MIN), INT64_MIN);
    assert_int_equal(parse_at("Saturday, 01-Jan-00 00:00:00 GMT", INT64_MIN), HTTPDATE_MIN);
}

static void test_httpdate_cache_reformats_on_new_second(void **state)
{
    struct httpdate_cache c;
    const char *p;

    (void)state;
    httpdate_cache_init(&c);
    assert_int_equal(c.sec, -1);
    assert_string_equal(c.text, "Wed, 31 Dec 1969 23:59:59 GMT");
    p = httpdate_cached(&c, RFC_EXAMPLE);
    assert_ptr_equal(p, c.text);
    assert_string_equal(p, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(c.sec, RFC_EXAMPLE);
    /* mark the text: the same second must not reformat it */
    c.text[0] = '#';
    assert_string_equal(httpdate_cached(&c, RFC_EXAMPLE), "#un, 06 Nov 1994 08:49:37 GMT");
    assert_string_equal(httpdate_cached(&c, RFC_EXAMPLE + 1), "Sun, 06 Nov 1994 08:49:38 GMT");
    c.text[0] = '#';
    assert_string_equal(httpdate_cached(&c, RFC_EXAMPLE + 1), "#un, 06 Nov 1994 08:49:38 GMT");
    /* going back a second is a change too */
    assert_string_equal(httpdate_cached(&c, RFC_EXAMPLE), "Sun, 06 Nov 1994 08:49:37 GMT");
    /* a fresh cache asked for -1 already holds the right text */
    httpdate_cache_init(&c);
    assert_string_equal(httpdate_cached(&c, -1), "Wed, 31 Dec 1969 23:59:59 GMT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httpdate_parse_rfc_examples),
        cmocka_unit_test(test_httpdate_format_examples),
        cmocka_unit_test(test_httpdate_round_trip_against_libc),
        cmocka_unit_test(test_httpdate_leap_years),
        cmocka_unit_test(test_httpdate_parse_rejects),
        cmocka_unit_test(test_httpdate_rfc850_century),
        cmocka_unit_test(test_httpdate_cache_reformats_on_new_second),
    };
    return cmocka_run_group_tests_name("httpdate", tests, NULL, NULL);
}
