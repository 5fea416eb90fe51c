/*
 * opts.c - see opts.h.
 */
#include "opts.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_scaled(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
                        const char *const *units, const uint64_t *scales, size_t nunits,
                        uint64_t default_scale)
{
    char *end;
    double v;
    uint64_t scale = 0;

    if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ') {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a non-negative number", s ? s : "");
        return -1;
    }
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v)) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a number", s);
        return -1;
    }
    if (*end == '\0') {
        scale = default_scale;
    } else {
        for (size_t i = 0; i < nunits; i++) {
            if (strcmp(end, units[i]) == 0) {
                scale = scales[i];
                break;
            }
        }
    }
    if (scale == 0) {
        snprintf(err, OPTS_ERR_LEN, "'%s' has an unknown unit '%s'", s, end);
        return -1;
    }
    v *= (double)scale;
    if (v != floor(v)) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a whole number of units", s);
        return -1;
    }
    if (v < (double)min || v > (double)max) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is out of range [%" PRIu64 ", %" PRIu64 "]", s, min, max);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int opts_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9') {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a non-negative integer", s ? s : "");
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a non-negative integer", s);
        return -1;
    }
    if (v < min || v > max) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is out of range [%" PRIu64 ", %" PRIu64 "]", s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int opts_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
    static const char *const units[] = {"k", "K", "m", "M", "g", "G", "B"};
    static const uint64_t scales[] = {1ull << 10, 1ull << 10, 1ull << 20, 1ull << 20,
                                      1ull << 30, 1ull << 30, 1};
    return parse_scaled(s, min, max, out, err, units, scales, 7, 1);
}

int opts_parse_duration_us(const char *s, uint64_t min_us, uint64_t max_us, uint64_t *out,
                           char *err)
{
    static const char *const units[] = {"us", "ms", "s", "m"};
    static const uint64_t scales[] = {1, 1000, 1000000, 60000000};
    return parse_scaled(s, min_us, max_us, out, err, units, scales, 4, 1000000);
}

int opts_parse_double(const char *s, double min, double max, double *out, char *err)
{
    char *end;
    double v;

    errno = 0;
    v = s ? strtod(s, &end) : 0;
    if (s == NULL || *s == '\0' || errno != 0 || *end != '\0' || !isfinite(v)) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is not a number", s ? s : "");
        return -1;
    }
    if (v < min || v > max) {
        snprintf(err, OPTS_ERR_LEN, "'%s' is out of range [%g, %g]", s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int opts_parse_rate(const char *s, struct opts_rate *r, char *err)
{
    char num[32];
    char perr[OPTS_ERR_LEN];
    const char *slash = strchr(s, '/');
    size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
    uint64_t count;
    uint64_t period_us;

    if (n == 0 || n >= sizeof(num)) {
        snprintf(err, OPTS_ERR_LEN, "'%.64s' is not N/DURATION (e.g. 20/1m) or 0", s);
        return -1;
    }
    memcpy(num, s, n);
    num[n] = '\0';
    if (opts_parse_u64(num, 0, 1000000000, &count, perr) < 0) {
        snprintf(err, OPTS_ERR_LEN, "count: %.200s", perr);
        return -1;
    }
    if (count == 0 && slash == NULL) {
        *r = (struct opts_rate){0, 0};
        return 0;
    }
    if (slash == NULL) {
        snprintf(err, OPTS_ERR_LEN, "'%.64s' is not N/DURATION (e.g. 20/1m) or 0", s);
        return -1;
    }
    if (opts_parse_duration_us(slash + 1, 1000, 86400000000ull, &period_us, perr) < 0) {
        snprintf(err, OPTS_ERR_LEN, "duration: %.200s", perr);
        return -1;
    }
    *r = (struct opts_rate){count, count == 0 ? 0 : period_us};
    return 0;
}

const char *opts_format_rate(const struct opts_rate *r, char *buf, size_t len)
{
    uint64_t us = r->period_us;

    if (r->count == 0)
        snprintf(buf, len, "0");
    else if (us % 60000000 == 0)
        snprintf(buf, len, "%llu/%llum", (unsigned long long)r->count,
                 (unsigned long long)(us / 60000000));
    else if (us % 1000000 == 0)
        snprintf(buf, len, "%llu/%llus", (unsigned long long)r->count,
                 (unsigned long long)(us / 1000000));
    else if (us % 1000 == 0)
        snprintf(buf, len, "%llu/%llums", (unsigned long long)r->count,
                 (unsigned long long)(us / 1000));
    else
        snprintf(buf, len, "%llu/%lluus", (unsigned long long)r->count, (unsigned long long)us);
    return buf;
}
