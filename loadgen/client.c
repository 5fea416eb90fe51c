/*
 * client.c - see client.h. The per-request path makes no allocation and no copy of the body:
 * one send() for the request, usually one recv() for a small response.
 */
#include "client.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "tls.h"
#include "xalloc.h"

#define LG_TRUNC_MAX (1u << 30) /* bytes discarded per recv(MSG_TRUNC) call at most */

/*
 * recv(MSG_TRUNC) on TCP discards bytes in the kernel without writing the buffer, but the
 * recv interceptors of ASan and TSan assume it was written and report overflows and races.
 * Sanitizer builds therefore discard by reading into the connection's own buffer.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static const bool lg_trunc_ok = false;
#else
static const bool lg_trunc_ok = true;
#endif

void lg_conn_init(struct lg_conn *c, unsigned user)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->user = user;
    c->err = LG_ERR_NONE;
    c->err_errno = 0;
    c->remaining = UINT64_MAX;
    c->rbuf = xmalloc(LG_CONN_BUF);
}

void lg_conn_use_tls(struct lg_conn *c, struct ssl_ctx_st *ctx, const struct lg_target *t)
{
    c->tls.ctx = ctx;
    c->tls.host = t->host;
    c->tls.host_is_ip = t->host_is_ip;
}

void lg_conn_release(struct lg_conn *c)
{
    lg_conn_close(c);
    lg_tls_forget(&c->tls);
    for (int i = 0; i < LG_REQ_TYPES; i++)
        lg_reqbuf_release(&c->req[i]);
    lg_namebuf_release(&c->named);
    free(c->rbuf);
    c->rbuf = NULL;
}

void lg_conn_close(struct lg_conn *c)
{
    lg_tls_close(&c->tls);
    if (c->fd >= 0) {
        if (close(c->fd) < 0)
            log_debug("close: errno %d", errno);
        c->fd = -1;
    }
    c->ev_mask = 0;
    c->rlen = 0;
}

/* The TCP connection is up: send, or first shake hands. */
static int connected(struct lg_conn *c)
{
    if (c->tls.ctx == NULL) {
        c->state = LG_CS_SENDING;
        return 0;
    }
    if (lg_tls_start(&c->tls, c->fd, clock_now_ns()) < 0) {
        lg_conn_close(c);
        c->err = LG_ERR_CONNECT;
        c->err_errno = 0;
        return -1;
    }
    c->state = LG_CS_HANDSHAKE;
    return 0;
}

int lg_conn_connect(struct lg_conn *c, const struct lg_target *t)
{
    int one = 1;
    int saved;
    int fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        goto err;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
        close(fd);
        goto err;
    }
    c->fd = fd;
    c->rlen = 0;
    if (connect(fd, (const struct sockaddr *)&t->addr, t->addrlen) == 0)
        return connected(c);
    if (errno == EINPROGRESS) {
        c->state = LG_CS_CONNECTING;
        return 0;
    }
    saved = errno;
    lg_conn_close(c);
    errno = saved;
err:
    c->err = LG_ERR_CONNECT;
    c->err_errno = errno;
    return -1;
}

int lg_conn_connect_result(struct lg_conn *c)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
        c->err = LG_ERR_CONNECT;
        c->err_errno = soerr != 0 ? soerr : errno;
        return -1;
    }
    return connected(c);
}

enum lg_io lg_conn_handshake(struct lg_conn *c)
{
    int rc = lg_tls_handshake(&c->tls);

    if (rc < 0) {
        c->err = LG_ERR_CONNECT; /* lg_conn_kind: tls_handshake, from the state */
        c->err_errno = 0;
        return LG_IO_ERROR;
    }
    if (rc == 0)
        return LG_IO_AGAIN;
    c->state = LG_CS_SENDING;
    return LG_IO_DONE;
}

void lg_conn_begin(struct lg_conn *c, int type, uint64_t start_ns)
{
    struct lg_reqbuf *own = &c->req[type];
    const struct lg_reqbuf *r = type == LG_REQ_CUSTOM ? c->custom : own;

    if (r == own && own->slot_len > 0) { /* (a custom request has no slot) */
        lg_reqbuf_set_slot(own, c->slot_next);
        c->slot_next += c->slot_step;
    }
    c->type = type;
    c->start_ns = start_ns;
    c->send_ptr = c->in_named ? c->named.buf : r->buf;
    c->send_left = c->in_named ? c->named.len : r->len;
    c->body_ptr = r->body;
    c->body_left = r->body != NULL ? r->body_len : 0;
    c->err = LG_ERR_NONE;
    c->err_errno = 0;
    c->rlen = 0;
    lg_http_reset(&c->http, r->head);
}

/* Consumes n sent bytes: first from the head, then from the body. */
static void sent(struct lg_conn *c, size_t n)
{
    size_t h = n < c->send_left ? n : c->send_left;

    c->send_ptr += h;
    c->send_left -= h;
    n -= h;
    c->body_ptr += n;
    c->body_left -= n;
}

enum lg_io lg_conn_send(struct lg_conn *c)
{
    /* head and body in one sendmsg; a partial write (a body larger than the socket buffer)
     * resumes where it stopped at the next EPOLLOUT */
    while (c->send_left + c->body_left > 0) {
        struct iovec iov[2];
        struct msghdr msg = {.msg_iov = iov};
        ssize_t n;

        if (c->send_left > 0) {
            iov[msg.msg_iovlen].iov_base = (void *)c->send_ptr;
            iov[msg.msg_iovlen++].iov_len = c->send_left;
        }
        if (c->body_left > 0) {
            iov[msg.msg_iovlen].iov_base = (void *)c->body_ptr;
            iov[msg.msg_iovlen++].iov_len = c->body_left;
        }
        if (c->tls.ssl != NULL) /* head, then body: TLS has no gather write */
            n = lg_tls_write(&c->tls, iov[0].iov_base, iov[0].iov_len);
        else
            n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return LG_IO_AGAIN;
            if (errno == EINTR)
                continue;
            c->err = LG_ERR_SHORT; /* reset or closed by the server */
            c->err_errno = errno;
            return LG_IO_ERROR;
        }
        sent(c, (size_t)n);
    }
    c->state = LG_CS_WAITING;
    return LG_IO_DONE;
}

static enum lg_io parsed(struct lg_conn *c, enum lg_http_result r)
{
    if (r == LG_HTTP_ERR) {
        c->err = LG_ERR_INVALID;
        return LG_IO_ERROR;
    }
    if (r == LG_HTTP_DONE) {
        if (c->rlen > 0) { /* bytes nobody asked for: we never pipeline */
            c->http.why = "bytes after the response";
            c->err = LG_ERR_INVALID;
            return LG_IO_ERROR;
        }
        c->state = LG_CS_IDLE;
        return LG_IO_DONE;
    }
    return LG_IO_AGAIN;
}

/* recv(2), or its TLS equivalent. */
static ssize_t rd(struct lg_conn *c, void *buf, size_t len, int flags)
{
    if (c->tls.ssl != NULL)
        return lg_tls_read(&c->tls, buf, len);
    return recv(c->fd, buf, len, flags);
}

/* One read and what it completes; *got tells whether bytes came. */
static enum lg_io recv_step(struct lg_conn *c, char *scratch, size_t cap, bool copy_body,
                            bool *got)
{
    uint64_t want = lg_http_body_wanted(&c->http);
    ssize_t n;

    *got = false;
    if (want > 0 && c->rlen == 0) {
        /* In the body with nothing buffered: take body bytes only, never past the response. */
        if (copy_body) {
            size_t ask = want < cap ? (size_t)want : cap;
            n = rd(c, scratch, ask, 0);
        } else if (lg_trunc_ok && c->tls.ssl == NULL) {
            size_t ask = want < LG_TRUNC_MAX ? (size_t)want : LG_TRUNC_MAX;
            n = recv(c->fd, c->rbuf, ask, MSG_TRUNC); /* discarded by the kernel, not copied */
        } else {
            size_t ask = want < LG_CONN_BUF ? (size_t)want : LG_CONN_BUF;
            n = rd(c, c->rbuf, ask, 0);
        }
        *got = n > 0;
        if (n > 0)
            return parsed(c, lg_http_skip(&c->http, (uint64_t)n));
    } else {
        n = rd(c, c->rbuf + c->rlen, LG_CONN_BUF - c->rlen, 0);
        *got = n > 0;
        if (n > 0) {
            size_t used = 0;
            enum lg_http_result r;

            c->rlen += (size_t)n;
            r = lg_http_parse(&c->http, c->rbuf, c->rlen, &used);
            c->rlen -= used;
            if (c->rlen > 0 && used > 0)
                memmove(c->rbuf, c->rbuf + used, c->rlen);
            if (r == LG_HTTP_MORE && c->rlen == LG_CONN_BUF) {
                c->http.why = "response head too large";
                r = LG_HTTP_ERR;
            }
            return parsed(c, r);
        }
    }
    if (n == 0) {
        if (lg_http_eof(&c->http) == LG_HTTP_DONE) {
            c->rlen = 0;
            c->http.keep_alive = false;
            return parsed(c, LG_HTTP_DONE);
        }
        c->err = LG_ERR_SHORT;
        c->err_errno = 0; /* closed */
        return LG_IO_ERROR;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return LG_IO_AGAIN;
    c->err = LG_ERR_SHORT;
    c->err_errno = errno;
    return LG_IO_ERROR;
}

enum lg_io lg_conn_recv(struct lg_conn *c, char *scratch, size_t cap, bool copy_body)
{
    bool got;
    enum lg_io r = recv_step(c, scratch, cap, copy_body, &got);

    /* OpenSSL may hold decrypted bytes that epoll cannot see: read until it wants more */
    while (r == LG_IO_AGAIN && got && c->tls.ssl != NULL)
        r = recv_step(c, scratch, cap, copy_body, &got);
    return r;
}

enum lg_err lg_conn_check(const struct lg_conn *c, const struct lg_check *chk)
{
    int st = c->http.status;
    int want = chk->expect_status[c->type];
    int alt = chk->expect_alt[c->type];
    bool ok = want == LG_EXPECT_2XX_3XX ? st >= 200 && st < 400
                                        : st == want || (alt != 0 && st == alt);

    if (!ok) {
        if (st >= 400 && st < 500)
            return LG_ERR_STATUS_4XX;
        if (st >= 500 && st < 600)
            return LG_ERR_STATUS_5XX;
        return LG_ERR_STATUS_OTHER;
    }
    if (c->type == LG_REQ_GET && chk->has_length && c->http.body_bytes != chk->length)
        return LG_ERR_INVALID;
    return LG_ERR_NONE;
}

enum lg_kind lg_conn_kind(const struct lg_conn *c, enum lg_err e)
{
    switch (e) {
    case LG_ERR_CONNECT:
        if (c->state == LG_CS_HANDSHAKE)
            return LG_KIND_TLS;
        return c->err_errno == ECONNREFUSED ? LG_KIND_REFUSED : LG_KIND_CONNECT;
    case LG_ERR_TIMEOUT:
        return LG_KIND_TIMEOUT;
    case LG_ERR_SHORT:
        return c->err_errno == ECONNRESET || c->err_errno == EPIPE ? LG_KIND_RESET
                                                                    : LG_KIND_SHORT;
    case LG_ERR_INVALID:
        /* a parse error sets c->err; a length that is not --expect-length does not */
        return c->err == LG_ERR_INVALID ? LG_KIND_INVALID : LG_KIND_LENGTH;
    default:
        return LG_KIND_BAD_STATUS; /* the status classes: lg_errtab_add takes the status */
    }
}
