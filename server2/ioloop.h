/*
 * ioloop.h - server2's network side: one libevent event_base that accepts server1's connections
 * on a listening socket, decodes frames (common/frame.h) straight from each bufferevent's input,
 * runs the link handshake (HELLO, HELLO_ACK, AUTH), opens and seals the frames after it
 * (common/linkseal.h) and answers PING itself, hands CREATE/VERIFY jobs to a dispatch callback
 * in groups of up to `batch`, and writes the replies it is given back.
 *
 * DESIGN
 * - Single-threaded: every function here must be called on the loop's thread. In threads mode
 *   the dispatch callback queues jobs for worker threads and the replies come back through
 *   s2_ioloop_reply called from an event of this loop; in processes mode dispatch answers the
 *   jobs synchronously and calls s2_ioloop_reply itself.
 * - Connections live in a table of max_conns slots; a job names its connection by slot and
 *   generation, so a reply for a closed connection is dropped, never sent to a reused slot.
 * - Back-pressure: a connection with max_inflight jobs unanswered, or with too many reply
 *   bytes its peer has not read, is not read from until that drains.
 * - The handshake (docs/protocol.md) must end within handshake_timeout_us of the accept, else the
 *   connection is closed (hs_timeouts). At most max_unauth connections are in their handshake
 *   at once, and at most max_unauth_per_addr of them from one address (net_addr_key: IPv4, or
 *   an IPv6 /64); a new connection beyond either cap, or one that finds every slot taken while
 *   some connection is still in its handshake, closes the oldest such connection (of that
 *   address for the per-address cap) to take its place (hs_evicted, hs_evicted_addr), as nginx
 *   reuses its oldest idle connection when it runs out: holding connections open without the
 *   secret cannot keep a server1 out. Only when every slot is authenticated is a new
 *   connection refused (rejected).
 * - Bad input (a frame frame_decode rejects, a first frame that is not HELLO, a version we do
 *   not speak, a server-to-client frame type, an id already in flight) closes that connection
 *   only; a bad version gets HELLO_ACK with status BAD_VERSION first. Logged at warn, at most
 *   once a second. A second frame that is not an AUTH with the right MAC closes the connection
 *   before any request of it is read, and is counted in auth_failed.
 * - With a link secret, every frame after HELLO_ACK (out) and after AUTH (in) is a sealed record
 *   (common/linkseal.h), sealed in place on a stack buffer and opened from the bufferevent's
 *   input before it is decoded; a record that does not open closes the connection and is
 *   counted in auth_failed too. Without one (--insecure-no-secret) the link stays in clear.
 * - Each REPLY echoes the type and user of the request it answers; the loop keeps them per
 *   connection by id, since the workers' replies carry only id and status. A request's budget
 *   becomes its job's deadline_ns (now + budget) when the frame is read.
 * - Balancing (processes mode only): see shared_counts below.
 * - Account changes (docs/protocol.md, "Invalidation"): the reply to a SETPASS or DELETE that may
 *   have changed the account is held back; the change is published on the bus (invalbus.h),
 *   every loop sends INVALIDATE on its ready connections, and the reply goes out once every
 *   server1 connection of every loop has acknowledged it (or was closed: one that does not
 *   acknowledge within INVAL_ACK_TIMEOUT_MS is closed, so its server1 forgets), at the latest
 *   after INVAL_WAIT_MS (logged, counted in change_timeouts).
 * - Shutdown (SIGTERM/SIGINT, or s2_ioloop_stop): stop accepting, stop reading, decode every
 *   whole frame already in an input buffer, answer everything, close each connection once its
 *   replies are written, then the loop returns. A peer that half-closes is treated the same.
 */
#ifndef S2_IOLOOP_H
#define S2_IOLOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "invalbus.h"
#include "job.h"
#include "linkauth.h"

#define INVAL_ACK_TIMEOUT_MS 1000 /* a connection that does not acknowledge is closed */
#define INVAL_WAIT_MS 5000        /* an account change is answered after this at the latest */

struct event_base;
struct s2_ioloop;

/* Called with 1..batch jobs read from one connection; the jobs are only valid during the call. */
typedef void (*s2_ioloop_dispatch_cb)(struct s2_ioloop *loop, struct s2_job *jobs, size_t n,
                                      void *arg);

struct s2_ioloop_params {
    int listen_fd; /* listening, non-blocking; not closed by the loop */
    unsigned max_conns;
    unsigned max_inflight;
    unsigned batch;
    uint64_t idle_timeout_us;  /* 0 = never */
    uint64_t drain_timeout_ms; /* at shutdown, give up on unanswered requests after this */
    uint64_t handshake_timeout_us; /* HELLO..AUTH must be over this long after the accept */
    unsigned max_unauth;           /* connections in their handshake at once; >= 1 */
    unsigned max_unauth_per_addr;  /* of them from one address; 0 = no cap of its own */
    s2_ioloop_dispatch_cb dispatch;
    void *arg;
    /*
     * Processes mode: every process's open-connection count, in memory shared by all of them
     * (S2_IOLOOP_ABSENT for a process that is not running). A process accepts only while it
     * has no more connections than the least loaded other, so server1's few long-lived
     * connections spread over the processes. NULL: no balancing (threads mode).
     */
    _Atomic uint32_t *shared_counts;
    unsigned nshared;
    unsigned shared_index;
    /* The invalidation bus of this server2 and this loop's member number; never NULL. */
    struct invalbus *bus;
    unsigned bus_member;
    /* true: the loop does not take SIGTERM/SIGINT (several loops in one process: the caller
     * takes them and calls s2_ioloop_stop on each loop's thread) */
    bool no_signals;
};

#define S2_IOLOOP_ABSENT UINT32_MAX

struct s2_ioloop_stats {
    uint64_t accepted;
    uint64_t rejected;  /* refused: every one of --max-conns slots authenticated */
    uint64_t bad_input; /* connections closed for a protocol violation */
    uint64_t requests;  /* CREATE/VERIFY dispatched */
    uint64_t replies;   /* replies written */
    uint64_t dropped;   /* replies for connections that were gone */
    uint64_t auth_failed; /* connections closed for failing link authentication */
    uint64_t invalidations; /* INVALIDATE frames sent */
    uint64_t ack_timeouts;  /* connections closed for not acknowledging one in time */
    uint64_t change_timeouts; /* account changes answered before every ack came */
    uint64_t leases;          /* LEASE frames sent */
    uint64_t hs_timeouts;     /* closed for not finishing the handshake in time */
    uint64_t hs_evicted;      /* closed in their handshake to make room for a newer one */
    uint64_t hs_evicted_addr; /* ... of them, for one from the same address */
};

/*
 * The link key every connection must prove it holds (linkauth.h) before any request of it is
 * read. Set once at start, before any loop runs (processes inherit it); all zero if never set.
 */
void s2_ioloop_set_link_key(const uint8_t key[LINKAUTH_KEY_SIZE]);

/* NULL if libevent cannot be set up (reason logged). */
struct s2_ioloop *s2_ioloop_new(const struct s2_ioloop_params *p);
void s2_ioloop_free(struct s2_ioloop *l);
struct event_base *s2_ioloop_base(struct s2_ioloop *l);

/* Runs until shutdown is complete; 0, or -1 if the loop failed. */
int s2_ioloop_run(struct s2_ioloop *l);
/* Starts the graceful shutdown described above (what SIGTERM does). */
void s2_ioloop_stop(struct s2_ioloop *l);

/* Writes the replies whose connection is still there. */
void s2_ioloop_reply(struct s2_ioloop *l, const struct s2_reply *r, size_t n);

void s2_ioloop_get_stats(const struct s2_ioloop *l, struct s2_ioloop_stats *out);
/* Adds b to a. */
void s2_ioloop_stats_add(struct s2_ioloop_stats *a, const struct s2_ioloop_stats *b);
/* The lines logged when serving ends: connections accepted, refused, closed for bad input,
 * in their handshake, ... */
void s2_ioloop_log_stats(const struct s2_ioloop_stats *st);

#endif /* S2_IOLOOP_H */
