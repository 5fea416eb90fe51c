/*
 * fuzz_http_request.c - server1's HTTP/1.1 request parser (server1/http_parser). The input is a
 * byte stream as a client would send it on one connection: requests parsed one after another,
 * each head followed by its Content-Length or chunked body (pipelining; a chunked body is
 * decoded with http_chunked_decode, its data spans checked to lie in the bytes it was given and
 * to add up to the sizes announced). The first byte picks how the
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
    int body_result;  /* a chunked body's last http_chunked_decode result (else 0) */
    int body_status;
    uint64_t body_len; /* its decoded bytes */
};

/*
 * Decodes the chunked body at s[0..n), at most step new bytes per call (0: all there is), as
 * conn.c does; fills o; returns the bytes it took (the rest is the next request).
 */
static size_t decode_chunked(const uint8_t *s, size_t n, size_t step, struct outcome *o)
{
    struct http_chunked d;
    size_t off = 0, have = 0;
    enum http_chunked_result r = HTTP_CHUNKED_MORE;
    uint64_t got = 0;

    http_chunked_init(&d, 1u << 20, 1024);
    while (r == HTTP_CHUNKED_MORE) {
        size_t avail = step == 0 ? n : (have + step < n ? have + step : n);
        struct http_span data;
        size_t used;
        if (off == avail) {
            if (avail == n)
                break;
            have = avail;
            continue;
        }
        r = http_chunked_decode(&d, (const char *)s + off, avail - off, &used, &data);
        if (used > avail - off || (size_t)data.off + data.len > used)
            abort();
        if (r == HTTP_CHUNKED_ERROR && (d.error == NULL || (d.status != 400 && d.status != 413)))
            abort();
        got += data.len;
        off += used;
        have = avail;
    }
    if (got > d.total || (r == HTTP_CHUNKED_DONE && got != d.total))
        abort();
    o->body_result = r;
    o->body_status = d.status;
    o->body_len = got;
    return off;
}

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
        } else if (p.req.chunked) {
            off += decode_chunked(s + off, n - off, step, &out[nreq - 1]);
            if (out[nreq - 1].body_result != HTTP_CHUNKED_DONE)
                break; /* malformed (the connection closes), or still on its way */
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
            a[i].method != b[i].method || a[i].keep_alive != b[i].keep_alive ||
            a[i].body_result != b[i].body_result || a[i].body_status != b[i].body_status ||
            a[i].body_len != b[i].body_len)
            abort();
    return 0;
}
