/*
 * test_basic_auth.c - cmocka tests for server1/basic_auth: RFC 4648 base64 vectors, strictness
 * (bad characters, padding, non-canonical bits), and the Authorization header rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/basic_auth.h"

static void check_decode(const char *in, const char *want)
{
    unsigned char out[64];
    ssize_t n = http_base64_decode(in, strlen(in), out, sizeof(out));
    if (n < 0)
        fail_msg("decode '%s' failed", in);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, (size_t)n);
}

static void check_bad(const char *in)
{
    unsigned char out[64];
    if (http_base64_decode(in, strlen(in), out, sizeof(out)) >= 0)
        fail_msg("decode '%s' should fail", in);
}

static void test_base64_rfc4648_vectors(void **state)
{
    (void)state;
    check_decode("", "");
    check_decode("Zg==", "f");
    check_decode("Zm8=", "fo");
    check_decode("Zm9v", "foo");
    check_decode("Zm9vYg==", "foob");
    check_decode("Zm9vYmE=", "fooba");
    check_decode("Zm9vYmFy", "foobar");
    check_decode("YWxpY2U6c2VjcmV0", "alice:secret");
    check_decode("+/+/", "\xfb\xff\xbf");
}

static void test_base64_strict(void **state)
{
    (void)state;
    check_bad("Zg");        /* no padding */
    check_bad("Zg=");       /* short padding */
    check_bad("Zg===");
    check_bad("Z===");
    check_bad("====");
    check_bad("Zg==Zg=="); /* padding in the middle */
    check_bad("Zm=v");
    check_bad("Zh==");      /* unused bits set: not canonical */
    check_bad("Zm9=");
    check_bad("Zm9v YmFy"); /* whitespace */
    check_bad("Zm9v\n");
    check_bad("Zm9-");      /* base64url alphabet */
    check_bad("Zm9_");
    check_bad("Zm9*");
    {
        unsigned char out[2];
        assert_true(http_base64_decode("Zm9v", 4, out, sizeof(out)) < 0); /* too small */
    }
}

static void test_basic_parse_ok(void **state)
{
    struct http_basic_cred c;
    const char *why = NULL;
    const char *v = "Basic YWxpY2U6c2VjcmV0";
    (void)state;

    assert_int_equal(http_basic_parse(v, strlen(v), &c, &why), 0);
    assert_string_equal(c.user, "alice");
    assert_int_equal(c.user_len, 5);
    assert_string_equal(c.pass, "secret");
    assert_int_equal(c.pass_len, 6);
    /* scheme is case-insensitive; a password may contain ':' */
    v = "bAsIc   YWxpY2U6c2U6Y3JldA==";
    assert_int_equal(http_basic_parse(v, strlen(v), &c, &why), 0);
    assert_string_equal(c.user, "alice");
    assert_string_equal(c.pass, "se:cret");
}

static void expect_reject(const char *v)
{
    struct http_basic_cred c;
    const char *why = NULL;
    if (http_basic_parse(v, strlen(v), &c, &why) == 0)
        fail_msg("'%s' should be rejected", v);
    assert_non_null(why);
}

static void test_basic_parse_rejects(void **state)
{
    (void)state;
    expect_reject("");
    expect_reject("Basic");
    expect_reject("Basic ");
    expect_reject("Bearer YWxpY2U6c2VjcmV0");
    expect_reject("BasicYWxpY2U6c2VjcmV0");
    expect_reject("Basic YWxpY2U6c2VjcmV0!");  /* bad char */
    expect_reject("Basic YWxpY2U6c2VjcmV");    /* bad length */
    expect_reject("Basic YWxpY2U=");           /* "alice": no colon */
    expect_reject("Basic OnNlY3JldA==");       /* ":secret": empty user */
    expect_reject("Basic YWxpY2U6");           /* "alice:": empty password */
    expect_reject("Basic YS9iOnNlY3JldA==");   /* "a/b:secret": bad username char */
    expect_reject("Basic YWxpY2U6cwBj");       /* "alice:s\0c": NUL in password */
    {
        /* longer than any valid user:password */
        char v[600] = "Basic ";
        memset(v + 6, 'Q', 580);
        v[586] = '\0';
        expect_reject(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64_rfc4648_vectors),
        cmocka_unit_test(test_base64_strict),
        cmocka_unit_test(test_basic_parse_ok),
        cmocka_unit_test(test_basic_parse_rejects),
    };
    return cmocka_run_group_tests_name("basic_auth", tests, NULL, NULL);
}
