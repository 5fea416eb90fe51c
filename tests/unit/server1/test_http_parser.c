/*
 * test_http_parser.c - cmocka tests for server1/http_parser: valid requests, pipelining, a split
 * at every byte boundary, every malformed case with its status, and each limit at exactly the
 * limit and one byte / one header over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server1/http_parser.h"

#define BIG 8192

static struct http_parser P;

/* Parses all of s in one call; returns the result. */
static enum http_parse_result parse_all(const char *s, size_t max)
{
    http_parser_init(&P, max);
    return http_parser_execute(&P, s, strlen(s));
}

static void expect_status(const char *s, int status)
{
    enum http_parse_result r = parse_all(s, BIG);
    if (r != HTTP_PARSE_ERROR || P.status != status)
        fail_msg("request %s: got result %d status %d (%s), want status %d", s, r, P.status,
                 P.error ? P.error : "-", status);
}

static char *span(const char *buf, struct http_span s)
{
    static char out[4][256];
    static int k;
    char *o = out[k++ % 4];
    snprintf(o, sizeof(out[0]), "%.*s", (int)s.len, buf + s.off);
    return o;
}

static void test_parse_simple_get(void **state)
{
    const char *s = "GET /files/a.txt HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n";
    (void)state;
    assert_int_equal(parse_all(s, BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_GET);
    assert_string_equal(span(s, P.req.method_tok), "GET");
    assert_string_equal(span(s, P.req.target), "/files/a.txt");
    assert_int_equal(P.req.version_minor, 1);
    assert_true(P.req.keep_alive);
    assert_false(P.req.has_content_length);
    assert_int_equal(P.req.head_len, strlen(s));
    assert_int_equal(P.req.nheaders, 2);
    assert_string_equal(span(s, P.req.headers[1].name), "User-Agent");
    assert_string_equal(span(s, P.req.headers[1].value), "t");
    assert_int_equal(P.req.host, 0);
    assert_int_equal(P.req.authorization, -1);
    assert_int_equal(P.req.user_agent, 1);
    assert_int_equal(P.req.referer, -1);
}

/* Referer and User-Agent (for the access log): the first of each, any case. */
static void test_parse_log_headers(void **state)
{
    const char *s = "GET / HTTP/1.1\r\nHost: x\r\nREFERER: r1\r\nuser-agent: u1\r\n"
                    "Connection: keep-alive\r\nUser-Agent: u2\r\nReferer: r2\r\n\r\n";
    (void)state;
    assert_int_equal(parse_all(s, BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.referer, 1);
    assert_int_equal(P.req.user_agent, 2);
    assert_string_equal(span(s, P.req.headers[P.req.user_agent].value), "u1");
}

static void test_parse_methods(void **state)
{
    (void)state;
    assert_int_equal(parse_all("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_HEAD);
    assert_int_equal(parse_all("POST / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_POST);
    assert_int_equal(parse_all("DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_DELETE);
    assert_int_equal(parse_all("PUT / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_PUT);
    assert_int_equal(parse_all("PATCH / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_OTHER);
    /* methods are case-sensitive */
    assert_int_equal(parse_all("get / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_OTHER);
}

static void test_parse_header_values_trimmed(void **state)
{
    const char *s = "GET / HTTP/1.1\r\nHost:x\r\nA:   spaced value \t \r\nB:\r\nC: \xc3\xa9\r\n\r\n";
    (void)state;
    assert_int_equal(parse_all(s, BIG), HTTP_PARSE_DONE);
    assert_string_equal(span(s, P.req.headers[0].value), "x");
    assert_string_equal(span(s, P.req.headers[1].value), "spaced value");
    assert_string_equal(span(s, P.req.headers[2].value), "");
    assert_string_equal(span(s, P.req.headers[3].value), "\xc3\xa9"); /* obs-text allowed */
}

static void test_parse_known_headers(void **state)
{
    const char *s = "POST /users HTTP/1.1\r\nhOsT: x\r\nCONTENT-LENGTH: 12\r\n"
                    "content-type: application/x-www-form-urlencoded\r\n"
                    "Authorization: Basic YTpi\r\nExpect: 100-Continue\r\n\r\n";
    (void)state;
    assert_int_equal(parse_all(s, BIG), HTTP_PARSE_DONE);
    assert_true(P.req.has_content_length);
    assert_int_equal(P.req.content_length, 12);
    assert_int_equal(P.req.host, 0);
    assert_int_equal(P.req.content_type, 2);
    assert_int_equal(P.req.authorization, 3);
    assert_true(P.req.expect_continue);
    assert_true(http_span_eq_ci(s, P.req.headers[1].name, "content-length"));
}

static void test_parse_keep_alive_rules(void **state)
{
    (void)state;
    assert_int_equal(parse_all("GET / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_true(P.req.keep_alive);
    assert_int_equal(parse_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", BIG),
                     HTTP_PARSE_DONE);
    assert_false(P.req.keep_alive);
    assert_int_equal(
        parse_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, CLOSE\r\n\r\n", BIG),
        HTTP_PARSE_DONE);
    assert_false(P.req.keep_alive);
    assert_int_equal(parse_all("GET / HTTP/1.0\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.version_minor, 0);
    assert_false(P.req.keep_alive);
    assert_int_equal(parse_all("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", BIG),
                     HTTP_PARSE_DONE);
    assert_true(P.req.keep_alive);
    assert_int_equal(parse_all("GET / HTTP/1.0\r\nConnection: foo,  keep-alive \r\n\r\n", BIG),
                     HTTP_PARSE_DONE);
    assert_true(P.req.keep_alive);
}

static void test_parse_leading_empty_lines(void **state)
{
    (void)state;
    assert_int_equal(parse_all("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", BIG),
                     HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_GET);
}

static void test_parse_absolute_and_query_targets(void **state)
{
    const char *s = "GET http://h/files/a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
    (void)state;
    assert_int_equal(parse_all(s, BIG), HTTP_PARSE_DONE);
    assert_string_equal(span(s, P.req.target), "http://h/files/a?x=1");
}

static void test_parse_pipelined(void **state)
{
    const char *s = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                    "POST /users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                    "HEAD /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    size_t off = 0;
    size_t len = strlen(s);
    (void)state;

    http_parser_init(&P, BIG);
    assert_int_equal(http_parser_execute(&P, s + off, len - off), HTTP_PARSE_DONE);
    assert_string_equal(span(s + off, P.req.target), "/a");
    off += P.req.head_len + P.req.content_length;

    http_parser_reset(&P);
    assert_int_equal(http_parser_execute(&P, s + off, len - off), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_POST);
    assert_int_equal(P.req.content_length, 5);
    assert_memory_equal(s + off + P.req.head_len, "hello", 5);
    off += P.req.head_len + P.req.content_length;

    http_parser_reset(&P);
    assert_int_equal(http_parser_execute(&P, s + off, len - off), HTTP_PARSE_DONE);
    assert_int_equal(P.req.method, HTTP_METHOD_HEAD);
    assert_false(P.req.keep_alive);
    off += P.req.head_len;
    assert_int_equal(off, len);
}

/* Feeding the same request 1, 2, 3, ... bytes at a time gives the same result as in one go. */
static void check_every_split(const char *s, enum http_parse_result want, int want_status)
{
    size_t len = strlen(s);
    struct http_request whole;
    int whole_status;

    http_parser_init(&P, BIG);
    assert_int_equal(http_parser_execute(&P, s, len), want);
    whole = P.req;
    whole_status = P.status;
    assert_int_equal(whole_status, want_status);

    for (size_t cut = 1; cut < len; cut++) {
        enum http_parse_result r;
        /* incremental: every prefix, one byte longer each time, up to cut, then the rest */
        http_parser_init(&P, BIG);
        for (size_t k = 1; k <= cut; k++) {
            r = http_parser_execute(&P, s, k);
            if (r != HTTP_PARSE_MORE)
                break;
        }
        r = http_parser_execute(&P, s, len);
        assert_int_equal(r, want);
        assert_int_equal(P.status, want_status);
        if (want == HTTP_PARSE_DONE) {
            assert_int_equal(P.req.head_len, whole.head_len);
            assert_int_equal(P.req.nheaders, whole.nheaders);
            assert_int_equal(P.req.content_length, whole.content_length);
            assert_int_equal(P.req.keep_alive, whole.keep_alive);
            assert_memory_equal(&P.req.target, &whole.target, sizeof(whole.target));
            for (unsigned h = 0; h < whole.nheaders; h++) {
                assert_memory_equal(&P.req.headers[h], &whole.headers[h],
                                    sizeof(whole.headers[h]));
            }
        }
    }
}

static void test_parse_split_every_byte(void **state)
{
    (void)state;
    check_every_split("GET /files/a%20b.txt?q=1 HTTP/1.1\r\nHost: example\r\n"
                      "Authorization: Basic YWxpY2U6c2VjcmV0\r\nX-Empty:\r\n"
                      "Content-Length: 3\r\nConnection: keep-alive\r\n\r\nabc",
                      HTTP_PARSE_DONE, 0);
    check_every_split("\r\nPOST /users HTTP/1.0\r\nContent-Length: 0\r\n\r\n", HTTP_PARSE_DONE,
                      0);
    check_every_split("GET / HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n", HTTP_PARSE_ERROR,
                      400);
    check_every_split("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
                      HTTP_PARSE_ERROR, 501);
    check_every_split("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                      HTTP_PARSE_DONE, 0);
}

static void test_parse_incomplete_is_more(void **state)
{
    const char *s = "GET / HTTP/1.1\r\nHost: x\r\n\r";
    (void)state;
    http_parser_init(&P, BIG);
    assert_int_equal(http_parser_execute(&P, s, strlen(s)), HTTP_PARSE_MORE);
    assert_int_equal(http_parser_execute(&P, s, 0), HTTP_PARSE_MORE);
}

static void test_parse_malformed_request_line(void **state)
{
    (void)state;
    expect_status("GET\r\n\r\n", 400);
    expect_status("GET /\r\n\r\n", 400);                        /* HTTP/0.9 */
    expect_status(" GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400);   /* empty target */
    expect_status("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1 x\r\nHost: x\r\n\r\n", 400);
    expect_status("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400);    /* not a token */
    expect_status("GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / http/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTX/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\nHost: x\r\n\r\n", 400);      /* bare LF */
    expect_status("GET / HTTP/1.1\rHost: x\r\n\r\n", 400);      /* bare CR */
    expect_status("\rGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    expect_status("\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400);
}

static void test_parse_versions(void **state)
{
    (void)state;
    expect_status("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505); /* the HTTP/2 preface */
    expect_status("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505);
    expect_status("GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505);
    expect_status("GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505);
    expect_status("GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505);
}

static void test_parse_malformed_headers(void **state)
{
    (void)state;
    expect_status("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400);  /* obs-fold */
    expect_status("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n\tfolded\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\n folded: x\r\nHost: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400);            /* space before ':' */
    expect_status("GET / HTTP/1.1\r\nHo\"st: x\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", 400);          /* bare CR */
    expect_status("GET / HTTP/1.1\r\nHost: x\ny: z\r\n\r\n", 400);       /* bare LF */
    expect_status("GET / HTTP/1.1\r\nHost: a\x01" "b\r\n\r\n", 400);     /* control char */
    expect_status("GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n", 400);
    {
        /* a NUL byte in a value */
        static const char s[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
        http_parser_init(&P, BIG);
        assert_int_equal(http_parser_execute(&P, s, sizeof(s) - 1), HTTP_PARSE_ERROR);
        assert_int_equal(P.status, 400);
    }
    expect_status("GET / HTTP/1.1\r\nHost: x\r\n\rX", 400);              /* bad final line */
    expect_status("GET / HTTP/1.1\r\n\r\n", 400);                        /* 1.1 without Host */
    expect_status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    expect_status("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n",
                  400);
}

static void test_parse_content_length(void **state)
{
    (void)state;
    assert_int_equal(
        parse_all("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                  BIG),
        HTTP_PARSE_DONE);
    assert_int_equal(P.req.content_length, 5);
    assert_int_equal(parse_all("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\n", BIG),
                     HTTP_PARSE_DONE);
    assert_int_equal(P.req.content_length, 7);
    assert_int_equal(
        parse_all("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                  BIG),
        HTTP_PARSE_DONE);
    assert_int_equal(P.req.content_length, UINT64_MAX);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                  400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n", 400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n", 400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", 400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400);
}

static void test_parse_transfer_encoding(void **state)
{
    (void)state;
    assert_int_equal(parse_all("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                               BIG),
                     HTTP_PARSE_DONE);
    assert_true(P.req.chunked);
    assert_false(P.req.has_content_length);
    assert_int_equal(parse_all("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ChUnKeD \r\n\r\n",
                               BIG),
                     HTTP_PARSE_DONE);
    assert_true(P.req.chunked);
    assert_int_equal(parse_all("PUT / HTTP/1.1\r\nHost: x\r\n\r\n", BIG), HTTP_PARSE_DONE);
    assert_false(P.req.chunked);
    /* any coding but exactly chunked: 501 */
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                  501);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n",
                  501);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
                  501);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                  501);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunkedx\r\n\r\n", 501);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 501);
    /* HTTP/1.0 has no transfer codings (RFC 9112 6.1) */
    expect_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    /* with Content-Length: request smuggling (RFC 9112 6.3) */
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n",
                  400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  "Content-Length: 3\r\n\r\n",
                  400);
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                  "transfer-encoding: gzip\r\n\r\n",
                  400);
}

/* A request whose head is exactly n bytes. */
static char *head_of_size(size_t n)
{
    static const char pre[] = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    static const char post[] = "\r\n\r\n";
    char *s = calloc(1, n + 1);
    size_t pad = n - (sizeof(pre) - 1) - (sizeof(post) - 1);
    memcpy(s, pre, sizeof(pre) - 1);
    memset(s + sizeof(pre) - 1, 'a', pad);
    memcpy(s + sizeof(pre) - 1 + pad, post, sizeof(post));
    assert_int_equal(strlen(s), n);
    return s;
}

static void test_parse_head_limit(void **state)
{
    char *ok = head_of_size(8192);
    char *over = head_of_size(8193);
    (void)state;

    http_parser_init(&P, 8192);
    assert_int_equal(http_parser_execute(&P, ok, 8192), HTTP_PARSE_DONE);
    assert_int_equal(P.req.head_len, 8192);
    http_parser_init(&P, 8192);
    assert_int_equal(http_parser_execute(&P, over, 8193), HTTP_PARSE_ERROR);
    assert_int_equal(P.status, 431);
    /* known to be over as soon as the limit is reached without the end */
    http_parser_init(&P, 8192);
    assert_int_equal(http_parser_execute(&P, over, 8192), HTTP_PARSE_ERROR);
    assert_int_equal(P.status, 431);
    /* a huge request line is caught by the same limit */
    {
        char *line = malloc(20000);
        memcpy(line, "GET /", 5);
        memset(line + 5, 'a', 20000 - 5);
        http_parser_init(&P, 8192);
        assert_int_equal(http_parser_execute(&P, line, 20000), HTTP_PARSE_ERROR);
        assert_int_equal(P.status, 431);
        free(line);
    }
    free(ok);
    free(over);
}

static char *with_headers(unsigned n)
{
    char *s = malloc(64 + n * 16);
    char *p = s + sprintf(s, "GET / HTTP/1.1\r\nHost: x\r\n");
    for (unsigned i = 1; i < n; i++)
        p += sprintf(p, "X-%u: v\r\n", i);
    sprintf(p, "\r\n");
    return s;
}

static void test_parse_header_count_limit(void **state)
{
    char *ok = with_headers(HTTP_MAX_HEADERS);
    char *over = with_headers(HTTP_MAX_HEADERS + 1);
    (void)state;

    assert_int_equal(parse_all(ok, BIG), HTTP_PARSE_DONE);
    assert_int_equal(P.req.nheaders, HTTP_MAX_HEADERS);
    expect_status(over, 431);
    free(ok);
    free(over);
}

/* ---- chunked bodies ---- */

struct decoded {
    enum http_chunked_result r;
    int status;
    size_t used;     /* bytes taken in all */
    size_t len;      /* data bytes */
    char data[4096];
};

/*
 * Decodes s[0..n) fed in pieces of step bytes (0: all at once), as conn does: the bytes of a
 * piece not taken yet are offered again with the next ones.
 */
static struct decoded decode(const char *s, size_t n, size_t step, uint64_t max_body,
                             size_t max_trailer)
{
    struct http_chunked d;
    struct decoded out = {.r = HTTP_CHUNKED_MORE};
    size_t have = 0;

    http_chunked_init(&d, max_body, max_trailer);
    while (out.r == HTTP_CHUNKED_MORE) {
        size_t avail = step == 0 ? n : (have + step < n ? have + step : n);
        struct http_span data;
        size_t used;
        if (out.used == avail) {
            if (avail == n)
                break;
            have = avail;
            continue;
        }
        out.r = http_chunked_decode(&d, s + out.used, avail - out.used, &used, &data);
        assert_true(used <= avail - out.used);
        assert_true((size_t)data.off + data.len <= used);
        assert_true(out.len + data.len <= sizeof(out.data));
        memcpy(out.data + out.len, s + out.used + data.off, data.len);
        out.len += data.len;
        out.used += used;
        have = avail;
    }
    out.status = d.status;
    if (out.r == HTTP_CHUNKED_DONE)
        assert_int_equal(d.total, out.len);
    return out;
}

/* s decodes to want (at every split), taking all of s but the trailing extra bytes. */
static void expect_body(const char *s, const char *want, size_t extra)
{
    size_t n = strlen(s);
    for (size_t step = 0; step <= n; step++) {
        struct decoded o = decode(s, n, step, 1 << 20, 8192);
        if (o.r != HTTP_CHUNKED_DONE)
            fail_msg("body %s, step %zu: result %d status %d", s, step, o.r, o.status);
        assert_int_equal(o.used, n - extra);
        assert_int_equal(o.len, strlen(want));
        assert_memory_equal(o.data, want, o.len);
    }
}

/* s fails with status (at every split). */
static void expect_chunked_status(const char *s, uint64_t max_body, size_t max_trailer,
                                  int status)
{
    size_t n = strlen(s);
    for (size_t step = 0; step <= n; step++) {
        struct decoded o = decode(s, n, step, max_body, max_trailer);
        if (o.r != HTTP_CHUNKED_ERROR || o.status != status)
            fail_msg("body %s, step %zu: result %d status %d, want status %d", s, step, o.r,
                     o.status, status);
    }
}

static void test_chunked_decode_valid(void **state)
{
    (void)state;
    expect_body("0\r\n\r\n", "", 0);
    expect_body("5\r\nhello\r\n0\r\n\r\n", "hello", 0);
    expect_body("3\r\nabc\r\n1\r\nd\r\nA\r\n0123456789\r\n0\r\n\r\n", "abcd0123456789", 0);
    /* hex in either case, leading zeros */
    expect_body("0000000000000000000a\r\n0123456789\r\n00\r\n\r\n", "0123456789", 0);
    expect_body("b\r\nhello world\r\n0\r\n\r\n", "hello world", 0);
    expect_body("B\r\nhello world\r\n0\r\n\r\n", "hello world", 0);
    /* extensions ignored, with or without values, with whitespace */
    expect_body("5;name=value;other\r\nhello\r\n0;last=\"q;\"\r\n\r\n", "hello", 0);
    expect_body("5 ; a = b\r\nhello\r\n0\t;x\r\n\r\n", "hello", 0);
    /* trailers read and dropped */
    expect_body("5\r\nhello\r\n0\r\nX-Sum: 1234\r\nX-Empty:\r\n\r\n", "hello", 0);
    /* the bytes after the body are not its */
    expect_body("2\r\nok\r\n0\r\n\r\nGET / HTTP/1.1\r\n", "ok", 16);
    /* data bytes are any bytes, CRLF included */
    expect_body("4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n", 0);
}

static void test_chunked_decode_errors(void **state)
{
    (void)state;
    expect_chunked_status("\r\n0\r\n\r\n", 100, 100, 400);          /* no size */
    expect_chunked_status("g\r\n", 100, 100, 400);                 /* bad hex digit */
    expect_chunked_status("1g\r\nx\r\n", 100, 100, 400);
    expect_chunked_status("-1\r\n", 100, 100, 400);
    expect_chunked_status("+1\r\n", 100, 100, 400);
    expect_chunked_status("0x1\r\nx\r\n", 100, 100, 400);
    expect_chunked_status(" 1\r\nx\r\n", 100, 100, 400);
    expect_chunked_status(";x\r\n", 100, 100, 400);
    /* 17 significant hex digits overflow 64 bits; 16 do not (then 413) */
    expect_chunked_status("10000000000000000\r\n", UINT64_MAX, 100, 400);
    expect_chunked_status("ffffffffffffffff\r\n", UINT64_MAX - 1, 100, 413);
    /* missing CRLFs */
    expect_chunked_status("5\nhello\r\n0\r\n\r\n", 100, 100, 400);   /* bare LF */
    expect_chunked_status("5\rhello\r\n0\r\n\r\n", 100, 100, 400);   /* bare CR */
    expect_chunked_status("5\r\nhelloX\r\n0\r\n\r\n", 100, 100, 400); /* data longer */
    expect_chunked_status("5\r\nhello\n0\r\n\r\n", 100, 100, 400);
    expect_chunked_status("5\r\nhello\r\n0\r\n\rX", 100, 100, 400);
    expect_chunked_status("5\r\nhello\r\n0\r\n\n", 100, 100, 400);
    /* control characters in an extension or a trailer */
    expect_chunked_status("5;a\x01\r\nhello\r\n0\r\n\r\n", 100, 100, 400);
    expect_chunked_status("0\r\nX: a\x7f\r\n\r\n", 100, 100, 400);
    /* malformed trailer lines: no colon, obs-fold, bad name, bare LF */
    expect_chunked_status("0\r\nNoColon\r\n\r\n", 100, 100, 400);
    expect_chunked_status("0\r\nA: b\r\n folded\r\n\r\n", 100, 100, 400);
    expect_chunked_status("0\r\nA b: c\r\n\r\n", 100, 100, 400);
    expect_chunked_status("0\r\nA: b\n\r\n", 100, 100, 400);
}

static void test_chunked_decode_nul(void **state)
{
    static const char size[] = "5\0\r\nhello\r\n0\r\n\r\n";
    static const char ext[] = "5;a\0b\r\nhello\r\n0\r\n\r\n";
    static const char data[] = "3\r\na\0b\r\n0\r\n\r\n";
    struct decoded o;
    (void)state;
    o = decode(size, sizeof(size) - 1, 0, 100, 100);
    assert_int_equal(o.r, HTTP_CHUNKED_ERROR);
    assert_int_equal(o.status, 400);
    o = decode(ext, sizeof(ext) - 1, 0, 100, 100);
    assert_int_equal(o.r, HTTP_CHUNKED_ERROR);
    assert_int_equal(o.status, 400);
    o = decode(data, sizeof(data) - 1, 1, 100, 100); /* data may hold any byte */
    assert_int_equal(o.r, HTTP_CHUNKED_DONE);
    assert_int_equal(o.len, 3);
    assert_memory_equal(o.data, "a\0b", 3);
}

static void test_chunked_decode_limits(void **state)
{
    char line[HTTP_CHUNK_LINE_MAX + 64];
    size_t n;
    (void)state;

    /* the body: exactly max_body decodes, one byte more is 413 before its data is read */
    expect_chunked_status("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 5, 100, 413);
    for (size_t step = 0; step < 20; step++) {
        struct decoded o = decode("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 23, step, 6, 100);
        assert_int_equal(o.r, HTTP_CHUNKED_DONE);
        assert_int_equal(o.len, 6);
        o = decode("3\r\nabc\r\n4\r\ndefg", 15, step, 6, 100);
        assert_int_equal(o.r, HTTP_CHUNKED_ERROR);
        assert_int_equal(o.status, 413);
        assert_int_equal(o.len, 3); /* the chunk that would go over gives nothing */
    }
    /* a chunk-size line of exactly HTTP_CHUNK_LINE_MAX bytes (CRLF included), and one more */
    n = (size_t)snprintf(line, sizeof(line), "1;");
    memset(line + n, 'e', HTTP_CHUNK_LINE_MAX - n - 2);
    memcpy(line + HTTP_CHUNK_LINE_MAX - 2, "\r\nx\r\n0\r\n\r\n", 11);
    expect_body(line, "x", 0);
    n = (size_t)snprintf(line, sizeof(line), "1;");
    memset(line + n, 'e', HTTP_CHUNK_LINE_MAX - n - 1);
    memcpy(line + HTTP_CHUNK_LINE_MAX - 1, "\r\nx\r\n0\r\n\r\n", 11);
    expect_chunked_status(line, 100, 100, 400);
    /* the trailer section (after "0\r\n"): exactly max_trailer bytes, and one more */
    {
        const char *t = "0\r\nX: 12\r\n\r\n"; /* 9 bytes of trailer section */
        struct decoded o = decode(t, strlen(t), 0, 100, 9);
        assert_int_equal(o.r, HTTP_CHUNKED_DONE);
        expect_chunked_status(t, 100, 8, 400);
    }
}

/* Once done or failed, a decoder says so again without looking at more bytes. */
static void test_chunked_decode_ends(void **state)
{
    struct http_chunked d;
    struct http_span data;
    size_t used;
    (void)state;

    http_chunked_init(&d, 100, 100);
    assert_int_equal(http_chunked_decode(&d, "0\r\n\r\nxyz", 8, &used, &data), HTTP_CHUNKED_DONE);
    assert_int_equal(used, 5);
    assert_int_equal(http_chunked_decode(&d, "xyz", 3, &used, &data), HTTP_CHUNKED_DONE);
    assert_int_equal(used, 0);
    http_chunked_init(&d, 100, 100);
    assert_int_equal(http_chunked_decode(&d, "z\r\n", 3, &used, &data), HTTP_CHUNKED_ERROR);
    assert_int_equal(http_chunked_decode(&d, "0\r\n\r\n", 5, &used, &data), HTTP_CHUNKED_ERROR);
    assert_int_equal(d.status, 400);
    assert_non_null(d.error);
    /* no bytes: more */
    http_chunked_init(&d, 100, 100);
    assert_int_equal(http_chunked_decode(&d, "", 0, &used, &data), HTTP_CHUNKED_MORE);
    assert_int_equal(used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_simple_get),
        cmocka_unit_test(test_parse_log_headers),
        cmocka_unit_test(test_parse_methods),
        cmocka_unit_test(test_parse_header_values_trimmed),
        cmocka_unit_test(test_parse_known_headers),
        cmocka_unit_test(test_parse_keep_alive_rules),
        cmocka_unit_test(test_parse_leading_empty_lines),
        cmocka_unit_test(test_parse_absolute_and_query_targets),
        cmocka_unit_test(test_parse_pipelined),
        cmocka_unit_test(test_parse_split_every_byte),
        cmocka_unit_test(test_parse_incomplete_is_more),
        cmocka_unit_test(test_parse_malformed_request_line),
        cmocka_unit_test(test_parse_versions),
        cmocka_unit_test(test_parse_malformed_headers),
        cmocka_unit_test(test_parse_content_length),
        cmocka_unit_test(test_parse_transfer_encoding),
        cmocka_unit_test(test_parse_head_limit),
        cmocka_unit_test(test_parse_header_count_limit),
        cmocka_unit_test(test_chunked_decode_valid),
        cmocka_unit_test(test_chunked_decode_errors),
        cmocka_unit_test(test_chunked_decode_nul),
        cmocka_unit_test(test_chunked_decode_limits),
        cmocka_unit_test(test_chunked_decode_ends),
    };
    return cmocka_run_group_tests_name("http_parser", tests, NULL, NULL);
}
