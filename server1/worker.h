/*
 * worker.h - one worker thread: its own event_base (EVENT_BASE_FLAG_NOLOCK), its own
 * SO_REUSEPORT listening socket, its client connections, its authclient and its metrics.
 *
 * Balance: the kernel spreads new connections over the listening sockets by a hash of their
 * addresses, which can put all of a client's few connections on one thread. So the worker that
 * accepts a connection keeps it only if no other worker owns fewer (load, ties stay); otherwise
 * it hands the socket to the least loaded one through that worker's inbox. One wake-up per
 * handed connection, none per request.
 *
 * DESIGN: main creates the listening sockets and struct s1_shared, then starts the workers and
 * waits on a barrier until each has set up its base. After that only the worker touches its base
 * and connections. main talks to a worker only through stop_level (atomic) plus a write to
 * notify_fd (an eventfd registered in the worker's base). The committer thread returns
 * finished uploads through the worker's inbox: s1_worker_commit_done appends to done_jobs under
 * inbox_lock and writes inbox_fd if the inbox was empty; other workers hand connections the same
 * way. Workers read one another's metrics (relaxed atomics) to answer /metrics.
 */
#ifndef S1_WORKER_H
#define S1_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

#include "authclient.h"
#include "commit.h"
#include "config.h"
#include "conn.h"
#include "credcache.h"
#include "files.h"
#include "metrics.h"
#include "ratelimit.h"
#include "respbuf.h"

/* Shared by all workers; immutable after the workers start, except where noted. */
struct s1_shared {
    const struct s1_config *cfg;
    struct files *files;            /* its prefetch table has its own lock (files.h) */
    struct committer *commit;       /* NULL with --read-only; thread-safe calls only */
    struct metrics *const *metrics; /* every worker's metrics, for /metrics */
    struct s1_worker *workers;      /* all of them, for handing connections over */
    size_t nworkers;
    _Atomic unsigned nconns;        /* shared mutable: open connections in the process */
    /* per-client limits, NULL when off; thread-safe (ratelimit.h) */
    struct ratelimit *login_fail_user; /* --login-fail-limit */
    struct ratelimit *login_fail_addr; /* --login-fail-addr-limit */
    struct ratelimit *signup;          /* --signup-limit */
    struct connlimit *conns_per_ip;    /* --max-conns-per-ip */
    pthread_barrier_t ready;        /* nworkers + 1 (main) */
};

enum { S1_WORKER_RUN = 0, S1_WORKER_DRAIN = 1, S1_WORKER_FORCE = 2 };

struct s1_worker {
    unsigned id;
    pthread_t thread;
    struct s1_shared *sh;
    int listen_fd;              /* main creates it; owner only afterwards */
    int notify_fd;              /* eventfd: main writes, owner reads */
    _Atomic int stop_level;     /* shared: main writes, owner reads */
    _Atomic bool done;          /* shared: owner sets when its loop has ended */
    bool init_failed;           /* owner writes before the barrier, main reads after it */
    struct metrics metrics;     /* owner writes; any worker reads (relaxed atomics) */
    /* connections this worker owns or has been handed and not yet taken: any worker reads it
     * and adds to it when it hands one over; the owner subtracts when one closes */
    _Atomic unsigned load;
    int inbox_fd;               /* eventfd: the committer and other workers write, owner reads */
    /* inbox_lock protects done_jobs (committed jobs the owner has not answered yet) and
     * handed (connections other workers accepted for this one) */
    pthread_mutex_t inbox_lock;
    struct commit_job_list done_jobs;
    STAILQ_HEAD(s1_handoff_list, s1_handoff) handed;

    /* owner only */
    struct event_base *base;
    struct event accept_ev;
    struct event accept_pause_ev;
    struct event notify_ev;
    struct event inbox_ev;
    struct event drain_ev;
    struct authclient *auth;
    struct credcache cache; /* --auth-cache; cache_on false when off */
    bool cache_on;
    TAILQ_HEAD(s1_conn_list, s1_conn) conns;
    unsigned nconns;
    bool draining;
    const struct timeval *header_tv; /* common timeouts of this base */
    const struct timeval *idle_tv;
    const struct timeval *linger_tv;
    uint64_t last_accept_warn_ns;
    struct respbuf_budget resp_budget; /* --response-memory */
};

/* Prepares w (no thread yet). Returns -1 with errno on failure. */
int s1_worker_init(struct s1_worker *w, unsigned id, struct s1_shared *sh, int listen_fd);
int s1_worker_start(struct s1_worker *w);
/* From main: drain (level 1) or stop now (level 2). Async-signal-safe enough for main's loop. */
void s1_worker_stop(struct s1_worker *w, int level);
void s1_worker_join(struct s1_worker *w);
void s1_worker_release(struct s1_worker *w);

/*
 * For the committer thread: the jobs (all of this worker's) are finished; the worker answers
 * them. Takes them out of jobs. One wake-up for the lot. Thread-safe.
 */
void s1_worker_commit_done(struct s1_worker *w, struct commit_job_list *jobs);

/* For conn: a connection ended (already unlinked from the list by s1_conn_free). */
void s1_worker_conn_closed(struct s1_worker *w);

#endif /* S1_WORKER_H */
