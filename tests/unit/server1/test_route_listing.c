/*
 * test_route_listing.c - cmocka tests for server1/route_listing, through a connection
 * (s1_harness.h): a listing needs credentials (401), a bad cursor is 400 before server2 is
 * asked, and 503 when server2 cannot be asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "s1_harness.h"

static void test_route_listing_errors(void **state)
{
    struct harness *h = *state;

    h_ask(h, "GET /files/ HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 401);
    assert_true(h_has(h, "WWW-Authenticate: Basic realm=\"files\""));
    h_ask(h, "GET /files/sub/?after=%ZZ HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 400);
    assert_string_equal(h->body, "bad after= in a listing's query\n");
    h_ask(h, "GET /files/sub/ HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 503);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_listing_errors, h_setup, h_teardown),
    };
    return cmocka_run_group_tests_name("route_listing", tests, NULL, NULL);
}
