/*
 * credcache.h - one worker thread's cache of credentials server2 has accepted (--auth-cache,
 * --auth-cache-ttl): a request whose (user, password) server2 verified within the TTL is
 * answered without a message to server2.
 *
 * DESIGN
 * - Owned by one worker thread: no lock, no atomics. Each worker has its own (a client's
 *   connection stays on one worker, so its hits stay there too).
 * - credcache_shared is the one exception: the same table under one lock, for what every thread
 *   must see alike (the credentials the failed-login limits let through: login.c).
 * - Key: SipHash-2-4 (libsodium crypto_shorthash_siphashx24, 128 bits) of (user, password)
 *   under a random key made per process, never the password itself; plus a 64-bit tag of the
 *   user alone under a second key. Only successes are put in.
 * - Set-associative: a user's entries all live in the set its tag picks (CREDCACHE_WAYS
 *   entries), at most CREDCACHE_PER_USER of them, so one user can never push out more than a
 *   set's worth of other users' entries, and dropping a user touches one set. A new entry takes
 *   an empty or expired way, else the one that expires first.
 * - server2 stays the authority: credcache_drop_user when it says an account changed,
 *   credcache_clear when a connection to it is lost (one may have carried a change we never
 *   got), and the epoch (bumped by both) tells an answer that was on its way during a change
 *   from one that came after: credcache_put takes the epoch its request was sent in and is a
 *   no-op if it moved.
 */
#ifndef S1_CREDCACHE_H
#define S1_CREDCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CREDCACHE_WAYS 4
#define CREDCACHE_PER_USER 2
#define CREDCACHE_MAX_ENTRIES (1u << 24)

struct credcache_key {
    uint64_t k[2]; /* keyed hash of (user, password) */
    uint64_t user; /* keyed hash of user */
};

struct credcache_entry {
    uint64_t k[2];
    uint64_t user;
    uint64_t expires_ns; /* 0 = empty */
};

struct credcache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t inserts;
    uint64_t evictions; /* live entries pushed out by a new one */
    uint64_t drops;     /* entries dropped because server2 said the account changed */
    uint64_t clears;    /* times the whole cache was emptied (a lost connection) */
};

struct credcache {
    struct credcache_entry *e; /* nsets * CREDCACHE_WAYS */
    uint32_t nsets;            /* a power of two */
    uint64_t ttl_ns;
    uint64_t epoch;
    size_t used; /* occupied entries (expired ones count until they are found) */
    struct credcache_stats st;
};

/*
 * Makes the process-wide hash keys (once; call before any thread uses a cache). 0 or -1 if
 * libsodium cannot start.
 */
int credcache_global_init(void);

/* entries > 0 (rounded up to whole sets) and ttl_ns > 0; false if out of memory. */
bool credcache_init(struct credcache *c, size_t entries, uint64_t ttl_ns);
void credcache_release(struct credcache *c);

void credcache_key(const char *user, size_t user_len, const char *pass, size_t pass_len,
                   struct credcache_key *out);
/* True if k was put in and has not expired at now_ns. */
bool credcache_hit(struct credcache *c, const struct credcache_key *k, uint64_t now_ns);
/* Records that server2 accepted k, for a request sent when the epoch was `epoch`. */
void credcache_put(struct credcache *c, const struct credcache_key *k, uint64_t epoch,
                   uint64_t now_ns);
/* Every entry of this user goes; returns how many. */
size_t credcache_drop_user(struct credcache *c, const char *user, size_t user_len);
void credcache_clear(struct credcache *c);
/* Live entries (for /metrics and tests); scans the table. */
size_t credcache_count(const struct credcache *c, uint64_t now_ns);

/*
 * The same, shared by every thread under one lock: what server1 knows of credentials without
 * answering from them (which credentials server2 accepted lately, for the failed-login limits:
 * login.c). No epoch: a put is never undone by a change in flight, the caller drops the user.
 */
struct credcache_shared {
    pthread_mutex_t lock;
    struct credcache c;
};

/* NULL if out of memory. */
struct credcache_shared *credcache_shared_new(size_t entries, uint64_t ttl_ns);
void credcache_shared_free(struct credcache_shared *s); /* NULL is fine */
bool credcache_shared_hit(struct credcache_shared *s, const struct credcache_key *k,
                          uint64_t now_ns);
void credcache_shared_put(struct credcache_shared *s, const struct credcache_key *k,
                          uint64_t now_ns);
void credcache_shared_drop_user(struct credcache_shared *s, const char *user, size_t user_len);

#endif /* S1_CREDCACHE_H */
