/*
 * authcache.h - a bounded cache of successful password verifications, so a user who presents
 * the same correct password again skips argon2 (~80 ms at the default cost).
 *
 * DESIGN
 * - Key: keyed BLAKE2b-128 of (user, password) with a random key made in authcache_new, so the
 *   cache never holds a password nor anything an attacker could test guesses against offline.
 * - Value: the stored hash string the password was verified against, and an expiry time.
 *   A hit requires the hash the database returns NOW to equal the recorded one, so a changed or
 *   re-created account (new random salt -> new string) can never match a stale entry, whoever
 *   changed it (this process, another server2, an operator). Entries also expire after the TTL.
 * - Only successful verifications are inserted, so creating an account cannot make an entry
 *   wrong. A failed check (entry expired or hash differs) drops the entry. Anything that changes
 *   or removes an account in this process calls authcache_invalidate_user.
 * - Bounded: exactly `capacity` entries in total, split over striped tables, each with its own
 *   mutex and CLOCK (second-chance) eviction. Thread-safe.
 */
#ifndef AUTHCACHE_H
#define AUTHCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTHCACHE_KEY_BYTES 16
#define AUTHCACHE_MAX_ENTRIES (1u << 24)

struct authcache;

struct authcache_key {
    uint8_t b[AUTHCACHE_KEY_BYTES]; /* keyed hash of (user, password) */
    uint64_t user_tag;              /* keyed hash of user alone, for invalidate_user */
};

struct authcache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t inserts;
    uint64_t evictions;
    uint64_t invalidations; /* entries dropped because they were stale or invalidated */
    size_t entries;
};

/* capacity in 1..AUTHCACHE_MAX_ENTRIES; ttl_ns 0 = entries never expire. NULL on bad args. */
struct authcache *authcache_new(size_t capacity, uint64_t ttl_ns);
void authcache_free(struct authcache *c);

/* Computes the key of (user, pass); pure given the cache's secret key. */
void authcache_key(const struct authcache *c, const char *user, size_t user_len, const char *pass,
                   size_t pass_len, struct authcache_key *out);

/*
 * True if k is cached, not expired at now_ns, and was verified against exactly stored_hash.
 * An entry that is present but expired or recorded for another hash is dropped.
 */
bool authcache_check(struct authcache *c, const struct authcache_key *k, const char *stored_hash,
                     uint64_t now_ns);

/* Records that k verified against stored_hash (at most PWHASH_STR_MAX - 1 chars; longer: no-op). */
/* Whether k has an entry that has not expired (the stored hash is not checked). */
bool authcache_contains(struct authcache *c, const struct authcache_key *k, uint64_t now_ns);
void authcache_put(struct authcache *c, const struct authcache_key *k, const char *stored_hash,
                   uint64_t now_ns);

/* Drops k's entry, if any. */
void authcache_remove(struct authcache *c, const struct authcache_key *k);

/* Drops every entry of this user (scans the whole cache); returns how many. */
size_t authcache_invalidate_user(struct authcache *c, const char *user, size_t user_len);

void authcache_get_stats(struct authcache *c, struct authcache_stats *out);

#endif /* AUTHCACHE_H */
