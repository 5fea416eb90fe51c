/*
 * loopworker.h - one server2 worker that owns everything its requests need: an event loop
 * (ioloop.h) with the connections it accepted on the shared listening socket, and its own
 * database session (auth.h). It answers every request on its own thread, in order of
 * arrival, with no hand-off to another thread: the database round trip and argon2 run right
 * there. Used by both modes: a worker thread in threads mode, a worker process in processes
 * mode.
 *
 * DESIGN
 * - The jobs a read yields are queued (s2_workq, used here by one thread only) and worked from
 *   a zero-delay timer, s2_auth_take_max at a time (all of --batch at cost min, else one): one
 *   database round trip per group, and the loop writes each group's replies (and reads more)
 *   before the next group is hashed, so no answer waits behind a long run of argon2. A VERIFY
 *   the auth cache holds is queued ahead of work that may need argon2.
 * - Connections are spread over the workers by the shared counts (ioloop.h): a worker accepts
 *   only while it has no more connections than the least loaded other.
 * - A worker whose database is down probes it once a second, so "backend up" is noticed and
 *   logged without traffic. Worker 0 also runs the server2's one change feed (changefeed.h)
 *   and, with a redis-sentinel:// backend, its one Sentinel watcher (sentinelwatch.h), for as
 *   long as its loop runs.
 * - Stopping: in processes mode the loop takes SIGTERM/SIGINT itself; in threads mode the main
 *   thread takes them and writes each worker's stop descriptor.
 */
#ifndef S2_LOOPWORKER_H
#define S2_LOOPWORKER_H

#include <stdatomic.h>
#include <stdint.h>

#include "auth.h"
#include "authcache.h"
#include "backend.h"
#include "config.h"
#include "invalbus.h"
#include "ioloop.h"

#define S2_DRAIN_TIMEOUT_MS 30000 /* at shutdown, give up on unanswered requests after this */

struct s2_loopworker_params {
    const struct s2_config *cfg;
    int listen_fd;
    unsigned index;                 /* 0 .. workers-1: its bus member and shared count */
    _Atomic uint32_t *shared_counts; /* workers entries (ioloop.h) */
    struct backend_health *health;   /* shared by all workers */
    struct invalbus *bus;            /* shared by all workers */
    struct authcache *cache;         /* NULL = none; may be shared (it is thread-safe) */
    int stop_fd; /* threads mode: readable = stop; -1: take SIGTERM/SIGINT (processes) */
};

/*
 * Runs the worker until it is stopped and every connection has its answers; fills *stats and
 * *io. Returns 0, or 1 if it could not start or its loop failed.
 */
int s2_loopworker_run(const struct s2_loopworker_params *p, struct s2_auth_stats *stats,
                      struct s2_ioloop_stats *io);

#endif /* S2_LOOPWORKER_H */
