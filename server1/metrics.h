/*
 * metrics.h - per-thread counters for /metrics, and their Prometheus text rendering.
 *
 * DESIGN: each worker owns one struct metrics and is its only writer; it bumps fields with a
 * relaxed load + store (no read-modify-write, no contention). The thread answering /metrics reads
 * every worker's struct with relaxed loads and sums them, so the numbers are race-free under TSan
 * though not a consistent snapshot across fields. The array of workers' metrics is built before
 * the workers start and never changes.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum metrics_route {
    METRICS_ROUTE_FILES,
    METRICS_ROUTE_USERS,
    METRICS_ROUTE_HEALTHZ,
    METRICS_ROUTE_METRICS,
    METRICS_ROUTE_OTHER,
    METRICS_NROUTES,
};

/* The statuses server1 can answer; anything else is counted as "other". */
#define METRICS_STATUS_LIST(X)                                                                     \
    X(100) X(200) X(201) X(204) X(206) X(304) X(400) X(401) X(403) X(404) X(405) X(408)           \
    X(409) X(411) X(412) X(413) X(415) X(416) X(429) X(431) X(500) X(501) X(503) X(505) X(507)
#define METRICS_STATUS_ENUM(code) METRICS_ST_##code,
enum { METRICS_STATUS_LIST(METRICS_STATUS_ENUM) METRICS_ST_OTHER, METRICS_NSTATUS };

/* what a 429 (or a refused connection) was over: server1_ratelimited_total{kind} */
enum metrics_limit {
    METRICS_LIMIT_LOGIN_USER, /* --login-fail-limit */
    METRICS_LIMIT_LOGIN_ADDR, /* --login-fail-addr-limit */
    METRICS_LIMIT_SIGNUP,     /* --signup-limit */
    METRICS_LIMIT_LOGIN_SHARED, /* server2's --login-fail-limit, shared by every server1 */
    METRICS_LIMIT_LIST,       /* --list-limit */
    METRICS_NLIMITS,
};

/* auth RTT histogram upper bounds in seconds; one more bucket for +Inf */
#define METRICS_RTT_BOUNDS                                                                         \
    {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
#define METRICS_RTT_NBOUNDS 15

struct metrics {
    _Atomic uint64_t requests[METRICS_NROUTES][METRICS_NSTATUS];
    _Atomic uint64_t bytes_sent;
    _Atomic int64_t inflight;    /* requests parsed but not yet answered */
    _Atomic int64_t connections; /* open client connections */
    _Atomic int64_t response_bytes; /* buffers of --read direct responses (respbuf.h) */
    _Atomic uint64_t connections_rejected; /* over --max-conns */
    _Atomic uint64_t connections_rejected_per_ip; /* over --max-conns-per-ip */
    _Atomic uint64_t proxy_headers_refused; /* --trusted-proxy connections without a valid one */
    _Atomic uint64_t connections_handed; /* accepted here, given to a less loaded worker */
    _Atomic uint64_t ratelimited[METRICS_NLIMITS]; /* requests answered 429, by limit */
    _Atomic uint64_t signups_refused;   /* POST /users answered 403: --signup closed */
    _Atomic uint64_t uploads_busy;      /* PUTs answered 503: no temp space or memory now */
    _Atomic uint64_t uploads_timed_out; /* PUT bodies not received in time (408) */
    _Atomic uint64_t sends_timed_out;   /* responses not taken in time (closed) */
    _Atomic uint64_t responses_busy;    /* GETs answered 503: over --response-memory */
    _Atomic uint64_t reads_async;       /* GETs whose file was read without stopping the
                                           thread (--read-depth) */
    _Atomic uint64_t reads_depth_full;  /* ... read in place instead: the depth was in flight */
    _Atomic uint64_t auth_rtt_bucket[METRICS_RTT_NBOUNDS + 1]; /* not cumulative */
    _Atomic uint64_t auth_rtt_sum_ns;
    _Atomic uint64_t auth_rtt_count;
    _Atomic uint64_t auth_timeouts;
    _Atomic uint64_t auth_retries;         /* requests sent again to another server2 */
    _Atomic uint64_t auth_late_replies;    /* answers to requests that had timed out */
    _Atomic uint64_t auth_protocol_errors; /* connections closed for a bad or wrong answer */
    _Atomic uint64_t auth_link_failures;   /* handshakes in which server2 failed to prove the key */
    _Atomic int64_t auth_conns_up;
    _Atomic uint64_t auth_invalidations;   /* INVALIDATE frames from server2 */
    _Atomic uint64_t auth_leases;          /* LEASE frames from server2 */
    _Atomic uint64_t auth_lease_lapses;    /* times every lease had run out (cache emptied) */
    _Atomic uint64_t auth_cache_hits;      /* GETs answered without asking server2 */
    _Atomic uint64_t auth_cache_misses;    /* GETs the cache could not answer (cache on) */
    _Atomic int64_t auth_cache_entries;    /* entries in this worker's cache */
    _Atomic uint64_t tls_handshakes;        /* TLS handshakes completed (tls.h) */
    _Atomic uint64_t tls_handshakes_failed; /* TLS conns closed before the handshake ended */
    _Atomic uint64_t tls_resumed;           /* ... completed handshakes that resumed a session */
    _Atomic uint64_t tls_ktls_send;         /* ... after which the kernel encrypts (kTLS send) */
    /* --access-log writes that failed, buffers dropped: in the first worker's metrics only,
     * added to atomically by the log's writer and any worker (accesslog.h), never its owner */
    _Atomic uint64_t access_log_write_errors;
    /* main writes these, in the first worker's metrics only (its owner never does) */
    _Atomic uint64_t tls_reloads;           /* SIGHUP: certificate and key reloaded */
    _Atomic uint64_t tls_reloads_failed;    /* ... refused (the old ones kept) */
    _Atomic uint64_t tls_ticket_rotations;  /* new session-ticket keys (--tls-ticket-rotate) */
} __attribute__((aligned(64)));

/* Single-writer updates: only the owning thread calls these. */
static inline void metrics_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static inline void metrics_gauge_set(_Atomic int64_t *g, int64_t v)
{
    atomic_store_explicit(g, v, memory_order_relaxed);
}

static inline void metrics_gauge_add(_Atomic int64_t *g, int64_t v)
{
    atomic_store_explicit(g, atomic_load_explicit(g, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

void metrics_init(struct metrics *m);
void metrics_request(struct metrics *m, enum metrics_route route, int status);
void metrics_auth_rtt(struct metrics *m, uint64_t rtt_ns);
/* A limit's name, as its kind label says it ("login_user", ...): a static string. */
const char *metrics_limit_name(enum metrics_limit kind);

/*
 * Renders the sum of all[0..n) in the Prometheus text format (version 0.0.4), plus the static
 * prefetch gauges. Returns a malloc'd buffer (free with free()) and its length in *len.
 */
char *metrics_render(struct metrics *const *all, size_t n, uint64_t prefetched_files,
                     uint64_t prefetched_bytes, size_t *len);

#endif /* METRICS_H */
