/*
 * test_backend_mysql.c - what can be checked of the MariaDB backend without a server: it connects
 * without CLIENT_MULTI_STATEMENTS (one statement can never carry a second), and the row
 * counts its prepared statements are made for (powers of two, so at most 11 per kind cover
 * every batch size up to 1024). The statements themselves run in test_server2.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <mysql.h>

#include "../../../server2/backend.h"
#include "../../../server2/config.h"

static void test_s2_mysql_no_multi_statements(void **state)
{
    (void)state;
    assert_int_equal(backend_mysql_client_flags() & CLIENT_MULTI_STATEMENTS, 0);
    assert_int_equal(backend_mysql_client_flags() & CLIENT_MULTI_RESULTS, 0);
}

static void test_s2_mysql_stmt_rows(void **state)
{
    (void)state;
    assert_int_equal(backend_mysql_stmt_rows(1), 1);
    assert_int_equal(backend_mysql_stmt_rows(2), 2);
    assert_int_equal(backend_mysql_stmt_rows(3), 4);
    assert_int_equal(backend_mysql_stmt_rows(64), 64);
    assert_int_equal(backend_mysql_stmt_rows(65), 128);
    assert_int_equal(backend_mysql_stmt_rows(S2_BATCH_MAX), 1024);
    for (size_t n = 1; n <= S2_BATCH_MAX; n++) {
        size_t r = backend_mysql_stmt_rows(n);
        assert_true(r >= n && r < 2 * n && (r & (r - 1)) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s2_mysql_no_multi_statements),
        cmocka_unit_test(test_s2_mysql_stmt_rows),
    };
    return cmocka_run_group_tests_name("s2_mysql", tests, NULL, NULL);
}
