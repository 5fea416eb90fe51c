/*
 * worker.c - what both worker models share: thread creation (signals blocked, names, CPU
 * pinning), per-connection request setup, and the one place that decides whether a finished
 * request is counted and how.
 */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define LG_WORKER_STACK (512u * 1024)

unsigned lg_workers_start(struct lg_worker *ws, unsigned n, const struct lg_worker_ops *ops)
{
    const struct lg_config *cfg = n > 0 ? ws[0].pp->cfg : NULL;
    sigset_t all;
    sigset_t old;
    unsigned started = 0;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; started < n; started++) {
        struct lg_worker *w = &ws[started];
        pthread_attr_t attr;
        char name[16];
        char ebuf[128];
        int rc;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, LG_WORKER_STACK);
        if (cfg->ncpus > 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cfg->cpus[w->id % cfg->ncpus], &set);
            pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
        }
        rc = pthread_create(&w->tid, &attr, ops->thread_main, w);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            log_error("cannot start worker %u: %s", w->id, strerror_r(rc, ebuf, sizeof(ebuf)));
            break;
        }
        /* event loops serve users and are a software station (swstation.h); a thread of
         * --model threads is one user */
        snprintf(name, sizeof(name), "lg-%s-%u", ops == &lg_worker_threads_ops ? "usr" : "wrk",
                 w->id);
        pthread_setname_np(w->tid, name);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return started;
}

void lg_worker_wake(struct lg_worker *w)
{
    uint64_t one = 1;
    if (write(w->wake_fd, &one, sizeof(one)) < 0)
        log_debug("wake worker %u: errno %d", w->id, errno);
}

void lg_worker_init_results(struct lg_worker *w)
{
    for (int i = 0; i < LG_REQ_TYPES; i++)
        lg_stats_init(&w->stats[i]);
    w->first_ns = 0;
    w->last_ns = 0;
    w->unsent = 0;
    w->abandoned = 0;
    w->failed = 0;
    lg_tls_stats_init(&w->tls);
    atomic_init(&w->progress_ok, 0);
    atomic_init(&w->progress_err, 0);
    atomic_init(&w->progress_r_ns, 0);
    w->_progress_at = 0;
}

void lg_worker_conn_setup(struct lg_worker *w, struct lg_conn *c, unsigned user)
{
    const struct lg_point_params *pp = w->pp;
    const struct lg_config *cfg = pp->cfg;

    lg_conn_init(c, user);
    if (pp->phase == LG_PHASE_PREPARE) {
        lg_workload_build_prepare(pp->wl, &c->req[LG_REQ_NEW]);
        c->slot_next = user;
        c->slot_step = pp->users;
        c->remaining =
            user < pp->prepare_count ? (pp->prepare_count - 1 - user) / pp->users + 1 : 0;
        return;
    }
    c->slot_next = 0; /* new: the username counter; put: which of the user's names */
    c->slot_step = 1;
    if (lg_config_has(cfg, LG_REQ_NEW))
        lg_workload_build_new(pp->wl, (uint64_t)pp->point_index * 100000u + user,
                              &c->req[LG_REQ_NEW]);
    if (lg_config_has(cfg, LG_REQ_GET) || lg_config_has(cfg, LG_REQ_PUT)) {
        long cred = -2;
        if (cfg->prepare_users > 0)
            cred = (long)(user % cfg->prepare_users);
        else if (cfg->username[0] != '\0')
            cred = -1;
        if (lg_config_has(cfg, LG_REQ_GET))
            lg_workload_build_get(pp->wl, cred, user, &c->req[LG_REQ_GET]);
        if (lg_config_has(cfg, LG_REQ_PUT))
            lg_workload_build_put(pp->wl, cred, user, &c->req[LG_REQ_PUT]);
    }
    c->custom_next = user; /* seq: user u starts at the (u mod count)th request */
    c->remaining = pp->per_user > 0 ? pp->per_user : UINT64_MAX;
}

int lg_worker_pick(struct lg_worker *w, struct lg_conn *c, uint64_t *rng)
{
    const struct lg_workload *wl = w->pp->wl;
    int type;

    c->in_named = false;
    if (w->pp->phase == LG_PHASE_PREPARE)
        return LG_REQ_NEW;
    type = lg_workload_pick(wl, rng);
    if (type == LG_REQ_CUSTOM)
        c->custom = &wl->custom[lg_workload_next_custom(wl, &c->custom_next, rng)];
    c->in_named = lg_workload_fill_name(wl, type == LG_REQ_CUSTOM ? c->custom : &c->req[type],
                                        &c->named, rng);
    return type;
}

/* Whether an event of c at now falls in the measured window. */
static bool in_window(const struct lg_point_params *pp, const struct lg_conn *c, uint64_t now)
{
    if (pp->phase == LG_PHASE_PREPARE)
        return true;
    if (pp->open_loop)
        return c->start_ns >= pp->warm_end_ns && now < lg_window_end_at(pp->win, now);
    return now >= pp->warm_end_ns && now < lg_window_end_at(pp->win, now);
}

void lg_worker_record_handshake(struct lg_worker *w, const struct lg_conn *c, uint64_t now,
                                bool ok)
{
    if (ok)
        lg_tls_stats_note(&w->tls, &c->tls); /* the version and cipher, also during warm-up */
    if (!in_window(w->pp, c, now))
        return;
    if (ok)
        lg_tls_stats_record(&w->tls, &c->tls, now);
    else
        w->tls.failed++;
}

bool lg_worker_record(struct lg_worker *w, struct lg_conn *c, uint64_t now, enum lg_err e)
{
    const struct lg_point_params *pp = w->pp;
    struct lg_stats *s;

    if (!in_window(pp, c, now))
        return false;
    s = &w->stats[c->type];
    if (e == LG_ERR_NONE) {
        s->ok++;
        if (c->http.status >= LG_STATUS_MIN && c->http.status <= LG_STATUS_MAX)
            s->ok_by_status.status[c->http.status - LG_STATUS_MIN]++;
        s->body_bytes += c->http.body_bytes;
        hist_record(&s->lat, now - c->start_ns);
    } else {
        s->err[e]++;
        lg_errtab_add(&s->by_kind, e, c->http.status, lg_conn_kind(c, e));
        log_debug("user %u: %s error (%s)", c->user, lg_err_name(e),
                  c->http.why ? c->http.why : "-");
    }
    if (w->first_ns == 0)
        w->first_ns = now;
    w->last_ns = now;
    if (c->remaining != UINT64_MAX && c->remaining > 0)
        c->remaining--;
    return true;
}

static void publish(struct lg_worker *w)
{
    uint64_t ok = 0;
    uint64_t err = 0;
    double r_ns = 0;

    for (int i = 0; i < LG_REQ_TYPES; i++) {
        ok += w->stats[i].ok;
        err += lg_stats_errors(&w->stats[i]);
        r_ns += w->stats[i].lat.sum;
    }
    atomic_store_explicit(&w->progress_ok, ok, memory_order_relaxed);
    atomic_store_explicit(&w->progress_err, err, memory_order_relaxed);
    atomic_store_explicit(&w->progress_r_ns, (uint64_t)r_ns, memory_order_relaxed);
}

void lg_worker_progress(struct lg_worker *w, uint64_t now)
{
    if (now - w->_progress_at < LG_PROGRESS_NS)
        return;
    w->_progress_at = now;
    publish(w);
}

void lg_worker_done(struct lg_worker *w)
{
    uint64_t one = 1;

    publish(w);
    if (write(w->pp->done_fd, &one, sizeof(one)) < 0)
        log_error("worker %u: cannot signal its end: errno %d", w->id, errno);
}
