/*
 * fuzz_tls.h - what the TLS fuzz targets (fuzz_tls_*.c) share: server1's TLS state made by
 * s1_tls_new from an EC P-256 key and a self-signed certificate written at start into a
 * temporary directory (removed once loaded), an OpenSSL client context, a non-blocking
 * AF_UNIX socket pair with small buffers, and a full handshake between the two over it.
 * Anything unexpected here is the harness's fault, not the input's: it aborts with a line.
 */
#ifndef FUZZ_TLS_H
#define FUZZ_TLS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../../server1/metrics.h"
#include "../../server1/tls.h"
#include "../../server1/transport.h"

/* An invariant broke: say which, and abort so that libFuzzer keeps the input. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void fuzz_tls_fail(const char *fmt,
                                                                                 ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("fuzz_tls: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* The key and certificate as PEM files in dir (dir/key.pem, dir/cert.pem). */
static inline void fuzz_tls_write_cert(const char *dir, char *cert, char *key, size_t cap)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name;
    FILE *f;

    if (pk == NULL || x == NULL)
        fuzz_tls_fail("cannot make a key and a certificate");
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365);
    X509_set_pubkey(x, pk);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    if (X509_sign(x, pk, EVP_sha256()) == 0)
        fuzz_tls_fail("cannot sign the certificate");
    snprintf(cert, cap, "%s/cert.pem", dir);
    snprintf(key, cap, "%s/key.pem", dir);
    f = fopen(cert, "w");
    if (f == NULL || PEM_write_X509(f, x) != 1 || fclose(f) != 0)
        fuzz_tls_fail("cannot write '%s'", cert);
    f = fopen(key, "w");
    if (f == NULL || PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL) != 1 || fclose(f) != 0)
        fuzz_tls_fail("cannot write '%s'", key);
    X509_free(x);
    EVP_PKEY_free(pk);
}

/* server1's TLS state from a fresh key and certificate; tickets never rotate. */
static inline struct s1_tls *fuzz_tls_server(void)
{
    static char dir[] = "/tmp/s1-fuzz-tls-XXXXXX";
    static char cert[64], key[64]; /* (s1_tls keeps the paths for a reload: never done here) */
    char err[S1_TLS_ERR_LEN];
    struct s1_tls *tls;

    if (mkdtemp(dir) == NULL)
        fuzz_tls_fail("mkdtemp: %s", strerror(errno));
    fuzz_tls_write_cert(dir, cert, key, sizeof(cert));
    tls = s1_tls_new(cert, key, 0, err);
    unlink(cert);
    unlink(key);
    rmdir(dir);
    if (tls == NULL)
        fuzz_tls_fail("s1_tls_new: %s", err);
    return tls;
}

/* A client context that trusts any certificate, of at most max_version (0: any). */
static inline SSL_CTX *fuzz_tls_client_ctx(int max_version)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (ctx == NULL || SSL_CTX_set_max_proto_version(ctx, max_version) != 1)
        fuzz_tls_fail("cannot make the client context");
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* (SSL_get1_session still works) */
    return ctx;
}

/* A connected non-blocking pair: fds[0] is server1's end. bufsize 0: the kernel's sizes. */
static inline void fuzz_tls_pair(int fds[2], int bufsize)
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
        fuzz_tls_fail("socketpair: %s", strerror(errno));
    for (int i = 0; i < 2 && bufsize > 0; i++) {
        if (setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize)) != 0 ||
            setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize)) != 0)
            fuzz_tls_fail("setsockopt: %s", strerror(errno));
    }
}

/*
 * A full handshake between cli (connect state, on the pair's other end) and server1's
 * transport t; for TLS 1.3 also the tickets the server sends after it, read by the client.
 * Aborts if it does not end within a bounded number of turns.
 */
static inline void fuzz_tls_handshake(SSL *cli, struct s1_transport *t)
{
    char buf[64];
    bool cli_done = false;

    for (int turn = 0; turn < 200; turn++) {
        if (!cli_done) {
            int rc = SSL_do_handshake(cli);
            int e = SSL_get_error(cli, rc);
            if (rc == 1)
                cli_done = true;
            else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
                fuzz_tls_fail("client handshake failed: %d", e);
        }
        {
            ssize_t n = t->ops->recv(t, buf, sizeof(buf));
            if (n != -1 || errno != EAGAIN)
                fuzz_tls_fail("server1 recv in the handshake: %zd (errno %d)", n, errno);
        }
        if (cli_done && t->handshake_done) {
            size_t got;
            /* (over TLS 1.3 this takes the tickets: there is no application data yet) */
            if (SSL_read_ex(cli, buf, sizeof(buf), &got) == 1)
                fuzz_tls_fail("the client read %zu bytes nobody wrote", got);
            if (SSL_get_error(cli, 0) != SSL_ERROR_WANT_READ)
                fuzz_tls_fail("client read after the handshake failed");
            ERR_clear_error();
            return;
        }
    }
    fuzz_tls_fail("the handshake did not end in 200 turns");
}

#endif /* FUZZ_TLS_H */
