/*
 * test_http.c - loadgen/http, the response parser: whole, split and byte-by-byte responses,
 * status codes, keep-alive rules, missing and huge Content-Length, chunked bodies (split
 * anywhere, extensions, trailers, bad and oversized sizes), garbage (each an error),
 * and the classification of complete responses by loadgen/client (lg_conn_check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/client.h"
#include "../../../loadgen/http.h"

/*
 * Feeds text in chunks of chunk bytes the way lg_conn_recv does: unparsed bytes stay in front
 * of the next chunk. Returns the final result; *fed is how many bytes were given when it came.
 */
static enum lg_http_result feed(struct lg_http *p, const char *text, size_t len, size_t chunk,
                                size_t *fed)
{
    static char buf[LG_CONN_BUF + 64];
    size_t have = 0;
    size_t off = 0;
    enum lg_http_result r = LG_HTTP_MORE;

    lg_http_reset(p, false);
    while (off < len) {
        size_t n = len - off < chunk ? len - off : chunk;
        size_t used = 0;

        if (have + n > sizeof(buf))
            n = sizeof(buf) - have;
        if (n == 0)
            break; /* the buffer is full and the parser still wants more */
        memcpy(buf + have, text + off, n);
        have += n;
        off += n;
        r = lg_http_parse(p, buf, have, &used);
        have -= used;
        memmove(buf, buf + used, have);
        if (r != LG_HTTP_MORE)
            break;
    }
    if (fed != NULL)
        *fed = off - have;
    return r;
}

static const char ok_resp[] = "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n"
                              "Content-Type: text/plain\r\n\r\nhello";

static void test_http_whole(void **state)
{
    struct lg_http p;
    size_t fed;

    (void)state;
    assert_int_equal(feed(&p, ok_resp, strlen(ok_resp), 4096, &fed), LG_HTTP_DONE);
    assert_int_equal(fed, strlen(ok_resp));
    assert_int_equal(p.status, 200);
    assert_true(p.keep_alive);
    assert_true(p.has_length);
    assert_int_equal(p.body_bytes, 5);
}

static void test_http_split_everywhere(void **state)
{
    (void)state;
    for (size_t chunk = 1; chunk <= strlen(ok_resp); chunk++) {
        struct lg_http p;
        assert_int_equal(feed(&p, ok_resp, strlen(ok_resp), chunk, NULL), LG_HTTP_DONE);
        assert_int_equal(p.status, 200);
        assert_int_equal(p.body_bytes, 5);
    }
    /* one byte short is never complete, whatever the split */
    for (size_t chunk = 1; chunk < 8; chunk++) {
        struct lg_http p;
        assert_int_equal(feed(&p, ok_resp, strlen(ok_resp) - 1, chunk, NULL), LG_HTTP_MORE);
    }
}

static void test_http_bare_lf_and_case(void **state)
{
    static const char r[] = "HTTP/1.1 201 Created\ncontent-length: 2\nCONNECTION: Close\n\nok";
    struct lg_http p;

    (void)state;
    assert_int_equal(feed(&p, r, strlen(r), 3, NULL), LG_HTTP_DONE);
    assert_int_equal(p.status, 201);
    assert_int_equal(p.body_bytes, 2);
    assert_false(p.keep_alive);
}

static void test_http_status_codes(void **state)
{
    static const int codes[] = {200, 201, 400, 401, 404, 409, 413, 431, 500, 503, 599};
    char r[128];

    (void)state;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        struct lg_http p;
        int n = snprintf(r, sizeof(r), "HTTP/1.1 %d Whatever Reason\r\nContent-Length: 0\r\n\r\n",
                         codes[i]);
        assert_int_equal(feed(&p, r, (size_t)n, 7, NULL), LG_HTTP_DONE);
        assert_int_equal(p.status, codes[i]);
    }
    {
        struct lg_http p;
        static const char noreason[] = "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n";
        assert_int_equal(feed(&p, noreason, strlen(noreason), 100, NULL), LG_HTTP_DONE);
        assert_int_equal(p.status, 404);
    }
}

static void test_http_keepalive_rules(void **state)
{
    static const char h10[] = "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
    static const char h10ka[] =
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx";
    static const char h11list[] =
        "HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 0\r\n\r\n";
    struct lg_http p;

    (void)state;
    assert_int_equal(feed(&p, h10, strlen(h10), 100, NULL), LG_HTTP_DONE);
    assert_false(p.keep_alive);
    assert_int_equal(feed(&p, h10ka, strlen(h10ka), 100, NULL), LG_HTTP_DONE);
    assert_true(p.keep_alive);
    assert_int_equal(feed(&p, h11list, strlen(h11list), 100, NULL), LG_HTTP_DONE);
    assert_false(p.keep_alive);
}

static void test_http_no_length_reads_to_eof(void **state)
{
    static const char r[] = "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nabcdef";
    struct lg_http p;

    (void)state;
    assert_int_equal(feed(&p, r, strlen(r), 5, NULL), LG_HTTP_MORE);
    assert_int_equal(p.state, LG_HTTP_UNTIL_EOF);
    assert_false(p.keep_alive);
    assert_int_equal(lg_http_body_wanted(&p), UINT64_MAX);
    assert_int_equal(lg_http_eof(&p), LG_HTTP_DONE);
    assert_int_equal(p.body_bytes, 6);
}

static void test_http_no_body_statuses(void **state)
{
    static const char r204[] = "HTTP/1.1 204 No Content\r\n\r\n";
    static const char r304[] = "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n";
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                               "Content-Length: 0\r\n\r\n";
    struct lg_http p;

    (void)state;
    assert_int_equal(feed(&p, r204, strlen(r204), 100, NULL), LG_HTTP_DONE);
    assert_int_equal(feed(&p, r304, strlen(r304), 100, NULL), LG_HTTP_DONE);
    assert_int_equal(p.body_bytes, 0);
    assert_int_equal(feed(&p, cont, strlen(cont), 3, NULL), LG_HTTP_DONE);
    assert_int_equal(p.status, 201);
    /* HEAD: the length describes a body that is not sent */
    lg_http_reset(&p, true);
    {
        size_t used;
        assert_int_equal(lg_http_parse(&p, r304 + 0, strlen(r304), &used), LG_HTTP_DONE);
    }
}

static void test_http_large_body_skipped(void **state)
{
    static const char r[] = "HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n0123456789";
    struct lg_http p;
    uint64_t left;

    (void)state;
    assert_int_equal(feed(&p, r, strlen(r), 4096, NULL), LG_HTTP_MORE);
    assert_int_equal(p.body_bytes, 10);
    left = lg_http_body_wanted(&p);
    assert_int_equal(left, 104857600 - 10);
    /* the caller discards body bytes itself (recv with MSG_TRUNC) and counts them */
    while (left > 1000000) {
        assert_int_equal(lg_http_skip(&p, 1000000), LG_HTTP_MORE);
        left -= 1000000;
    }
    assert_int_equal(lg_http_skip(&p, left), LG_HTTP_DONE);
    assert_int_equal(p.body_bytes, 104857600);
    assert_int_equal(lg_http_skip(&p, 1), LG_HTTP_ERR); /* past the response */
}

static void test_http_huge_and_bad_lengths(void **state)
{
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387905\r\n\r\n", /* 2^62 + 1 */
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
    };
    static const char same_twice[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                     "Content-Length: 2\r\n\r\nab";
    static const char big_ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n";
    struct lg_http p;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(feed(&p, bad[i], strlen(bad[i]), 9, NULL), LG_HTTP_ERR);
        assert_non_null(p.why);
    }
    assert_int_equal(feed(&p, same_twice, strlen(same_twice), 9, NULL), LG_HTTP_DONE);
    assert_int_equal(feed(&p, big_ok, strlen(big_ok), 9, NULL), LG_HTTP_MORE);
    assert_int_equal(lg_http_body_wanted(&p), 1ull << 62);
}

static const char chunked_resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "5\r\nhello\r\n"
                                   "1a;name=value\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                                   "0\r\nX-Trailer: t\r\n\r\n";

static void test_http_chunked_split_everywhere(void **state)
{
    struct lg_http p;
    size_t fed;

    (void)state;
    for (size_t chunk = 1; chunk <= sizeof(chunked_resp); chunk++) {
        assert_int_equal(feed(&p, chunked_resp, strlen(chunked_resp), chunk, &fed), LG_HTTP_DONE);
        assert_int_equal(fed, strlen(chunked_resp));
        assert_int_equal(p.body_bytes, 5 + 26);
        assert_true(p.keep_alive);
    }
}

/* As lg_conn_recv without --copy-body: chunk data discarded by the caller (lg_http_skip). */
static void test_http_chunked_skipped_data(void **state)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n"
                               "Content-Length: 3\r\n\r\n";
    struct lg_http p;
    size_t used;

    (void)state;
    lg_http_reset(&p, false);
    assert_int_equal(lg_http_parse(&p, head, strlen(head), &used), LG_HTTP_MORE);
    assert_int_equal(lg_http_body_wanted(&p), 0); /* a chunk-size line comes first */
    assert_int_equal(lg_http_parse(&p, "100000\r\n", 8, &used), LG_HTTP_MORE);
    assert_int_equal(used, 8);
    assert_int_equal(lg_http_body_wanted(&p), 0x100000);
    assert_int_equal(lg_http_skip(&p, 0x80000), LG_HTTP_MORE);
    assert_int_equal(lg_http_skip(&p, 0x80000), LG_HTTP_MORE);
    assert_int_equal(lg_http_body_wanted(&p), 0);
    assert_int_equal(lg_http_parse(&p, "\r\n0\r\n\r\n", 7, &used), LG_HTTP_DONE);
    assert_int_equal(used, 7);
    assert_int_equal(p.body_bytes, 0x100000);
}

static void test_http_chunked_errors(void **state)
{
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4000000000000001\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n",
    };
    static char longline[LG_HTTP_MAX_CHUNK_LINE + 200];
    struct lg_http p;
    size_t n;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (feed(&p, bad[i], strlen(bad[i]), 3, NULL) != LG_HTTP_ERR)
            fail_msg("accepted bad chunked body #%zu", i);
        assert_non_null(p.why);
    }
    /* a chunk-size line longer than the limit, with or without its end */
    n = (size_t)snprintf(longline, sizeof(longline),
                         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;");
    memset(longline + n, 'x', sizeof(longline) - n);
    assert_int_equal(feed(&p, longline, sizeof(longline), 500, NULL), LG_HTTP_ERR);
    memcpy(longline + sizeof(longline) - 2, "\r\n", 2);
    assert_int_equal(feed(&p, longline, sizeof(longline), 100000, NULL), LG_HTTP_ERR);
    /* closed in the middle of the chunks */
    assert_int_equal(feed(&p, chunked_resp, 60, 100, NULL), LG_HTTP_MORE);
    assert_int_equal(lg_http_eof(&p), LG_HTTP_ERR);
}

/* The trailer: up to LG_HTTP_MAX_TRAILER bytes in all (its empty last line included). */
static void test_http_chunked_trailer_limit(void **state)
{
    static char resp[LG_HTTP_MAX_TRAILER + 512];
    struct lg_http p;
    size_t n;
    size_t start;

    (void)state;
    n = (size_t)snprintf(resp, sizeof(resp),
                         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    start = n;
    /* lines of 100 bytes ("X: " + 95 'a' + CRLF) up to exactly the limit with the final CRLF */
    while (n - start + 100 + 2 <= LG_HTTP_MAX_TRAILER) {
        memcpy(resp + n, "X: ", 3);
        memset(resp + n + 3, 'a', 95);
        memcpy(resp + n + 98, "\r\n", 2);
        n += 100;
    }
    {
        size_t fill = LG_HTTP_MAX_TRAILER - (n - start) - 2; /* one more line to the limit */
        memset(resp + n, 'b', fill - 2);
        resp[n] = 'Y';
        resp[n + 1] = ':';
        memcpy(resp + n + fill - 2, "\r\n", 2);
        n += fill;
    }
    memcpy(resp + n, "\r\n", 2);
    assert_int_equal(n + 2 - start, LG_HTTP_MAX_TRAILER);
    assert_int_equal(feed(&p, resp, n + 2, 700, NULL), LG_HTTP_DONE);
    /* one byte more */
    memmove(resp + start + 1, resp + start, n + 2 - start);
    resp[start] = 'Z';
    resp[start + 1] = ':';
    assert_int_equal(feed(&p, resp, n + 3, 700, NULL), LG_HTTP_ERR);
    assert_string_equal(p.why, "chunked trailer too large");
}

static void test_http_chunked_no_body_cases(void **state)
{
    static const char head_resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    static const char empty[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    struct lg_http p;
    size_t used;

    (void)state;
    lg_http_reset(&p, true); /* a HEAD request: no body whatever the headers say */
    assert_int_equal(lg_http_parse(&p, head_resp, strlen(head_resp), &used), LG_HTTP_DONE);
    assert_int_equal(feed(&p, empty, strlen(empty), 5, NULL), LG_HTTP_DONE);
    assert_int_equal(p.body_bytes, 0);
}

static void test_http_garbage(void **state)
{
    static const char *const bad[] = {
        "garbage\r\n",
        "FOO 200 OK\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 2x0 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 0200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNoColonHere\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: a\r\n  folded\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "\r\n",
    };
    struct lg_http p;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (feed(&p, bad[i], strlen(bad[i]), 4, NULL) != LG_HTTP_ERR)
            fail_msg("accepted garbage #%zu", i);
    }
}

static void test_http_head_too_large(void **state)
{
    static char big[LG_HTTP_MAX_HEAD + 200];
    struct lg_http p;
    size_t n;

    (void)state;
    n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\n");
    while (n + 40 < sizeof(big) - 10)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    assert_int_equal(feed(&p, big, n, 1000, NULL), LG_HTTP_ERR);
    /* one line longer than the limit, never terminated */
    memset(big, 'a', sizeof(big));
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    assert_int_equal(feed(&p, big, sizeof(big), 1000, NULL), LG_HTTP_ERR);
}

static void test_http_bytes_after_response_left(void **state)
{
    static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n";
    struct lg_http p;
    size_t used;

    (void)state;
    lg_http_reset(&p, false);
    assert_int_equal(lg_http_parse(&p, two, strlen(two), &used), LG_HTTP_DONE);
    assert_int_equal(used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
}

static void test_http_eof_errors(void **state)
{
    static const char part[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    struct lg_http p;

    (void)state;
    lg_http_reset(&p, false);
    assert_int_equal(lg_http_eof(&p), LG_HTTP_ERR); /* closed before any byte */
    assert_int_equal(feed(&p, part, strlen(part), 100, NULL), LG_HTTP_MORE);
    assert_int_equal(lg_http_eof(&p), LG_HTTP_ERR); /* closed mid-body */
    assert_int_equal(feed(&p, part, 10, 100, NULL), LG_HTTP_MORE);
    assert_int_equal(lg_http_eof(&p), LG_HTTP_ERR); /* closed mid-head */
}

static void test_conn_check_classes(void **state)
{
    struct lg_check chk = {.expect_status = {201, 200}, .has_length = true, .length = 1024};
    struct lg_conn c;

    (void)state;
    memset(&c, 0, sizeof(c));
    c.type = LG_REQ_GET;
    c.http.status = 200;
    c.http.body_bytes = 1024;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_NONE);
    c.http.body_bytes = 1000;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_INVALID);
    c.http.status = 401;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_4XX);
    c.http.status = 503;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_5XX);
    c.http.status = 302;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_OTHER);
    c.type = LG_REQ_NEW;
    c.http.status = 201;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_NONE); /* length applies to get only */
    c.http.status = 200;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_OTHER);
    c.http.status = 409;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_4XX);
    /* a custom request: any 2xx or 3xx is a success, whatever its length */
    chk.expect_status[LG_REQ_CUSTOM] = LG_EXPECT_2XX_3XX;
    c.type = LG_REQ_CUSTOM;
    c.http.body_bytes = 7;
    c.http.status = 200;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_NONE);
    c.http.status = 302;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_NONE);
    c.http.status = 399;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_NONE);
    c.http.status = 199;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_OTHER);
    c.http.status = 400;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_4XX);
    c.http.status = 599;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_5XX);
    c.http.status = 600;
    assert_int_equal(lg_conn_check(&c, &chk), LG_ERR_STATUS_OTHER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_whole),
        cmocka_unit_test(test_http_split_everywhere),
        cmocka_unit_test(test_http_bare_lf_and_case),
        cmocka_unit_test(test_http_status_codes),
        cmocka_unit_test(test_http_keepalive_rules),
        cmocka_unit_test(test_http_no_length_reads_to_eof),
        cmocka_unit_test(test_http_no_body_statuses),
        cmocka_unit_test(test_http_large_body_skipped),
        cmocka_unit_test(test_http_huge_and_bad_lengths),
        cmocka_unit_test(test_http_chunked_split_everywhere),
        cmocka_unit_test(test_http_chunked_skipped_data),
        cmocka_unit_test(test_http_chunked_errors),
        cmocka_unit_test(test_http_chunked_trailer_limit),
        cmocka_unit_test(test_http_chunked_no_body_cases),
        cmocka_unit_test(test_http_garbage),
        cmocka_unit_test(test_http_head_too_large),
        cmocka_unit_test(test_http_bytes_after_response_left),
        cmocka_unit_test(test_http_eof_errors),
        cmocka_unit_test(test_conn_check_classes),
    };
    return cmocka_run_group_tests_name("lg_http", tests, NULL, NULL);
}
