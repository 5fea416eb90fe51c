/*
 * threaded.c - see threaded.h.
 *
 * DESIGN
 *   I/O thread (this one): ioloop -> dispatch -> s2_workq_push
 *   worker i: s2_workq_pop (fair share, <= --batch) -> s2_auth_run (cache, one database
 *             round trip per group, argon2 one job at a time) -> each settled job's reply to
 *             s2_doneq_push before the next argon2 operation -> eventfd (only when the done
 *             queue was empty, so the wake-ups stay coalesced)
 *   I/O thread: eventfd readable -> s2_doneq_take -> s2_ioloop_reply
 * Workers own their s2_auth (and so their database connection), made and freed on their own
 * thread between the backend's thread_init and thread_end. The auth cache and the backend
 * health record are shared and locked inside. A worker whose backend is down wakes every
 * second to reconnect, so "backend up" is noticed and logged without traffic.
 * Shutdown: the loop returns once every connection has its answers; then the queue closes,
 * the workers drain it and exit, and they are joined.
 */
#include "threaded.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "authcache.h"
#include "backend.h"
#include "ioloop.h"
#include "log.h"
#include "workq.h"
#include "xalloc.h"

#define IDLE_RECONNECT_MS 1000
#define DRAIN_TIMEOUT_MS 30000

struct s2_threaded;

struct s2_worker {
    struct s2_threaded *srv;
    pthread_t tid;
    unsigned index;
    bool started;
    struct s2_auth_stats stats; /* written by the worker just before it exits */
};

struct s2_threaded {
    const struct s2_config *cfg;
    const struct backend_ops *ops;
    struct backend_health health;
    struct authcache *cache; /* NULL when --auth-cache 0 */
    struct s2_workq workq;
    struct s2_doneq doneq;
    struct s2_ioloop *loop;
    struct event *done_ev;
    struct s2_reply *replies; /* I/O thread's buffer for s2_doneq_take */
    size_t replies_cap;
    struct s2_worker *workers;
};

/* Replies a worker collects between two argon2 operations. */
struct worker_out {
    struct s2_threaded *srv;
    struct s2_reply *replies; /* --batch entries */
    size_t n;
};

static void worker_settled(void *arg, const struct s2_job *j)
{
    struct worker_out *o = arg;
    o->replies[o->n++] = s2_reply_of(j);
}

static void worker_flush(void *arg)
{
    struct worker_out *o = arg;
    if (o->n > 0)
        s2_doneq_push(&o->srv->doneq, o->replies, o->n);
    o->n = 0;
}

static void *worker_thread_main(void *arg)
{
    struct s2_worker *w = arg;
    struct s2_threaded *srv = w->srv;
    const struct s2_config *cfg = srv->cfg;
    struct s2_job *jobs = xcalloc(cfg->batch, sizeof(*jobs));
    struct s2_reply *replies = xcalloc(cfg->batch, sizeof(*replies));
    struct s2_auth *auth;
    struct worker_out out = {.srv = srv, .replies = replies};
    const struct s2_auth_sink sink = {
        .settled = worker_settled, .flush = worker_flush, .arg = &out};
    char name[16];

    snprintf(name, sizeof(name), "s2-wrk-%u", w->index);
    pthread_setname_np(pthread_self(), name);
    if (srv->ops->thread_init)
        srv->ops->thread_init();
    auth =
        s2_auth_new(srv->ops, &cfg->backend, &srv->health, srv->cache, cfg->hash_cost, cfg->batch);
    s2_auth_connect(auth);
    for (;;) {
        bool closed;
        int wait_ms = s2_auth_connected(auth) ? -1 : IDLE_RECONNECT_MS;
        size_t n = s2_workq_pop(&srv->workq, jobs, s2_auth_take_max(auth), wait_ms, &closed);
        if (n == 0) {
            if (closed)
                break;
            s2_auth_connect(auth);
            continue;
        }
        s2_auth_run(auth, jobs, n, &sink);
        sodium_memzero(jobs, n * sizeof(*jobs));
    }
    s2_auth_get_stats(auth, &w->stats);
    s2_auth_free(auth);
    if (srv->ops->thread_end)
        srv->ops->thread_end();
    free(jobs);
    free(replies);
    return NULL;
}

static void on_dispatch(struct s2_ioloop *loop, struct s2_job *jobs, size_t n, void *arg)
{
    struct s2_threaded *srv = arg;
    UNUSED(loop);
    s2_auth_mark_cheap(srv->cache, jobs, n);
    s2_workq_push(&srv->workq, jobs, n);
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    struct s2_threaded *srv = arg;
    size_t n;

    UNUSED(fd);
    UNUSED(what);
    s2_doneq_clear_signal(&srv->doneq);
    n = s2_doneq_take(&srv->doneq, &srv->replies, &srv->replies_cap);
    s2_ioloop_reply(srv->loop, srv->replies, n);
}

static int start_workers(struct s2_threaded *srv)
{
    sigset_t block;
    sigset_t old;
    int rc = 0;

    /* Workers never take SIGTERM/SIGINT: the I/O thread's loop handles them. */
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (unsigned i = 0; i < srv->cfg->workers; i++) {
        struct s2_worker *w = &srv->workers[i];
        int e;
        w->srv = srv;
        w->index = i;
        e = pthread_create(&w->tid, NULL, worker_thread_main, w);
        if (e != 0) {
            char ebuf[128];
            log_error("cannot start worker thread %u: %s", i, strerror_r(e, ebuf, sizeof(ebuf)));
            rc = -1;
            break;
        }
        w->started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void stop_workers(struct s2_threaded *srv)
{
    struct s2_auth_stats sum = {0};

    s2_workq_close(&srv->workq);
    for (unsigned i = 0; i < srv->cfg->workers; i++) {
        struct s2_worker *w = &srv->workers[i];
        if (!w->started)
            continue;
        pthread_join(w->tid, NULL);
        sum.batches += w->stats.batches;
        sum.jobs += w->stats.jobs;
        sum.hashes += w->stats.hashes;
        sum.verifies += w->stats.verifies;
        sum.cache_hits += w->stats.cache_hits;
        sum.unavailable += w->stats.unavailable;
        sum.expired += w->stats.expired;
        sum.dummy_verifies += w->stats.dummy_verifies;
    }
    log_info("workers done: %" PRIu64 " requests in %" PRIu64 " batches, %" PRIu64
             " hashes, %" PRIu64 " verifications (%" PRIu64 " for unknown users), %" PRIu64
             " cache hits, %" PRIu64 " unavailable (%" PRIu64 " over --max-queue), %" PRIu64
             " expired",
             sum.jobs, sum.batches, sum.hashes, sum.verifies + sum.dummy_verifies,
             sum.dummy_verifies, sum.cache_hits, sum.unavailable, srv->workq.rejected,
             sum.expired);
}

int s2_threaded_run(const struct s2_config *cfg, int listen_fd)
{
    struct s2_threaded srv;
    struct s2_ioloop_params lp = {
        .listen_fd = listen_fd,
        .max_conns = cfg->max_conns,
        .max_inflight = cfg->max_inflight,
        .batch = cfg->batch,
        .idle_timeout_us = cfg->idle_timeout_us,
        .drain_timeout_ms = DRAIN_TIMEOUT_MS,
        .dispatch = on_dispatch,
        .arg = &srv,
    };
    int rc = 1;

    memset(&srv, 0, sizeof(srv));
    srv.cfg = cfg;
    srv.ops = backend_ops_for(&cfg->backend);
    backend_health_init(&srv.health, &cfg->backend, false);
    if (cfg->auth_cache_entries > 0)
        srv.cache = authcache_new(cfg->auth_cache_entries, cfg->auth_cache_ttl_us * 1000);
    s2_workq_init(&srv.workq);
    s2_workq_set_workers(&srv.workq, cfg->workers);
    s2_workq_set_max_slow(&srv.workq, cfg->max_queue);
    /* The dummy hash for unknown users, made once now rather than by the first request. */
    if (pwhash_dummy(cfg->hash_cost) == NULL)
        log_warn("cannot make the dummy password hash yet (out of memory); will retry");
    if (s2_doneq_init(&srv.doneq) < 0) {
        char ebuf[128];
        log_error("cannot create an eventfd: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        goto out_queues;
    }
    srv.replies_cap = 256;
    srv.replies = xcalloc(srv.replies_cap, sizeof(*srv.replies));
    srv.workers = xcalloc(cfg->workers, sizeof(*srv.workers));
    srv.loop = s2_ioloop_new(&lp);
    if (srv.loop == NULL)
        goto out_doneq;
    srv.done_ev =
        event_new(s2_ioloop_base(srv.loop), srv.doneq.efd, EV_READ | EV_PERSIST, on_done, &srv);
    if (srv.done_ev == NULL || event_add(srv.done_ev, NULL) < 0) {
        log_error("cannot watch the completion eventfd");
        goto out_loop;
    }
    if (start_workers(&srv) < 0) {
        stop_workers(&srv);
        goto out_loop;
    }
    log_info("threads mode: %u workers, batch %u", cfg->workers, cfg->batch);
    rc = s2_ioloop_run(srv.loop) == 0 ? 0 : 1;
    stop_workers(&srv);
    if (srv.cache) {
        struct authcache_stats cs;
        authcache_get_stats(srv.cache, &cs);
        log_info("auth cache: %" PRIu64 " hits, %" PRIu64 " misses, %zu entries", cs.hits,
                 cs.misses, cs.entries);
    }

out_loop:
    if (srv.done_ev)
        event_free(srv.done_ev);
    s2_ioloop_free(srv.loop);
out_doneq:
    free(srv.workers);
    free(srv.replies);
    s2_doneq_release(&srv.doneq);
out_queues:
    s2_workq_release(&srv.workq);
    authcache_free(srv.cache);
    backend_health_release(&srv.health);
    return rc;
}
