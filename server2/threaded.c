/*
 * threaded.c - see threaded.h.
 *
 * DESIGN
 *   worker i (a thread): s2_loopworker_run - its own event loop with the connections it
 *             accepted, its own database session; every request answered on that thread
 *   main thread: blocks SIGTERM/SIGINT/SIGHUP in every thread and takes them with
 *             sigtimedwait; on SIGTERM/SIGINT, writes every worker's stop eventfd, then joins
 *             them; SIGHUP is logged, nothing is reloaded. It tells systemd (sdnotify.h)
 *             READY=1 once the workers run and STOPPING=1 when they are told to stop
 * Nothing a request needs crosses threads: no queue, no wake-up of another thread, no hop
 * back. What the workers share is thread-safe: the auth cache (striped locks), the backend
 * health record, the connection counts that spread server1's connections over the workers
 * (ioloop.h), and the invalidation bus (invalbus.h).
 */
#include "threaded.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "authcache.h"
#include "backend.h"
#include "invalbus.h"
#include "ioloop.h"
#include "log.h"
#include "loopworker.h"
#include "net.h"
#include "pwhash.h"
#include "sdnotify.h"
#include "xalloc.h"

struct s2_worker {
    pthread_t tid;
    bool started;
    struct s2_loopworker_params p;
    struct s2_auth_stats stats; /* written by the worker just before it exits */
    struct s2_ioloop_stats io;
    int rc;
    _Atomic bool done;
};

static void *worker_thread_main(void *arg)
{
    struct s2_worker *w = arg;
    char name[16];

    snprintf(name, sizeof(name), "s2-wrk-%u", w->p.index);
    pthread_setname_np(pthread_self(), name);
    w->rc = s2_loopworker_run(&w->p, &w->stats, &w->io);
    atomic_store(&w->done, true);
    return NULL;
}

static void stop_all(struct s2_worker *workers, unsigned n)
{
    uint64_t one = 1;
    for (unsigned i = 0; i < n; i++) {
        ssize_t r = write(workers[i].p.stop_fd, &one, sizeof(one));
        (void)r; /* an eventfd write fails only if the counter would overflow */
    }
}

static bool any_done(struct s2_worker *workers, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (workers[i].started && atomic_load(&workers[i].done))
            return true;
    return false;
}

static void log_totals(struct s2_worker *workers, unsigned n, struct authcache *cache)
{
    struct s2_auth_stats sum = {0};
    struct s2_ioloop_stats io = {0};

    for (unsigned i = 0; i < n; i++) {
        struct s2_auth_stats *s = &workers[i].stats;
        if (!workers[i].started)
            continue;
        sum.batches += s->batches;
        sum.jobs += s->jobs;
        sum.hashes += s->hashes;
        sum.verifies += s->verifies;
        sum.cache_hits += s->cache_hits;
        sum.unavailable += s->unavailable;
        sum.expired += s->expired;
        sum.dummy_verifies += s->dummy_verifies;
        sum.changes += s->changes;
        sum.rejected += s->rejected;
        sum.limited += s->limited;
        sum.fails_charged += s->fails_charged;
        s2_ioloop_stats_add(&io, &workers[i].io);
    }
    s2_ioloop_log_stats(&io);
    log_info("workers done: %" PRIu64 " requests in %" PRIu64 " batches, %" PRIu64
             " hashes, %" PRIu64 " verifications (%" PRIu64 " for unknown users), %" PRIu64
             " cache hits, %" PRIu64 " unavailable (%" PRIu64 " over --max-queue), %" PRIu64
             " expired, %" PRIu64 " account changes; %" PRIu64 " failed logins charged, %" PRIu64
             " refused over --login-fail-limit",
             sum.jobs, sum.batches, sum.hashes, sum.verifies + sum.dummy_verifies,
             sum.dummy_verifies, sum.cache_hits, sum.unavailable, sum.rejected, sum.expired,
             sum.changes, sum.fails_charged, sum.limited);
    if (cache) {
        struct authcache_stats cs;
        authcache_get_stats(cache, &cs);
        log_info("auth cache: %" PRIu64 " hits, %" PRIu64 " misses, %zu entries", cs.hits,
                 cs.misses, cs.entries);
    }
}

int s2_threaded_run(const struct s2_config *cfg, int listen_fd)
{
    unsigned n = cfg->workers;
    struct s2_worker *workers = xcalloc(n, sizeof(*workers));
    _Atomic uint32_t *counts = xcalloc(n, sizeof(*counts));
    struct backend_health health;
    struct authcache *cache = NULL;
    struct invalbus *bus = xcalloc(1, invalbus_size(n));
    sigset_t sigs;
    sigset_t old;
    bool stopping = false;
    int rc = 0;

    backend_health_init(&health, &cfg->backend, false);
    if (cfg->auth_cache_entries > 0)
        cache = authcache_new(cfg->auth_cache_entries, cfg->auth_cache_ttl_us * 1000);
    /* The dummy hash for unknown users, made once now rather than by the first request. */
    if (pwhash_dummy(cfg->hash_cost) == NULL)
        log_warn("cannot make the dummy password hash yet (out of memory); will retry");
    if (invalbus_init(bus, n, false) < 0) {
        char ebuf[128];
        log_error("cannot create an eventfd: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        free(bus);
        bus = NULL;
        rc = 1;
        goto out;
    }
    for (unsigned i = 0; i < n; i++)
        workers[i].p.stop_fd = -1;
    for (unsigned i = 0; i < n; i++) {
        atomic_init(&counts[i], 0); /* all join the balance at once (ioloop.h) */
        workers[i].p = (struct s2_loopworker_params){
            .cfg = cfg,
            .listen_fd = listen_fd,
            .index = i,
            .shared_counts = counts,
            .health = &health,
            .bus = bus,
            .cache = cache,
            .stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
        };
        if (workers[i].p.stop_fd < 0) {
            char ebuf[128];
            log_error("cannot create an eventfd: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
            rc = 1;
            goto out;
        }
    }

    /* Only this thread takes SIGTERM/SIGINT/SIGHUP: the workers inherit the blocked mask. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    for (unsigned i = 0; i < n; i++) {
        int e = pthread_create(&workers[i].tid, NULL, worker_thread_main, &workers[i]);
        if (e != 0) {
            char ebuf[128];
            log_error("cannot start worker thread %u: %s", i, strerror_r(e, ebuf, sizeof(ebuf)));
            atomic_store(&counts[i], S2_IOLOOP_ABSENT);
            rc = 1;
            break;
        }
        workers[i].started = true;
    }
    if (rc == 0) {
        char ready[160];
        log_info("threads mode: %u workers, each with its own event loop and connections, "
                 "batch %u",
                 n, cfg->batch);
        snprintf(ready, sizeof(ready),
                 "READY=1\nSTATUS=listening on %s:%u, threads mode, %u workers",
                 cfg->listen_addr, net_local_port(listen_fd), n);
        sdnotify_or_warn(ready);
    }
    while (rc == 0 && !stopping) {
        struct timespec ts = {.tv_sec = 1, .tv_nsec = 0};
        int sig = sigtimedwait(&sigs, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            log_info("got %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
            stopping = true;
        } else if (sig == SIGHUP) {
            log_info("SIGHUP: nothing to reload (server2 reads its settings only at start), "
                     "ignored");
        } else if (any_done(workers, n)) {
            log_error("a worker stopped on its own; stopping the others");
            rc = 1;
        }
    }
    sdnotify_or_warn("STOPPING=1");
    stop_all(workers, n);
    for (unsigned i = 0; i < n; i++) {
        if (!workers[i].started)
            continue;
        pthread_join(workers[i].tid, NULL);
        if (workers[i].rc != 0)
            rc = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    log_totals(workers, n, cache);

out:
    for (unsigned i = 0; i < n; i++)
        if (workers[i].p.stop_fd >= 0)
            close(workers[i].p.stop_fd);
    if (bus) {
        invalbus_release(bus);
        free(bus);
    }
    authcache_free(cache);
    backend_health_release(&health);
    free(counts);
    free(workers);
    return rc;
}
