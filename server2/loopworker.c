/*
 * loopworker.c - see loopworker.h.
 */
#include "loopworker.h"

#include <event2/event.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "changefeed.h"
#include "ioloop.h"
#include "log.h"
#include "sentinelwatch.h"
#include "workq.h"
#include "xalloc.h"

#define IDLE_RECONNECT_MS 1000

struct worker {
    const struct s2_config *cfg;
    struct s2_auth *auth;
    struct authcache *cache;  /* NULL when --auth-cache 0 */
    struct s2_workq queue;    /* jobs read and not yet worked (this thread only) */
    struct s2_job *jobs;      /* cfg->batch entries */
    struct s2_reply *replies; /* cfg->batch entries */
    size_t nreplies;
    struct event *work;       /* zero-delay timer: work the next group */
    struct event *stop;       /* threads mode: the stop descriptor */
    struct s2_ioloop *loop;
};

static const struct timeval zero_tv = {0, 0};

static void worker_settled(void *arg, const struct s2_job *j)
{
    struct worker *w = arg;
    w->replies[w->nreplies++] = s2_reply_of(j);
}

static void worker_flush(void *arg)
{
    struct worker *w = arg;
    if (w->nreplies > 0)
        s2_ioloop_reply(w->loop, w->replies, w->nreplies);
    w->nreplies = 0;
}

/* A timer rather than event_active: timers run after the loop has polled, so the replies
 * queued by the previous group are written first. */
static void on_work(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    const struct s2_auth_sink sink = {.settled = worker_settled, .flush = worker_flush, .arg = w};
    size_t n;

    UNUSED(fd);
    UNUSED(what);
    n = s2_workq_pop(&w->queue, w->jobs, s2_auth_take_max(w->auth));
    if (n == 0)
        return;
    s2_auth_run(w->auth, w->jobs, n, &sink);
    sodium_memzero(w->jobs, n * sizeof(*w->jobs));
    if (w->queue.len > 0)
        evtimer_add(w->work, &zero_tv);
}

static void on_dispatch(struct s2_ioloop *loop, struct s2_job *jobs, size_t n, void *arg)
{
    struct worker *w = arg;

    UNUSED(loop);
    s2_auth_mark_cheap(w->cache, jobs, n);
    s2_workq_push(&w->queue, jobs, n);
    if (!evtimer_pending(w->work, NULL))
        evtimer_add(w->work, &zero_tv);
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    UNUSED(fd);
    UNUSED(what);
    s2_auth_connect(w->auth); /* connects, or replaces an outdated connection */
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof(v));

    UNUSED(what);
    UNUSED(r);
    event_del(w->stop);
    s2_ioloop_stop(w->loop);
}

int s2_loopworker_run(const struct s2_loopworker_params *p, struct s2_auth_stats *stats,
                      struct s2_ioloop_stats *io)
{
    const struct s2_config *cfg = p->cfg;
    const struct backend_ops *ops = backend_ops_for(&cfg->backend);
    struct worker w = {.cfg = cfg, .cache = p->cache};
    struct event *reconnect = NULL;
    struct sentinelwatch *watch = NULL;
    struct changefeed *feed = NULL;
    struct timeval every = {.tv_sec = IDLE_RECONNECT_MS / 1000,
                            .tv_usec = (IDLE_RECONNECT_MS % 1000) * 1000};
    struct s2_ioloop_params lp = {
        .listen_fd = p->listen_fd,
        .max_conns = cfg->max_conns,
        .max_inflight = cfg->max_inflight,
        .batch = cfg->batch,
        .idle_timeout_us = cfg->idle_timeout_us,
        .drain_timeout_ms = S2_DRAIN_TIMEOUT_MS,
        .handshake_timeout_us = cfg->handshake_timeout_us,
        .max_unauth = cfg->max_unauth_conns,
        .max_unauth_per_addr = cfg->max_unauth_conns_per_ip,
        .dispatch = on_dispatch,
        .arg = &w,
        .shared_counts = p->shared_counts,
        .nshared = cfg->workers,
        .shared_index = p->index,
        .bus = p->bus,
        .bus_member = p->index,
        .no_signals = p->stop_fd >= 0,
    };
    int rc = 1;

    memset(stats, 0, sizeof(*stats));
    memset(io, 0, sizeof(*io));
    if (ops->thread_init)
        ops->thread_init();
    w.replies = xcalloc(cfg->batch, sizeof(*w.replies));
    w.jobs = xcalloc(cfg->batch, sizeof(*w.jobs));
    s2_workq_init(&w.queue);
    s2_workq_set_max_slow(&w.queue, cfg->max_queue);
    w.auth = s2_auth_new(ops, &cfg->backend, p->health, p->cache, cfg->hash_cost, cfg->batch);
    w.loop = s2_ioloop_new(&lp);
    if (w.loop == NULL)
        goto out;
    w.work = evtimer_new(s2_ioloop_base(w.loop), on_work, &w);
    if (w.work == NULL) {
        log_error("cannot create the work timer");
        goto out;
    }
    reconnect = event_new(s2_ioloop_base(w.loop), -1, EV_PERSIST, on_reconnect_timer, &w);
    if (reconnect == NULL || event_add(reconnect, &every) < 0) {
        log_error("cannot arm the reconnect timer");
        goto out;
    }
    if (p->stop_fd >= 0) {
        w.stop = event_new(s2_ioloop_base(w.loop), p->stop_fd, EV_READ | EV_PERSIST, on_stop, &w);
        if (w.stop == NULL || event_add(w.stop, NULL) < 0) {
            log_error("cannot watch the stop descriptor");
            goto out;
        }
    }
    s2_auth_connect(w.auth);
    if (p->index == 0 && cfg->backend.sentinel)
        watch = sentinelwatch_start(&cfg->backend, p->health);
    if (p->index == 0) {
        const struct changefeed_params fp = {
            .ops = ops, .url = &cfg->backend, .health = p->health, .bus = p->bus};
        feed = changefeed_start(&fp); /* NULL: no leases, so no server1 answers from its cache */
    }
    rc = s2_ioloop_run(w.loop) == 0 ? 0 : 1;
    sentinelwatch_stop(watch);
    s2_auth_get_stats(w.auth, stats);
    stats->rejected = w.queue.rejected;
    s2_ioloop_get_stats(w.loop, io);

out:
    if (w.stop)
        event_free(w.stop);
    if (reconnect)
        event_free(reconnect);
    if (w.work)
        event_free(w.work);
    s2_ioloop_free(w.loop); /* (leaves the bus) */
    changefeed_stop(feed);  /* after: it leaves the registry once every loop is gone */
    s2_auth_free(w.auth);
    s2_workq_release(&w.queue);
    free(w.jobs);
    free(w.replies);
    if (ops->thread_end)
        ops->thread_end();
    return rc;
}
