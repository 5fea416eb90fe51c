/*
 * test_handler.c - cmocka tests for server1/handler's routing, through a connection
 * (s1_harness.h): a path no route has is 404, a method a route does not take is 405 with the
 * route's Allow, the query string is ignored and absolute-form targets are routed on their path,
 * a target that is not a path is 400; /metrics is served on --metrics-listen only, which serves
 * nothing but it and /healthz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "s1_harness.h"

static void test_handler_unknown_path(void **state)
{
    struct harness *h = *state;

    h_ask(h, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 404);
    assert_string_equal(h->body, "not found\n");
    h_ask(h, "GET /filesx HTTP/1.1\r\nHost: t\r\n\r\n"); /* not under /files/ */
    assert_int_equal(h->status, 404);
}

static void test_handler_methods(void **state)
{
    struct harness *h = *state;

    h->metrics_port = true;
    h_ask(h, "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: GET, HEAD"));
    h->metrics_port = false;
    h_ask(h, "POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: GET, HEAD"));
    h_ask(h, "POST /files/a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: GET, HEAD, PUT, DELETE"));
    h_ask(h, "GET /users HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: POST"));
    h_ask(h, "GET /users/alice HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 405);
    assert_true(h_has(h, "Allow: PUT, DELETE"));
}

static void test_handler_target_forms(void **state)
{
    struct harness *h = *state;

    h->metrics_port = true;
    h_ask(h, "GET /metrics?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 200);
    h_ask(h, "GET http://example.org/metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 200);
    h_ask(h, "GET http://example.org HTTP/1.1\r\nHost: t\r\n\r\n"); /* the path is "/" */
    assert_int_equal(h->status, 404);
    h_ask(h, "GET ftp://example.org/metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 400);
}

static void test_handler_metrics_listener(void **state)
{
    struct harness *h = *state;

    /* the public port: /metrics is an unknown path, counted as one; /healthz is there */
    h_ask(h, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 404);
    assert_string_equal(h->body, "not found\n");
    h_ask(h, "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 503); /* (served: the harness has no server2) */
    /* the metrics listener: /metrics and /healthz, nothing else */
    h->metrics_port = true;
    h_ask(h, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 200);
    assert_non_null(strstr(h->body, "server1_requests_total{route=\"other\",status=\"404\"} 2\n"));
    assert_null(strstr(h->body, "route=\"metrics\",status=\"404\""));
    h_ask(h, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 503);
    h_ask(h, "GET /files/a.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "GET /files/ HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "PUT /files/a.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "Content-Length: 3\r\n\r\nabc");
    assert_int_equal(h->status, 404);
    h_ask(h, "DELETE /files/a.txt HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "POST /users HTTP/1.1\r\nHost: t\r\nContent-Length: 19\r\n\r\n"
             "username=a&password");
    assert_int_equal(h->status, 404);
    h_ask(h, "DELETE /users/alice HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 404);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_handler_unknown_path, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_handler_methods, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_handler_target_forms, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_handler_metrics_listener, h_setup, h_teardown),
    };
    return cmocka_run_group_tests_name("handler", tests, NULL, NULL);
}
