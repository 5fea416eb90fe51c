/*
 * aioread.h - reads that do not stop a worker's event loop: O_DIRECT reads submitted with
 * Linux native AIO (io_submit), their completions signalled on an eventfd the worker's loop
 * watches. A worker that waited in pread for each cold read (--read direct) had one read of
 * the disk in flight at a time; with these it has up to --read-depth, and serves other
 * connections meanwhile (docs/pack.md measures it).
 *
 * DESIGN: one struct aioread per worker thread, used by that thread only: an AIO context of
 * depth entries and an eventfd. aioread_submit queues one read of an O_DIRECT descriptor into
 * an aligned buffer; the op's done function is then called exactly once, on the same thread,
 * from the event loop (or from aioread_release, which waits for every read in flight), with
 * the bytes read or -errno. The buffer and the descriptor must stay valid until then: the
 * kernel writes into the buffer until the read completes, so an owner that goes away meanwhile
 * leaves them to done. A full context refuses (-EAGAIN): the caller reads in place instead.
 */
#ifndef S1_AIOREAD_H
#define S1_AIOREAD_H

#include <linux/aio_abi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event_struct.h>

#define AIOREAD_DEPTH_MAX 4096 /* --read-depth's upper bound */

struct event_base;
struct aioread_op;
/* res: the bytes read (fewer than asked at the end of the file), or -errno */
typedef void (*aioread_done)(struct aioread_op *op, long res);

struct aioread_op {
    aioread_done done;
    struct iocb cb; /* aioread's */
};

struct aioread {
    aio_context_t ctx; /* 0: none (depth 0, or io_setup failed) */
    int efd;           /* -1: none */
    struct event ev;
    bool attached;
    unsigned depth;    /* reads in flight at most */
    unsigned inflight;
    uint64_t submitted; /* in all, for the tests */
};

/*
 * An AIO context for depth reads in flight (0: none; every aioread_submit then refuses).
 * Returns 0, or -errno (e.g. -EAGAIN: the system's fs.aio-max-nr is used up; a has no context
 * then, and is safe to release).
 */
int aioread_init(struct aioread *a, unsigned depth);
/* Watches the completions in base's loop. 0, or -1 (no memory). */
int aioread_attach(struct aioread *a, struct event_base *base);
/* Whether a has a context: reads can be submitted. */
bool aioread_on(const struct aioread *a);
/* Whether a read submitted now would be refused: no context, or depth reads in flight. */
bool aioread_full(const struct aioread *a);
/*
 * Queues a read of len bytes at off of fd (opened with O_DIRECT; buf, len and off aligned as
 * it needs) into buf; op->done must be set. Returns 0 (done will be called), -EAGAIN when depth
 * reads are in flight already or a has no context, or -errno from io_submit (nothing queued:
 * read in place).
 */
int aioread_submit(struct aioread *a, struct aioread_op *op, int fd, void *buf, size_t len,
                   uint64_t off);
/*
 * Calls done for the reads that completed (what the event loop does when the eventfd fires);
 * returns how many.
 */
unsigned aioread_reap(struct aioread *a);
/* Waits for every read in flight, calling their done, then frees a. Accepts a released one. */
void aioread_release(struct aioread *a);

#endif /* S1_AIOREAD_H */
