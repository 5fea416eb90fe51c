/*
 * store.h - the upload store: every PUT and DELETE is a record appended to a log of segment
 * files under <root>/.s1store, and an in-memory index maps each name to its newest version.
 *
 * DESIGN: one flush makes a whole group of writes durable: the committer thread appends the
 * records of a batch to the active segment (store_append_*), calls store_sync once (one
 * fdatasync of one file: no file creation, rename or directory flush per upload), and only then
 * publishes the new versions in the index (store_publish) and answers. Readers (any worker)
 * look a name up under a read lock and get a dup'd descriptor of the segment, the offset and
 * size of the bytes, and a pin (store_lookup); the descriptor keeps the bytes alive even if the
 * segment is deleted by a later compaction, and the pin keeps the file from being reused, so a
 * response always finishes on the version it started with.
 *
 * A segment: a header (magic, id, random salt), then batches. A batch: a header (magic,
 * salt, record count, length, CRC-32), then its records. A record: header (magic, CRC-32 of
 * everything after the CRC, op, lengths, salt), for a PUT its version (8 bytes: see
 * store_next_version), name, owner, data. (PUT records written before versions existed have
 * none; they are read as version 0, unknown.) Start-up (store_open)
 * loads the index checkpoint (index.ckpt, store_checkpoint: the index as of a log position)
 * and replays the log after its position; without a usable one (none, damaged, stale) it
 * reads every segment in order and rebuilds the index from its whole batches. Either way the
 * last record of a name wins; a DELETE leaves a whiteout, which also hides an operator's file
 * of that name. A batch cut short by a crash (never acknowledged: any of its pages may be
 * missing) ends the log and is written over; a whole batch after a broken one means damage to
 * acknowledged data, and stops the start rather than lose it (in the log that is replayed:
 * the log before a checkpoint's position is not read again at start).
 *
 * Segments: the active one takes appends until it holds STORE_SEGMENT_BYTES, then a new one
 * is started. Compaction (store_compact, committer thread) rewrites the oldest segment's live
 * records at the end of the log in bounded steps, syncing and repointing the index after each,
 * and deletes the segment when nothing in it is live, while the sealed segments hold more than
 * twice their live bytes; a segment with nothing live left is deleted without copying. A
 * deleted segment nobody reads is kept as a spare (up to STORE_SPARES) and reused for the next
 * segment, under a new random salt that every record carries: its blocks are allocated and its
 * size set, so flushing records written over it has no metadata to write, and deleting it does
 * not free (and, with -o discard, synchronously discard) 64 MiB on the committer's time.
 *
 * Thread-safety: store_lookup and store_stats from any thread; everything else from one
 * thread at a time (the committer, or main before the workers start / after they stop).
 */
#ifndef S1_STORE_H
#define S1_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "upindex.h"

#define STORE_DIR ".s1store"
#define STORE_SEGMENT_BYTES (64ull << 20) /* server1's segment size */
#define STORE_OWNER_MAX 64                /* bytes in an owner name (= ACCOUNT_USER_MAX) */
#define STORE_NAME_MAX 1024               /* bytes in a name (= FILES_NAME_MAX) */
#define STORE_ERR_LEN 1600
#define STORE_STAGE_RECORDS 256           /* records written by one pwritev, at most */
#define STORE_SPARES 2                    /* dead segments kept for reuse */
#define STORE_SEG_HDR_BYTES 32            /* a segment's header; its batches follow */
#define STORE_BATCH_HDR_BYTES 32          /* a batch's header; its records follow */
#define STORE_REC_HDR_BYTES 24            /* a record's header; name, owner, data follow */
#define STORE_CKPT_NAME "index.ckpt"      /* the index checkpoint, in STORE_DIR */
#define STORE_CKPT_TMP "index.ckpt.tmp"   /* ... while it is written */
/*
 * A checkpoint after this much log since the last one's position, or this many records: what a
 * start after a crash replays, at most (plus what comes while the next one is written). 250 k
 * records replay in about 1 s (3.7 us each, measured); a start from a checkpoint of 10 M
 * entries takes 9 s: with them, 10 s after a crash.
 */
#define STORE_CKPT_BYTES (256ull << 20)
#define STORE_CKPT_RECORDS 250000ull
#define STORE_CKPT_STEP 32768             /* entries written by one store_checkpoint call */

#define STORE_ORDER_BY_OWNER 1u /* store_open: a listing shows one owner's uploads */

struct store_segment;
struct store_entry;
struct store_owner;

struct store {
    int root_fd;
    int dir_fd;                      /* <root>/.s1store */
    /* lock guards the index, the owners and every segment's live count and fd while readers
     * look up; the segment list is changed by the one writer thread under the write lock too */
    pthread_rwlock_t lock;
    struct upindex index;            /* each name's newest record */
    /* the live files of plain names (store.c), by owner first with STORE_ORDER_BY_OWNER: what
     * a listing walks (no deletion, no other owner's upload in its way) */
    struct upindex order;
    size_t nwhiteouts;               /* entries that are whiteouts */
    bool by_owner;                   /* STORE_ORDER_BY_OWNER */
    /* bytes of live uploads (their data), in total and per owner: what quotas judge */
    uint64_t data_bytes;
    struct store_owner **owners;     /* by name */
    size_t nowner_buckets;           /* a power of two */
    struct store_owner **owner_ids;  /* by number (the index's values name them so) */
    size_t nowners;                  /* owners ever seen since the index was built */
    struct store_segment **gone;     /* (while a checkpoint loads) segments gone since it */
    size_t ngone;
    struct store_segment **segs;     /* oldest first; the last one is active */
    size_t nsegs, segs_cap;
    uint32_t next_id;
    uint32_t spares[STORE_SPARES];   /* ids of the dead segments kept for reuse (writer) */
    unsigned nspares;
    struct store_segment *zombies;   /* removed but still pinned by a reader (writer) */
    uint64_t compactions;            /* segments compacted away (writer thread) */
    uint64_t reused;                 /* segments started in a spare (writer thread) */
    uint64_t nzombies;               /* segments on zombies (atomic: read by store_stats) */
    uint64_t segment_bytes;          /* a segment is sealed once it holds this much */
    /* records appended from memory but not yet written (writer thread): one pwritev for the
     * lot in store_sync */
    void *stage_hdrs;                /* STORE_STAGE_RECORDS record headers */
    struct iovec *stage_iov;         /* 4 per record: header, name, owner, data */
    int stage_nrec, stage_niov;
    uint64_t stage_off;              /* where the first staged record goes */
    bool in_batch;                   /* records appended since the last store_sync */
    uint64_t batch_off;              /* where their batch header goes */
    uint32_t batch_nrec;
    uint64_t last_version;           /* the highest version in the log (writer thread) */
    /* the first version handed out (store_next_version) since the last store_settle,
     * UINT64_MAX if none: a change that may still become visible (written under lock) */
    uint64_t pending_version;
    /* the index checkpoint (writer thread; see store_checkpoint) */
    struct store_ckpt *ckpt;         /* the one being written, NULL if none */
    bool ckpt_have;                  /* a complete one is on disk ... */
    uint32_t ckpt_seg;               /* ... whose position is this segment ... */
    uint64_t ckpt_off;               /* ... at this offset */
    uint64_t ckpt_records;           /* records_total at its position */
    uint64_t records_total;          /* records appended since open (and replayed at open) */
    bool ckpt_due;                   /* start one at the next store_checkpoint */
    bool opened;                     /* store_open succeeded: store_close writes one */
    int ckpt_crash;                  /* test hook: SIGKILL at this point of writing one */
    uint64_t ckpt_retry;             /* after a failed one: no new one before (monotonic ns) */
    /* when one is due and how much one step writes: STORE_CKPT_BYTES, STORE_CKPT_RECORDS and
     * STORE_CKPT_STEP after store_open (tests set smaller ones) */
    uint64_t ckpt_every_bytes, ckpt_every_records;
    size_t ckpt_step;
    /* the last complete checkpoint (atomic: read by store_stats) */
    uint64_t ckpt_unix;              /* its time (s since the epoch), 0 if none yet */
    uint64_t ckpt_entries;
    uint64_t ckpts;                  /* written since open */
};

/* Where a record's data lies: set by store_append_*, passed on to store_publish. */
struct store_pos {
    struct store_segment *seg;
    uint64_t rec_off, rec_len;       /* the whole record */
    uint64_t data_off;               /* its data */
    uint64_t size;
    uint64_t version;                /* a PUT's version (store_next_version), 0 if unknown */
    bool whiteout;                   /* a DELETE */
};

/*
 * A body to store: len bytes, either in mem or (mem == NULL) at offset off of fd; data_crc is
 * their CRC-32 (store_crc32) if has_crc, else the store computes it. version: what the record
 * says its version is (store_next_version for a new one, the old one for a copy); 0 for none.
 */
struct store_body {
    const void *mem;
    int fd;
    uint64_t off;
    uint64_t len;
    bool has_crc;
    uint32_t data_crc;
    uint64_t version;
};

/* What start-up found. */
struct store_recovery {
    unsigned segments;
    uint64_t records;
    uint64_t files;                  /* live uploaded files after replay */
    uint64_t whiteouts;
    uint64_t torn_bytes;             /* an unfinished batch at the end of the log (ignored,
                                        then written over) */
    unsigned restarted;              /* last segments started anew (crash while starting it) */
    /* the index checkpoint: loaded (then only the log after its position was replayed), or
     * why not (then the whole log was) */
    bool ckpt_loaded;
    uint64_t ckpt_entries;
    uint32_t ckpt_seg;
    uint64_t ckpt_off;
    char ckpt_why[160];              /* with !ckpt_loaded: why (missing, damaged, stale) */
    uint64_t ms;                     /* the whole rebuild of the index, in milliseconds */
};

enum store_state {
    STORE_ABSENT,                    /* never uploaded: look at the operator's files */
    STORE_FILE,
    STORE_WHITEOUT,                  /* deleted through the server */
};

/*
 * Opens (creating if needed) <root>/.s1store and rebuilds the index from the log; new
 * segments start once the active one holds segment_bytes (STORE_SEGMENT_BYTES in server1).
 * flags: STORE_ORDER_BY_OWNER: a listing shows the uploads of the owner it names (for
 * --private-uploads, whose listings show a user's own uploads only), else all owners'.
 * Bad bytes at the end of the last segment (a batch cut short) are cut off and counted; bad
 * bytes followed by valid records anywhere in the last segment stop it (-1), as does a file
 * in the directory that is not a segment. Returns -1 with a one-line reason in err
 * (STORE_ERR_LEN).
 */
int store_open(struct store *s, int root_fd, uint64_t segment_bytes, unsigned flags,
               struct store_recovery *rec, char *err);
void store_close(struct store *s);

/* What store_lookup found of a name. */
struct store_found {
    char owner[STORE_OWNER_MAX + 1]; /* the uploader ("" for a whiteout) */
    uint64_t off, size;              /* where the bytes lie in the segment */
    uint64_t version;                /* an upload's version, 0 if unknown */
    uint64_t pending;                /* the store's pending_version then (for any state) */
    int fd;                          /* with want_fd: a new descriptor of the segment, else -1 */
    struct store_segment *pin;       /* with want_fd: the pin on the segment, else NULL */
};

/*
 * The newest state of name (an enum store_state), and (f may be NULL) what is known of it.
 * With want_fd, for STORE_FILE, f->fd is a new descriptor of the segment and f->pin a pin on
 * it: while it is held the file is not reused for new records (it may be deleted: the
 * descriptor keeps the bytes). Close fd and store_unpin(pin) when done. Returns -errno if the
 * dup fails. Thread-safe.
 */
int store_lookup(struct store *s, const char *name, size_t len, bool want_fd,
                 struct store_found *f);
/* Reads exactly n bytes of fd at off: 0, or -errno (-EIO if the file is shorter). */
int store_pread(int fd, void *buf, size_t n, uint64_t off);
/* The CRC-32 of zlib and gzip over n bytes at p, continuing crc (0 to start). */
uint32_t store_crc32(uint32_t crc, const void *p, size_t n);
/* Drops a pin of store_lookup (accepts NULL). Thread-safe. */
void store_unpin(struct store_segment *pin);

/*
 * Appends a record (not yet durable, not yet visible). A record whose data is in memory (or
 * empty) is only staged: name, owner and body->mem must stay unchanged until the next
 * store_sync or store_rewind, which write it. Returns 0, or -errno after which the caller must
 * not publish anything appended since the last store_sync (and should store_rewind).
 */
int store_append_put(struct store *s, const char *name, size_t len, const char *owner,
                     const struct store_body *body, struct store_pos *pos);
int store_append_delete(struct store *s, const char *name, size_t len, struct store_pos *pos);
/*
 * Where the next record goes in the active segment; after a failed append or sync,
 * store_rewind(s, tail) drops everything appended since (nothing of it was published).
 * 0 or -errno.
 */
uint64_t store_tail(struct store *s);
int store_rewind(struct store *s, uint64_t tail);
/*
 * Removes the spare segments (dead ones kept for reuse), giving their blocks back to the
 * filesystem: for a disk that is full. Returns how many went, or -errno. Writer thread.
 */
int store_release_spares(struct store *s);
/*
 * A new upload's version: the wall-clock time in nanoseconds, but always above every version
 * in the log (a clock set back cannot give a name an old version again). Until store_settle,
 * lookups report the first one handed out as pending (store_found): a response must not date
 * an older version within that version's second (httpcond.h). Writer thread.
 */
uint64_t store_next_version(struct store *s);
/*
 * After the versions handed out have been published, or dropped with their batch: nothing is
 * pending any more. Writer thread.
 */
void store_settle(struct store *s);
/* Makes every record appended so far durable (one fdatasync). 0 or -errno. */
int store_sync(struct store *s);
/* Makes a synced record the newest version of name (owner: the uploader). */
void store_publish(struct store *s, const char *name, size_t len, const char *owner,
                   const struct store_pos *pos);
/*
 * Before a batch: starts a new segment if the active one is full. 0 or -errno (then appends
 * go on in the old one).
 */
int store_roll(struct store *s);
/*
 * Deletes sealed segments with nothing live, then, if the sealed segments hold more than twice
 * their live bytes, takes one bounded step (about 8 MiB copied) of compacting the oldest one.
 * Called after every batch. Returns how many segments were removed, or -errno.
 * hide_needed(arg, name) says whether a whiteout must be kept (an operator file has that
 * name); a whiteout in the oldest segment that hides nothing is dropped.
 */
int store_compact(struct store *s, bool (*hide_needed)(void *arg, const char *name), void *arg);

/*
 * The index checkpoint (<root>/.s1store/index.ckpt): every entry of the index as of a log
 * position, so that store_open replays only the log after it. Writer thread, between batches
 * (nothing appended and not synced). Starts one when it is due (s->ckpt_every_bytes of log or
 * s->ckpt_every_records records since the last one's position, or compaction waits for one),
 * then writes one bounded step of it (s->ckpt_step entries): a checkpoint of millions of
 * entries is written over many calls and never holds the writer for long. With finish, starts
 * one if the log moved since the last (or there is none) and writes all of it. Returns 1 when
 * a checkpoint was completed (durable), 0 if not (yet), -errno on a failure (logged; the
 * partial one is dropped, and so is the last complete one: see ckpt_failed in store.c).
 */
int store_checkpoint(struct store *s, bool finish);
/*
 * Whether store_checkpoint has work: a checkpoint being written, or one due (e.g. right after
 * a start that replayed the whole log). Writer thread.
 */
bool store_checkpoint_pending(struct store *s);

/*
 * Calls fn for every entry (file or whiteout), under the read lock: fn must not call into the
 * store. f->fd is the segment's own descriptor (for reading during the call only), f->pin NULL.
 */
void store_foreach(struct store *s,
                   void (*fn)(void *arg, const char *name, size_t len, enum store_state st,
                              const struct store_found *f),
                   void *arg);

/* One direct child of a directory, as store_list finds it. */
struct store_child {
    const char *name;            /* its own name (a segment of full, not NUL-terminated) */
    size_t len;
    bool dir;                    /* a subdirectory: full is the first upload beneath it */
    const char *full;            /* that upload's whole name (NUL-terminated) */
    size_t full_len;
    const struct store_found *f; /* that upload (fd -1, pin NULL) */
};

/* What store_list walks. */
struct store_list_req {
    const char *dir;   /* validated, relative, no trailing '/'; "" for the root */
    size_t dir_len;
    const char *owner; /* with STORE_ORDER_BY_OWNER: only this owner's uploads ("": those
                          without one); otherwise ignored: every owner's */
    const char *after; /* NULL: from the start; else from the child after this one */
    size_t after_len;
    bool after_dir;    /* after is a subdirectory (they come before the files) */
    size_t max;        /* children counted, at most */
};

struct store_list_result {
    bool more;      /* stopped at max with more children to come */
    bool exists;    /* something of the walk's uploads lies beneath dir at all */
    size_t visited; /* index entries read (a listing's cost; for tests) */
};

/*
 * Walks the live uploads beneath rq->dir in a listing's order: its subdirectories, then its
 * files, each in bytewise order of their names, from the child after rq->after. Calls fn for
 * each direct child (a subdirectory with the first upload beneath it, a file with itself),
 * which returns whether it counted it (shown); after a subdirectory it did not count, the walk
 * goes on with the next upload beneath it, else passes over the rest of it with one seek.
 * Deletions (and, with STORE_ORDER_BY_OWNER, other owners' uploads) are passed over. Stops
 * once fn counted rq->max children. It reads the entries of dir's files and one entry per
 * subdirectory shown (plus those passed over), never the rest of the index, under the read
 * lock: fn must not call into the store. Returns 0, or -ENAMETOOLONG for an after that cannot fit a
 * name. Thread-safe.
 */
int store_list(struct store *s, const struct store_list_req *rq,
               bool (*fn)(void *arg, const struct store_child *c), void *arg,
               struct store_list_result *res);

struct store_stats {
    uint64_t files, whiteouts, segments, bytes, live_bytes, data_bytes, compactions, reused;
    uint64_t ckpts;        /* index checkpoints written since start */
    uint64_t ckpt_unix;    /* the last one's time (s since the epoch), 0 if none */
    uint64_t ckpt_entries; /* ... and its entries */
    uint64_t index_bytes;  /* memory of the index (upindex.h) */
    uint64_t pins;    /* pins held on the segments in the log (responses being sent) */
    uint64_t zombies; /* segments removed from the log, kept until their last pin goes */
};
void store_stats(struct store *s, struct store_stats *st);

/*
 * The data bytes of the live uploads of owner (*owner_bytes, may be NULL) and of all owners
 * (*total_bytes, may be NULL), as the index says now (rebuilt from the log at start-up).
 * Thread-safe.
 */
void store_usage(struct store *s, const char *owner, uint64_t *owner_bytes,
                 uint64_t *total_bytes);

#endif /* S1_STORE_H */
