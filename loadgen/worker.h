/*
 * worker.h - the threads that generate load during one point. Two implementations behind one
 * ops struct: worker_events.c (an epoll loop per thread driving many users, the default) and
 * worker_threads.c (one blocking-style thread per user, the 2017 report's model).
 * DESIGN: lg_point_params is built by the run before any worker starts and is immutable until
 * they are joined. A struct lg_worker is owned by its thread: the run reads its results only
 * after pthread_join. The only values shared while running are the progress counters (written
 * by the owner with relaxed atomic stores, at most every 100 ms), the window's end (window.h:
 * extended by the main thread until a thread reaches it), the run's stop flag (set once by the
 * main thread) and two eventfds (wake: main -> worker, done: worker -> main).
 */
#ifndef LG_WORKER_H
#define LG_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "config.h"
#include "stats.h"
#include "tls.h"
#include "window.h"
#include "workload.h"

#define LG_BACKOFF_NS (20ull * 1000000) /* wait after a failed connect before the next try */
#define LG_PROGRESS_NS (100ull * 1000000)

enum lg_phase {
    LG_PHASE_MEASURE = 0, /* a point of the sweep */
    LG_PHASE_PREPARE = 1, /* creating --prepare-users accounts before the first point */
};

/* Shared read-only while the workers of one point run. */
struct lg_point_params {
    const struct lg_config *cfg;
    const struct lg_workload *wl;
    enum lg_phase phase;
    unsigned users;         /* N (connections of the point) */
    unsigned point_index;   /* makes usernames unique across points */
    uint64_t start_ns;      /* users start here */
    uint64_t warm_end_ns;   /* completions count from here until the window's end */
    struct lg_window *win;  /* the end, shared (window.h); never reached when bounded by counts */
    uint64_t per_user;      /* counted requests per user, 0 = bounded by time */
    uint64_t prepare_count; /* LG_PHASE_PREPARE: accounts to create in total */
    bool open_loop;
    double rate; /* open loop, requests/s for the whole point */
    struct lg_check check;
    const struct lg_tls_opts *tls; /* https://: each worker's TLS context from these, else NULL */
    bool new_conn;              /* --new-conn-per-request */
    atomic_bool *stop; /* set by main (SIGINT/SIGTERM): finish now */
    int done_fd;       /* eventfd: each worker adds 1 when it returns */
};

struct lg_worker {
    /* set by the run before the thread starts, then read-only */
    unsigned id;
    unsigned nthreads;
    unsigned first_user;
    unsigned nusers;
    const struct lg_point_params *pp;
    int wake_fd; /* eventfd the main thread writes to stop the worker early */
    pthread_t tid;

    /* results: owner only; read by the run after pthread_join */
    struct lg_stats stats[LG_REQ_TYPES];
    uint64_t first_ns;  /* first counted completion, 0 if none */
    uint64_t last_ns;   /* last counted completion */
    uint64_t unsent;    /* open loop: arrivals in the window never sent (backlog) */
    uint64_t abandoned; /* requests in flight when the point ended, not counted */
    int failed;         /* the worker could not set up or its event loop failed */
    struct lg_tls_stats tls; /* handshakes that ended in the measured window */

    /* shared: written by the owner with relaxed stores, read by main for progress */
    atomic_uint_least64_t progress_ok;
    atomic_uint_least64_t progress_err;
    atomic_uint_least64_t progress_r_ns; /* the response times of progress_ok, summed */
    uint64_t _progress_at; /* owner only: last publication */
};

struct lg_worker_ops {
    const char *name;
    void *(*thread_main)(void *worker);
};

extern const struct lg_worker_ops lg_worker_events_ops;
extern const struct lg_worker_ops lg_worker_threads_ops;

/*
 * Creates the workers' threads (signals blocked, named "lg-wrk-N", pinned per --pin-cpus).
 * ws[i] must have id, nthreads, first_user, nusers and pp set. Returns how many started.
 */
unsigned lg_workers_start(struct lg_worker *ws, unsigned n, const struct lg_worker_ops *ops);
void lg_worker_wake(struct lg_worker *w);

/* Shared by both models (worker.c). */
void lg_worker_init_results(struct lg_worker *w);
/* Builds the connection's request bytes for the point's phase and workload. */
void lg_worker_conn_setup(struct lg_worker *w, struct lg_conn *c, unsigned user);
/*
 * Next request type of c (LG_REQ_NEW during prepare); a custom one is chosen into c->custom;
 * with --names, the name is drawn and the request written into c->named.
 */
int lg_worker_pick(struct lg_worker *w, struct lg_conn *c, uint64_t *rng);
/*
 * Records the end of c's request at now with class e (LG_ERR_NONE = success) if it falls in
 * the measured window, and counts it against c->remaining. Returns true if counted.
 */
bool lg_worker_record(struct lg_worker *w, struct lg_conn *c, uint64_t now, enum lg_err e);
/* Counts c's TLS handshake, ended at now (ok: it succeeded), if now is in the window. */
void lg_worker_record_handshake(struct lg_worker *w, const struct lg_conn *c, uint64_t now,
                                bool ok);
/* Publishes progress counters if LG_PROGRESS_NS passed since the last time. */
void lg_worker_progress(struct lg_worker *w, uint64_t now);
/* Tells the run this worker has finished. */
void lg_worker_done(struct lg_worker *w);

#endif /* LG_WORKER_H */
