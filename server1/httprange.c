/*
 * httprange.c - see httprange.h.
 */
#include "httprange.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <strings.h>

/* A satisfiable range-spec, clamped to the representation: bytes [start, end). */
struct span {
    uint64_t start;
    uint64_t end; /* exclusive; start < end <= size */
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads 1*DIGIT at s[*i..len) into *out. False if there is no digit or the value overflows. */
static bool parse_pos(const char *s, size_t len, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    size_t start = *i;

    while (*i < len && is_digit(s[*i])) {
        unsigned d = (unsigned)(s[*i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        (*i)++;
    }
    *out = v;
    return *i > start;
}

/* Sorts by start; n <= HTTPRANGE_MAX_PARTS, so insertion sort. */
static void sort_spans(struct span *r, size_t n)
{
    for (size_t k = 1; k < n; k++) {
        struct span v = r[k];
        size_t j = k;
        while (j > 0 && r[j - 1].start > v.start) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = v;
    }
}

enum httprange_result httprange_parse(const char *value, size_t len, uint64_t size, uint64_t *off,
                                      uint64_t *count)
{
    struct span r[HTTPRANGE_MAX_PARTS];
    size_t nparts = 0;
    size_t nsat = 0;
    size_t i = 6;
    struct span cur;

    if (size == 0)
        return HTTPRANGE_IGNORE; /* no content: see httprange.h */
    if (len < 6 || strncasecmp(value, "bytes", 5) != 0 || value[5] != '=')
        return HTTPRANGE_IGNORE;
    for (;;) {
        uint64_t first;
        uint64_t last;

        while (i < len && is_ows(value[i]))
            i++;
        if (i == len)
            break;
        if (value[i] == ',') { /* an empty list element */
            i++;
            continue;
        }
        if (++nparts > HTTPRANGE_MAX_PARTS)
            return HTTPRANGE_IGNORE;
        if (value[i] == '-') {
            i++;
            if (!parse_pos(value, len, &i, &last))
                return HTTPRANGE_IGNORE;
            if (last > 0)
                r[nsat++] = (struct span){size - (last < size ? last : size), size};
        } else {
            if (!parse_pos(value, len, &i, &first) || i == len || value[i] != '-')
                return HTTPRANGE_IGNORE;
            i++;
            if (i < len && is_digit(value[i])) {
                if (!parse_pos(value, len, &i, &last) || last < first)
                    return HTTPRANGE_IGNORE;
            } else {
                last = UINT64_MAX;
            }
            if (first < size)
                r[nsat++] = (struct span){first, last < size ? last + 1 : size};
        }
        while (i < len && is_ows(value[i]))
            i++;
        if (i == len)
            break;
        if (value[i] != ',')
            return HTTPRANGE_IGNORE;
        i++;
    }
    if (nparts == 0)
        return HTTPRANGE_IGNORE;
    if (nsat == 0)
        return HTTPRANGE_UNSATISFIABLE;
    sort_spans(r, nsat);
    cur = r[0];
    for (size_t k = 1; k < nsat; k++) {
        if (r[k].start > cur.end)
            return HTTPRANGE_IGNORE; /* a gap: the ranges do not coalesce into one */
        if (r[k].end > cur.end)
            cur.end = r[k].end;
    }
    *off = cur.start;
    *count = cur.end - cur.start;
    return HTTPRANGE_ONE;
}

/* snprintf's result n as a length; 0, with out emptied, if it failed or did not fit. */
static size_t fitted(char *out, size_t cap, int n)
{
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

size_t httprange_content_range(char *out, size_t cap, uint64_t off, uint64_t count,
                               uint64_t size)
{
    if (cap == 0)
        return 0;
    if (count == 0 || off >= size || count > size - off) {
        out[0] = '\0';
        return 0;
    }
    return fitted(out, cap,
                  snprintf(out, cap, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
                           off + count - 1, size));
}

size_t httprange_unsatisfied(char *out, size_t cap, uint64_t size)
{
    if (cap == 0)
        return 0;
    return fitted(out, cap, snprintf(out, cap, "bytes */%" PRIu64, size));
}
