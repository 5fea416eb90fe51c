/*
 * test_pwhash.c - server2's argon2id wrapper: a hash made at the minimum cost verifies with
 * the right password only, salts differ, malformed stored strings never verify, its strings
 * and libsodium's are interchangeable, and the --hash-cost names parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "../../../server2/pwhash.h"

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

/*
 * The two implementations read each other's strings: at the minimum cost pwhash makes and
 * checks them with libargon2, and libsodium must accept what it makes and be accepted by it;
 * above it both go to libsodium.
 */
static void test_pwhash_same_strings_as_libsodium(void **state)
{
    char ours[PWHASH_STR_MAX];
    char theirs[crypto_pwhash_STRBYTES];
    char edited[PWHASH_STR_MAX + 16];
    const char pw[] = "s3cret \x01 pass";
    char *dollar;

    (void)state;
    assert_int_equal(pwhash_hash(PWHASH_MIN, pw, sizeof(pw) - 1, ours), 0);
    assert_int_equal(strncmp(ours, "$argon2id$v=19$m=8,t=1,p=1$", 27), 0);
    assert_int_equal(crypto_pwhash_str_verify(ours, pw, sizeof(pw) - 1), 0);
    assert_int_not_equal(crypto_pwhash_str_verify(ours, pw, sizeof(pw) - 2), 0);
    assert_int_equal(crypto_pwhash_str_needs_rehash(ours, crypto_pwhash_OPSLIMIT_MIN,
                                                    crypto_pwhash_MEMLIMIT_MIN),
                     0);

    assert_int_equal(crypto_pwhash_str(theirs, pw, sizeof(pw) - 1, crypto_pwhash_OPSLIMIT_MIN,
                                       crypto_pwhash_MEMLIMIT_MIN),
                     0);
    assert_true(pwhash_verify(theirs, pw, sizeof(pw) - 1));
    assert_false(pwhash_verify(theirs, pw, sizeof(pw) - 2));
    assert_false(pwhash_verify(theirs, "", 0));
    /* other parameters libsodium may write (t = 3, 16 KiB) take the same path */
    assert_int_equal(crypto_pwhash_str(theirs, pw, sizeof(pw) - 1, 3, 16384), 0);
    assert_true(pwhash_verify(theirs, pw, sizeof(pw) - 1));
    assert_false(pwhash_verify(theirs, "x", 1));

    /* edits of a good string never verify: parameters, salt, digest, and their shapes */
    assert_int_equal(pwhash_hash(PWHASH_MIN, "x", 1, ours), 0);
    const char *bad[] = {"m=9,", "t=2,", "p=2$", "m=08,", "t=01,", "m=0,", "m=-8,"};
    const char *good[] = {"m=8,", "t=1,", "p=1$", "m=8,", "t=1,", "m=8,", "m=8,"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *at = strstr(ours, good[i]);
        assert_non_null(at);
        snprintf(edited, sizeof(edited), "%.*s%s%s", (int)(at - ours), ours, bad[i],
                 at + strlen(good[i]));
        assert_false(pwhash_verify(edited, "x", 1));
    }
    dollar = strrchr(ours, '$');
    snprintf(edited, sizeof(edited), "%.*s", (int)(dollar - ours), ours); /* no digest */
    assert_false(pwhash_verify(edited, "x", 1));
    snprintf(edited, sizeof(edited), "%s=", ours); /* padding */
    assert_false(pwhash_verify(edited, "x", 1));
    snprintf(edited, sizeof(edited), "%.*s$%s", (int)(dollar - ours), ours, "AAAA"); /* short */
    assert_false(pwhash_verify(edited, "x", 1));
    snprintf(edited, sizeof(edited), "%s", ours);
    edited[strlen("$argon2id$v=19$m=8,t=1,p=1$") + 2] ^= 1; /* the salt */
    assert_false(pwhash_verify(edited, "x", 1));
    assert_false(pwhash_verify("$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$AAAAAAAAAAAAAAAAAAAAAA",
                               "x", 1));
}

/* Above the small path (64 MiB): libsodium, as before. */
static void test_pwhash_interactive(void **state)
{
    char h[PWHASH_STR_MAX];

    (void)state;
    assert_int_equal(pwhash_hash(PWHASH_INTERACTIVE, "pw", 2, h), 0);
    assert_int_equal(strncmp(h, "$argon2id$v=19$m=65536,t=2,p=1$", 31), 0);
    assert_true(pwhash_verify(h, "pw", 2));
    assert_false(pwhash_verify(h, "pW", 2));
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
        cmocka_unit_test(test_pwhash_same_strings_as_libsodium),
        cmocka_unit_test(test_pwhash_interactive),
        cmocka_unit_test(test_pwhash_cost_names),
    };
    return cmocka_run_group_tests_name("pwhash", tests, setup, NULL);
}
