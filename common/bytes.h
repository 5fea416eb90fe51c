/*
 * bytes.h - integers in byte buffers: little-endian of fixed width, and LEB128 (7 bits a byte,
 * the low ones first, the top bit set on every byte but the last: at most 10 bytes for 64
 * bits). The pack's index (pack.h) and the upload index's blocks (upindex.h) are written so.
 * The link's frames are big-endian: frame.c has its own.
 */
#ifndef BYTES_H
#define BYTES_H

#include <stddef.h>
#include <stdint.h>

#define LEB128_MAX 10 /* bytes of a 64-bit LEB128, at most */

static inline void bytes_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void bytes_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t bytes_get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint64_t bytes_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Writes v at p (room for LEB128_MAX bytes); returns the bytes written. */
static inline size_t leb128_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/*
 * Reads one from the avail bytes at p into *v: the bytes it took, or 0 if they end before it
 * does or it runs past LEB128_MAX bytes (*v is then 0).
 */
static inline size_t leb128_get(const uint8_t *p, size_t avail, uint64_t *v)
{
    uint64_t x = 0;

    for (size_t i = 0; i < avail && i < LEB128_MAX; i++) {
        x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    *v = 0;
    return 0;
}

#endif /* BYTES_H */
