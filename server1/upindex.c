/*
 * upindex.c - see upindex.h. An entry: LEB128s shared and suffix length (bytes.h), the
 * suffix, a flags byte (UPVAL_WHITEOUT; bit 7: a version follows), LEB128s seg, owner, rec_off
 * and size, then the version (8 bytes, little-endian) if it is not 0. A block's first entry
 * shares nothing.
 */
#include "upindex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "xalloc.h"

#define HAS_VERSION 0x80u
/* one entry, encoded, at most: 2 LEB128s of a key length, the key, flags, 4 LEB128s, version */
#define ENTRY_MAX (6 * LEB128_MAX + UPINDEX_KEY_MAX + 1 + 8)
/* what a change builds before it may split: the block and two entries */
#define SCRATCH_BLOCK (UPINDEX_BLOCK_BYTES + 2 * ENTRY_MAX)
/*
 * Every block's data is allocated at UPINDEX_BLOCK_BYTES (or, holding one entry longer than
 * that, at its length): a change never moves it, and a freed one is taken again whole. Blocks
 * sized to their entries, grown an entry at a time, left a third of the index's memory in
 * holes between them after a replay of 1 M uploads in no order (RSS 55 bytes per upload for 37
 * in blocks); full-size ones cost their emptiness instead, which a split halves and inserts
 * fill again (about 70% full in no order, full in order).
 */
static uint32_t cap_of(uint32_t len)
{
    return len == 0 ? 0 : len <= UPINDEX_BLOCK_BYTES ? UPINDEX_BLOCK_BYTES : len;
}

struct upblock {
    btree_pfx lowp;    /* the lower bound's first 16 bytes (key_prefix) */
    struct upblock *prev, *next;
    uint8_t *data;     /* len bytes of entries (NULL when empty) */
    uint8_t *low;      /* the lower bound, low_len bytes (NULL for "", the first block's) */
    uint32_t len;
    uint32_t cap;      /* bytes allocated at data (cap_of(len)) */
    uint16_t n;        /* entries */
    uint16_t low_len;
};

/* a search key for the tree of blocks */
struct skey {
    const uint8_t *k;
    size_t len;
    btree_pfx p; /* key_prefix */
};

/*
 * A key's first 16 bytes as a number, zero-padded: of two keys, the one with the lower number
 * is the earlier (equal numbers say nothing). The tree of blocks compares these in its inner
 * nodes, and a block keeps its lower bound's, so that a lookup reads few blocks' bounds.
 */
static btree_pfx key_prefix(const uint8_t *k, size_t len)
{
    btree_pfx v = 0;

    for (size_t i = 0; i < sizeof(v); i++)
        v = v << 8 | (i < len ? k[i] : 0);
    return v;
}

/* One entry as decoded. */
struct dec {
    uint32_t shared, slen;
    const uint8_t *suffix;
    struct upval v;
    uint32_t end; /* where the next entry starts */
};

static int keycmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n > 0 ? memcmp(a, b, n) : 0;

    return c != 0 ? c : (an > bn) - (an < bn);
}

static int block_cmp(const void *a, const void *b, void *arg)
{
    const struct upblock *x = a, *y = b;

    (void)arg;
    return keycmp(x->low, x->low_len, y->low, y->low_len);
}

static btree_pfx block_prefix(const void *item, void *arg)
{
    (void)arg;
    return ((const struct upblock *)item)->lowp;
}

/* never 0: a seek stops at the first block whose lower bound is after the key */
static int block_kcmp(const void *key, const void *item, void *arg)
{
    const struct skey *k = key;
    const struct upblock *b = item;

    (void)arg;
    if (k->p != b->lowp)
        return k->p < b->lowp ? -1 : 1;
    return keycmp(k->k, k->len, b->low, b->low_len) < 0 ? -1 : 1;
}

static size_t encode(uint8_t *p, uint32_t shared, const uint8_t *suffix, uint32_t slen,
                     const struct upval *v)
{
    size_t n = leb128_put(p, shared);

    n += leb128_put(p + n, slen);
    memcpy(p + n, suffix, slen);
    n += slen;
    p[n++] = (uint8_t)(v->flags | (v->version != 0 ? HAS_VERSION : 0));
    n += leb128_put(p + n, v->seg);
    n += leb128_put(p + n, v->owner);
    n += leb128_put(p + n, v->rec_off);
    n += leb128_put(p + n, v->size);
    if (v->version != 0) {
        bytes_put_le64(p + n, v->version);
        n += 8;
    }
    return n;
}

/* A LEB128 at *off of the len bytes at p into *v, *off past it: false if there is none. */
static bool take(const uint8_t *p, uint32_t len, uint32_t *off, uint64_t *v)
{
    size_t n = *off < len ? leb128_get(p + *off, len - *off, v) : 0;

    *off += (uint32_t)n;
    return n > 0;
}

/* The entry at off of the len bytes at p: false if it is not a whole one (upindex_check). */
static bool decode(const uint8_t *p, uint32_t len, uint32_t off, struct dec *d)
{
    uint64_t shared, slen, seg, owner;
    uint8_t flags;

    if (!take(p, len, &off, &shared) || !take(p, len, &off, &slen) || slen >= len - off)
        return false;
    d->suffix = p + off;
    off += (uint32_t)slen;
    flags = p[off++];
    if (!take(p, len, &off, &seg) || !take(p, len, &off, &owner) ||
        !take(p, len, &off, &d->v.rec_off) || !take(p, len, &off, &d->v.size) ||
        shared > UPINDEX_KEY_MAX || slen > UPINDEX_KEY_MAX || seg > UINT32_MAX ||
        owner > UINT32_MAX || ((flags & HAS_VERSION) && len - off < 8))
        return false;
    d->shared = (uint32_t)shared;
    d->slen = (uint32_t)slen;
    d->v.seg = (uint32_t)seg;
    d->v.owner = (uint32_t)owner;
    d->v.flags = flags & UPVAL_FLAGS;
    d->v.version = 0;
    if (flags & HAS_VERSION) {
        d->v.version = bytes_get_le64(p + off);
        off += 8;
    }
    d->end = off;
    return true;
}

static uint32_t common(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t n = an < bn ? an : bn, i = 0;

    while (i < n && a[i] == b[i])
        i++;
    return (uint32_t)i;
}

/* The block that holds key's place: the last one whose lower bound is not after key. */
static struct upblock *find_block(const struct upindex *x, const uint8_t *key, size_t klen)
{
    struct skey k = {key, klen, key_prefix(key, klen)};
    struct btree_iter it;
    struct upblock *after;

    btree_seek(&x->blocks, &k, &k.p, block_kcmp, &it);
    after = btree_next(&it);
    return after != NULL ? after->prev : x->last;
}

/* The key part of the entry at off (len bytes at p): where its value starts. */
static uint32_t key_at(const uint8_t *p, uint32_t len, uint32_t off, uint32_t *shared,
                       uint32_t *slen, const uint8_t **suffix)
{
    uint64_t a = 0, b = 0;

    take(p, len, &off, &a);
    take(p, len, &off, &b);
    *shared = (uint32_t)a;
    *slen = (uint32_t)b;
    *suffix = p + off;
    return off + (uint32_t)b;
}

/* Past the value that starts at off: its flags, 4 LEB128s, the version if it has one. */
static uint32_t skip_value(const uint8_t *p, uint32_t len, uint32_t off)
{
    uint8_t flags = p[off++];

    for (int i = 0; i < 4; i++) {
        while (off < len && (p[off] & 0x80))
            off++;
        off++;
    }
    return off + ((flags & HAS_VERSION) ? 8 : 0);
}

/*
 * Where key's place is in b: the offset of the first entry not before key (b->len if none),
 * that entry decoded in *d (if any), and in cur the key before it (*curlen bytes; undefined
 * for the block's first entry). Returns the comparison of that entry with key (0: found;
 * 1 also when there is none). It compares as front coding allows: with m the length key shares
 * with the last entry before it, an entry that shares more than m with that one is before key
 * too, one that shares less is after it, and only one that shares m is compared (from byte m);
 * the values of the entries passed over are skipped, not decoded.
 */
static int scan(const struct upblock *b, const uint8_t *key, size_t klen, uint8_t *cur,
                uint32_t *curlen, uint32_t *off, struct dec *d)
{
    uint32_t o = 0, m = 0;

    *curlen = 0;
    while (o < b->len) {
        const uint8_t *suffix;
        uint32_t shared, slen, vo = key_at(b->data, b->len, o, &shared, &slen, &suffix);
        int c = shared > m ? -1 : 1;

        if (shared == m) {
            uint32_t q = common(suffix, slen, key + m, klen - m);
            if (q == slen && m + q == klen)
                c = 0;
            else if (q == slen || (m + q < klen && suffix[q] < key[m + q]))
                c = -1, m += q;
        }
        if (c >= 0) {
            decode(b->data, b->len, o, d);
            *off = o;
            return c;
        }
        memcpy(cur + shared, suffix, slen);
        *curlen = shared + slen;
        o = skip_value(b->data, b->len, vo);
    }
    *off = o;
    return 1;
}

void upindex_init(struct upindex *x)
{
    memset(x, 0, sizeof(*x));
    btree_init(&x->blocks, block_cmp, block_prefix, NULL);
    x->first = xcalloc(1, sizeof(*x->first));
    x->last = x->first;
    btree_insert(&x->blocks, x->first);
    x->nblocks = 1;
    x->scratch = xmalloc(SCRATCH_BLOCK + 2 * UPINDEX_KEY_MAX);
    x->max = xmalloc(UPINDEX_KEY_MAX);
    x->max_ok = true; /* empty: anything goes after */
}

void upindex_release(struct upindex *x)
{
    struct upblock *b = x->first;

    while (b != NULL) {
        struct upblock *next = b->next;
        free(b->data);
        free(b->low);
        free(b);
        b = next;
    }
    btree_release(&x->blocks);
    free(x->scratch);
    free(x->max);
    memset(x, 0, sizeof(*x));
}

bool upindex_get(const struct upindex *x, const uint8_t *key, size_t klen, struct upval *v)
{
    const struct upblock *b = find_block(x, key, klen);
    uint8_t cur[UPINDEX_KEY_MAX];
    uint32_t curlen, off;
    struct dec d;

    if (scan(b, key, klen, cur, &curlen, &off, &d) != 0)
        return false;
    if (v != NULL)
        *v = d.v;
    return true;
}

/* Gives b room for len bytes. */
static void block_room(struct upindex *x, struct upblock *b, uint32_t len)
{
    uint32_t cap = cap_of(len);

    if (cap == b->cap)
        return;
    x->bytes = x->bytes - b->cap + cap;
    if (cap == 0) {
        free(b->data);
        b->data = NULL;
    } else {
        b->data = xrealloc(b->data, cap);
    }
    b->cap = cap;
}

/* Gives b the content c (len bytes, n entries), which fits in a block. */
static void block_set(struct upindex *x, struct upblock *b, const uint8_t *c, uint32_t len,
                      uint16_t n)
{
    block_room(x, b, len);
    if (len > 0)
        memcpy(b->data, c, len);
    b->len = len;
    b->n = n;
}

/* A new block after b, with content c (its first entry sharing nothing) and lower bound low. */
static void block_add(struct upindex *x, struct upblock *b, const uint8_t *c, uint32_t len,
                      uint16_t n, const uint8_t *low, uint32_t low_len)
{
    struct upblock *nb = xcalloc(1, sizeof(*nb));

    nb->low = xmalloc(low_len);
    memcpy(nb->low, low, low_len);
    nb->low_len = (uint16_t)low_len;
    nb->lowp = key_prefix(low, low_len);
    x->low_bytes += low_len;
    block_set(x, nb, c, len, n);
    nb->prev = b;
    nb->next = b->next;
    if (b->next != NULL)
        b->next->prev = nb;
    else
        x->last = nb;
    b->next = nb;
    btree_insert(&x->blocks, nb);
    x->nblocks++;
}

/*
 * Gives b the content c (len bytes, n entries), splitting it if it is too big: the entries
 * that end at or before cut stay in b (at least one goes each way), or with cut 0 half of the
 * bytes. c lies in x->scratch; the key buffer k (UPINDEX_KEY_MAX) is free to use.
 */
static void block_store(struct upindex *x, struct upblock *b, const uint8_t *c, uint32_t len,
                        uint16_t n, uint32_t cut, uint8_t *k)
{
    uint32_t o = 0, klen;
    uint16_t left = 0;
    struct dec d;
    uint8_t first[ENTRY_MAX];
    size_t flen;

    if (len <= UPINDEX_BLOCK_BYTES || n < 2) {
        block_set(x, b, c, len, n);
        return;
    }
    /* the entries before the cut stay; the first after it is written again in full */
    if (cut == 0)
        cut = len / 2;
    do { /* (k: the key before the next entry) */
        decode(c, len, o, &d);
        memcpy(k + d.shared, d.suffix, d.slen);
        left++;
        o = d.end;
    } while (o < cut && left < n - 1);
    decode(c, len, o, &d);
    memcpy(k + d.shared, d.suffix, d.slen);
    klen = d.shared + d.slen;
    flen = encode(first, 0, k, klen, &d.v);
    /* (the new block's bytes: its first entry in full, then the rest as they are) */
    {
        uint8_t *rest = xmalloc(flen + (len - d.end));
        memcpy(rest, first, flen);
        memcpy(rest + flen, c + d.end, len - d.end);
        block_set(x, b, c, o, left);
        block_add(x, b, rest, (uint32_t)(flen + (len - d.end)), (uint16_t)(n - left), k, klen);
        free(rest);
    }
}

/* Appends key (after every key) to the last block, or a new one after it. */
static void append_last(struct upindex *x, const uint8_t *key, size_t klen,
                        const struct upval *v)
{
    struct upblock *b = x->last;
    uint32_t shared = b->n > 0 ? common(x->max, x->max_len, key, klen) : 0;
    uint8_t e[ENTRY_MAX];
    size_t n = encode(e, shared, key + shared, (uint32_t)(klen - shared), v);

    if (b->n > 0 && b->len + n > UPINDEX_BLOCK_BYTES) {
        n = encode(e, 0, key, (uint32_t)klen, v);
        block_add(x, b, e, (uint32_t)n, 1, key, (uint32_t)klen);
    } else {
        block_room(x, b, b->len + (uint32_t)n);
        memcpy(b->data + b->len, e, n);
        b->len += (uint32_t)n;
        b->n++;
    }
    memcpy(x->max, key, klen);
    x->max_len = (uint32_t)klen;
    x->count++;
}

/* x->max again: the last key of the last block (which is empty only if it is the first). */
static void max_refresh(struct upindex *x)
{
    uint32_t o = 0;
    struct dec d;

    x->max_len = 0;
    while (o < x->last->len) {
        decode(x->last->data, x->last->len, o, &d);
        memcpy(x->max + d.shared, d.suffix, d.slen);
        x->max_len = d.shared + d.slen;
        o = d.end;
    }
    x->max_ok = true;
}

bool upindex_put(struct upindex *x, const uint8_t *key, size_t klen, const struct upval *v,
                 struct upval *old)
{
    struct upblock *b;
    uint8_t *c = x->scratch, *cur = x->scratch + SCRATCH_BLOCK, *ik = cur + UPINDEX_KEY_MAX;
    uint32_t curlen, off, len, ilen, shared, new_off, cut;
    struct dec d;
    int found;

    if (!x->max_ok)
        max_refresh(x);
    if (x->count == 0 || keycmp(key, klen, x->max, x->max_len) > 0) {
        append_last(x, key, klen, v);
        return false;
    }
    b = find_block(x, key, klen);
    found = scan(b, key, klen, cur, &curlen, &off, &d);
    memcpy(c, b->data, off);
    len = off;
    shared = off > 0 ? common(cur, curlen, key, klen) : 0;
    new_off = len;
    if (found == 0) { /* the same key: its suffix and what follows stay */
        if (old != NULL)
            *old = d.v;
        len += (uint32_t)encode(c + len, d.shared, d.suffix, d.slen, v);
        memcpy(c + len, b->data + d.end, b->len - d.end);
        len += b->len - d.end;
        block_set(x, b, c, len, b->n);
        return true;
    }
    len += (uint32_t)encode(c + len, shared, key + shared, (uint32_t)(klen - shared), v);
    /*
     * Where b splits if it must. Keys that come in order in many places at once (uploads into
     * many directories: each new one after the last of its directory, before the next
     * directory's first) would leave, split in half, the half before them empty for good. So
     * a key after all of b's starts the new block, and a key that shares more with the one
     * before it than with the one after (the end of a run) ends the old one if that keeps
     * half a block or more: the run's next keys come after it, into the kept part, which
     * fills. (Keys in no order then fill blocks a little less: 37 bytes an entry in
     * test_upindex against 34 with halves; uploads into 1000 directories at once, 34 against
     * 57.)
     */
    cut = off == b->len ? new_off : 0;
    if (off < b->len) { /* the entry after it now follows key */
        uint32_t before = shared;
        memcpy(ik, cur, d.shared);
        memcpy(ik + d.shared, d.suffix, d.slen);
        ilen = d.shared + d.slen;
        shared = common(key, klen, ik, ilen);
        if (off > 0 && before > shared && len >= UPINDEX_BLOCK_BYTES / 2)
            cut = len;
        len += (uint32_t)encode(c + len, shared, ik + shared, ilen - shared, &d.v);
        memcpy(c + len, b->data + d.end, b->len - d.end);
        len += b->len - d.end;
    }
    x->count++; /* (not after every key: x->max stays) */
    block_store(x, b, c, len, (uint16_t)(b->n + 1), cut, ik);
    return false;
}

bool upindex_del(struct upindex *x, const uint8_t *key, size_t klen, struct upval *old)
{
    struct upblock *b = find_block(x, key, klen);
    uint8_t *c = x->scratch, *cur = x->scratch + SCRATCH_BLOCK, *ik = cur + UPINDEX_KEY_MAX;
    uint32_t curlen, off, len;
    struct dec d, nd;

    if (scan(b, key, klen, cur, &curlen, &off, &d) != 0)
        return false;
    if (old != NULL)
        *old = d.v;
    memcpy(c, b->data, off);
    len = off;
    if (d.end < b->len) { /* the entry after it now follows the one before */
        uint32_t ilen, shared;
        decode(b->data, b->len, d.end, &nd);
        memcpy(ik, key, nd.shared); /* (it shared that much with key) */
        memcpy(ik + nd.shared, nd.suffix, nd.slen);
        ilen = nd.shared + nd.slen;
        shared = off > 0 ? common(cur, curlen, ik, ilen) : 0;
        len += (uint32_t)encode(c + len, shared, ik + shared, ilen - shared, &nd.v);
        memcpy(c + len, b->data + nd.end, b->len - nd.end);
        len += b->len - nd.end;
    } else if (b == x->last) {
        x->max_ok = false; /* the greatest key is gone: found again by the next put */
    }
    x->count--;
    if (len == 0 && b != x->first) {
        b->prev->next = b->next;
        if (b->next != NULL)
            b->next->prev = b->prev;
        else
            x->last = b->prev;
        btree_remove(&x->blocks, b);
        x->bytes -= b->cap;
        x->low_bytes -= b->low_len;
        x->nblocks--;
        free(b->data);
        free(b->low);
        free(b);
        return true;
    }
    block_set(x, b, c, len, (uint16_t)(b->n - 1));
    return true;
}

void upindex_seek(const struct upindex *x, const uint8_t *key, size_t klen,
                  struct upindex_iter *it)
{
    const struct upblock *b;
    uint32_t off = 0;
    struct dec d;

    it->klen = 0;
    if (klen == 0) { /* the first entry of all (a block's first shares nothing) */
        b = x->first;
    } else {
        b = find_block(x, key, klen);
        scan(b, key, klen, it->key, &it->klen, &off, &d);
    }
    it->b = b;
    it->off = off;
}

bool upindex_next(struct upindex_iter *it, struct upval *v)
{
    struct dec d;

    while (it->b != NULL && it->off >= it->b->len) {
        it->b = it->b->next;
        it->off = 0;
    }
    if (it->b == NULL)
        return false;
    decode(it->b->data, it->b->len, it->off, &d);
    memcpy(it->key + d.shared, d.suffix, d.slen);
    it->klen = d.shared + d.slen;
    it->off = d.end;
    if (v != NULL)
        *v = d.v;
    return true;
}

size_t upindex_bytes(const struct upindex *x)
{
    /* per block: its struct, its data (x->bytes: what is allocated) and lower bound, each
     * with malloc's 8-byte header and rounding to 16 (8 on average) */
    return x->bytes + x->low_bytes + x->nblocks * (sizeof(struct upblock) + 3 * 16) +
           btree_bytes(&x->blocks);
}

int upindex_check(const struct upindex *x, char *err)
{
    uint8_t prev[UPINDEX_KEY_MAX], key[UPINDEX_KEY_MAX];
    uint32_t plen = 0;
    size_t count = 0, blocks = 0, bytes = 0, lows = 0;
    bool any = false;
    const struct upblock *last = NULL;

    for (const struct upblock *b = x->first; b != NULL; last = b, b = b->next) {
        uint32_t o = 0, klen = 0;
        unsigned n = 0;

        blocks++;
        bytes += b->cap;
        lows += b->low_len;
        if (b->cap != cap_of(b->len))
            return snprintf(err, 128, "block %zu: %u bytes allocated for %u", blocks, b->cap,
                            b->len), -1;
        if (b->prev != last)
            return snprintf(err, 128, "block %zu: bad prev link", blocks), -1;
        if (b != x->first && (b->low_len == 0 || (any && keycmp(b->low, b->low_len, prev,
                                                                plen) <= 0)))
            return snprintf(err, 128, "block %zu: lower bound not after the keys before",
                            blocks), -1;
        if (b != x->first && b->n == 0)
            return snprintf(err, 128, "block %zu: empty", blocks), -1;
        while (o < b->len) {
            struct dec d;
            if (!decode(b->data, b->len, o, &d) || (n == 0 && d.shared != 0) || d.shared > klen ||
                d.shared + d.slen > UPINDEX_KEY_MAX || d.shared + d.slen == 0)
                return snprintf(err, 128, "block %zu entry %u: bad encoding", blocks, n), -1;
            memcpy(key + d.shared, d.suffix, d.slen);
            klen = d.shared + d.slen;
            if (keycmp(key, klen, b->low, b->low_len) < 0)
                return snprintf(err, 128, "block %zu entry %u: before the lower bound", blocks,
                                n), -1;
            if (any && keycmp(key, klen, prev, plen) <= 0)
                return snprintf(err, 128, "block %zu entry %u: out of order", blocks, n), -1;
            memcpy(prev, key, klen);
            plen = klen;
            any = true;
            n++;
            o = d.end;
        }
        if (n != b->n)
            return snprintf(err, 128, "block %zu: %u entries, counted %u", blocks, n, b->n), -1;
        count += n;
    }
    if (last != x->last)
        return snprintf(err, 128, "the last block is not the last one linked"), -1;
    if (count != x->count || blocks != x->nblocks || bytes != x->bytes || lows != x->low_bytes)
        return snprintf(err, 128, "counts: %zu entries (%zu said), %zu blocks (%zu), %zu bytes "
                        "(%zu), %zu of bounds (%zu)", count, x->count, blocks, x->nblocks, bytes,
                        x->bytes, lows, x->low_bytes), -1;
    if (x->blocks.count != blocks)
        return snprintf(err, 128, "the tree has %zu blocks of %zu", x->blocks.count, blocks), -1;
    if (x->max_ok && (plen != x->max_len || memcmp(prev, x->max, plen) != 0))
        return snprintf(err, 128, "the greatest key is not the one kept"), -1;
    return 0;
}
