/*
 * body.h - a response body as a generator (as h2o's h2o_generator_t, proceed/stop): conn asks it
 * for bytes as the socket takes them (fill) and lets it go once (release), and knows nothing
 * else of where the bytes come from. Memory bodies are here (static text, malloc'd pages);
 * source.h makes the bodies of files (the page cache with sendfile, O_DIRECT chunks, upload
 * store segments).
 *
 * DESIGN: a body is a small struct filled by its maker (ops, len, data, and private fields only
 * its ops read), moved by value into s1_conn_respond, and owned by the conn from then on: conn
 * calls fill while len > 0, and release exactly once on every path (sent, HEAD, error, peer
 * gone, connection freed). fill hands bytes to the output buffer: a body that gives them all at
 * once (memory as a reference, a file as a sendfile segment) has len 0 after its first fill;
 * one that reads into a buffer of its own (O_DIRECT chunks) is filled again only when the
 * output has drained, so that buffer can be reused. Once len is 0, what fill gave no longer
 * needs the body (the output owns it), and conn releases the body at once: pipelined
 * responses queue behind it without waiting. A body with data != NULL has all of its len
 * bytes at data until release: conn may write them itself (writev with the head) and take a
 * prefix with body_consume. One thread: a body is only touched by the conn that holds it.
 */
#ifndef S1_BODY_H
#define S1_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BODY_COPY_MAX (256 * 1024)

struct evbuffer;
struct s1_body;

struct s1_body_ops {
    /*
     * Adds the next bytes of b to out (at least one while b->len > 0), taking b->len down by
     * as many; budget is what the conn would write in this turn (a hint). Returns 0, or -1
     * when the bytes promised cannot be given (logged; the connection is then closed).
     */
    int (*fill)(struct s1_body *b, struct evbuffer *out, size_t budget);
    /* Drops what b still holds (what fill gave away stays with out). Called once. */
    void (*release)(struct s1_body *b);
};

struct s1_body {
    const struct s1_body_ops *ops; /* NULL: no body at all */
    uint64_t len;                  /* bytes still to give (the Content-Length when made) */
    const void *data;              /* all len bytes, if in memory; else NULL */
    bool copy_files;               /* set by conn: the output takes no sendfile segments (TLS
                                      in user space), so a file's bytes are copied into it, a
                                      part of at most BODY_COPY_MAX per fill */
    /* the maker's: conn never reads them */
    void *_owner;                  /* what release frees (memory bodies), or the buffer */
    const void *_ctx;              /* O_DIRECT: the files they are read through */
    void *_pin;                    /* a store segment's pin, dropped at release */
    int _fd;                       /* -1: none */
    uint64_t _off;                 /* where the next bytes are in _fd */
    size_t _skip;                  /* bytes of the next read before the body's */
};

/* len bytes at data that outlive the response (static text, a prefetched file's memory). */
void body_mem(struct s1_body *b, const void *data, size_t len);
/* len bytes at data in owned (malloc'd), freed with free() once sent or released. */
void body_mem_owned(struct s1_body *b, const void *data, size_t len, void *owned);
/* A length only (a HEAD's Content-Length): no bytes to send; never filled. */
void body_length_only(struct s1_body *b, uint64_t len);
/*
 * For memory bodies made elsewhere: adds b's bytes to out as a reference, which calls cleanup
 * (may be NULL) with b->_owner once they are sent, and empties b. 0, or -1 (no memory).
 */
int body_mem_fill(struct s1_body *b, struct evbuffer *out,
                  void (*cleanup)(const void *data, size_t len, void *owner));
/* Takes the first n bytes of a memory body (b->data != NULL, n <= b->len) as sent. */
void body_consume(struct s1_body *b, size_t n);
/* Releases b if it holds anything, and empties it (accepts an empty body). */
void body_release(struct s1_body *b);

#endif /* S1_BODY_H */
