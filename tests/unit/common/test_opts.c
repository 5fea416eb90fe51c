/*
 * test_opts.c - the strict flag-value parsers and the account rules in common/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "account.h"
#include "opts.h"

static void test_opts_parse_u64(void **state)
{
    char err[OPTS_ERR_LEN];
    uint64_t v = 0;

    (void)state;
    assert_int_equal(opts_parse_u64("42", 1, 100, &v, err), 0);
    assert_int_equal(v, 42);
    assert_int_equal(opts_parse_u64("1", 1, 100, &v, err), 0);
    assert_int_equal(opts_parse_u64("100", 1, 100, &v, err), 0);
    assert_int_equal(opts_parse_u64("101", 1, 100, &v, err), -1);
    assert_non_null(strstr(err, "out of range"));
    assert_int_equal(opts_parse_u64("0", 1, 100, &v, err), -1);
    assert_int_equal(opts_parse_u64("", 0, 100, &v, err), -1);
    assert_int_equal(opts_parse_u64("-1", 0, 100, &v, err), -1);
    assert_int_equal(opts_parse_u64("12abc", 0, 100, &v, err), -1);
    assert_int_equal(opts_parse_u64(" 12", 0, 100, &v, err), -1);
    assert_int_equal(opts_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v, err), -1);
    assert_int_equal(v, 100); /* unchanged by failures */
}

static void test_opts_parse_size(void **state)
{
    char err[OPTS_ERR_LEN];
    uint64_t v = 0;

    (void)state;
    assert_int_equal(opts_parse_size("64k", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(opts_parse_size("1M", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(opts_parse_size("2G", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 2ull << 30);
    assert_int_equal(opts_parse_size("1.5k", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 1536);
    assert_int_equal(opts_parse_size("123", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 123);
    assert_int_equal(opts_parse_size("1x", 0, UINT64_MAX, &v, err), -1);
    assert_non_null(strstr(err, "unknown unit"));
    assert_int_equal(opts_parse_size("0.3", 0, UINT64_MAX, &v, err), -1);
    assert_int_equal(opts_parse_size("2k", 0, 1024, &v, err), -1);
    assert_int_equal(opts_parse_size("-1k", 0, 1024, &v, err), -1);
}

static void test_opts_parse_duration(void **state)
{
    char err[OPTS_ERR_LEN];
    uint64_t v = 0;

    (void)state;
    assert_int_equal(opts_parse_duration_us("10s", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 10000000);
    assert_int_equal(opts_parse_duration_us("500ms", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 500000);
    assert_int_equal(opts_parse_duration_us("2m", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 120000000);
    assert_int_equal(opts_parse_duration_us("3", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 3000000);
    assert_int_equal(opts_parse_duration_us("250us", 0, UINT64_MAX, &v, err), 0);
    assert_int_equal(v, 250);
    assert_int_equal(opts_parse_duration_us("1h", 0, UINT64_MAX, &v, err), -1);
    assert_int_equal(opts_parse_duration_us("inf", 0, UINT64_MAX, &v, err), -1);
    assert_int_equal(opts_parse_duration_us("nan", 0, UINT64_MAX, &v, err), -1);
}

static void test_opts_parse_double(void **state)
{
    char err[OPTS_ERR_LEN];
    double v = 0;

    (void)state;
    assert_int_equal(opts_parse_double("0.25", 0, 1, &v, err), 0);
    assert_true(v == 0.25);
    assert_int_equal(opts_parse_double("1.5", 0, 1, &v, err), -1);
    assert_int_equal(opts_parse_double("x", 0, 1, &v, err), -1);
    assert_int_equal(opts_parse_double("", 0, 1, &v, err), -1);
}

static void test_account_username(void **state)
{
    char longname[ACCOUNT_USER_MAX + 2];

    (void)state;
    assert_true(account_username_valid("alice", 5));
    assert_true(account_username_valid("A.b_c-9", 7));
    assert_false(account_username_valid("", 0));
    assert_false(account_username_valid("al ice", 6));
    assert_false(account_username_valid("al/ice", 6));
    assert_false(account_username_valid("al\0ce", 5));
    assert_false(account_username_valid("al:ce", 5));
    assert_false(account_username_valid("\xc3\xa9t\xc3\xa9", 6));
    memset(longname, 'x', sizeof(longname));
    assert_true(account_username_valid(longname, ACCOUNT_USER_MAX));
    assert_false(account_username_valid(longname, ACCOUNT_USER_MAX + 1));
}

static void test_account_password(void **state)
{
    char pw[ACCOUNT_PASS_MAX + 2];

    (void)state;
    assert_true(account_password_valid("x", 1));
    assert_true(account_password_valid("p@ss w:rd", 9));
    assert_false(account_password_valid("", 0));
    assert_false(account_password_valid("a\0b", 3));
    memset(pw, 'p', sizeof(pw));
    assert_true(account_password_valid(pw, ACCOUNT_PASS_MAX));
    assert_false(account_password_valid(pw, ACCOUNT_PASS_MAX + 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_parse_u64),      cmocka_unit_test(test_opts_parse_size),
        cmocka_unit_test(test_opts_parse_duration), cmocka_unit_test(test_opts_parse_double),
        cmocka_unit_test(test_account_username),    cmocka_unit_test(test_account_password),
    };
    return cmocka_run_group_tests_name("opts", tests, NULL, NULL);
}
