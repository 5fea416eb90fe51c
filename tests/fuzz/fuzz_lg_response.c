/*
 * fuzz_lg_response.c - loadgen's HTTP/1.x response parser (loadgen/http). The input is what a
 * server sends on one connection; the first byte picks a HEAD request or not and a piece size.
 * It is fed as a client does: unconsumed bytes are kept in front of the next ones, body bytes
 * are counted (alternately parsed and skipped), a complete response is followed by the next.
 * Properties: the parser never consumes more than it is given, never counts more body than the
 * Content-Length (unless chunks delimit the body), never more of a chunk than its size, and
 * ends in a defined state; an error always has a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../loadgen/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lg_http p;
    size_t off = 0, step, responses = 0;
    bool head, skip = false;

    if (size < 1)
        return 0;
    head = data[0] & 1;
    step = (data[0] >> 1) + 1;
    data++;
    size--;
    lg_http_reset(&p, head);
    while (off < size && responses < 64) {
        size_t avail = size - off, used = 0, have = step < avail ? step : avail;
        enum lg_http_result r;

        for (;;) {
            if ((p.state == LG_HTTP_BODY || p.state == LG_HTTP_CHUNK_DATA) && skip) {
                uint64_t want = lg_http_body_wanted(&p);
                used = want < have ? (size_t)want : have;
                r = lg_http_skip(&p, used);
            } else {
                r = lg_http_parse(&p, (const char *)data + off, have, &used);
            }
            skip = !skip;
            if (used > have)
                abort();
            if (r != LG_HTTP_MORE || have == avail || used > 0)
                break;
            have = have + step < avail ? have + step : avail; /* a partial line: more bytes */
        }
        if (r == LG_HTTP_ERR) {
            if (p.why == NULL || p.state != LG_HTTP_FAILED)
                abort();
            return 0;
        }
        off += used;
        if (p.has_length && !p.chunked && p.body_bytes > p.content_length)
            abort();
        if (p.state == LG_HTTP_CHUNK_DATA && p.body_left == 0)
            abort(); /* a chunk's end moves to LG_HTTP_CHUNK_END at once */
        if (r == LG_HTTP_DONE) {
            if (p.state != LG_HTTP_COMPLETE)
                abort();
            responses++;
            lg_http_reset(&p, head);
        } else if (used == 0 && have == avail) {
            break; /* nothing more can be taken: wait for bytes that never come */
        }
    }
    if (off >= size && lg_http_eof(&p) == LG_HTTP_ERR && p.why == NULL)
        abort();
    return 0;
}
