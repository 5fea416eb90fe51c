/*
 * test_conn.c - cmocka tests for server1/conn: one connection over a socketpair, with a stub
 * handler that answers every request with the body a test gives it. A memory body (written
 * with the head at once, and one too big for that, queued), a body that gives its bytes over
 * several fills, a HEAD (the length only, never filled), and release called exactly once on
 * every path: all sent, a fill that fails, the peer closing before it read the response, and
 * the conn freed by its owner while the body is still being given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "../../../common/clock.h"
#include "../../../server1/body.h"
#include "../../../server1/config.h"
#include "../../../server1/conn.h"
#include "../../../server1/metrics.h"

#define WAIT_NS (20 * 1000000000ull) /* a hard bound on each wait: the machine may be busy */

/* A body that gives len bytes of a pattern, part bytes per fill (data NULL: never writev'd). */
struct parts {
    size_t part;
    unsigned fails_at; /* the fill that fails (1 = the first), 0: none */
    unsigned fills;
    unsigned releases;
    uint64_t given;
};

static char pattern_at(uint64_t i)
{
    return (char)('a' + i % 26);
}

static int parts_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    struct parts *p = b->_owner;
    static char chunk[64 * 1024];
    size_t n = p->part < b->len ? p->part : (size_t)b->len;

    (void)budget;
    p->fills++;
    if (p->fails_at != 0 && p->fills == p->fails_at)
        return -1;
    assert_true(n <= sizeof(chunk));
    for (size_t i = 0; i < n; i++)
        chunk[i] = pattern_at(p->given + i);
    if (evbuffer_add(out, chunk, n) < 0)
        return -1;
    p->given += n;
    b->len -= n;
    return 0;
}

static void parts_release(struct s1_body *b)
{
    struct parts *p = b->_owner;
    p->releases++;
}

static const struct s1_body_ops parts_ops = {.fill = parts_fill, .release = parts_release};

/* What the stub handler answers with, for the test running. */
static struct s1_body next_body;
static unsigned dispatched;

static enum metrics_route stub_route(const char *buf, const struct http_request *req)
{
    (void)buf;
    (void)req;
    return METRICS_ROUTE_OTHER;
}

static enum s1_head stub_head(struct s1_conn *c, const char *buf, const struct http_request *req)
{
    (void)c;
    (void)buf;
    (void)req;
    return S1_HEAD_WHOLE;
}

static enum s1_dispatch stub_dispatch(struct s1_conn *c, const char *buf,
                                      const struct http_request *req, const char *body,
                                      size_t body_len)
{
    (void)buf;
    (void)req;
    (void)body;
    (void)body_len;
    dispatched++;
    s1_conn_respond(c, 200, "text/plain", NULL, &next_body);
    assert_null(next_body.ops); /* taken */
    return S1_DISPATCH_DONE;
}

static void stub_answered(struct s1_conn *c)
{
    (void)c;
}

static void stub_release(struct s1_conn *c)
{
    (void)c;
}

static const struct s1_conn_handler stub_handler = {
    .route = stub_route,
    .head = stub_head,
    .dispatch = stub_dispatch,
    .answered = stub_answered,
    .release = stub_release,
};

struct fixture {
    struct event_base *base;
    struct s1_config cfg;
    struct metrics metrics;
    struct timeval tv;
    struct s1_conn_home home;
    int cli;            /* the client's end, -1 once closed */
    unsigned closed;    /* conns freed */
    char *in;           /* what the client read */
    size_t in_len;
    bool eof;           /* the client read the end of the stream (or a reset) */
};

static void on_closed(struct s1_conn_home *home)
{
    struct fixture *fx = (struct fixture *)((char *)home - offsetof(struct fixture, home));
    fx->closed++;
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    int sv[2];
    uint8_t peer[RATELIMIT_ADDR_LEN] = {0};

    assert_non_null(fx);
    signal(SIGPIPE, SIG_IGN);
    fx->base = event_base_new();
    assert_non_null(fx->base);
    fx->cfg.max_header_bytes = 8192;
    fx->cfg.max_body = 1 << 20;
    fx->cfg.header_timeout_us = 30 * 1000000ull;
    fx->cfg.idle_timeout_us = 30 * 1000000ull;
    fx->cfg.send_timeout_us = 30 * 1000000ull;
    fx->cfg.min_rate = 1; /* (the rate rules do not come into these tests) */
    fx->cfg.min_rate_grace_us = 60 * 1000000ull;
    fx->cfg.min_rate_window_us = 0;
    metrics_init(&fx->metrics);
    fx->tv = (struct timeval){.tv_sec = 30};
    fx->home.base = fx->base;
    fx->home.cfg = &fx->cfg;
    fx->home.metrics = &fx->metrics;
    fx->home.header_tv = &fx->tv;
    fx->home.idle_tv = &fx->tv;
    fx->home.linger_tv = &fx->tv;
    fx->home.handler = &stub_handler;
    fx->home.closed = on_closed;
    httpdate_cache_init(&fx->home.date);
    TAILQ_INIT(&fx->home.conns);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    fx->cli = sv[1];
    s1_conn_new(&fx->home, sv[0], peer, NULL, false, false);
    next_body = (struct s1_body){.ops = NULL, ._fd = -1};
    dispatched = 0;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    while (!TAILQ_EMPTY(&fx->home.conns))
        s1_conn_free(TAILQ_FIRST(&fx->home.conns));
    if (fx->cli >= 0)
        close(fx->cli);
    event_base_free(fx->base);
    free(fx->in);
    free(fx);
    return 0;
}

static void send_request(struct fixture *fx, const char *req)
{
    assert_int_equal(write(fx->cli, req, strlen(req)), (ssize_t)strlen(req));
}

/* Reads what the client can now, until EAGAIN or the end of the stream (eof). */
static void client_read(struct fixture *fx)
{
    char buf[65536];
    ssize_t n;

    while (!fx->eof && (n = read(fx->cli, buf, sizeof(buf))) != 0) {
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            fx->eof = true; /* a reset */
            return;
        }
        fx->in = realloc(fx->in, fx->in_len + (size_t)n);
        assert_non_null(fx->in);
        memcpy(fx->in + fx->in_len, buf, (size_t)n);
        fx->in_len += (size_t)n;
    }
    fx->eof = true;
}

/* The length of a whole response in what the client read (head + Content-Length), or 0. */
static size_t response_len(const struct fixture *fx, const char **body, uint64_t *clen)
{
    const char *end = fx->in ? memmem(fx->in, fx->in_len, "\r\n\r\n", 4) : NULL;
    const char *cl;

    if (end == NULL)
        return 0;
    cl = memmem(fx->in, (size_t)(end - fx->in), "Content-Length: ", 16);
    assert_non_null(cl);
    *clen = strtoull(cl + 16, NULL, 10);
    *body = end + 4;
    return (size_t)(end + 4 - fx->in);
}

/* Runs the loop (reading as the client, if read) until done(fx) or WAIT_NS. */
static void run_until(struct fixture *fx, bool read, bool (*done)(struct fixture *))
{
    uint64_t until = clock_now_ns() + WAIT_NS;

    while (!done(fx)) {
        assert_true(clock_now_ns() < until);
        event_base_loop(fx->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (read && fx->cli >= 0)
            client_read(fx);
        if (!done(fx))
            usleep(200);
    }
}

static bool response_whole(struct fixture *fx)
{
    const char *body;
    uint64_t clen = 0;
    size_t hlen = response_len(fx, &body, &clen);
    return hlen > 0 && fx->in_len >= hlen + clen;
}

static bool conn_gone(struct fixture *fx)
{
    return fx->closed > 0;
}

static bool head_read(struct fixture *fx)
{
    return fx->in != NULL && memmem(fx->in, fx->in_len, "\r\n\r\n", 4) != NULL;
}

static bool client_eof(struct fixture *fx)
{
    return fx->eof;
}

static bool was_dispatched(struct fixture *fx)
{
    (void)fx;
    return dispatched > 0;
}

static const char GET[] = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";

/* The body the client read: its Content-Length must be want. */
static const char *body_read(struct fixture *fx, uint64_t want)
{
    const char *body;
    uint64_t clen = 0;
    size_t hlen = response_len(fx, &body, &clen);

    assert_true(hlen > 0);
    assert_int_equal(clen, want);
    assert_int_equal(fx->in_len, hlen + clen);
    return body;
}

static void test_conn_memory_body(void **state)
{
    struct fixture *fx = *state;
    char *text = strdup("hello\n");

    body_mem_owned(&next_body, text, 6, text); /* freed by the conn: ASan checks it is, once */
    send_request(fx, GET);
    run_until(fx, true, response_whole);
    assert_memory_equal(body_read(fx, 6), "hello\n", 6);
    assert_int_equal(fx->closed, 0); /* keep-alive */
}

static void test_conn_memory_body_queued(void **state)
{
    struct fixture *fx = *state;
    size_t len = 3u << 20; /* over one turn's write budget: queued, not written with the head */
    char *big = malloc(len);
    const char *got;

    assert_non_null(big);
    for (size_t i = 0; i < len; i++)
        big[i] = pattern_at(i);
    body_mem_owned(&next_body, big, len, big);
    send_request(fx, GET);
    run_until(fx, true, response_whole);
    got = body_read(fx, len);
    for (size_t i = 0; i < len; i += 4093)
        assert_int_equal(got[i], pattern_at(i));
}

static void test_conn_body_in_parts(void **state)
{
    struct fixture *fx = *state;
    struct parts p = {.part = 1000};
    const char *got;

    next_body = (struct s1_body){.ops = &parts_ops, .len = 3500, ._owner = &p, ._fd = -1};
    send_request(fx, GET);
    run_until(fx, true, response_whole);
    got = body_read(fx, 3500);
    for (size_t i = 0; i < 3500; i++)
        assert_int_equal(got[i], pattern_at(i));
    assert_int_equal(p.fills, 4); /* 1000 + 1000 + 1000 + 500 */
    assert_int_equal(p.releases, 1);
    /* the next request on the connection is answered after it */
    free(fx->in);
    fx->in = NULL;
    fx->in_len = 0;
    body_mem(&next_body, "ok", 2);
    send_request(fx, GET);
    run_until(fx, true, response_whole);
    assert_memory_equal(body_read(fx, 2), "ok", 2);
    assert_int_equal(p.releases, 1);
}

static void test_conn_head_not_filled(void **state)
{
    struct fixture *fx = *state;
    struct parts p = {.part = 1000};

    next_body = (struct s1_body){.ops = &parts_ops, .len = 5000, ._owner = &p, ._fd = -1};
    send_request(fx, "HEAD /x HTTP/1.1\r\nHost: t\r\n\r\n");
    run_until(fx, true, head_read);
    /* the length of the body, none of its bytes */
    assert_non_null(memmem(fx->in, fx->in_len, "Content-Length: 5000\r\n", 22));
    assert_non_null(memmem(fx->in, fx->in_len, "\r\n\r\n", 4));
    assert_int_equal((char *)memmem(fx->in, fx->in_len, "\r\n\r\n", 4) + 4 - fx->in,
                     fx->in_len);
    assert_int_equal(p.fills, 0);
    assert_int_equal(p.releases, 1);
}

static void test_conn_fill_fails(void **state)
{
    struct fixture *fx = *state;
    struct parts p = {.part = 1000, .fails_at = 2};

    next_body = (struct s1_body){.ops = &parts_ops, .len = 3000, ._owner = &p, ._fd = -1};
    send_request(fx, GET);
    run_until(fx, true, conn_gone);
    run_until(fx, true, client_eof);
    /* the connection closed with the body cut short: the client can tell */
    assert_false(response_whole(fx));
    assert_int_equal(p.fills, 2);
    assert_int_equal(p.releases, 1);
}

static void test_conn_peer_closes_early(void **state)
{
    struct fixture *fx = *state;
    struct parts p = {.part = 64 * 1024};

    /* far more than the socket buffers hold: the conn is still giving it when the peer goes */
    next_body = (struct s1_body){.ops = &parts_ops, .len = 64u << 20, ._owner = &p, ._fd = -1};
    send_request(fx, GET);
    run_until(fx, false, was_dispatched);
    assert_true(p.fills >= 1);
    assert_int_equal(p.releases, 0);
    close(fx->cli);
    fx->cli = -1;
    run_until(fx, false, conn_gone);
    assert_true(p.given < 64u << 20);
    assert_int_equal(p.releases, 1);
}

static void test_conn_freed_while_giving(void **state)
{
    struct fixture *fx = *state;
    struct parts p = {.part = 64 * 1024};

    next_body = (struct s1_body){.ops = &parts_ops, .len = 64u << 20, ._owner = &p, ._fd = -1};
    send_request(fx, GET);
    run_until(fx, false, was_dispatched);
    assert_int_equal(p.releases, 0);
    /* the worker's drain timeout or shutdown frees what is left */
    s1_conn_free(TAILQ_FIRST(&fx->home.conns));
    assert_int_equal(fx->closed, 1);
    assert_int_equal(p.releases, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conn_memory_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_memory_body_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_body_in_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_head_not_filled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_fill_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_peer_closes_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conn_freed_while_giving, setup, teardown),
    };
    return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
