/*
 * run.c - see run.h. One point = start the monitor, start the workers, wait for them on an
 * eventfd (and for SIGINT/SIGTERM on a signalfd) while redrawing the progress line and sizing
 * the window (size_window), join, stop the monitor, merge the per-thread results.
 */
#include "run.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "attrib.h"
#include "clock.h"
#include "log.h"
#include "sweep.h"
#include "worker.h"
#include "xalloc.h"

#define LG_PREPARE_USERS 32 /* connections creating --prepare-users accounts */
#define LG_POLL_MS 250       /* how often the wait looks at the workers and the window */
#define LG_RUN_KINDS_LEN 512 /* the errors line after a point; longer is cut with "..." */
#define LG_REDRAW_NS (1000ull * 1000000) /* the progress line is redrawn this often */

struct lg_runner {
    struct lg_run *run;
    const struct lg_config *cfg;
    struct lg_workload wl;
    struct lg_monitor *mon;
    struct lg_tls_opts tls;     /* https://: what each worker makes its TLS context from */
    bool use_tls;
    atomic_bool stop; /* shared with the workers: set once, by this thread */
    int sigfd;
    bool tty;         /* stderr is a terminal: the progress line is drawn */
    uint64_t stop_ns; /* when the stop was requested */
    uint64_t drawn_ns;   /* the progress line's last redraw (0: not yet in this point) */
    uint64_t drawn_done; /* completions counted at that redraw, for the current rate */
};

/* Sizing one point's window (window.h). */
struct lg_sizing {
    struct lg_window *win;
    uint64_t from_ns;  /* the window's start */
    double max_s;      /* --window-max; 0: not sized */
    uint64_t check_ns; /* when to look next at the completions; 0: never again */
};

static void make_run_id(char *out)
{
    uint32_t v;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = (uint32_t)(clock_now_ns() ^ ((uint64_t)getpid() << 16));
    snprintf(out, LG_RUN_ID_LEN + 1, "%08x", v);
}

/*
 * The progress line on a terminal (stderr), redrawn in place about once a second: the phase,
 * elapsed time, the window's completions, the rate over the last redraw and the errors. Never
 * drawn when stderr is not a terminal (CI logs, redirections).
 */
static void progress(struct lg_runner *r, struct lg_worker *ws, unsigned n,
                     const struct lg_point_params *pp)
{
    uint64_t now = clock_now_ns();
    uint64_t ok = 0;
    uint64_t err = 0;
    uint64_t done;
    double el;
    double dt;
    double rate;

    if (!r->tty || (r->drawn_ns != 0 && now - r->drawn_ns < LG_REDRAW_NS))
        return;
    for (unsigned i = 0; i < n; i++) {
        ok += atomic_load_explicit(&ws[i].progress_ok, memory_order_relaxed);
        err += atomic_load_explicit(&ws[i].progress_err, memory_order_relaxed);
    }
    done = ok + err;
    if (pp->phase == LG_PHASE_PREPARE) {
        fprintf(stderr,
                "\r  preparing accounts: %" PRIu64 "/%" PRIu64 " created, %" PRIu64 " errors\033[K",
                ok, pp->prepare_count, err);
    } else if (now < pp->warm_end_ns) {
        fprintf(stderr, "\r  N=%u  warmup %.1f/%.1f s\033[K", pp->users,
                (double)(now - pp->start_ns) / 1e9, (double)(pp->warm_end_ns - pp->start_ns) / 1e9);
    } else {
        /* the rate over the last redraw; since the window opened for the first one */
        uint64_t since = r->drawn_ns > pp->warm_end_ns ? r->drawn_ns : pp->warm_end_ns;
        uint64_t before = r->drawn_ns > pp->warm_end_ns ? r->drawn_done : 0;

        el = (double)(now - pp->warm_end_ns) / 1e9;
        dt = (double)(now - since) / 1e9;
        rate = dt > 0 && done >= before ? (double)(done - before) / dt : 0.0;
        if (pp->per_user == 0)
            fprintf(stderr, "\r  N=%u  %.1f/%.1f s  %" PRIu64 " requests", pp->users, el,
                    (double)(lg_window_end(pp->win) - pp->warm_end_ns) / 1e9, done);
        else
            fprintf(stderr, "\r  N=%u  %.1f s  %" PRIu64 "/%" PRIu64 " requests", pp->users, el,
                    done, pp->per_user * pp->users);
        fprintf(stderr, "  %.0f req/s  %" PRIu64 " errors\033[K", rate, err);
    }
    fflush(stderr);
    r->drawn_ns = now;
    r->drawn_done = done;
}

static void on_signal(struct lg_runner *r, struct lg_worker *ws, unsigned n)
{
    struct signalfd_siginfo si;

    if (read(r->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
        return;
    if (r->tty)
        fprintf(stderr, "\r\033[K");
    log_warn("interrupted by signal %u: finishing the current point and reporting", si.ssi_signo);
    r->run->interrupted = true;
    r->stop_ns = clock_now_ns();
    atomic_store(&r->stop, true);
    for (unsigned i = 0; i < n; i++)
        lg_worker_wake(&ws[i]);
}

/* How long before a window's end the run decides whether to extend it. */
static uint64_t guard_ns(const struct lg_sizing *sz, uint64_t end_ns)
{
    uint64_t quarter = (end_ns - sz->from_ns) / 4;

    return quarter < LG_WINDOW_GUARD_NS ? quarter : LG_WINDOW_GUARD_NS;
}

/*
 * Shortly before the window's end: from the completions the workers have counted so far, the
 * window the rule needs (lg_window_next_s); the end moves there, and is looked at again before
 * it, unless a thread reached the end first (then it stays: logged).
 */
static void size_window(struct lg_worker *ws, unsigned n, const struct lg_point_params *pp,
                        struct lg_sizing *sz, uint64_t now)
{
    uint64_t end = lg_window_end(sz->win);
    double window_s = (double)(end - sz->from_ns) / 1e9;
    double elapsed_s = now > sz->from_ns ? (double)(now - sz->from_ns) / 1e9 : 0;
    double z_s = (double)pp->cfg->think_us / 1e6;
    uint64_t ok = 0;
    uint64_t done = 0;
    uint64_t r_ns = 0;
    double r_s;
    double next_s;
    uint64_t next_end;

    for (unsigned i = 0; i < n; i++) {
        ok += atomic_load_explicit(&ws[i].progress_ok, memory_order_relaxed);
        done += atomic_load_explicit(&ws[i].progress_err, memory_order_relaxed);
        r_ns += atomic_load_explicit(&ws[i].progress_r_ns, memory_order_relaxed);
    }
    done += ok;
    r_s = ok > 0 ? (double)r_ns / 1e9 / (double)ok : 0;
    next_s = lg_window_next_s(window_s, sz->max_s, done, r_s, z_s, elapsed_s);
    sz->check_ns = 0;
    if (next_s <= window_s)
        return;
    next_end = sz->from_ns + (uint64_t)(next_s * 1e9);
    if (!lg_window_extend(sz->win, next_end)) {
        log_warn("N=%u: the window ended at %.2f s before it could grow to %.2f s (the rule: %u "
                 "x (R + Z) and %u completions)",
                 pp->users, window_s, next_s, LG_WINDOW_CYCLES, LG_WINDOW_OK);
        return;
    }
    log_info("N=%u: window %.2f s -> %.2f s: %" PRIu64 " completions in %.2f s, R = %.3f ms "
             "(the rule: %u x (R + Z) and %u completions; --window-max %.2f s)",
             pp->users, window_s, next_s, done, elapsed_s, r_s * 1e3, LG_WINDOW_CYCLES,
             LG_WINDOW_OK, sz->max_s);
    sz->check_ns = next_end - guard_ns(sz, next_end);
}

/* Waits for the n started workers, redrawing progress and sizing the window; handles signals. */
static void wait_workers(struct lg_runner *r, struct lg_worker *ws, unsigned n,
                         const struct lg_point_params *pp, struct lg_sizing *sz)
{
    struct pollfd pfd[2] = {{.fd = pp->done_fd, .events = POLLIN},
                            {.fd = r->sigfd, .events = POLLIN}};
    uint64_t done = 0;

    while (done < n) {
        uint64_t now = clock_now_ns();
        int ms = LG_POLL_MS;
        int rc;

        if (sz->check_ns != 0 && !r->run->interrupted) {
            if (now >= sz->check_ns) {
                if (r->tty && r->drawn_ns != 0)
                    fprintf(stderr, "\r\033[K"); /* the log line that may follow: alone */
                size_window(ws, n, pp, sz, now);
            }
            if (sz->check_ns != 0) {
                uint64_t wait_ns = sz->check_ns > now ? sz->check_ns - now : 0;
                if (wait_ns < (uint64_t)ms * 1000000)
                    ms = (int)((wait_ns + 999999) / 1000000);
            }
        }
        rc = poll(pfd, 2, ms);
        if (rc < 0 && errno != EINTR) {
            log_error("poll: errno %d", errno);
            break;
        }
        if (rc > 0 && (pfd[0].revents & POLLIN)) {
            uint64_t v;
            if (read(pp->done_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                done += v;
        }
        if (rc > 0 && (pfd[1].revents & POLLIN))
            on_signal(r, ws, n);
        if (done < n)
            progress(r, ws, n, pp);
    }
    if (r->tty && r->drawn_ns != 0)
        fprintf(stderr, "\r\033[K"); /* erased before the point's result */
    r->drawn_ns = 0;
}

/* The measured window of a point that has ended. */
static double window_of(const struct lg_runner *r, const struct lg_point_params *pp,
                        const struct lg_worker *ws, unsigned n)
{
    uint64_t from = pp->warm_end_ns;
    uint64_t to = 0;

    if (pp->per_user > 0) {
        for (unsigned i = 0; i < n; i++)
            if (ws[i].last_ns > to)
                to = ws[i].last_ns;
    } else {
        to = lg_window_end(pp->win);
    }
    if (r->stop_ns != 0 && r->stop_ns < to)
        to = r->stop_ns;
    return to > from ? (double)(to - from) / 1e9 : 0.0;
}

/* Wall-clock time in ns since the epoch. */
static uint64_t wall_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * --start-at: sleeps until point k's scheduled start (a CLOCK_REALTIME timer, so the wake-up
 * is to the wall clock, woken early by SIGINT/SIGTERM). Sets *start_ns to the start on the
 * monotonic clock. Returns 0, 1 when interrupted, -1 when the point's window has already
 * opened (logged): its measurement could no longer cover the window the other hosts measure.
 */
static int wait_start(struct lg_runner *r, unsigned k, unsigned users, uint64_t *start_ns)
{
    const struct lg_config *cfg = r->cfg;
    uint64_t due_ms = lg_config_point_start_ms(cfg, k);
    uint64_t due_ns = due_ms * 1000000;
    uint64_t now = wall_now_ns();
    struct itimerspec its = {{0, 0}, {(time_t)(due_ms / 1000), (long)(due_ms % 1000) * 1000000}};
    struct pollfd pfd[2];
    char when[40];
    int fd;

    clock_format_epoch_ms(due_ms, when, sizeof(when));
    if (now >= due_ns + cfg->warmup_us * 1000) {
        log_error("point %u (N=%u) was due at %s (--start-at schedule) but is %.0f ms late, "
                  "past its warm-up: %s",
                  k + 1, users, when, (double)(now - due_ns) / 1e6,
                  k == 0 ? "the start passed while the accounts were being created; give a "
                           "later --start-at"
                         : "the previous point overran its slot; give a longer --warmup");
        return -1;
    }
    log_info("point %u (N=%u) starts at %s (epoch ms %" PRIu64 ", in %.3f s)", k + 1, users, when,
             due_ms, now < due_ns ? (double)(due_ns - now) / 1e9 : 0.0);
    fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC);
    if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        log_error("timerfd: errno %d", errno);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pfd[0] = (struct pollfd){.fd = fd, .events = POLLIN};
    pfd[1] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
    while (wall_now_ns() < due_ns) {
        if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
            log_error("poll: errno %d", errno);
            close(fd);
            return -1;
        }
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                log_warn("interrupted by signal %u while waiting for --start-at", si.ssi_signo);
                r->run->interrupted = true;
                close(fd);
                return 1;
            }
        }
        if (pfd[0].revents & POLLIN)
            break;
    }
    close(fd);
    now = wall_now_ns();
    if (now > due_ns + 1000000)
        log_warn("point %u (N=%u) started %.1f ms late: its warm-up is that much shorter", k + 1,
                 users, (double)(now - due_ns) / 1e6);
    /* the due time on the monotonic clock, so the window opens at due + warm-up exactly */
    *start_ns = clock_now_ns() - (now - due_ns);
    return 0;
}

static int run_point(struct lg_runner *r, enum lg_phase phase, unsigned users, unsigned index,
                     uint64_t start_ns, struct lg_point *out)
{
    const struct lg_config *cfg = r->cfg;
    struct lg_point_params pp;
    struct lg_window win;
    struct lg_sizing sz = {.win = &win};
    struct lg_worker *ws;
    unsigned nthreads;
    unsigned started;
    int64_t wall_off;
    int rc = 0;

    if (phase == LG_PHASE_MEASURE && cfg->model == LG_MODEL_THREADS)
        nthreads = users;
    else
        nthreads = cfg->threads < users ? cfg->threads : users;

    memset(&pp, 0, sizeof(pp));
    pp.cfg = cfg;
    pp.wl = &r->wl;
    pp.phase = phase;
    pp.users = users;
    pp.point_index = index;
    pp.stop = &r->stop;
    pp.tls = r->use_tls ? &r->tls : NULL;
    pp.new_conn = phase == LG_PHASE_MEASURE && cfg->new_conn;
    pp.check.expect_status[LG_REQ_NEW] = 201;
    pp.check.expect_status[LG_REQ_GET] = 200;
    pp.check.expect_status[LG_REQ_PUT] = 201; /* created */
    pp.check.expect_alt[LG_REQ_PUT] = 204;    /* replaced */
    pp.check.expect_status[LG_REQ_CUSTOM] = LG_EXPECT_2XX_3XX;
    pp.check.has_length = cfg->has_expect_length;
    pp.check.length = cfg->expect_length;
    /* the monotonic clock's offset from the wall clock, for the window's epoch times */
    wall_off = (int64_t)(wall_now_ns() - clock_now_ns());
    pp.start_ns = start_ns != 0 ? start_ns : clock_now_ns();
    pp.win = &win;
    if (phase == LG_PHASE_PREPARE) {
        pp.warm_end_ns = pp.start_ns;
        lg_window_init(&win, UINT64_MAX); /* never reached: bounded by the count */
        pp.prepare_count = cfg->prepare_users;
    } else {
        pp.warm_end_ns = pp.start_ns + cfg->warmup_us * 1000;
        pp.per_user = cfg->requests_per_user;
        lg_window_init(&win, pp.per_user > 0 ? UINT64_MAX
                                             : pp.warm_end_ns + cfg->duration_us * 1000);
        pp.open_loop = cfg->rate > 0;
        pp.rate = cfg->rate;
        if (pp.per_user == 0 && cfg->window_max_us > 0) {
            sz.from_ns = pp.warm_end_ns;
            sz.max_s = (double)cfg->window_max_us / 1e6;
            sz.check_ns = lg_window_end(&win) - guard_ns(&sz, lg_window_end(&win));
        }
    }
    pp.done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pp.done_fd < 0) {
        log_error("eventfd: errno %d", errno);
        return -1;
    }

    ws = xcalloc(nthreads, sizeof(*ws));
    for (unsigned i = 0, user = 0; i < nthreads; i++) {
        struct lg_worker *w = &ws[i];
        w->id = i;
        w->nthreads = nthreads;
        w->first_user = user;
        w->nusers = users / nthreads + (i < users % nthreads ? 1 : 0);
        w->pp = &pp;
        user += w->nusers;
        lg_worker_init_results(w);
        w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (w->wake_fd < 0) {
            log_error("eventfd: errno %d", errno);
            for (unsigned j = 0; j < i; j++)
                close(ws[j].wake_fd);
            rc = -1;
            goto out_free;
        }
    }

    memset(out, 0, sizeof(*out));
    out->users = users;
    out->threads = nthreads;
    if (phase == LG_PHASE_MEASURE && lg_monitor_start(r->mon, pp.warm_end_ns, &win) < 0) {
        rc = -1;
        goto out_close;
    }
    started = lg_workers_start(ws, nthreads,
                               phase == LG_PHASE_MEASURE && cfg->model == LG_MODEL_THREADS
                                   ? &lg_worker_threads_ops
                                   : &lg_worker_events_ops);
    if (started < nthreads) {
        atomic_store(&r->stop, true);
        rc = -1;
    }
    wait_workers(r, ws, started, &pp, &sz);
    for (unsigned i = 0; i < started; i++)
        pthread_join(ws[i].tid, NULL);
    if (phase == LG_PHASE_MEASURE)
        lg_monitor_stop(r->mon, &out->mon);

    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&out->st[t]);
    lg_tls_stats_init(&out->tls);
    for (unsigned i = 0; i < started; i++) {
        lg_tls_stats_merge(&out->tls, &ws[i].tls);
        for (int t = 0; t < LG_REQ_TYPES; t++) {
            lg_stats_merge(&out->st[t], &ws[i].stats[t]);
            lg_stats_merge(&out->st[LG_REQ_ALL], &ws[i].stats[t]);
        }
        out->unsent += ws[i].unsent;
        out->abandoned += ws[i].abandoned;
        if (ws[i].failed)
            rc = -1;
    }
    out->window_s = window_of(r, &pp, ws, started);
    out->window_max_s = sz.max_s;
    out->window_start_ms = (double)((int64_t)pp.warm_end_ns + wall_off) / 1e6;
    out->window_end_ms = out->window_start_ms + out->window_s * 1e3;
    out->interrupted = r->run->interrupted;

out_close:
    for (unsigned i = 0; i < nthreads; i++)
        close(ws[i].wake_fd);
out_free:
    free(ws);
    close(pp.done_fd);
    return rc;
}

static int prepare(struct lg_runner *r)
{
    const struct lg_config *cfg = r->cfg;
    unsigned users =
        cfg->prepare_users < LG_PREPARE_USERS ? (unsigned)cfg->prepare_users : LG_PREPARE_USERS;
    struct lg_point *p = xmalloc(sizeof(*p));
    uint64_t t0 = clock_now_ns();
    uint64_t errors;
    int rc;

    log_info("creating %" PRIu64 " accounts over %u connections", cfg->prepare_users, users);
    rc = run_point(r, LG_PHASE_PREPARE, users, 0, 0, p);
    r->run->prepared = p->st[LG_REQ_ALL].ok;
    r->run->prepare_s = (double)(clock_now_ns() - t0) / 1e9;
    errors = lg_stats_errors(&p->st[LG_REQ_ALL]);
    if (rc == 0 && !r->run->interrupted && (errors > 0 || r->run->prepared < cfg->prepare_users)) {
        char classes[256] = "";
        size_t len = 0;
        for (int e = 0; e < LG_ERR_COUNT; e++) {
            if (p->st[LG_REQ_ALL].err[e] > 0 && len < sizeof(classes))
                len += (size_t)snprintf(classes + len, sizeof(classes) - len, " %s=%" PRIu64,
                                        lg_err_name((enum lg_err)e), p->st[LG_REQ_ALL].err[e]);
        }
        log_error("could not create the accounts: %" PRIu64 " of %" PRIu64 " created; errors:%s",
                  r->run->prepared, cfg->prepare_users, classes[0] ? classes : " none");
        rc = -1;
    } else if (rc == 0) {
        log_info("created %" PRIu64 " accounts in %.2f s", r->run->prepared, r->run->prepare_s);
    }
    free(p);
    return rc;
}

static struct lg_point *add_point(struct lg_run *run)
{
    run->points = xrealloc(run->points, (run->npoints + 1) * sizeof(*run->points));
    return &run->points[run->npoints++];
}

static double throughput(const struct lg_point *p)
{
    return p->window_s > 0 ? (double)p->st[LG_REQ_ALL].ok / p->window_s : 0;
}

/* Logs the point's handshakes; a point where every one failed fails the run. */
static int check_handshakes(const struct lg_point *p, int rc)
{
    const struct lg_tls_stats *t = &p->tls;

    log_info("N=%u: TLS %s %s: %" PRIu64 " full and %" PRIu64 " resumed handshakes, %" PRIu64
             " failed, handshake p50=%.3f ms",
             p->users, t->version ? t->version : "-", t->cipher ? t->cipher : "-", t->full,
             t->resumed, t->failed, (double)hist_percentile(&t->hs_ns, 50) / 1e6);
    if (rc == 0 && t->failed > 0 && t->full + t->resumed == 0) {
        log_error("every TLS handshake failed (%" PRIu64 "): see the first error above", t->failed);
        return -1;
    }
    return rc;
}

static int measure(struct lg_runner *r, unsigned users)
{
    struct lg_run *run = r->run;
    struct lg_point *p;
    const struct lg_stats *s;
    uint64_t start_ns = 0;
    int rc;

    if (r->cfg->start_at_ms > 0) {
        rc = wait_start(r, run->npoints, users, &start_ns);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    p = add_point(run);
    rc = run_point(r, LG_PHASE_MEASURE, users, run->npoints, start_ns, p);

    s = &p->st[LG_REQ_ALL];
    log_info("N=%u: X=%.1f req/s, R=%.3f ms, p99=%.3f ms, errors=%" PRIu64 "%s", users,
             throughput(p), hist_mean(&s->lat) / 1e6, (double)hist_percentile(&s->lat, 99) / 1e6,
             lg_stats_errors(s), p->interrupted ? " (interrupted)" : "");
    if (lg_stats_errors(s) > 0) {
        char kinds[LG_RUN_KINDS_LEN];
        lg_errtab_format(&s->by_kind, LG_ERRTAB_CONSOLE, kinds, sizeof(kinds));
        log_info("N=%u: errors: %s", users, kinds);
    }
    if (lg_config_has(r->cfg, LG_REQ_CUSTOM)) { /* any server: its answers, as hey lists them */
        char kinds[LG_RUN_KINDS_LEN];
        struct lg_errtab all;
        lg_stats_statuses(s, &all);
        lg_errtab_format(&all, LG_ERRTAB_CONSOLE, kinds, sizeof(kinds));
        log_info("N=%u: responses by status: %s", users, kinds[0] ? kinds : "none");
    }
    if (r->use_tls)
        rc = check_handshakes(p, rc);
    return rc;
}

static void log_config(const struct lg_runner *r)
{
    const struct lg_config *c = r->cfg;

    log_info("run %s: url=%s://%s%s model=%s threads=%u mix=%s file=%s think=%" PRIu64
             "us %s=%" PRIu64 " window_max=%" PRIu64 "us warmup=%" PRIu64 "us timeout=%" PRIu64
             "us rate=%g sweep=%s start_at=%" PRIu64,
             r->run->run_id, c->target.tls ? "https" : "http", c->target.host_header,
             c->target.prefix,
             c->model == LG_MODEL_EVENTS ? "events" : "threads", c->threads, c->mix_desc,
             c->file[0] ? c->file : "-", c->think_us,
             c->requests_per_user ? "requests-per-user" : "duration_us",
             c->requests_per_user ? c->requests_per_user : c->duration_us, c->window_max_us,
             c->warmup_us,
             c->timeout_us, c->rate, c->sweep_auto ? "auto" : (c->nsweep ? "list" : "no"),
             c->start_at_ms);
    if (c->target.tls)
        log_info("tls: %s, session resumption %s%s", c->insecure ? "certificate NOT verified "
                 "(--insecure)" : c->cacert[0] ? "certificate verified with --cacert"
                 : "certificate verified with the system's CA store",
                 c->tls_resume ? "on" : "off",
                 c->new_conn ? ", a new connection per request" : "");
    else if (c->new_conn)
        log_info("a new connection per request");
    if (c->insecure)
        log_warn("--insecure: the server's certificate is not verified; anyone on the path "
                 "could be answering");
    if (c->names.kind != LG_NAMES_NONE) {
        char law[32];
        if (c->pick_kind == LG_PICK_ZIPF)
            snprintf(law, sizeof(law), "zipf s=%g%s", c->zipf_s,
                     c->names_spread ? ", spread" : "");
        else
            snprintf(law, sizeof(law), "uniform");
        log_info("names: %s (%s, %" PRIu64 " names, the longest %zu bytes encoded), %s",
                 c->names_source, lg_names_kind_name(&c->names), c->names.n, c->names.len_max, law);
    }
}

int lg_run_execute(struct lg_run *run, const struct lg_config *cfg)
{
    struct lg_runner r;
    sigset_t set;
    int rc = 0;

    memset(run, 0, sizeof(*run));
    run->cfg = cfg;
    run->started = time(NULL);
    make_run_id(run->run_id);

    memset(&r, 0, sizeof(r));
    r.run = run;
    r.cfg = cfg;
    atomic_init(&r.stop, false);
    r.tty = isatty(STDERR_FILENO) == 1;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    r.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (r.sigfd < 0) {
        log_error("signalfd: errno %d", errno);
        return -1;
    }
    if (cfg->target.tls) {
        char terr[LG_TLS_ERR_LEN];
        struct ssl_ctx_st *probe;

        r.use_tls = true;
        r.tls = (struct lg_tls_opts){.host = cfg->target.host,
                                     .host_is_ip = cfg->target.host_is_ip,
                                     .cacert = cfg->cacert,
                                     .insecure = cfg->insecure,
                                     .resume = cfg->tls_resume != 0};
        /* a bad --cacert is said once, before any point */
        probe = lg_tls_ctx_new(&r.tls, terr);
        if (probe == NULL) {
            log_error("%s", terr);
            close(r.sigfd);
            return -1;
        }
        lg_tls_ctx_free(probe);
    }
    lg_workload_init(&r.wl, cfg, run->run_id);
    r.mon = lg_monitor_new(cfg);
    lg_attrib_check(cfg);
    log_config(&r);

    if (cfg->prepare_users > 0 && prepare(&r) < 0) {
        rc = -1;
        goto out;
    }
    if (cfg->sweep_auto) {
        struct lg_autosweep as;
        unsigned n;
        const struct lg_sweep_plan plan = {cfg->max_users, cfg->sweep_step, cfg->sweep_stalls,
                                           cfg->sweep_refine};

        lg_autosweep_init(&as, &plan);
        for (n = lg_autosweep_next(&as); n != 0 && rc == 0 && !run->interrupted;
             n = lg_autosweep_next(&as)) {
            rc = measure(&r, n);
            lg_autosweep_add(&as, n, throughput(&run->points[run->npoints - 1]));
        }
    } else if (cfg->nsweep > 0) {
        for (unsigned i = 0; i < cfg->nsweep && rc == 0 && !run->interrupted; i++)
            rc = measure(&r, cfg->sweep[i]);
    } else if (!run->interrupted) {
        rc = measure(&r, cfg->users);
    }
out:
    lg_monitor_free(r.mon);
    lg_workload_release(&r.wl);
    close(r.sigfd);
    return rc;
}

void lg_run_release(struct lg_run *run)
{
    free(run->points);
    run->points = NULL;
    run->npoints = 0;
}
