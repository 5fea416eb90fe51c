/*
 * conn.h - one client connection: reads bytes into a contiguous buffer, parses ONE request at a
 * time (http_parser), hands it to the handler, writes the response (writev fast path, evbuffer
 * with references / sendfile for the rest), then keep-alive or close. Pipelined requests stay
 * in the buffer and are handled in order once the previous response is queued.
 *
 * DESIGN: a conn belongs to one thread and is only touched there. It knows that thread only as
 * its home (struct s1_conn_home: the event base, timeouts, limits, counters) and the request
 * handler only through the functions in home->handler, so conn includes neither worker.h nor
 * handler.h, and knows no route: the worker owns homes and conns, the handler answers through
 * this API and keeps its own state of the request being answered in the conn's req. Others see
 * of a conn only its public part (struct s1_conn_pub: home, req, peer, route, head_only); struct
 * s1_conn itself is conn.c's. A response's body is a generator (body.h) that conn fills the
 * output from and releases once, whatever it is made of. Every entry point
 * (socket readable/writable, timer, an asynchronous answer via s1_conn_resume, worker drain)
 * ends in one place that frees the conn if it died, so nothing below an entry point ever frees
 * it; a conn freed with an answer pending tells the handler (release), so a late answer finds
 * nothing to call. Timeouts: --header-timeout from the first byte of a request until it is
 * complete (head and body), --idle-timeout between requests and for a stalled write, and
 * --send-timeout + size / --min-rate for the whole of the output queued, which must also be
 * taken at --min-rate over every --min-rate-window once --min-rate-grace has passed (minrate.h;
 * else the connection is reset). Expect: 100-continue is answered "100 Continue" once the head
 * is accepted and the body has not arrived yet; a body over --max-body gets 413 instead,
 * unread. Errors in the request framing (400, 413, 431, 501, 505) close the connection after
 * the response, with a short lingering close so the client can read it while still sending.
 * Bodies: the handler sees every head first (head()). Most bodies are read whole into the input
 * buffer (at most --max-body) and come with the request to dispatch(). For a body it wants as a
 * stream (an upload), the handler answers S1_HEAD_WAIT and decides (server2, quotas) while the
 * body waits unread (S1_CONN_WAIT; at most the input buffer's bytes of it are taken in). A
 * refusal closes the connection, lingering, with the body never read; an acceptance installs a
 * body sink (s1_conn_stream_body) that the conn feeds as the bytes arrive, within the deadline
 * the handler gives, --header-timeout per stall, and at --min-rate over every --min-rate-window
 * after --min-rate-grace (else 408); Expect: 100-continue is answered only then. Once the
 * whole body is in the sink, the sink's received() answers later. A streamed body may be
 * chunked (Transfer-Encoding: chunked): decoded as it arrives (http_chunked_decode), the sink
 * sees only its data; a malformed one gets 400 and one longer than the handler allows 413,
 * both closing the connection. A body read whole needs a Content-Length (else 411).
 * Bytes move through the conn's transport (transport.h): the plain syscalls, or TLS for a
 * connection accepted on --tls-port (tls.h; the handshake within its first reads, bounded by
 * --header-timeout like a request's head). Nothing above this file knows which.
 * With --access-log (home->alog, accesslog.h) a head's line is begun when it is parsed, and is
 * written once the output has taken all of its response (offsets in the stream of bytes given
 * to the socket: pipelined responses complete in order), or when the conn is freed, with the
 * body bytes sent so far; a head never answered (the client went first) is logged as 499. The
 * handler adds the verified user (s1_conn_log_user) and audit events (s1_conn_audit).
 */
#ifndef S1_CONN_H
#define S1_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

#include "body.h"
#include "http_parser.h"
#include "httpdate.h"
#include "metrics.h"
#include "minrate.h"
#include "ratelimit.h"

struct accesslog_thread;
struct evbuffer;
struct s1_config;
struct s1_tls;
struct s1_conn;
struct s1_request;

enum s1_conn_state {
    S1_CONN_READ,   /* between requests, or receiving one */
    S1_CONN_WAIT,   /* the current request is being answered asynchronously */
    S1_CONN_LINGER, /* last response sent and write side shut; discarding input, then close */
};

enum s1_dispatch {
    S1_DISPATCH_DONE,    /* the response is queued */
    S1_DISPATCH_PENDING, /* answered later (s1_conn_resume); the conn reads no next request */
};

/* What the handler does with a head, before any of its body is read. */
enum s1_head {
    S1_HEAD_WHOLE, /* read the body whole (at most --max-body), then dispatch() */
    S1_HEAD_DONE,  /* answered already; a body is never read (the connection closes) */
    S1_HEAD_WAIT,  /* the handler decides first: it answers, or installs a body sink
                      (s1_conn_stream_body), then calls s1_conn_resume */
};

/* The request handler, as conn calls it (handler.h implements it). All on the conn's thread. */
struct s1_conn_handler {
    /* Which route a request is for (for metrics labels), from its head. */
    enum metrics_route (*route)(const char *buf, const struct http_request *req);
    /* A head, parsed; its body (if any) not read yet. buf holds it (spans of req). */
    enum s1_head (*head)(struct s1_conn *c, const char *buf, const struct http_request *req);
    /* One complete request whose head answered S1_HEAD_WHOLE, with its body. */
    enum s1_dispatch (*dispatch)(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *body,
                                 size_t body_len);
    /* A response to the request is being queued (every response passes here once). */
    void (*answered)(struct s1_conn *c);
    /* The conn is being freed: drop its req and whatever it holds (a pending answer too). */
    void (*release)(struct s1_conn *c);
};

/* Where a streamed body goes (the handler's; s1_conn_stream_body). On the conn's thread. */
struct s1_body_sink {
    /* n more bytes of the body, in order: 0, or -1 after answering (s1_conn_respond_fatal) */
    int (*write)(struct s1_conn *c, const char *p, size_t n);
    /* all of the body was written: the answer comes later (s1_conn_resume) */
    void (*received)(struct s1_conn *c);
};

/* What a thread gives its connections. Filled by the owner before any conn; owner only. */
struct s1_conn_home {
    struct event_base *base;
    const struct s1_config *cfg;
    struct metrics *metrics;          /* the thread's */
    struct connlimit *conns_per_ip;   /* --max-conns-per-ip, or NULL */
    const struct timeval *header_tv;  /* common timeouts of base */
    const struct timeval *idle_tv;
    const struct timeval *linger_tv;
    const struct s1_conn_handler *handler;
    void *handler_arg;                /* the handler's own per-thread state */
    struct s1_tls *tls;               /* HTTPS (tls.h), shared by every thread; NULL: none */
    struct accesslog_thread *alog;    /* the thread's part of --access-log, or NULL: off */
    void (*closed)(struct s1_conn_home *home); /* after a conn was freed */
    struct httpdate_cache date;       /* the Date header, made once a second */
    TAILQ_HEAD(s1_conn_list, s1_conn) conns;
    unsigned nconns;
    bool draining;                    /* new responses close their connection */
};

/*
 * The part of a conn others may read and the handler's own slot (req); struct s1_conn (conn.c)
 * begins with it, and the rest of it is conn.c's alone. The facts are those of the request
 * being answered, set before the handler sees its head.
 */
struct s1_conn_pub {
    struct s1_conn_home *home;        /* its thread's */
    struct s1_request *req;           /* the handler's state of the request, or NULL (its own) */
    uint8_t peer[RATELIMIT_ADDR_LEN]; /* the client's address key (per-client limits) */
    enum metrics_route route;         /* the request's route (handler->route) */
    bool head_only;                   /* HEAD: the answer's body is its length only */
    bool secure;                      /* it came over TLS (--tls-port) */
    bool metrics_only;                /* it came to --metrics-listen (set by the worker) */
};

/* The public part of c (c's own memory; not const: req is the handler's to set). */
static inline struct s1_conn_pub *s1_conn_pub(const struct s1_conn *c)
{
    return (struct s1_conn_pub *)(void *)(uintptr_t)c;
}

/*
 * Takes an accepted, non-blocking socket from the client with address key peer (counted in
 * home->conns_per_ip, if on, until the conn is freed) and address addr as text (for the access
 * log: accesslog_addr_text; NULL when it is off), speaking TLS (home->tls) if tls.
 * With proxy (a --trusted-proxy address: peer not counted) a PROXY header comes first, and the
 * client it names replaces peer (and addr) and is counted then. If TLS cannot start (out of
 * memory) the socket is closed at once, home->closed called, and NULL returned; else the new
 * conn.
 */
struct s1_conn *s1_conn_new(struct s1_conn_home *home, int fd,
                            const uint8_t peer[RATELIMIT_ADDR_LEN], const char *addr, bool tls,
                            bool proxy);
/* Frees it now; only for the worker's own loops (drain, shutdown), never inside conn code. */
void s1_conn_free(struct s1_conn *c);
/* Worker starts draining: idle connections close, busy ones close after their response. */
void s1_conn_drain(struct s1_conn *c);
/* s1_conn_drain of every conn of home (home->draining set first). */
void s1_conn_drain_all(struct s1_conn_home *home);

/*
 * For the handler: queue the response to the current request. body (NULL: none) is taken:
 * the conn releases it once sent or dropped, and *body is left empty.
 */
void s1_conn_respond(struct s1_conn *c, int status, const char *content_type, const char *extra,
                     struct s1_body *body);
/* A short text/plain response; body is a static string. */
void s1_conn_respond_text(struct s1_conn *c, int status, const char *extra, const char *body);
/* An error response after which the connection closes (lingering: the peer may be sending). */
void s1_conn_respond_fatal(struct s1_conn *c, int status, const char *extra, const char *body);
/*
 * For the handler, after S1_HEAD_WAIT: the body goes to sink as it arrives, all of it by
 * deadline_ns (CLOCK_MONOTONIC); sends 100 Continue if the client asked for it. Then call
 * s1_conn_resume. A chunked body may have at most max_chunked bytes of data (more: 413).
 */
void s1_conn_stream_body(struct s1_conn *c, const struct s1_body_sink *sink,
                         uint64_t deadline_ns, uint64_t max_chunked);
/* For the handler's async callbacks: after responding, continue with the next request. */
void s1_conn_resume(struct s1_conn *c);

/*
 * For the handler, before it answers: the access log's line of the current request names user
 * (its credentials were accepted). Nothing when the log is off.
 */
void s1_conn_log_user(struct s1_conn *c, const char *user);
/*
 * For the handler: an audit event about the current request, a line of its own in the access
 * log (accesslog_event: event and detail static; user_len bytes of user as given, or NULL).
 * Never pass a password. Nothing when the log is off.
 */
void s1_conn_audit(struct s1_conn *c, const char *event, const char *user, size_t user_len,
                   const char *detail);

#endif /* S1_CONN_H */
