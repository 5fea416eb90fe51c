/*
 * main.c - server1 entry point: flags -> config, open (and with --prefetch, load) --root, open
 * --pack (its header and index checked: exit 2 for a damaged one), bind
 * one SO_REUSEPORT socket per worker, start the workers, then wait for SIGTERM/SIGINT: the first
 * drains (in-flight requests finish, bounded by --drain-timeout), a second stops at once.
 * Unless --read-only, the committer (commit.h) opens the upload store (replaying its log) before
 * the workers start and is stopped after they are joined, so drained uploads are committed and
 * answered.
 * With --tls-port, a second set of sockets on that port speaks HTTPS (tls.h); the certificate
 * and key are checked before anything else starts. SIGHUP reads them again (tls.h; without
 * HTTPS it is logged and ignored), and the 500 ms wait for signals also rotates the
 * session-ticket keys (--tls-ticket-rotate). --access-log is opened before the workers start
 * (exit 2 if it cannot be); SIGUSR1 opens it again (accesslog.h: after logrotate moved it).
 * Under systemd (Type=notify, sdnotify.h) it says READY=1 once every worker listens (server2
 * need not be up: requests that need it get 503 until a link is made, authclient.h),
 * RELOADING=1 then READY=1 around each SIGHUP, and STOPPING=1 when it starts to stop.
 * Exit codes: 0 normal, 1 unusable configuration (root, port), 2 bad flags (and a certificate
 * or key that cannot be used, a pack that cannot be read or is damaged).
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "accesslog.h"
#include "clock.h"
#include "commit.h"
#include "config.h"
#include "credcache.h"
#include "files.h"
#include "linkauth.h"
#include "log.h"
#include "mimetypes.h"
#include "net.h"
#include "pack.h"
#include "sdnotify.h"
#include "tls.h"
#include "worker.h"
#include "xalloc.h"

#define S1_LISTEN_BACKLOG 4096
#define S1_FDS_PER_WORKER 6 /* listener, event base, wake-up pipe or eventfd, timers, spare */
#define S1_FD_RESERVE 128   /* root, store segments, logs, prefetch walk, server2 reconnects */
#define S1_MIN_CONNS 8      /* below this many connections the limit is a mistake */

_Static_assert(FILES_ERR_LEN >= S1_CONFIG_ERR_LEN && FILES_ERR_LEN >= NET_ERR_LEN &&
                   FILES_ERR_LEN >= S1_TLS_ERR_LEN,
               "main's error buffer serves config, files, net and tls");

/*
 * The descriptor budget: two per client connection (its socket, and the temp file of an upload
 * it is receiving or the file or segment a response is sent from), per worker its listener,
 * wake-up descriptors and server2 links, and a reserve for the store's segments, the root and
 * the logs. The soft limit is raised to that. When the hard limit cannot hold it, --max-conns
 * is lowered until it can, with one warning, so that a connection server1 accepts can always
 * open the file it asks for; a limit that cannot hold even a few connections stops the start.
 * Returns -1 with a reason in err.
 */
static int fit_fd_budget(struct s1_config *cfg, char *err, size_t cap)
{
    rlim_t overhead =
        (rlim_t)cfg->threads * (cfg->authc.nconns * cfg->authc.nservers + S1_FDS_PER_WORKER) +
        S1_FD_RESERVE;
    rlim_t need = 2 * (rlim_t)cfg->max_conns + overhead;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
            return 0;
    }
    if (rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_cur < overhead + 2 * S1_MIN_CONNS) {
        snprintf(err, cap,
                 "the open-file limit (%llu) is too low: server1 needs at least %llu "
                 "(raise it with ulimit -n)",
                 (unsigned long long)rl.rlim_cur,
                 (unsigned long long)(overhead + 2 * S1_MIN_CONNS));
        return -1;
    }
    log_warn("the open-file limit (%llu) holds %llu connections at 2 descriptors each: "
             "--max-conns lowered from %u",
             (unsigned long long)rl.rlim_cur, (unsigned long long)((rl.rlim_cur - overhead) / 2),
             cfg->max_conns);
    cfg->max_conns = (unsigned)((rl.rlim_cur - overhead) / 2);
    return 0;
}

/*
 * The Content-Type table: --mime-types FILE, else /etc/mime.types (Debian's media-types) when
 * it is there, else the built-in table of common types. -1 with a reason in err.
 */
static int load_types(const struct s1_config *cfg, struct mimetypes *types, const char **from,
                      char *err, size_t cap)
{
    const char *path = cfg->mime_types;

    if (path == NULL && access(MIMETYPES_DEFAULT_PATH, F_OK) == 0)
        path = MIMETYPES_DEFAULT_PATH;
    *from = path;
    if (path == NULL) {
        mimetypes_init_builtin(types);
        return 0;
    }
    if (mimetypes_load_file(types, path, err, cap) < 0) {
        mimetypes_release(types);
        return -1;
    }
    return 0;
}

/*
 * One listening socket per worker, all on the same port (want; 0: a free one, the same for
 * all). Returns -1 with a reason in err.
 */
static int bind_listeners(const struct s1_config *cfg, uint16_t want, int *fds, unsigned n,
                          uint16_t *port, char *err)
{
    uint16_t p = want;

    if (p != 0) {
        /* a socket without SO_REUSEPORT fails if anyone (even another server1) holds the port */
        int probe = net_listen_tcp(cfg->listen, p, false, 1, err);
        if (probe < 0)
            return -1;
        close(probe);
    }
    for (unsigned i = 0; i < n; i++) {
        fds[i] = net_listen_tcp(cfg->listen, p, true, S1_LISTEN_BACKLOG, err);
        if (fds[i] < 0) {
            while (i > 0)
                close(fds[--i]);
            return -1;
        }
        if (p == 0) {
            p = net_local_port(fds[i]);
            if (p == 0) {
                snprintf(err, NET_ERR_LEN, "cannot read the bound port");
                close(fds[i]);
                return -1;
            }
        }
    }
    *port = p;
    return 0;
}

/*
 * --metrics-listen's socket (one: its connections are few, and the first worker takes them).
 * Returns -1 with a reason in err.
 */
static int bind_metrics(const struct s1_config *cfg, int *fd, uint16_t *port, char *err)
{
    *fd = net_listen_tcp(cfg->metrics_host, cfg->metrics_port, false, S1_LISTEN_BACKLOG, err);
    if (*fd < 0)
        return -1;
    *port = cfg->metrics_port != 0 ? cfg->metrics_port : net_local_port(*fd);
    if (*port == 0) {
        snprintf(err, NET_ERR_LEN, "cannot read the bound port");
        close(*fd);
        *fd = -1;
        return -1;
    }
    return 0;
}

/*
 * Credentials server2 accepted lately, which take no failed-login token (login.c,
 * login_reserve): as many as --ratelimit-entries' default holds users; for a minute, so that a
 * user idle longer takes a token again on the next login.
 */
#define KNOWN_LOGINS 65536
#define KNOWN_LOGINS_TTL_NS (60ull * 1000000000ull)

/* The per-client limits that are on (a count or N > 0); false if out of memory. */
static bool limits_init(const struct s1_config *cfg, struct s1_service *sh)
{
    if (cfg->login_fail_user.count > 0 &&
        (sh->login_fail_user = ratelimit_new(&cfg->login_fail_user, cfg->ratelimit_entries)) == NULL)
        return false;
    if (cfg->login_fail_addr.count > 0 &&
        (sh->login_fail_addr = ratelimit_new(&cfg->login_fail_addr, cfg->ratelimit_entries)) == NULL)
        return false;
    if ((sh->login_fail_user != NULL || sh->login_fail_addr != NULL) &&
        (sh->known_logins = credcache_shared_new(KNOWN_LOGINS, KNOWN_LOGINS_TTL_NS)) == NULL)
        return false;
    if (cfg->signup.count > 0 &&
        (sh->signup = ratelimit_new(&cfg->signup, cfg->ratelimit_entries)) == NULL)
        return false;
    if (cfg->list_limit.count > 0 &&
        (sh->list = ratelimit_new(&cfg->list_limit, cfg->ratelimit_entries)) == NULL)
        return false;
    if (cfg->max_conns_per_ip > 0 &&
        (sh->conns_per_ip = connlimit_new(cfg->max_conns_per_ip, cfg->max_conns)) == NULL)
        return false;
    return true;
}

static void limits_release(struct s1_service *sh)
{
    ratelimit_free(sh->login_fail_user);
    ratelimit_free(sh->login_fail_addr);
    credcache_shared_free(sh->known_logins);
    ratelimit_free(sh->signup);
    ratelimit_free(sh->list);
    connlimit_free(sh->conns_per_ip);
}

static bool all_done(struct s1_worker *ws, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (!atomic_load(&ws[i].done))
            return false;
    }
    return true;
}

/* Waits up to timeout_ms for one of the signals in set; returns it, or 0. */
static int wait_signal(const sigset_t *set, long timeout_ms)
{
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/*
 * SIGHUP: the certificate and key read again (tls.h), counted in the first worker's metrics;
 * unless stopping, the service manager is told of the reload (RELOADING=1 ... READY=1), even
 * when there is nothing to reload or it fails (the old certificate serves on).
 */
static void reload_tls(struct s1_tls *tls, struct metrics *m, bool stopping)
{
    char info[S1_TLS_INFO_LEN];
    char err[S1_TLS_ERR_LEN];

    if (!stopping)
        sdnotify_reloading_or_warn();
    if (tls == NULL) {
        log_info("SIGHUP: no --tls-cert to reload, ignored");
    } else if (s1_tls_reload(tls, info, err) < 0) {
        log_warn("SIGHUP: certificate not reloaded, the one in use kept: %s", err);
        metrics_add(&m->tls_reloads_failed, 1);
    } else {
        log_info("certificate reloaded: %s", info);
        metrics_add(&m->tls_reloads, 1);
    }
    if (!stopping)
        sdnotify_or_warn("READY=1");
}

/* SIGUSR1: the access log opened again (logrotate moved it); each worker takes it. */
static void reopen_access_log(struct accesslog *alog)
{
    char err[ACCESSLOG_ERR_LEN];

    if (alog == NULL || alog->path == NULL) {
        log_info("SIGUSR1: no --access-log file to reopen (%s), ignored",
                 alog == NULL ? "none" : "stdout");
        return;
    }
    if (accesslog_reopen(alog, err) < 0) {
        log_error("SIGUSR1: access log not reopened, the old file kept: %s", err);
        return;
    }
    log_info("SIGUSR1: access log reopened");
}

/* A new session-ticket key when --tls-ticket-rotate has passed (tls.h). */
static void rotate_tickets(struct s1_tls *tls, struct metrics *m)
{
    int r;

    if (tls == NULL)
        return;
    r = s1_tls_tick(tls, clock_now_ns());
    if (r > 0) {
        log_debug("new session-ticket key");
        metrics_add(&m->tls_ticket_rotations, 1);
    } else if (r < 0) {
        log_warn("cannot make a session-ticket key (RAND_bytes): the ones in use kept");
    }
}

/*
 * glibc keeps what the workers free (upload bodies up to --upload-memory, response buffers) in
 * its arenas, and gives little of it back: after every burst of uploads RSS stays where the
 * burst took it, plus fragmentation, and creeps up over a long run although the memory in use
 * does not (measured: 0.78 MB in use and flat, RSS 7.9 -> 8.8 MB in 8 minutes of mixed load).
 * The main thread, idle otherwise, hands the free pages back every TRIM_INTERVAL_NS.
 */
#define TRIM_INTERVAL_NS (10ull * 1000000000ull)
/*
 * glibc serves a block of at least its mmap threshold (128 KiB at first) with mmap, and gives
 * it back at free, but raises the threshold to the size of every such block freed (up to
 * 32 MiB): after the first 1 MiB upload body is freed, the next one comes from an arena, whose
 * pages stay: a step of RSS at a time no one chose (+1 MiB, 7.7%, late in a 2-minute soak).
 * Setting the threshold fixes it (mallopt turns the raising off). 512 KiB: upload bodies beyond
 * it go back when freed, while the 256 KiB buffers of --read direct responses (respbuf.h), one
 * per response and bounded by --response-memory, stay in the arenas and cost no mmap and no
 * page faults each time.
 */
#define MMAP_THRESHOLD_BYTES (512 * 1024)

/* A sanitizer's allocator stands in for glibc's and has no mmap threshold to set. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_IS_GLIBC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_IS_GLIBC 0
#endif
#endif
#if !defined(HEAP_IS_GLIBC) && defined(__GLIBC__)
#define HEAP_IS_GLIBC 1
#endif

static void heap_setup(void)
{
#if HEAP_IS_GLIBC
    if (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) != 1)
        log_warn("cannot set the allocator's mmap threshold; RSS may keep freed upload bodies");
#endif
}

static void trim_heap(uint64_t *next)
{
    uint64_t now = clock_now_ns();

    if (now < *next)
        return;
    *next = now + TRIM_INTERVAL_NS;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

int main(int argc, char **argv)
{
    struct s1_config cfg;
    char err[FILES_ERR_LEN]; /* >= S1_CONFIG_ERR_LEN and NET_ERR_LEN */
    struct files files;
    struct pack pack = {.fd = -1};
    struct committer commit;
    bool have_commit = false;
    struct s1_shared sh;
    struct s1_worker *ws = NULL;
    struct metrics **all = NULL;
    struct mimetypes types;
    const char *types_from;
    int *fds = NULL;
    int *tls_fds = NULL;
    int metrics_fd = -1;
    uint16_t metrics_port = 0;
    struct s1_tls *tls = NULL;
    struct accesslog alog_store;
    struct accesslog *alog = NULL;
    unsigned started = 0;
    uint16_t port = 0;
    uint16_t tls_port = 0;
    sigset_t sigs;
    int sig;
    int rc = 1;

    s1_config_defaults(&cfg);
    switch (s1_config_parse(&cfg, argc, argv, err)) {
    case S1_CONFIG_EXIT:
        return 0;
    case S1_CONFIG_ERROR:
        fprintf(stderr, "server1: %s\n", err);
        return 2;
    case S1_CONFIG_OK:
        break;
    }
    log_init("server1", cfg.log_level);
    heap_setup(); /* before any thread: mallopt is not for a running process's threads */
    if (cfg.insecure_no_secret) {
        linkauth_insecure_key(cfg.authc.link_key);
        log_warn("--insecure-no-secret: the link to server2 is not authenticated");
    } else {
        char kerr[LINKAUTH_ERR_LEN];
        if (linkauth_load_key(cfg.auth_secret_file, cfg.authc.link_key, kerr) < 0) {
            fprintf(stderr, "server1: %s\n", kerr);
            return 1;
        }
    }

    if (credcache_global_init() < 0) {
        fprintf(stderr, "server1: libsodium cannot start\n");
        return 1;
    }

    /* only this thread takes SIGTERM/SIGINT/SIGHUP/SIGUSR1; workers inherit the blocked mask */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (fit_fd_budget(&cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "server1: %s\n", err);
        return 1;
    }

    if (load_types(&cfg, &types, &types_from, err, sizeof(err)) < 0) {
        fprintf(stderr, "server1: %s\n", err);
        return 1;
    }
    if (files_init(&files, cfg.root, s1_config_files_mode(&cfg), &types, err) < 0) {
        fprintf(stderr, "server1: %s\n", err);
        mimetypes_release(&types);
        return 1;
    }
    if (cfg.pack != NULL) {
        char perr[PACK_ERR_LEN];
        if (pack_open(&pack, cfg.pack, files.mode == FILES_DIRECT, perr) < 0) {
            fprintf(stderr, "server1: %s\n", perr);
            rc = 2;
            goto out_files;
        }
        files.pack = &pack;
        if (pack.dio_align > files.align)
            files.align = pack.dio_align; /* O_DIRECT reads of the pack */
        log_info("pack '%s': %llu files, %llu data bytes, index %llu bytes", cfg.pack,
                 (unsigned long long)pack.count, (unsigned long long)pack.data_len,
                 (unsigned long long)pack.index_len);
    }
    if (cfg.tls_cert != NULL) {
        tls = s1_tls_new(cfg.tls_cert, cfg.tls_key, cfg.tls_ticket_rotate_us * 1000, err);
        if (tls == NULL) {
            fprintf(stderr, "server1: %s\n", err);
            rc = 2;
            goto out_files;
        }
    }
    if (cfg.access_log != NULL) {
        char aerr[ACCESSLOG_ERR_LEN];
        if (accesslog_open(&alog_store, cfg.access_log, cfg.access_log_format, cfg.threads,
                           aerr) < 0) {
            fprintf(stderr, "server1: %s\n", aerr);
            rc = 2;
            goto out_files;
        }
        alog = &alog_store;
    }
    fds = xcalloc(cfg.threads, sizeof(*fds));
    tls_fds = xcalloc(cfg.threads, sizeof(*tls_fds));
    for (unsigned i = 0; i < cfg.threads; i++)
        tls_fds[i] = -1;
    if (bind_listeners(&cfg, cfg.port, fds, cfg.threads, &port, err) < 0) {
        fprintf(stderr, "server1: %s\n", err);
        goto out_files;
    }
    if (tls != NULL &&
        bind_listeners(&cfg, cfg.tls_port, tls_fds, cfg.threads, &tls_port, err) < 0) {
        fprintf(stderr, "server1: --tls-port: %s\n", err);
        for (unsigned i = 0; i < cfg.threads; i++)
            close(fds[i]);
        goto out_files;
    }
    if (cfg.metrics_listen != NULL &&
        bind_metrics(&cfg, &metrics_fd, &metrics_port, err) < 0) {
        fprintf(stderr, "server1: --metrics-listen: %s\n", err);
        for (unsigned i = 0; i < cfg.threads; i++) {
            close(fds[i]);
            if (tls_fds[i] >= 0)
                close(tls_fds[i]);
        }
        goto out_files;
    }
    if (!cfg.read_only) {
        struct commit_budgets budgets = {.mem = cfg.upload_memory,
                                         .temp = cfg.upload_temp_max,
                                         .user_share = cfg.upload_user_share};
        if (committer_init(&commit, &files, cfg.group_commit, cfg.commit_window_us * 1000,
                           cfg.writable_root, &budgets,
                           cfg.private_uploads ? STORE_ORDER_BY_OWNER : 0, err) < 0) {
            fprintf(stderr, "server1: %s\n", err);
            for (unsigned i = 0; i < cfg.threads; i++) {
                close(fds[i]);
                if (tls_fds[i] >= 0)
                    close(tls_fds[i]);
            }
            if (metrics_fd >= 0)
                close(metrics_fd);
            goto out_files;
        }
        commit.user_quota = cfg.user_quota;
        commit.store_max = cfg.store_max;
        have_commit = true;
    }
    s1_config_log(&cfg);
    if (types_from != NULL)
        log_info("content types: %zu extensions from %s (%zu lines or names skipped)",
                 types.count, types_from, types.skipped);
    else
        log_info("content types: no %s; a built-in table of %zu extensions",
                 MIMETYPES_DEFAULT_PATH, types.count);

    ws = xcalloc(cfg.threads, sizeof(*ws));
    all = xcalloc(cfg.threads, sizeof(*all));
    memset(&sh, 0, sizeof(sh));
    sh.svc.cfg = &cfg;
    sh.svc.files = &files;
    sh.svc.commit = have_commit ? &commit : NULL;
    sh.svc.metrics = all;
    sh.svc.nthreads = cfg.threads;
    sh.svc.types = &types;
    sh.svc.https_port = tls_port;
    sh.workers = ws;
    sh.nworkers = cfg.threads;
    sh.tls = tls;
    sh.alog = alog;
    atomic_init(&sh.nconns, 0);
    if (!limits_init(&cfg, &sh.svc)) {
        fprintf(stderr, "server1: out of memory for the per-client limits\n");
        for (unsigned i = 0; i < cfg.threads; i++) {
            close(fds[i]);
            if (tls_fds[i] >= 0)
                close(tls_fds[i]);
        }
        if (metrics_fd >= 0)
            close(metrics_fd);
        cfg.threads = 0;
        goto out_workers;
    }
    for (unsigned i = 0; i < cfg.threads; i++) {
        /* the metrics listener is the first worker's (it takes /metrics' few connections) */
        if (s1_worker_init(&ws[i], i, &sh, fds[i], tls_fds[i], i == 0 ? metrics_fd : -1) < 0) {
            fprintf(stderr, "server1: cannot create worker %u: %s\n", i,
                    strerror_r(errno, err, sizeof(err)));
            for (unsigned k = i; k < cfg.threads; k++) {
                close(fds[k]);
                if (tls_fds[k] >= 0)
                    close(tls_fds[k]);
            }
            if (i == 0 && metrics_fd >= 0)
                close(metrics_fd);
            cfg.threads = i; /* release only what was set up */
            goto out_workers;
        }
        all[i] = &ws[i].metrics;
    }
    if (alog != NULL && cfg.threads > 0) /* (its owner never writes it: metrics.h) */
        alog->write_errors = &ws[0].metrics.access_log_write_errors;
    if (have_commit && committer_start(&commit) < 0) {
        fprintf(stderr, "server1: cannot start the committer: %s\n",
                strerror_r(errno, err, sizeof(err)));
        goto out_workers;
    }
    pthread_barrier_init(&sh.ready, NULL, cfg.threads + 1);
    for (; started < cfg.threads; started++) {
        if (s1_worker_start(&ws[started]) < 0) {
            fprintf(stderr, "server1: cannot start worker %u: %s\n", started,
                    strerror_r(errno, err, sizeof(err)));
            abort(); /* the barrier can no longer be passed; nothing sensible to unwind */
        }
    }
    pthread_barrier_wait(&sh.ready);
    for (unsigned i = 0; i < cfg.threads; i++) {
        if (ws[i].init_failed) {
            fprintf(stderr, "server1: worker %u failed to start\n", i);
            for (unsigned k = 0; k < cfg.threads; k++)
                s1_worker_stop(&ws[k], S1_WORKER_FORCE);
            goto out_join;
        }
    }
    /* (before "listening on", which scripts wait for: this line is there by then) */
    if (metrics_fd >= 0)
        log_info("serving /metrics on %s:%u", cfg.metrics_host, metrics_port);
    log_info("listening on %s:%u", cfg.listen, port);
    if (tls != NULL) {
        char info[S1_TLS_INFO_LEN];
        s1_tls_describe(tls, info);
        log_info("certificate: %s", info);
        log_info("listening for https on %s:%u", cfg.listen, tls_port);
    }
    {
        char ready[128];
        snprintf(ready, sizeof(ready), "READY=1\nSTATUS=listening on %s:%u", cfg.listen, port);
        sdnotify_or_warn(ready);
    }

    uint64_t next_trim = clock_now_ns() + TRIM_INTERVAL_NS;
    do {
        sig = wait_signal(&sigs, 500);
        if (sig == SIGHUP) {
            reload_tls(tls, all[0], false);
            sig = 0;
        } else if (sig == SIGUSR1) {
            reopen_access_log(alog);
            sig = 0;
        }
        rotate_tickets(tls, all[0]);
        trim_heap(&next_trim);
    } while (sig == 0 && !all_done(ws, cfg.threads));
    sdnotify_or_warn("STOPPING=1");
    if (sig != 0)
        log_info("%s received: draining connections (at most %llu ms)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                 (unsigned long long)(cfg.drain_timeout_us / 1000));
    for (unsigned i = 0; i < cfg.threads; i++)
        s1_worker_stop(&ws[i], S1_WORKER_DRAIN);
    while (!all_done(ws, cfg.threads)) {
        int again = wait_signal(&sigs, 50);
        if (again == SIGHUP) {
            reload_tls(tls, all[0], true);
        } else if (again == SIGUSR1) {
            reopen_access_log(alog);
        } else if (again != 0) {
            log_warn("second signal: stopping now");
            for (unsigned i = 0; i < cfg.threads; i++)
                s1_worker_stop(&ws[i], S1_WORKER_FORCE);
        }
    }
    rc = 0;

out_join:
    for (unsigned i = 0; i < started; i++)
        s1_worker_join(&ws[i]);
    pthread_barrier_destroy(&sh.ready);
out_workers:
    if (have_commit)
        committer_stop(&commit); /* commits what is queued; answers go to the workers' lists */
    for (unsigned i = 0; i < cfg.threads; i++)
        s1_worker_release(&ws[i]);
    limits_release(&sh.svc);
    if (rc == 0)
        log_info("stopped");
out_files:
    /* before ws: the writer counts a failed write of the workers' last lines in ws[0]'s
     * metrics */
    accesslog_close(alog); /* (every worker's last lines written) */
    free(ws);
    free(all);
    free(fds);
    free(tls_fds);
    s1_tls_free(tls);
    if (have_commit)
        committer_release(&commit);
    files_release(&files);
    pack_close(&pack); /* (after the workers, whose responses may still read it) */
    mimetypes_release(&types);
    return rc;
}
