/* source.c - see source.h. */
#include "source.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "clock.h"
#include "compat.h"
#include "httpcond.h"
#include "log.h"
#include "pack.h"
#include "respbuf.h"

/* Sets src's dates from its version's, looked up at now_s (httpcond.h). */
static void date_source(struct source *src, int64_t now_s, uint64_t pending, int64_t since_ns)
{
    struct httpcond_stamp stamp = {
        .mtime_ns = src->mtime_ns,
        .read_s = now_s,
        .pending_ns = pending > INT64_MAX ? INT64_MAX : (int64_t)pending,
        .since_ns = since_ns,
    };

    src->last_modified = httpcond_last_modified(&stamp);
    src->strong_date = httpcond_strong_date(&stamp);
}

/*
 * An operator's file, opened (O_DIRECT in --read direct), dated as looked up at now_s with
 * pending uploads (store_found); 0 or -errno as source_resolve.
 */
static int resolve_file(const struct files *f, const char *name, int64_t now_s,
                        uint64_t pending, struct source *src)
{
    bool direct = f->mode == FILES_DIRECT;
    struct stat st;
    int fd = files_open(f, name, direct);

    if (fd == -EINVAL && direct) {
        /* O_DIRECT refused: a directory (no direct I/O there), or a filesystem that refuses it */
        int plain = files_open(f, name, false);
        bool reg = plain >= 0 && fstat(plain, &st) == 0 && S_ISREG(st.st_mode);
        if (plain >= 0)
            close(plain);
        if (!reg)
            return -ENOENT;
        log_warn("cannot open '%s' with O_DIRECT (a filesystem without direct I/O under "
                 "--root?); answering 500",
                 name);
        return -EOPNOTSUPP;
    }
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOENT;
    }
    src->kind = SOURCE_FD;
    src->fd = fd;
    src->size = (uint64_t)st.st_size;
    src->direct = direct;
    src->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    src->ino = (uint64_t)st.st_ino;
    date_source(src, now_s, pending,
                (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
    return 0;
}

/*
 * A packed file: the pack's descriptor (shared) at its offset, dated as looked up at now_s
 * with pending uploads; in place since the pack was. No open, no stat: an index lookup.
 */
static int resolve_packed(const struct files *f, const char *name, size_t len, int64_t now_s,
                          uint64_t pending, struct source *src)
{
    const struct pack *p = f->pack;
    struct pack_entry e;

    if (pack_lookup(p, name, len, &e) != 1)
        return -ENOENT;
    src->kind = SOURCE_FD;
    src->fd = p->fd;
    src->shared = true;
    src->off = e.off;
    src->size = e.size;
    src->direct = p->direct;
    src->mtime_ns = e.mtime_s * 1000000000;
    src->ino = pack_entry_ino(p, &e);
    date_source(src, now_s, pending, p->since_ns);
    return 0;
}

int source_resolve(struct files *f, struct committer *cm, const char *name, size_t len,
                   struct source *src)
{
    /* the time before the lookup: a version the committer dates after it is pending there */
    int64_t now_s = clock_wall_s();
    uint64_t pending = UINT64_MAX;

    *src = (struct source){.kind = SOURCE_MEM, .fd = -1, .mtime_ns = -1, .last_modified = -1,
                           .strong_date = -1};
    if (cm != NULL) {
        /* uploads come from the store in every mode, never from memory: what users upload is
         * bounded by the disk, not by server1's memory */
        struct store_found found;
        int st = commit_lookup(cm, name, len, &found);
        if (st == STORE_WHITEOUT)
            return -ENOENT;
        if (st < 0)
            return st;
        if (st == STORE_FILE) {
            src->kind = SOURCE_FD;
            src->upload = true;
            src->fd = found.fd;
            src->pin = found.pin;
            src->off = found.off;
            src->size = found.size;
            src->mtime_ns = found.version > 0 ? (int64_t)found.version : -1;
            memcpy(src->owner, found.owner, sizeof(found.owner));
            /* in place since it was published: after its date, but pending until then */
            date_source(src, now_s, found.pending, src->mtime_ns);
            return 0;
        }
        pending = found.pending;
    }
    if (f->pack != NULL)
        return resolve_packed(f, name, len, now_s, pending, src);
    if (f->mode == FILES_PREFETCH) {
        const struct files_blob *blob = files_lookup(f, name, len);
        if (blob == NULL)
            return -ENOENT;
        src->blob = blob;
        src->data = blob->data;
        src->size = blob->size;
        src->mtime_ns = blob->mtime_ns;
        src->ino = blob->ino;
        src->last_modified = blob->last_modified;
        src->strong_date = blob->strong_date;
        return 0;
    }
    return resolve_file(f, name, now_s, pending, src);
}

void source_release(struct source *src)
{
    src->blob = NULL;
    src->data = NULL;
    if (src->fd >= 0 && !src->shared)
        close(src->fd);
    src->fd = -1;
    store_unpin(src->pin);
    src->pin = NULL;
}

/* ---- bodies (body.h) ---- */

static void unpin_segment(struct evbuffer_file_segment const *seg, int flags, void *pin)
{
    UNUSED(seg);
    UNUSED(flags);
    store_unpin(pin);
}

/*
 * b's bytes as one sendfile segment of out, which (flags EVBUF_FS_CLOSE_ON_FREE) closes the fd
 * once they are sent, or (0) leaves it open (the pack's), and then drops b's pin, if it has
 * one (an upload's segment).
 */
static int add_segment(struct s1_body *b, struct evbuffer *out, unsigned flags)
{
    struct evbuffer_file_segment *seg;
    int rc;

    seg = evbuffer_file_segment_new(b->_fd, (ev_off_t)b->_off, (ev_off_t)b->len, flags);
    if (seg == NULL)
        return -1;
    b->_fd = -1; /* the segment closes it now (or it is the pack's) ... */
    if (b->_pin != NULL) {
        evbuffer_file_segment_add_cleanup_cb(seg, unpin_segment, b->_pin);
        b->_pin = NULL; /* ... and drops the pin once the bytes are sent */
    }
    rc = evbuffer_add_file_segment(out, seg, 0, (ev_off_t)b->len);
    evbuffer_file_segment_free(seg); /* the output holds its own reference */
    if (rc < 0)
        return -1;
    b->len = 0;
    return 0;
}

/*
 * The next part of b's bytes (at most BODY_COPY_MAX) read into out, for an output that takes no
 * sendfile segments (TLS in user space): as many bytes copied as a segment would have sent, and
 * a file cut short under us ends the response instead of mapping pages that are gone.
 */
static int copy_part(struct s1_body *b, struct evbuffer *out)
{
    size_t want = b->len < BODY_COPY_MAX ? (size_t)b->len : BODY_COPY_MAX;
    struct evbuffer_iovec v;
    ssize_t got;

    if (evbuffer_reserve_space(out, (ev_ssize_t)want, &v, 1) < 1)
        return -1;
    do {
        got = pread(b->_fd, v.iov_base, want, (off_t)b->_off);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) {
        log_warn("cannot read a file being sent at offset %llu: %s",
                 (unsigned long long)b->_off, got == 0 ? "cut short" : "read error");
        return -1;
    }
    v.iov_len = (size_t)got;
    if (evbuffer_commit_space(out, &v, 1) < 0)
        return -1;
    b->_off += (uint64_t)got;
    b->len -= (uint64_t)got;
    return 0;
}

/* A file's bytes from the page cache (an operator's file, or an upload's pinned segment). */
static int file_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(budget);
    if (b->copy_files)
        return copy_part(b, out);
    return add_segment(b, out, EVBUF_FS_CLOSE_ON_FREE);
}

/* A packed file's bytes from the page cache: the pack's descriptor, never closed. */
static int packed_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(budget);
    if (b->copy_files)
        return copy_part(b, out);
    return add_segment(b, out, 0);
}

static void packed_release(struct s1_body *b)
{
    b->_fd = -1; /* the pack's */
}

static void file_release(struct s1_body *b)
{
    if (b->_fd >= 0)
        close(b->_fd);
    b->_fd = -1;
    store_unpin(b->_pin);
    b->_pin = NULL;
}

static void free_rbuf(const void *data, size_t len, void *rbuf)
{
    UNUSED(data);
    UNUSED(len);
    respbuf_free(rbuf);
}

/* A span read whole with O_DIRECT: memory in a response buffer, freed once sent. */
static int rbuf_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(budget);
    return body_mem_fill(b, out, free_rbuf);
}

static void rbuf_release(struct s1_body *b)
{
    respbuf_free(b->_owner);
    b->_owner = NULL;
}

/*
 * A span bigger than a response buffer, with O_DIRECT: the next chunk read into the buffer
 * (filled only once the output has drained, so the last chunk is sent); the last one hands the
 * buffer to the output.
 */
static int chunk_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    struct respbuf *rb = b->_owner;
    long got = files_pread_direct(b->_ctx, b->_fd, rb->data, rb->cap, b->_off);
    size_t n = got > (long)b->_skip ? (size_t)got - b->_skip : 0; /* body bytes in the chunk */
    bool last;

    UNUSED(budget);
    if (n > b->len)
        n = (size_t)b->len;
    if (n == 0 || ((size_t)got < rb->cap && n < b->len)) {
        log_warn("closing a connection: a file being sent %s",
                 got < 0 ? "could not be read" : "shrank");
        return -1;
    }
    last = n == b->len;
    if (evbuffer_add_reference(out, (const char *)rb->data + b->_skip, n,
                               last ? free_rbuf : NULL, last ? rb : NULL) < 0)
        return -1;
    if (last)
        b->_owner = NULL; /* the output frees it once the last chunk is sent */
    b->_off += (uint64_t)got; /* a whole chunk, aligned, unless it was the last */
    b->_skip = 0;
    b->len -= n;
    return 0;
}

static void chunk_release(struct s1_body *b)
{
    file_release(b);
    rbuf_release(b);
}

/* chunks of a packed file: the buffer is freed, the descriptor is the pack's */
static void packed_chunk_release(struct s1_body *b)
{
    b->_fd = -1;
    rbuf_release(b);
}

static const struct s1_body_ops file_ops = {.fill = file_fill, .release = file_release};
static const struct s1_body_ops packed_ops = {.fill = packed_fill, .release = packed_release};
static const struct s1_body_ops packed_chunk_ops = {.fill = chunk_fill,
                                                    .release = packed_chunk_release};
static const struct s1_body_ops rbuf_ops = {.fill = rbuf_fill, .release = rbuf_release};
static const struct s1_body_ops chunk_ops = {.fill = chunk_fill, .release = chunk_release};

/* The aligned span of the file that holds bytes [off, off + count) of src: *a0 and its length */
static uint64_t direct_span(const struct source *src, uint64_t off, uint64_t count,
                            const struct files *f, uint64_t *a0)
{
    off += src->off;
    *a0 = off / f->align * f->align;
    return (off + count + f->align - 1) / f->align * f->align - *a0;
}

/*
 * --read direct: a span up to RESPBUF_CHUNK is read whole into a response buffer (O_DIRECT
 * reads whole aligned blocks: the bytes are sliced out of them); a bigger one is streamed
 * through one, so a response holds at most RESPBUF_CHUNK of memory. off is relative to the
 * source's bytes, which start at src->off in the file (a packed file's offset in the pack).
 */
static int direct_body(struct source *src, uint64_t off, uint64_t count, const struct files *f,
                       struct respbuf_budget *budget, struct s1_body *b)
{
    uint64_t a0, span = direct_span(src, off, count, f, &a0);
    struct respbuf *rb;
    long got;

    off += src->off;
    rb = respbuf_new(budget, (size_t)span, f->align);
    if (rb == NULL)
        return -EAGAIN;
    if (span > rb->cap) {
        *b = (struct s1_body){.ops = src->shared ? &packed_chunk_ops : &chunk_ops, .len = count, ._owner = rb, ._ctx = f,
                              ._fd = src->fd, ._off = a0, ._skip = (size_t)(off - a0)};
        src->fd = -1;
        return 0;
    }
    got = files_pread_direct(f, src->fd, rb->data, rb->cap, a0);
    if (got < 0 || (uint64_t)got < off - a0 + count) {
        respbuf_free(rb);
        return got < 0 ? (int)got : -ENODATA;
    }
    *b = (struct s1_body){.ops = &rbuf_ops, .len = count,
                          .data = (const char *)rb->data + (off - a0), ._owner = rb, ._fd = -1};
    return 0;
}

static void read_completed(struct aioread_op *op, long got)
{
    struct source_read *rd = (struct source_read *)((char *)op - offsetof(struct source_read, op));
    struct s1_body b = {.ops = NULL, ._fd = -1};
    int rc = 0;

    if (rd->fd >= 0 && !rd->shared)
        close(rd->fd);
    rd->fd = -1;
    if (got < 0 || (uint64_t)got < rd->skip + rd->count) {
        respbuf_free(rd->rb);
        rc = got < 0 ? (int)got : -ENODATA;
    } else {
        b = (struct s1_body){.ops = &rbuf_ops, .len = rd->count,
                             .data = (const char *)rd->rb->data + rd->skip, ._owner = rd->rb,
                             ._fd = -1};
    }
    rd->rb = NULL;
    rd->ready(rd, rc, &b);
}

int source_read_start(struct source *src, uint64_t off, uint64_t count, const struct files *f,
                      struct respbuf_budget *budget, struct aioread *aio,
                      struct source_read *rd)
{
    uint64_t a0, span;
    int rc;

    /* (an upload's pinned segment is never direct: its pin must outlive the read) */
    if (src->kind != SOURCE_FD || !src->direct || src->pin != NULL || aio == NULL ||
        !aioread_on(aio))
        return 0;
    span = direct_span(src, off, count, f, &a0);
    if (span > RESPBUF_CHUNK)
        return 0; /* streamed in chunks: source_body */
    if (aioread_full(aio))
        return -EBUSY; /* (before taking a buffer that would go back at once) */
    rd->rb = respbuf_new(budget, (size_t)span, f->align);
    if (rd->rb == NULL)
        return -EAGAIN;
    rd->op.done = read_completed;
    rd->fd = src->fd;
    rd->shared = src->shared;
    rd->skip = (size_t)(src->off + off - a0);
    rd->count = count;
    rc = aioread_submit(aio, &rd->op, rd->fd, rd->rb->data, rd->rb->cap, a0);
    if (rc < 0) {
        respbuf_free(rd->rb);
        rd->rb = NULL;
        if (rc != -EAGAIN)
            log_warn("io_submit: %s: reading in place", strerror(-rc));
        return -EBUSY; /* full, or refused: read in place */
    }
    src->fd = -1; /* the read's until it completes */
    return 1;
}

int source_body(struct source *src, uint64_t off, uint64_t count, const struct files *f,
                struct respbuf_budget *budget, struct s1_body *b)
{
    if (src->kind == SOURCE_MEM) {
        /* a prefetched file: its memory outlives every response (files.h) */
        body_mem(b, (const char *)src->data + off, (size_t)count);
        return 0;
    }
    if (src->direct)
        return direct_body(src, off, count, f, budget, b);
    /* sendfile from the page cache; an upload's segment stays pinned until sent */
    *b = (struct s1_body){.ops = src->shared ? &packed_ops : &file_ops, .len = count, ._pin = src->pin, ._fd = src->fd,
                          ._off = src->off + off};
    src->fd = -1;
    src->pin = NULL;
    return 0;
}
