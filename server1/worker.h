/*
 * worker.h - one worker thread: its own event_base (EVENT_BASE_FLAG_NOLOCK), its own
 * SO_REUSEPORT listening socket (and one for --tls-port), its client connections, its authclient and its metrics.
 *
 * Balance: the kernel spreads new connections over the listening sockets by a hash of their
 * addresses, which can put all of a client's few connections on one thread. So the worker that
 * accepts a connection keeps it only if no other worker owns fewer (load, ties stay); otherwise
 * it hands the socket to the least loaded one through that worker's mailbox. One wake-up per
 * handed connection, none per request. The first worker also owns --metrics-listen's one
 * socket, and keeps every connection it accepts there (marked metrics_only: conn.h).
 *
 * DESIGN: main creates the listening sockets and struct s1_shared, then starts the workers and
 * waits on a barrier until each has set up its base. After that only the worker touches its base
 * and connections. main talks to a worker only through stop_level (atomic) plus a write to
 * notify_fd (an eventfd registered in the worker's base). With --access-log the worker owns its
 * part of it (accesslog.h): a 100 ms timer hands its buffer to the log's writer thread, and
 * its loop's end the rest. The committer posts finished uploads
 * to the worker's inbox (mailbox.h), and other workers post connections they hand over. Workers read one another's metrics (relaxed atomics) to answer /metrics.
 */
#ifndef S1_WORKER_H
#define S1_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

#include "aioread.h"
#include "conn.h"
#include "handler.h"
#include "mailbox.h"
#include "metrics.h"

/* Shared by all workers; immutable after the workers start, except where noted. */
struct s1_shared {
    struct s1_service svc;          /* what the handlers share (service.h) */
    struct s1_worker *workers;      /* all of them, for handing connections over */
    size_t nworkers;
    struct s1_tls *tls;             /* --tls-port's (tls.h: locked inside), or NULL */
    struct accesslog *alog;         /* --access-log (accesslog.h: each worker its part), or NULL */
    _Atomic unsigned nconns;        /* shared mutable: open connections in the process */
    pthread_barrier_t ready;        /* nworkers + 1 (main) */
};

enum { S1_WORKER_RUN = 0, S1_WORKER_DRAIN = 1, S1_WORKER_FORCE = 2 };

struct s1_worker {
    unsigned id;
    pthread_t thread;
    struct s1_shared *sh;
    int listen_fd;              /* main creates it; owner only afterwards */
    int tls_listen_fd;          /* the same for --tls-port, or -1 */
    int metrics_listen_fd;      /* the same for --metrics-listen (one worker's only), or -1 */
    int notify_fd;              /* eventfd: main writes, owner reads */
    _Atomic int stop_level;     /* shared: main writes, owner reads */
    _Atomic bool done;          /* shared: owner sets when its loop has ended */
    bool init_failed;           /* owner writes before the barrier, main reads after it */
    struct metrics metrics;     /* owner writes; any worker reads (relaxed atomics) */
    /* connections this worker owns or has been handed and not yet taken: any worker reads it
     * and adds to it when it hands one over; the owner subtracts when one closes */
    _Atomic unsigned load;
    struct mailbox inbox;       /* any thread posts; delivered on the owner's loop */

    /* owner only */
    struct event_base *base;
    struct event accept_ev;
    struct event tls_accept_ev; /* assigned always, added only with a tls_listen_fd */
    struct event metrics_accept_ev; /* the same with a metrics_listen_fd */
    struct event accept_pause_ev;
    struct event notify_ev;
    struct event drain_ev;
    struct event alog_ev;       /* flushes the access log's buffer (with --access-log) */
    struct s1_conn_home home;   /* what its connections see of it (conn.h) */
    struct s1_handler_env env;  /* what the handler sees of it (service.h) */
    struct aioread aio;         /* its O_DIRECT reads in flight (--read-depth) */
    uint64_t last_accept_warn_ns;
};

/*
 * Prepares w (no thread yet; tls_listen_fd -1: no HTTPS; metrics_listen_fd -1: no metrics
 * listener here). Returns -1 with errno on failure.
 */
int s1_worker_init(struct s1_worker *w, unsigned id, struct s1_shared *sh, int listen_fd,
                   int tls_listen_fd, int metrics_listen_fd);
int s1_worker_start(struct s1_worker *w);
/* From main: drain (level 1) or stop now (level 2). Async-signal-safe enough for main's loop. */
void s1_worker_stop(struct s1_worker *w, int level);
void s1_worker_join(struct s1_worker *w);
void s1_worker_release(struct s1_worker *w);

#endif /* S1_WORKER_H */
