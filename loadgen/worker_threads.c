/*
 * worker_threads.c - the 2017 report's model (--model threads): one thread per user, blocking
 * send/recv on its own keep-alive connection (a new one per request with
 * --new-conn-per-request; plain http only). Receive and send timeouts of 100 ms slice the
 * blocking calls so the thread notices --timeout, the end of the point and a stop request.
 * Everything here is owned by the worker thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "worker.h"
#include "xalloc.h"

#define LG_SLICE_NS (100ull * 1000000)
#define LG_SCRATCH (256u * 1024)

enum lg_wait {
    LG_WAIT_READY = 0,
    LG_WAIT_TIMEOUT = 1, /* the request's deadline passed */
    LG_WAIT_STOP = 2,    /* the point ended or the run was interrupted: abandon */
};

static bool must_stop(const struct lg_point_params *pp, uint64_t now)
{
    return atomic_load_explicit(pp->stop, memory_order_relaxed) ||
           now >= lg_window_end_at(pp->win, now);
}

/* Why a blocking call that returned "again" should not simply be retried. */
static enum lg_wait check_time(const struct lg_point_params *pp, uint64_t deadline)
{
    uint64_t now = clock_now_ns();

    if (must_stop(pp, now))
        return LG_WAIT_STOP;
    return now >= deadline ? LG_WAIT_TIMEOUT : LG_WAIT_READY;
}

/* Non-blocking connect, waited for with poll in slices, then the socket turns blocking. */
static enum lg_wait connect_blocking(struct lg_conn *c, const struct lg_point_params *pp,
                                     uint64_t deadline)
{
    struct timeval slice = {.tv_sec = 0, .tv_usec = (suseconds_t)(LG_SLICE_NS / 1000)};
    int flags;

    while (c->state == LG_CS_CONNECTING) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
        enum lg_wait w = check_time(pp, deadline);
        if (w != LG_WAIT_READY)
            return w;
        if (poll(&pfd, 1, (int)(LG_SLICE_NS / 1000000)) > 0 && lg_conn_connect_result(c) < 0)
            return LG_WAIT_READY; /* c->err says connect */
    }
    flags = fcntl(c->fd, F_GETFL);
    if (flags < 0 || fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) < 0 ||
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof(slice)) < 0) {
        c->err = LG_ERR_CONNECT;
        c->state = LG_CS_CONNECTING; /* tells the caller it failed */
    }
    return LG_WAIT_READY;
}

/* One request of one user, start to end. Returns false if it was abandoned (stop/end). */
static bool one_request(struct lg_worker *w, struct lg_conn *c, uint64_t *rng, char *scratch)
{
    const struct lg_point_params *pp = w->pp;
    const struct lg_config *cfg = pp->cfg;
    uint64_t now = clock_now_ns();
    uint64_t deadline = now + cfg->timeout_us * 1000;
    int type = lg_worker_pick(w, c, rng);
    enum lg_wait wt = LG_WAIT_READY;
    enum lg_io r;
    enum lg_err e;

    lg_conn_begin(c, type, now);
    c->backoff = false;
    if (c->fd < 0) {
        if (lg_conn_connect(c, &cfg->target) < 0)
            goto fail;
        w->stats[type].connects++;
        wt = connect_blocking(c, pp, deadline);
        if (wt != LG_WAIT_READY)
            goto out;
        if (c->state == LG_CS_CONNECTING) /* it failed */
            goto fail;
    }
    c->state = LG_CS_SENDING;
    for (;;) {
        r = lg_conn_send(c);
        if (r != LG_IO_AGAIN)
            break;
        wt = check_time(pp, deadline);
        if (wt != LG_WAIT_READY)
            goto out;
    }
    if (r == LG_IO_ERROR)
        goto fail;
    for (;;) {
        r = lg_conn_recv(c, scratch, LG_SCRATCH, cfg->copy_body);
        if (r != LG_IO_AGAIN)
            break;
        wt = check_time(pp, deadline);
        if (wt != LG_WAIT_READY)
            goto out;
    }
    if (r == LG_IO_ERROR)
        goto fail;
    now = clock_now_ns();
    e = lg_conn_check(c, &pp->check);
    lg_worker_record(w, c, now, e);
    if (!c->http.keep_alive || pp->new_conn)
        lg_conn_close(c);
    c->state = LG_CS_IDLE;
    return true;

out:
    if (wt == LG_WAIT_TIMEOUT) {
        c->err = LG_ERR_TIMEOUT;
        goto fail;
    }
    return false; /* LG_WAIT_STOP: abandoned, not counted */
fail:
    now = clock_now_ns();
    lg_worker_record(w, c, now, c->err == LG_ERR_NONE ? LG_ERR_SHORT : c->err);
    c->backoff = c->err == LG_ERR_CONNECT;
    lg_conn_close(c);
    c->state = LG_CS_IDLE;
    return true;
}

/* Sleeps until t (CLOCK_MONOTONIC), in slices, unless the point ends first. */
static void sleep_until(const struct lg_point_params *pp, uint64_t t)
{
    for (;;) {
        uint64_t now = clock_now_ns();
        uint64_t until;
        struct timespec ts;

        if (now >= t || must_stop(pp, now))
            return;
        until = t - now > LG_SLICE_NS ? now + LG_SLICE_NS : t;
        ts.tv_sec = (time_t)(until / 1000000000ull);
        ts.tv_nsec = (long)(until % 1000000000ull);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

static void *threads_thread_main(void *arg)
{
    struct lg_worker *w = arg;
    const struct lg_point_params *pp = w->pp;
    const struct lg_config *cfg = pp->cfg;
    uint64_t rng = lg_rng_seed(cfg->seed, w->first_user);
    char *scratch = cfg->copy_body ? xmalloc(LG_SCRATCH) : NULL;
    struct lg_conn c;

    lg_worker_conn_setup(w, &c, w->first_user);
    while (c.remaining > 0) {
        uint64_t now = clock_now_ns();

        if (must_stop(pp, now))
            break;
        if (!one_request(w, &c, &rng, scratch)) {
            w->abandoned++;
            break;
        }
        now = clock_now_ns();
        lg_worker_progress(w, now);
        if (cfg->think_us > 0 || c.backoff)
            sleep_until(pp, now + cfg->think_us * 1000 + (c.backoff ? LG_BACKOFF_NS : 0));
    }
    lg_conn_release(&c);
    free(scratch);
    lg_worker_done(w);
    return NULL;
}

const struct lg_worker_ops lg_worker_threads_ops = {
    .name = "threads",
    .thread_main = threads_thread_main,
};
