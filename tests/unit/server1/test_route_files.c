/*
 * test_route_files.c - cmocka tests for server1/route_files, through a connection
 * (s1_harness.h): a file needs credentials (401 for none or malformed ones), PUT and DELETE are
 * 405 with --read-only (a PUT's body unread: the connection closes), and 503 when server2
 * cannot be asked. The bodies a file is answered with are test_source.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "s1_harness.h"

static void test_route_files_credentials(void **state)
{
    struct harness *h = *state;

    h_ask(h, "GET /files/a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 401);
    assert_true(h_has(h, "WWW-Authenticate: Basic realm=\"files\""));
    assert_string_equal(h->body, "credentials required\n");
    h_ask(h, "GET /files/a.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer x\r\n\r\n");
    assert_int_equal(h->status, 401);
    assert_string_equal(h->body, "bad credentials\n");
    h_ask(h, "GET /files/a.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 503);
    assert_true(h_has(h, "Retry-After: 1"));
}

static void test_route_files_read_only(void **state)
{
    struct harness *h = *state;

    h_ask(h, "PUT /files/new.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "Content-Length: 3\r\n\r\nabc");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: GET, HEAD"));
    assert_true(h_has(h, "Connection: close"));
    h_ask(h, "DELETE /files/a.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 405);
    assert_string_equal(h->body, "uploads are disabled (--read-only)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_files_credentials, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_route_files_read_only, h_setup, h_teardown),
    };
    return cmocka_run_group_tests_name("route_files", tests, NULL, NULL);
}
