/*
 * auth.h - answers a batch of CREATE/VERIFY jobs: the credential logic of server2, independent
 * of how jobs arrive (worker thread or pre-forked process) and of the database (backend_ops).
 *
 * DESIGN
 * One s2_auth per worker (thread or process); it owns one backend session, so it must only be
 * used by one thread at a time. The auth cache, if any, is shared and thread-safe.
 * For a batch of n jobs:
 *  1. bad usernames/passwords get INVALID and never reach the database;
 *  2. a CREATE repeated for the same name within the batch is sent once; its repeats get EXISTS
 *     if the first was created or existed, else the first's failure status;
 *     VERIFYs of the same name share one lookup;
 *  3. each distinct CREATE is hashed (argon2id, CPU) before the write;
 *  4. ONE backend round trip runs every CREATE, then every LOOKUP; if the backend is down or
 *     the connection breaks, every job that needed it gets UNAVAILABLE;
 *  5. each VERIFY whose user exists is checked: an auth cache hit (same user+password verified
 *     earlier against exactly the hash the database returned now) skips argon2; otherwise
 *     crypto_pwhash_str_verify, and a success is cached.
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
};

/* batch_max bounds n in s2_auth_batch. cache may be NULL. */
struct s2_auth *s2_auth_new(const struct backend_ops *ops, const struct backend_url *url,
                            struct backend_health *health, struct authcache *cache,
                            enum pwhash_cost cost, size_t batch_max);
void s2_auth_free(struct s2_auth *a);

/* Sets jobs[i].status for every job; n <= batch_max. */
void s2_auth_batch(struct s2_auth *a, struct s2_job *jobs, size_t n);

/* Idle probe: connects now if not connected (see backend.h); true if connected. */
bool s2_auth_connect(struct s2_auth *a);
bool s2_auth_connected(const struct s2_auth *a);

void s2_auth_get_stats(const struct s2_auth *a, struct s2_auth_stats *out);
/* The underlying session (connect and round-trip counters), for tests. */
const struct backend_session *s2_auth_session(const struct s2_auth *a);

#endif /* AUTH_H */
