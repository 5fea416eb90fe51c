/*
 * respbuf.h - the buffers of --read direct responses: aligned for O_DIRECT, at most
 * RESPBUF_CHUNK bytes each, counted against a budget per worker (--response-memory) from the
 * moment they are taken until the bytes in them are sent.
 *
 * DESIGN: a file up to RESPBUF_CHUNK is read whole into one buffer and sent from it; a bigger
 * one is sent through one buffer, refilled with the next chunk each time the previous one has
 * been written to the socket (source.c's bodies, body.h), so a response holds RESPBUF_CHUNK at
 * most however big the file and however slow the reader. When the budget is spent, a new
 * direct response gets 503 + Retry-After rather than memory the process does not have. A
 * budget and its buffers belong to one worker thread: no locks.
 */
#ifndef S1_RESPBUF_H
#define S1_RESPBUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RESPBUF_CHUNK (256u << 10) /* bytes read by one O_DIRECT read, and held per response */

struct respbuf_budget {
    uint64_t limit;         /* --response-memory */
    uint64_t used;          /* bytes of the buffers taken now */
    _Atomic int64_t *gauge; /* follows used, for /metrics (the worker's metrics); or NULL */
};

struct respbuf {
    struct respbuf_budget *budget;
    size_t cap;  /* bytes of data (a multiple of the alignment) */
    void *data;  /* aligned */
};

/*
 * A buffer for a response of size bytes: min(size, RESPBUF_CHUNK) rounded up to align, taken
 * from budget. NULL if the budget cannot spare it (or memory ran out).
 */
struct respbuf *respbuf_new(struct respbuf_budget *budget, uint64_t size, size_t align);
/* Gives it back (accepts NULL). */
void respbuf_free(struct respbuf *rb);

#endif /* S1_RESPBUF_H */
