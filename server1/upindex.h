/*
 * upindex.h - an ordered map for the upload store's index (store.h): from a key (a byte
 * string, compared bytewise, the shorter first on a tie) to where that name's newest record
 * lies, in a few tens of bytes per entry, so that ten million uploads fit in a few hundred
 * megabytes.
 *
 * DESIGN: entries lie in blocks of at most UPINDEX_BLOCK_BYTES, in order, front-coded as the
 * pack's index is (pack.h): each entry is the length of the prefix it shares with the one
 * before, the rest of its key, then its value with variable-length integers. Every block is
 * allocated at UPINDEX_BLOCK_BYTES, so that changes never move one and a freed one is taken
 * again whole: the index costs its blocks' emptiness (none when keys come in order, as a
 * start from a checkpoint adds them; about 30% in no order) and a few tens of bytes a block. Blocks are linked in order and kept in a B+tree (btree.h)
 * by their lower bound (a key at or before their first: a block holds the keys from its lower
 * bound to the next block's): a lookup descends the tree to one block and decodes it from its
 * start. A change re-encodes the entry and the one after it and moves the rest of the block; a
 * block that outgrows UPINDEX_BLOCK_BYTES splits in half by bytes, except when the new key
 * comes after all of the block's: then the full one is kept and a new one started (keys added
 * in order fill their blocks, whether in one place, as a start loading a checkpoint adds them,
 * or in many, as uploads come into many directories at once). A block that empties is freed (but the
 * first). Names are the store's business: upindex never looks inside a key.
 *
 * Not thread-safe: the store's lock guards it (lookups and walks under the read lock, changes
 * under the write lock). A walk (struct upindex_iter) is valid until the next change.
 */
#ifndef S1_UPINDEX_H
#define S1_UPINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "btree.h"

#define UPINDEX_KEY_MAX 2304     /* bytes of a key, at most */
#define UPINDEX_BLOCK_BYTES 1024 /* a block splits once it would hold more */

#define UPVAL_WHITEOUT 1u        /* a deletion */
#define UPVAL_FLAGS 1u           /* every flag there is */

/* Where a name's newest record lies (what store.c derives the rest from). */
struct upval {
    uint32_t seg;      /* the segment's id */
    uint32_t owner;    /* the owner's number (store.c's table; 0: none) */
    uint64_t rec_off;  /* where the record starts in the segment */
    uint64_t size;     /* bytes of data */
    uint64_t version;  /* 0 if unknown */
    uint8_t flags;     /* UPVAL_* */
};

struct upblock;

struct upindex {
    struct btree blocks;     /* by lower bound */
    struct upblock *first;   /* the first block, lower bound "" (never freed until release) */
    struct upblock *last;
    size_t count;            /* entries */
    size_t nblocks;
    size_t bytes;            /* bytes allocated for the blocks' entries */
    size_t low_bytes;        /* bytes of the blocks' lower bounds */
    uint8_t *scratch;        /* a block being rebuilt, keys (changes only) */
    /* the greatest key (valid if max_ok, else found again by the next put): a key after it
     * is appended to the last block without a search */
    bool max_ok;
    uint32_t max_len;
    uint8_t *max;
};

/* A walk in key order: upindex_seek, then upindex_next until it returns false. */
struct upindex_iter {
    const struct upblock *b;  /* the block of the next entry, NULL at the end */
    uint32_t off;             /* its offset in b */
    uint32_t klen;            /* the last entry's key, as upindex_next left it */
    uint8_t key[UPINDEX_KEY_MAX];
};

void upindex_init(struct upindex *x);
/* Frees everything (upindex_init makes x usable again). */
void upindex_release(struct upindex *x);
/* Whether key has an entry (its value in *v, if v is not NULL). */
bool upindex_get(const struct upindex *x, const uint8_t *key, size_t klen, struct upval *v);
/*
 * Sets key's value to *v. Returns true if it had one (then in *old, if old is not NULL), false
 * if the entry is new. klen must be 1..UPINDEX_KEY_MAX; v->flags only UPVAL_FLAGS.
 */
bool upindex_put(struct upindex *x, const uint8_t *key, size_t klen, const struct upval *v,
                 struct upval *old);
/* Removes key's entry: true if it had one (its value in *old, if old is not NULL). */
bool upindex_del(struct upindex *x, const uint8_t *key, size_t klen, struct upval *old);
/* it before the first entry whose key is not before key (klen 0: the first entry of all). */
void upindex_seek(const struct upindex *x, const uint8_t *key, size_t klen,
                  struct upindex_iter *it);
/* The next entry: false at the end, else its key in it->key (it->klen bytes) and value in *v. */
bool upindex_next(struct upindex_iter *it, struct upval *v);
/* Bytes of memory the index holds (blocks, their tree, what malloc adds: estimated). */
size_t upindex_bytes(const struct upindex *x);
/*
 * Checks every invariant (each block decodes, keys in order within and across blocks, each
 * at or after its block's lower bound, the counts): 0, or -1 with the first problem in err
 * (128 bytes). For tests.
 */
int upindex_check(const struct upindex *x, char *err);

#endif /* S1_UPINDEX_H */
