/*
 * ratelimit.h - per-client limits of server1: token buckets for failed logins (per username and
 * per client address) and account creations (per client address), and the count of open
 * connections per client address.
 *
 * DESIGN: a client address is keyed by its IPv4 address, or by the /64 prefix of an IPv6 one
 * (one host usually owns a whole /64, so finer keys would be free to multiply).
 *
 * struct ratelimit is one token bucket per key ("count events per period": a burst of count,
 * then one more every period/count), kept as a GCRA "theoretical arrival time" (one 64-bit
 * time per key). Keys are stored as 64-bit keyed hashes (SipHash, a random key per table, so
 * nobody can aim collisions at another's key) in a fixed table of sets of RATELIMIT_WAYS slots:
 * memory is bounded and nothing is ever allocated after start. A key that finds its set full
 * evicts the least useful slot: a full bucket first (it is the same as no entry), else the one
 * closest to full, so a flood of fresh keys pushes out the nearly forgotten ones long before a
 * locked-out key. Shared by every worker thread: writers (a login or a creation about to reach
 * server2 takes a token, a login that was not a wrong password gives it back) take a per-set
 * spin lock (the set's sequence number made odd) held for a few nanoseconds; readers (the
 * check before every login, i.e. on every authenticated request, also those the credential
 * cache answers) take no lock: a seqlock read of one 192-byte set, retried if a writer was
 * inside.
 *
 * struct connlimit counts open connections per address under one mutex, taken only when a
 * connection is accepted or closed (not per request), for a probe of an open-addressed table
 * that is at most half full (its capacity is twice --max-conns, which bounds the addresses).
 */
#ifndef S1_RATELIMIT_H
#define S1_RATELIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net.h"
#include "opts.h"

#define RATELIMIT_ADDR_LEN NET_ADDR_KEY_LEN /* a client's address key: net_addr_key */
#define RATELIMIT_WAYS 8      /* slots per set of the bucket table */

struct ratelimit_slot {
    _Atomic uint64_t fp;  /* keyed hash of the key, never 0; 0 = free */
    _Atomic uint64_t tat; /* ns: the bucket is full again at this time (GCRA) */
};

struct ratelimit_set {
    _Atomic uint64_t seq; /* odd while a writer changes the slots (the set's lock) */
    struct ratelimit_slot slot[RATELIMIT_WAYS];
} __attribute__((aligned(64)));

struct ratelimit {
    struct ratelimit_set *sets; /* nsets (a power of two) */
    uint64_t mask;              /* nsets - 1 */
    uint64_t interval_ns;       /* period / count: one token returns after this long */
    uint64_t tolerance_ns;      /* period - interval: how far ahead the time may run */
    unsigned char hash_key[16]; /* SipHash key, random per table */
    _Atomic uint64_t evictions; /* keys pushed out of a full set (relaxed) */
};

/*
 * A table of at least `entries` keys (rounded up to whole sets, a power of two) for rate r
 * (r->count > 0). Returns NULL (errno set) if out of memory.
 */
struct ratelimit *ratelimit_new(const struct opts_rate *r, size_t entries);
void ratelimit_free(struct ratelimit *rl); /* accepts NULL */

/*
 * 0 if key (len bytes) may go ahead at now_ns (it has a token), else the ns until its next
 * token returns. Takes nothing. Lock-free; thread-safe.
 */
uint64_t ratelimit_check(struct ratelimit *rl, const void *key, size_t len, uint64_t now_ns);
/*
 * Records one event for key (takes a token): 0 if it had one, else (over the limit: nothing
 * changes) the ns until one returns. Thread-safe.
 */
uint64_t ratelimit_take(struct ratelimit *rl, const void *key, size_t len, uint64_t now_ns);
/*
 * Gives back one token that ratelimit_take took for key (a reservation that was not used):
 * nothing if key is no longer in the table, and never more than a full bucket. Thread-safe.
 */
void ratelimit_refund(struct ratelimit *rl, const void *key, size_t len);
/* Seconds for Retry-After: wait_ns rounded up, at least 1. */
uint64_t ratelimit_retry_after_s(uint64_t wait_ns);

struct connlimit;

/*
 * Counts connections per address, at most per_addr each, for at most max_conns connections in
 * all (the table never fills). Returns NULL (errno set) if out of memory.
 */
struct connlimit *connlimit_new(unsigned per_addr, unsigned max_conns);
void connlimit_free(struct connlimit *cl); /* accepts NULL */
/* One more connection from key: true, or false (nothing counted) when it has per_addr. */
bool connlimit_acquire(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN]);
/* A connection from key closed (one that connlimit_acquire counted). */
void connlimit_release(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN]);
/* Connections counted for key now. */
unsigned connlimit_count(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN]);

#endif /* S1_RATELIMIT_H */
