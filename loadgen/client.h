/*
 * client.h - one user's connection: non-blocking connect, send of a preformatted request,
 * receive and parse of the response (headers in a per-connection buffer, body counted and, by
 * default, discarded in the kernel with MSG_TRUNC), and the check of the response. Used by both
 * worker models; a struct lg_conn belongs to exactly one worker thread. Over https:// (events
 * model only) a TLS handshake follows the connect, and reads and writes go through tls.h;
 * bodies are then decrypted into the connection's buffer, since no kernel can discard them.
 */
#ifndef LG_CLIENT_H
#define LG_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "http.h"
#include "stats.h"
#include "target.h"
#include "tls.h"
#include "workload.h"

#define LG_CONN_BUF 16384 /* holds a response head (LG_HTTP_MAX_HEAD) and the start of a body */

enum lg_io {
    LG_IO_ERROR = -1, /* failed: the class is in conn->err; close the connection */
    LG_IO_AGAIN = 0,  /* would block: wait for readiness */
    LG_IO_DONE = 1,   /* connect/send finished, or a whole response was received */
};

/*
 * What makes a response a success. expect_status LG_EXPECT_2XX_3XX (custom requests): any 2xx
 * or 3xx, as wrk counts them.
 */
#define LG_EXPECT_2XX_3XX (-1)
struct lg_check {
    int expect_status[LG_REQ_TYPES]; /* 201 for new, 200 for get, 201 for put, 2xx/3xx custom */
    int expect_alt[LG_REQ_TYPES];    /* a second accepted status (204 for put), 0 if none */
    bool has_length;
    uint64_t length; /* --expect-length, for get */
};

enum lg_cstate {
    LG_CS_IDLE = 0,   /* no request: thinking, pooled, backing off or finished */
    LG_CS_CONNECTING, /* request chosen, TCP connect in progress */
    LG_CS_HANDSHAKE,  /* connected, TLS handshake in progress */
    LG_CS_SENDING,    /* part of the request is still to be written */
    LG_CS_WAITING,    /* request written, reading the response */
};

struct lg_conn {
    int fd; /* -1 when not connected */
    enum lg_cstate state;
    unsigned user;        /* index of the user within its point */
    int type;             /* enum lg_req of the request in progress */
    uint64_t start_ns;    /* when the request began (its intended time in the open loop) */
    uint64_t deadline_ns; /* the deadline of the list the connection is in */
    uint64_t remaining;   /* counted requests left, UINT64_MAX when bounded by time */
    uint64_t slot_next;   /* next username counter or prepared-account index */
    uint64_t slot_step;
    uint32_t ev_mask; /* events registered with epoll (events model) */
    bool backoff;     /* the last attempt could not connect: wait before the next */
    enum lg_err err;  /* class of the last LG_IO_ERROR */
    int err_errno;    /* its errno (ECONNREFUSED, ECONNRESET...), 0: none or end of stream */
    struct lg_reqbuf req[LG_REQ_TYPES]; /* owned; custom requests are the workload's: */
    const struct lg_reqbuf *custom;     /* the custom request to send next (not owned) */
    unsigned custom_next;               /* --requests-order seq: the index after the last */
    struct lg_namebuf named; /* with --names: the request with its name drawn (owned) */
    bool in_named;           /* the request to send is named's, not req's or custom's */
    const char *send_ptr; /* what is left of the request head */
    size_t send_left;
    const char *body_ptr; /* then what is left of its body (the workload's shared PUT body) */
    size_t body_left;
    struct lg_http http;
    size_t rlen;          /* unparsed bytes at the start of rbuf */
    char *rbuf;           /* LG_CONN_BUF bytes */
    struct lg_conn *prev; /* intrusive list links, owned by the worker */
    struct lg_conn *next;
    int list;
    struct lg_conn *sendq; /* next in the worker's queue of requests to send */
    bool queued;           /* in that queue */
    struct lg_tls_conn tls; /* https:// only (tls.ctx NULL: plain http) */
};

void lg_conn_init(struct lg_conn *c, unsigned user);
/* Makes c's connections speak TLS through ctx (tls.h) to t's host. */
void lg_conn_use_tls(struct lg_conn *c, struct ssl_ctx_st *ctx, const struct lg_target *t);
void lg_conn_release(struct lg_conn *c);
/*
 * Starts a connect. 0: connected (state SENDING, or HANDSHAKE over TLS) or in progress (state
 * CONNECTING), -1: failed (err CONNECT).
 */
int lg_conn_connect(struct lg_conn *c, const struct lg_target *t);
/*
 * After the socket became writable: 0 when the connect succeeded (state SENDING, or HANDSHAKE
 * over TLS), else -1 (err CONNECT).
 */
int lg_conn_connect_result(struct lg_conn *c);
/*
 * One TLS handshake step (state HANDSHAKE). DONE: state SENDING; AGAIN: wait for readability,
 * and for writability too when c->tls.want_write; ERROR: failed (err CONNECT).
 */
enum lg_io lg_conn_handshake(struct lg_conn *c);
/*
 * Prepares request type (patching the username slot; for LG_REQ_CUSTOM, c->custom; c->named
 * when c->in_named) for sending; resets the parser (a HEAD request's response has no body).
 */
void lg_conn_begin(struct lg_conn *c, int type, uint64_t start_ns);
enum lg_io lg_conn_send(struct lg_conn *c);
/*
 * One receive step (over TLS: every byte OpenSSL has decrypted, since epoll cannot see them).
 * scratch (cap bytes) takes body bytes when copy_body is set. DONE means the
 * response is complete (see c->http); its keep_alive tells whether the connection can be reused.
 */
enum lg_io lg_conn_recv(struct lg_conn *c, char *scratch, size_t cap, bool copy_body);
/* Classifies a complete response: LG_ERR_NONE when it is what chk expects. */
enum lg_err lg_conn_check(const struct lg_conn *c, const struct lg_check *chk);
/*
 * The kind (stats.h) of a failure of class e of c's request, from where it failed: a failed
 * connect refused or not, a failed TLS handshake (c->state still HANDSHAKE), a reset or an
 * early end of stream, a parse error or a length mismatch. For the status classes it is not
 * used (lg_errtab_add counts the status).
 */
enum lg_kind lg_conn_kind(const struct lg_conn *c, enum lg_err e);
/* Closes the connection (a TLS session first, see lg_tls_close); c stays usable. */
void lg_conn_close(struct lg_conn *c);

#endif /* LG_CLIENT_H */
