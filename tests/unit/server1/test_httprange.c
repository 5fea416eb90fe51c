/*
 * test_httprange.c - cmocka tests for server1/httprange: the Range header (RFC 9110 §14).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/httprange.h"

static uint64_t off;
static uint64_t count;

/* Parses the NUL-terminated v; off and count are poisoned so a stale value cannot pass. */
static enum httprange_result parse(const char *v, uint64_t size)
{
    off = 0xdead;
    count = 0xbeef;
    return httprange_parse(v, strlen(v), size, &off, &count);
}

/* Asserts that v selects exactly [o, o + n) of a size-byte representation. */
#define assert_one(v, size, o, n)                                                                 \
    do {                                                                                          \
        assert_int_equal(parse((v), (size)), HTTPRANGE_ONE);                                      \
        assert_true(off == (uint64_t)(o));                                                        \
        assert_true(count == (uint64_t)(n));                                                      \
    } while (0)

static void test_httprange_parse_basic(void **state)
{
    (void)state;
    assert_one("bytes=0-0", 100, 0, 1);
    assert_one("bytes=0-99", 100, 0, 100);
    assert_one("bytes=10-19", 100, 10, 10);
    assert_one("bytes=10-", 100, 10, 90);
    assert_one("bytes=-10", 100, 90, 10);
    /* the last byte, three ways */
    assert_one("bytes=99-", 100, 99, 1);
    assert_one("bytes=99-99", 100, 99, 1);
    assert_one("bytes=-1", 100, 99, 1);
    /* leading zeros are digits like any other */
    assert_one("bytes=007-0008", 100, 7, 2);
    /* a one-byte representation */
    assert_one("bytes=0-", 1, 0, 1);
    assert_one("bytes=-1", 1, 0, 1);
}

static void test_httprange_parse_clamping(void **state)
{
    (void)state;
    /* last >= size is clamped to size - 1 */
    assert_one("bytes=0-100", 100, 0, 100);
    assert_one("bytes=50-1000000", 100, 50, 50);
    assert_one("bytes=99-18446744073709551615", 100, 99, 1);
    /* a suffix longer than the file selects all of it */
    assert_one("bytes=-100", 100, 0, 100);
    assert_one("bytes=-101", 100, 0, 100);
    assert_one("bytes=-18446744073709551615", 100, 0, 100);
}

static void test_httprange_parse_unsatisfiable(void **state)
{
    (void)state;
    assert_int_equal(parse("bytes=100-", 100), HTTPRANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=100-100", 100), HTTPRANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=100-200", 100), HTTPRANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=18446744073709551615-", 100), HTTPRANGE_UNSATISFIABLE);
    /* a zero suffix selects nothing */
    assert_int_equal(parse("bytes=-0", 100), HTTPRANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=-000", 100), HTTPRANGE_UNSATISFIABLE);
    /* all of them unsatisfiable */
    assert_int_equal(parse("bytes=100-, 200-300, -0", 100), HTTPRANGE_UNSATISFIABLE);
    /* the unsatisfiable ones are dropped when another is satisfiable */
    assert_one("bytes=100-, 5-9, -0", 100, 5, 5);
    assert_one("bytes=-0,200-", 300, 200, 100);
}

static void test_httprange_parse_zero_length(void **state)
{
    (void)state;
    /* no content: Range is ignored whatever it says (200 with Content-Length: 0) */
    assert_int_equal(parse("bytes=0-0", 0), HTTPRANGE_IGNORE);  /* unsatisfiable (§14.1.2) */
    assert_int_equal(parse("bytes=0-", 0), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=5-10", 0), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=-0", 0), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=-1", 0), HTTPRANGE_IGNORE);   /* satisfiable, selects nothing */
    assert_int_equal(parse("bytes=-500", 0), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-0,-1", 0), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=1-0", 0), HTTPRANGE_IGNORE);
    assert_true(off == 0xdead && count == 0xbeef); /* left alone */
    /* one byte more and the rules apply */
    assert_int_equal(parse("bytes=1-", 1), HTTPRANGE_UNSATISFIABLE);
    assert_one("bytes=0-0", 1, 0, 1);
}

static void test_httprange_parse_unit(void **state)
{
    (void)state;
    assert_one("Bytes=0-1", 10, 0, 2);
    assert_one("BYTES=0-1", 10, 0, 2);
    assert_one("bYtEs=-3", 10, 7, 3);
    assert_int_equal(parse("items=0-1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("byte=0-1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytesx=0-1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes 0-1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes =0-1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("=0-1", 10), HTTPRANGE_IGNORE);
}

static void test_httprange_parse_list_syntax(void **state)
{
    (void)state;
    /* OWS around commas, empty elements */
    assert_one("bytes=0-1,2-3", 10, 0, 4);
    assert_one("bytes=0-1 , 2-3", 10, 0, 4);
    assert_one("bytes=0-1\t,\t2-3", 10, 0, 4);
    assert_one("bytes=0-1,,2-3", 10, 0, 4);
    assert_one("bytes=,0-1", 10, 0, 2);
    assert_one("bytes=0-1,", 10, 0, 2);
    assert_one("bytes=0-1, ,", 10, 0, 2);
    assert_one("bytes= 0-1", 10, 0, 2); /* OWS before the first element: lenient */
    /* an empty set is not a range-set */
    assert_int_equal(parse("bytes=,", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=, ,,", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes= ", 10), HTTPRANGE_IGNORE);
    /* no whitespace inside a range-spec, and elements need a comma between them */
    assert_int_equal(parse("bytes=0 -1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0- 1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=- 1", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-1 2-3", 10), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-1;2-3", 10), HTTPRANGE_IGNORE);
}

static void test_httprange_parse_garbage(void **state)
{
    static const char *const bad[] = {
        "bytes=5-4",   "bytes=1-0",   "bytes=-",    "bytes=--1",  "bytes=0--1", "bytes=+1-2",
        "bytes=1-+2",  "bytes=-+1",   "bytes=a-b",  "bytes=1-2x", "bytes=x",    "bytes=1",
        "bytes=0x1-2", "bytes=1.0-2", "bytes=0-1,x", "bytes=0-1,5-4", "bytes=1e3-", "bytes=\xff",
    };

    (void)state;
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        if (parse(bad[k], 100) != HTTPRANGE_IGNORE)
            fail_msg("'%s' is not ignored", bad[k]);
    }
    /* the length is honoured: the bytes after len are never part of the value */
    assert_int_equal(httprange_parse("bytes=0-1x", 9, 10, &off, &count), HTTPRANGE_ONE);
    assert_true(off == 0 && count == 2);
    assert_int_equal(httprange_parse("bytes=0-", 7, 10, &off, &count), HTTPRANGE_IGNORE);
    assert_int_equal(httprange_parse("bytes=0-", 8, 10, &off, &count), HTTPRANGE_ONE);
}

static void test_httprange_parse_overflow(void **state)
{
    (void)state;
    /* UINT64_MAX itself is fine, one more is a syntax error (ignored, not 416) */
    assert_int_equal(parse("bytes=18446744073709551615-", 100), HTTPRANGE_UNSATISFIABLE);
    assert_int_equal(parse("bytes=18446744073709551616-", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-18446744073709551616", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=-18446744073709551616", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=99999999999999999999-", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-1,99999999999999999999999999999-", 100), HTTPRANGE_IGNORE);
    /* many leading zeros do not overflow */
    assert_one("bytes=0000000000000000000000000000001-0000000000000000000000000000002", 100, 1, 2);
}

static void test_httprange_parse_huge_size(void **state)
{
    const uint64_t max = UINT64_MAX;

    (void)state;
    assert_one("bytes=0-", max, 0, max);
    assert_one("bytes=-1", max, max - 1, 1);
    assert_one("bytes=-18446744073709551615", max, 0, max);
    assert_one("bytes=18446744073709551614-", max, max - 1, 1);
    assert_one("bytes=18446744073709551614-18446744073709551615", max, max - 1, 1);
    assert_one("bytes=0-18446744073709551615", max, 0, max);
    assert_int_equal(parse("bytes=18446744073709551615-", max), HTTPRANGE_UNSATISFIABLE);
    assert_one("bytes=0-18446744073709551613,18446744073709551614-", max, 0, max);
    assert_int_equal(parse("bytes=0-0,18446744073709551614-", max), HTTPRANGE_IGNORE);
}

static void test_httprange_parse_coalesce(void **state)
{
    (void)state;
    /* overlapping */
    assert_one("bytes=0-10,5-20", 100, 0, 21);
    assert_one("bytes=5-20,0-10", 100, 0, 21);
    assert_one("bytes=0-50,10-20", 100, 0, 51);
    assert_one("bytes=0-1,0-1,0-1", 100, 0, 2);
    /* adjacent */
    assert_one("bytes=0-9,10-19", 100, 0, 20);
    assert_one("bytes=10-19,0-9", 100, 0, 20);
    assert_one("bytes=20-29,0-9,10-19", 100, 0, 30);
    /* open ends and suffixes join in too */
    assert_one("bytes=0-49,50-", 100, 0, 100);
    assert_one("bytes=0-89,-10", 100, 0, 100);
    assert_one("bytes=-10,80-95", 100, 80, 20);
    assert_one("bytes=90-,-20", 100, 80, 20);
    /* clamped ranges coalesce after clamping */
    assert_one("bytes=50-500,0-49", 100, 0, 100);
    /* 16 one-byte ranges in reverse order: the sort puts them together */
    assert_one("bytes=15-15,14-14,13-13,12-12,11-11,10-10,9-9,8-8,7-7,6-6,5-5,4-4,3-3,2-2,1-1,0-0",
               100, 0, 16);
}

static void test_httprange_parse_disjoint(void **state)
{
    (void)state;
    assert_int_equal(parse("bytes=0-0,2-2", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-9,11-19", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=0-0,-1", 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=50-,0-48", 100), HTTPRANGE_IGNORE);
    /* one disjoint pair among joined ones still makes two */
    assert_int_equal(parse("bytes=0-9,10-19,30-39", 100), HTTPRANGE_IGNORE);
}

static void test_httprange_parse_max_parts(void **state)
{
    char v[512];
    size_t n = (size_t)snprintf(v, sizeof(v), "bytes=0-0");

    (void)state;
    for (int k = 1; k < HTTPRANGE_MAX_PARTS; k++)
        n += (size_t)snprintf(v + n, sizeof(v) - n, ",%d-%d", k, k);
    assert_one(v, 100, 0, HTTPRANGE_MAX_PARTS); /* 16: fine */
    /* empty elements are not counted */
    memcpy(v + n, ",,,", 4);
    assert_one(v, 100, 0, HTTPRANGE_MAX_PARTS);
    /* 17: ignored, even when all of them would coalesce or none is satisfiable */
    snprintf(v + n, sizeof(v) - n, ",%d-%d", HTTPRANGE_MAX_PARTS, HTTPRANGE_MAX_PARTS);
    assert_int_equal(parse(v, 100), HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,"
                           "200-,200-,200-,200-,200-",
                           100),
                     HTTPRANGE_IGNORE);
    assert_int_equal(parse("bytes=200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,200-,"
                           "200-,200-,200-,200-",
                           100),
                     HTTPRANGE_UNSATISFIABLE);
}

static void test_httprange_content_range(void **state)
{
    char out[HTTPRANGE_CONTENT_RANGE_MAX];
    char small[16];

    (void)state;
    assert_int_equal(httprange_content_range(out, sizeof(out), 0, 1, 100), 13);
    assert_string_equal(out, "bytes 0-0/100");
    assert_int_equal(httprange_content_range(out, sizeof(out), 90, 10, 100), 15);
    assert_string_equal(out, "bytes 90-99/100");
    /* the longest value fits HTTPRANGE_CONTENT_RANGE_MAX exactly */
    assert_int_equal(httprange_content_range(out, sizeof(out), UINT64_MAX - 1, 1, UINT64_MAX),
                     sizeof(out) - 1);
    assert_string_equal(
        out, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
    /* too small: 0 and an empty string; exactly big enough: fine */
    assert_int_equal(httprange_content_range(small, sizeof(small), 100, 200, 1000), 0);
    assert_string_equal(small, "");
    assert_int_equal(httprange_content_range(small, 14, 0, 1, 100), 13);
    assert_int_equal(httprange_content_range(small, 13, 0, 1, 100), 0);
    assert_int_equal(httprange_content_range(small, 0, 0, 1, 100), 0);
    /* not a range inside the representation */
    assert_int_equal(httprange_content_range(out, sizeof(out), 0, 0, 100), 0);
    assert_int_equal(httprange_content_range(out, sizeof(out), 100, 1, 100), 0);
    assert_int_equal(httprange_content_range(out, sizeof(out), 50, 51, 100), 0);
    assert_int_equal(httprange_content_range(out, sizeof(out), 1, UINT64_MAX, UINT64_MAX), 0);
}

static void test_httprange_unsatisfied(void **state)
{
    char out[HTTPRANGE_CONTENT_RANGE_MAX];

    (void)state;
    assert_int_equal(httprange_unsatisfied(out, sizeof(out), 100), 11);
    assert_string_equal(out, "bytes */100");
    assert_int_equal(httprange_unsatisfied(out, sizeof(out), 0), 9);
    assert_string_equal(out, "bytes */0");
    assert_int_equal(httprange_unsatisfied(out, sizeof(out), UINT64_MAX), 28);
    assert_int_equal(httprange_unsatisfied(out, 10, 100), 0);
    assert_string_equal(out, "");
    assert_int_equal(httprange_unsatisfied(out, 12, 100), 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httprange_parse_basic),
        cmocka_unit_test(test_httprange_parse_clamping),
        cmocka_unit_test(test_httprange_parse_unsatisfiable),
        cmocka_unit_test(test_httprange_parse_zero_length),
        cmocka_unit_test(test_httprange_parse_unit),
        cmocka_unit_test(test_httprange_parse_list_syntax),
        cmocka_unit_test(test_httprange_parse_garbage),
        cmocka_unit_test(test_httprange_parse_overflow),
        cmocka_unit_test(test_httprange_parse_huge_size),
        cmocka_unit_test(test_httprange_parse_coalesce),
        cmocka_unit_test(test_httprange_parse_disjoint),
        cmocka_unit_test(test_httprange_parse_max_parts),
        cmocka_unit_test(test_httprange_content_range),
        cmocka_unit_test(test_httprange_unsatisfied),
    };
    return cmocka_run_group_tests_name("httprange", tests, NULL, NULL);
}
