/*
 * fuzz_tls_handshake.c - what a TLS client sends to server1 (its ClientHello and what follows),
 * taken by a server SSL made from server1's real context (s1_tls_new: the profile, the ALPN
 * callback, the session-ticket callback with server1's key ring) through the TLS transport
 * (s1_tls_attach on an AF_UNIX socket pair), as conn.c reads: recv until EAGAIN, then a
 * response's writev, shutdown and close.
 *
 * The input's first byte: bits 0-1 put in front of the rest a ClientHello captured in this
 * process from an OpenSSL client resuming with a ticket server1 issued (1: TLS 1.2, its
 * SessionTicket extension; 2: TLS 1.3, its pre_shared_key; 0, 3: none), so that a valid
 * ticket's path is taken (server1's callback finds the key, the ticket opens) and the fuzzer
 * mutates what follows it; bits 2-4 the size of the pieces the bytes arrive in (1 B to all at
 * once); bit 5: the client ends its side after them; bit 6: server1 then writes a response;
 * bit 7: server1 shuts its side down before the close. In the rest, every 16 bytes equal to
 * FUZZ_TLS_KEY_NAME become the name of server1's ticket key of this process, so a seed's
 * ticket, made in another process, reaches the decryption with a key found (its MAC then
 * fails: a full handshake); the committed seeds (tests/fuzz/corpus/tls_handshake) were
 * written by this target with S1_FUZZ_TLS_SEEDS=DIR, from OpenSSL clients' ClientHellos.
 *
 * Properties (a violation aborts): recv answers bytes only after the handshake finished, 0,
 * or -1 with EAGAIN or ECONNRESET (ECONNRESET: a TLS error, the connection marked fatal; EAGAIN:
 * not); once the client has ended its side and everything was read, recv never answers EAGAIN
 * again; writev answers 1..len bytes or -1 with EAGAIN, ECONNRESET or EPIPE; a connection
 * closed before its handshake finished is counted as failed; no leak, no hang.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "fuzz_tls.h"

#define FUZZ_TLS_KEY_NAME "S1FUZZ-KEY-NAME!" /* 16 bytes: stands for the ticket key's name */
#define HELLO_MAX 4096
#define RECAPTURE_S 100 /* tickets last S1_TLS_SESSION_TIMEOUT_S (300 s): capture anew */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct s1_tls *tls;
static SSL_CTX *ctx13, *ctx12; /* clients: up to TLS 1.3; TLS 1.2 only */
static struct metrics metrics;
static unsigned char key_name[16]; /* server1's ticket key (the ring never rotates here) */
static uint8_t hello[2][HELLO_MAX]; /* [0]: TLS 1.2 with a ticket, [1]: TLS 1.3 with one */
static size_t hello_len[2];
static time_t captured_at;

/* The ClientHello cli sends (cli is freed): its bytes from a fresh pair nobody answers. */
static size_t client_hello(SSL *cli, uint8_t *buf, size_t cap)
{
    int fds[2];
    ssize_t n;

    fuzz_tls_pair(fds, 0);
    if (SSL_set_fd(cli, fds[1]) != 1)
        fuzz_tls_fail("SSL_set_fd failed");
    SSL_set_connect_state(cli);
    if (SSL_do_handshake(cli) == 1 || SSL_get_error(cli, 0) != SSL_ERROR_WANT_READ)
        fuzz_tls_fail("the client did not wait for the server's answer");
    ERR_clear_error();
    n = read(fds[0], buf, cap);
    if (n <= 0 || (size_t)n == cap)
        fuzz_tls_fail("cannot read a ClientHello: %zd", n);
    SSL_free(cli);
    close(fds[0]);
    close(fds[1]);
    return (size_t)n;
}

/* A client of ctx with ALPN alpn (NULL: none) and SNI localhost, resuming sess (or NULL). */
static SSL *new_client(SSL_CTX *ctx, const char *alpn, SSL_SESSION *sess)
{
    SSL *cli = SSL_new(ctx);

    if (cli == NULL || SSL_set_tlsext_host_name(cli, "localhost") != 1 ||
        (alpn != NULL &&
         SSL_set_alpn_protos(cli, (const unsigned char *)alpn, (unsigned)strlen(alpn)) != 0) ||
        (sess != NULL && SSL_set_session(cli, sess) != 1))
        fuzz_tls_fail("cannot make a client");
    return cli;
}

/* A session with a ticket from server1: a full handshake of a client of ctx. */
static SSL_SESSION *ticket_session(SSL_CTX *ctx)
{
    SSL *cli = new_client(ctx, "\x08http/1.1", NULL);
    struct s1_transport t;
    SSL_SESSION *sess;
    int fds[2];

    fuzz_tls_pair(fds, 0);
    if (SSL_set_fd(cli, fds[1]) != 1 || s1_tls_attach(&t, tls, fds[0], &metrics) != 0)
        fuzz_tls_fail("cannot attach");
    SSL_set_connect_state(cli);
    fuzz_tls_handshake(cli, &t);
    sess = SSL_get1_session(cli);
    if (sess == NULL || SSL_SESSION_has_ticket(sess) != 1)
        fuzz_tls_fail("server1 gave no ticket");
    SSL_shutdown(cli); /* (freed without it, the session would be marked not resumable) */
    ERR_clear_error();
    t.ops->close(&t);
    SSL_free(cli);
    close(fds[1]);
    return sess;
}

/* ClientHellos that resume with tickets of this process, and the ticket key's name. */
static void capture(void)
{
    SSL_SESSION *s12 = ticket_session(ctx12), *s13 = ticket_session(ctx13);
    const unsigned char *tick;
    size_t len;

    SSL_SESSION_get0_ticket(s12, &tick, &len);
    if (len < sizeof(key_name))
        fuzz_tls_fail("a ticket of %zu bytes", len);
    memcpy(key_name, tick, sizeof(key_name));
    hello_len[0] = client_hello(new_client(ctx12, "\x08http/1.1", s12), hello[0], HELLO_MAX);
    hello_len[1] = client_hello(new_client(ctx13, "\x08http/1.1", s13), hello[1], HELLO_MAX);
    SSL_SESSION_free(s12);
    SSL_SESSION_free(s13);
    captured_at = time(NULL);
}

/* Every occurrence of from (16 bytes) in p[0..len) replaced by to. */
static void replace16(uint8_t *p, size_t len, const void *from, const void *to)
{
    for (size_t i = 0; i + 16 <= len; i++)
        if (memcmp(p + i, from, 16) == 0)
            memcpy(p + i, to, 16);
}

static void write_seed(const char *dir, const char *name, unsigned flags, const uint8_t *p,
                       size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fputc((int)flags, f) == EOF || fwrite(p, 1, len, f) != len ||
        fclose(f) != 0)
        fuzz_tls_fail("cannot write '%s'", path);
}

/* S1_FUZZ_TLS_SEEDS=DIR: the seeds, from OpenSSL clients' ClientHellos, into DIR. */
static void write_seeds(const char *dir)
{
    static const char junk[] = "\x17\x03\x03\x00\x05hello\x15\x03\x03\x00\x02\x01\x00";
    uint8_t buf[HELLO_MAX];
    size_t n;

    n = client_hello(new_client(ctx13, "\x08http/1.1", NULL), buf, sizeof(buf));
    write_seed(dir, "tls13_http11", 0x34, buf, n);
    write_seed(dir, "tls13_http11_bytewise", 0x20, buf, n);
    n = client_hello(new_client(ctx13, "\x02h2\x08http/1.1", NULL), buf, sizeof(buf));
    write_seed(dir, "tls13_h2_http11_respond", 0xd4, buf, n);
    n = client_hello(new_client(ctx12, "\x02h2", NULL), buf, sizeof(buf));
    write_seed(dir, "tls12_h2_only", 0x34, buf, n);
    n = client_hello(new_client(ctx12, NULL, NULL), buf, sizeof(buf));
    write_seed(dir, "tls12_no_alpn_pieces", 0x28, buf, n);
    memcpy(buf, hello[0], hello_len[0]);
    replace16(buf, hello_len[0], key_name, FUZZ_TLS_KEY_NAME);
    write_seed(dir, "tls12_ticket", 0x34, buf, hello_len[0]);
    memcpy(buf, hello[1], hello_len[1]);
    replace16(buf, hello_len[1], key_name, FUZZ_TLS_KEY_NAME);
    write_seed(dir, "tls13_psk_ticket", 0x34, buf, hello_len[1]);
    write_seed(dir, "valid_tls12_ticket_then_junk", 0x35, (const uint8_t *)junk,
               sizeof(junk) - 1);
    write_seed(dir, "valid_tls13_ticket_then_junk", 0xf6, (const uint8_t *)junk,
               sizeof(junk) - 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("S1_FUZZ_TLS_SEEDS");

    (void)argc;
    (void)argv;
    tls = fuzz_tls_server();
    ctx13 = fuzz_tls_client_ctx(0);
    ctx12 = fuzz_tls_client_ctx(TLS1_2_VERSION);
    capture();
    if (seeds != NULL) {
        write_seeds(seeds);
        fprintf(stderr, "fuzz_tls_handshake: seeds written to '%s'\n", seeds);
        exit(0);
    }
    return 0;
}

/* A recv as conn.c makes one: 1 bytes came, 0 EAGAIN, -1 the connection ended (0, error). */
static int server_recv(struct s1_transport *t)
{
    char buf[4096];
    ssize_t n = t->ops->recv(t, buf, sizeof(buf));

    if (n > 0 && !t->handshake_done)
        fuzz_tls_fail("recv answered %zd bytes before the handshake finished", n);
    if (n > (ssize_t)sizeof(buf))
        fuzz_tls_fail("recv answered %zd bytes", n);
    if (n >= 0)
        return n > 0 ? 1 : -1;
    if (errno == ECONNRESET && !t->fatal)
        fuzz_tls_fail("recv answered ECONNRESET on a connection not marked fatal");
    if (errno == EAGAIN && t->fatal)
        fuzz_tls_fail("recv answered EAGAIN on a connection marked fatal");
    if (errno != EAGAIN && errno != ECONNRESET)
        fuzz_tls_fail("recv answered -1 with errno %d", errno);
    return errno == EAGAIN ? 0 : -1;
}

/* What server1 sent is read and dropped (the client's end must not fill up). */
static void drain(int cfd)
{
    char buf[16384];

    while (read(cfd, buf, sizeof(buf)) > 0)
        ;
}

/* server1 reads until EAGAIN (a bounded number of times); false once the connection ended. */
static bool pump(struct s1_transport *t, int cfd)
{
    for (int i = 0; i < 64; i++) {
        int r = server_recv(t);
        drain(cfd);
        if (r < 0)
            return false;
        if (r == 0 && !t->want_write)
            break;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t pieces[8] = {1, 5, 64, 517, 4096, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    static const char resp[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    unsigned flags = size > 0 ? data[0] : 0;
    unsigned prefix = flags & 3;
    size_t piece = pieces[(flags >> 2) & 7], len = 0, off = 0;
    uint64_t failed_before = metrics.tls_handshakes_failed;
    struct s1_transport t;
    bool open = true, done;
    int fds[2];
    uint8_t *stream;

    if (size > 0) {
        data++;
        size--;
    }
    if (prefix == 1 || prefix == 2) {
        if (time(NULL) - captured_at > RECAPTURE_S)
            capture();
    } else {
        prefix = 0;
    }
    stream = malloc(HELLO_MAX + size + 1);
    if (stream == NULL)
        fuzz_tls_fail("out of memory");
    if (prefix != 0) {
        memcpy(stream, hello[prefix - 1], hello_len[prefix - 1]);
        len = hello_len[prefix - 1];
    }
    memcpy(stream + len, data, size);
    replace16(stream + len, size, FUZZ_TLS_KEY_NAME, key_name);
    len += size;

    fuzz_tls_pair(fds, 0);
    if (s1_tls_attach(&t, tls, fds[0], &metrics) != 0)
        fuzz_tls_fail("s1_tls_attach failed");
    for (int turns = 0; open && off < len; turns++) {
        size_t n = len - off < piece ? len - off : piece;
        ssize_t w = write(fds[1], stream + off, n);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN)
            fuzz_tls_fail("write to server1: %s", strerror(errno));
        else if (turns > 100000)
            fuzz_tls_fail("server1 reads no more of the input (%zu of %zu bytes)", off, len);
        open = pump(&t, fds[1]);
    }
    if (open && (flags & 0x20)) {
        /* the client's end: recv must say so (0 or a TLS error), not EAGAIN, within turns */
        shutdown(fds[1], SHUT_WR);
        for (int i = 0; open && i < 8; i++)
            open = pump(&t, fds[1]);
        if (open)
            fuzz_tls_fail("recv still answers EAGAIN after the client ended its side");
    }
    if (flags & 0x40) {
        ssize_t n = t.ops->writev(&t, &(struct iovec){(void *)resp, sizeof(resp) - 1}, 1);
        if (n == 0 || n > (ssize_t)(sizeof(resp) - 1) ||
            (n < 0 && errno != EAGAIN && errno != ECONNRESET && errno != EPIPE))
            fuzz_tls_fail("writev answered %zd (errno %d)", n, errno);
        drain(fds[1]);
    }
    if ((flags & 0x80) && t.ops->shutdown(&t) != 0)
        fuzz_tls_fail("shutdown: %s", strerror(errno));
    done = t.handshake_done;
    t.ops->close(&t);
    if (!done && metrics.tls_handshakes_failed != failed_before + 1)
        fuzz_tls_fail("a connection closed in its handshake was not counted as failed");
    close(fds[1]);
    free(stream);
    return 0;
}
