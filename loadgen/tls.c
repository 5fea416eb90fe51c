/*
 * tls.c - see tls.h. The OpenSSL error queue is per thread: it is cleared before every call
 * whose failure is read with SSL_get_error, as OpenSSL asks.
 */
#include "tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"

static const unsigned char lg_alpn[] = "\x08http/1.1";

/* The first failed handshake of the process is logged at error level, the rest at debug. */
static atomic_bool lg_tls_fail_logged;

/* The context's new-session callback: the slot keeps the server's latest session. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct lg_tls_conn *c = SSL_get_app_data(ssl);

    if (c == NULL)
        return 0;
    if (c->sess != NULL)
        SSL_SESSION_free(c->sess);
    c->sess = sess;
    return 1; /* the reference is ours */
}

/* The last OpenSSL error of this thread as text, "" if none. */
static const char *ossl_reason(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    return buf;
}

struct ssl_ctx_st *lg_tls_ctx_new(const struct lg_tls_opts *o, char *err)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    X509_VERIFY_PARAM *param;

    if (ctx == NULL) {
        snprintf(err, LG_TLS_ERR_LEN, "cannot create the TLS context: %s",
                 ossl_reason(why, sizeof(why)));
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_alpn_protos(ctx, lg_alpn, sizeof(lg_alpn) - 1) != 0) {
        snprintf(err, LG_TLS_ERR_LEN, "cannot set up the TLS context: %s",
                 ossl_reason(why, sizeof(why)));
        goto err_free;
    }
    /* writes resume where they stopped; a peer's close without close_notify is an end of
     * stream like any other, the HTTP framing tells whether the response was complete */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (o->resume) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
                                                SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    }
    if (o->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        return ctx;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (o->cacert != NULL && o->cacert[0] != '\0') {
        if (SSL_CTX_load_verify_locations(ctx, o->cacert, NULL) != 1) {
            snprintf(err, LG_TLS_ERR_LEN, "--cacert '%s': no PEM certificate could be read (%s)",
                     o->cacert, ossl_reason(why, sizeof(why)));
            goto err_free;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, LG_TLS_ERR_LEN, "cannot load the system's CA store: %s",
                 ossl_reason(why, sizeof(why)));
        goto err_free;
    }
    param = SSL_CTX_get0_param(ctx);
    if ((o->host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, o->host)
                       : X509_VERIFY_PARAM_set1_host(param, o->host, 0)) != 1) {
        snprintf(err, LG_TLS_ERR_LEN, "cannot set the host '%s' to verify: %s", o->host,
                 ossl_reason(why, sizeof(why)));
        goto err_free;
    }
    return ctx;
err_free:
    SSL_CTX_free(ctx);
    return NULL;
}

void lg_tls_ctx_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

int lg_tls_start(struct lg_tls_conn *c, int fd, uint64_t now)
{
    SSL *ssl = SSL_new(c->ctx);

    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1)
        goto err;
    SSL_set_app_data(ssl, c);
    /* SNI carries host names only (RFC 6066, 3) */
    if (!c->host_is_ip && SSL_set_tlsext_host_name(ssl, c->host) != 1)
        goto err;
    if (c->sess != NULL && SSL_set_session(ssl, c->sess) != 1)
        goto err;
    c->ssl = ssl;
    c->fatal = false;
    c->want_write = false;
    c->start_ns = now;
    return 0;
err:
    SSL_free(ssl);
    ERR_clear_error();
    return -1;
}

/* Logs why a handshake failed: the first time at error level, then at debug. */
static void log_failure(struct lg_tls_conn *c, int sslerr)
{
    char why[256];
    long vr = SSL_get_verify_result(c->ssl);
    bool first = !atomic_exchange_explicit(&lg_tls_fail_logged, true, memory_order_relaxed);

    if (vr != X509_V_OK)
        snprintf(why, sizeof(why), "certificate verification failed: %s",
                 X509_verify_cert_error_string(vr));
    else if (sslerr == SSL_ERROR_SSL)
        ossl_reason(why, sizeof(why));
    else
        snprintf(why, sizeof(why), "connection closed or reset (errno %d)", errno);
    if (first)
        log_error("TLS handshake with '%s' failed: %s (further failures at debug level)",
                  c->host, why);
    else
        log_debug("TLS handshake with '%s' failed: %s", c->host, why);
}

int lg_tls_handshake(struct lg_tls_conn *c)
{
    int rc;
    int e;

    ERR_clear_error();
    rc = SSL_connect(c->ssl);
    if (rc == 1) {
        c->want_write = false;
        return 1;
    }
    e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        return 0;
    }
    log_failure(c, e);
    c->fatal = true;
    ERR_clear_error();
    return -1;
}

bool lg_tls_resumed(const struct lg_tls_conn *c)
{
    return SSL_session_reused(c->ssl) == 1;
}

/* Turns an SSL_read/SSL_write failure into errno: EAGAIN to wait, else an error. */
static ssize_t io_failed(struct lg_tls_conn *c, int rc)
{
    int e = SSL_get_error(c->ssl, rc);

    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0; /* close_notify */
    c->fatal = true;
    ERR_clear_error();
    errno = ECONNRESET;
    return -1;
}

ssize_t lg_tls_read(struct lg_tls_conn *c, void *buf, size_t len)
{
    int rc;

    ERR_clear_error();
    rc = SSL_read(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return rc > 0 ? rc : io_failed(c, rc);
}

ssize_t lg_tls_write(struct lg_tls_conn *c, const void *buf, size_t len)
{
    int rc;

    ERR_clear_error();
    rc = SSL_write(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return rc > 0 ? rc : io_failed(c, rc);
}

void lg_tls_close(struct lg_tls_conn *c)
{
    if (c->ssl == NULL)
        return;
    /* A session whose connection was not shut down is marked not resumable by OpenSSL; one
     * that failed must not be offered again. A close_notify that cannot be sent (the peer
     * closed first) still counts as sent. */
    if (!c->fatal && SSL_is_init_finished(c->ssl)) {
        ERR_clear_error();
        if (SSL_shutdown(c->ssl) < 0)
            ERR_clear_error();
    }
    if (c->fatal && c->sess != NULL) {
        SSL_SESSION_free(c->sess);
        c->sess = NULL;
    }
    SSL_free(c->ssl);
    c->ssl = NULL;
}

void lg_tls_forget(struct lg_tls_conn *c)
{
    if (c->sess != NULL)
        SSL_SESSION_free(c->sess);
    c->sess = NULL;
}

void lg_tls_stats_init(struct lg_tls_stats *s)
{
    memset(s, 0, sizeof(*s));
    hist_init(&s->hs_ns);
}

void lg_tls_stats_merge(struct lg_tls_stats *dst, const struct lg_tls_stats *src)
{
    dst->full += src->full;
    dst->resumed += src->resumed;
    dst->failed += src->failed;
    hist_merge(&dst->hs_ns, &src->hs_ns);
    if (dst->version == NULL) {
        dst->version = src->version;
        dst->cipher = src->cipher;
    }
}

void lg_tls_stats_record(struct lg_tls_stats *s, const struct lg_tls_conn *c, uint64_t now)
{
    if (lg_tls_resumed(c))
        s->resumed++;
    else
        s->full++;
    hist_record(&s->hs_ns, now - c->start_ns);
    lg_tls_stats_note(s, c);
}

void lg_tls_stats_note(struct lg_tls_stats *s, const struct lg_tls_conn *c)
{
    if (s->version == NULL) {
        s->version = SSL_get_version(c->ssl);
        s->cipher = SSL_get_cipher_name(c->ssl);
    }
}
