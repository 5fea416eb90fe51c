/*
 * fuzz_tls_transport.c - server1's TLS transport (server1/tls.c: writev, write_out and the
 * retry rule retry_len, recv, pending, shutdown, close) against a real OpenSSL client over an
 * AF_UNIX socket pair with small buffers, so that writes are refused and offered again.
 *
 * The input's first byte picks the protocol (TLS 1.3 or 1.2), a max_fragment_length the client
 * asks for (none, or records of 512 B to 4 KiB) and the buffer sizes; the rest is a schedule of
 * steps: a response of a head and a body sent as conn.c sends one (writev of 1 or 2 iovecs
 * straight to the transport when nothing is queued; what it did not take, or all of it when
 * something is queued, into the output evbuffer: the head copied, the body by reference), a
 * flush of the evbuffer with a budget (write_out), a client read of some bytes, a client send
 * and a server1 read with a budget, a client KeyUpdate (one). After the schedule everything queued is
 * flushed while the client reads, server1 shuts its side down and closes.
 *
 * Properties (a violation aborts): writev answers 1..len bytes or -1 with EAGAIN; write_out the
 * bytes it drained (> 0) or -1 with EAGAIN, nothing drained; recv bytes, or -1 with EAGAIN while
 * the client is open, and a pending() answer true is followed by a read that gets bytes;
 * retry_len never exceeds what is queued; the client never receives a byte beyond those server1
 * was told were written and the retry_len after them (a refused write's bytes may go out before
 * the retry reports them), and receives exactly the bytes given to server1, in order, no more
 * no less; server1 receives exactly what the client sent (no byte beyond its writes taken
 * and pending); after the shutdown the client gets
 * close_notify and nothing else; a schedule always drains (a bounded number of turns).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "fuzz_tls.h"

#define STEPS_MAX 64         /* steps of a schedule */
#define CONN_BUDGET (2u << 20) /* conn.c's S1_WRITE_BUDGET: what one flush offers */
#define DRAIN_TURNS 100000   /* turns the final drain may take */
#define UP_MAX 16384         /* one client send */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct s1_tls *tls;
static SSL_CTX *cli_ctx[2]; /* [0]: up to TLS 1.3, [1]: TLS 1.2 only */
static struct metrics metrics;

struct input {
    const uint8_t *p;
    size_t n;
};

/* The next byte of the input, 0 once it is used up. */
static unsigned next_byte(struct input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

struct run {
    struct s1_transport t; /* server1's end */
    SSL *cli;              /* the client's end */
    int cfd;
    struct evbuffer *out; /* conn.c's output buffer */
    uint64_t given;       /* bytes handed to server1 to send: stream positions [0, given) */
    uint64_t written;     /* of them, those the transport said it wrote */
    uint64_t rx;          /* of them, those the client received */
    uint64_t up_sent;     /* client to server1: the bytes the client's SSL_write took */
    uint64_t up_rx;       /* ... and server1 received */
    unsigned char up[UP_MAX]; /* a client write not taken yet, offered again as it is */
    size_t up_len;
    bool key_updated; /* the client asked for its KeyUpdate */
};

/* The byte at stream position i of each direction: a reordered or repeated run shows. */
static uint8_t down_byte(uint64_t i)
{
    return (uint8_t)((i * 0x9E3779B97F4A7C15ull) >> 56);
}

static uint8_t up_byte(uint64_t i)
{
    return (uint8_t)((i * 0xC2B2AE3D27D4EB4Full) >> 56);
}

static char *stream_bytes(uint64_t pos, size_t len)
{
    char *p = malloc(len > 0 ? len : 1);

    if (p == NULL)
        fuzz_tls_fail("out of memory");
    for (size_t i = 0; i < len; i++)
        p[i] = (char)down_byte(pos + i);
    return p;
}

static void free_body(const void *data, size_t len, void *base)
{
    (void)data;
    (void)len;
    free(base);
}

static void check_retry(const struct run *r, const char *after)
{
    if (r->t.retry_len > evbuffer_get_length(r->out))
        fuzz_tls_fail("after %s retry_len %zu > %zu bytes queued", after, r->t.retry_len,
                      evbuffer_get_length(r->out));
}

/* conn.c's queue_out: the head copied, the body (from body_base, freed once sent) referenced. */
static void queue(struct run *r, const char *head, size_t hlen, const char *body, size_t blen,
                  char *body_base)
{
    if (hlen > 0 && evbuffer_add(r->out, head, hlen) != 0)
        fuzz_tls_fail("evbuffer_add failed");
    if (blen == 0) {
        free(body_base);
        return;
    }
    if (evbuffer_add_reference(r->out, body, blen, free_body, body_base) != 0)
        fuzz_tls_fail("evbuffer_add_reference failed");
}

/* conn.c's send_response: straight to the transport if nothing is queued, the rest queued. */
static void respond(struct run *r, size_t hlen, size_t blen)
{
    char *head = stream_bytes(r->given, hlen);
    char *body = stream_bytes(r->given + hlen, blen);
    struct iovec iov[2] = {{head, hlen}, {body, blen}};
    size_t total = hlen + blen;
    ssize_t n;

    r->given += total;
    if (evbuffer_get_length(r->out) > 0) {
        queue(r, head, hlen, body, blen, body);
        free(head);
        return;
    }
    n = r->t.ops->writev(&r->t, iov, blen > 0 ? 2 : 1);
    if (n < 0) {
        if (errno != EAGAIN)
            fuzz_tls_fail("writev of %zu bytes: -1 with errno %d", total, errno);
        n = 0;
    } else if (n == 0 || (size_t)n > total) {
        fuzz_tls_fail("writev of %zu bytes answered %zd", total, n);
    }
    r->written += (size_t)n;
    if ((size_t)n < hlen)
        queue(r, head + n, hlen - (size_t)n, body, blen, body);
    else
        queue(r, NULL, 0, body + ((size_t)n - hlen), total - (size_t)n, body);
    free(head);
    check_retry(r, "writev");
}

/* conn.c's conn_flush, one write_out call. */
static void flush(struct run *r, size_t budget)
{
    size_t before = evbuffer_get_length(r->out), after;
    int n;

    if (before == 0)
        return;
    n = r->t.ops->write_out(&r->t, r->out, budget);
    after = evbuffer_get_length(r->out);
    if (n < 0) {
        if (errno != EAGAIN)
            fuzz_tls_fail("write_out of %zu queued bytes: -1 with errno %d", before, errno);
        if (after != before)
            fuzz_tls_fail("write_out answered EAGAIN but drained %zu bytes", before - after);
    } else if (n == 0 || (size_t)n != before - after) {
        fuzz_tls_fail("write_out answered %d but drained %zu of %zu bytes", n, before - after,
                      before);
    } else {
        r->written += (size_t)n;
    }
    check_retry(r, "write_out");
}

/* The client reads at most max bytes (fewer when no more have come); checks each. */
static void client_read(struct run *r, size_t max)
{
    unsigned char buf[16384];
    size_t total = 0;

    while (total < max) {
        size_t got, want = max - total < sizeof(buf) ? max - total : sizeof(buf);
        int e;

        if (SSL_read_ex(r->cli, buf, want, &got) != 1) {
            e = SSL_get_error(r->cli, 0);
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
                fuzz_tls_fail("client read: SSL error %d (%s) after %llu of %llu bytes", e,
                              ERR_reason_error_string(ERR_peek_last_error()),
                              (unsigned long long)r->rx, (unsigned long long)r->written);
            ERR_clear_error();
            return;
        }
        /* (a refused write's bytes may go out before its retry reports them) */
        if (r->rx + got > r->written + r->t.retry_len)
            fuzz_tls_fail("the client got bytes up to %llu, server1 was told %llu went out "
                          "and %zu wait to be offered again",
                          (unsigned long long)(r->rx + got), (unsigned long long)r->written,
                          r->t.retry_len);
        for (size_t i = 0; i < got; i++)
            if (buf[i] != down_byte(r->rx + i))
                fuzz_tls_fail("the client's byte %llu differs from what server1 was given",
                              (unsigned long long)(r->rx + i));
        r->rx += got;
        total += got;
    }
}

/* The client offers its pending write again (the same bytes), or a KeyUpdate not sent yet. */
static void client_flush(struct run *r)
{
    size_t w;

    if (r->up_len == 0) {
        if (SSL_get_key_update_type(r->cli) != SSL_KEY_UPDATE_NONE && SSL_do_handshake(r->cli) != 1)
            ERR_clear_error();
        return;
    }
    if (SSL_write_ex(r->cli, r->up, r->up_len, &w) != 1) {
        int e = SSL_get_error(r->cli, 0);
        if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
            fuzz_tls_fail("client write: SSL error %d", e);
        ERR_clear_error();
        return;
    }
    r->up_sent += w;
    memmove(r->up, r->up + w, r->up_len - w);
    r->up_len -= w;
}

static void client_send(struct run *r, size_t len)
{
    if (r->up_len == 0) {
        for (size_t i = 0; i < len; i++)
            r->up[i] = up_byte(r->up_sent + i);
        r->up_len = len;
    }
    client_flush(r);
}

/* server1 reads at most budget bytes; checks them, and what pending() says. */
static void server_recv(struct run *r, size_t budget)
{
    unsigned char buf[16384 + 1];
    ssize_t n;

    if (budget > sizeof(buf))
        budget = sizeof(buf);
    n = r->t.ops->recv(&r->t, buf, budget);
    if (n == 0)
        fuzz_tls_fail("server1 recv: end of stream while the client is open");
    if (n < 0) {
        if (errno != EAGAIN)
            fuzz_tls_fail("server1 recv: -1 with errno %d", errno);
        return;
    }
    /* (like server1's, the client's refused write may send records before it reports them) */
    if ((size_t)n > budget || r->up_rx + (size_t)n > r->up_sent + r->up_len)
        fuzz_tls_fail("server1 recv of %zu: %zd bytes, %llu of %llu sent (%zu pending)", budget,
                      n, (unsigned long long)r->up_rx, (unsigned long long)r->up_sent, r->up_len);
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] != up_byte(r->up_rx + (size_t)i))
            fuzz_tls_fail("server1 byte %llu differs from what the client sent",
                          (unsigned long long)(r->up_rx + (size_t)i));
    r->up_rx += (size_t)n;
    /* as conn.c does: while pending() says bytes taken off the socket wait, read again. server1
     * reads ahead, so those bytes may be a record not all here yet (EAGAIN then: the socket's
     * readiness tells when the rest comes); bytes that never come out leave the run undrained */
    while (r->t.ops->pending(&r->t)) {
        n = r->t.ops->recv(&r->t, buf, 1);
        if (n < 0 && errno == EAGAIN)
            break;
        if (n != 1 || buf[0] != up_byte(r->up_rx))
            fuzz_tls_fail("pending() said bytes wait, recv answered %zd", n);
        r->up_rx++;
    }
}

/*
 * The client asks for a KeyUpdate, once per input: OpenSSL 3.0 fails a server's SSL_read that
 * takes two update requests at once while a write of its own is refused and pending ("bad
 * length"), which drops the connection; not server1's doing (docs/https.md).
 */
static void key_update(struct run *r)
{
    if (SSL_version(r->cli) != TLS1_3_VERSION || r->up_len > 0 || r->key_updated ||
        SSL_get_key_update_type(r->cli) != SSL_KEY_UPDATE_NONE)
        return;
    r->key_updated = true;
    if (SSL_key_update(r->cli, SSL_KEY_UPDATE_REQUESTED) != 1) {
        ERR_clear_error(); /* (the client is taking a record of a ticket: not now) */
        return;
    }
    client_flush(r);
}

static bool drained(const struct run *r)
{
    return evbuffer_get_length(r->out) == 0 && r->rx == r->written && r->up_len == 0 &&
           r->up_rx == r->up_sent && SSL_get_key_update_type(r->cli) == SSL_KEY_UPDATE_NONE;
}

/* Everything queued goes out and is read; then server1's shutdown, seen by the client. */
static void finish(struct run *r)
{
    unsigned char buf[64];
    size_t got;
    int turn;

    for (turn = 0; turn < DRAIN_TURNS && !drained(r); turn++) {
        flush(r, CONN_BUDGET);
        client_read(r, SIZE_MAX);
        client_flush(r);
        server_recv(r, 16384);
    }
    if (!drained(r) || r->written != r->given)
        fuzz_tls_fail("not drained in %d turns: given %llu, written %llu, received %llu, "
                      "queued %zu; up %llu sent, %llu received",
                      turn, (unsigned long long)r->given, (unsigned long long)r->written,
                      (unsigned long long)r->rx, evbuffer_get_length(r->out),
                      (unsigned long long)r->up_sent, (unsigned long long)r->up_rx);
    if (r->t.ops->shutdown(&r->t) != 0)
        fuzz_tls_fail("shutdown: %s", strerror(errno));
    if (SSL_read_ex(r->cli, buf, sizeof(buf), &got) == 1)
        fuzz_tls_fail("the client got %zu bytes after all of them", got);
    if (SSL_get_error(r->cli, 0) != SSL_ERROR_ZERO_RETURN)
        fuzz_tls_fail("the client got no close_notify: SSL error %d", SSL_get_error(r->cli, 0));
    ERR_clear_error();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tls = fuzz_tls_server();
    cli_ctx[0] = fuzz_tls_client_ctx(0);
    cli_ctx[1] = fuzz_tls_client_ctx(TLS1_2_VERSION);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t mfl[8] = {0, TLSEXT_max_fragment_length_512,
                                   TLSEXT_max_fragment_length_1024,
                                   TLSEXT_max_fragment_length_2048,
                                   TLSEXT_max_fragment_length_4096};
    static const int bufsizes[4] = {4096, 8192, 32768, 0};
    struct input in = {data, size};
    unsigned conf = next_byte(&in);
    struct run *r = calloc(1, sizeof(*r));
    int fds[2];

    if (r == NULL)
        fuzz_tls_fail("out of memory");
    fuzz_tls_pair(fds, bufsizes[(conf >> 4) & 3]);
    r->out = evbuffer_new();
    r->cli = SSL_new(cli_ctx[conf & 1]);
    if (r->out == NULL || r->cli == NULL || SSL_set_fd(r->cli, fds[1]) != 1)
        fuzz_tls_fail("cannot make the client");
    if (mfl[(conf >> 1) & 7] != 0 &&
        SSL_set_tlsext_max_fragment_length(r->cli, mfl[(conf >> 1) & 7]) != 1)
        fuzz_tls_fail("cannot ask for a max_fragment_length");
    SSL_set_connect_state(r->cli);
    r->cfd = fds[1];
    if (s1_tls_attach(&r->t, tls, fds[0], &metrics) != 0)
        fuzz_tls_fail("s1_tls_attach failed");
    fuzz_tls_handshake(r->cli, &r->t);

    for (int step = 0; step < STEPS_MAX && in.n > 0; step++) {
        unsigned op = next_byte(&in) % 8, a, b;
        switch (op) {
        case 0:
        case 1:
            a = next_byte(&in);
            b = next_byte(&in) << 8;
            b |= next_byte(&in);
            respond(r, 1 + a * 8, b % 40001);
            break;
        case 2:
            a = next_byte(&in) << 8;
            a |= next_byte(&in);
            flush(r, 1 + a);
            break;
        case 3:
            client_read(r, 1 + next_byte(&in) * 128);
            break;
        case 4:
            client_send(r, 1 + next_byte(&in) * 64);
            break;
        case 5:
            server_recv(r, 1 + next_byte(&in) * 64);
            break;
        case 6:
            key_update(r);
            break;
        default:
            client_read(r, SIZE_MAX);
            break;
        }
    }
    finish(r);
    /* (each input frees what it made: libFuzzer's leak check runs when it does not) */
    SSL_CTX_flush_sessions(SSL_get_SSL_CTX(r->t.ssl), 0);
    r->t.ops->close(&r->t);
    SSL_free(r->cli);
    close(r->cfd);
    evbuffer_free(r->out);
    free(r);
    return 0;
}
