/*
 * prefork.c - see prefork.h.
 *
 * DESIGN
 * Parent: single-threaded, never touches a connection or the database. It blocks SIGTERM,
 * SIGINT, SIGHUP and SIGCHLD and takes them with sigtimedwait, so there are no async handlers
 * (SIGHUP is logged: nothing is reloaded; a child ignores it). It tells systemd (sdnotify.h)
 * READY=1 once the children are forked and STOPPING=1 at the first SIGTERM/SIGINT. It
 * forks the children, reaps them, restarts one that exits while we are not stopping (at once,
 * or after RESTART_DELAY_MS if it lived less than that, so a child that cannot start does not
 * spin), and on SIGTERM/SIGINT forwards SIGTERM to every child and waits for them all (SIGKILL
 * after KILL_AFTER_MS). Exit code 0 iff every child exited 0 after the stop.
 * Child: one worker (loopworker.h) on the inherited listening socket, with its own event
 * loop, backend session and auth cache. The children share, in one
 * MAP_SHARED region made before the first fork: the array of connection counts that spreads
 * connections evenly (see ioloop.h), and the backend health record (backend.h), so a restart
 * of the database is logged once and every child drops its pre-restart connection before
 * using it; and in another, the invalidation bus (invalbus.h). A child gets SIGTERM if the parent dies (PR_SET_PDEATHSIG).
 */
#include "prefork.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
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
#include "invalbus.h"
#include "ioloop.h"
#include "loopworker.h"
#include "log.h"
#include "net.h"
#include "sdnotify.h"
#include "xalloc.h"

#define RESTART_DELAY_MS 1000
#define KILL_AFTER_MS (S2_DRAIN_TIMEOUT_MS + 5000)

/* What the parent shares with every child. */
struct shared {
    struct backend_health health;
    struct invalbus *bus; /* its own MAP_SHARED region, one member per child */
    _Atomic uint32_t counts[]; /* one per child: open connections, or S2_IOLOOP_ABSENT */
};

struct child_slot {
    pid_t pid; /* 0 = not running */
    uint64_t started_ns;
    uint64_t restart_at_ns; /* 0 = no restart scheduled */
};

static int child_main(const struct s2_config *cfg, int listen_fd, unsigned index, struct shared *sh)
{
    struct authcache *cache = NULL;
    struct s2_auth_stats st;
    struct s2_ioloop_stats io;
    struct s2_loopworker_params p = {
        .cfg = cfg,
        .listen_fd = listen_fd,
        .index = index,
        .shared_counts = sh->counts,
        .health = &sh->health,
        .bus = sh->bus,
        .stop_fd = -1, /* the child takes SIGTERM itself */
    };
    int rc;

    if (cfg->auth_cache_entries > 0)
        cache = authcache_new(cfg->auth_cache_entries, cfg->auth_cache_ttl_us * 1000);
    p.cache = cache;
    rc = s2_loopworker_run(&p, &st, &io);
    s2_ioloop_log_stats(&io);
    log_debug("worker %u done: %" PRIu64 " requests in %" PRIu64 " batches, %" PRIu64
              " cache hits, %" PRIu64 " verifications for unknown users, %" PRIu64 " expired, %"
              PRIu64 " failed logins charged, %" PRIu64 " refused over --login-fail-limit",
              index, st.jobs, st.batches, st.cache_hits, st.dummy_verifies, st.expired,
              st.fails_charged, st.limited);
    authcache_free(cache);
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
        signal(SIGHUP, SIG_IGN); /* the parent's to answer, even when sent to the whole group */
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
    sh->bus = mmap(NULL, invalbus_size(n), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (sh->bus == MAP_FAILED || invalbus_init(sh->bus, n, true) < 0) {
        char ebuf[128];
        log_error("cannot set up the invalidation bus: %s", strerror_r(errno, ebuf, sizeof(ebuf)));
        if (sh->bus != MAP_FAILED)
            munmap(sh->bus, invalbus_size(n));
        backend_health_release(&sh->health);
        munmap(sh, shared_size);
        free(slots);
        return 1;
    }
    /* Made once here, before the forks, so every child (and every restart) inherits it. */
    if (pwhash_dummy(cfg->hash_cost) == NULL)
        log_warn("cannot make the dummy password hash yet (out of memory); will retry");
    for (unsigned i = 0; i < n; i++)
        atomic_store(&sh->counts[i], S2_IOLOOP_ABSENT);

    sigemptyset(&waitset);
    sigaddset(&waitset, SIGTERM);
    sigaddset(&waitset, SIGINT);
    sigaddset(&waitset, SIGHUP);
    sigaddset(&waitset, SIGCHLD);
    sigprocmask(SIG_BLOCK, &waitset, &old);

    log_info("processes mode: %u worker processes, batch %u", n, cfg->batch);
    for (unsigned i = 0; i < n; i++) {
        if (spawn(cfg, listen_fd, i, &slots[i], sh, &old) < 0)
            slots[i].restart_at_ns = clock_now_ns() + RESTART_DELAY_MS * 1000000ull;
        else
            running++;
    }
    {
        char ready[160];
        snprintf(ready, sizeof(ready),
                 "READY=1\nSTATUS=listening on %s:%u, processes mode, %u workers",
                 cfg->listen_addr, net_local_port(listen_fd), n);
        sdnotify_or_warn(ready);
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
                sdnotify_or_warn("STOPPING=1");
                log_info("got %s: stopping %u worker processes",
                         sig == SIGINT ? "SIGINT" : "SIGTERM", running);
                stopping = true;
                kill_at_ns = clock_now_ns() + KILL_AFTER_MS * 1000000ull;
            }
            for (unsigned i = 0; i < n; i++)
                if (slots[i].pid != 0)
                    kill(slots[i].pid, SIGTERM);
        } else if (sig == SIGHUP) {
            log_info("SIGHUP: nothing to reload (server2 reads its settings only at start), "
                     "ignored");
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
            invalbus_leave(sh->bus, i); /* (a crash skipped its own leave) */
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
    invalbus_release(sh->bus);
    munmap(sh->bus, invalbus_size(n));
    munmap(sh, shared_size);
    free(slots);
    log_info("all worker processes stopped");
    return clean ? 0 : 1;
}
