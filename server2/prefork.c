/*
 * prefork.c - see prefork.h.
 *
 * DESIGN
 * Parent: single-threaded, never touches a connection or the database. It blocks SIGTERM,
 * SIGINT and SIGCHLD and takes them with sigtimedwait, so there are no async handlers. It
 * forks the children, reaps them, restarts one that exits while we are not stopping (at once,
 * or after RESTART_DELAY_MS if it lived less than that, so a child that cannot start does not
 * spin), and on SIGTERM/SIGINT forwards SIGTERM to every child and waits for them all (SIGKILL
 * after KILL_AFTER_MS). Exit code 0 iff every child exited 0 after the stop.
 * Child: its own event loop (ioloop.h) on the inherited listening socket, its own backend
 * session and auth cache. The jobs a read yields are queued in the child and worked from a
 * zero-delay timer, s2_auth_take_max at a time (all of --batch at cost min, else one): one
 * database round trip per group, and the loop gets to write each group's replies (and read
 * more) before the next group is hashed, so no answer waits behind a long run of argon2.
 * The children share, in one
 * MAP_SHARED region made before the first fork: the array of connection counts that spreads
 * connections evenly (see ioloop.h), and the backend health record (backend.h), so a restart
 * of the database is logged once and every child drops its pre-restart connection before
 * using it. A child gets SIGTERM if the parent dies (PR_SET_PDEATHSIG).
 */
#include "prefork.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "authcache.h"
#include "backend.h"
#include "clock.h"
#include "ioloop.h"
#include "log.h"
#include "workq.h"
#include "xalloc.h"

#define RESTART_DELAY_MS 1000
#define DRAIN_TIMEOUT_MS 30000
#define KILL_AFTER_MS (DRAIN_TIMEOUT_MS + 5000)
#define IDLE_RECONNECT_MS 1000

/* What the parent shares with every child. */
struct shared {
    struct backend_health health;
    _Atomic uint32_t counts[]; /* one per child: open connections, or S2_IOLOOP_ABSENT */
};

struct child_slot {
    pid_t pid; /* 0 = not running */
    uint64_t started_ns;
    uint64_t restart_at_ns; /* 0 = no restart scheduled */
};

/* State of one child process (lives in the child only). */
struct child_ctx {
    const struct s2_config *cfg;
    struct s2_auth *auth;
    struct authcache *cache;  /* NULL when --auth-cache 0 */
    struct s2_workq queue;    /* jobs read and not yet worked (this thread only) */
    struct s2_job *jobs;      /* cfg->batch entries */
    struct s2_reply *replies; /* cfg->batch entries */
    size_t nreplies;
    struct event *work;       /* zero-delay timer: work the next group */
    struct s2_ioloop *loop;
};

static const struct timeval zero_tv = {0, 0};

static void child_settled(void *arg, const struct s2_job *j)
{
    struct child_ctx *cc = arg;
    cc->replies[cc->nreplies++] = s2_reply_of(j);
}

static void child_flush(void *arg)
{
    struct child_ctx *cc = arg;
    if (cc->nreplies > 0)
        s2_ioloop_reply(cc->loop, cc->replies, cc->nreplies);
    cc->nreplies = 0;
}

/* A timer rather than event_active: timers run after the loop has polled, so the replies
 * queued by the previous group are written first. */
static void on_child_work(evutil_socket_t fd, short what, void *arg)
{
    struct child_ctx *cc = arg;
    const struct s2_auth_sink sink = {.settled = child_settled, .flush = child_flush, .arg = cc};
    bool closed;
    size_t n;

    UNUSED(fd);
    UNUSED(what);
    n = s2_workq_pop(&cc->queue, cc->jobs, s2_auth_take_max(cc->auth), 0, &closed);
    if (n == 0)
        return;
    s2_auth_run(cc->auth, cc->jobs, n, &sink);
    sodium_memzero(cc->jobs, n * sizeof(*cc->jobs));
    if (cc->queue.len > 0)
        evtimer_add(cc->work, &zero_tv);
}

static void on_child_dispatch(struct s2_ioloop *loop, struct s2_job *jobs, size_t n, void *arg)
{
    struct child_ctx *cc = arg;

    UNUSED(loop);
    s2_auth_mark_cheap(cc->cache, jobs, n);
    s2_workq_push(&cc->queue, jobs, n);
    if (!evtimer_pending(cc->work, NULL))
        evtimer_add(cc->work, &zero_tv);
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    struct child_ctx *cc = arg;
    UNUSED(fd);
    UNUSED(what);
    if (!s2_auth_connected(cc->auth))
        s2_auth_connect(cc->auth);
}

static int child_main(const struct s2_config *cfg, int listen_fd, unsigned index, struct shared *sh)
{
    const struct backend_ops *ops = backend_ops_for(&cfg->backend);
    struct authcache *cache = NULL;
    struct child_ctx cc = {.cfg = cfg};
    struct event *reconnect = NULL;
    struct timeval every = {.tv_sec = IDLE_RECONNECT_MS / 1000,
                            .tv_usec = (IDLE_RECONNECT_MS % 1000) * 1000};
    struct s2_ioloop_params lp = {
        .listen_fd = listen_fd,
        .max_conns = cfg->max_conns,
        .max_inflight = cfg->max_inflight,
        .batch = cfg->batch,
        .idle_timeout_us = cfg->idle_timeout_us,
        .drain_timeout_ms = DRAIN_TIMEOUT_MS,
        .dispatch = on_child_dispatch,
        .arg = &cc,
        .shared_counts = sh->counts,
        .nshared = cfg->workers,
        .shared_index = index,
    };
    struct s2_auth_stats st;
    int rc = 1;

    if (ops->thread_init)
        ops->thread_init();
    if (cfg->auth_cache_entries > 0)
        cache = authcache_new(cfg->auth_cache_entries, cfg->auth_cache_ttl_us * 1000);
    cc.replies = xcalloc(cfg->batch, sizeof(*cc.replies));
    cc.jobs = xcalloc(cfg->batch, sizeof(*cc.jobs));
    s2_workq_init(&cc.queue);
    s2_workq_set_max_slow(&cc.queue, cfg->max_queue);
    cc.cache = cache;
    cc.auth = s2_auth_new(ops, &cfg->backend, &sh->health, cache, cfg->hash_cost, cfg->batch);
    cc.loop = s2_ioloop_new(&lp);
    if (cc.loop == NULL)
        goto out;
    cc.work = evtimer_new(s2_ioloop_base(cc.loop), on_child_work, &cc);
    if (cc.work == NULL) {
        log_error("cannot create the work timer");
        goto out;
    }
    reconnect = event_new(s2_ioloop_base(cc.loop), -1, EV_PERSIST, on_reconnect_timer, &cc);
    if (reconnect == NULL || event_add(reconnect, &every) < 0) {
        log_error("cannot arm the reconnect timer");
        goto out;
    }
    s2_auth_connect(cc.auth);
    rc = s2_ioloop_run(cc.loop) == 0 ? 0 : 1;
    s2_auth_get_stats(cc.auth, &st);
    log_debug("worker %u done: %" PRIu64 " requests in %" PRIu64 " batches, %" PRIu64
              " cache hits, %" PRIu64 " verifications for unknown users, %" PRIu64 " expired",
              index, st.jobs, st.batches, st.cache_hits, st.dummy_verifies, st.expired);

out:
    if (reconnect)
        event_free(reconnect);
    if (cc.work)
        event_free(cc.work);
    s2_ioloop_free(cc.loop);
    s2_auth_free(cc.auth);
    s2_workq_release(&cc.queue);
    free(cc.jobs);
    free(cc.replies);
    authcache_free(cache);
    if (ops->thread_end)
        ops->thread_end();
    atomic_store(&sh->counts[index], S2_IOLOOP_ABSENT);
    return rc;
}

/* Forks child `index`; 0 in the parent (slot filled), -1 if fork failed. Never returns in the
 * child. */
static int spawn(const struct s2_config *cfg, int listen_fd, unsigned index,
                 struct child_slot *slot, struct shared *sh, const sigset_t *child_mask)
{
    pid_t parent = getpid();
    pid_t pid;

    atomic_store(&sh->counts[index], 0);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        char ebuf[128];
        log_error("cannot fork worker %u: %s", index, strerror_r(errno, ebuf, sizeof(ebuf)));
        atomic_store(&sh->counts[index], S2_IOLOOP_ABSENT);
        return -1;
    }
    if (pid == 0) {
        char name[16];
        int rc;
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0); /* the parent died before PR_SET_PDEATHSIG took effect */
        snprintf(name, sizeof(name), "s2-proc-%u", index);
        pthread_setname_np(pthread_self(), name);
        sigprocmask(SIG_SETMASK, child_mask, NULL);
        rc = child_main(cfg, listen_fd, index, sh);
        /* exit, not _exit: sanitizers check for leaks and races in their exit hooks. The
         * parent registered no atexit handlers and its stdio buffers were flushed. */
        exit(rc);
    }
    slot->pid = pid;
    slot->started_ns = clock_now_ns();
    slot->restart_at_ns = 0;
    log_debug("worker %u started (pid %d)", index, (int)pid);
    return 0;
}

static void describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    else
        snprintf(out, cap, "changed state (0x%x)", status);
}

int s2_prefork_run(const struct s2_config *cfg, int listen_fd)
{
    unsigned n = cfg->workers;
    struct child_slot *slots = xcalloc(n, sizeof(*slots));
    size_t shared_size = sizeof(struct shared) + sizeof(_Atomic uint32_t) * n;
    struct shared *sh;
    sigset_t waitset;
    sigset_t old;
    bool stopping = false;
    bool clean = true;
    uint64_t kill_at_ns = 0;
    unsigned running = 0;

    sh = mmap(NULL, shared_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        char ebuf[128];
        log_error("cannot map shared memory: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        free(slots);
        return 1;
    }
    backend_health_init(&sh->health, &cfg->backend, true);
    /* Made once here, before the forks, so every child (and every restart) inherits it. */
    if (pwhash_dummy(cfg->hash_cost) == NULL)
        log_warn("cannot make the dummy password hash yet (out of memory); will retry");
    for (unsigned i = 0; i < n; i++)
        atomic_store(&sh->counts[i], S2_IOLOOP_ABSENT);

    sigemptyset(&waitset);
    sigaddset(&waitset, SIGTERM);
    sigaddset(&waitset, SIGINT);
    sigaddset(&waitset, SIGCHLD);
    sigprocmask(SIG_BLOCK, &waitset, &old);

    log_info("processes mode: %u worker processes, batch %u", n, cfg->batch);
    for (unsigned i = 0; i < n; i++) {
        if (spawn(cfg, listen_fd, i, &slots[i], sh, &old) < 0)
            slots[i].restart_at_ns = clock_now_ns() + RESTART_DELAY_MS * 1000000ull;
        else
            running++;
    }

    for (;;) {
        uint64_t now = clock_now_ns();
        uint64_t wake = now + 1000000000ull;
        struct timespec ts;
        siginfo_t si;
        int sig;
        pid_t pid;
        int status;

        if (stopping && running == 0)
            break;
        /* restarts that are due */
        for (unsigned i = 0; i < n && !stopping; i++) {
            if (slots[i].pid != 0 || slots[i].restart_at_ns == 0)
                continue;
            if (slots[i].restart_at_ns <= now) {
                if (spawn(cfg, listen_fd, i, &slots[i], sh, &old) == 0)
                    running++;
                else
                    slots[i].restart_at_ns = now + RESTART_DELAY_MS * 1000000ull;
            } else if (slots[i].restart_at_ns < wake) {
                wake = slots[i].restart_at_ns;
            }
        }
        if (stopping && kill_at_ns != 0 && now >= kill_at_ns) {
            log_warn("%u worker processes still running %d ms after SIGTERM; killing them", running,
                     KILL_AFTER_MS);
            for (unsigned i = 0; i < n; i++)
                if (slots[i].pid != 0)
                    kill(slots[i].pid, SIGKILL);
            kill_at_ns = 0;
            clean = false;
        }
        now = clock_now_ns();
        if (wake > now + 1000000000ull)
            wake = now + 1000000000ull;
        ts.tv_sec = (time_t)((wake > now ? wake - now : 0) / 1000000000ull);
        ts.tv_nsec = (long)((wake > now ? wake - now : 0) % 1000000000ull);
        sig = sigtimedwait(&waitset, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            if (!stopping) {
                log_info("got %s: stopping %u worker processes",
                         sig == SIGINT ? "SIGINT" : "SIGTERM", running);
                stopping = true;
                kill_at_ns = clock_now_ns() + KILL_AFTER_MS * 1000000ull;
            }
            for (unsigned i = 0; i < n; i++)
                if (slots[i].pid != 0)
                    kill(slots[i].pid, SIGTERM);
        }
        /* Reap on SIGCHLD and on every wake-up (several SIGCHLDs may have merged). */
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            char how[64];
            unsigned i;
            for (i = 0; i < n; i++)
                if (slots[i].pid == pid)
                    break;
            if (i == n)
                continue;
            slots[i].pid = 0;
            running--;
            atomic_store(&sh->counts[i], S2_IOLOOP_ABSENT);
            describe_status(status, how, sizeof(how));
            if (stopping) {
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                    clean = false;
                    log_warn("worker %u (pid %d) %s", i, (int)pid, how);
                } else {
                    log_debug("worker %u (pid %d) %s", i, (int)pid, how);
                }
                continue;
            }
            now = clock_now_ns();
            if (now - slots[i].started_ns < RESTART_DELAY_MS * 1000000ull) {
                log_warn("worker %u (pid %d) %s %llu ms after it started; restarting it in %d ms",
                         i, (int)pid, how,
                         (unsigned long long)((now - slots[i].started_ns) / 1000000),
                         RESTART_DELAY_MS);
                slots[i].restart_at_ns = now + RESTART_DELAY_MS * 1000000ull;
            } else {
                log_warn("worker %u (pid %d) %s unexpectedly; restarting it", i, (int)pid, how);
                slots[i].restart_at_ns = now;
            }
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    backend_health_release(&sh->health);
    munmap(sh, shared_size);
    free(slots);
    log_info("all worker processes stopped");
    return clean ? 0 : 1;
}
