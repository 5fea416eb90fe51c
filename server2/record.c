/*
 * record.c - see record.h.
 */
#include "record.h"

#include <string.h>

static bool has_mark(const char *rec, size_t len)
{
    if (len < RECORD_MARK_LEN || rec[0] != 'c' || rec[1] != ':' || rec[RECORD_MARK_LEN - 1] != ':')
        return false;
    for (size_t i = 2; i < RECORD_MARK_LEN - 1; i++) {
        char c = rec[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

int record_make(const uint8_t *token, const char *hash, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t hlen = strlen(hash);

    if (cap < RECORD_MARK_LEN + hlen + 1)
        return -1;
    out[0] = 'c';
    out[1] = ':';
    for (size_t i = 0; i < FRAME_TOKEN_SIZE; i++) {
        out[2 + 2 * i] = hex[token[i] >> 4];
        out[3 + 2 * i] = hex[token[i] & 15];
    }
    out[RECORD_MARK_LEN - 1] = ':';
    memcpy(out + RECORD_MARK_LEN, hash, hlen + 1);
    return (int)(RECORD_MARK_LEN + hlen);
}

const char *record_hash(const char *rec)
{
    return has_mark(rec, strnlen(rec, RECORD_MARK_LEN)) ? rec + RECORD_MARK_LEN : rec;
}

bool record_same_creation(const char *a, size_t alen, const char *b, size_t blen)
{
    return has_mark(a, alen) && has_mark(b, blen) && memcmp(a, b, RECORD_MARK_LEN) == 0;
}

bool record_deleted(const char *rec)
{
    return strcmp(rec, RECORD_TOMBSTONE) == 0;
}

bool record_locked(const char *rec)
{
    return strncmp(rec, RECORD_LOCK_MARK, RECORD_LOCK_MARK_LEN) == 0;
}

int record_lock(const char *rec, char *out, size_t cap)
{
    size_t len = strlen(rec);

    if (record_locked(rec) || record_deleted(rec) ||
        cap < RECORD_LOCK_MARK_LEN + len + 1)
        return -1;
    memcpy(out, RECORD_LOCK_MARK, RECORD_LOCK_MARK_LEN);
    memcpy(out + RECORD_LOCK_MARK_LEN, rec, len + 1);
    return (int)(RECORD_LOCK_MARK_LEN + len);
}

const char *record_unlocked(const char *rec)
{
    return record_locked(rec) ? rec + RECORD_LOCK_MARK_LEN : rec;
}
