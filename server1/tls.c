/*
 * tls.c - see tls.h. The OpenSSL error queue is per thread: it is cleared before every call
 * whose failure is read with SSL_get_error, as OpenSSL asks. A write that could not finish is
 * retried with the same bytes (they stay first in the output buffer, perhaps moved: hence
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER) and at least as many of them.
 */
#include "tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"
#include "metrics.h"
#include "xalloc.h"

#define S1_TLS_RECORD 16384 /* the most one SSL_write takes: one full record */

/* Mozilla "intermediate" (v5.7), TLS 1.2 part; TLS 1.3 keeps OpenSSL's default suites. */
static const char s1_tls_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
static const char s1_tls_groups[] = "X25519:prime256v1:secp384r1";
static const unsigned char s1_tls_alpn[] = "\x08http/1.1";

/* The last OpenSSL error of this thread as text, "" if none; the queue is cleared. */
static const char *ossl_reason(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

/*
 * Before an SSL call whose failure is read with SSL_get_error: the thread's error queue empty,
 * as OpenSSL asks. Looked at first, since it almost always is: ERR_clear_error resets all 16
 * slots of the queue (837 instructions in OpenSSL 3.0, callgrind), ERR_peek_error reads it.
 */
static inline void clear_errors(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

/* ALPN: http/1.1 if the client offers it; else no protocol, and the handshake goes on. */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    unsigned char *sel;

    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto(&sel, outlen, s1_tls_alpn, sizeof(s1_tls_alpn) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

/* An encrypted key is refused rather than asked for on a terminal. */
static int no_password(char *buf, int size, int rwflag, void *arg)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)arg;
    return 0;
}

/* The file can be opened for reading: -1 with "FLAG 'FILE': cannot open: why" in err. */
static int check_readable(const char *flag, const char *path, char *err)
{
    char ebuf[128];
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(err, S1_TLS_ERR_LEN, "%s '%s': cannot open: %s", flag, path,
                 strerror_r(errno, ebuf, sizeof(ebuf)));
        return -1;
    }
    fclose(f);
    return 0;
}

/* t (an ASN1_TIME) as text ("Jan  1 00:00:00 2020 GMT") into buf. */
static const char *time_text(const ASN1_TIME *t, char *buf, size_t cap)
{
    BIO *b = BIO_new(BIO_s_mem());
    int n = 0;

    buf[0] = '\0';
    if (b != NULL && ASN1_TIME_print(b, t) == 1)
        n = BIO_read(b, buf, (int)cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    BIO_free(b);
    return buf;
}

/*
 * Whether this kernel can take TLS records (the "tls" TCP ULP), asked once: the list of ULPs
 * registered, and if "tls" is not in it, one TCP_ULP on a spare socket, which loads the module
 * where it exists and the process may, and the list again. Without it SSL_OP_ENABLE_KTLS would
 * cost every handshake two setsockopt(2)s that fail (TCP_ULP: ENOENT, TLS_TX: ENOPROTOOPT).
 */
static bool ulp_listed(void)
{
    char list[256];
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "re");
    size_t n;
    bool found = false;

    if (f == NULL)
        return false;
    n = fread(list, 1, sizeof(list) - 1, f);
    fclose(f);
    list[n] = '\0';
    for (char *sp, *w = strtok_r(list, " \n", &sp); w != NULL && !found;
         w = strtok_r(NULL, " \n", &sp))
        found = strcmp(w, "tls") == 0;
    return found;
}

static bool kernel_has_ktls(void)
{
    static int known = -1; /* main thread only: at start and on SIGHUP */
    int fd;

    if (known >= 0)
        return known == 1;
    if (!ulp_listed() && (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
        (void)setsockopt(fd, SOL_TCP, TCP_ULP, "tls", 3); /* (fails: not connected) */
        close(fd);
    }
    known = ulp_listed() ? 1 : 0;
    log_info("tls: kTLS %s", known ? "available: the kernel's tls ULP is registered"
                                    : "not available: this kernel has no tls ULP, OpenSSL "
                                      "encrypts in user space");
    return known == 1;
}

/* The leaf in ctx is valid now: -1 with the reason in err. */
static int check_validity(SSL_CTX *ctx, const char *cert_file, char *err)
{
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    char when[64];

    if (leaf == NULL) {
        snprintf(err, S1_TLS_ERR_LEN, "--tls-cert '%s': no certificate", cert_file);
        return -1;
    }
    if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
        snprintf(err, S1_TLS_ERR_LEN, "--tls-cert '%s': the certificate expired (notAfter %s)",
                 cert_file, time_text(X509_get0_notAfter(leaf), when, sizeof(when)));
        return -1;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
        snprintf(err, S1_TLS_ERR_LEN,
                 "--tls-cert '%s': the certificate is not valid yet (notBefore %s)", cert_file,
                 time_text(X509_get0_notBefore(leaf), when, sizeof(when)));
        return -1;
    }
    return 0;
}

struct ssl_ctx_st *s1_tls_ctx_new(const char *cert_file, const char *key_file, char *err)
{
    char why[256];
    SSL_CTX *ctx;

    if (check_readable("--tls-cert", cert_file, err) < 0 ||
        check_readable("--tls-key", key_file, err) < 0)
        return NULL;
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, S1_TLS_ERR_LEN, "cannot create the TLS context: %s",
                 ossl_reason(why, sizeof(why)));
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, s1_tls_ciphers) != 1 ||
        SSL_CTX_set1_groups_list(ctx, s1_tls_groups) != 1 || SSL_CTX_set_dh_auto(ctx, 1) != 1 ||
        SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"server1", 7) != 1) {
        snprintf(err, S1_TLS_ERR_LEN, "cannot set up the TLS context: %s",
                 ossl_reason(why, sizeof(why)));
        goto err_free;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (kernel_has_ktls())
        SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* a record in one read, not a 5-byte header and then its body: half the read(2)s of a
     * keep-alive request (tls_pending then asks SSL_has_pending, which sees those bytes) */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(ctx, S1_TLS_SESSION_CACHE);
    SSL_CTX_set_timeout(ctx, S1_TLS_SESSION_TIMEOUT_S);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
    SSL_CTX_set_default_passwd_cb(ctx, no_password);

    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(err, S1_TLS_ERR_LEN, "--tls-cert '%s': no usable PEM certificate (%s)",
                 cert_file, ossl_reason(why, sizeof(why)));
        goto err_free;
    }
    if (check_validity(ctx, cert_file, err) < 0)
        goto err_free;
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        /* (a key that does not match the certificate fails here too) */
        unsigned long e = ERR_peek_last_error();
        ossl_reason(why, sizeof(why));
        if (ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
            snprintf(err, S1_TLS_ERR_LEN,
                     "--tls-key '%s' does not match the certificate in --tls-cert '%s'",
                     key_file, cert_file);
        else
            snprintf(err, S1_TLS_ERR_LEN, "--tls-key '%s': no usable PEM private key (%s)",
                     key_file, why);
        goto err_free;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        snprintf(err, S1_TLS_ERR_LEN,
                 "--tls-key '%s' does not match the certificate in --tls-cert '%s'", key_file,
                 cert_file);
        goto err_free;
    }
    return ctx;
err_free:
    SSL_CTX_free(ctx);
    return NULL;
}

void s1_tls_ctx_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

/* ---- the server's state: the context in use, the ticket keys ---- */

struct ticket_key {
    unsigned char name[16]; /* sent in the clear in the ticket: which key sealed it */
    unsigned char aes[32];  /* AES-256-CBC */
    unsigned char hmac[32]; /* HMAC-SHA256 */
};

struct s1_tls {
    const char *cert_file;   /* --tls-cert, read again on SIGHUP */
    const char *key_file;    /* --tls-key, the same */
    /* the two locks are never held together */
    pthread_rwlock_t ctx_lock; /* ctx: workers shared around SSL_new, main exclusive to swap */
    SSL_CTX *ctx;              /* the context new connections get */
    pthread_rwlock_t keys_lock; /* keys, nkeys: handshakes shared, main exclusive to rotate */
    struct ticket_key keys[S1_TLS_TICKET_KEYS]; /* [0] the newest */
    unsigned nkeys;                             /* 1..S1_TLS_TICKET_KEYS in use */
    /* main only */
    uint64_t rotate_ns;      /* --tls-ticket-rotate; 0: never */
    uint64_t last_rotate_ns; /* 0: not yet (the first tick starts the period) */
};

/*
 * OpenSSL's ticket callback (any worker, within a handshake): enc, the key to seal a new ticket
 * (the newest); else the one named (1: the newest; 2: an older one, the ticket is renewed; 0:
 * none in the ring, a full handshake). -1 on an OpenSSL failure. Over TLS 1.3 a resumption
 * always gets a new ticket (2), as OpenSSL does with its own keys: clients use a 1.3 ticket
 * once (RFC 8446 C.4), and one given none does a full handshake the next time.
 */
static int on_ticket_key(SSL *ssl, unsigned char name[16], unsigned char *iv,
                         EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
    struct s1_tls *tls = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    struct ticket_key k;
    unsigned i = 0;
    bool found;
    int rc = -1;

    pthread_rwlock_rdlock(&tls->keys_lock);
    if (!enc) {
        while (i < tls->nkeys && memcmp(name, tls->keys[i].name, sizeof(k.name)) != 0)
            i++;
    }
    found = i < tls->nkeys; /* (to seal: always, nkeys >= 1) */
    if (found)
        k = tls->keys[i];
    pthread_rwlock_unlock(&tls->keys_lock);
    if (!found)
        return 0;

    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k.hmac, sizeof(k.hmac)),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (enc) {
        memcpy(name, k.name, sizeof(k.name));
        if (RAND_bytes(iv, 16) == 1 &&
            EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes, iv) == 1 &&
            EVP_MAC_CTX_set_params(hctx, params) == 1)
            rc = 1;
    } else if (EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes, iv) == 1 &&
               EVP_MAC_CTX_set_params(hctx, params) == 1) {
        rc = i == 0 && SSL_version(ssl) != TLS1_3_VERSION ? 1 : 2;
    }
    OPENSSL_cleanse(&k, sizeof(k));
    return rc;
}

/* A new key from RAND_bytes: -1 if it failed. */
static int new_ticket_key(struct ticket_key *k)
{
    if (RAND_bytes((unsigned char *)k, sizeof(*k)) != 1) {
        OPENSSL_cleanse(k, sizeof(*k));
        ERR_clear_error();
        return -1;
    }
    return 0;
}

/* ctx takes its tickets from tls's ring. -1 with the reason in err. */
static int use_ring(struct s1_tls *tls, SSL_CTX *ctx, char *err)
{
    char why[256];

    if (SSL_CTX_set_app_data(ctx, tls) != 1 ||
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket_key) != 1) {
        snprintf(err, S1_TLS_ERR_LEN, "cannot set up session tickets: %s",
                 ossl_reason(why, sizeof(why)));
        return -1;
    }
    return 0;
}

struct s1_tls *s1_tls_new(const char *cert_file, const char *key_file, uint64_t rotate_ns,
                          char *err)
{
    struct s1_tls *tls = xcalloc(1, sizeof(*tls));

    tls->cert_file = cert_file;
    tls->key_file = key_file;
    tls->rotate_ns = rotate_ns;
    pthread_rwlock_init(&tls->ctx_lock, NULL);
    pthread_rwlock_init(&tls->keys_lock, NULL);
    if (new_ticket_key(&tls->keys[0]) < 0) {
        snprintf(err, S1_TLS_ERR_LEN, "cannot make a session-ticket key: RAND_bytes failed");
        s1_tls_free(tls);
        return NULL;
    }
    tls->nkeys = 1;
    tls->ctx = s1_tls_ctx_new(cert_file, key_file, err);
    if (tls->ctx == NULL || use_ring(tls, tls->ctx, err) < 0) {
        s1_tls_free(tls);
        return NULL;
    }
    return tls;
}

void s1_tls_free(struct s1_tls *tls)
{
    if (tls == NULL)
        return;
    SSL_CTX_free(tls->ctx);
    OPENSSL_cleanse(tls->keys, sizeof(tls->keys));
    pthread_rwlock_destroy(&tls->ctx_lock);
    pthread_rwlock_destroy(&tls->keys_lock);
    free(tls);
}

void s1_tls_describe(struct s1_tls *tls, char *info)
{
    X509 *leaf;
    BIO *b = BIO_new(BIO_s_mem());
    char when[64];
    int n = 0;

    info[0] = '\0';
    pthread_rwlock_rdlock(&tls->ctx_lock); /* (main is the only writer: for the form's sake) */
    leaf = SSL_CTX_get0_certificate(tls->ctx);
    if (b != NULL && leaf != NULL &&
        X509_NAME_print_ex(b, X509_get_subject_name(leaf), 0, XN_FLAG_RFC2253) >= 0)
        n = BIO_read(b, info, S1_TLS_INFO_LEN - 80);
    info[n > 0 ? n : 0] = '\0';
    if (leaf != NULL)
        snprintf(info + strlen(info), 80, ", not after %s",
                 time_text(X509_get0_notAfter(leaf), when, sizeof(when)));
    pthread_rwlock_unlock(&tls->ctx_lock);
    BIO_free(b);
    ERR_clear_error();
}

int s1_tls_reload(struct s1_tls *tls, char *info, char *err)
{
    SSL_CTX *ctx = s1_tls_ctx_new(tls->cert_file, tls->key_file, err);
    SSL_CTX *old;

    if (ctx == NULL)
        return -1;
    if (use_ring(tls, ctx, err) < 0) {
        SSL_CTX_free(ctx);
        return -1;
    }
    pthread_rwlock_wrlock(&tls->ctx_lock);
    old = tls->ctx;
    tls->ctx = ctx;
    pthread_rwlock_unlock(&tls->ctx_lock);
    SSL_CTX_free(old); /* (the SSLs made from it hold references of their own) */
    s1_tls_describe(tls, info);
    return 0;
}

int s1_tls_tick(struct s1_tls *tls, uint64_t now_ns)
{
    struct ticket_key k;

    if (tls->rotate_ns == 0)
        return 0;
    if (tls->last_rotate_ns == 0)
        tls->last_rotate_ns = now_ns;
    if (now_ns - tls->last_rotate_ns < tls->rotate_ns)
        return 0;
    tls->last_rotate_ns = now_ns;
    if (new_ticket_key(&k) < 0)
        return -1;
    pthread_rwlock_wrlock(&tls->keys_lock);
    /* the oldest, if the ring is full, is overwritten by the one before it: wiped */
    memmove(&tls->keys[1], &tls->keys[0], (S1_TLS_TICKET_KEYS - 1) * sizeof(k));
    tls->keys[0] = k;
    if (tls->nkeys < S1_TLS_TICKET_KEYS)
        tls->nkeys++;
    pthread_rwlock_unlock(&tls->keys_lock);
    OPENSSL_cleanse(&k, sizeof(k));
    return 1;
}

/* ---- the transport ---- */

/* Once the handshake has finished: counts it, notes kTLS. */
static void note_handshake(struct s1_transport *t)
{
    if (t->handshake_done || !SSL_is_init_finished(t->ssl))
        return;
    t->handshake_done = true;
    metrics_add(&t->metrics->tls_handshakes, 1);
    if (SSL_session_reused(t->ssl) == 1)
        metrics_add(&t->metrics->tls_resumed, 1);
    if (BIO_get_ktls_send(SSL_get_wbio(t->ssl)) == 1) {
        t->ktls_send = true;
        t->sendfile = true;
        metrics_add(&t->metrics->tls_ktls_send, 1);
    }
    log_debug("fd %d: %s %s%s, kTLS send %s, receive %s", t->fd, SSL_get_version(t->ssl),
              SSL_get_cipher_name(t->ssl), SSL_session_reused(t->ssl) == 1 ? " (resumed)" : "",
              t->ktls_send ? "on" : "off",
              BIO_get_ktls_recv(SSL_get_rbio(t->ssl)) == 1 ? "on" : "off");
}

/* An SSL call that returned rc <= 0: -1 with errno (EAGAIN: wait), or 0 at close_notify. */
static ssize_t io_failed(struct s1_transport *t, int rc, bool reading)
{
    int e = SSL_get_error(t->ssl, rc);
    char why[256];

    note_handshake(t);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        if (reading)
            t->want_write = false;
        else
            t->want_read = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        if (reading)
            t->want_write = true;
        else
            t->want_read = false;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        /* the peer's close_notify: not answered with ours, as nginx does (a client closes
         * right after sending it, and a record it will not read costs both kernels a
         * segment and a reset) */
        t->fatal = true;
        if (reading)
            return 0;
        errno = EPIPE;
        return -1;
    default:
        t->fatal = true;
        log_debug("fd %d: TLS %s failed: %s", t->fd,
                  !t->handshake_done ? "handshake" : reading ? "read" : "write",
                  e == SSL_ERROR_SSL ? ossl_reason(why, sizeof(why)) : "connection error");
        ERR_clear_error();
        errno = ECONNRESET;
        return -1;
    }
}

static ssize_t tls_recv(struct s1_transport *t, void *buf, size_t len)
{
    size_t n;

    clear_errors();
    if (SSL_read_ex(t->ssl, buf, len, &n) == 1) {
        t->want_write = false;
        note_handshake(t);
        return (ssize_t)n;
    }
    return io_failed(t, 0, true);
}

/*
 * Writes p[0..len) as records: bytes written (> 0), or -1 with errno. An SSL_write refused
 * (EAGAIN) sets retry_len to its length, counted from the first byte not reported written,
 * also when records before it went out and their bytes are reported: OpenSSL keeps the refused
 * call's record half sent (and may have sent one in full that it reports only with the retry),
 * and takes the retry only with at least as many of the same bytes. (With a client's
 * max_fragment_length a record is shorter than 16 KiB, so that one call can send some records
 * and be refused on the next.)
 */
static ssize_t write_bytes(struct s1_transport *t, const char *p, size_t len)
{
    size_t done = 0;

    while (done < len) {
        size_t n;
        size_t want = len - done < S1_TLS_RECORD ? len - done : S1_TLS_RECORD;

        clear_errors();
        if (SSL_write_ex(t->ssl, p + done, want, &n) != 1) {
            ssize_t r = io_failed(t, 0, false);
            if (r < 0 && errno == EAGAIN)
                t->retry_len = want;
            /* (what was written is reported; the retry starts at the bytes refused) */
            return done > 0 && r < 0 && errno == EAGAIN ? (ssize_t)done : r;
        }
        t->want_read = false;
        t->retry_len = 0;
        done += n;
    }
    return (ssize_t)done;
}

static ssize_t tls_writev(struct s1_transport *t, const struct iovec *iov, int cnt)
{
    ssize_t total = 0;

    if (t->ktls_send)
        return writev(t->fd, iov, cnt);
    if (cnt == 2 && iov[0].iov_len + iov[1].iov_len <= S1_TLS_RECORD && t->retry_len == 0) {
        /* a small response's head and body in one record and one send, not two */
        char rec[S1_TLS_RECORD];
        size_t len = iov[0].iov_len + iov[1].iov_len;
        memcpy(rec, iov[0].iov_base, iov[0].iov_len);
        memcpy(rec + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
        return write_bytes(t, rec, len); /* (a retry: pulled up whole by tls_write_out) */
    }
    for (int i = 0; i < cnt; i++) {
        ssize_t n = write_bytes(t, iov[i].iov_base, iov[i].iov_len);
        if (n < 0)
            return total > 0 && errno == EAGAIN ? total : -1;
        total += n;
        if ((size_t)n < iov[i].iov_len)
            break;
    }
    return total;
}

/* The output in records: its first extent at a time, at most 16 KiB per SSL_write. */
static int tls_write_out(struct s1_transport *t, struct evbuffer *out, size_t budget)
{
    size_t total = 0;

    if (t->ktls_send)
        return evbuffer_write_atmost(out, t->fd, (ev_ssize_t)budget);
    while (total < budget && evbuffer_get_length(out) > 0) {
        struct evbuffer_iovec v;
        ssize_t n;
        size_t want;

        if (t->retry_len > 0) { /* the bytes a write left pending, contiguous again */
            if (evbuffer_pullup(out, (ev_ssize_t)t->retry_len) == NULL)
                return -1;
        }
        if (evbuffer_peek(out, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
            break;
        want = v.iov_len < S1_TLS_RECORD ? v.iov_len : S1_TLS_RECORD;
        if (t->retry_len > want)
            want = t->retry_len;
        n = write_bytes(t, v.iov_base, want);
        if (n < 0)
            return total > 0 && errno == EAGAIN ? (int)total : -1;
        evbuffer_drain(out, (size_t)n);
        total += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    return (int)total;
}

static bool tls_pending(const struct s1_transport *t)
{
    return SSL_has_pending(t->ssl) == 1;
}

/*
 * close_notify once, not waited for; none after a TLS error, after the peer's own, or before the
 * handshake ended.
 */
static void send_close_notify(struct s1_transport *t)
{
    if (t->fatal || !t->handshake_done)
        return;
    ERR_clear_error();
    if (SSL_shutdown(t->ssl) < 0)
        ERR_clear_error();
    t->fatal = true; /* (sent, or it cannot be: not again) */
}

static int tls_shutdown(struct s1_transport *t)
{
    send_close_notify(t);
    return shutdown(t->fd, SHUT_WR);
}

static void tls_close(struct s1_transport *t)
{
    if (!t->handshake_done)
        metrics_add(&t->metrics->tls_handshakes_failed, 1);
    send_close_notify(t);
    SSL_free(t->ssl);
    t->ssl = NULL;
    if (close(t->fd) < 0)
        log_debug("close fd %d: %d", t->fd, errno);
    t->fd = -1;
}

static const struct s1_transport_ops tls_ops = {
    .recv = tls_recv,
    .writev = tls_writev,
    .write_out = tls_write_out,
    .pending = tls_pending,
    .shutdown = tls_shutdown,
    .close = tls_close,
};

int s1_tls_attach(struct s1_transport *t, struct s1_tls *tls, int fd, struct metrics *metrics)
{
    SSL *ssl;

    pthread_rwlock_rdlock(&tls->ctx_lock);
    ssl = SSL_new(tls->ctx); /* (takes a reference to the context: a reload may drop main's) */
    pthread_rwlock_unlock(&tls->ctx_lock);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return -1;
    }
    SSL_set_accept_state(ssl);
    *t = (struct s1_transport){.ops = &tls_ops, .fd = fd, .ssl = ssl, .metrics = metrics};
    return 0;
}
