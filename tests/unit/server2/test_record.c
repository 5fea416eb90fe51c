/*
 * test_record.c - what server2 stores per account (record.h): a hash marked with its creation
 * token, read back to its hash; two records of one creation recognised, of two not; records
 * without a well-formed mark (a bare hash, the tombstone, a near-miss) taken as they are; a
 * locked record and back, and records written before locks existed read as not locked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/record.h"

#define HASH "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g"

static const uint8_t T1[FRAME_TOKEN_SIZE] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff,
                                             1,    2,    3,    4,    5,    6,    7,    8};
static const uint8_t T2[FRAME_TOKEN_SIZE] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff,
                                             1,    2,    3,    4,    5,    6,    7,    9};

static void test_record_make_and_read(void **state)
{
    char rec[256];
    int n;

    (void)state;
    n = record_make(T1, HASH, rec, sizeof(rec));
    assert_int_equal(n, RECORD_MARK_LEN + strlen(HASH));
    assert_string_equal(rec, "c:00017f80abcdefff0102030405060708:" HASH);
    assert_string_equal(record_hash(rec), HASH);
    /* exactly room for it, and one byte short */
    assert_int_equal(record_make(T1, HASH, rec, (size_t)n + 1), n);
    assert_int_equal(record_make(T1, HASH, rec, (size_t)n), -1);
}

static void test_record_same_creation(void **state)
{
    char a[256];
    char b[256];
    char c[256];

    (void)state;
    record_make(T1, HASH, a, sizeof(a));
    record_make(T1, "$argon2id$v=19$m=8,t=1,p=1$b3RoZXJzYWx0$b3RoZXJoYXNo", b, sizeof(b));
    record_make(T2, HASH, c, sizeof(c));
    assert_true(record_same_creation(a, strlen(a), b, strlen(b))); /* same token, new salt */
    assert_false(record_same_creation(a, strlen(a), c, strlen(c)));
    assert_false(record_same_creation(a, strlen(a), HASH, strlen(HASH)));
    assert_false(record_same_creation(HASH, strlen(HASH), HASH, strlen(HASH))); /* no token */
    assert_false(record_same_creation(RECORD_TOMBSTONE, strlen(RECORD_TOMBSTONE), a, strlen(a)));
    /* a length that cuts the mark short */
    assert_false(record_same_creation(a, RECORD_MARK_LEN - 1, b, strlen(b)));
}

static void test_record_without_a_mark(void **state)
{
    const char *bad[] = {
        HASH,
        RECORD_TOMBSTONE,
        "",
        "c:00017F80ABCDEFFF0102030405060708:" HASH, /* upper-case hex: not ours */
        "c:00017f80abcdefff010203040506070:" HASH,  /* 31 digits */
        "c:00017f80abcdefff0102030405060708" HASH,  /* no closing colon */
        "d:00017f80abcdefff0102030405060708:" HASH,
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_ptr_equal(record_hash(bad[i]), bad[i]);
        assert_false(record_same_creation(bad[i], strlen(bad[i]), bad[i], strlen(bad[i])));
    }
}

static void test_record_lock_and_unlock(void **state)
{
    char rec[256];
    char locked[256];
    int n;

    (void)state;
    record_make(T1, HASH, rec, sizeof(rec));
    n = record_lock(rec, locked, sizeof(locked));
    assert_int_equal(n, RECORD_LOCK_MARK_LEN + strlen(rec));
    assert_true(record_locked(locked));
    assert_false(record_deleted(locked));
    assert_true(record_deleted(RECORD_TOMBSTONE));
    assert_string_equal(record_unlocked(locked), rec); /* unlock gives back the very record */
    /* a locked record verifies against nothing: its "hash" is not the account's */
    assert_string_not_equal(record_hash(locked), HASH);
    assert_true(record_hash(locked)[0] == '!');
    /* no longer the same creation: a CREATE sent again gets EXISTS */
    assert_false(record_same_creation(locked, strlen(locked), rec, strlen(rec)));
    /* a bare hash (a password change's record) locks the same way */
    assert_int_equal(record_lock(HASH, locked, sizeof(locked)), RECORD_LOCK_MARK_LEN + strlen(HASH));
    assert_string_equal(record_unlocked(locked), HASH);
    /* exactly room for it, and one byte short */
    assert_int_equal(record_lock(rec, locked, (size_t)n + 1), n);
    assert_int_equal(record_lock(rec, locked, (size_t)n), -1);
}

static void test_record_lock_refused(void **state)
{
    char locked[256];
    char twice[256];

    (void)state;
    record_lock(HASH, locked, sizeof(locked));
    assert_int_equal(record_lock(locked, twice, sizeof(twice)), -1);
    assert_int_equal(record_lock(RECORD_TOMBSTONE, twice, sizeof(twice)), -1);
}

/* Records as every server2 wrote them before locks existed: none reads as locked. */
static void test_record_old_records_not_locked(void **state)
{
    char rec[256];
    const char *old[] = {HASH, RECORD_TOMBSTONE, rec, "", "!locked", "locked:" HASH};

    (void)state;
    record_make(T2, HASH, rec, sizeof(rec));
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
        assert_false(record_locked(old[i]));
        assert_ptr_equal(record_unlocked(old[i]), old[i]);
    }
    assert_string_equal(record_hash(rec), HASH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_make_and_read),
        cmocka_unit_test(test_record_same_creation),
        cmocka_unit_test(test_record_without_a_mark),
        cmocka_unit_test(test_record_lock_and_unlock),
        cmocka_unit_test(test_record_lock_refused),
        cmocka_unit_test(test_record_old_records_not_locked),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
