/*
 * store.c - see store.h. Segments are named by a hex id ("0000002a.seg"), records are laid
 * out as struct rec_hdr + (REC_PUT_V: the version, 8 bytes) + name + owner + data,
 * little-endian (the host order on every target of this project), with no padding.
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>
#include <isa-l/crc.h>
#include <zlib.h>

#include "compat.h"
#include "log.h"
#include "upindex.h"
#include "xalloc.h"

#define REC_MAGIC 0x31523153u /* "S1R1" */
#define SEG_MAGIC 0x47533153u /* "S1SG" */
#define BATCH_MAGIC 0x54423153u /* "S1BT" */
#define REC_PUT 1   /* a PUT without a version (written before versions existed) */
#define REC_DELETE 2
#define REC_PUT_V 3 /* a PUT with its version */
#define COPY_CHUNK (256u << 10)
/*
 * Reads at start-up (record CRCs, the search for a whole batch after damage) go in smaller
 * pieces: a scratch buffer this size is a cheap allocation (no mmap), made per segment.
 */
#define SCAN_CHUNK (64u << 10)
#define COMPACT_STEP (8u << 20) /* bytes copied by one compaction step, about */
/*
 * A record's data up to this size is copied by compaction through memory: read into the step's
 * buffer and staged, so that a step writes its records with a pwritev per STORE_STAGE_RECORDS
 * (as a batch is written), not with a pread, two pwrites and a buffer each.
 */
#define COMPACT_INLINE COPY_CHUNK
#define SEG_SUFFIX ".seg"
#define SPARE_SUFFIX ".spare" /* a dead segment kept for reuse */

/*
 * The first bytes of every segment. The salt is drawn at random each time the file starts a
 * segment (new or reused), and every record carries it: records left in a reused file from its
 * previous life, or bytes an upload crafted to look like records, never pass for this one's.
 */
struct seg_hdr {
    uint32_t magic;
    uint32_t crc; /* CRC-32 of the rest */
    uint32_t id;  /* = the file name's */
    uint32_t salt;
    uint64_t reserved[2];
};
_Static_assert(sizeof(struct seg_hdr) == STORE_SEG_HDR_BYTES, "segment header size");

/*
 * Before every batch (the records one store_sync makes durable). A batch counts only if its
 * header and all its records are whole: a crash during a flush can leave any subset of the
 * batch's pages on disk, and none of it was acknowledged. The committer writes a batch only
 * after the previous one is durable, so a whole batch after a broken one means damage.
 */
struct batch_hdr {
    uint32_t magic;
    uint32_t crc;   /* CRC-32 of the rest */
    uint32_t salt;  /* the segment's */
    uint32_t nrec;  /* records in the batch */
    uint64_t len;   /* bytes of records after this header */
    uint64_t reserved;
};
_Static_assert(sizeof(struct batch_hdr) == STORE_BATCH_HDR_BYTES, "batch header size");

struct rec_hdr {
    uint32_t magic;
    uint32_t crc;      /* CRC-32 of the record from data_len to the end of the data */
    uint64_t data_len;
    uint16_t name_len;
    uint8_t owner_len;
    uint8_t op;
    uint32_t salt;     /* the segment's */
};
_Static_assert(sizeof(struct rec_hdr) == STORE_REC_HDR_BYTES, "record header size");
#define CRC_FROM offsetof(struct rec_hdr, data_len)

/* A record's header with its version, as staged (the two are written as one piece). */
struct rec_hdr_v {
    struct rec_hdr h;
    uint64_t version;
};
_Static_assert(sizeof(struct rec_hdr_v) == STORE_REC_HDR_BYTES + 8, "no padding");

struct store_segment {
    uint32_t id;
    uint32_t salt;
    _Atomic unsigned readers; /* pins held by responses being sent from it */
    struct store_segment *next_zombie;
    int fd;
    /* end of the last good record: where the next one goes. Written by the one writer thread
     * without the lock (seg_bytes_set), read by store_stats from any thread */
    uint64_t bytes;
    uint64_t live;  /* bytes of records that are some name's newest version */
};

/* A relaxed atomic store: /metrics may read a segment's size while the writer moves it. */
static inline void seg_bytes_set(struct store_segment *g, uint64_t v)
{
    __atomic_store_n(&g->bytes, v, __ATOMIC_RELAXED);
}

/*
 * One owner: the live upload bytes it has, and its number in the index (upindex.h's values
 * name owners by number). Owners stay once seen: one per account at most. Number 0 is "",
 * the owner of uploads made without one (and of no deletion).
 */
struct store_owner {
    struct store_owner *next;
    uint64_t hash;
    uint64_t bytes;
    uint32_t id;
    uint8_t len;
    char name[STORE_OWNER_MAX + 1];
};

static struct store_owner **owner_slot(struct store *s, const char *name, uint64_t h)
{
    struct store_owner **pp = &s->owners[h & (s->nowner_buckets - 1)];
    for (; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->hash == h && strcmp((*pp)->name, name) == 0)
            break;
    }
    return pp;
}

static void owners_grow(struct store *s)
{
    size_t n = s->nowner_buckets * 2;
    struct store_owner **b = xcalloc(n, sizeof(*b));

    for (size_t i = 0; i < s->nowner_buckets; i++) {
        struct store_owner *o = s->owners[i];
        while (o != NULL) {
            struct store_owner *next = o->next;
            o->next = b[o->hash & (n - 1)];
            b[o->hash & (n - 1)] = o;
            o = next;
        }
    }
    free(s->owners);
    s->owners = b;
    s->nowner_buckets = n;
}

/* The owner of this name, added if new; write lock held (or no reader yet). */
static struct store_owner *owner_get(struct store *s, const char *owner)
{
    size_t len = strnlen(owner, STORE_OWNER_MAX);
    uint64_t h = fnv1a64(owner, len);
    struct store_owner **pp = owner_slot(s, owner, h);
    struct store_owner *o = *pp;

    if (o != NULL)
        return o;
    if (s->nowners >= s->nowner_buckets) {
        owners_grow(s);
        pp = owner_slot(s, owner, h);
    }
    o = xcalloc(1, sizeof(*o));
    o->hash = h;
    o->len = (uint8_t)len;
    memcpy(o->name, owner, len);
    o->id = (uint32_t)s->nowners;
    *pp = o;
    s->owner_ids = xrealloc(s->owner_ids, (s->nowners + 1) * sizeof(*s->owner_ids));
    s->owner_ids[s->nowners++] = o;
    return o;
}

/*
 * ---- the index: names as keys (upindex.h) ----
 *
 * A name's key is its directory, a 0, then its own name (after the last '/'), with each '/' of
 * the directory written as 1: bytewise, the keys order the files of a directory together,
 * before the entries of its subdirectories, each subdirectory's together, and "d/y" with all
 * beneath "d/y/" before "d/y!", so that a listing reads only its own directory's (store_list).
 * A root name's key starts with the 0. That holds for names without bytes below 3 that do not
 * start with '/': the server takes no other (files_name_valid refuses control characters and
 * such paths), but a log may hold one. Its key is 2 and the name itself: unique, in the
 * order of no directory, so never listed (a listing shows only valid names), still served
 * by name.
 */
#define KEY_DIR_END 0 /* between a name's directory and its own name */
#define KEY_SLASH 1   /* a '/' of the directory */
#define KEY_RAW 2     /* a name as it is follows */
#define KEY_LIMIT 3   /* (every byte of a valid name is at least this) */
/* a name's key is at most one byte longer than the name; an order key adds an owner and a 0 */
_Static_assert(STORE_NAME_MAX + 1 + STORE_OWNER_MAX + 1 <= UPINDEX_KEY_MAX, "order key size");

static bool name_plain(const char *name, size_t len)
{
    if (len > 0 && name[0] == '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)name[i] < KEY_LIMIT)
            return false;
    }
    return true;
}

/* name's key into k (UPINDEX_KEY_MAX): its length. */
static size_t name_key(const char *name, size_t len, uint8_t *k)
{
    const char *slash = memrchr(name, '/', len);
    size_t dlen = slash != NULL ? (size_t)(slash - name) : 0;
    size_t base = slash != NULL ? dlen + 1 : 0; /* where its own name starts */

    if (!name_plain(name, len)) {
        k[0] = KEY_RAW;
        memcpy(k + 1, name, len);
        return len + 1;
    }
    for (size_t i = 0; i < dlen; i++)
        k[i] = name[i] == '/' ? KEY_SLASH : (uint8_t)name[i];
    k[dlen] = KEY_DIR_END;
    memcpy(k + dlen + 1, name + base, len - base);
    return dlen + 1 + len - base;
}

/* The name of key k (klen bytes) into name (STORE_NAME_MAX + 1, NUL-terminated): its length. */
static size_t key_name(const uint8_t *k, size_t klen, char *name)
{
    size_t n = 0;

    if (klen > 0 && k[0] == KEY_RAW) {
        memcpy(name, k + 1, klen - 1);
        name[klen - 1] = '\0';
        return klen - 1;
    }
    for (size_t i = 0; i < klen; i++) {
        if (k[i] == KEY_SLASH || (k[i] == KEY_DIR_END && i > 0))
            name[n++] = '/';
        else if (k[i] != KEY_DIR_END)
            name[n++] = (char)k[i];
    }
    name[n] = '\0';
    return n;
}

/* The index of the segment with this id in s->segs (sorted), or -1. */
static ssize_t seg_index(const struct store *s, uint32_t id)
{
    size_t lo = 0, hi = s->nsegs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->segs[mid]->id == id)
            return (ssize_t)mid;
        if (s->segs[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The segment of this id: in the log, or (while a checkpoint loads) one gone since. */
static struct store_segment *seg_of(const struct store *s, uint32_t id)
{
    ssize_t i = seg_index(s, id);

    if (i >= 0)
        return s->segs[i];
    for (size_t k = 0; k < s->ngone; k++) {
        if (s->gone[k]->id == id)
            return s->gone[k];
    }
    return NULL; /* (an index that names a segment it has not: a bug) */
}

/* A record's bytes before its data: its header (with the version or not), name and owner. */
static uint64_t rec_head(size_t name_len, size_t owner_len, uint64_t version)
{
    return STORE_REC_HDR_BYTES + (version != 0 ? 8 : 0) + name_len + owner_len;
}

/* Where the record of v (of a name of name_len bytes) lies. Read or write lock held. */
static void pos_of(const struct store *s, size_t name_len, const struct upval *v,
                   struct store_pos *pos)
{
    uint64_t head = rec_head(name_len, s->owner_ids[v->owner]->len, v->version);

    *pos = (struct store_pos){.seg = seg_of(s, v->seg),
                              .rec_off = v->rec_off,
                              .rec_len = head + v->size,
                              .data_off = v->rec_off + head,
                              .size = v->size,
                              .version = v->version,
                              .whiteout = (v->flags & UPVAL_WHITEOUT) != 0};
}

/*
 * The order key of a live file: its key, after its owner's name and a 0 with by_owner (an
 * owner's name has no 0). k: UPINDEX_KEY_MAX bytes.
 */
static size_t order_key(const struct store *s, const struct store_owner *o, const uint8_t *key,
                        size_t klen, uint8_t *k)
{
    size_t n = 0;

    if (s->by_owner) {
        memcpy(k, o->name, o->len);
        n = o->len;
        k[n++] = 0;
    }
    memcpy(k + n, key, klen);
    return n + klen;
}

/* Takes a live file (owner o) out of the order or puts it in; write lock held. */
static void order_set(struct store *s, const struct store_owner *o, const uint8_t *key,
                      size_t klen, bool in)
{
    uint8_t k[UPINDEX_KEY_MAX];
    size_t n;
    static const struct upval none = {0};

    if (key[0] == KEY_RAW)
        return; /* (never listed) */
    n = order_key(s, o, key, klen, k);
    if (in)
        upindex_put(&s->order, k, n, &none, NULL);
    else
        upindex_del(&s->order, k, n, NULL);
}

/* Counts delta (+size or -size) of live data to owner and to the total; write lock held. */
static void usage_add(struct store *s, struct store_owner *o, uint64_t size, bool add)
{
    if (add) {
        o->bytes += size;
        s->data_bytes += size;
    } else {
        o->bytes -= size;
        s->data_bytes -= size;
    }
}

/*
 * Takes what old (of a name of len bytes, key key) counted out of the live counts, and out of
 * the order unless keep (the same owner's file again); write lock held.
 */
static void index_uncount(struct store *s, size_t len, const uint8_t *key, size_t klen,
                          const struct upval *old, bool keep)
{
    struct store_pos p;

    pos_of(s, len, old, &p);
    if (!p.whiteout && !keep)
        order_set(s, s->owner_ids[old->owner], key, klen, false);
    p.seg->live -= p.rec_len;
    if (p.whiteout)
        s->nwhiteouts--;
    else
        usage_add(s, s->owner_ids[old->owner], p.size, false);
}

/* Makes pos the newest version of name, moving the live count; write lock held. */
static void index_set(struct store *s, const char *name, size_t len, const char *owner,
                      const struct store_pos *pos)
{
    uint8_t key[UPINDEX_KEY_MAX];
    size_t klen = name_key(name, len, key);
    struct store_owner *o = owner_get(s, pos->whiteout || owner == NULL ? "" : owner);
    struct upval v = {.seg = pos->seg->id,
                      .owner = o->id,
                      .rec_off = pos->rec_off,
                      .size = pos->size,
                      .version = pos->version,
                      .flags = pos->whiteout ? UPVAL_WHITEOUT : 0},
                 old;

    /* what the index keeps must give back where the record's data lies (the record was
     * written or read with exactly this owner and version: see parse_record) */
    if (pos->data_off != pos->rec_off + rec_head(len, o->len, pos->version)) {
        log_error("upload store: the record of '%.*s' is not laid out as its index entry "
                  "says", (int)len, name);
        abort();
    }
    bool had = upindex_put(&s->index, key, klen, &v, &old);
    bool same = had && !pos->whiteout && !(old.flags & UPVAL_WHITEOUT) && old.owner == o->id;

    if (had)
        index_uncount(s, len, key, klen, &old, same);
    if (pos->whiteout)
        s->nwhiteouts++;
    else
        usage_add(s, o, pos->size, true);
    if (!pos->whiteout && !same)
        order_set(s, o, key, klen, true);
    pos->seg->live += pos->rec_len;
}

/* Drops the entry of key (of a name of len bytes) from the index; write lock held. */
static void index_drop_key(struct store *s, const uint8_t *key, size_t klen, size_t len)
{
    struct upval old;

    if (upindex_del(&s->index, key, klen, &old))
        index_uncount(s, len, key, klen, &old, false);
}

static void index_drop(struct store *s, const char *name, size_t len)
{
    uint8_t key[UPINDEX_KEY_MAX];

    index_drop_key(s, key, name_key(name, len, key), len);
}

/* ---- segments ---- */

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static void seg_name(uint32_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%08x" SEG_SUFFIX, id);
}

static void spare_name(uint32_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%08x" SPARE_SUFFIX, id);
}

/* ISA-L's CRC-32 is zlib's (same polynomial, reflection and chaining), ten times faster */
uint32_t store_crc32(uint32_t crc, const void *p, size_t n)
{
    return n > 0 ? crc32_gzip_refl(crc, (unsigned char *)p, (uint64_t)n) : crc;
}

static uint32_t seg_hdr_crc(const struct seg_hdr *h)
{
    return store_crc32(0, (const char *)h + 8, sizeof(*h) - 8);
}

/* Starts segment id in fd: a new salt in a new header, synced. The salt, or -errno. */
static int64_t seg_init(int fd, uint32_t id)
{
    struct seg_hdr h = {.magic = SEG_MAGIC, .id = id};
    struct timespec ts;
    int rc;

    if (getrandom(&h.salt, sizeof(h.salt), 0) != (ssize_t)sizeof(h.salt)) {
        clock_gettime(CLOCK_REALTIME, &ts);
        h.salt = (uint32_t)(ts.tv_nsec ^ ts.tv_sec ^ (long)getpid() << 16);
    }
    h.crc = seg_hdr_crc(&h);
    rc = pwrite_all(fd, &h, sizeof(h), 0);
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    return rc < 0 ? rc : (int64_t)h.salt;
}

static void ckpt_seg_started(struct store_ckpt *w, const struct store_segment *g);

static struct store_segment *seg_add(struct store *s, uint32_t id, int fd, uint64_t bytes)
{
    struct store_segment *g = xcalloc(1, sizeof(*g));

    g->id = id;
    g->fd = fd;
    g->bytes = bytes;
    if (s->nsegs == s->segs_cap) {
        s->segs_cap = s->segs_cap ? s->segs_cap * 2 : 8;
        s->segs = xrealloc(s->segs, s->segs_cap * sizeof(*s->segs));
    }
    s->segs[s->nsegs++] = g;
    if (id >= s->next_id)
        s->next_id = id + 1;
    return g;
}

/*
 * Undoes what a failed seg_create made, so that the next attempt (the next batch's roll, or a
 * compaction step) starts clean: a spare taken for the segment goes back to being a spare, a
 * file it created is removed (its header may be half-written: a disk that was full), and the
 * id moves on either way, so that a name left behind (a file we could not remove, or a stray
 * one that made O_EXCL fail) never blocks every later segment. Returns rc (-errno).
 */
static int seg_create_failed(struct store *s, int rc, const char *name, const char *spare)
{
    if (name != NULL && spare != NULL) {
        if (renameat(s->dir_fd, name, s->dir_fd, spare) == 0)
            s->nspares++;
        else
            unlinkat(s->dir_fd, name, 0);
    } else if (name != NULL) {
        unlinkat(s->dir_fd, name, 0);
    }
    s->next_id++;
    return rc;
}

/*
 * A new empty segment at the end, header and name durable. A spare (a dead segment kept by
 * seg_remove) is reused if there is one: its blocks are allocated and its size is already
 * there, so a flush of records written over it has no size or block allocation to record.
 * -errno on failure, with nothing left behind (seg_create_failed).
 */
static int seg_create(struct store *s)
{
    char name[32], spare[32];
    struct store_segment *g;
    bool reusing = s->nspares > 0;
    int64_t salt;
    int fd, e;

    seg_name(s->next_id, name, sizeof(name));
    if (reusing) {
        spare_name(s->spares[s->nspares - 1], spare, sizeof(spare));
        if (renameat(s->dir_fd, spare, s->dir_fd, name) < 0)
            return seg_create_failed(s, -errno, NULL, NULL);
        s->nspares--;
        fd = openat(s->dir_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    } else {
        fd = openat(s->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            return seg_create_failed(s, -errno, NULL, NULL);
    }
    if (fd < 0) {
        e = -errno;
        return seg_create_failed(s, e, name, reusing ? spare : NULL);
    }
    salt = seg_init(fd, s->next_id);
    if (salt < 0 || fsync(s->dir_fd) < 0) {
        e = salt < 0 ? (int)salt : -errno;
        close(fd);
        return seg_create_failed(s, e, name, reusing ? spare : NULL);
    }
    pthread_rwlock_wrlock(&s->lock);
    g = seg_add(s, s->next_id, fd, sizeof(struct seg_hdr));
    g->salt = (uint32_t)salt;
    if (reusing)
        s->reused++;
    pthread_rwlock_unlock(&s->lock);
    if (s->ckpt != NULL)
        ckpt_seg_started(s->ckpt, g);
    return 0;
}

static struct store_segment *active(struct store *s)
{
    return s->segs[s->nsegs - 1];
}

/* ---- appending ---- */

int store_pread(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;

    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EIO; /* shorter than expected */
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Writes n iovecs at off, all of them (short writes go on where they stopped). */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t w = pwritev(fd, iov, n < IOV_MAX ? n : IOV_MAX, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        off += (uint64_t)w;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Writes the staged records (one pwritev for the lot). */
static int flush_stage(struct store *s)
{
    int rc = 0;

    if (s->stage_niov > 0)
        rc = pwritev_all(active(s)->fd, s->stage_iov, s->stage_niov, s->stage_off);
    s->stage_niov = 0;
    s->stage_nrec = 0;
    return rc;
}

static int append(struct store *s, int op, const char *name, size_t len, const char *owner,
                  const struct store_body *body, struct store_pos *pos)
{
    struct store_segment *g = active(s);
    size_t olen = owner != NULL ? strlen(owner) : 0;
    uint64_t dlen = body != NULL ? body->len : 0;
    uint64_t version = body != NULL ? body->version : 0;
    struct rec_hdr_v hv = {.h = {.magic = REC_MAGIC,
                                 .data_len = dlen,
                                 .name_len = (uint16_t)len,
                                 .owner_len = (uint8_t)olen,
                                 .op = (uint8_t)(op == REC_PUT && version != 0 ? REC_PUT_V : op),
                                 .salt = g->salt},
                           .version = version};
    struct rec_hdr *h = &hv.h;
    size_t hlen = h->op == REC_PUT_V ? sizeof(hv) : sizeof(*h); /* with the version or not */
    uint64_t off;
    uint64_t head = hlen + len + olen;
    uint32_t crc;
    int rc;

    if (len == 0 || len > STORE_NAME_MAX || olen > STORE_OWNER_MAX)
        return -EINVAL;
    if (!s->in_batch) { /* room for the batch header, written by store_sync */
        s->in_batch = true;
        s->batch_off = g->bytes;
        s->batch_nrec = 0;
        seg_bytes_set(g, g->bytes + sizeof(struct batch_hdr));
    }
    off = g->bytes;
    crc = store_crc32(0, (const char *)h + CRC_FROM, hlen - CRC_FROM);
    crc = store_crc32(crc, name, len);
    crc = store_crc32(crc, owner, olen);
    if (dlen > 0 && body->has_crc) /* computed while the body arrived */
        crc = (uint32_t)crc32_combine(crc, body->data_crc, (z_off_t)dlen);
    if (dlen == 0 || body->mem != NULL) {
        /* staged: written with the others of the batch by one pwritev in store_sync */
        struct rec_hdr_v *sh;
        struct iovec *v;
        int nv = 2;

        if (s->stage_nrec == STORE_STAGE_RECORDS && (rc = flush_stage(s)) < 0)
            return rc;
        if (s->stage_nrec == 0)
            s->stage_off = off;
        if (dlen > 0 && !body->has_crc)
            crc = store_crc32(crc, body->mem, (size_t)dlen);
        h->crc = crc;
        sh = (struct rec_hdr_v *)s->stage_hdrs + s->stage_nrec++;
        *sh = hv;
        v = s->stage_iov + s->stage_niov;
        v[0] = (struct iovec){sh, hlen};
        v[1] = (struct iovec){(void *)name, len};
        if (olen > 0)
            v[nv++] = (struct iovec){(void *)owner, olen};
        if (dlen > 0)
            v[nv++] = (struct iovec){(void *)body->mem, (size_t)dlen};
        s->stage_niov += nv;
    } else {
        /* data from a file: what is staged first, then the data in chunks, then the head with
         * the final CRC */
        char *buf;
        uint64_t done = 0;

        if ((rc = flush_stage(s)) < 0)
            return rc;
        buf = xmalloc(dlen < COPY_CHUNK ? (size_t)dlen : COPY_CHUNK);
        rc = 0;
        while (rc == 0 && done < dlen) {
            size_t n = dlen - done < COPY_CHUNK ? (size_t)(dlen - done) : COPY_CHUNK;
            rc = store_pread(body->fd, buf, n, body->off + done);
            if (rc == 0)
                rc = pwrite_all(g->fd, buf, n, off + head + done);
            if (!body->has_crc)
                crc = store_crc32(crc, buf, n);
            done += n;
        }
        free(buf);
        if (rc < 0)
            return rc;
        h->crc = crc;
        {
            char hb[sizeof(hv) + STORE_NAME_MAX + STORE_OWNER_MAX];
            memcpy(hb, &hv, hlen);
            memcpy(hb + hlen, name, len);
            if (olen > 0)
                memcpy(hb + hlen + len, owner, olen);
            rc = pwrite_all(g->fd, hb, (size_t)head, off);
            if (rc < 0)
                return rc;
        }
    }
    seg_bytes_set(g, off + head + dlen);
    s->batch_nrec++;
    s->records_total++;
    *pos = (struct store_pos){.seg = g,
                              .rec_off = off,
                              .rec_len = head + dlen,
                              .data_off = off + head,
                              .size = dlen,
                              .version = version,
                              .whiteout = op == REC_DELETE};
    return 0;
}

int store_append_put(struct store *s, const char *name, size_t len, const char *owner,
                     const struct store_body *body, struct store_pos *pos)
{
    return append(s, REC_PUT, name, len, owner, body, pos);
}

int store_append_delete(struct store *s, const char *name, size_t len, struct store_pos *pos)
{
    return append(s, REC_DELETE, name, len, NULL, NULL, pos);
}

uint64_t store_next_version(struct store *s)
{
    bool first = s->pending_version == UINT64_MAX; /* of a batch: the lock once per batch */
    struct timespec ts;
    uint64_t now;

    /* the clock is read under the lock: a lookup either sees this version pending or ended
     * before the clock was read (and its caller read the time before it: httpcond.h) */
    if (first)
        pthread_rwlock_wrlock(&s->lock);
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    s->last_version = now > s->last_version ? now : s->last_version + 1;
    if (first) {
        s->pending_version = s->last_version;
        pthread_rwlock_unlock(&s->lock);
    }
    return s->last_version;
}

void store_settle(struct store *s)
{
    if (s->pending_version == UINT64_MAX)
        return;
    pthread_rwlock_wrlock(&s->lock);
    s->pending_version = UINT64_MAX;
    pthread_rwlock_unlock(&s->lock);
}

uint64_t store_tail(struct store *s)
{
    return active(s)->bytes;
}

int store_rewind(struct store *s, uint64_t tail)
{
    struct store_segment *g = active(s);

    if (tail > g->bytes)
        return -EINVAL;
    s->stage_niov = 0; /* staged records are dropped unwritten */
    s->stage_nrec = 0;
    s->in_batch = false;
    seg_bytes_set(g, tail);
    return ftruncate(g->fd, (off_t)tail) < 0 ? -errno : 0;
}

int store_release_spares(struct store *s)
{
    int released = 0, rc = 0;

    while (s->nspares > 0) {
        char spare[32];
        spare_name(s->spares[s->nspares - 1], spare, sizeof(spare));
        if (unlinkat(s->dir_fd, spare, 0) < 0 && errno != ENOENT) {
            rc = -errno;
            break;
        }
        s->nspares--;
        released++;
    }
    if (released > 0 && fsync(s->dir_fd) < 0)
        return -errno;
    return released > 0 ? released : rc; /* what went is room, even if one would not go */
}

static uint32_t batch_hdr_crc(const struct batch_hdr *h)
{
    return store_crc32(0, (const char *)h + 8, sizeof(*h) - 8);
}

int store_sync(struct store *s)
{
    struct store_segment *g = active(s);
    int rc = flush_stage(s);

    if (rc < 0)
        return rc;
    if (s->in_batch) {
        struct batch_hdr h = {.magic = BATCH_MAGIC,
                              .salt = g->salt,
                              .nrec = s->batch_nrec,
                              .len = g->bytes - s->batch_off - sizeof(h)};
        h.crc = batch_hdr_crc(&h);
        if ((rc = pwrite_all(g->fd, &h, sizeof(h), s->batch_off)) < 0)
            return rc;
        s->in_batch = false;
    }
    return fdatasync(g->fd) < 0 ? -errno : 0;
}

void store_publish(struct store *s, const char *name, size_t len, const char *owner,
                   const struct store_pos *pos)
{
    pthread_rwlock_wrlock(&s->lock);
    index_set(s, name, len, owner, pos);
    pthread_rwlock_unlock(&s->lock);
}

int store_roll(struct store *s)
{
    int rc;

    if (active(s)->bytes < s->segment_bytes)
        return 0;
    if ((rc = store_sync(s)) < 0) /* (nothing is staged between batches: a no-op then) */
        return rc;
    return seg_create(s);
}

/* ---- reading ---- */

/* What v says of its version; fd and pin are left alone. Read lock held. */
static void found_of(const struct store *s, size_t name_len, const struct upval *v,
                     struct store_found *f)
{
    const struct store_owner *o = s->owner_ids[v->owner];

    memcpy(f->owner, o->name, (size_t)o->len + 1);
    f->off = v->rec_off + rec_head(name_len, o->len, v->version);
    f->size = v->size;
    f->version = v->version;
}

int store_lookup(struct store *s, const char *name, size_t len, bool want_fd,
                 struct store_found *f)
{
    uint8_t key[UPINDEX_KEY_MAX];
    size_t klen = name_key(name, len, key);
    struct upval v;
    int rc = STORE_ABSENT;

    if (f != NULL) {
        f->fd = -1;
        f->pin = NULL;
    }
    pthread_rwlock_rdlock(&s->lock);
    if (f != NULL)
        f->pending = s->pending_version; /* with the index: a version published since is seen */
    if (upindex_get(&s->index, key, klen, &v)) {
        rc = v.flags & UPVAL_WHITEOUT ? STORE_WHITEOUT : STORE_FILE;
        if (f != NULL)
            found_of(s, len, &v, f);
        if (rc == STORE_FILE && f != NULL && want_fd) {
            struct store_segment *g = seg_of(s, v.seg);
            f->fd = fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
            if (f->fd < 0) {
                rc = -errno;
            } else {
                /* under the read lock: the writer, which removes segments under the write
                 * lock, sees the pin before it decides whether the file may be reused */
                atomic_fetch_add_explicit(&g->readers, 1, memory_order_relaxed);
                f->pin = g;
            }
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

void store_unpin(struct store_segment *g)
{
    if (g != NULL)
        atomic_fetch_sub_explicit(&g->readers, 1, memory_order_release);
}

void store_foreach(struct store *s,
                   void (*fn)(void *arg, const char *name, size_t len, enum store_state st,
                              const struct store_found *f),
                   void *arg)
{
    struct store_found f = {.pin = NULL};
    struct upindex_iter *it = xmalloc(sizeof(*it));
    char name[STORE_NAME_MAX + 1];
    struct upval v;

    pthread_rwlock_rdlock(&s->lock);
    upindex_seek(&s->index, NULL, 0, it);
    while (upindex_next(it, &v)) {
        size_t len = key_name(it->key, it->klen, name);
        found_of(s, len, &v, &f);
        f.fd = seg_of(s, v.seg)->fd;
        fn(arg, name, len, v.flags & UPVAL_WHITEOUT ? STORE_WHITEOUT : STORE_FILE, &f);
    }
    pthread_rwlock_unlock(&s->lock);
    free(it);
}

static bool has_prefix(const struct upindex_iter *it, const uint8_t *p, size_t plen)
{
    return it->klen >= plen && memcmp(it->key, p, plen) == 0;
}

/* The child of the walk at it (its order key's bytes from start on) into c, name and *f. */
static void list_child(const struct store *s, const struct upindex_iter *it, size_t ko,
                       size_t plen, char *name, struct store_found *f, struct store_child *c)
{
    struct upval v = {0};
    size_t len = key_name(it->key + ko, it->klen - ko, name);

    upindex_get(&s->index, it->key + ko, it->klen - ko, &v); /* (there: the order is its) */
    found_of(s, len, &v, f);
    *c = (struct store_child){.name = name + plen,
                              .len = len - plen,
                              .full = name,
                              .full_len = len,
                              .f = f};
}

int store_list(struct store *s, const struct store_list_req *rq,
               bool (*fn)(void *arg, const struct store_child *c), void *arg,
               struct store_list_result *res)
{
    const char *owner = rq->owner != NULL ? rq->owner : "";
    size_t plen = rq->dir_len > 0 ? rq->dir_len + 1 : 0; /* "dir/" */
    struct store_found f = {.fd = -1, .pin = NULL};
    struct upindex_iter *it;
    uint8_t dk[UPINDEX_KEY_MAX], sk[UPINDEX_KEY_MAX];
    char name[STORE_NAME_MAX + 1];
    size_t ko = 0, dlen, slen, counted = 0;

    *res = (struct store_list_result){0};
    if (plen + (rq->after != NULL ? rq->after_len : 0) + 1 > STORE_NAME_MAX + 1)
        return -ENAMETOOLONG;
    if (!name_plain(rq->dir, rq->dir_len))
        return 0; /* (no plain name lies beneath it) */
    /* dk: the directory's order key: (the owner and a 0,) "d" 1 "e" for "d/e"; its files
     * follow after a 0, the entries of its subdirectories after a 1 (the root's: from 3) */
    if (s->by_owner) {
        ko = strnlen(owner, STORE_OWNER_MAX);
        memcpy(dk, owner, ko);
        dk[ko++] = 0;
    }
    dlen = ko + rq->dir_len;
    for (size_t i = 0; i < rq->dir_len; i++)
        dk[ko + i] = rq->dir[i] == '/' ? KEY_SLASH : (uint8_t)rq->dir[i];
    it = xmalloc(sizeof(*it));
    pthread_rwlock_rdlock(&s->lock);
    /* anything beneath dir: the first order key from dir's own files on */
    memcpy(sk, dk, dlen);
    sk[dlen] = KEY_DIR_END;
    upindex_seek(&s->order, sk, dlen + 1, it);
    if (upindex_next(it, NULL) && has_prefix(it, dk, dlen))
        res->exists = rq->dir_len > 0 ? it->key[dlen] == KEY_DIR_END ||
                                            it->key[dlen] == KEY_SLASH
                                      : it->key[ko] == KEY_DIR_END || it->key[ko] >= KEY_LIMIT;
    /* the subdirectories: each found by its first file, then passed over with one seek to the
     * key after all of it (the child, then 2: below every byte of a plain name, above the 0
     * and 1 that follow the child in the keys beneath it) */
    if (rq->after == NULL || rq->after_dir) {
        size_t start = rq->dir_len > 0 ? dlen + 1 : ko;
        memcpy(sk, dk, dlen);
        sk[dlen] = rq->dir_len > 0 ? KEY_SLASH : KEY_LIMIT;
        slen = rq->dir_len > 0 ? dlen + 1 : dlen;
        if (rq->after != NULL) {
            memcpy(sk + start, rq->after, rq->after_len);
            slen = start + rq->after_len;
            sk[slen++] = KEY_RAW;
        } else if (rq->dir_len == 0) {
            slen++;
        }
        upindex_seek(&s->order, sk, slen, it);
        while (upindex_next(it, NULL)) {
            size_t clen = 0;
            struct store_child c;

            res->visited++;
            if (!has_prefix(it, dk, dlen) || it->klen <= start ||
                (rq->dir_len > 0 ? it->key[dlen] != KEY_SLASH : it->key[ko] < KEY_LIMIT))
                break;
            while (start + clen < it->klen && it->key[start + clen] >= KEY_LIMIT)
                clen++;
            if (counted == rq->max) {
                res->more = true;
                goto out;
            }
            list_child(s, it, ko, plen, name, &f, &c);
            c.len = clen;
            c.dir = true;
            if (!fn(arg, &c))
                continue; /* not shown: the next file beneath it may be */
            counted++;
            memcpy(sk, it->key, start + clen);
            slen = start + clen;
            sk[slen++] = KEY_RAW;
            upindex_seek(&s->order, sk, slen, it);
        }
    }
    /* the files of dir, from the one after rq->after if that is a file */
    memcpy(sk, dk, dlen);
    slen = dlen;
    sk[slen++] = KEY_DIR_END;
    if (rq->after != NULL && !rq->after_dir) {
        memcpy(sk + slen, rq->after, rq->after_len);
        slen += rq->after_len;
        sk[slen++] = 0; /* (the first key after the one of rq->after) */
    }
    upindex_seek(&s->order, sk, slen, it);
    while (upindex_next(it, NULL)) {
        struct store_child c;

        res->visited++;
        if (!has_prefix(it, dk, dlen) || it->klen == dlen || it->key[dlen] != KEY_DIR_END)
            break;
        if (counted == rq->max) {
            res->more = true;
            break;
        }
        list_child(s, it, ko, plen, name, &f, &c);
        if (fn(arg, &c))
            counted++;
    }
out:
    pthread_rwlock_unlock(&s->lock);
    free(it);
    return 0;
}

void store_stats(struct store *s, struct store_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_rwlock_rdlock(&s->lock);
    st->whiteouts = s->nwhiteouts;
    st->files = s->index.count - s->nwhiteouts;
    st->index_bytes = upindex_bytes(&s->index) + upindex_bytes(&s->order);
    st->segments = s->nsegs;
    for (size_t i = 0; i < s->nsegs; i++) {
        st->bytes += __atomic_load_n(&s->segs[i]->bytes, __ATOMIC_RELAXED);
        st->live_bytes += s->segs[i]->live;
        st->pins += atomic_load_explicit(&s->segs[i]->readers, memory_order_relaxed);
    }
    st->zombies = __atomic_load_n(&s->nzombies, __ATOMIC_RELAXED);
    st->data_bytes = s->data_bytes;
    st->compactions = s->compactions;
    st->reused = s->reused;
    st->ckpts = __atomic_load_n(&s->ckpts, __ATOMIC_RELAXED);
    st->ckpt_unix = __atomic_load_n(&s->ckpt_unix, __ATOMIC_RELAXED);
    st->ckpt_entries = __atomic_load_n(&s->ckpt_entries, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&s->lock);
}

void store_usage(struct store *s, const char *owner, uint64_t *owner_bytes,
                 uint64_t *total_bytes)
{
    pthread_rwlock_rdlock(&s->lock);
    if (owner_bytes != NULL) {
        struct store_owner *o = *owner_slot(s, owner, fnv1a64(owner, strlen(owner)));
        *owner_bytes = o != NULL ? o->bytes : 0;
    }
    if (total_bytes != NULL)
        *total_bytes = s->data_bytes;
    pthread_rwlock_unlock(&s->lock);
}

/* ---- compaction ---- */

/* Removes segment i (nothing in the index points at it any more). */
static int seg_remove(struct store *s, size_t i)
{
    struct store_segment *g = s->segs[i];
    char name[32];
    bool pinned;
    int rc = 0;

    seg_name(g->id, name, sizeof(name));
    pthread_rwlock_wrlock(&s->lock);
    memmove(&s->segs[i], &s->segs[i + 1], (s->nsegs - i - 1) * sizeof(*s->segs));
    s->nsegs--;
    s->compactions++;
    pthread_rwlock_unlock(&s->lock);
    /* no new pin can come now; a segment still pinned is not reused (its readers would send
     * the new bytes) but unlinked, its struct kept until the last pin goes */
    pinned = atomic_load_explicit(&g->readers, memory_order_acquire) > 0;
    if (!pinned && s->nspares < STORE_SPARES) {
        /* kept for reuse: no block freeing now (with -o discard, a synchronous discard of the
         * whole segment), and no block allocation or size change to flush when it is reused */
        char spare[32];
        spare_name(g->id, spare, sizeof(spare));
        if (renameat(s->dir_fd, name, s->dir_fd, spare) < 0)
            rc = -errno;
        else
            s->spares[s->nspares++] = g->id;
    } else if (unlinkat(s->dir_fd, name, 0) < 0) {
        rc = -errno;
    }
    if (rc == 0 && fsync(s->dir_fd) < 0)
        rc = -errno;
    /* readers hold dup'd descriptors of their own: closing ours ends nothing they send */
    close(g->fd);
    g->fd = -1;
    if (pinned) {
        g->next_zombie = s->zombies;
        s->zombies = g;
        __atomic_add_fetch(&s->nzombies, 1, __ATOMIC_RELAXED);
    } else {
        free(g);
    }
    return rc;
}

struct moved {
    char *name;             /* (its own copy: staged records point at it until the sync) */
    size_t len;
    const char *owner;      /* (the owner's, which stays) */
    struct store_pos pos;   /* where the copy went; seg NULL: dropped */
};

/*
 * One step of compaction: copies live records of the oldest segment (about COMPACT_STEP bytes)
 * to the end of the log, syncs, repoints the index; removes the segment once nothing in it is
 * live. Steps are bounded so that a batch never waits behind a whole segment's copy. Returns
 * 1 if the segment was removed, 0 if not yet, or -errno.
 */
static int compact_oldest(struct store *s, bool (*hide_needed)(void *arg, const char *name),
                          void *arg)
{
    struct store_segment *old = s->segs[0];
    uint64_t tail = store_tail(s), copied = 0;
    struct upindex_iter *it = xmalloc(sizeof(*it));
    char name[STORE_NAME_MAX + 1];
    struct moved *mv = NULL;
    size_t n = 0, cap = 0;
    /* the data of the small records copied (staged: kept until the sync): copied stays below
     * COMPACT_STEP before each record, so one more of up to COMPACT_INLINE fits */
    uint8_t *data = NULL;
    size_t used = 0;
    struct upval v;
    int rc = 0;

    /* the index changes only on this thread: entries stay put while we copy */
    upindex_seek(&s->index, NULL, 0, it);
    while (rc == 0 && copied < COMPACT_STEP && upindex_next(it, &v)) {
        struct store_pos p;
        struct store_body b;
        struct moved *m;

        if (v.seg != old->id)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            mv = xrealloc(mv, cap * sizeof(*mv));
        }
        m = &mv[n++];
        m->len = key_name(it->key, it->klen, name);
        m->name = xmalloc(m->len + 1);
        memcpy(m->name, name, m->len + 1);
        m->owner = s->owner_ids[v.owner]->name;
        pos_of(s, m->len, &v, &p);
        copied += p.rec_len;
        if (p.whiteout) {
            if (!hide_needed(arg, m->name)) {
                m->pos.seg = NULL; /* dropped: nothing older to hide */
                continue;
            }
            rc = store_append_delete(s, m->name, m->len, &m->pos);
            continue;
        }
        b = (struct store_body){.fd = old->fd, .off = p.data_off, .len = p.size,
                                .version = p.version}; /* the same version */
        if (p.size <= COMPACT_INLINE) {
            if (data == NULL)
                data = xmalloc(COMPACT_STEP + COMPACT_INLINE);
            if ((rc = store_pread(old->fd, data + used, (size_t)p.size, p.data_off)) < 0)
                break;
            b.mem = data + used;
            used += (size_t)p.size;
        }
        rc = store_append_put(s, m->name, m->len, m->owner, &b, &m->pos);
    }
    free(it);
    if (rc == 0)
        rc = store_sync(s);
    if (rc < 0) {
        store_rewind(s, tail); /* the copies were not published: drop them */
    } else {
        pthread_rwlock_wrlock(&s->lock);
        for (size_t k = 0; k < n; k++) {
            if (mv[k].pos.seg == NULL)
                index_drop(s, mv[k].name, mv[k].len);
            else
                index_set(s, mv[k].name, mv[k].len, mv[k].owner, &mv[k].pos);
        }
        pthread_rwlock_unlock(&s->lock);
    }
    for (size_t k = 0; k < n; k++)
        free(mv[k].name);
    free(mv);
    free(data);
    if (rc < 0)
        return rc;
    if (old->live > 0)
        return 0; /* more steps to come */
    rc = seg_remove(s, 0);
    return rc < 0 ? rc : 1;
}

/* Frees removed segments whose last pin has gone (none can come back). */
static void free_zombies(struct store *s)
{
    struct store_segment **pp = &s->zombies;

    while (*pp != NULL) {
        struct store_segment *g = *pp;
        if (atomic_load_explicit(&g->readers, memory_order_acquire) > 0) {
            pp = &g->next_zombie;
            continue;
        }
        *pp = g->next_zombie;
        free(g);
        __atomic_sub_fetch(&s->nzombies, 1, __ATOMIC_RELAXED);
    }
}

int store_compact(struct store *s, bool (*hide_needed)(void *arg, const char *name), void *arg)
{
    uint64_t bytes = 0, live = 0;
    int removed = 0;
    size_t i = 0;
    int rc;

    free_zombies(s);
    /* sealed segments with nothing live go without copying */
    while (i + 1 < s->nsegs) {
        if (s->segs[i]->live > 0) {
            i++;
            continue;
        }
        if ((rc = seg_remove(s, i)) < 0)
            return rc;
        removed++;
    }
    for (i = 0; i + 1 < s->nsegs; i++) {
        bytes += s->segs[i]->bytes;
        live += s->segs[i]->live;
    }
    if (s->nsegs < 2 || bytes <= 2 * live)
        return removed;
    if (s->ckpt_have && s->segs[0]->id >= s->ckpt_seg) {
        /* its records are after the checkpoint's position: start-up replays them over it, and
         * must find every one (a dropped whiteout would bring a deleted file back). A newer
         * checkpoint first; written in steps, one per call */
        s->ckpt_due = true;
        if ((rc = store_checkpoint(s, false)) <= 0)
            return rc < 0 ? rc : removed;
        if (s->segs[0]->id >= s->ckpt_seg)
            return removed;
    }
    rc = compact_oldest(s, hide_needed, arg);
    return rc < 0 ? rc : removed + rc;
}

/* ---- start-up ---- */

/* Reads segment id's header from fd: 1 (valid, *salt set), 0 (missing or not valid), -errno. */
static int seg_read_hdr(int fd, uint32_t id, uint32_t *salt)
{
    struct seg_hdr h;
    ssize_t r;

    do
        r = pread(fd, &h, sizeof(h), 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if ((size_t)r < sizeof(h) || h.magic != SEG_MAGIC || h.crc != seg_hdr_crc(&h) || h.id != id)
        return 0;
    *salt = h.salt;
    return 1;
}

/* One record read back: its header, version (0 if none), name and owner (NUL-terminated). */
struct rec_read {
    struct rec_hdr h;
    uint64_t version;
    char name[STORE_NAME_MAX + 1];
    char owner[STORE_OWNER_MAX + 1];
};

/*
 * Whether a record (its CRC checked) is one this store writes: a name and an owner without a
 * 0 byte, a version (if it has one) not 0. The index keeps no more than the owner's number and
 * the version of each name (upindex.h) and finds the data from them: any other record would
 * not be where it says.
 */
static bool rec_sane(const struct rec_read *r)
{
    return strlen(r->name) == r->h.name_len && strlen(r->owner) == r->h.owner_len &&
           (r->h.op != REC_PUT_V || r->version != 0);
}

/*
 * Reads the record at off of a file of size bytes (buf: SCAN_CHUNK bytes of scratch). Returns
 * its length if it is whole and its CRC matches, 0 if not, or -errno.
 */
static int64_t read_record(int fd, uint32_t salt, uint64_t off, uint64_t size, char *buf,
                           struct rec_read *r)
{
    struct rec_hdr *h = &r->h;
    uint64_t head, hlen;
    uint32_t crc;
    int rc;

    if (size - off < sizeof(*h))
        return 0;
    if ((rc = store_pread(fd, h, sizeof(*h), off)) < 0)
        return rc;
    if (h->magic != REC_MAGIC || h->salt != salt ||
        (h->op != REC_PUT && h->op != REC_PUT_V && h->op != REC_DELETE) || h->name_len == 0 ||
        h->name_len > STORE_NAME_MAX || h->owner_len > STORE_OWNER_MAX ||
        (h->op == REC_DELETE && (h->data_len != 0 || h->owner_len != 0)))
        return 0;
    hlen = h->op == REC_PUT_V ? sizeof(struct rec_hdr_v) : sizeof(*h);
    head = hlen + h->name_len + h->owner_len;
    if (size - off < head || size - off - head < h->data_len)
        return 0;
    r->version = 0;
    if ((hlen > sizeof(*h) &&
         (rc = store_pread(fd, &r->version, sizeof(r->version), off + sizeof(*h))) < 0) ||
        (rc = store_pread(fd, r->name, h->name_len, off + hlen)) < 0 ||
        (rc = store_pread(fd, r->owner, h->owner_len, off + hlen + h->name_len)) < 0)
        return rc;
    r->name[h->name_len] = '\0';
    r->owner[h->owner_len] = '\0';
    crc = store_crc32(0, (const char *)h + CRC_FROM, sizeof(*h) - CRC_FROM);
    if (hlen > sizeof(*h))
        crc = store_crc32(crc, &r->version, sizeof(r->version));
    crc = store_crc32(crc, r->name, h->name_len);
    crc = store_crc32(crc, r->owner, h->owner_len);
    for (uint64_t done = 0; done < h->data_len;) {
        size_t n = h->data_len - done < SCAN_CHUNK ? (size_t)(h->data_len - done) : SCAN_CHUNK;
        if ((rc = store_pread(fd, buf, n, off + head + done)) < 0)
            return rc;
        crc = store_crc32(crc, buf, n);
        done += n;
    }
    if (crc != h->crc || !rec_sane(r))
        return 0;
    return (int64_t)(head + h->data_len);
}

/*
 * The record at the start of the avail bytes at m (a whole batch read at once): as
 * read_record, without a read per piece.
 */
static int64_t parse_record(const char *m, size_t avail, uint32_t salt, struct rec_read *r)
{
    struct rec_hdr *h = &r->h;
    size_t head, hlen;
    uint32_t crc;

    if (avail < sizeof(*h))
        return 0;
    memcpy(h, m, sizeof(*h));
    if (h->magic != REC_MAGIC || h->salt != salt ||
        (h->op != REC_PUT && h->op != REC_PUT_V && h->op != REC_DELETE) || h->name_len == 0 ||
        h->name_len > STORE_NAME_MAX || h->owner_len > STORE_OWNER_MAX ||
        (h->op == REC_DELETE && (h->data_len != 0 || h->owner_len != 0)))
        return 0;
    hlen = h->op == REC_PUT_V ? sizeof(struct rec_hdr_v) : sizeof(*h);
    head = hlen + h->name_len + h->owner_len;
    if (avail < head || avail - head < h->data_len)
        return 0;
    r->version = 0;
    if (hlen > sizeof(*h))
        memcpy(&r->version, m + sizeof(*h), sizeof(r->version));
    memcpy(r->name, m + hlen, h->name_len);
    memcpy(r->owner, m + hlen + h->name_len, h->owner_len);
    r->name[h->name_len] = '\0';
    r->owner[h->owner_len] = '\0';
    crc = store_crc32(0, m + CRC_FROM, head - CRC_FROM + (size_t)h->data_len);
    if (crc != h->crc || !rec_sane(r))
        return 0;
    return (int64_t)(head + h->data_len);
}

struct replayed {
    struct store_pos pos;
    char owner[STORE_OWNER_MAX + 1];
    char *name;
    uint16_t name_len;
};

/*
 * Reads the batch at off of g (size bytes in all): 1 if it is whole (its records in *out,
 * *n of them, names malloc'd; *end where it ends), 0 if not, -errno.
 */
static int read_batch(int fd, uint32_t salt, uint64_t off, uint64_t size, char *buf,
                      struct rec_read *r, struct replayed **out, size_t *cap, size_t *n,
                      uint64_t *end)
{
    struct batch_hdr h;
    uint64_t p, stop;
    int rc;

    *n = 0;
    if (size - off < sizeof(h))
        return 0;
    if ((rc = store_pread(fd, &h, sizeof(h), off)) < 0)
        return rc;
    if (h.magic != BATCH_MAGIC || h.salt != salt || h.crc != batch_hdr_crc(&h) ||
        h.len > size - off - sizeof(h))
        return 0;
    p = off + sizeof(h);
    stop = p + h.len;
    /* a batch that fits the scratch buffer (most: 256 small records) is read at once */
    if (h.len <= SCAN_CHUNK && (rc = store_pread(fd, buf, (size_t)h.len, p)) < 0)
        return rc;
    while (p < stop) {
        int64_t len = h.len <= SCAN_CHUNK
                          ? parse_record(buf + (p - off - sizeof(h)), (size_t)(stop - p), salt, r)
                          : read_record(fd, salt, p, stop, buf, r);
        if (len <= 0) {
            rc = (int)len;
            goto bad;
        }
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *out = xrealloc(*out, *cap * sizeof(**out));
        }
        (*out)[*n] = (struct replayed){.pos = {.rec_off = p,
                                               .rec_len = (uint64_t)len,
                                               .data_off = p + (uint64_t)len - r->h.data_len,
                                               .size = r->h.data_len,
                                               .version = r->version,
                                               .whiteout = r->h.op == REC_DELETE},
                                       .name = xstrdup(r->name),
                                       .name_len = r->h.name_len};
        memcpy((*out)[*n].owner, r->owner, sizeof(r->owner));
        (*n)++;
        p += (uint64_t)len;
    }
    if (*n != h.nrec) {
        rc = 0;
        goto bad;
    }
    *end = stop;
    return 1;
bad:
    for (size_t i = 0; i < *n; i++)
        free((*out)[i].name);
    *n = 0;
    return rc;
}

/*
 * Replays the whole batches of g from offset from (its header's end, or a checkpoint's
 * position) into the index. Returns the offset after
 * the last one (everything from there on is an unfinished batch, damage, or the old contents
 * of a reused segment), or -errno.
 */
static int64_t replay(struct store *s, struct store_segment *g, uint64_t from, uint64_t size,
                      uint64_t *records)
{
    char *buf = xmalloc(SCAN_CHUNK);
    struct rec_read *r = xmalloc(sizeof(*r));
    struct replayed *rs = NULL;
    size_t cap = 0, n = 0;
    uint64_t off = from, end = 0;
    int rc;

    while ((rc = read_batch(g->fd, g->salt, off, size, buf, r, &rs, &cap, &n, &end)) > 0) {
        for (size_t i = 0; i < n; i++) {
            rs[i].pos.seg = g;
            if (rs[i].pos.version > s->last_version)
                s->last_version = rs[i].pos.version;
            index_set(s, rs[i].name, rs[i].name_len, rs[i].owner, &rs[i].pos);
            free(rs[i].name);
        }
        *records += n;
        off = end;
    }
    free(buf);
    free(r);
    free(rs);
    return rc < 0 ? rc : (int64_t)off;
}

/*
 * Whether a whole batch starts anywhere in (from, size) of fd: then the bad bytes at from are
 * damage in the middle of the log, not the end of a batch cut short. 1, 0 or -errno.
 */
static int valid_batch_after(int fd, uint32_t salt, uint64_t from, uint64_t size)
{
    static const uint32_t magic = BATCH_MAGIC;
    char *buf = xmalloc(SCAN_CHUNK);
    char *scratch = xmalloc(SCAN_CHUNK);
    struct rec_read *r = xmalloc(sizeof(*r));
    struct replayed *rs = NULL;
    size_t cap = 0, n = 0;
    uint64_t off = from + 1, end;
    int found = 0;

    while (found == 0 && off + sizeof(struct batch_hdr) <= size) {
        size_t len = size - off < SCAN_CHUNK ? (size_t)(size - off) : SCAN_CHUNK;
        int rc = store_pread(fd, buf, len, off);
        if (rc < 0) {
            found = rc;
            break;
        }
        for (size_t i = 0; found == 0 && i + sizeof(magic) <= len; i++) {
            if (memcmp(buf + i, &magic, sizeof(magic)) != 0)
                continue;
            found = read_batch(fd, salt, off + i, size, scratch, r, &rs, &cap, &n, &end);
            for (size_t k = 0; k < n; k++)
                free(rs[k].name);
        }
        off += len > sizeof(magic) ? len - sizeof(magic) + 1 : len;
    }
    free(buf);
    free(scratch);
    free(r);
    free(rs);
    return found;
}

/* Whether an unfinished batch of this segment (its salt) starts at off. */
static bool batch_started_at(int fd, uint32_t salt, uint64_t off, uint64_t size)
{
    struct batch_hdr h;

    return size - off >= 12 && store_pread(fd, &h, 12, off) == 0 && h.magic == BATCH_MAGIC &&
           h.salt == salt;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * The ids of the segment files in dir_fd, sorted; spares (up to STORE_SPARES; more are
 * removed) go to s->spares. Other names are an error.
 */
static int list_segments(struct store *s, int dir_fd, uint32_t **ids, size_t *n, char *err)
{
    int dfd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    struct dirent *de;
    size_t cap = 0;

    *ids = NULL;
    *n = 0;
    if (d == NULL) {
        snprintf(err, STORE_ERR_LEN, "cannot list '%s': %s", STORE_DIR, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
        char *end;
        unsigned long id;

        if (de->d_name[0] == '.' || strcmp(de->d_name, STORE_CKPT_NAME) == 0)
            continue;
        if (strcmp(de->d_name, STORE_CKPT_TMP) == 0) { /* one cut short by a stop or crash */
            unlinkat(dir_fd, de->d_name, 0);
            continue;
        }
        id = strtoul(de->d_name, &end, 16);
        if (end == de->d_name + 8 && strcmp(end, SPARE_SUFFIX) == 0 && id <= UINT32_MAX - 1) {
            if (s->nspares < STORE_SPARES)
                s->spares[s->nspares++] = (uint32_t)id;
            else
                unlinkat(dir_fd, de->d_name, 0);
            if (id >= s->next_id) /* its name is not reused: a spare becomes a new id */
                s->next_id = (uint32_t)id + 1;
            continue;
        }
        if (strlen(de->d_name) != 8 + strlen(SEG_SUFFIX) || end != de->d_name + 8 ||
            strcmp(end, SEG_SUFFIX) != 0 || id > UINT32_MAX - 1) {
            snprintf(err, STORE_ERR_LEN,
                     "'%s/%s' is not a segment of the upload store: move it away", STORE_DIR,
                     de->d_name);
            closedir(d);
            free(*ids);
            *ids = NULL;
            return -1;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *ids = xrealloc(*ids, cap * sizeof(**ids));
        }
        (*ids)[(*n)++] = (uint32_t)id;
    }
    closedir(d);
    if (*n > 1)
        qsort(*ids, *n, sizeof(**ids), cmp_u32);
    return 0;
}

/* ---- the index checkpoint ---- */

/*
 * index.ckpt: a header (struct ckpt_hdr), blocks of entries (struct ckpt_block, then entries:
 * struct ckpt_ent, name, owner), then one block of the segments the entries may name (struct
 * ckpt_seg each). Every block carries the CRC-32 of its count, length and bytes, the header
 * its own: a flipped bit anywhere is found.
 *
 * It is written by the writer thread in steps between batches ("fuzzy", as PostgreSQL's
 * checkpoints are): it takes the log's end as its position P, then walks the index a few
 * thousand entries at a time while batches go on. An entry is written as it is when the walk
 * reaches it, which may be after P; any change made to it after P is in the log after P, which
 * start-up replays over the checkpoint in log order, so the last record of each name still
 * wins. The walk goes in the order of the names' keys, each step from the key after the last
 * one written: a name's key never changes, so an entry that was in the index at P is written
 * exactly once (and one made since, at most once), and a start loads the entries in order.
 *
 * The segments: the checkpoint lists every segment its entries may name (those of the log when
 * it started and those started while it was written), by id and salt. At start-up a listed
 * segment must be there with the same salt (else: stale, full replay) or be gone: compacted,
 * or dead and removed, since. Entries in a gone segment must have been replaced by the log
 * after the position, except whiteouts that compaction dropped (they hid nothing): dropped at
 * start-up too. A file left in a gone segment after the replay means a record that replaced it
 * is gone too (a deletion whose whiteout compaction dropped): the checkpoint is stale, and the
 * whole log is replayed (a deleted file never comes back). To keep that from happening,
 * compaction never compacts a segment at or after the last complete checkpoint's position:
 * it starts a newer checkpoint and waits for it, so every record after the position stays.
 */
#define CKPT_MAGIC 0x4b433153u       /* "S1CK" */
#define CKPT_BLOCK_MAGIC 0x42433153u /* "S1CB": entries */
#define CKPT_SEGS_MAGIC 0x53433153u  /* "S1CS": the segments */
#define CKPT_VERSION 1u
#define CKPT_BLOCK_BYTES (1u << 20)  /* a block's entries, at most */
#define CKPT_SEGS_MAX (1u << 20)
#define CKPT_RETRY_NS (10ull * 1000000000u) /* after a failed checkpoint */

struct ckpt_hdr {
    uint32_t magic;
    uint32_t crc;          /* CRC-32 of the rest */
    uint32_t version;
    uint32_t nsegs;        /* in the segments' block */
    uint32_t pos_seg;      /* the position: the log up to here is in the entries */
    uint32_t reserved;
    uint64_t pos_off;
    uint64_t entries;
    uint64_t last_version; /* the highest version in the log when it was completed */
    uint64_t segs_off;     /* where the segments' block starts (after the entries') */
    uint64_t created;      /* wall clock, s since the epoch */
};
_Static_assert(sizeof(struct ckpt_hdr) == 64, "checkpoint header size");

struct ckpt_block {
    uint32_t magic;
    uint32_t crc; /* CRC-32 of n, len and the len bytes that follow */
    uint32_t n;   /* entries (segments) in it */
    uint32_t len;
};
_Static_assert(sizeof(struct ckpt_block) == 16, "checkpoint block header size");

struct ckpt_ent {
    uint16_t name_len;
    uint8_t owner_len;
    uint8_t whiteout;
    uint32_t seg;  /* the segment's id */
    uint64_t rec_off, rec_len, size, version;
};
_Static_assert(sizeof(struct ckpt_ent) == 40, "checkpoint entry size");

struct ckpt_seg {
    uint32_t id;
    uint32_t salt;
    uint64_t bytes; /* its end of records then */
};
_Static_assert(sizeof(struct ckpt_seg) == 16, "checkpoint segment size");

/* A checkpoint being written (writer thread). */
struct store_ckpt {
    int fd;                 /* STORE_CKPT_TMP */
    struct ckpt_hdr h;
    /* in the order of the keys (then a start-up appends each one, cheaply) */
    bool started;           /* last is set */
    bool done;
    uint8_t *last;          /* the key of the last one written (UPINDEX_KEY_MAX) */
    uint32_t last_len;
    uint64_t records_at;    /* s->records_total at the position */
    uint64_t off;           /* where the next block goes */
    struct ckpt_seg *segs;  /* the log's segments when it started */
    size_t nsegs;
    char *buf;              /* the block being filled: its header, then n entries */
    size_t len;
    uint32_t n;
    uint64_t t0;            /* CLOCK_MONOTONIC ns when it started */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The test hook (S1_TEST_CKPT_CRASH): a SIGKILL at this point of writing a checkpoint. */
enum { CKPT_CRASH_NONE, CKPT_CRASH_STEP, CKPT_CRASH_SYNCED, CKPT_CRASH_RENAMED };

static void ckpt_crash_point(const struct store *s, int point)
{
    if (s->ckpt_crash == point)
        raise(SIGKILL);
}

static int ckpt_flush(struct store_ckpt *w, uint32_t magic)
{
    struct ckpt_block *b = (struct ckpt_block *)w->buf;
    int rc;

    b->magic = magic;
    b->n = w->n;
    b->len = (uint32_t)(w->len - sizeof(*b));
    b->crc = store_crc32(0, &b->n, w->len - offsetof(struct ckpt_block, n));
    if ((rc = pwrite_all(w->fd, w->buf, w->len, w->off)) < 0)
        return rc;
    /* start writing it back now (as PostgreSQL's checkpoint_flush_after): the fsync at the end
     * then has little left to wait for; an error shows there */
    sync_file_range(w->fd, (off_t)w->off, (off_t)w->len, SYNC_FILE_RANGE_WRITE);
    w->off += w->len;
    w->len = sizeof(*b);
    w->n = 0;
    return 0;
}

static void ckpt_drop(struct store *s)
{
    struct store_ckpt *w = s->ckpt;

    if (w == NULL)
        return;
    close(w->fd);
    unlinkat(s->dir_fd, STORE_CKPT_TMP, 0);
    free(w->segs);
    free(w->buf);
    free(w->last);
    free(w);
    s->ckpt = NULL;
}

static int ckpt_begin(struct store *s)
{
    struct store_ckpt *w;
    int fd;

    unlinkat(s->dir_fd, STORE_CKPT_TMP, 0);
    fd = openat(s->dir_fd, STORE_CKPT_TMP, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
    if (fd < 0)
        return -errno;
    w = xcalloc(1, sizeof(*w));
    w->fd = fd;
    w->h = (struct ckpt_hdr){.magic = CKPT_MAGIC,
                             .version = CKPT_VERSION,
                             .pos_seg = active(s)->id,
                             .pos_off = active(s)->bytes};
    w->records_at = s->records_total;
    w->last = xmalloc(UPINDEX_KEY_MAX);
    w->off = sizeof(struct ckpt_hdr);
    w->nsegs = s->nsegs;
    w->segs = xcalloc(s->nsegs, sizeof(*w->segs));
    for (size_t i = 0; i < s->nsegs; i++)
        w->segs[i] = (struct ckpt_seg){s->segs[i]->id, s->segs[i]->salt, s->segs[i]->bytes};
    w->buf = xmalloc(sizeof(struct ckpt_block) + CKPT_BLOCK_BYTES);
    w->len = sizeof(struct ckpt_block);
    w->t0 = mono_ns();
    s->ckpt = w;
    return 0;
}

/*
 * A segment started while it is written: entries may point into it, and it may be gone again
 * (dead, removed) before the end: it is named all the same (ids only grow: kept sorted).
 */
static void ckpt_seg_started(struct store_ckpt *w, const struct store_segment *g)
{
    w->segs = xrealloc(w->segs, (w->nsegs + 1) * sizeof(*w->segs));
    w->segs[w->nsegs++] = (struct ckpt_seg){g->id, g->salt, g->bytes};
}

/* Appends the entry of name (p: where its record lies) to the block (writing the block first
 * if it is full). */
static int ckpt_put(struct store_ckpt *w, const char *name, size_t len, const char *owner,
                    const struct store_pos *p)
{
    size_t olen = strlen(owner);
    struct ckpt_ent ce = {.name_len = (uint16_t)len,
                          .owner_len = (uint8_t)olen,
                          .whiteout = p->whiteout,
                          .seg = p->seg->id,
                          .rec_off = p->rec_off,
                          .rec_len = p->rec_len,
                          .size = p->size,
                          .version = p->version};
    size_t need = sizeof(ce) + len + olen;
    int rc;

    if (w->len + need > sizeof(struct ckpt_block) + CKPT_BLOCK_BYTES &&
        (rc = ckpt_flush(w, CKPT_BLOCK_MAGIC)) < 0)
        return rc;
    memcpy(w->buf + w->len, &ce, sizeof(ce));
    memcpy(w->buf + w->len + sizeof(ce), name, len);
    memcpy(w->buf + w->len + sizeof(ce) + len, owner, olen);
    w->len += need;
    w->n++;
    w->h.entries++;
    return 0;
}

/* Adds the segments of the log now to those it had at the start (both sorted by id). */
static void ckpt_merge_segs(struct store *s, struct store_ckpt *w)
{
    struct ckpt_seg *m = xcalloc(w->nsegs + s->nsegs, sizeof(*m));
    size_t i = 0, k = 0, n = 0;

    while (i < w->nsegs || k < s->nsegs) {
        if (k == s->nsegs || (i < w->nsegs && w->segs[i].id < s->segs[k]->id)) {
            m[n++] = w->segs[i++];
            continue;
        }
        if (i < w->nsegs && w->segs[i].id == s->segs[k]->id)
            i++;
        m[n++] = (struct ckpt_seg){s->segs[k]->id, s->segs[k]->salt, s->segs[k]->bytes};
        k++;
    }
    free(w->segs);
    w->segs = m;
    w->nsegs = n;
}

/* Writes the segments, the header, makes it durable and puts it in place. */
static int ckpt_end(struct store *s)
{
    struct store_ckpt *w = s->ckpt;
    struct timespec now;
    int rc;

    if (w->n > 0 && (rc = ckpt_flush(w, CKPT_BLOCK_MAGIC)) < 0)
        return rc;
    ckpt_merge_segs(s, w);
    w->h.segs_off = w->off;
    w->h.nsegs = (uint32_t)w->nsegs;
    for (size_t i = 0; i < w->nsegs; i++) {
        if (w->len + sizeof(w->segs[i]) > sizeof(struct ckpt_block) + CKPT_BLOCK_BYTES) {
            w->n = 0; /* more segments than a block holds: not a checkpoint to write */
            return -EFBIG;
        }
        memcpy(w->buf + w->len, &w->segs[i], sizeof(w->segs[i]));
        w->len += sizeof(w->segs[i]);
        w->n++;
    }
    if ((rc = ckpt_flush(w, CKPT_SEGS_MAGIC)) < 0)
        return rc;
    clock_gettime(CLOCK_REALTIME, &now);
    w->h.last_version = s->last_version;
    w->h.created = (uint64_t)now.tv_sec;
    w->h.crc = store_crc32(0, (const char *)&w->h + 8, sizeof(w->h) - 8);
    if ((rc = pwrite_all(w->fd, &w->h, sizeof(w->h), 0)) < 0)
        return rc;
    if (fsync(w->fd) < 0)
        return -errno;
    ckpt_crash_point(s, CKPT_CRASH_SYNCED);
    if (renameat(s->dir_fd, STORE_CKPT_TMP, s->dir_fd, STORE_CKPT_NAME) < 0)
        return -errno;
    ckpt_crash_point(s, CKPT_CRASH_RENAMED);
    /* (in place now: even if this fails, it is the newest complete one) */
    s->ckpt_have = true;
    s->ckpt_seg = w->h.pos_seg;
    s->ckpt_off = w->h.pos_off;
    s->ckpt_records = w->records_at;
    s->ckpt_due = false;
    __atomic_store_n(&s->ckpt_unix, w->h.created, __ATOMIC_RELAXED);
    __atomic_store_n(&s->ckpt_entries, w->h.entries, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->ckpts, 1, __ATOMIC_RELAXED);
    log_debug("store: checkpoint of %llu entries at seg %u off %llu written in %llu ms",
              (unsigned long long)w->h.entries, w->h.pos_seg,
              (unsigned long long)w->h.pos_off,
              (unsigned long long)((mono_ns() - w->t0) / 1000000u));
    if (fsync(s->dir_fd) < 0)
        return -errno;
    return 0;
}

/* Writes the next max entries (0: all), from the key after the last written. 1 when done. */
static int ckpt_step(struct store *s, size_t max)
{
    struct store_ckpt *w = s->ckpt;
    struct upindex_iter *it = xmalloc(sizeof(*it));
    char name[STORE_NAME_MAX + 1];
    struct store_pos p;
    struct upval v;
    size_t done = 0;
    bool more = true;
    int rc = 0;

    upindex_seek(&s->index, w->last, w->started ? w->last_len : 0, it);
    while ((max == 0 || done < max) && (more = upindex_next(it, &v))) {
        size_t len;
        if (w->started && it->klen == w->last_len && memcmp(it->key, w->last, it->klen) == 0)
            continue; /* (the last one written) */
        len = key_name(it->key, it->klen, name);
        pos_of(s, len, &v, &p);
        if ((rc = ckpt_put(w, name, len, s->owner_ids[v.owner]->name, &p)) < 0)
            break;
        done++;
        memcpy(w->last, it->key, it->klen);
        w->last_len = it->klen;
        w->started = true;
    }
    free(it);
    if (rc < 0)
        return rc;
    w->done = !more;
    return w->done ? 1 : 0;
}

/* Log (bytes, records) since the last complete checkpoint's position (all: if none). */
static bool ckpt_is_due(struct store *s)
{
    uint64_t bytes = 0;

    if (s->ckpt_due)
        return true;
    for (size_t i = 0; i < s->nsegs; i++) {
        const struct store_segment *g = s->segs[i];
        if (s->ckpt_have && g->id < s->ckpt_seg)
            continue;
        bytes += g->bytes - (s->ckpt_have && g->id == s->ckpt_seg
                                 ? (s->ckpt_off < g->bytes ? s->ckpt_off : g->bytes)
                                 : 0);
    }
    return bytes >= s->ckpt_every_bytes ||
           s->records_total - (s->ckpt_have ? s->ckpt_records : 0) >= s->ckpt_every_records;
}

bool store_checkpoint_pending(struct store *s)
{
    return s->ckpt != NULL || (!s->in_batch && mono_ns() >= s->ckpt_retry && ckpt_is_due(s));
}

/*
 * After a checkpoint could not be written: the last complete one (if any) is removed, so that
 * compaction is not held back by it (a full disk needs compaction), and start-up replays the
 * whole log until the next one is written.
 */
static void ckpt_failed(struct store *s, int rc)
{
    ckpt_drop(s);
    log_error("store: cannot write the index checkpoint: %s; the next start replays the "
              "whole log until one is written", strerror(-rc));
    if (s->ckpt_have && unlinkat(s->dir_fd, STORE_CKPT_NAME, 0) == 0)
        fsync(s->dir_fd);
    s->ckpt_have = false;
    s->ckpt_due = false;
    s->ckpt_retry = mono_ns() + CKPT_RETRY_NS;
}

int store_checkpoint(struct store *s, bool finish)
{
    int rc;

    if (s->in_batch || s->stage_niov > 0 || s->nsegs == 0) {
        ckpt_drop(s); /* (only between batches: a caller's mistake; never spin on it) */
        return 0;
    }
    if (s->ckpt == NULL) {
        if (finish ? s->ckpt_have && s->ckpt_seg == active(s)->id &&
                         s->ckpt_off == active(s)->bytes
                   : mono_ns() < s->ckpt_retry || !ckpt_is_due(s))
            return 0;
        if ((rc = ckpt_begin(s)) < 0) {
            s->ckpt = NULL;
            ckpt_failed(s, rc);
            return rc;
        }
    }
    rc = ckpt_step(s, finish ? 0 : s->ckpt_step);
    if (s->ckpt->off > sizeof(struct ckpt_hdr))
        ckpt_crash_point(s, CKPT_CRASH_STEP);
    if (rc > 0)
        rc = ckpt_end(s);
    if (rc < 0) {
        ckpt_failed(s, rc);
        return rc;
    }
    if (s->ckpt != NULL && s->ckpt->done) {
        ckpt_drop(s); /* (done: the file is in place) */
        return 1;
    }
    return 0;
}

/* ---- start-up: the checkpoint, then the log ---- */

#define CKPT_BLOCK_ENTRIES_MAX (CKPT_BLOCK_BYTES / (sizeof(struct ckpt_ent) + 1))

/* Entries of one block (len bytes at p) into the index; false (why set) if one is bad. */
static bool ckpt_load_block(struct store *s, const char *p, size_t len, uint32_t n,
                            const struct ckpt_hdr *h, const struct ckpt_seg *segs,
                            struct store_segment **segp, const uint64_t *sizes, char *why,
                            size_t whylen)
{
    size_t off = 0;

    for (uint32_t k = 0; k < n; k++) {
        struct ckpt_ent ce;
        char owner[STORE_OWNER_MAX + 1];
        const char *name;
        struct store_pos pos;
        size_t lo = 0, hi = h->nsegs;
        ssize_t gi;

        if (len - off < sizeof(ce))
            goto bad;
        memcpy(&ce, p + off, sizeof(ce));
        off += sizeof(ce);
        if (ce.name_len == 0 || ce.name_len > STORE_NAME_MAX || ce.owner_len > STORE_OWNER_MAX ||
            ce.whiteout > 1 || len - off < (size_t)ce.name_len + ce.owner_len ||
            (ce.whiteout && (ce.size != 0 || ce.owner_len != 0 || ce.version != 0)) ||
            ce.size > ce.rec_len ||
            ce.rec_len - ce.size != rec_head(ce.name_len, ce.owner_len, ce.version) ||
            ce.rec_off < sizeof(struct seg_hdr) || ce.rec_len > UINT64_MAX - ce.rec_off)
            goto bad; /* (a record laid out otherwise than the index would find it) */
        name = p + off;
        memcpy(owner, p + off + ce.name_len, ce.owner_len);
        owner[ce.owner_len] = '\0';
        off += (size_t)ce.name_len + ce.owner_len;
        if (memchr(name, '\0', ce.name_len) != NULL || strlen(owner) != ce.owner_len)
            goto bad;
        while (lo < hi) { /* its segment in the checkpoint's (sorted) */
            size_t mid = lo + (hi - lo) / 2;
            if (segs[mid].id < ce.seg)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == h->nsegs || segs[lo].id != ce.seg) {
            snprintf(why, whylen, "an entry names segment %08x, which it does not list", ce.seg);
            return false;
        }
        gi = seg_index(s, ce.seg);
        if (gi >= 0 && ce.rec_off + ce.rec_len > sizes[gi]) {
            snprintf(why, whylen, "an entry lies beyond the end of segment %08x", ce.seg);
            return false;
        }
        pos = (struct store_pos){.seg = segp[lo],
                                 .rec_off = ce.rec_off,
                                 .rec_len = ce.rec_len,
                                 .data_off = ce.rec_off + ce.rec_len - ce.size,
                                 .size = ce.size,
                                 .version = ce.version,
                                 .whiteout = ce.whiteout != 0};
        index_set(s, name, ce.name_len, owner, &pos);
    }
    if (off == len)
        return true;
bad:
    snprintf(why, whylen, "a bad entry (the checksums matched: written wrong)");
    return false;
}

/*
 * Loads index.ckpt into the (empty) index: true, with the replay's start (the segment index
 * *from_i, at *from_off) and the segments it names that are gone (gone), or false with why
 * (the index may hold some of it then: the caller empties it).
 */
static bool ckpt_load(struct store *s, const uint64_t *sizes, const bool *restarted,
                      struct store_recovery *rec, size_t *from_i, uint64_t *from_off,
                      char *why, size_t whylen)
{
    struct ckpt_hdr h;
    struct ckpt_block b;
    struct ckpt_seg *segs = NULL;
    struct store_segment **segp = NULL;
    char *buf = NULL;
    uint64_t off, loaded = 0;
    struct stat st;
    bool ok = false;
    int fd, rc;

    fd = openat(s->dir_fd, STORE_CKPT_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        snprintf(why, whylen, "there is none");
        return false;
    }
    if (fd < 0) {
        snprintf(why, whylen, "cannot open it: %s", strerror(errno));
        return false;
    }
    rc = fstat(fd, &st) < 0 ? -errno : store_pread(fd, &h, sizeof(h), 0);
    if (rc < 0) {
        snprintf(why, whylen, "cannot read it: %s", strerror(-rc));
        goto out;
    }
    if (h.magic != CKPT_MAGIC || h.crc != store_crc32(0, (const char *)&h + 8, sizeof(h) - 8) ||
        h.version != CKPT_VERSION || h.nsegs == 0 || h.nsegs > CKPT_SEGS_MAX ||
        h.segs_off < sizeof(h) || h.segs_off > (uint64_t)st.st_size ||
        (uint64_t)st.st_size - h.segs_off != sizeof(b) + (uint64_t)h.nsegs * sizeof(*segs)) {
        snprintf(why, whylen, "its header is damaged or it is cut short");
        goto out;
    }
    /* the segments: each one there with the same salt, or gone; no other segment older */
    segs = xmalloc((size_t)h.nsegs * sizeof(*segs));
    segp = xcalloc(h.nsegs, sizeof(*segp));
    if (store_pread(fd, &b, sizeof(b), h.segs_off) < 0 ||
        store_pread(fd, segs, (size_t)h.nsegs * sizeof(*segs), h.segs_off + sizeof(b)) < 0 ||
        b.magic != CKPT_SEGS_MAGIC || b.n != h.nsegs || b.len != h.nsegs * sizeof(*segs) ||
        b.crc != store_crc32(store_crc32(0, &b.n, 8), segs, b.len)) {
        snprintf(why, whylen, "its list of segments is damaged");
        goto out;
    }
    for (uint32_t i = 0; i < h.nsegs; i++) {
        ssize_t gi = seg_index(s, segs[i].id);
        if (i > 0 && segs[i].id <= segs[i - 1].id) {
            snprintf(why, whylen, "its list of segments is damaged");
            goto out;
        }
        if (gi < 0) { /* gone since: compacted, or dead and removed */
            struct store_segment *g = xcalloc(1, sizeof(*g));
            g->id = segs[i].id;
            g->salt = segs[i].salt;
            g->fd = -1;
            s->gone = xrealloc(s->gone, (s->ngone + 1) * sizeof(*s->gone));
            s->gone[s->ngone++] = g;
            segp[i] = g;
            continue;
        }
        if (s->segs[gi]->salt != segs[i].salt || restarted[gi]) {
            snprintf(why, whylen, "stale: segment %08x was started anew since", segs[i].id);
            goto out;
        }
        if (segs[i].id < h.pos_seg && sizes[gi] < segs[i].bytes) {
            snprintf(why, whylen, "stale: segment %08x is shorter than it says", segs[i].id);
            goto out;
        }
        if (segs[i].id == h.pos_seg && sizes[gi] < h.pos_off) {
            snprintf(why, whylen, "stale: segment %08x ends before its position", segs[i].id);
            goto out;
        }
        segp[i] = s->segs[gi];
        if (segs[i].id < h.pos_seg)
            s->segs[gi]->bytes = segs[i].bytes; /* (not replayed) */
    }
    for (size_t i = 0; i < s->nsegs; i++) {
        uint32_t id = s->segs[i]->id;
        size_t k = 0;
        while (k < h.nsegs && segs[k].id != id)
            k++;
        if (k == h.nsegs && id <= segs[h.nsegs - 1].id) {
            snprintf(why, whylen, "stale: segment %08x is not one it knows", id);
            goto out;
        }
    }
    /* the entries, block by block */
    buf = xmalloc(CKPT_BLOCK_BYTES);
    for (off = sizeof(h); off < h.segs_off;) {
        if (h.segs_off - off < sizeof(b) || store_pread(fd, &b, sizeof(b), off) < 0 ||
            b.magic != CKPT_BLOCK_MAGIC || b.len > CKPT_BLOCK_BYTES ||
            b.len > h.segs_off - off - sizeof(b) ||
            store_pread(fd, buf, b.len, off + sizeof(b)) < 0 ||
            b.crc != store_crc32(store_crc32(0, &b.n, 8), buf, b.len)) {
            snprintf(why, whylen, "damaged at offset %llu", (unsigned long long)off);
            goto out;
        }
        if (b.n > CKPT_BLOCK_ENTRIES_MAX) {
            snprintf(why, whylen, "damaged at offset %llu", (unsigned long long)off);
            goto out;
        }
        if (!ckpt_load_block(s, buf, b.len, b.n, &h, segs, segp, sizes, why, whylen))
            goto out;
        loaded += b.n;
        off += sizeof(b) + b.len;
    }
    if (loaded != h.entries) {
        snprintf(why, whylen, "damaged: %llu entries instead of %llu",
                 (unsigned long long)loaded, (unsigned long long)h.entries);
        goto out;
    }
    /* the replay's start: its position, or the first segment after it if that one is gone */
    for (*from_i = 0; *from_i < s->nsegs && s->segs[*from_i]->id < h.pos_seg; (*from_i)++)
        ;
    *from_off = *from_i < s->nsegs && s->segs[*from_i]->id == h.pos_seg
                    ? h.pos_off
                    : sizeof(struct seg_hdr);
    if (h.last_version > s->last_version)
        s->last_version = h.last_version;
    rec->ckpt_entries = h.entries;
    rec->ckpt_seg = h.pos_seg;
    rec->ckpt_off = h.pos_off;
    s->ckpt_have = true;
    s->ckpt_seg = h.pos_seg;
    s->ckpt_off = h.pos_off;
    s->ckpt_unix = h.created;
    s->ckpt_entries = h.entries;
    ok = true;
out:
    close(fd);
    free(buf);
    free(segs);
    free(segp);
    return ok;
}

/*
 * After the replay over a checkpoint: entries still in a segment that is gone. A whiteout
 * there was dropped by compaction (it hid nothing): dropped here too. A file there means the
 * checkpoint is stale: false, why set.
 */
static bool ckpt_settle_gone(struct store *s, char *why, size_t whylen)
{
    struct upindex_iter *it;
    uint8_t key[UPINDEX_KEY_MAX];
    char name[STORE_NAME_MAX + 1];
    struct upval v;
    bool ok = true;

    if (s->ngone == 0)
        return true;
    it = xmalloc(sizeof(*it));
    upindex_seek(&s->index, NULL, 0, it);
    while (upindex_next(it, &v)) {
        size_t k = 0, klen = it->klen;
        while (k < s->ngone && s->gone[k]->id != v.seg)
            k++;
        if (k == s->ngone)
            continue;
        if (!(v.flags & UPVAL_WHITEOUT)) {
            key_name(it->key, it->klen, name);
            snprintf(why, whylen, "stale: '%.80s' is in segment %08x, which is gone", name,
                     v.seg);
            ok = false;
            break;
        }
        /* dropped, and the walk goes on from the key after it (a change ends a walk) */
        memcpy(key, it->key, klen);
        index_drop_key(s, key, klen, key_name(key, klen, name));
        upindex_seek(&s->index, key, klen, it);
    }
    free(it);
    return ok;
}

static void ckpt_gone_free(struct store *s)
{
    for (size_t k = 0; k < s->ngone; k++)
        free(s->gone[k]);
    free(s->gone);
    s->gone = NULL;
    s->ngone = 0;
}

/* Frees every entry and owner of the index (the owners' table stays, emptied). */
static void index_free(struct store *s)
{
    upindex_release(&s->index);
    upindex_release(&s->order);
    for (size_t i = 0; i < s->nowner_buckets; i++) {
        struct store_owner *o = s->owners[i];
        while (o != NULL) {
            struct store_owner *next = o->next;
            free(o);
            o = next;
        }
        s->owners[i] = NULL;
    }
    free(s->owner_ids);
    s->owner_ids = NULL;
    s->nowners = 0;
}

/* Empties the index (after a checkpoint that could not be used). */
static void index_reset(struct store *s)
{
    index_free(s);
    upindex_init(&s->index);
    upindex_init(&s->order);
    owner_get(s, ""); /* (number 0) */
    s->nwhiteouts = 0;
    s->data_bytes = 0;
    s->last_version = 0;
    s->ckpt_have = false;
    s->ckpt_unix = s->ckpt_entries = 0;
    for (size_t i = 0; i < s->nsegs; i++) {
        s->segs[i]->live = 0;
        s->segs[i]->bytes = sizeof(struct seg_hdr);
    }
}

/*
 * Replays segment i from offset from (size bytes in the file) and judges what follows its last
 * whole batch. 0, or -1 with err.
 */
static int replay_segment(struct store *s, size_t i, uint64_t from, uint64_t size,
                          struct store_recovery *rec, char *err)
{
    struct store_segment *g = s->segs[i];
    char name[32];
    int64_t end;
    int rc;

    seg_name(g->id, name, sizeof(name));
    end = replay(s, g, from, size, &rec->records);
    if (end < 0) {
        snprintf(err, STORE_ERR_LEN, "cannot read '%s/%s': %s", STORE_DIR, name,
                 strerror((int)-end));
        return -1;
    }
    g->bytes = (uint64_t)end;
    if ((uint64_t)end == size)
        return 0;
    /* after the last whole batch: a batch cut short (never acknowledged), or the old
     * contents of a reused segment; but a whole batch further on means the bad bytes are
     * damage to acknowledged ones, and going on would lose that batch */
    rc = valid_batch_after(g->fd, g->salt, (uint64_t)end, size);
    if (rc != 0) {
        snprintf(err, STORE_ERR_LEN,
                 rc > 0 ? "'%s/%s' is damaged at offset %lld and whole batches follow: "
                          "refusing to cut them off (move the store away to start empty)"
                        : "cannot read '%s/%s' after offset %lld",
                 STORE_DIR, name, (long long)end);
        return -1;
    }
    if (i + 1 == s->nsegs && batch_started_at(g->fd, g->salt, (uint64_t)end, size))
        rec->torn_bytes = size - (uint64_t)end;
    /* nothing is cut off: the next batch is written over it, and neither it nor what
     * follows can pass for a batch of this segment */
    return 0;
}

int store_open(struct store *s, int root_fd, uint64_t segment_bytes, unsigned flags,
               struct store_recovery *rec, char *err)
{
    uint32_t *ids = NULL;
    size_t nids = 0, from_i = 0;
    uint64_t *sizes = NULL, from_off = sizeof(struct seg_hdr), t0 = mono_ns();
    bool *restarted = NULL;
    const char *crash = getenv("S1_TEST_CKPT_CRASH");

    memset(s, 0, sizeof(*s));
    memset(rec, 0, sizeof(*rec));
    s->root_fd = root_fd;
    s->dir_fd = -1;
    s->segment_bytes = segment_bytes;
    s->pending_version = UINT64_MAX;
    s->by_owner = (flags & STORE_ORDER_BY_OWNER) != 0;
    s->ckpt_every_bytes = STORE_CKPT_BYTES;
    s->ckpt_every_records = STORE_CKPT_RECORDS;
    s->ckpt_step = STORE_CKPT_STEP;
    if (crash != NULL) /* test hook: see ckpt_crash_point */
        s->ckpt_crash = strcmp(crash, "step") == 0      ? CKPT_CRASH_STEP
                        : strcmp(crash, "synced") == 0  ? CKPT_CRASH_SYNCED
                        : strcmp(crash, "renamed") == 0 ? CKPT_CRASH_RENAMED
                                                        : CKPT_CRASH_NONE;
    upindex_init(&s->index);
    upindex_init(&s->order);
    s->nowner_buckets = 64;
    s->owners = xcalloc(s->nowner_buckets, sizeof(*s->owners));
    owner_get(s, ""); /* (number 0) */
    s->stage_hdrs = xcalloc(STORE_STAGE_RECORDS, sizeof(struct rec_hdr_v));
    s->stage_iov = xcalloc(STORE_STAGE_RECORDS * 4, sizeof(*s->stage_iov));
    pthread_rwlock_init(&s->lock, NULL);
    if (mkdirat(root_fd, STORE_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(err, STORE_ERR_LEN, "cannot create '%s' under --root: %s (or use --read-only)",
                 STORE_DIR, strerror(errno));
        goto fail;
    }
    s->dir_fd = openat(root_fd, STORE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->dir_fd < 0) {
        snprintf(err, STORE_ERR_LEN, "cannot open '%s' under --root: %s", STORE_DIR,
                 strerror(errno));
        goto fail;
    }
    if (fsync(root_fd) < 0) { /* the store directory itself must survive a crash */
        snprintf(err, STORE_ERR_LEN, "cannot fsync --root: %s", strerror(errno));
        goto fail;
    }
    if (list_segments(s, s->dir_fd, &ids, &nids, err) < 0)
        goto fail;
    sizes = xcalloc(nids + 1, sizeof(*sizes));
    restarted = xcalloc(nids + 1, sizeof(*restarted));
    for (size_t i = 0; i < nids; i++) {
        char name[32];
        struct stat st;
        struct store_segment *g;
        int fd, rc;

        seg_name(ids[i], name, sizeof(name));
        fd = openat(s->dir_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            snprintf(err, STORE_ERR_LEN, "cannot open '%s/%s': %s", STORE_DIR, name,
                     fd < 0 ? strerror(errno) : "not a regular file");
            if (fd >= 0)
                close(fd);
            goto fail;
        }
        g = seg_add(s, ids[i], fd, sizeof(struct seg_hdr));
        sizes[i] = (uint64_t)st.st_size;
        rc = seg_read_hdr(fd, ids[i], &g->salt);
        if (rc < 0) {
            snprintf(err, STORE_ERR_LEN, "cannot read '%s/%s': %s", STORE_DIR, name,
                     strerror(-rc));
            goto fail;
        }
        if (rc == 0 && i + 1 < nids) {
            snprintf(err, STORE_ERR_LEN,
                     "'%s/%s' has no valid segment header but later segments exist: refusing "
                     "to guess (move the store away to start empty)",
                     STORE_DIR, name);
            goto fail;
        }
        if (rc == 0) {
            /* the crash came while this segment was being started: nothing in it was ever
             * acknowledged */
            int64_t salt = seg_init(fd, ids[i]);
            if (salt < 0) {
                snprintf(err, STORE_ERR_LEN, "cannot start '%s/%s' anew: %s", STORE_DIR, name,
                         strerror((int)-salt));
                goto fail;
            }
            g->salt = (uint32_t)salt;
            restarted[i] = true;
            rec->restarted++;
        }
    }
    free(ids);
    ids = NULL;
    /* the checkpoint and the log after its position; the whole log if it cannot be used */
    rec->ckpt_loaded = ckpt_load(s, sizes, restarted, rec, &from_i, &from_off, rec->ckpt_why,
                                 sizeof(rec->ckpt_why));
    if (!rec->ckpt_loaded)
        index_reset(s); /* (it may have loaded part of one) */
    for (;;) {
        for (size_t i = from_i; i < s->nsegs; i++) {
            if (!restarted[i] &&
                replay_segment(s, i, i == from_i ? from_off : sizeof(struct seg_hdr), sizes[i],
                               rec, err) < 0)
                goto fail;
        }
        if (!rec->ckpt_loaded ||
            ckpt_settle_gone(s, rec->ckpt_why, sizeof(rec->ckpt_why)))
            break;
        /* a stale checkpoint: never trusted over the log */
        rec->ckpt_loaded = false;
        rec->records = rec->torn_bytes = 0;
        index_reset(s);
        from_i = 0;
        from_off = sizeof(struct seg_hdr);
    }
    ckpt_gone_free(s);
    free(sizes);
    free(restarted);
    sizes = NULL;
    restarted = NULL;
    rec->segments = (unsigned)s->nsegs;
    if (s->nsegs == 0) {
        int rc = seg_create(s);
        if (rc < 0) {
            snprintf(err, STORE_ERR_LEN, "cannot create a segment in '%s': %s", STORE_DIR,
                     strerror(-rc));
            goto fail;
        }
    }
    s->records_total = rec->records;
    s->ckpt_records = 0; /* (what was replayed came after the checkpoint's position) */
    rec->whiteouts = s->nwhiteouts;
    rec->files = s->index.count - s->nwhiteouts;
    rec->ms = (mono_ns() - t0) / 1000000u;
    s->opened = true;
    return 0;

fail:
    ckpt_gone_free(s);
    free(ids);
    free(sizes);
    free(restarted);
    store_close(s);
    return -1;
}

void store_close(struct store *s)
{
    if (s->owners == NULL)
        return;
    if (s->opened) {
        /* a clean stop: a checkpoint at the log's end, so that the next start replays nothing
         * (one being written has an older position: dropped for a new one) */
        uint64_t t0 = mono_ns();
        int rc;
        ckpt_drop(s);
        rc = store_checkpoint(s, true);
        if (rc > 0)
            log_info("store: checkpoint of %llu entries at seg %u off %llu written in %llu ms",
                     (unsigned long long)s->ckpt_entries, s->ckpt_seg,
                     (unsigned long long)s->ckpt_off,
                     (unsigned long long)((mono_ns() - t0) / 1000000u));
        s->opened = false;
    }
    ckpt_drop(s);
    index_free(s);
    free(s->owners);
    s->owners = NULL;
    free(s->stage_hdrs);
    free(s->stage_iov);
    s->stage_hdrs = NULL;
    s->stage_iov = NULL;
    for (size_t i = 0; i < s->nsegs; i++) {
        close(s->segs[i]->fd);
        free(s->segs[i]);
    }
    free(s->segs);
    s->segs = NULL;
    s->nsegs = 0;
    while (s->zombies != NULL) { /* (no response is being sent any more) */
        struct store_segment *g = s->zombies;
        s->zombies = g->next_zombie;
        free(g);
    }
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->dir_fd = -1;
    pthread_rwlock_destroy(&s->lock);
}
