/*
 * test_linkseal.c - the sealed frames of the server1 <-> server2 link (linkseal.h): a round
 * trip each way, sealed in place and opened in place; a flipped bit anywhere in a record, a
 * replayed record, two records swapped, a record cut short or with its length changed, a
 * record sealed with the other direction's key or another connection's nonces: each refused,
 * the receiver's counter unchanged; the length bounds at the limit and one past it; the
 * counter's end; the all-zero key of --insecure-no-secret leaves the link in clear.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "frame.h"
#include "linkseal.h"

static const uint8_t KEY[LINKAUTH_KEY_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                               16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                                               29, 30, 31, 32};

struct ends {
    struct linkseal c; /* server1's side */
    struct linkseal s; /* server2's side */
};

static void ends_init(struct ends *e)
{
    uint8_t nc[LINKAUTH_NONCE_SIZE];
    uint8_t ns[LINKAUTH_NONCE_SIZE];

    memset(nc, 0xc1, sizeof(nc));
    memset(ns, 0x52, sizeof(ns));
    linkseal_init(&e->c, KEY, LINKAUTH_SERVER1, nc, ns);
    linkseal_init(&e->s, KEY, LINKAUTH_SERVER2, nc, ns);
}

/* A VERIFY of alice with password pw, sealed by tx into rec; returns the record's size. */
static size_t seal_verify(struct linkseal_dir *tx, uint64_t id, const char *pw, uint8_t *rec)
{
    size_t n = frame_encode_cred(FRAME_VERIFY, id, 0, "alice", 5, pw, strlen(pw),
                                 rec + LINKSEAL_LEN_SIZE, FRAME_MAX_SIZE);
    assert_true(n > 0);
    return linkseal_seal(tx, rec, n);
}

/* Opens rec[0..len) with rx into a frame; the result, *f filled on LINKSEAL_DONE. */
static enum linkseal_result open_one(struct linkseal_dir *rx, const uint8_t *rec, size_t len,
                                     struct frame *f)
{
    uint8_t copy[LINKSEAL_RECORD_MAX + 8];
    uint8_t plain[FRAME_MAX_SIZE];
    size_t plain_len = 0;
    size_t used = 0;
    size_t fused = 0;
    const char *why = NULL;
    enum linkseal_result r;

    assert_true(len <= sizeof(copy));
    memcpy(copy, rec, len);
    r = linkseal_open(rx, copy, len, plain, &plain_len, &used, &why);
    if (r == LINKSEAL_BAD)
        assert_non_null(why);
    if (r == LINKSEAL_DONE) {
        assert_int_equal(used, LINKSEAL_LEN_SIZE + plain_len + LINKSEAL_TAG_SIZE);
        assert_int_equal(frame_decode(plain, plain_len, f, &fused, NULL), FRAME_DONE);
        assert_int_equal(fused, plain_len);
    }
    return r;
}

static void test_linkseal_roundtrip(void **state)
{
    struct ends e;
    uint8_t rec[LINKSEAL_RECORD_MAX];
    struct frame f;
    size_t n;
    size_t plain_len = 0;
    size_t used = 0;

    (void)state;
    ends_init(&e);
    n = seal_verify(&e.c.tx, 7, "hunter2-secret", rec);
    assert_int_equal(n, FRAME_HEADER_SIZE + 3 + 5 + 14 + LINKSEAL_OVERHEAD);
    /* the length field counts what follows it; the password is not in the record */
    assert_int_equal(rec[0] << 8 | rec[1], n - LINKSEAL_LEN_SIZE);
    assert_null(memmem(rec, n, "hunter2", 7));
    assert_null(memmem(rec, n, "alice", 5));
    assert_int_equal(open_one(&e.s.rx, rec, n, &f), LINKSEAL_DONE);
    assert_int_equal(f.type, FRAME_VERIFY);
    assert_true(f.id == 7);
    assert_string_equal(f.pass, "hunter2-secret");
    assert_true(e.c.tx.seq == 1 && e.s.rx.seq == 1);

    /* the other way, opened in place */
    n = frame_encode_reply(7, FRAME_ST_OK, FRAME_VERIFY, "alice", 5, rec + LINKSEAL_LEN_SIZE,
                           FRAME_MAX_SIZE);
    n = linkseal_seal(&e.s.tx, rec, n);
    assert_int_equal(linkseal_open(&e.c.rx, rec, n, rec + LINKSEAL_LEN_SIZE, &plain_len, &used,
                                   NULL),
                     LINKSEAL_DONE);
    assert_int_equal(used, n);
    assert_int_equal(frame_decode(rec + LINKSEAL_LEN_SIZE, plain_len, &f, &used, NULL),
                     FRAME_DONE);
    assert_int_equal(f.type, FRAME_REPLY);

    /* the same frame sealed twice gives two different records */
    {
        uint8_t a[LINKSEAL_RECORD_MAX];
        uint8_t b[LINKSEAL_RECORD_MAX];
        size_t na = seal_verify(&e.c.tx, 9, "pw", a);
        size_t nb = seal_verify(&e.c.tx, 9, "pw", b);
        assert_int_equal(na, nb);
        assert_memory_not_equal(a, b, na);
    }
}

/* Every bit of a record flipped in turn: none opens, and the receiver can go on after. */
static void test_linkseal_flipped_bit(void **state)
{
    struct ends e;
    uint8_t rec[LINKSEAL_RECORD_MAX];
    struct frame f;
    size_t n;

    (void)state;
    ends_init(&e);
    n = seal_verify(&e.c.tx, 1, "password", rec);
    for (size_t bit = 0; bit < n * 8; bit++) {
        rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        enum linkseal_result r = open_one(&e.s.rx, rec, n, &f);
        /* a flipped length bit may also make the record longer than what is here */
        assert_true(r == LINKSEAL_BAD || (bit < 16 && r == LINKSEAL_MORE));
        rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    assert_true(e.s.rx.seq == 0);
    assert_int_equal(open_one(&e.s.rx, rec, n, &f), LINKSEAL_DONE);
}

static void test_linkseal_replay_and_reorder(void **state)
{
    struct ends e;
    uint8_t r1[LINKSEAL_RECORD_MAX];
    uint8_t r2[LINKSEAL_RECORD_MAX];
    struct frame f;
    size_t n1;
    size_t n2;

    (void)state;
    ends_init(&e);
    n1 = seal_verify(&e.c.tx, 1, "password", r1);
    n2 = seal_verify(&e.c.tx, 2, "password", r2);
    /* reordered: the second before the first */
    assert_int_equal(open_one(&e.s.rx, r2, n2, &f), LINKSEAL_BAD);
    assert_int_equal(open_one(&e.s.rx, r1, n1, &f), LINKSEAL_DONE);
    assert_true(f.id == 1);
    /* replayed: the first again */
    assert_int_equal(open_one(&e.s.rx, r1, n1, &f), LINKSEAL_BAD);
    assert_int_equal(open_one(&e.s.rx, r2, n2, &f), LINKSEAL_DONE);
    assert_true(f.id == 2);
    assert_int_equal(open_one(&e.s.rx, r2, n2, &f), LINKSEAL_BAD);
}

static void test_linkseal_truncated(void **state)
{
    struct ends e;
    uint8_t rec[LINKSEAL_RECORD_MAX];
    uint8_t cut[LINKSEAL_RECORD_MAX];
    struct frame f;
    size_t n;

    (void)state;
    ends_init(&e);
    n = seal_verify(&e.c.tx, 1, "password", rec);
    /* fewer bytes than the length says: wait for more, at every length */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(open_one(&e.s.rx, rec, k, &f), LINKSEAL_MORE);
    /* cut short and its length field made to match: does not open */
    for (size_t k = LINKSEAL_LEN_SIZE + LINKSEAL_BODY_MIN; k < n; k++) {
        memcpy(cut, rec, k);
        cut[0] = (uint8_t)((k - LINKSEAL_LEN_SIZE) >> 8);
        cut[1] = (uint8_t)(k - LINKSEAL_LEN_SIZE);
        assert_int_equal(open_one(&e.s.rx, cut, k, &f), LINKSEAL_BAD);
    }
    assert_true(e.s.rx.seq == 0);
    assert_int_equal(open_one(&e.s.rx, rec, n, &f), LINKSEAL_DONE);
}

/* A record of one direction does not open in the other, nor on another connection. */
static void test_linkseal_wrong_key(void **state)
{
    struct ends e;
    struct linkseal other;
    uint8_t rec[LINKSEAL_RECORD_MAX];
    uint8_t nc[LINKAUTH_NONCE_SIZE];
    uint8_t ns[LINKAUTH_NONCE_SIZE];
    struct frame f;
    size_t n;

    (void)state;
    ends_init(&e);
    n = seal_verify(&e.c.tx, 1, "password", rec);
    /* server1 reading back its own record: the other direction's key */
    assert_int_equal(open_one(&e.c.rx, rec, n, &f), LINKSEAL_BAD);
    /* a server2 whose connection had another client nonce */
    memset(nc, 0xc2, sizeof(nc));
    memset(ns, 0x52, sizeof(ns));
    linkseal_init(&other, KEY, LINKAUTH_SERVER2, nc, ns);
    assert_int_equal(open_one(&other.rx, rec, n, &f), LINKSEAL_BAD);
    /* the keys of the two directions differ */
    assert_memory_not_equal(e.c.tx.key, e.c.rx.key, LINKSEAL_KEY_SIZE);
    assert_memory_equal(e.c.tx.key, e.s.rx.key, LINKSEAL_KEY_SIZE);
    assert_memory_equal(e.c.rx.key, e.s.tx.key, LINKSEAL_KEY_SIZE);
    linkseal_clear(&other);
    assert_true(sodium_is_zero((const uint8_t *)&other, sizeof(other)));
}

/* Length fields: BODY_MIN..BODY_MAX pass the bound check, one past either side is refused
 * before anything more is read; frames of FRAME_HEADER_SIZE..FRAME_MAX_SIZE seal. */
static void test_linkseal_limits(void **state)
{
    struct ends e;
    uint8_t rec[LINKSEAL_RECORD_MAX + 1];
    struct frame f;
    size_t n;

    (void)state;
    ends_init(&e);
    assert_int_equal(LINKSEAL_BODY_MIN, 36);
    assert_int_equal(LINKSEAL_BODY_MAX, 676);
    assert_int_equal(LINKSEAL_RECORD_MAX, 678);
    memset(rec, 0, sizeof(rec));
    rec[0] = (uint8_t)((LINKSEAL_BODY_MIN - 1) >> 8);
    rec[1] = (uint8_t)(LINKSEAL_BODY_MIN - 1);
    assert_int_equal(open_one(&e.s.rx, rec, LINKSEAL_LEN_SIZE, &f), LINKSEAL_BAD);
    rec[0] = (uint8_t)((LINKSEAL_BODY_MAX + 1) >> 8);
    rec[1] = (uint8_t)(LINKSEAL_BODY_MAX + 1);
    assert_int_equal(open_one(&e.s.rx, rec, LINKSEAL_LEN_SIZE, &f), LINKSEAL_BAD);
    rec[0] = 0xff;
    rec[1] = 0xff;
    assert_int_equal(open_one(&e.s.rx, rec, LINKSEAL_LEN_SIZE, &f), LINKSEAL_BAD);
    rec[0] = (uint8_t)(LINKSEAL_BODY_MAX >> 8);
    rec[1] = (uint8_t)LINKSEAL_BODY_MAX;
    assert_int_equal(open_one(&e.s.rx, rec, LINKSEAL_RECORD_MAX - 1, &f), LINKSEAL_MORE);
    assert_int_equal(open_one(&e.s.rx, rec, LINKSEAL_RECORD_MAX, &f), LINKSEAL_BAD);

    /* the largest frame seals into the largest record, and opens */
    memset(rec + LINKSEAL_LEN_SIZE, 0, FRAME_MAX_SIZE);
    assert_int_equal(linkseal_seal(&e.c.tx, rec, FRAME_MAX_SIZE + 1), 0);
    assert_int_equal(linkseal_seal(&e.c.tx, rec, FRAME_HEADER_SIZE - 1), 0);
    assert_true(e.c.tx.seq == 0);
    n = frame_encode_setpass(3, 0, "alice", 5, "p", 1, "q", 1, rec + LINKSEAL_LEN_SIZE,
                             FRAME_MAX_SIZE);
    assert_int_equal(linkseal_seal(&e.c.tx, rec, n), n + LINKSEAL_OVERHEAD);
    assert_int_equal(open_one(&e.s.rx, rec, n + LINKSEAL_OVERHEAD, &f), LINKSEAL_DONE);
    assert_int_equal(f.type, FRAME_SETPASS);
}

/* A direction seals at most 2^64 - 1 records: the last number is never used. */
static void test_linkseal_counter_end(void **state)
{
    struct ends e;
    uint8_t rec[LINKSEAL_RECORD_MAX];
    struct frame f;
    size_t n;

    (void)state;
    ends_init(&e);
    e.c.tx.seq = UINT64_MAX - 1;
    e.s.rx.seq = UINT64_MAX - 1;
    n = seal_verify(&e.c.tx, 1, "password", rec);
    assert_int_equal(open_one(&e.s.rx, rec, n, &f), LINKSEAL_DONE);
    /* the sender refuses the last number, and writes nothing */
    memset(rec, 0xaa, sizeof(rec));
    assert_int_equal(linkseal_seal(&e.c.tx, rec, FRAME_HEADER_SIZE + 10), 0);
    assert_true(e.c.tx.seq == UINT64_MAX);
    assert_int_equal(rec[0], 0xaa);
    /* a receiver at the end refuses any record */
    ends_init(&e);
    n = seal_verify(&e.c.tx, 1, "password", rec);
    e.s.rx.seq = UINT64_MAX;
    assert_int_equal(open_one(&e.s.rx, rec, n, &f), LINKSEAL_BAD);
}

static void test_linkseal_enabled(void **state)
{
    uint8_t zero[LINKAUTH_KEY_SIZE];

    (void)state;
    linkauth_insecure_key(zero);
    assert_false(linkseal_enabled(zero));
    assert_true(linkseal_enabled(KEY));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linkseal_roundtrip),
        cmocka_unit_test(test_linkseal_flipped_bit),
        cmocka_unit_test(test_linkseal_replay_and_reorder),
        cmocka_unit_test(test_linkseal_truncated),
        cmocka_unit_test(test_linkseal_wrong_key),
        cmocka_unit_test(test_linkseal_limits),
        cmocka_unit_test(test_linkseal_counter_end),
        cmocka_unit_test(test_linkseal_enabled),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
