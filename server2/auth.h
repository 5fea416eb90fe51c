/*
 * auth.h - answers a batch of CREATE/VERIFY jobs: the credential logic of server2, independent
 * of how jobs arrive (worker thread or pre-forked process) and of the database (backend_ops).
 *
 * DESIGN
 * One s2_auth per worker (thread or process); it owns one backend session, so it must only be
 * used by one thread at a time. The auth cache, if any, is shared and thread-safe.
 * A batch of n jobs is worked in groups; each group shares ONE database round trip, and each
 * job's answer is handed to the caller's sink as soon as that job is settled, before any
 * further argon2 work, so a cheap answer is never held behind other jobs' hashing:
 *  1. bad usernames/passwords get INVALID and never reach the database; a job whose
 *     deadline_ns has passed gets EXPIRED without any hashing or database work (checked when
 *     the group is formed, again before the round trip, and again before each hash);
 *  2. a CREATE repeated for the same name within a group is sent once; a repeat of the same
 *     creation (the same token: sent again) gets the first's status, any other repeat EXISTS
 *     if the first was created or existed, else the first's failure status; VERIFYs of the
 *     same name share one lookup;
 *  3. each distinct CREATE is hashed (argon2id, CPU) before the write, one at a time, and
 *     stored as its record (record.h: the hash marked with the creation's token, so that the
 *     same creation sent again through any server2 is answered OK, not EXISTS); a group
 *     stops taking jobs once its hashing has taken AUTH_GROUP_HASH_NS, or after one hash at a
 *     cost above min, so the first create of a pop never waits for many others' hashes;
 *  4. ONE backend round trip runs the group's CREATEs, then its LOOKUPs; if the backend is
 *     down or the connection breaks, every job that needed it gets UNAVAILABLE;
 *  5. each VERIFY whose user exists (a deleted account's tombstone is no user) is checked: an
 *     auth cache hit (same user+password verified earlier against exactly the hash the
 *     database returned now) skips argon2; otherwise
 *     crypto_pwhash_str_verify, and a success is cached. A VERIFY whose user does not exist is
 *     checked against a dummy hash of the same cost (pwhash_dummy) and DENIED, so that its
 *     answer takes as long as a wrong password's;
 *  6. with a login limit (--login-fail-limit, backend.h), the lookup also read how far the
 *     user's failures are ahead: a VERIFY over the limit is answered LIMITED (with the
 *     milliseconds to wait) before any cache or argon2 work, the right password too, and so
 *     are the ones of the same name in the group once the failures it still allowed are
 *     used up; the group's DENIED verifications are charged to the database in one more
 *     round trip before they are answered.
 * An account change (SETPASS, DELETE) is a group of its own: see run_change in auth.c.
 */
#ifndef AUTH_H
#define AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "authcache.h"
#include "backend.h"
#include "job.h"
#include "pwhash.h"

struct s2_auth;

struct s2_auth_stats {
    uint64_t batches;
    uint64_t jobs;
    uint64_t hashes;      /* argon2 hashes computed (creates) */
    uint64_t verifies;    /* argon2 verifications computed */
    uint64_t cache_hits;  /* verifications skipped thanks to the auth cache */
    uint64_t unavailable; /* jobs answered UNAVAILABLE */
    uint64_t expired;     /* jobs answered EXPIRED, unworked */
    uint64_t dummy_verifies; /* verifications against the dummy hash (no such user) */
    uint64_t changes;        /* passwords changed and accounts deleted */
    uint64_t rejected;       /* over --max-queue (counted by the queue, added by its owner) */
    uint64_t limited;        /* answered LIMITED: the user's failed logins over the limit */
    uint64_t fails_charged;  /* failed logins written to the database's limit */
};

/* A group's hashing budget: stop adding jobs to a group once its hashes took this long. */
#define AUTH_GROUP_HASH_NS 2000000ull

/*
 * Where settled jobs go: settled() for each job as soon as its status is final (the job is
 * valid only during the call), flush() before every argon2 operation and at the end of a
 * batch, so the caller can hand on what it collected at the moments it would otherwise wait.
 */
struct s2_auth_sink {
    void (*settled)(void *arg, const struct s2_job *job);
    void (*flush)(void *arg); /* may be NULL */
    void *arg;
};

/* The password functions auth.c calls; tests replace them to count and slow them. */
struct s2_auth_hasher {
    int (*hash)(enum pwhash_cost cost, const char *pass, size_t len, char *out);
    bool (*verify)(const char *stored, const char *pass, size_t len);
};

/* batch_max bounds n in s2_auth_batch. cache may be NULL. */
struct s2_auth *s2_auth_new(const struct backend_ops *ops, const struct backend_url *url,
                            struct backend_health *health, struct authcache *cache,
                            enum pwhash_cost cost, size_t batch_max);
void s2_auth_free(struct s2_auth *a);

/* Sets jobs[i].status for every job; n <= batch_max. */
void s2_auth_batch(struct s2_auth *a, struct s2_job *jobs, size_t n);
/* The same, handing each job to sink as soon as it is settled (sink may be NULL). */
void s2_auth_run(struct s2_auth *a, struct s2_job *jobs, size_t n, const struct s2_auth_sink *sink);

/*
 * How many jobs a single-threaded caller (processes mode) should take at a time, so that an
 * answer waits for at most about one group's hashing: batch_max at cost min, else 1.
 */
size_t s2_auth_take_max(const struct s2_auth *a);

/*
 * Marks S2_JOB_CHEAP the VERIFYs among jobs that the cache holds an entry for (they should need
 * a database round trip only), so the queue serves them ahead of work that may need argon2.
 * cache may be NULL (nothing is marked). For the thread that reads the jobs.
 */
void s2_auth_mark_cheap(struct authcache *cache, struct s2_job *jobs, size_t n);

/* Replaces the password functions (NULL restores libsodium's); for tests. */
void s2_auth_set_hasher(struct s2_auth *a, const struct s2_auth_hasher *h);
/*
 * Replaces AUTH_GROUP_HASH_NS; for tests whose groups must not depend on how fast the machine
 * hashes at that moment.
 */
void s2_auth_set_group_hash(struct s2_auth *a, uint64_t ns);

/* Idle probe: connects now if not connected, or anew if outdated (see backend.h); true if
 * connected. */
bool s2_auth_connect(struct s2_auth *a);
bool s2_auth_connected(const struct s2_auth *a);

void s2_auth_get_stats(const struct s2_auth *a, struct s2_auth_stats *out);
/* The underlying session (connect and round-trip counters), for tests. */
const struct backend_session *s2_auth_session(const struct s2_auth *a);

#endif /* AUTH_H */
