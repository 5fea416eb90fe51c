/*
 * test_route_admin.c - cmocka tests for server1/route_admin, through a connection
 * (s1_harness.h): /metrics is the counters' page in the Prometheus text format (a HEAD has its
 * length only), and /healthz is 503 + Retry-After while server2 does not answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "s1_harness.h"

static void test_route_admin_metrics(void **state)
{
    struct harness *h = *state;
    char *cl;

    h_ask(h, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"); /* counted */
    h->metrics_port = true; /* (the public ports answer /metrics 404: test_handler) */
    h_ask(h, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 200);
    assert_true(h_has(h, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
    assert_non_null(strstr(h->body, "server1_requests_total{route=\"other\",status=\"404\"} 1\n"));
    /* a HEAD: the same length, no bytes */
    cl = strstr(h->resp, "Content-Length: ");
    assert_non_null(cl);
    h_ask_as(h, "HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n", true);
    assert_int_equal(h->status, 200);
    assert_int_equal(h->body - h->resp, (ptrdiff_t)h->resp_len);
    assert_non_null(strstr(h->resp, "Content-Length: "));
    assert_true(strtoull(strstr(h->resp, "Content-Length: ") + 16, NULL, 10) > 100);
}

static void test_route_admin_healthz_down(void **state)
{
    struct harness *h = *state;

    h_ask(h, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 503);
    assert_true(h_has(h, "Retry-After: 1"));
    assert_string_equal(h->body, "auth backend unavailable\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_admin_metrics, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_route_admin_healthz_down, h_setup, h_teardown),
    };
    return cmocka_run_group_tests_name("route_admin", tests, NULL, NULL);
}
