/*
 * pwhash.h - password hashing for stored credentials: argon2id at a selectable cost, in the
 * standard string form of crypto_pwhash_str, and its verification (libargon2 at the smallest
 * cost, libsodium above: see pwhash.c). The strings it makes are all that is ever stored.
 * sodium_init() must have been called. Thread-safe; each call uses its own memory (up to
 * 64 MiB at "interactive", 256 MiB at "moderate").
 */
#ifndef PWHASH_H
#define PWHASH_H

#include <stdbool.h>
#include <stddef.h>

#define PWHASH_STR_MAX 128 /* crypto_pwhash_STRBYTES: the longest string with its NUL */

enum pwhash_cost {
    PWHASH_MIN = 0,         /* OPSLIMIT/MEMLIMIT_MIN: tests and benchmarks only (~30 us) */
    PWHASH_INTERACTIVE = 1, /* OPSLIMIT/MEMLIMIT_INTERACTIVE (~80 ms, 64 MiB) */
    PWHASH_MODERATE = 2,    /* OPSLIMIT/MEMLIMIT_MODERATE (~0.5 s, 256 MiB) */
};

/* "min|interactive|moderate" -> cost; -1 for anything else. */
int pwhash_cost_parse(const char *s, enum pwhash_cost *out);
const char *pwhash_cost_name(enum pwhash_cost cost);

/* Hashes pass[0..len) into out (PWHASH_STR_MAX bytes, NUL-terminated). 0, or -1 (no memory). */
int pwhash_hash(enum pwhash_cost cost, const char *pass, size_t len, char *out);

/* True if pass[0..len) matches the stored string (false also for a malformed string). */
bool pwhash_verify(const char *stored, const char *pass, size_t len);

/*
 * A hash at `cost` of a random password nobody knows, made on the first call for that cost
 * and kept for the life of the process (call it once at start, before any fork, so that every
 * worker shares it). A VERIFY for a user that does not exist is checked against it, so that it
 * costs what a wrong password for an existing user costs and the answer time does not tell
 * which usernames exist. NULL only if argon2 ran out of memory (then the caller retries on a
 * later call).
 */
const char *pwhash_dummy(enum pwhash_cost cost);

#endif /* PWHASH_H */
