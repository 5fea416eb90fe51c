/*
 * test_tls.c - cmocka tests for server1/tls's transport: a write OpenSSL took in part. A client
 * that asks for max_fragment_length 1024 gets records of 1 KiB, so one SSL_write of a response
 * can go out as a record written and one refused half-way; the bytes of the refused one must be
 * offered again, at least all of them, even when the transport reported the first record as
 * written and the caller queued the rest in pieces (the head copied, the body referenced, as
 * conn.c does). server1's end is a BIO pair whose buffer takes one record and part of the next,
 * so the refusal happens at the same byte every run. And the end of a connection: server1's
 * close_notify when it shuts first, none in answer to the client's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../../../server1/metrics.h"
#include "../../../server1/tls.h"
#include "../../../server1/transport.h"

#define WIRE 1124 /* server1's BIO buffer: one 1 KiB record (< 100 B overhead), part of another */

static char pattern_at(size_t i)
{
    return (char)('a' + i % 26 + (i / 26) % 3);
}

/* server1's TLS state from a new P-256 key and a self-signed certificate. */
static struct s1_tls *make_server(void)
{
    char dir[] = "/tmp/s1-test-tls-XXXXXX";
    char cert[64], key[64];
    char err[S1_TLS_ERR_LEN];
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name;
    struct s1_tls *tls;
    FILE *f;

    assert_non_null(mkdtemp(dir));
    assert_non_null(pk);
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    assert_true(X509_sign(x, pk, EVP_sha256()) > 0);
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    f = fopen(cert, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    assert_int_equal(fclose(f), 0);
    f = fopen(key, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL), 1);
    assert_int_equal(fclose(f), 0);
    X509_free(x);
    EVP_PKEY_free(pk);
    tls = s1_tls_new(cert, key, 0, err);
    unlink(cert);
    unlink(key);
    rmdir(dir);
    if (tls == NULL)
        fail_msg("s1_tls_new: %s", err);
    return tls;
}

/* Everything the client can read now, appended to got (cap bytes), checked as it comes. */
static void client_read(SSL *cli, char *got, size_t *len, size_t cap)
{
    size_t n;

    while (*len < cap) {
        if (SSL_read_ex(cli, got + *len, cap - *len, &n) != 1) {
            assert_int_equal(SSL_get_error(cli, 0), SSL_ERROR_WANT_READ);
            ERR_clear_error();
            break;
        }
        *len += n;
    }
    for (size_t i = 0; i < *len; i++)
        assert_int_equal(got[i], pattern_at(i));
}

/*
 * A connection after its handshake: t (server1's end, on a server of its own) and cli over a
 * BIO pair whose server1 side buffers wire bytes.
 */
struct pair {
    struct s1_tls *tls;
    struct metrics metrics;
    struct s1_transport t;
    SSL_CTX *cctx;
    SSL *cli;
    BIO *cbio;
    int fds[2];
};

/* The handshake; small: TLS 1.2 records of 1 KiB (max_fragment_length) through WIRE bytes. */
static struct pair *pair_open(bool small)
{
    struct pair *p = calloc(1, sizeof(*p));
    BIO *sbio;
    char b[16];
    size_t n;

    assert_non_null(p);
    p->tls = make_server();
    p->cctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(p->cctx);
    if (small)
        assert_int_equal(SSL_CTX_set_max_proto_version(p->cctx, TLS1_2_VERSION), 1);
    p->cli = SSL_new(p->cctx);
    assert_non_null(p->cli);
    if (small)
        assert_int_equal(
            SSL_set_tlsext_max_fragment_length(p->cli, TLSEXT_max_fragment_length_1024), 1);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, p->fds), 0);
    assert_int_equal(s1_tls_attach(&p->t, p->tls, p->fds[0], &p->metrics), 0);
    assert_int_equal(BIO_new_bio_pair(&sbio, small ? WIRE : 1 << 16, &p->cbio, 1 << 16), 1);
    SSL_set_bio(p->t.ssl, sbio, sbio);
    SSL_set_bio(p->cli, p->cbio, p->cbio);
    SSL_set_connect_state(p->cli);
    for (int turn = 0; turn < 100 && !(p->t.handshake_done && SSL_is_init_finished(p->cli));
         turn++) {
        if (SSL_do_handshake(p->cli) != 1)
            ERR_clear_error();
        assert_int_equal(p->t.ops->recv(&p->t, b, sizeof(b)), -1);
        assert_int_equal(errno, EAGAIN);
    }
    assert_true(p->t.handshake_done);
    assert_true(SSL_is_init_finished(p->cli));
    /* the client takes its session tickets: what is left on the wire is server1's from now */
    assert_int_equal(SSL_read_ex(p->cli, b, sizeof(b), &n), 0);
    assert_int_equal(SSL_get_error(p->cli, 0), SSL_ERROR_WANT_READ);
    ERR_clear_error();
    assert_int_equal(BIO_ctrl_pending(p->cbio), 0);
    return p;
}

static void pair_close(struct pair *p)
{
    p->t.ops->close(&p->t);
    close(p->fds[1]);
    SSL_free(p->cli);
    SSL_CTX_free(p->cctx);
    s1_tls_free(p->tls);
    free(p);
}

static int setup(void **state)
{
    *state = pair_open(false);
    return 0;
}

static int teardown(void **state)
{
    pair_close(*state);
    return 0;
}

/* server1 shuts first: the client reads a close_notify (the end is not a truncation). */
static void test_tls_shutdown_sends_close_notify(void **state)
{
    struct pair *p = *state;
    char b[16];
    size_t n;

    assert_int_equal(p->t.ops->shutdown(&p->t), 0);
    assert_true(BIO_ctrl_pending(p->cbio) > 0);
    assert_int_equal(SSL_read_ex(p->cli, b, sizeof(b), &n), 0);
    assert_int_equal(SSL_get_error(p->cli, 0), SSL_ERROR_ZERO_RETURN);
    ERR_clear_error();
}

/*
 * The client's close_notify: server1 reads the end (0) and closes without sending its own, as
 * nginx does: the client has closed and will not read it.
 */
static void test_tls_peer_close_notify_not_answered(void **state)
{
    struct pair *p = *state;
    char b[16];

    assert_int_equal(SSL_shutdown(p->cli), 0); /* sent, the peer's not yet seen */
    assert_int_equal(p->t.ops->recv(&p->t, b, sizeof(b)), 0);
    assert_int_equal(p->t.ops->shutdown(&p->t), 0);
    assert_int_equal(BIO_ctrl_pending(p->cbio), 0); /* nothing written after it */
}

/*
 * An error some other call left in the thread's OpenSSL queue does not make the next read look
 * failed: the transport empties the queue before each SSL call (SSL_get_error reads it).
 */
static void test_tls_stale_error_ignored(void **state)
{
    struct pair *p = *state;
    char b[16];

    ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
    assert_int_equal(p->t.ops->recv(&p->t, b, sizeof(b)), -1);
    assert_int_equal(errno, EAGAIN);
    assert_false(p->t.fatal);
}

/*
 * A 1500-byte head and a 1000-byte body in one writev: the first record goes, the second is
 * taken half-way. The transport reports 1024 bytes; conn.c queues the head's 476 others
 * (copied) and the body (referenced); the next write_out must offer the whole refused record
 * again, though its first piece is only 476 bytes long.
 */
static void test_tls_writev_retry_across_pieces(void **state)
{
    struct pair *p = pair_open(true);
    struct evbuffer *out = evbuffer_new();
    char head[1500], body[1000], got[2500];
    size_t got_len = 0;
    struct iovec iov[2] = {{head, sizeof(head)}, {body, sizeof(body)}};
    ssize_t n;
    (void)state;

    for (size_t i = 0; i < sizeof(head); i++)
        head[i] = pattern_at(i);
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = pattern_at(sizeof(head) + i);
    assert_non_null(out);

    n = p->t.ops->writev(&p->t, iov, 2);
    assert_int_equal(n, 1024);
    /* conn.c's queue_out: the head's rest copied, the body by reference */
    assert_int_equal(evbuffer_add(out, head + n, sizeof(head) - (size_t)n), 0);
    assert_int_equal(evbuffer_add_reference(out, body, sizeof(body), NULL, NULL), 0);
    client_read(p->cli, got, &got_len, sizeof(got));
    assert_int_equal(got_len, 1024);

    for (int turn = 0; turn < 100 && evbuffer_get_length(out) > 0; turn++) {
        int w = p->t.ops->write_out(&p->t, out, 2u << 20);
        if (w < 0)
            assert_int_equal(errno, EAGAIN); /* (not ECONNRESET: OpenSSL refused the retry) */
        client_read(p->cli, got, &got_len, sizeof(got));
    }
    assert_int_equal(evbuffer_get_length(out), 0);
    assert_int_equal(got_len, sizeof(got));
    assert_false(p->t.fatal);

    pair_close(p);
    evbuffer_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_writev_retry_across_pieces),
        cmocka_unit_test_setup_teardown(test_tls_shutdown_sends_close_notify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_peer_close_notify_not_answered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tls_stale_error_ignored, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
