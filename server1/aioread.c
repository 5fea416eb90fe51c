/* aioread.c - see aioread.h. */
#include "aioread.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

#define REAP_BATCH 64 /* completions taken per io_getevents */

/* glibc has no wrappers for the native AIO calls */
static long sys_io_setup(unsigned nr, aio_context_t *ctx)
{
    return syscall(SYS_io_setup, nr, ctx);
}

static long sys_io_destroy(aio_context_t ctx)
{
    return syscall(SYS_io_destroy, ctx);
}

static long sys_io_submit(aio_context_t ctx, long n, struct iocb **cbs)
{
    return syscall(SYS_io_submit, ctx, n, cbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *ev,
                             struct timespec *timeout)
{
    return syscall(SYS_io_getevents, ctx, min, max, ev, timeout);
}

int aioread_init(struct aioread *a, unsigned depth)
{
    memset(a, 0, sizeof(*a));
    a->efd = -1;
    if (depth == 0)
        return 0;
    if (depth > AIOREAD_DEPTH_MAX)
        return -EINVAL;
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->efd < 0)
        return -errno;
    if (sys_io_setup(depth, &a->ctx) < 0) {
        int e = errno;
        close(a->efd);
        a->efd = -1;
        a->ctx = 0;
        return -e;
    }
    a->depth = depth;
    return 0;
}

bool aioread_on(const struct aioread *a)
{
    return a->ctx != 0;
}

bool aioread_full(const struct aioread *a)
{
    return a->ctx == 0 || a->inflight >= a->depth;
}

/* Calls done for what completed: waiting for at least min of them (all in flight, at the end) */
static unsigned reap(struct aioread *a, long min)
{
    struct io_event ev[REAP_BATCH];
    unsigned n = 0;

    while (a->inflight > 0) {
        long want = min < REAP_BATCH ? min : REAP_BATCH;
        struct timespec none = {0, 0};
        long got = sys_io_getevents(a->ctx, want, REAP_BATCH, ev, want > 0 ? NULL : &none);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            log_error("io_getevents: %s", strerror(errno));
            break;
        }
        if (got == 0)
            break;
        for (long i = 0; i < got; i++) {
            struct aioread_op *op = (struct aioread_op *)(uintptr_t)ev[i].data;
            a->inflight--;
            n++;
            op->done(op, (long)ev[i].res);
        }
        min -= got < min ? got : min;
    }
    return n;
}

unsigned aioread_reap(struct aioread *a)
{
    uint64_t v;

    if (a->efd >= 0 && read(a->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_debug("aioread eventfd read: %d", errno);
    return reap(a, 0);
}

static void on_complete(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    aioread_reap(arg);
}

int aioread_attach(struct aioread *a, struct event_base *base)
{
    if (a->ctx == 0)
        return 0;
    if (event_assign(&a->ev, base, a->efd, EV_READ | EV_PERSIST, on_complete, a) < 0 ||
        event_add(&a->ev, NULL) < 0)
        return -1;
    a->attached = true;
    return 0;
}

int aioread_submit(struct aioread *a, struct aioread_op *op, int fd, void *buf, size_t len,
                   uint64_t off)
{
    struct iocb *cbs[1] = {&op->cb};
    long rc;

    if (aioread_full(a))
        return -EAGAIN;
    memset(&op->cb, 0, sizeof(op->cb));
    op->cb.aio_data = (uint64_t)(uintptr_t)op;
    op->cb.aio_lio_opcode = IOCB_CMD_PREAD;
    op->cb.aio_fildes = (uint32_t)fd;
    op->cb.aio_buf = (uint64_t)(uintptr_t)buf;
    op->cb.aio_nbytes = len;
    op->cb.aio_offset = (int64_t)off;
    op->cb.aio_flags = IOCB_FLAG_RESFD;
    op->cb.aio_resfd = (uint32_t)a->efd;
    do {
        rc = sys_io_submit(a->ctx, 1, cbs);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -errno;
    if (rc != 1)
        return -EAGAIN;
    a->inflight++;
    a->submitted++;
    return 0;
}

void aioread_release(struct aioread *a)
{
    if (a->ctx != 0) {
        reap(a, (long)a->inflight); /* the kernel writes into their buffers until then */
        sys_io_destroy(a->ctx);
        a->ctx = 0;
    }
    if (a->attached)
        event_del(&a->ev);
    a->attached = false;
    if (a->efd >= 0)
        close(a->efd);
    a->efd = -1;
}
