/*
 * textput.h - text appended to a buffer its caller has sized: a string, a decimal number. For
 * what server1 writes a byte at a time on every request (response heads in conn.c, access-log
 * lines in accesslog.c), where snprintf's parsing of a format would be most of the cost.
 * Each returns the position after what it wrote; nothing is terminated.
 */
#ifndef S1_TEXTPUT_H
#define S1_TEXTPUT_H

#include <stdint.h>
#include <string.h>

static inline char *textput_str(char *p, const char *s)
{
    size_t n = strlen(s);

    memcpy(p, s, n);
    return p + n;
}

/* v in decimal: at most 20 bytes */
static inline char *textput_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

#endif /* S1_TEXTPUT_H */
