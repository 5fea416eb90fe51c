/*
 * transport.c - see transport.h: the plain transport, the syscalls as they are (no copy, no
 * extra call: file segments of the output go out with sendfile).
 */
#include "transport.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "log.h"

static ssize_t plain_recv(struct s1_transport *t, void *buf, size_t len)
{
    return recv(t->fd, buf, len, 0);
}

static ssize_t plain_writev(struct s1_transport *t, const struct iovec *iov, int cnt)
{
    return writev(t->fd, iov, cnt);
}

static int plain_write_out(struct s1_transport *t, struct evbuffer *out, size_t budget)
{
    return evbuffer_write_atmost(out, t->fd, (ev_ssize_t)budget);
}

static bool plain_pending(const struct s1_transport *t)
{
    (void)t;
    return false;
}

static int plain_shutdown(struct s1_transport *t)
{
    return shutdown(t->fd, SHUT_WR);
}

static void plain_close(struct s1_transport *t)
{
    if (close(t->fd) < 0)
        log_debug("close fd %d: %d", t->fd, errno);
    t->fd = -1;
}

static const struct s1_transport_ops plain_ops = {
    .recv = plain_recv,
    .writev = plain_writev,
    .write_out = plain_write_out,
    .pending = plain_pending,
    .shutdown = plain_shutdown,
    .close = plain_close,
};

void s1_transport_plain(struct s1_transport *t, int fd)
{
    *t = (struct s1_transport){.ops = &plain_ops, .fd = fd, .sendfile = true};
}
