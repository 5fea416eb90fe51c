/*
 * fuzz_http_request.c - server1's HTTP/1.1 request parser (server1/http_parser). The input is a
 * byte stream as a client would send it on one connection: requests parsed one after another,
 * each head followed by its Content-Length body (pipelining). The first byte picks how the
 * bytes arrive (all at once, or in pieces of 1..255 bytes); the result must not depend on it:
 * the same stream fed whole is parsed to the same requests, statuses and lengths. Every span
 * the parser returns lies inside the head it parsed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../server1/http_parser.h"

#define MAX_HEAD 8192
#define MAX_REQS 64

struct outcome {
    int result;       /* last http_parser_execute result */
    int status;       /* after an error */
    size_t head_len;  /* after DONE */
    uint64_t clen;
    int method;
    int keep_alive;
};

static void check_spans(const struct http_parser *p)
{
    const struct http_request *r = &p->req;
    size_t h = r->head_len;

    if ((size_t)r->target.off + r->target.len > h || (size_t)r->method_tok.off + r->method_tok.len > h)
        abort();
    if (r->nheaders > HTTP_MAX_HEADERS)
        abort();
    for (unsigned i = 0; i < r->nheaders; i++) {
        const struct http_header *hd = &r->headers[i];
        if ((size_t)hd->name.off + hd->name.len > h || (size_t)hd->value.off + hd->value.len > h)
            abort();
    }
    if (r->host >= (int)r->nheaders || r->authorization >= (int)r->nheaders ||
        r->content_type >= (int)r->nheaders)
        abort();
    if (h > MAX_HEAD)
        abort();
}

/* Parses the stream s[0..n) as a connection would, feeding at most `step` new bytes per call
 * (0: everything available). Fills out[] and returns the number of requests seen. */
static size_t run(const uint8_t *s, size_t n, size_t step, struct outcome *out)
{
    struct http_parser p;
    size_t off = 0, nreq = 0;

    http_parser_init(&p, MAX_HEAD);
    while (off < n && nreq < MAX_REQS) {
        size_t avail = n - off, have = step == 0 ? avail : (step < avail ? step : avail);
        enum http_parse_result r;
        for (;;) {
            r = http_parser_execute(&p, (const char *)s + off, have);
            if (r != HTTP_PARSE_MORE || have == avail)
                break;
            have = have + step < avail ? have + step : avail;
        }
        out[nreq] = (struct outcome){.result = r};
        if (r == HTTP_PARSE_ERROR) {
            if (p.status != 400 && p.status != 431 && p.status != 501 && p.status != 505)
                abort();
            if (p.error == NULL)
                abort();
            out[nreq++].status = p.status;
            break; /* the connection is answered and closed */
        }
        if (r == HTTP_PARSE_MORE) {
            nreq++;
            break;
        }
        check_spans(&p);
        out[nreq].head_len = p.req.head_len;
        out[nreq].clen = p.req.content_length;
        out[nreq].method = p.req.method;
        out[nreq].keep_alive = p.req.keep_alive;
        nreq++;
        if (p.req.head_len > avail)
            abort();
        off += p.req.head_len;
        if (p.req.has_content_length) {
            if (p.req.content_length > n - off)
                break; /* the body is still on its way */
            off += p.req.content_length;
        }
        http_parser_reset(&p);
    }
    return nreq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct outcome a[MAX_REQS], b[MAX_REQS];
    size_t na, nb, step;

    if (size < 1)
        return 0;
    step = data[0];
    data++;
    size--;
    na = run(data, size, 0, a);
    nb = run(data, size, step, b);
    if (na != nb)
        abort(); /* where the bytes were split changed what was parsed */
    for (size_t i = 0; i < na; i++)
        if (a[i].result != b[i].result || a[i].status != b[i].status ||
            a[i].head_len != b[i].head_len || a[i].clen != b[i].clen ||
            a[i].method != b[i].method || a[i].keep_alive != b[i].keep_alive)
            abort();
    return 0;
}
