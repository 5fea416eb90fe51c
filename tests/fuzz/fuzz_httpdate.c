/*
 * fuzz_httpdate.c - HTTP dates (server1/httpdate) as If-Modified-Since reads them. Properties:
 * a date that parses, formatted and parsed again, gives the same time; the parser never reads
 * past len; httpdate_format writes exactly HTTPDATE_LEN + 1 bytes (into an exact-size heap
 * buffer, so ASan sees any overrun) and its output always parses back to the clamped input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/httpdate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The RFC 850 century rule depends on now: try a few, including ones that get clamped. */
static const int64_t nows[] = {0, INT64_C(1748736000), INT64_C(4102444800), HTTPDATE_MIN,
                               HTTPDATE_MAX, INT64_MIN, INT64_MAX};

static void check_round_trip(int64_t t, char *buf)
{
    int64_t again = 0;
    int64_t want = t < HTTPDATE_MIN ? HTTPDATE_MIN : t > HTTPDATE_MAX ? HTTPDATE_MAX : t;

    if (httpdate_format(t, buf) != HTTPDATE_LEN || buf[HTTPDATE_LEN] != '\0' ||
        strlen(buf) != HTTPDATE_LEN)
        abort();
    if (httpdate_parse(buf, HTTPDATE_LEN, 0, &again) != 0 || again != want)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    char *buf = malloc(HTTPDATE_LEN + 1);
    int64_t raw = 0;

    if (copy == NULL || buf == NULL)
        goto out;
    /* an exact-size copy, so a read past len is an ASan report */
    if (size > 0)
        memcpy(copy, data, size);
    for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
        int64_t t = 0;
        if (httpdate_parse(copy, size, nows[i], &t) == 0) {
            if (t < HTTPDATE_MIN || t > HTTPDATE_MAX)
                abort();
            check_round_trip(t, buf);
        }
    }
    /* the first 8 bytes as a time: any int64 formats and parses back (clamped) */
    if (size > 0)
        memcpy(&raw, data, size < sizeof(raw) ? size : sizeof(raw));
    check_round_trip(raw, buf);
out:
    free(buf);
    free(copy);
    return 0;
}
