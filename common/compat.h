/*
 * compat.h - small macros every module uses: UNUSED, ARRAY_SIZE, branch hints, the
 * printf-format attribute, and the hex-digit value that every percent-decoder needs.
 */
#ifndef COMPAT_H
#define COMPAT_H

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

#endif /* COMPAT_H */
