/*
 * record.h - what server2 stores under an account's name: the password hash, marked with the
 * creation token of the CREATE that made it ("c:" + 32 hex digits + ":" + argon2id string), so
 * that a CREATE sent again after a lost answer (same token, possibly through another server2)
 * is recognised as the same creation, not a taken name. A deleted account's record is the
 * tombstone; a record without a token (one a password change wrote) is a bare hash.
 * Pure functions, thread-safe.
 */
#ifndef RECORD_H
#define RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"

#define RECORD_TOKEN_HEX (2 * FRAME_TOKEN_SIZE)  /* 32 */
#define RECORD_MARK_LEN (2 + RECORD_TOKEN_HEX + 1) /* "c:" TOKEN ":" = 35 */

/*
 * What a deleted account's record becomes: the name stays taken (a CREATE gets EXISTS, so
 * nobody can take over its uploads), and a LOOKUP that finds it means "no such user". It can
 * never be an argon2id string, and it carries no creation token.
 */
#define RECORD_TOMBSTONE "!deleted"

/*
 * Writes the record of a creation (token, hash) into out (cap bytes). Returns its length, or
 * -1 if it does not fit.
 */
int record_make(const uint8_t *token, const char *hash, char *out, size_t cap);

/* The password hash in record rec (rec itself when it carries no creation token). */
const char *record_hash(const char *rec);

/* Whether records a[0..alen) and b[0..blen) were made by the same creation (the same token). */
bool record_same_creation(const char *a, size_t alen, const char *b, size_t blen);

#endif /* RECORD_H */
