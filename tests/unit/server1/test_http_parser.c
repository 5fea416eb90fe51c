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
    check_every_split("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                      HTTP_PARSE_ERROR, 501);
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
    expect_status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_simple_get),
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
    };
    return cmocka_run_group_tests_name("http_parser", tests, NULL, NULL);
}
