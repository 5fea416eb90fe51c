/*
 * opts.h - strict parsers for flag values: the whole string must be a number in range, with an
 * optional unit suffix. On error they return -1 and write a one-line reason into err.
 * Thread-safe (no global state).
 */
#ifndef OPTS_H
#define OPTS_H

#include <stddef.h>
#include <stdint.h>

#define OPTS_ERR_LEN 256

/* Decimal integer in [min, max]. */
int opts_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err);
/* Byte size with optional suffix k/K, m/M, g/G (powers of 1024), in [min, max]. */
int opts_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err);
/* Duration: a number with suffix us, ms, s (default), m; result in microseconds, in [min, max]. */
int opts_parse_duration_us(const char *s, uint64_t min_us, uint64_t max_us, uint64_t *out,
                           char *err);
/* Decimal number (may have a fraction) in [min, max]. */
int opts_parse_double(const char *s, double min, double max, double *out, char *err);

/* "count events per period" (a limit's flag); count 0 turns the limit off. */
struct opts_rate {
    uint64_t count;
    uint64_t period_us;
};
/* "N/DUR" (DUR from 1ms to a day, as for durations) or "0" (off). */
int opts_parse_rate(const char *s, struct opts_rate *r, char *err);
/* "N/DUR" or "0", for logs and --help (buf of at least 48 bytes). Returns buf. */
const char *opts_format_rate(const struct opts_rate *r, char *buf, size_t len);

#endif /* OPTS_H */
