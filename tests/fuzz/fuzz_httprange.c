/*
 * fuzz_httprange.c - the Range header (server1/httprange). Input: an optional decimal size and
 * a newline, then the field value; the value is also tried against sizes at the edges (0, 1,
 * UINT64_MAX...). Properties: ONE gives off < size, count >= 1 and off + count <= size, and its
 * Content-Range fits HTTPRANGE_CONTENT_RANGE_MAX and says the same range; the unit is
 * case-insensitive; the parser never reads past len (the value sits in an exact-size heap
 * buffer, so ASan sees an overrun).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/httprange.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *v, size_t len, uint64_t size)
{
    char out[HTTPRANGE_CONTENT_RANGE_MAX];
    uint64_t off = 0;
    uint64_t count = 0;
    uint64_t a;
    uint64_t b;
    uint64_t s;
    enum httprange_result r = httprange_parse(v, len, size, &off, &count);

    switch (r) {
    case HTTPRANGE_ONE:
        if (off >= size || count == 0 || count > size - off)
            abort();
        if (httprange_content_range(out, sizeof(out), off, count, size) == 0)
            abort();
        if (sscanf(out, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64, &a, &b, &s) != 3 || a != off ||
            b != off + count - 1 || s != size)
            abort();
        break;
    case HTTPRANGE_UNSATISFIABLE:
        if (httprange_unsatisfied(out, sizeof(out), size) == 0)
            abort();
        break;
    case HTTPRANGE_IGNORE:
        break;
    default:
        abort();
    }

    /* the same value with the unit's letters in the other case gives the same answer */
    if (len >= 6) {
        char *copy = malloc(len);
        uint64_t off2 = 0;
        uint64_t count2 = 0;
        if (copy == NULL)
            return;
        memcpy(copy, v, len);
        for (int i = 0; i < 5; i++) {
            char c = copy[i];
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
                copy[i] = (char)(c ^ 0x20);
        }
        if (httprange_parse(copy, len, size, &off2, &count2) != r ||
            (r == HTTPRANGE_ONE && (off2 != off || count2 != count)))
            abort();
        free(copy);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t sizes[] = {0, 1, 2, 100, 4096, UINT64_MAX - 1, UINT64_MAX};
    uint64_t given = 0;
    bool has_given = false;
    size_t i = 0;
    char *v;
    size_t len;

    /* "<digits>\n" up front: a size of our own (saturating) */
    while (i < size && i < 21 && data[i] >= '0' && data[i] <= '9') {
        unsigned d = (unsigned)(data[i] - '0');
        given = given > (UINT64_MAX - d) / 10 ? UINT64_MAX : given * 10 + d;
        i++;
    }
    if (i > 0 && i < size && data[i] == '\n') {
        has_given = true;
        data += i + 1;
        size -= i + 1;
    }
    len = size;
    v = malloc(len ? len : 1);
    if (v == NULL)
        return 0;
    memcpy(v, data, len);
    if (has_given)
        check(v, len, given);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        check(v, len, sizes[k]);
    free(v);
    return 0;
}
