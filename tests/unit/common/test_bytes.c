/*
 * test_bytes.c - common/bytes.h: little-endian integers byte by byte; LEB128 round trips at
 * every length from 1 to 10 bytes (0, 127, 128, 2^63, UINT64_MAX among them), the bytes of
 * known values, and the refusals: input that ends inside a value, and an eleventh byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"

static void test_bytes_le(void **state)
{
    uint8_t b[8];

    (void)state;
    bytes_put_le32(b, 0x01020304u);
    assert_memory_equal(b, "\x04\x03\x02\x01", 4);
    assert_int_equal(bytes_get_le32(b), 0x01020304u);
    bytes_put_le64(b, 0x0102030405060708ull);
    assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
    assert_true(bytes_get_le64(b) == 0x0102030405060708ull);
}

static void test_leb128_round_trip(void **state)
{
    uint8_t b[LEB128_MAX + 1];
    uint64_t v;

    (void)state;
    for (unsigned bits = 0; bits <= 64; bits++) {
        uint64_t x = bits == 64 ? UINT64_MAX : (1ull << bits) - 1; /* all ones below bit */
        uint64_t y = bits == 64 ? 0 : 1ull << bits;
        size_t n = leb128_put(b, x);
        assert_int_equal(n, bits == 0 ? 1 : (bits + 6) / 7);
        assert_int_equal(leb128_get(b, n, &v), n);
        assert_true(v == x);
        n = leb128_put(b, y);
        assert_int_equal(leb128_get(b, sizeof(b), &v), n);
        assert_true(v == y);
    }
    assert_int_equal(leb128_put(b, 300), 2);
    assert_memory_equal(b, "\xac\x02", 2);
    assert_int_equal(leb128_put(b, UINT64_MAX), LEB128_MAX);
}

static void test_leb128_refusals(void **state)
{
    uint8_t b[16];
    uint64_t v = 7;

    (void)state;
    assert_int_equal(leb128_get(b, 0, &v), 0); /* nothing */
    assert_true(v == 0);
    leb128_put(b, 1ull << 40);
    assert_int_equal(leb128_get(b, 5, &v), 0); /* cut short: 6 bytes */
    memset(b, 0x80, sizeof(b));                /* never ends */
    assert_int_equal(leb128_get(b, sizeof(b), &v), 0);
    b[10] = 0x01; /* ends at the eleventh byte: too long */
    assert_int_equal(leb128_get(b, sizeof(b), &v), 0);
    b[9] = 0x01; /* the tenth: taken */
    assert_int_equal(leb128_get(b, sizeof(b), &v), 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_le),
        cmocka_unit_test(test_leb128_round_trip),
        cmocka_unit_test(test_leb128_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
