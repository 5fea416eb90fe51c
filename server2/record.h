/*
 * record.h - what server2 stores under an account's name: the password hash, marked with the
 * creation token of the CREATE that made it ("c:" + 32 hex digits + ":" + argon2id string), so
 * that a CREATE sent again after a lost answer (same token, possibly through another server2)
 * is recognised as the same creation, not a taken name. A deleted account's record is the
 * tombstone; a record without a token (one a password change wrote) is a bare hash. A locked
 * account's record (server2 admin lock) is RECORD_LOCK_MARK followed by the record it had, so
 * unlocking gives back exactly that record, and records written before locks existed read as
 * they always did (none of them can begin with '!' but the tombstone).
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
 * What a locked account's record begins with. Like the tombstone, it can never be the start of
 * an argon2id string, so no password verifies against a locked record even where a caller
 * forgot to ask record_locked; auth.c treats a locked account as no user at all.
 */
#define RECORD_LOCK_MARK "!locked:"
#define RECORD_LOCK_MARK_LEN (sizeof(RECORD_LOCK_MARK) - 1)

/*
 * Writes the record of a creation (token, hash) into out (cap bytes). Returns its length, or
 * -1 if it does not fit.
 */
int record_make(const uint8_t *token, const char *hash, char *out, size_t cap);

/* The password hash in record rec (rec itself when it carries no creation token). */
const char *record_hash(const char *rec);

/* Whether records a[0..alen) and b[0..blen) were made by the same creation (the same token). */
bool record_same_creation(const char *a, size_t alen, const char *b, size_t blen);

/* Whether rec is a locked account's record. */
bool record_locked(const char *rec);

/* rec is a deleted account's tombstone (RECORD_TOMBSTONE). */
bool record_deleted(const char *rec);

/*
 * Writes rec locked (RECORD_LOCK_MARK + rec) into out (cap bytes). Returns its length, or -1 if
 * it does not fit or rec is already locked or a tombstone.
 */
int record_lock(const char *rec, char *out, size_t cap);

/* The record a locked record rec holds (rec itself if it is not locked). */
const char *record_unlocked(const char *rec);

#endif /* RECORD_H */
