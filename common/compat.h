/*
 * compat.h - small macros every module uses: UNUSED, ARRAY_SIZE, branch hints and the
 * printf-format attribute.
 */
#ifndef COMPAT_H
#define COMPAT_H

#define UNUSED(x) ((void)(x))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PRINTF_FMT(a, b) __attribute__((format(printf, a, b)))

#endif /* COMPAT_H */
