/*
 * test_pwhash.c - server2's argon2id wrapper: a hash made at the minimum cost verifies with
 * the right password only, salts differ, malformed stored strings never verify, and the
 * --hash-cost names parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "../../server2/pwhash.h"

static int setup(void **state)
{
    (void)state;
    return sodium_init() < 0 ? -1 : 0;
}

static void test_pwhash_roundtrip(void **state)
{
    char h1[PWHASH_STR_MAX];
    char h2[PWHASH_STR_MAX];
    const char pw[] = "correct horse\xff battery";

    (void)state;
    assert_int_equal(pwhash_hash(PWHASH_MIN, pw, sizeof(pw) - 1, h1), 0);
    assert_memory_equal(h1, "$argon2id$", 10);
    assert_null(strstr(h1, "horse"));
    assert_true(pwhash_verify(h1, pw, sizeof(pw) - 1));
    assert_false(pwhash_verify(h1, pw, sizeof(pw) - 2));
    assert_false(pwhash_verify(h1, "wrong", 5));
    /* random salt: the same password hashes differently, both verify */
    assert_int_equal(pwhash_hash(PWHASH_MIN, pw, sizeof(pw) - 1, h2), 0);
    assert_string_not_equal(h1, h2);
    assert_true(pwhash_verify(h2, pw, sizeof(pw) - 1));
}

static void test_pwhash_malformed(void **state)
{
    char h[PWHASH_STR_MAX];
    char longer[PWHASH_STR_MAX + 10];

    (void)state;
    assert_false(pwhash_verify("", "x", 1));
    assert_false(pwhash_verify("plaintext", "plaintext", 9));
    assert_false(pwhash_verify("$argon2id$v=19$m=8,t=1,p=1$", "x", 1));
    assert_int_equal(pwhash_hash(PWHASH_MIN, "x", 1, h), 0);
    h[strlen(h) - 2] ^= 1; /* corrupt the digest */
    assert_false(pwhash_verify(h, "x", 1));
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_false(pwhash_verify(longer, "x", 1));
}

static void test_pwhash_cost_names(void **state)
{
    enum pwhash_cost c;

    (void)state;
    assert_int_equal(pwhash_cost_parse("min", &c), 0);
    assert_int_equal(c, PWHASH_MIN);
    assert_int_equal(pwhash_cost_parse("interactive", &c), 0);
    assert_int_equal(c, PWHASH_INTERACTIVE);
    assert_int_equal(pwhash_cost_parse("moderate", &c), 0);
    assert_int_equal(c, PWHASH_MODERATE);
    assert_int_equal(pwhash_cost_parse("MIN", &c), -1);
    assert_int_equal(pwhash_cost_parse("", &c), -1);
    assert_string_equal(pwhash_cost_name(PWHASH_INTERACTIVE), "interactive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pwhash_roundtrip),
        cmocka_unit_test(test_pwhash_malformed),
        cmocka_unit_test(test_pwhash_cost_names),
    };
    return cmocka_run_group_tests_name("pwhash", tests, setup, NULL);
}
