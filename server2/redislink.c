/*
 * redislink.c - see redislink.h.
 */
#include "redislink.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define READ_CHUNK 16384

static void set_err(struct redislink *l, int type, const char *what)
{
    l->err = type;
    snprintf(l->errstr, sizeof(l->errstr), "%s", what);
}

/* The first queued OpenSSL error, or what. */
static void tls_reason(char *out, size_t cap, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[160];

    if (e == 0) {
        snprintf(out, cap, "%s", what);
    } else {
        ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(out, cap, "%s: %s", what, buf);
    }
    ERR_clear_error();
}

struct ssl_ctx_st *redislink_tls_context(const char *ca_file, const char *cert_file,
                                         const char *key_file, char *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (ctx == NULL) {
        tls_reason(err, REDISLINK_TLS_ERR_LEN, "cannot make a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1
                        : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        char what[REDISLINK_TLS_ERR_LEN];
        snprintf(what, sizeof(what), "cannot load the CA certificates from %.160s",
                 ca_file != NULL ? ca_file : "the system's store");
        tls_reason(err, REDISLINK_TLS_ERR_LEN, what);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (cert_file != NULL) {
        char what[REDISLINK_TLS_ERR_LEN];
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
            snprintf(what, sizeof(what), "cannot load the client certificate %.160s", cert_file);
            tls_reason(err, REDISLINK_TLS_ERR_LEN, what);
            SSL_CTX_free(ctx);
            return NULL;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(what, sizeof(what), "the client key %.160s cannot be loaded or does not "
                     "match the certificate", key_file);
            tls_reason(err, REDISLINK_TLS_ERR_LEN, what);
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

void redislink_tls_context_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

static int set_timeout(int fd, unsigned ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
                   setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0
               ? -1
               : 0;
}

/* A non-blocking connect of fd to sa, waited for up to ms; 0, or -1 with errno. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, unsigned ms)
{
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    int n;

    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -1;
    do {
        n = poll(&pf, 1, (int)ms);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return -1;
    if (soerr != 0) {
        errno = soerr;
        return -1;
    }
    return 0;
}

/* A connected blocking socket to host:port or path; -1 with err. */
static int open_socket(const char *host, int port, const char *path, unsigned ms, char *err)
{
    if (path != NULL) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        int fd;
        if (strlen(path) >= sizeof(sun.sun_path)) {
            snprintf(err, REDISLINK_ERRSTR_LEN, "socket path too long");
            return -1;
        }
        memcpy(sun.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect_within(fd, (struct sockaddr *)&sun, sizeof(sun), ms) < 0 ||
            fcntl(fd, F_SETFL, 0) < 0) {
            snprintf(err, REDISLINK_ERRSTR_LEN, "%s", strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        return fd;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res, *ai;
    char service[8];
    int fd = -1, rc;

    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, REDISLINK_ERRSTR_LEN, "%s", gai_strerror(rc));
        return -1;
    }
    snprintf(err, REDISLINK_ERRSTR_LEN, "no address");
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int one = 1;
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            snprintf(err, REDISLINK_ERRSTR_LEN, "%s", strerror(errno));
            continue;
        }
        if (connect_within(fd, ai->ai_addr, ai->ai_addrlen, ms) == 0 &&
            fcntl(fd, F_SETFL, 0) == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            break;
        }
        snprintf(err, REDISLINK_ERRSTR_LEN, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* The TLS handshake on l->fd, the certificate checked for host; 0, or -1 with err. */
static int tls_start(struct redislink *l, SSL_CTX *ctx, const char *host, char *err)
{
    unsigned char ip[16];
    long verify;

    l->ssl = SSL_new(ctx);
    if (l->ssl == NULL || SSL_set_fd(l->ssl, l->fd) != 1) {
        tls_reason(err, REDISLINK_ERRSTR_LEN, "TLS");
        return -1;
    }
    if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), host);
    } else {
        SSL_set_tlsext_host_name(l->ssl, host);
        SSL_set1_host(l->ssl, host);
    }
    if (SSL_connect(l->ssl) != 1) {
        verify = SSL_get_verify_result(l->ssl);
        if (verify != X509_V_OK) {
            snprintf(err, REDISLINK_ERRSTR_LEN, "TLS: the server's certificate: %s",
                     X509_verify_cert_error_string(verify));
            ERR_clear_error();
        } else {
            tls_reason(err, REDISLINK_ERRSTR_LEN, "TLS handshake failed");
        }
        return -1;
    }
    return 0;
}

struct redislink *redislink_connect(const char *host, int port, const char *path,
                                    unsigned connect_ms, unsigned io_ms, struct ssl_ctx_st *tls,
                                    char *err)
{
    struct redislink *l = calloc(1, sizeof(*l));

    if (l == NULL || (l->reader = redisReaderCreate()) == NULL) {
        snprintf(err, REDISLINK_ERRSTR_LEN, "out of memory");
        free(l);
        return NULL;
    }
    l->fd = open_socket(host, port, path, connect_ms, err);
    if (l->fd < 0)
        goto fail;
    if (tls != NULL) {
        /* the handshake within the connect's bound, then the link's */
        if (set_timeout(l->fd, connect_ms) < 0 || tls_start(l, tls, host, err) < 0)
            goto fail;
    }
    if (set_timeout(l->fd, io_ms) < 0) {
        snprintf(err, REDISLINK_ERRSTR_LEN, "%s", strerror(errno));
        goto fail;
    }
    return l;
fail:
    redislink_free(l);
    return NULL;
}

void redislink_free(struct redislink *l)
{
    if (l == NULL)
        return;
    if (l->ssl != NULL) {
        if (l->err == 0)
            SSL_shutdown(l->ssl); /* close_notify, not waited for */
        SSL_free(l->ssl);
        ERR_clear_error();
    }
    if (l->fd >= 0)
        close(l->fd);
    if (l->reader != NULL)
        redisReaderFree(l->reader);
    free(l->obuf);
    free(l);
}

static int append_raw(struct redislink *l, const char *cmd, int len)
{
    if (len < 0) {
        set_err(l, REDIS_ERR_OOM, "out of memory");
        return REDIS_ERR;
    }
    if (l->olen + (size_t)len > l->ocap) {
        size_t cap = l->ocap ? l->ocap : 1024;
        char *p;
        while (cap < l->olen + (size_t)len)
            cap *= 2;
        p = realloc(l->obuf, cap);
        if (p == NULL) {
            set_err(l, REDIS_ERR_OOM, "out of memory");
            return REDIS_ERR;
        }
        l->obuf = p;
        l->ocap = cap;
    }
    memcpy(l->obuf + l->olen, cmd, (size_t)len);
    l->olen += (size_t)len;
    return REDIS_OK;
}

static int vappend(struct redislink *l, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    int rc = append_raw(l, cmd, len);

    if (cmd != NULL)
        redisFreeCommand(cmd);
    return rc;
}

int redislink_append(struct redislink *l, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vappend(l, fmt, ap);
    va_end(ap);
    return rc;
}

int redislink_append_argv(struct redislink *l, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    int rc = append_raw(l, cmd, len);

    if (cmd != NULL)
        redisFreeCommand(cmd);
    return rc;
}

/* The error of a failed read or write of n (0: the peer closed), into l. */
static void io_failed(struct redislink *l, long n, int ssl_err)
{
    if (l->ssl != NULL && ssl_err != SSL_ERROR_SYSCALL && ssl_err != SSL_ERROR_ZERO_RETURN &&
        ssl_err != SSL_ERROR_WANT_READ && ssl_err != SSL_ERROR_WANT_WRITE) {
        tls_reason(l->errstr, sizeof(l->errstr), "TLS");
        l->err = REDIS_ERR_IO;
    } else if (n == 0 || ssl_err == SSL_ERROR_ZERO_RETURN) {
        set_err(l, REDIS_ERR_EOF, "Server closed the connection");
    } else {
        /* SO_RCVTIMEO/SO_SNDTIMEO ran out as EAGAIN, as hiredis reports it */
        set_err(l, REDIS_ERR_IO, strerror(errno != 0 ? errno : EIO));
    }
    /* with TLS 1.3 a server that wants a client certificate says so only after the handshake,
     * and its alert is often lost to the reset that follows */
    if (l->ssl != NULL && SSL_get_certificate(l->ssl) == NULL &&
        (l->err == REDIS_ERR_EOF || errno == ECONNRESET))
        snprintf(l->errstr + strlen(l->errstr), sizeof(l->errstr) - strlen(l->errstr),
                 " (TLS without a client certificate: does the server want one?)");
    ERR_clear_error();
}

static int flush_out(struct redislink *l)
{
    size_t off = 0;

    while (off < l->olen) {
        if (l->ssl != NULL) {
            size_t n = 0;
            errno = 0;
            if (SSL_write_ex(l->ssl, l->obuf + off, l->olen - off, &n) != 1) {
                io_failed(l, -1, SSL_get_error(l->ssl, 0));
                return REDIS_ERR;
            }
            off += n;
        } else {
            ssize_t n = send(l->fd, l->obuf + off, l->olen - off, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                io_failed(l, n < 0 ? -1 : 0, 0);
                return REDIS_ERR;
            }
            off += (size_t)n;
        }
    }
    l->olen = 0;
    return REDIS_OK;
}

int redislink_read(struct redislink *l)
{
    char buf[READ_CHUNK];
    size_t got = 0;

    if (l->err != 0)
        return REDIS_ERR;
    if (l->ssl != NULL) {
        errno = 0;
        if (SSL_read_ex(l->ssl, buf, sizeof(buf), &got) != 1) {
            io_failed(l, -1, SSL_get_error(l->ssl, 0));
            return REDIS_ERR;
        }
    } else {
        ssize_t n;
        do {
            n = recv(l->fd, buf, sizeof(buf), 0);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) {
            io_failed(l, n < 0 ? -1 : 0, 0);
            return REDIS_ERR;
        }
        got = (size_t)n;
    }
    if (redisReaderFeed(l->reader, buf, got) != REDIS_OK) {
        set_err(l, l->reader->err, l->reader->errstr);
        return REDIS_ERR;
    }
    return REDIS_OK;
}

int redislink_buffered_reply(struct redislink *l, void **reply)
{
    *reply = NULL;
    if (l->err != 0)
        return REDIS_ERR;
    if (redisReaderGetReply(l->reader, reply) != REDIS_OK) {
        set_err(l, l->reader->err, l->reader->errstr);
        return REDIS_ERR;
    }
    return REDIS_OK;
}

bool redislink_pending(const struct redislink *l)
{
    return l->ssl != NULL && SSL_pending(l->ssl) > 0;
}

int redislink_get_reply(struct redislink *l, void **reply)
{
    *reply = NULL;
    if (redislink_buffered_reply(l, reply) != REDIS_OK)
        return REDIS_ERR;
    if (*reply != NULL)
        return REDIS_OK;
    if (l->olen > 0 && flush_out(l) != REDIS_OK)
        return REDIS_ERR;
    while (*reply == NULL) {
        if (redislink_read(l) != REDIS_OK || redislink_buffered_reply(l, reply) != REDIS_OK)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

redisReply *redislink_command(struct redislink *l, const char *fmt, ...)
{
    void *reply = NULL;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vappend(l, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK || redislink_get_reply(l, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

redisReply *redislink_command_argv(struct redislink *l, int argc, const char **argv,
                                   const size_t *lens)
{
    void *reply = NULL;

    if (redislink_append_argv(l, argc, argv, lens) != REDIS_OK ||
        redislink_get_reply(l, &reply) != REDIS_OK)
        return NULL;
    return reply;
}
