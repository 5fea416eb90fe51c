/*
 * source.h - what a GET or HEAD of /files/{name} is answered from: the newest version of the
 * name, looked up in one order everywhere: the upload store (an upload, or a deletion that
 * hides an operator's file), then the operator's files: the prefetch table (--prefetch), or
 * the pack (--pack: the pack's descriptor, opened once, at the file's offset), or the file
 * under --root. One result, whatever the place: where the bytes are (a prefetched file's
 * memory, which lives as long as the server, or a descriptor with an offset and a length,
 * pinned when it is a store segment, shared and never closed when it is the pack's),
 * their size, and what identifies the version: an operator's file's modification time and
 * inode (read at start for a prefetched one), or an upload's version (store.h: its commit time,
 * unique to it) and owner. The handler answers every GET from it in one function. Which
 * Last-Modified it may be sent with, and which If-Range date names it, is decided here for
 * every place alike (httpcond_last_modified, httpcond_strong_date): the time is read before
 * the lookup, a store lookup reports the uploads being committed, an operator's file's ctime
 * says since when it is in place (a prefetched file's were decided when it was loaded).
 *
 * A source turns into the body of its response (source_body, body.h): a prefetched file's memory,
 * the page cache sent with sendfile (an operator's file, a packed file's span of the pack, or
 * an upload's segment, pinned until sent), or with --read direct O_DIRECT reads into a response buffer (respbuf.h): whole when
 * the span fits one, else one chunk at a time as the socket takes them. The alignment O_DIRECT
 * needs is worked out here only.
 *
 * DESIGN: a source owns what it holds (a descriptor and a pin) until it is released or its
 * parts are moved into a body (source_body). The bytes of a resolved source
 * never change: an upload being replaced, a compaction or a deleted operator file leave the
 * held version as it was, and the prefetch table never changes. Thread-safe (the store locks
 * for the lookup only; the prefetch table needs no lock).
 */
#ifndef S1_SOURCE_H
#define S1_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aioread.h"
#include "body.h"
#include "commit.h"
#include "files.h"
#include "store.h"

enum source_kind {
    SOURCE_MEM, /* data, a prefetched file's (blob) */
    SOURCE_FD,  /* fd from off: an upload's segment (pin), an operator's or a packed file */
};

struct source {
    enum source_kind kind;
    uint64_t size;
    const void *data;          /* SOURCE_MEM */
    const struct files_blob *blob; /* SOURCE_MEM: the prefetched file (the table's) */
    int fd;                    /* SOURCE_FD, else -1 */
    uint64_t off;              /* SOURCE_FD: where the bytes start in fd */
    struct store_segment *pin; /* SOURCE_FD of an upload, else NULL */
    bool direct;               /* SOURCE_FD opened with O_DIRECT (--read direct) */
    bool shared;               /* fd is the pack's: never closed here nor by the body */
    bool upload;               /* from the upload store */
    char owner[STORE_OWNER_MAX + 1]; /* an upload's uploader, else "" */
    int64_t mtime_ns;          /* the version's modification time, -1 if unknown */
    uint64_t ino;              /* an operator's file's inode number (a packed file's:
                                  pack_entry_ino); 0 for an upload */
    /* the Last-Modified to send (seconds, -1: none yet) and the date an If-Range must equal
     * (-1: none), httpcond.h, as of the lookup */
    int64_t last_modified;
    int64_t strong_date;
};

/*
 * Finds name (validated, relative to the root; cm may be NULL with --read-only). Returns 0
 * with *src filled (release it), or -errno: ENOENT for no such file (never existed, deleted
 * through the server, not a regular file, or resolving outside the root), EACCES/EPERM,
 * EMFILE/ENFILE/ENOMEM, EOPNOTSUPP for a regular file the filesystem will not open with
 * O_DIRECT (logged), or another error of the open or the lookup.
 */
int source_resolve(struct files *f, struct committer *cm, const char *name, size_t len,
                   struct source *src);
struct respbuf_budget;

/*
 * The body for bytes [off, off + count) of src (count > 0, within its size); what src holds
 * moves into it. f is what src was resolved from; budget is the thread's --response-memory.
 * Returns 0 with *b made, or -EAGAIN when budget cannot spare a buffer now, -ENODATA when the
 * file shrank under us, or another -errno of the read (src unchanged but for what it holds,
 * which the caller releases as usual).
 */
int source_body(struct source *src, uint64_t off, uint64_t count, const struct files *f,
                struct respbuf_budget *budget, struct s1_body *b);
/*
 * A span of a source read with O_DIRECT without stopping the thread (aioread.h), for a body
 * that fits one response buffer: what the read needs until it completes (the buffer, and the
 * descriptor unless it is the pack's) is here, not in the source.
 */
struct source_read {
    struct aioread_op op;
    /* called on the thread once the read completed: rc 0 with *b made (the caller sends or
     * releases it), or -ENODATA (the file shrank under us) or another -errno of the read */
    void (*ready)(struct source_read *rd, int rc, struct s1_body *b);
    struct respbuf *rb;
    int fd;           /* closed once the read completed, unless shared */
    bool shared;      /* the pack's descriptor: never closed */
    size_t skip;      /* bytes of the read before the body's */
    uint64_t count;   /* the body's bytes */
};

/*
 * Starts reading bytes [off, off + count) of src as source_body would, with aio: for an
 * O_DIRECT source (--read direct) whose span fits one response buffer, when aio has room.
 * Returns 1: the read is in flight, rd->ready (set by the caller) will be called and rd must
 * live until then; src's descriptor moved into rd. 0: not a span for it, or aio is off; -EBUSY:
 * depth reads are in flight (or io_submit refused, logged): call source_body either way.
 * -EAGAIN: budget cannot spare a buffer now (as source_body).
 */
int source_read_start(struct source *src, uint64_t off, uint64_t count, const struct files *f,
                      struct respbuf_budget *budget, struct aioread *aio,
                      struct source_read *rd);
/* Drops what src still holds (nothing if its parts were moved out). */
void source_release(struct source *src);

#endif /* S1_SOURCE_H */
