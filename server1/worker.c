/*
 * worker.c - see worker.h. Accepting: each worker drains its own SO_REUSEPORT socket; past
 * --max-conns (counted process-wide) or --max-conns-per-ip (IPv6 by /64) a connection gets a
 * canned 503 and is closed at once; on EMFILE/ENFILE accepting pauses for 100 ms instead of
 * spinning. A connection goes to the least loaded worker that is not draining (worker.h).
 * Draining: stop accepting, close idle connections, let busy ones finish (bounded by
 * --drain-timeout), then leave the loop.
 */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "accesslog.h"
#include "clock.h"
#include "log.h"

#define S1_ACCEPT_BATCH 64
#define S1_LINGER_US 2000000

/* A connection accepted by one worker for another, posted to the other's inbox. */
struct s1_handoff {
    struct mailbox_msg msg;
    struct s1_worker *to;
    int fd;
    uint8_t peer[RATELIMIT_ADDR_LEN];
    char addr[ACCESSLOG_ADDR_MAX]; /* the client's address as text (for the access log) */
    bool tls;   /* accepted on --tls-port */
    bool proxy; /* from a --trusted-proxy address: a PROXY header comes first */
};

static struct timeval tv_us(uint64_t us)
{
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000)};
    return tv;
}

/*
 * A 503 with body (and, as every answer has, a Date from the worker's cache) sent, if the socket
 * takes it at once, to a connection that is then closed; a TLS one is closed without a word
 * (no handshake is spent on it).
 */
static void reject(struct s1_worker *w, int fd, bool tls, const char *body,
                   _Atomic uint64_t *counter)
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 503 Service Unavailable\r\nServer: server1\r\nDate: %s\r\n"
                     "Retry-After: 1\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     httpdate_cached(&w->home.date, clock_wall_s()), strlen(body), body);

    if (!tls && n > 0 && (size_t)n < sizeof(msg) &&
        send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        log_debug("503 to rejected connection: %d", errno);
    close(fd);
    metrics_add(counter, 1);
}

/* Over --max-conns. */
static void reject_busy(struct s1_worker *w, int fd, bool tls)
{
    reject(w, fd, tls, "too many connections", &w->metrics.connections_rejected);
}

/* Over --max-conns-per-ip. */
static void reject_per_ip(struct s1_worker *w, int fd, bool tls)
{
    reject(w, fd, tls, "too many connections from your address\r\n",
           &w->metrics.connections_rejected_per_ip);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    struct s1_worker *w = arg;
    UNUSED(fd);
    UNUSED(what);
    if (!w->home.draining) {
        event_add(&w->accept_ev, NULL);
        if (w->tls_listen_fd >= 0)
            event_add(&w->tls_accept_ev, NULL);
        if (w->metrics_listen_fd >= 0)
            event_add(&w->metrics_accept_ev, NULL);
    }
}

/* The worker owning the fewest connections, w itself on a tie; draining workers take none. */
static struct s1_worker *least_loaded(struct s1_worker *w)
{
    struct s1_worker *best = w;
    unsigned best_load = atomic_load_explicit(&w->load, memory_order_relaxed);

    for (size_t i = 0; i < w->sh->nworkers && best_load > 0; i++) {
        struct s1_worker *o = &w->sh->workers[i];
        unsigned l = atomic_load_explicit(&o->load, memory_order_relaxed);
        if (l < best_load &&
            atomic_load_explicit(&o->stop_level, memory_order_relaxed) == S1_WORKER_RUN) {
            best = o;
            best_load = l;
        }
    }
    return best;
}

/* A handed connection this worker will not serve (it is stopping): closed, its counts undone. */
static void handoff_refuse(struct s1_worker *w, struct s1_handoff *h)
{
    close(h->fd);
    if (w->sh->svc.conns_per_ip != NULL && !h->proxy)
        connlimit_release(w->sh->svc.conns_per_ip, h->peer);
    atomic_fetch_sub_explicit(&w->sh->nconns, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&w->load, 1, memory_order_relaxed);
    free(h);
}

/* On the receiving worker's thread (its mailbox): serve the connection, or close it. */
static void handoff_deliver(struct mailbox_msg *m, bool live)
{
    struct s1_handoff *h = (struct s1_handoff *)((char *)m - offsetof(struct s1_handoff, msg));
    struct s1_worker *w = h->to;

    if (!live || w->home.draining) {
        handoff_refuse(w, h);
        return;
    }
    s1_conn_new(&w->home, h->fd, h->peer, h->addr, h->tls, h->proxy);
    free(h);
}

/*
 * A connection within the limits: w serves it, or hands it to a less loaded worker. If that
 * fails (out of memory) w serves it anyway.
 */
static void take_or_hand(struct s1_worker *w, int fd, const uint8_t peer[RATELIMIT_ADDR_LEN],
                         const char *addr, bool tls, bool proxy)
{
    struct s1_worker *to = least_loaded(w);
    struct s1_handoff *h;

    if (to != w && (h = malloc(sizeof(*h))) != NULL) {
        h->msg.deliver = handoff_deliver;
        h->to = to;
        h->fd = fd;
        h->tls = tls;
        h->proxy = proxy;
        memcpy(h->peer, peer, sizeof(h->peer));
        memcpy(h->addr, addr, sizeof(h->addr));
        atomic_fetch_add_explicit(&to->load, 1, memory_order_relaxed);
        mailbox_post_one(&to->inbox, &h->msg);
        metrics_add(&w->metrics.connections_handed, 1);
        return;
    }
    atomic_fetch_add_explicit(&w->load, 1, memory_order_relaxed);
    s1_conn_new(&w->home, fd, peer, addr, tls, proxy); /* released by s1_conn_free */
}

/*
 * Takes a batch of connections from the listening socket lfd (the TLS one if tls; with
 * metrics_only --metrics-listen's: within the same limits, served by w itself, never with a
 * PROXY header).
 */
static void accept_batch(struct s1_worker *w, int lfd, bool tls, bool metrics_only)
{
    const unsigned max_conns = w->sh->svc.cfg->max_conns;

    for (int i = 0; i < S1_ACCEPT_BATCH; i++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof(peer);
        uint8_t key[RATELIMIT_ADDR_LEN];
        char addr[ACCESSLOG_ADDR_MAX] = "-";
        bool proxy;
        int fd = accept4(lfd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            char ebuf[128];
            uint64_t now;
            struct timeval pause = {0, 100000};

            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            now = clock_now_ns();
            if (now - w->last_accept_warn_ns > 10000000000ull || w->last_accept_warn_ns == 0) {
                log_warn("accept: %s; pausing accepts for 100 ms",
                         strerror_r(errno, ebuf, sizeof(ebuf)));
                w->last_accept_warn_ns = now;
            }
            event_del(&w->accept_ev);
            event_del(&w->tls_accept_ev);
            event_del(&w->metrics_accept_ev);
            evtimer_add(&w->accept_pause_ev, &pause);
            return;
        }
        if (atomic_fetch_add_explicit(&w->sh->nconns, 1, memory_order_relaxed) >= max_conns) {
            atomic_fetch_sub_explicit(&w->sh->nconns, 1, memory_order_relaxed);
            reject_busy(w, fd, tls);
            continue;
        }
        net_addr_key((struct sockaddr *)&peer, peer_len, key);
        /* a balancer's connection counts for the client its PROXY header names (conn.c) */
        proxy = !metrics_only &&
                net_cidrs_match(&w->sh->svc.cfg->trusted, (struct sockaddr *)&peer, peer_len);
        if (w->sh->svc.conns_per_ip != NULL && !proxy &&
            !connlimit_acquire(w->sh->svc.conns_per_ip, key)) {
            atomic_fetch_sub_explicit(&w->sh->nconns, 1, memory_order_relaxed);
            reject_per_ip(w, fd, tls);
            continue;
        }
        if (w->home.alog != NULL)
            accesslog_addr_text((struct sockaddr *)&peer, peer_len, addr);
        if (metrics_only) {
            struct s1_conn *c;
            atomic_fetch_add_explicit(&w->load, 1, memory_order_relaxed);
            c = s1_conn_new(&w->home, fd, key, addr, false, false);
            s1_conn_pub(c)->metrics_only = true; /* (plain: never NULL) */
            continue;
        }
        take_or_hand(w, fd, key, addr, tls, proxy);
    }
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    UNUSED(what);
    accept_batch(arg, lfd, false, false);
}

static void on_accept_tls(evutil_socket_t lfd, short what, void *arg)
{
    UNUSED(what);
    accept_batch(arg, lfd, true, false);
}

static void on_accept_metrics(evutil_socket_t lfd, short what, void *arg)
{
    UNUSED(what);
    accept_batch(arg, lfd, false, true);
}

/* A connection of w ended (s1_conn_free unlinked it already). */
static void conn_closed(struct s1_conn_home *home)
{
    struct s1_worker *w = (struct s1_worker *)((char *)home - offsetof(struct s1_worker, home));

    atomic_fetch_sub_explicit(&w->sh->nconns, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&w->load, 1, memory_order_relaxed);
    if (w->home.draining && w->home.nconns == 0)
        event_base_loopexit(w->base, NULL);
}

static void close_all(struct s1_worker *w)
{
    while (!TAILQ_EMPTY(&w->home.conns))
        s1_conn_free(TAILQ_FIRST(&w->home.conns));
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct s1_worker *w = arg;
    UNUSED(fd);
    UNUSED(what);

    if (w->home.nconns > 0)
        log_warn("drain timeout: closing %u connections still busy", w->home.nconns);
    close_all(w);
    event_base_loopexit(w->base, NULL);
}

static void start_drain(struct s1_worker *w)
{
    struct timeval tv = tv_us(w->sh->svc.cfg->drain_timeout_us);

    if (w->home.draining)
        return;
    w->home.draining = true;
    event_del(&w->accept_ev);
    event_del(&w->tls_accept_ev);
    event_del(&w->metrics_accept_ev);
    event_del(&w->accept_pause_ev);
    if (w->metrics_listen_fd >= 0) {
        close(w->metrics_listen_fd);
        w->metrics_listen_fd = -1;
    }
    if (w->listen_fd >= 0) {
        close(w->listen_fd);
        w->listen_fd = -1;
    }
    if (w->tls_listen_fd >= 0) {
        close(w->tls_listen_fd);
        w->tls_listen_fd = -1;
    }
    log_debug("draining %u connections", w->home.nconns);
    s1_conn_drain_all(&w->home);
    if (w->home.nconns == 0) {
        event_base_loopexit(w->base, NULL);
        return;
    }
    evtimer_add(&w->drain_ev, &tv);
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    struct s1_worker *w = arg;
    uint64_t v;
    UNUSED(what);

    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_debug("notify read: %d", errno);
    switch (atomic_load(&w->stop_level)) {
    case S1_WORKER_FORCE:
        close_all(w);
        event_base_loopexit(w->base, NULL);
        break;
    case S1_WORKER_DRAIN:
        start_drain(w);
        break;
    default:
        break;
    }
}

/* server2 says user's account changed: its cached credentials go before anything else. */
static void on_invalidated(void *arg, const char *user, size_t user_len)
{
    struct s1_worker *w = arg;
    (void)credcache_drop_user(&w->env.cache, user, user_len);
    metrics_gauge_set(&w->metrics.auth_cache_entries, (int64_t)w->env.cache.used);
}

/* A connection to server2 dropped: a change may have gone with it, so we forget everything. */
static void on_auth_lost(void *arg)
{
    struct s1_worker *w = arg;
    credcache_clear(&w->env.cache);
    metrics_gauge_set(&w->metrics.auth_cache_entries, 0);
}

/* Every ACCESSLOG_FLUSH_MS: the access log's lines to the file (and a reopened one taken). */
static void on_alog_flush(evutil_socket_t fd, short what, void *arg)
{
    struct s1_worker *w = arg;
    UNUSED(fd);
    UNUSED(what);
    accesslog_flush(w->home.alog);
}

static int setup(struct s1_worker *w)
{
    const struct s1_config *cfg = w->sh->svc.cfg;
    struct event_config *ec = event_config_new();
    struct timeval tv;

    if (ec == NULL)
        return -1;
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    w->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (w->base == NULL)
        return -1;
    w->home.base = w->base;
    tv = tv_us(cfg->header_timeout_us);
    w->home.header_tv = event_base_init_common_timeout(w->base, &tv);
    tv = tv_us(cfg->idle_timeout_us);
    w->home.idle_tv = event_base_init_common_timeout(w->base, &tv);
    tv = tv_us(S1_LINGER_US);
    w->home.linger_tv = event_base_init_common_timeout(w->base, &tv);
    if (w->home.header_tv == NULL || w->home.idle_tv == NULL || w->home.linger_tv == NULL)
        return -1;
    event_assign(&w->accept_ev, w->base, w->listen_fd, EV_READ | EV_PERSIST, on_accept, w);
    event_assign(&w->tls_accept_ev, w->base, w->tls_listen_fd, EV_READ | EV_PERSIST,
                 on_accept_tls, w);
    if (w->tls_listen_fd >= 0 && event_add(&w->tls_accept_ev, NULL) < 0)
        return -1;
    event_assign(&w->metrics_accept_ev, w->base, w->metrics_listen_fd, EV_READ | EV_PERSIST,
                 on_accept_metrics, w);
    if (w->metrics_listen_fd >= 0 && event_add(&w->metrics_accept_ev, NULL) < 0)
        return -1;
    evtimer_assign(&w->accept_pause_ev, w->base, on_accept_resume, w);
    event_assign(&w->notify_ev, w->base, w->notify_fd, EV_READ | EV_PERSIST, on_notify, w);
    evtimer_assign(&w->drain_ev, w->base, on_drain_timeout, w);
    event_assign(&w->alog_ev, w->base, -1, EV_PERSIST, on_alog_flush, w);
    if (w->home.alog != NULL) {
        tv = tv_us(ACCESSLOG_FLUSH_MS * 1000);
        if (event_add(&w->alog_ev, &tv) < 0)
            return -1;
    }
    if (event_add(&w->accept_ev, NULL) < 0 || event_add(&w->notify_ev, NULL) < 0 ||
        mailbox_attach(&w->inbox, w->base) < 0)
        return -1;
    if (!cfg->prefetch && cfg->read_mode == S1_READ_DIRECT && cfg->read_depth > 0) {
        int rc = aioread_init(&w->aio, cfg->read_depth);
        if (rc < 0)
            log_warn("worker %u: no asynchronous reads (%s): each read of the disk stops the "
                     "thread until it is done", w->id, strerror(-rc));
        else if (aioread_attach(&w->aio, w->base) < 0)
            return -1;
    }
    w->env.auth = authclient_new(w->base, &cfg->authc, &w->metrics);
    if (cfg->auth_cache_entries > 0 && cfg->auth_cache_ttl_us > 0) {
        size_t per = (cfg->auth_cache_entries + cfg->threads - 1) / cfg->threads;
        struct authclient_events ev = {
            .invalidated = on_invalidated, .lost = on_auth_lost, .arg = w};
        if (!credcache_init(&w->env.cache, per, cfg->auth_cache_ttl_us * 1000))
            return -1;
        w->env.cache_on = true;
        authclient_set_events(w->env.auth, &ev);
    }
    return 0;
}

static void *s1_worker_thread_main(void *arg)
{
    struct s1_worker *w = arg;
    char name[16];

    snprintf(name, sizeof(name), "s1-wrk-%u", w->id);
    pthread_setname_np(pthread_self(), name);
    if (setup(w) < 0) {
        log_error("worker %u: cannot set up its event loop", w->id);
        w->init_failed = true;
    }
    pthread_barrier_wait(&w->sh->ready);
    /* a stop that arrived before this point is already readable on notify_fd */
    if (!w->init_failed)
        event_base_dispatch(w->base);
    close_all(w);
    aioread_release(&w->aio); /* the reads of the conns just closed: their buffers are freed */
    if (w->home.alog != NULL)
        accesslog_flush(w->home.alog); /* (the connections closed wrote their lines) */
    authclient_free(w->env.auth);
    w->env.auth = NULL;
    if (w->env.cache_on)
        credcache_release(&w->env.cache);
    w->env.cache_on = false;
    atomic_store(&w->done, true);
    return NULL;
}

int s1_worker_init(struct s1_worker *w, unsigned id, struct s1_shared *sh, int listen_fd,
                   int tls_listen_fd, int metrics_listen_fd)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->sh = sh;
    w->env.resp_budget = (struct respbuf_budget){.limit = sh->svc.cfg->response_memory,
                                                 .gauge = &w->metrics.response_bytes};
    w->env.svc = &sh->svc;
    w->env.inbox = &w->inbox;
    w->env.aio = &w->aio;
    (void)aioread_init(&w->aio, 0); /* none until setup: safe to release */
    w->listen_fd = listen_fd;
    w->tls_listen_fd = tls_listen_fd;
    w->metrics_listen_fd = metrics_listen_fd;
    w->home.cfg = sh->svc.cfg;
    w->home.metrics = &w->metrics;
    w->home.conns_per_ip = sh->svc.conns_per_ip;
    w->home.handler = &s1_handler;
    w->home.handler_arg = &w->env;
    w->home.tls = sh->tls;
    w->home.closed = conn_closed;
    httpdate_cache_init(&w->home.date);
    TAILQ_INIT(&w->home.conns);
    metrics_init(&w->metrics);
    if (sh->alog != NULL)
        w->home.alog = &sh->alog->threads[id];
    atomic_init(&w->stop_level, S1_WORKER_RUN);
    atomic_init(&w->done, false);
    atomic_init(&w->load, 0);
    w->inbox.fd = -1;
    w->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->notify_fd < 0)
        return -1;
    return mailbox_init(&w->inbox);
}

int s1_worker_start(struct s1_worker *w)
{
    int rc = pthread_create(&w->thread, NULL, s1_worker_thread_main, w);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

void s1_worker_stop(struct s1_worker *w, int level)
{
    uint64_t one = 1;

    if (atomic_load(&w->stop_level) >= level)
        return;
    atomic_store(&w->stop_level, level);
    if (write(w->notify_fd, &one, sizeof(one)) < 0)
        log_debug("notify write: %d", errno);
}

void s1_worker_join(struct s1_worker *w)
{
    pthread_join(w->thread, NULL);
}

void s1_worker_release(struct s1_worker *w)
{
    if (w->base != NULL) {
        event_del(&w->accept_ev);
        event_del(&w->tls_accept_ev);
        event_del(&w->metrics_accept_ev);
        event_del(&w->accept_pause_ev);
        event_del(&w->notify_ev);
        event_del(&w->drain_ev);
        event_del(&w->alog_ev);
        event_base_free(w->base);
        w->base = NULL;
    }
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    w->listen_fd = -1;
    if (w->tls_listen_fd >= 0)
        close(w->tls_listen_fd);
    w->tls_listen_fd = -1;
    if (w->metrics_listen_fd >= 0)
        close(w->metrics_listen_fd);
    w->metrics_listen_fd = -1;
    if (w->notify_fd >= 0)
        close(w->notify_fd);
    w->notify_fd = -1;

    /* answers and connections that came after the loop ended (their conns are gone) */
    mailbox_release(&w->inbox);
}
