/*
 * test_frame.c - the server1 <-> server2 frame codec, version 6: round trips of every frame,
 * truncation at every length, every limit at the limit and one past it, 64-bit ids and budgets
 * at their edges, the REPLY echo, HELLO/HELLO_ACK/AUTH sizes, malformed headers; and the link
 * authentication (linkauth.h): MACs, secret files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "linkauth.h"

/* a creation token */
static const uint8_t TOK[FRAME_TOKEN_SIZE] = {0xde, 0xad, 0xbe, 0xef, 1, 2,  3,  4,
                                              5,    6,    7,    8,    9, 10, 11, 0xff};

static void test_frame_roundtrip_cred(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    uint8_t again[FRAME_MAX_SIZE];
    struct frame f;
    size_t used = 0;
    size_t n;

    (void)state;
    n = frame_encode_cred(FRAME_VERIFY, 0xdeadbeefcafef00dull, 4999, "alice", 5, "s3cr3t", 6,
                          buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 3 + 5 + 6);
    assert_int_equal(FRAME_HEADER_SIZE, 20);
    /* the header on the wire: length, type, status, reserved, id, budget, all big-endian */
    assert_memory_equal(buf, "\x00\x00\x00\x0e\x04\x00\x00\x00"
                             "\xde\xad\xbe\xef\xca\xfe\xf0\x0d"
                             "\x00\x00\x13\x87",
                        20);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(used, n);
    assert_int_equal(f.type, FRAME_VERIFY);
    assert_true(f.id == 0xdeadbeefcafef00dull);
    assert_int_equal(f.budget_ms, 4999);
    assert_int_equal(f.user_len, 5);
    assert_string_equal(f.user, "alice");
    assert_int_equal(f.pass_len, 6);
    assert_string_equal(f.pass, "s3cr3t");

    /* frame_encode of the decoded frame gives the same bytes */
    assert_int_equal(frame_encode(&f, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);
}

/* A CREATE carries its creation token between the lengths and the user; VERIFY and DELETE
 * have none, and the cred encoder refuses a CREATE (it would have no token). */
static void test_frame_create_token(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    uint8_t again[FRAME_MAX_SIZE];
    struct frame f;
    size_t used = 0;
    size_t n;
    const char *why = NULL;

    (void)state;
    n = frame_encode_create(7, 250, TOK, "alice", 5, "s3cr3t", 6, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 3 + FRAME_TOKEN_SIZE + 5 + 6);
    assert_memory_equal(buf + FRAME_HEADER_SIZE + 3, TOK, FRAME_TOKEN_SIZE);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(used, n);
    assert_int_equal(f.type, FRAME_CREATE);
    assert_memory_equal(f.token, TOK, FRAME_TOKEN_SIZE);
    assert_string_equal(f.user, "alice");
    assert_string_equal(f.pass, "s3cr3t");
    /* the struct encoder writes the same bytes */
    assert_int_equal(frame_encode(&f, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);

    assert_int_equal(frame_encode_cred(FRAME_CREATE, 7, 0, "alice", 5, "pw", 2, buf, sizeof(buf)),
                     0);
    /* a CREATE too short to hold its token, and one whose lengths leave no room for it */
    n = frame_encode_cred(FRAME_VERIFY, 7, 0, "alice", 5, "pw", 2, buf, sizeof(buf));
    buf[4] = FRAME_CREATE;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    assert_string_equal(why, "CREATE payload too short");
    n = frame_encode_create(7, 0, TOK, "alice", 5, "pw", 2, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] = 5 + FRAME_TOKEN_SIZE; /* user_len eats the token */
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
}

static void test_frame_ids_and_budget_at_the_edges(void **state)
{
    const uint64_t ids[] = {0, 1, 0xffffull, 0x10000ull, 0xffffffffull, 0x100000000ull,
                            UINT64_MAX - 1, UINT64_MAX};
    const uint32_t budgets[] = {0, 1, UINT32_MAX};
    uint8_t buf[FRAME_MAX_SIZE];
    struct frame f;
    size_t used;
    size_t n;

    (void)state;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        for (size_t k = 0; k < sizeof(budgets) / sizeof(budgets[0]); k++) {
            n = frame_encode_create(ids[i], budgets[k], TOK, "u", 1, "p", 1, buf,
                                  sizeof(buf));
            assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
            assert_true(f.id == ids[i]);
            assert_true(f.budget_ms == budgets[k]);
        }
        n = frame_encode_reply(ids[i], FRAME_ST_OK, FRAME_PING, NULL, 0, buf, sizeof(buf));
        assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
        assert_true(f.id == ids[i]);
        assert_int_equal(f.budget_ms, 0);
    }
    /* ids differing only in the upper 32 bits stay apart (the old 32-bit field would not) */
    n = frame_encode_reply(0x100000007ull, FRAME_ST_OK, FRAME_VERIFY, "a", 1, buf, sizeof(buf));
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_true(f.id != 7);
}

static void test_frame_roundtrip_handshake(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    uint8_t again[FRAME_MAX_SIZE];
    struct frame in;
    struct frame out;
    size_t used;
    size_t n;

    (void)state;
    memset(&in, 0, sizeof(in));
    in.type = FRAME_HELLO;
    in.version = FRAME_VERSION;
    for (int i = 0; i < FRAME_NONCE_SIZE; i++)
        in.nonce[i] = (uint8_t)(i * 7 + 1);
    n = frame_encode(&in, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 38);
    assert_memory_equal(buf + FRAME_HEADER_SIZE, "AUTH\x00\x06", 6);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.version, 6);
    assert_memory_equal(out.nonce, in.nonce, FRAME_NONCE_SIZE);

    memset(&in, 0, sizeof(in));
    in.type = FRAME_HELLO_ACK;
    in.version = FRAME_VERSION;
    memset(in.nonce, 0xab, sizeof(in.nonce));
    memset(in.mac, 0xcd, sizeof(in.mac));
    n = frame_encode(&in, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 66);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.type, FRAME_HELLO_ACK);
    assert_memory_equal(out.nonce, in.nonce, FRAME_NONCE_SIZE);
    assert_memory_equal(out.mac, in.mac, FRAME_MAC_SIZE);
    assert_int_equal(frame_encode(&out, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);

    memset(&in, 0, sizeof(in));
    in.type = FRAME_AUTH;
    memset(in.mac, 0x5a, sizeof(in.mac));
    n = frame_encode(&in, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 32);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.type, FRAME_AUTH);
    assert_memory_equal(out.mac, in.mac, FRAME_MAC_SIZE);

    /* each handshake frame one byte short or long is refused */
    const uint8_t types[] = {FRAME_HELLO, FRAME_HELLO_ACK, FRAME_AUTH};
    for (size_t t = 0; t < sizeof(types); t++) {
        memset(&in, 0, sizeof(in));
        in.type = types[t];
        n = frame_encode(&in, buf, sizeof(buf));
        buf[3] = (uint8_t)(n - FRAME_HEADER_SIZE - 1);
        assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);
        buf[3] = (uint8_t)(n - FRAME_HEADER_SIZE + 1);
        buf[n] = 0;
        assert_int_equal(frame_decode(buf, n + 1, &out, &used, NULL), FRAME_BAD);
    }
}

static void test_frame_reply_echo(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    char user[ACCOUNT_USER_MAX + 1];
    struct frame f;
    size_t used;
    size_t n;

    (void)state;
    n = frame_encode_reply(77, FRAME_ST_DENIED, FRAME_VERIFY, "victim", 6, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 2 + 6);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.type, FRAME_REPLY);
    assert_int_equal(f.status, FRAME_ST_DENIED);
    assert_int_equal(f.req_type, FRAME_VERIFY);
    assert_int_equal(f.user_len, 6);
    assert_string_equal(f.user, "victim");
    assert_int_equal(f.budget_ms, 0);

    /* LIMITED: the milliseconds to wait in the header's budget_ms */
    n = frame_encode_reply_retry(79, FRAME_ST_LIMITED, FRAME_VERIFY, "victim", 6, 12345, buf,
                                 sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 2 + 6);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.status, FRAME_ST_LIMITED);
    assert_int_equal(f.budget_ms, 12345);
    assert_string_equal(frame_status_name(FRAME_ST_LIMITED), "limited");

    /* PING: type PING, no user */
    n = frame_encode_reply(78, FRAME_ST_OK, FRAME_PING, NULL, 0, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 2);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.req_type, FRAME_PING);
    assert_int_equal(f.user_len, 0);

    /* the longest user */
    memset(user, 'x', sizeof(user));
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_CREATE, user, ACCOUNT_USER_MAX, buf,
                           sizeof(buf));
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.user_len, ACCOUNT_USER_MAX);
    assert_int_equal(frame_encode_reply(1, FRAME_ST_OK, FRAME_CREATE, user,
                                        ACCOUNT_USER_MAX + 1, buf, sizeof(buf)),
                     0);
    /* an echo of a type that is not a request */
    assert_int_equal(frame_encode_reply(1, FRAME_ST_OK, FRAME_REPLY, NULL, 0, buf, sizeof(buf)),
                     0);
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_VERIFY, "ab", 2, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] = FRAME_HELLO;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
    /* echo lengths that do not add up, or a user over the limit */
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_VERIFY, "ab", 2, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE + 1] = 3;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
    buf[FRAME_HEADER_SIZE + 1] = 1;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_VERIFY, user, ACCOUNT_USER_MAX, buf,
                           sizeof(buf));
    buf[FRAME_HEADER_SIZE + 1] = ACCOUNT_USER_MAX + 1;
    buf[3] = 2 + ACCOUNT_USER_MAX + 1;
    buf[n] = 'x';
    assert_int_equal(frame_decode(buf, n + 1, &f, &used, NULL), FRAME_BAD);
    /* a REPLY too short to hold the echo */
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_PING, NULL, 0, buf, sizeof(buf));
    buf[3] = 1;
    assert_int_equal(frame_decode(buf, n - 1, &f, &used, NULL), FRAME_BAD);
}

/* SETPASS, DELETE, INVALIDATE and its ACK: round trips, exact lengths, and what is refused. */
static void test_frame_account_changes(void **state)
{
    char pass[ACCOUNT_PASS_MAX];
    char fresh[ACCOUNT_PASS_MAX];
    char user[ACCOUNT_USER_MAX];
    uint8_t buf[FRAME_MAX_SIZE];
    uint8_t again[FRAME_MAX_SIZE];
    struct frame out;
    size_t used;
    size_t n;

    (void)state;
    memset(pass, 'p', sizeof(pass));
    memset(fresh, 'n', sizeof(fresh));
    memset(user, 'u', sizeof(user));
    /* the largest SETPASS fits the payload limit */
    n = frame_encode_setpass(9, 1500, user, sizeof(user), pass, sizeof(pass), fresh,
                             sizeof(fresh), buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 5 + 64 + 256 + 256);
    assert_true(n <= FRAME_MAX_SIZE);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(used, n);
    assert_int_equal(out.type, FRAME_SETPASS);
    assert_int_equal(out.id, 9);
    assert_int_equal(out.budget_ms, 1500);
    assert_int_equal(out.user_len, 64);
    assert_int_equal(out.pass_len, 256);
    assert_int_equal(out.new_len, 256);
    assert_memory_equal(out.pass, pass, 256);
    assert_memory_equal(out.new_pass, fresh, 256);
    assert_int_equal(out.new_pass[256], '\0');
    assert_int_equal(frame_encode(&out, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);
    /* lengths that do not add up, or a new password over the limit */
    n = frame_encode_setpass(9, 0, "bob", 3, "a", 1, "b", 1, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE + 4] = 2;
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);
    assert_int_equal(frame_encode_setpass(9, 0, "bob", 3, "a", 1, fresh, 257, buf, sizeof(buf)),
                     0);

    n = frame_encode_cred(FRAME_DELETE, 4, 0, "bob", 3, "pw", 2, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 3 + 3 + 2);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.type, FRAME_DELETE);
    assert_string_equal(out.user, "bob");
    assert_string_equal(out.pass, "pw");

    /* a REPLY may echo them */
    n = frame_encode_reply(4, FRAME_ST_OK, FRAME_DELETE, "bob", 3, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.req_type, FRAME_DELETE);
    assert_true(frame_encode_reply(4, FRAME_ST_OK, FRAME_SETPASS, "bob", 3, buf, sizeof(buf)) > 0);
    assert_int_equal(frame_encode_reply(4, FRAME_ST_OK, FRAME_INVALIDATE, "bob", 3, buf,
                                        sizeof(buf)),
                     0);

    n = frame_encode_invalidate(77, "alice", 5, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 6);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.type, FRAME_INVALIDATE);
    assert_int_equal(out.id, 77);
    assert_string_equal(out.user, "alice");
    assert_int_equal(frame_encode(&out, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);
    /* id 0, an empty or oversize user, a payload that does not add up */
    assert_int_equal(frame_encode_invalidate(0, "alice", 5, buf, sizeof(buf)), 0);
    assert_int_equal(frame_encode_invalidate(1, "", 0, buf, sizeof(buf)), 0);
    assert_int_equal(frame_encode_invalidate(1, user, 65, buf, sizeof(buf)), 0);
    n = frame_encode_invalidate(77, "alice", 5, buf, sizeof(buf));
    memset(buf + 8, 0, 8); /* id 0 */
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);
    n = frame_encode_invalidate(77, "alice", 5, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] = 4;
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);

    n = frame_encode_invalidate_ack(77, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.type, FRAME_INVALIDATE_ACK);
    assert_int_equal(out.id, 77);
    buf[3] = 1; /* a payload byte: refused */
    buf[FRAME_HEADER_SIZE] = 0;
    assert_int_equal(frame_decode(buf, n + 1, &out, &used, NULL), FRAME_BAD);
}

/* LEASE: 4 bytes of milliseconds, id 0, at most FRAME_LEASE_MAX_MS; anything else refused. */
static void test_frame_lease(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    uint8_t again[FRAME_MAX_SIZE];
    struct frame out;
    size_t used;
    size_t n;

    (void)state;
    n = frame_encode_lease(1000, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + FRAME_LEASE_PAYLOAD);
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(used, n);
    assert_int_equal(out.type, FRAME_LEASE);
    assert_int_equal(out.id, 0);
    assert_int_equal(out.lease_ms, 1000);
    assert_int_equal(frame_encode(&out, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);
    assert_int_equal(frame_encode_lease(0, buf, sizeof(buf)), n); /* 0: the lease ends now */
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.lease_ms, 0);
    assert_int_equal(frame_encode_lease(FRAME_LEASE_MAX_MS + 1, buf, sizeof(buf)), 0);
    assert_int_equal(frame_encode_lease(1000, buf, n - 1), 0);
    n = frame_encode_lease(FRAME_LEASE_MAX_MS, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE + 3] += 1; /* one over the limit */
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);
    n = frame_encode_lease(5, buf, sizeof(buf));
    buf[15] = 1; /* an id */
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_BAD);
    n = frame_encode_lease(5, buf, sizeof(buf));
    buf[3] = 3; /* a payload of 3 bytes */
    assert_int_equal(frame_decode(buf, n - 1, &out, &used, NULL), FRAME_BAD);
}

static void test_frame_truncated_needs_more(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    struct frame f;
    size_t used;
    size_t n = frame_encode_create(1, 0, TOK, "bob", 3, "pw", 2, buf, sizeof(buf));

    (void)state;
    for (size_t len = 0; len < n; len++)
        assert_int_equal(frame_decode(buf, len, &f, &used, NULL), FRAME_MORE);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
}

static void test_frame_two_in_one_buffer(void **state)
{
    uint8_t buf[2 * FRAME_MAX_SIZE];
    struct frame f;
    size_t used;
    size_t a = frame_encode_create(1, 0, TOK, "bob", 3, "pw", 2, buf, sizeof(buf));
    size_t b = frame_encode_reply(2, FRAME_ST_OK, FRAME_CREATE, "bob", 3, buf + a,
                                  sizeof(buf) - a);

    (void)state;
    assert_int_equal(frame_decode(buf, a + b, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(used, a);
    assert_int_equal(frame_decode(buf + used, b, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.id, 2);
}

static void test_frame_limits(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE + 64];
    char user[ACCOUNT_USER_MAX + 2];
    char pass[ACCOUNT_PASS_MAX + 2];
    struct frame f;
    size_t used;
    size_t n;

    (void)state;
    memset(user, 'u', sizeof(user));
    memset(pass, 'p', sizeof(pass));
    /* exactly at the limits: accepted */
    n = frame_encode_create(9, 0, TOK, user, ACCOUNT_USER_MAX, pass, ACCOUNT_PASS_MAX, buf,
                          sizeof(buf));
    assert_true(n > 0);
    assert_true(n <= FRAME_MAX_SIZE);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.user_len, ACCOUNT_USER_MAX);
    assert_int_equal(f.pass_len, ACCOUNT_PASS_MAX);
    /* one past: refused by the encoder */
    assert_int_equal(frame_encode_create(9, 0, TOK, user, ACCOUNT_USER_MAX + 1, pass, 1,
                                       buf, sizeof(buf)),
                     0);
    assert_int_equal(frame_encode_create(9, 0, TOK, user, 1, pass, ACCOUNT_PASS_MAX + 1,
                                       buf, sizeof(buf)),
                     0);
    /* too small an output buffer */
    assert_int_equal(frame_encode_create(9, 0, TOK, user, 10, pass, 10, buf, 30), 0);

    /* one past, forged on the wire: refused by the decoder */
    n = frame_encode_create(9, 0, TOK, user, 10, pass, 10, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] = ACCOUNT_USER_MAX + 1;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
    n = frame_encode_create(9, 0, TOK, user, 10, pass, 10, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE + 1] = (ACCOUNT_PASS_MAX + 1) >> 8;
    buf[FRAME_HEADER_SIZE + 2] = (ACCOUNT_PASS_MAX + 1) & 0xff;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
}

static void test_frame_bad_headers(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE + 64];
    struct frame f;
    size_t used;
    const char *why = NULL;
    size_t n;

    (void)state;
    /* payload length over the limit is refused from the header alone */
    memset(buf, 0, sizeof(buf));
    buf[2] = (FRAME_MAX_PAYLOAD + 1) >> 8;
    buf[3] = (FRAME_MAX_PAYLOAD + 1) & 0xff;
    buf[4] = FRAME_CREATE;
    assert_int_equal(frame_decode(buf, FRAME_HEADER_SIZE, &f, &used, &why), FRAME_BAD);
    assert_non_null(why);
    buf[0] = 0xff; /* 4 GB */
    assert_int_equal(frame_decode(buf, FRAME_HEADER_SIZE, &f, &used, &why), FRAME_BAD);

    /* unknown type */
    n = frame_encode_reply(1, FRAME_ST_OK, FRAME_PING, NULL, 0, buf, sizeof(buf));
    buf[4] = 99;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* reserved field not zero, in either byte, even before the payload has arrived */
    for (int k = 6; k <= 7; k++) {
        n = frame_encode_cred(FRAME_VERIFY, 3, 0, "abc", 3, "def", 3, buf, sizeof(buf));
        buf[k] = 0x80;
        assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
        assert_int_equal(frame_decode(buf, FRAME_HEADER_SIZE, &f, &used, &why), FRAME_BAD);
    }
    /* credential lengths that do not add up */
    n = frame_encode_cred(FRAME_VERIFY, 3, 0, "abc", 3, "def", 3, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] = 4;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* a HELLO with the wrong magic */
    memset(&f, 0, sizeof(f));
    f.type = FRAME_HELLO;
    n = frame_encode(&f, buf, sizeof(buf));
    buf[FRAME_HEADER_SIZE] ^= 0xff;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* a PING with a payload */
    memset(&f, 0, sizeof(f));
    f.type = FRAME_PING;
    n = frame_encode(&f, buf, sizeof(buf));
    buf[3] = 1;
    buf[n] = 0;
    assert_int_equal(frame_decode(buf, n + 1, &f, &used, &why), FRAME_BAD);
    /* encoder refuses an unknown type */
    memset(&f, 0, sizeof(f));
    f.type = 77;
    assert_int_equal(frame_encode(&f, buf, sizeof(buf)), 0);
}

static void test_frame_status_names(void **state)
{
    (void)state;
    assert_string_equal(frame_status_name(FRAME_ST_OK), "ok");
    assert_string_equal(frame_status_name(FRAME_ST_UNAVAILABLE), "unavailable");
    assert_string_equal(frame_status_name(FRAME_ST_EXPIRED), "expired");
    assert_string_equal(frame_status_name((enum frame_status)200), "unknown");
}

/* ---- link authentication ---- */

static void test_linkauth_macs(void **state)
{
    uint8_t k1[LINKAUTH_KEY_SIZE];
    uint8_t k2[LINKAUTH_KEY_SIZE];
    uint8_t nc[LINKAUTH_NONCE_SIZE];
    uint8_t ns[LINKAUTH_NONCE_SIZE];
    uint8_t mac[LINKAUTH_MAC_SIZE];

    (void)state;
    linkauth_insecure_key(k1);
    memset(k2, 0, sizeof(k2));
    assert_memory_equal(k1, k2, sizeof(k1));
    k2[0] = 1;
    linkauth_nonce(nc);
    linkauth_nonce(ns);
    assert_memory_not_equal(nc, ns, sizeof(nc));
    linkauth_mac(k1, LINKAUTH_SERVER2, nc, ns, mac);
    assert_true(linkauth_check(k1, LINKAUTH_SERVER2, nc, ns, mac));
    /* the other role's MAC, another key, swapped or changed nonces, a changed MAC: refused */
    assert_false(linkauth_check(k1, LINKAUTH_SERVER1, nc, ns, mac));
    assert_false(linkauth_check(k2, LINKAUTH_SERVER2, nc, ns, mac));
    assert_false(linkauth_check(k1, LINKAUTH_SERVER2, ns, nc, mac));
    nc[5] ^= 1;
    assert_false(linkauth_check(k1, LINKAUTH_SERVER2, nc, ns, mac));
    nc[5] ^= 1;
    mac[31] ^= 0x80;
    assert_false(linkauth_check(k1, LINKAUTH_SERVER2, nc, ns, mac));
}

static void write_file(const char *path, size_t len, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < len; i++)
        fputc((int)(i * 131 + 7) & 0xff, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_linkauth_secret_file(void **state)
{
    char dir[] = "/tmp/test_linkauth.XXXXXX";
    char path[128];
    uint8_t key[LINKAUTH_KEY_SIZE];
    uint8_t key2[LINKAUTH_KEY_SIZE];
    char err[LINKAUTH_ERR_LEN];

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/link.secret", dir);

    write_file(path, 32, 0600);
    assert_int_equal(linkauth_load_key(path, key, err), 0);
    assert_int_equal(linkauth_load_key(path, key2, err), 0);
    assert_memory_equal(key, key2, sizeof(key)); /* same file, same key */
    write_file(path, 33, 0400);
    assert_int_equal(linkauth_load_key(path, key2, err), 0);
    assert_memory_not_equal(key, key2, sizeof(key));
    write_file(path, LINKAUTH_SECRET_MAX, 0600);
    assert_int_equal(linkauth_load_key(path, key2, err), 0);

    /* too short, too long, readable by group or others, missing, a directory */
    write_file(path, 31, 0600);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    assert_non_null(strstr(err, "31 bytes"));
    write_file(path, LINKAUTH_SECRET_MAX + 1, 0600);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    write_file(path, 64, 0640);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    assert_non_null(strstr(err, "640"));
    write_file(path, 64, 0604);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    write_file(path, 64, 0620);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    unlink(path);
    assert_int_equal(linkauth_load_key(path, key, err), -1);
    assert_int_equal(linkauth_load_key(dir, key, err), -1);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_roundtrip_cred),
        cmocka_unit_test(test_frame_create_token),
        cmocka_unit_test(test_frame_ids_and_budget_at_the_edges),
        cmocka_unit_test(test_frame_roundtrip_handshake),
        cmocka_unit_test(test_frame_reply_echo),
        cmocka_unit_test(test_frame_account_changes),
        cmocka_unit_test(test_frame_lease),
        cmocka_unit_test(test_frame_truncated_needs_more),
        cmocka_unit_test(test_frame_two_in_one_buffer),
        cmocka_unit_test(test_frame_limits),
        cmocka_unit_test(test_frame_bad_headers),
        cmocka_unit_test(test_frame_status_names),
        cmocka_unit_test(test_linkauth_macs),
        cmocka_unit_test(test_linkauth_secret_file),
    };
    return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
