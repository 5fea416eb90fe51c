/*
 * test_frame.c - the server1 <-> server2 frame codec: round trips, truncation at every length,
 * every limit at the limit and one past it, and malformed headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"

static void test_frame_roundtrip_cred(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    struct frame f;
    size_t used = 0;
    size_t n;

    (void)state;
    n = frame_encode_cred(FRAME_VERIFY, 0xdeadbeef, "alice", 5, "s3cr3t", 6, buf, sizeof(buf));
    assert_int_equal(n, FRAME_HEADER_SIZE + 3 + 5 + 6);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(used, n);
    assert_int_equal(f.type, FRAME_VERIFY);
    assert_int_equal(f.id, 0xdeadbeef);
    assert_int_equal(f.user_len, 5);
    assert_string_equal(f.user, "alice");
    assert_int_equal(f.pass_len, 6);
    assert_string_equal(f.pass, "s3cr3t");

    /* frame_encode of the decoded frame gives the same bytes */
    uint8_t again[FRAME_MAX_SIZE];
    assert_int_equal(frame_encode(&f, again, sizeof(again)), n);
    assert_memory_equal(again, buf, n);
}

static void test_frame_roundtrip_every_type(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    struct frame in;
    struct frame out;
    size_t used;
    size_t n;
    const uint8_t types[] = {FRAME_HELLO, FRAME_HELLO_ACK, FRAME_REPLY, FRAME_PING};

    (void)state;
    for (size_t i = 0; i < sizeof(types); i++) {
        memset(&in, 0, sizeof(in));
        in.type = types[i];
        in.status = FRAME_ST_EXISTS;
        in.id = (uint32_t)i * 77;
        in.version = FRAME_VERSION;
        n = frame_encode(&in, buf, sizeof(buf));
        assert_true(n >= FRAME_HEADER_SIZE);
        assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
        assert_int_equal(used, n);
        assert_int_equal(out.type, in.type);
        assert_int_equal(out.status, in.status);
        assert_int_equal(out.id, in.id);
    }
    n = frame_encode_hello(buf, sizeof(buf));
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.version, FRAME_VERSION);
    n = frame_encode_reply(42, FRAME_ST_DENIED, buf, sizeof(buf));
    assert_int_equal(frame_decode(buf, n, &out, &used, NULL), FRAME_DONE);
    assert_int_equal(out.status, FRAME_ST_DENIED);
    assert_int_equal(out.id, 42);
}

static void test_frame_truncated_needs_more(void **state)
{
    uint8_t buf[FRAME_MAX_SIZE];
    struct frame f;
    size_t used;
    size_t n = frame_encode_cred(FRAME_CREATE, 1, "bob", 3, "pw", 2, buf, sizeof(buf));

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
    size_t a = frame_encode_cred(FRAME_CREATE, 1, "bob", 3, "pw", 2, buf, sizeof(buf));
    size_t b = frame_encode_reply(2, FRAME_ST_OK, buf + a, sizeof(buf) - a);

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
    n = frame_encode_cred(FRAME_CREATE, 9, user, ACCOUNT_USER_MAX, pass, ACCOUNT_PASS_MAX, buf,
                          sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_DONE);
    assert_int_equal(f.user_len, ACCOUNT_USER_MAX);
    assert_int_equal(f.pass_len, ACCOUNT_PASS_MAX);
    /* one past: refused by the encoder */
    assert_int_equal(frame_encode_cred(FRAME_CREATE, 9, user, ACCOUNT_USER_MAX + 1, pass, 1, buf,
                                       sizeof(buf)),
                     0);
    assert_int_equal(frame_encode_cred(FRAME_CREATE, 9, user, 1, pass, ACCOUNT_PASS_MAX + 1, buf,
                                       sizeof(buf)),
                     0);
    /* too small an output buffer */
    assert_int_equal(frame_encode_cred(FRAME_CREATE, 9, user, 10, pass, 10, buf, 20), 0);

    /* one past, forged on the wire: refused by the decoder */
    n = frame_encode_cred(FRAME_CREATE, 9, user, 10, pass, 10, buf, sizeof(buf));
    buf[12] = ACCOUNT_USER_MAX + 1;
    assert_int_equal(frame_decode(buf, n, &f, &used, NULL), FRAME_BAD);
    n = frame_encode_cred(FRAME_CREATE, 9, user, 10, pass, 10, buf, sizeof(buf));
    buf[13] = (ACCOUNT_PASS_MAX + 1) >> 8;
    buf[14] = (ACCOUNT_PASS_MAX + 1) & 0xff;
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
    n = frame_encode_reply(1, FRAME_ST_OK, buf, sizeof(buf));
    buf[4] = 99;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* reserved field not zero */
    n = frame_encode_reply(1, FRAME_ST_OK, buf, sizeof(buf));
    buf[7] = 1;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* credential lengths that do not add up */
    n = frame_encode_cred(FRAME_VERIFY, 3, "abc", 3, "def", 3, buf, sizeof(buf));
    buf[12] = 4;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* a HELLO with the wrong magic */
    n = frame_encode_hello(buf, sizeof(buf));
    buf[12] ^= 0xff;
    assert_int_equal(frame_decode(buf, n, &f, &used, &why), FRAME_BAD);
    /* a REPLY with a payload */
    n = frame_encode_reply(1, FRAME_ST_OK, buf, sizeof(buf));
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
    assert_string_equal(frame_status_name((enum frame_status)200), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_roundtrip_cred),
        cmocka_unit_test(test_frame_roundtrip_every_type),
        cmocka_unit_test(test_frame_truncated_needs_more),
        cmocka_unit_test(test_frame_two_in_one_buffer),
        cmocka_unit_test(test_frame_limits),
        cmocka_unit_test(test_frame_bad_headers),
        cmocka_unit_test(test_frame_status_names),
    };
    return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
