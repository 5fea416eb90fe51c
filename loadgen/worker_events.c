/*
 * worker_events.c - the default worker model: one epoll loop per thread drives that thread's
 * share of the users, so a few threads can keep thousands of closed-loop users busy without the
 * load generator becoming the bottleneck it is measuring.
 * DESIGN: everything here is owned by the worker thread. A connection is in at most one of four
 * FIFO lists: INFLIGHT (ordered by timeout deadline), THINK and BACKOFF (each entry waits the
 * same delay, so FIFO order is deadline order), and POOL (open loop: idle connections). The
 * loop sleeps in epoll_pwait2 with a nanosecond timeout to the earliest deadline (end of the
 * point, a timeout, a think or backoff expiry, the next open-loop arrival), so deadlines cost no
 * timer syscall; kernels before 5.11 fall back to epoll_wait and whole milliseconds. Connections
 * stay registered for EPOLLIN (level-triggered); EPOLLOUT is added only while a connect or a
 * send is pending.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "worker.h"
#include "xalloc.h"

#define LG_EVENTS 256
#define LG_SCRATCH (256u * 1024) /* body bytes land here with --copy-body */

enum { L_NONE = 0, L_INFLIGHT, L_THINK, L_BACKOFF, L_POOL, L_COUNT };

struct lg_list {
    struct lg_conn *head;
    struct lg_conn *tail;
};

struct lg_evloop {
    struct lg_worker *w;
    const struct lg_point_params *pp;
    const struct lg_config *cfg;
    int epfd;
    bool no_pwait2; /* the kernel lacks epoll_pwait2: millisecond timeouts */
    struct lg_list lists[L_COUNT];
    struct lg_conn *conns;
    unsigned nconns;
    unsigned active; /* connections that still have requests to make */
    uint64_t rng;
    char *scratch;
    uint64_t think_ns;
    uint64_t timeout_ns;
    bool dispatching;
    struct lg_conn *sendq_head; /* connected users whose request goes out before the next wait */
    struct lg_conn *sendq_tail;
    /* open loop */
    double interval_ns; /* mean time between this thread's arrivals */
    uint64_t base_ns;   /* constant arrivals: time of arrival 0 */
    uint64_t arrival_k;
    uint64_t next_arrival_ns;
    struct ssl_ctx_st *tls_ctx; /* https://: this thread's own TLS context, else NULL */
};

/* epoll data tag of the wake eventfd (every other entry is a connection) */
static char lg_wake_tag;

static void list_push(struct lg_evloop *l, int which, struct lg_conn *c)
{
    struct lg_list *L = &l->lists[which];

    c->list = which;
    c->next = NULL;
    c->prev = L->tail;
    if (L->tail != NULL)
        L->tail->next = c;
    else
        L->head = c;
    L->tail = c;
}

static void list_remove(struct lg_evloop *l, struct lg_conn *c)
{
    struct lg_list *L;

    if (c->list == L_NONE)
        return;
    L = &l->lists[c->list];
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        L->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        L->tail = c->prev;
    c->prev = NULL;
    c->next = NULL;
    c->list = L_NONE;
}

static int ev_set(struct lg_evloop *l, struct lg_conn *c, uint32_t mask)
{
    struct epoll_event ev = {.events = mask, .data.ptr = c};
    int op = c->ev_mask == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;

    if (c->ev_mask == mask)
        return 0;
    if (epoll_ctl(l->epfd, op, c->fd, &ev) < 0) {
        log_error("epoll_ctl: errno %d", errno);
        return -1;
    }
    c->ev_mask = mask;
    return 0;
}

static void advance_arrival(struct lg_evloop *l)
{
    l->arrival_k++;
    if (l->cfg->arrivals == LG_ARRIVALS_POISSON)
        l->next_arrival_ns += (uint64_t)(-log(lg_rng_unit(&l->rng)) * l->interval_ns);
    else
        l->next_arrival_ns = l->base_ns + (uint64_t)((double)l->arrival_k * l->interval_ns);
}

static void begin(struct lg_evloop *l, struct lg_conn *c, uint64_t start_ns, uint64_t now);

/* What a user does once its request is over (counted or not). */
static void next(struct lg_evloop *l, struct lg_conn *c, uint64_t now);

static void dispatch(struct lg_evloop *l, uint64_t now)
{
    if (l->dispatching)
        return; /* the outer call picks up what a failed begin() put back */
    l->dispatching = true;
    while (l->lists[L_POOL].head != NULL && l->next_arrival_ns <= now &&
           l->next_arrival_ns < lg_window_end(l->pp->win)) {
        struct lg_conn *c = l->lists[L_POOL].head;
        uint64_t intended = l->next_arrival_ns;

        list_remove(l, c);
        advance_arrival(l);
        begin(l, c, intended, now);
    }
    l->dispatching = false;
}

static void next(struct lg_evloop *l, struct lg_conn *c, uint64_t now)
{
    c->state = LG_CS_IDLE;
    if (c->remaining == 0) {
        l->active--;
        return;
    }
    if (c->backoff) {
        c->deadline_ns = now + LG_BACKOFF_NS + l->think_ns;
        list_push(l, L_BACKOFF, c);
    } else if (l->pp->open_loop) {
        list_push(l, L_POOL, c);
        dispatch(l, now);
    } else if (l->think_ns > 0) {
        c->deadline_ns = now + l->think_ns;
        list_push(l, L_THINK, c);
    } else {
        begin(l, c, now, now);
    }
}

static void fail(struct lg_evloop *l, struct lg_conn *c, uint64_t now)
{
    enum lg_err e = c->err == LG_ERR_NONE ? LG_ERR_SHORT : c->err;

    list_remove(l, c);
    lg_worker_record(l->w, c, now, e);
    lg_conn_close(c);
    c->backoff = e == LG_ERR_CONNECT;
    next(l, c, now);
}

static void complete(struct lg_evloop *l, struct lg_conn *c, uint64_t now)
{
    enum lg_err e = lg_conn_check(c, &l->pp->check);

    list_remove(l, c);
    lg_worker_record(l->w, c, now, e);
    if (!c->http.keep_alive || l->pp->new_conn)
        lg_conn_close(c); /* the next request reconnects */
    next(l, c, now);
}

static void do_recv(struct lg_evloop *l, struct lg_conn *c)
{
    enum lg_io r = lg_conn_recv(c, l->scratch, LG_SCRATCH, l->cfg->copy_body);

    if (r == LG_IO_AGAIN)
        return;
    if (r == LG_IO_ERROR)
        fail(l, c, clock_now_ns());
    else
        complete(l, c, clock_now_ns());
}

static void do_send(struct lg_evloop *l, struct lg_conn *c, uint64_t now)
{
    enum lg_io r = lg_conn_send(c);

    if (r == LG_IO_DONE) {
        if (ev_set(l, c, EPOLLIN) < 0)
            fail(l, c, now);
    } else if (r == LG_IO_AGAIN) {
        bool out = c->tls.ssl == NULL || c->tls.want_write;

        c->state = LG_CS_SENDING;
        if (ev_set(l, c, EPOLLIN | (out ? EPOLLOUT : 0)) < 0)
            fail(l, c, now);
    } else {
        fail(l, c, now);
    }
}

static void do_handshake(struct lg_evloop *l, struct lg_conn *c)
{
    enum lg_io r = lg_conn_handshake(c);
    uint64_t now;

    if (r == LG_IO_AGAIN) {
        if (ev_set(l, c, EPOLLIN | (c->tls.want_write ? EPOLLOUT : 0)) < 0)
            fail(l, c, clock_now_ns());
        return;
    }
    now = clock_now_ns();
    lg_worker_record_handshake(l->w, c, now, r == LG_IO_DONE);
    if (r == LG_IO_ERROR) {
        fail(l, c, now);
        return;
    }
    do_send(l, c, now);
}

static void begin(struct lg_evloop *l, struct lg_conn *c, uint64_t start_ns, uint64_t now)
{
    int type = lg_worker_pick(l->w, c, &l->rng);

    lg_conn_begin(c, type, start_ns);
    c->backoff = false;
    c->deadline_ns = now + l->timeout_ns;
    list_push(l, L_INFLIGHT, c);
    if (c->fd < 0) {
        if (lg_conn_connect(c, &l->cfg->target) < 0) {
            fail(l, c, now);
            return;
        }
        l->w->stats[type].connects++;
        if (c->state == LG_CS_CONNECTING) {
            if (ev_set(l, c, EPOLLOUT) < 0)
                fail(l, c, now);
            return;
        }
        if (c->state == LG_CS_HANDSHAKE) {
            do_handshake(l, c);
            return;
        }
    }
    /* Sent after the current batch of events: a burst of sends per wakeup lets the server
     * batch too, and its wakeups do not preempt this thread halfway through the batch. */
    c->state = LG_CS_SENDING;
    if (c->queued)
        return;
    c->queued = true;
    c->sendq = NULL;
    if (l->sendq_tail != NULL)
        l->sendq_tail->sendq = c;
    else
        l->sendq_head = c;
    l->sendq_tail = c;
}

static void flush_sends(struct lg_evloop *l)
{
    while (l->sendq_head != NULL) {
        struct lg_conn *c = l->sendq_head;

        l->sendq_head = c->sendq;
        if (l->sendq_head == NULL)
            l->sendq_tail = NULL;
        c->sendq = NULL;
        c->queued = false;
        if (c->state == LG_CS_SENDING && c->fd >= 0)
            do_send(l, c, clock_now_ns());
    }
}

static void on_event(struct lg_evloop *l, struct lg_conn *c, uint32_t ev)
{
    if (c->fd < 0)
        return;
    switch (c->state) {
    case LG_CS_CONNECTING:
        if (lg_conn_connect_result(c) < 0) {
            fail(l, c, clock_now_ns());
            return;
        }
        if (c->state == LG_CS_HANDSHAKE)
            do_handshake(l, c);
        else
            do_send(l, c, clock_now_ns());
        return;
    case LG_CS_HANDSHAKE:
        do_handshake(l, c);
        return;
    case LG_CS_SENDING:
        /* a TLS write may wait for readability (tls.want_write false) as well */
        if ((ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) || c->tls.ssl != NULL)
            do_send(l, c, clock_now_ns());
        if (c->state == LG_CS_WAITING && (ev & EPOLLIN))
            do_recv(l, c);
        return;
    case LG_CS_WAITING:
        do_recv(l, c);
        return;
    case LG_CS_IDLE:
        /* An idle connection became readable: the server closed it (or sent junk). Drop it;
         * the user's next request reconnects. */
        lg_conn_close(c);
        return;
    }
}

/* Handles every deadline that has passed. */
static void process_due(struct lg_evloop *l, uint64_t now)
{
    struct lg_conn *c;

    for (c = l->lists[L_INFLIGHT].head; c != NULL && c->deadline_ns <= now;
         c = l->lists[L_INFLIGHT].head) {
        c->err = LG_ERR_TIMEOUT;
        fail(l, c, now);
    }
    for (c = l->lists[L_THINK].head; c != NULL && c->deadline_ns <= now;
         c = l->lists[L_THINK].head) {
        list_remove(l, c);
        begin(l, c, now, now);
    }
    for (c = l->lists[L_BACKOFF].head; c != NULL && c->deadline_ns <= now;
         c = l->lists[L_BACKOFF].head) {
        list_remove(l, c);
        c->backoff = false;
        if (l->pp->open_loop)
            list_push(l, L_POOL, c);
        else
            begin(l, c, now, now);
    }
    if (l->pp->open_loop)
        dispatch(l, now);
}

/* The earliest deadline of anything waiting, UINT64_MAX for none. */
static uint64_t next_deadline(const struct lg_evloop *l)
{
    static const int timed[] = {L_INFLIGHT, L_THINK, L_BACKOFF};
    uint64_t d = lg_window_end(l->pp->win);

    for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++) {
        const struct lg_conn *h = l->lists[timed[i]].head;
        if (h != NULL && h->deadline_ns < d)
            d = h->deadline_ns;
    }
    if (l->pp->open_loop && l->lists[L_POOL].head != NULL && l->next_arrival_ns < d)
        d = l->next_arrival_ns;
    return d;
}

/* epoll_pwait2 until deadline (UINT64_MAX: no timeout). */
static int wait_events(struct lg_evloop *l, struct epoll_event *evs, uint64_t deadline,
                       uint64_t now)
{
    uint64_t left = deadline > now ? deadline - now : 0;
    int n;

    if (!l->no_pwait2) {
        struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ull),
                              .tv_nsec = (long)(left % 1000000000ull)};
        n = epoll_pwait2(l->epfd, evs, LG_EVENTS, deadline == UINT64_MAX ? NULL : &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        l->no_pwait2 = true;
    }
    if (deadline == UINT64_MAX)
        return epoll_wait(l->epfd, evs, LG_EVENTS, -1);
    left = (left + 999999) / 1000000;
    return epoll_wait(l->epfd, evs, LG_EVENTS, left > 3600000 ? 3600000 : (int)left);
}

static int setup(struct lg_evloop *l, struct lg_worker *w)
{
    struct epoll_event ev = {.events = EPOLLIN};
    const struct lg_point_params *pp = w->pp;

    memset(l, 0, sizeof(*l));
    l->w = w;
    l->pp = pp;
    l->cfg = pp->cfg;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        goto err;
    ev.data.ptr = &lg_wake_tag;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->wake_fd, &ev) < 0)
        goto err;
    /* think times and arrivals are timed to the microsecond: no 50 us timer slack */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    l->rng = lg_rng_seed(l->cfg->seed, w->id);
    l->think_ns = l->cfg->think_us * 1000;
    l->timeout_ns = l->cfg->timeout_us * 1000;
    l->nconns = w->nusers;
    if (pp->tls != NULL) {
        /* one context per thread: the threads share no OpenSSL state (a shared context's
         * certificate store fills caches lazily, under locks the handshakes contend on) */
        char terr[LG_TLS_ERR_LEN];
        l->tls_ctx = lg_tls_ctx_new(pp->tls, terr);
        if (l->tls_ctx == NULL) {
            log_error("worker %u: %s", w->id, terr);
            return -1;
        }
    }
    l->conns = xcalloc(w->nusers, sizeof(*l->conns));
    for (unsigned i = 0; i < w->nusers; i++) {
        lg_worker_conn_setup(w, &l->conns[i], w->first_user + i);
        if (l->tls_ctx != NULL)
            lg_conn_use_tls(&l->conns[i], l->tls_ctx, &l->cfg->target);
    }
    if (l->cfg->copy_body)
        l->scratch = xmalloc(LG_SCRATCH);
    if (pp->open_loop) {
        double per_thread = pp->rate / w->nthreads;
        l->interval_ns = 1e9 / per_thread;
        if (l->cfg->arrivals == LG_ARRIVALS_POISSON) {
            l->next_arrival_ns =
                pp->start_ns + (uint64_t)(-log(lg_rng_unit(&l->rng)) * l->interval_ns);
        } else {
            /* threads interleave: thread i starts i/rate after the start */
            l->base_ns = pp->start_ns + (uint64_t)((double)w->id * (1e9 / pp->rate));
            l->next_arrival_ns = l->base_ns;
        }
    }
    return 0;
err:
    log_error("worker %u: cannot create its epoll instance: errno %d", w->id, errno);
    return -1;
}

static void teardown(struct lg_evloop *l)
{
    for (unsigned i = 0; i < l->nconns; i++) {
        if (l->conns[i].state != LG_CS_IDLE)
            l->w->abandoned++;
        lg_conn_release(&l->conns[i]);
    }
    free(l->conns);
    lg_tls_ctx_free(l->tls_ctx);
    free(l->scratch);
    if (l->epfd >= 0)
        close(l->epfd);
}

static void run(struct lg_evloop *l)
{
    struct lg_worker *w = l->w;
    const struct lg_point_params *pp = l->pp;
    struct epoll_event evs[LG_EVENTS];
    uint64_t now = clock_now_ns();

    l->active = l->nconns;
    for (unsigned i = 0; i < l->nconns; i++) {
        struct lg_conn *c = &l->conns[i];
        if (c->remaining == 0)
            l->active--;
        else if (pp->open_loop)
            list_push(l, L_POOL, c);
        else
            begin(l, c, now, now);
    }
    for (;;) {
        int n;

        now = clock_now_ns();
        if (atomic_load_explicit(pp->stop, memory_order_relaxed) ||
            now >= lg_window_end_at(pp->win, now))
            break;
        process_due(l, now);
        if (l->active == 0)
            break;
        lg_worker_progress(w, now);
        flush_sends(l);
        n = wait_events(l, evs, next_deadline(l), now);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("worker %u: epoll_wait: errno %d", w->id, errno);
            w->failed = 1;
            break;
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            uint64_t junk;

            if (p == &lg_wake_tag) {
                if (read(w->wake_fd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
                    log_debug("wake read: errno %d", errno);
            } else {
                on_event(l, p, evs[i].events);
            }
        }
    }
    if (pp->open_loop) {
        /* arrivals of the window that never got a connection: the backlog */
        uint64_t end = lg_window_end(pp->win);
        uint64_t limit = now < end ? now : end;
        while (l->next_arrival_ns < limit) {
            if (l->next_arrival_ns >= pp->warm_end_ns)
                w->unsent++;
            advance_arrival(l);
        }
    }
}

static void *events_thread_main(void *arg)
{
    struct lg_worker *w = arg;
    struct lg_evloop l;

    if (setup(&l, w) == 0)
        run(&l);
    else
        w->failed = 1;
    teardown(&l);
    lg_worker_done(w);
    return NULL;
}

const struct lg_worker_ops lg_worker_events_ops = {
    .name = "events",
    .thread_main = events_thread_main,
};
