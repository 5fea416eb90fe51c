/*
 * test_route_users.c - cmocka tests for server1/route_users, through a connection
 * (s1_harness.h): what POST /users and PUT/DELETE /users/{name} answer before server2 is asked
 * (415, 411, 400 for each bad form, 404 for a name that cannot be one, 401, 403 for another
 * account), and 503 when server2 cannot be asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "s1_harness.h"

#define FORM "Content-Type: application/x-www-form-urlencoded\r\n"
#define H_ALICE "Authorization: Basic YWxpY2U6cHc=\r\n" /* alice:pw */
#define BOB "Authorization: Basic Ym9iOnB3\r\n"       /* bob:pw */

/* POST /users with body (and a Content-Length) plus the extra header lines. */
static void create(struct harness *h, const char *extra, const char *body)
{
    char req[1024];

    snprintf(req, sizeof(req), "POST /users HTTP/1.1\r\nHost: t\r\n%sContent-Length: %zu\r\n\r\n%s",
             extra, strlen(body), body);
    h_ask(h, req);
}

static void test_route_users_create_errors(void **state)
{
    struct harness *h = *state;

    create(h, "Content-Type: text/plain\r\n", "username=a&password=b");
    assert_int_equal(h->status, 415);
    h_ask(h, "POST /users HTTP/1.1\r\nHost: t\r\n" FORM "\r\n");
    assert_int_equal(h->status, 411);
    create(h, FORM, "username=a%ZZ&password=b");
    assert_int_equal(h->status, 400);
    assert_string_equal(h->body, "malformed form body\n");
    create(h, FORM, "username=a");
    assert_int_equal(h->status, 400);
    assert_string_equal(h->body, "username and password are required\n");
    create(h, FORM, "username=a+b&password=b");
    assert_int_equal(h->status, 400);
    assert_string_equal(h->body, "username must be 1-64 characters of A-Z a-z 0-9 . _ -\n");
}

static void test_route_users_create_server2_down(void **state)
{
    struct harness *h = *state;

    create(h, FORM, "username=alice&password=pw");
    assert_int_equal(h->status, 503);
    assert_true(h_has(h, "Retry-After: 1"));
}

static void test_route_users_change_errors(void **state)
{
    struct harness *h = *state;

    h_ask(h, "DELETE /users/bad!name HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 404);
    h_ask(h, "DELETE /users/alice HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(h->status, 401);
    assert_true(h_has(h, "WWW-Authenticate: Basic realm=\"files\""));
    h_ask(h, "DELETE /users/alice HTTP/1.1\r\nHost: t\r\nAuthorization: Basic !!\r\n\r\n");
    assert_int_equal(h->status, 401);
    assert_string_equal(h->body, "bad credentials\n");
    h_ask(h, "DELETE /users/alice HTTP/1.1\r\nHost: t\r\n" BOB "\r\n");
    assert_int_equal(h->status, 403);
    /* a new password must be one */
    h_ask(h, "PUT /users/alice HTTP/1.1\r\nHost: t\r\n" H_ALICE FORM
             "Content-Length: 9\r\n\r\npassword=");
    assert_int_equal(h->status, 400);
    /* all checked: server2 is asked, and it is not there */
    h_ask(h, "DELETE /users/alice HTTP/1.1\r\nHost: t\r\n" H_ALICE "\r\n");
    assert_int_equal(h->status, 503);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_users_create_errors, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_route_users_create_server2_down, h_setup, h_teardown),
        cmocka_unit_test_setup_teardown(test_route_users_change_errors, h_setup, h_teardown),
    };
    return cmocka_run_group_tests_name("route_users", tests, NULL, NULL);
}
