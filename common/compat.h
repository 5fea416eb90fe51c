/*
 * compat.h - small macros every module uses: UNUSED, ARRAY_SIZE, branch hints, the
 * printf-format attribute, the hex-digit value that every percent-decoder needs, and the
 * FNV-1a hash of the name tables.
 */
#ifndef COMPAT_H
#define COMPAT_H

#include <stddef.h>
#include <stdint.h>

#define UNUSED(x) ((void)(x))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PRINTF_FMT(a, b) __attribute__((format(printf, a, b)))

/* The value of a hex digit (either case), or -1 if c is not one. */
static inline int hex_digit_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* 64-bit FNV-1a of len bytes of s. */
static inline uint64_t fnv1a64(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif /* COMPAT_H */
