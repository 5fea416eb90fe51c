/*
 * test_form.c - cmocka tests for server1/form: application/x-www-form-urlencoded bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/form.h"

static char user[65];
static char pass[257];
static struct http_form_field F[2];

static int parse(const char *body)
{
    const char *why = NULL;
    F[0] = (struct http_form_field){.name = "username", .out = user, .cap = sizeof(user)};
    F[1] = (struct http_form_field){.name = "password", .out = pass, .cap = sizeof(pass)};
    return http_form_parse(body, strlen(body), F, 2, &why);
}

static void test_form_basic(void **state)
{
    (void)state;
    assert_int_equal(parse("username=alice&password=secret"), 0);
    assert_true(F[0].found);
    assert_string_equal(user, "alice");
    assert_true(F[1].found);
    assert_string_equal(pass, "secret");
    assert_int_equal(F[1].len, 6);
    /* order does not matter; unknown fields are ignored; empty pairs are skipped */
    assert_int_equal(parse("&password=p&x=1&&username=u&"), 0);
    assert_string_equal(user, "u");
    assert_string_equal(pass, "p");
}

static void test_form_decoding(void **state)
{
    (void)state;
    assert_int_equal(parse("username=a%2Db&password=s+e%20c%25r%3d%26t"), 0);
    assert_string_equal(user, "a-b");
    assert_string_equal(pass, "s e c%r=&t");
    /* encoded field names */
    assert_int_equal(parse("user%6eame=x&pass%77ord=y"), 0);
    assert_string_equal(user, "x");
    assert_string_equal(pass, "y");
    /* %00 decodes to a NUL byte; the account rules reject it later */
    assert_int_equal(parse("username=a&password=b%00c"), 0);
    assert_int_equal(F[1].len, 3);
    assert_int_equal(pass[1], '\0');
}

static void test_form_missing_fields(void **state)
{
    (void)state;
    assert_int_equal(parse("username=alice"), 0);
    assert_true(F[0].found);
    assert_false(F[1].found);
    assert_int_equal(parse(""), 0);
    assert_false(F[0].found);
    assert_int_equal(parse("username=&password="), 0);
    assert_true(F[0].found);
    assert_int_equal(F[0].len, 0);
}

static void test_form_errors(void **state)
{
    (void)state;
    assert_int_equal(parse("username=a%zzb&password=x"), -1);  /* bad hex */
    assert_int_equal(parse("username=ab%2&password=x"), -1);   /* truncated escape */
    assert_int_equal(parse("username=ab&password=x%"), -1);
    assert_int_equal(parse("username=a&username=b&password=x"), -1); /* repeated */
    assert_int_equal(parse("username&password=x"), -1);        /* no '=' */
    assert_int_equal(parse("other=%G0&username=a&password=x"), -1); /* bad escape anywhere */
    {
        char body[400];
        memcpy(body, "username=", 9);
        memset(body + 9, 'a', 65);
        strcpy(body + 74, "&password=x");
        assert_int_equal(parse(body), -1); /* too long for the buffer */
    }
}

static void test_form_content_type(void **state)
{
    (void)state;
    assert_true(http_form_is_urlencoded("application/x-www-form-urlencoded", 33));
    assert_true(http_form_is_urlencoded("Application/X-WWW-Form-Urlencoded; charset=UTF-8", 48));
    assert_false(http_form_is_urlencoded("application/json", 16));
    assert_false(http_form_is_urlencoded("application/x-www-form-urlencodedx", 34));
    assert_false(http_form_is_urlencoded("", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_form_basic),
        cmocka_unit_test(test_form_decoding),
        cmocka_unit_test(test_form_missing_fields),
        cmocka_unit_test(test_form_errors),
        cmocka_unit_test(test_form_content_type),
    };
    return cmocka_run_group_tests_name("form", tests, NULL, NULL);
}
