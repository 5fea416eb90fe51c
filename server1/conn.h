/*
 * conn.h - one client connection: reads bytes into a contiguous buffer, parses ONE request at a
 * time (http_parser), hands it to the handler, writes the response (writev fast path, evbuffer
 * with references / sendfile for the rest), then keep-alive or close. Pipelined requests stay
 * in the buffer and are handled in order once the previous response is queued.
 *
 * DESIGN: a conn belongs to one thread and is only touched there. It knows that thread only as
 * its home (struct s1_conn_home: the event base, timeouts, limits, counters) and the request
 * handler only through the functions in home->handler, so conn includes neither worker.h nor
 * handler.h: the worker owns homes and conns, the handler answers through this API. Every entry point
 * (socket readable/writable, timer, auth answer via s1_conn_resume, worker drain) ends in one
 * place that frees the conn if it died, so nothing below an entry point ever frees it. While a
 * request waits for server2 the conn holds the authclient handle and cancels it if it is freed
 * first, so a late answer finds nothing to call. Timeouts: --header-timeout from the first byte
 * of a request until it is complete (head and body), --idle-timeout between requests and for a
 * stalled write, and --send-timeout + size / --min-rate for the whole of the output queued. Expect: 100-continue is answered "100 Continue" once the head is accepted and
 * the body has not arrived yet; a body over --max-body gets 413 instead, unread. Errors in the
 * request framing (400, 413, 431, 501, 505) close the connection after the response, with a
 * short lingering close so the client can read it while still sending.
 * PUT /files/{name}: the head (Content-Length present and <= --max-upload) goes to the handler
 * at once, which has server2 check the credentials while the body waits unread (S1_CONN_WAIT;
 * at most the input buffer's bytes of it are taken in). A refusal (401, 404, 429, 507, ...)
 * closes the connection, lingering, with the body never read; Expect: 100-continue is
 * answered only once the handler accepts the upload (s1_conn_upload_accept). Then the body is
 * received into memory or a temp file (commit_body_*), within --upload-timeout + size /
 * --min-rate and --header-timeout per stall (else 408), and handed back to the handler
 * (s1_handler_upload_received), which waits for the committer (S1_CONN_WAIT).
 */
#ifndef S1_CONN_H
#define S1_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

#include "commit.h"
#include "credcache.h"
#include "files.h"
#include "http_parser.h"
#include "metrics.h"
#include "ratelimit.h"
#include "respbuf.h"

struct evbuffer;
struct s1_conn;
struct s1_config;

enum s1_conn_state {
    S1_CONN_READ,   /* between requests, or receiving one */
    S1_CONN_WAIT,   /* the current request is being answered asynchronously */
    S1_CONN_LINGER, /* last response sent and write side shut; discarding input, then close */
};

enum s1_body_kind {
    S1_BODY_NONE,
    S1_BODY_MEM,  /* data/len; freed with free(owned) once sent if owned != NULL, or
                     blob unreferenced once sent if blob != NULL */
    S1_BODY_FILE, /* len bytes of fd from off: sent with sendfile; the fd is closed once sent */
    S1_BODY_STREAM, /* len bytes of fd (O_DIRECT) from 0, read into rbuf one chunk at a time
                       as the socket takes them; fd closed and rbuf freed at the end */
};

struct s1_body {
    enum s1_body_kind kind;
    const void *data;
    size_t len;
    void *owned;
    struct files_blob *blob;
    struct respbuf *rbuf; /* S1_BODY_MEM: data lies in it, freed once sent; S1_BODY_STREAM */
    int fd;
    uint64_t off; /* S1_BODY_FILE: where the bytes start in fd */
    struct store_segment *pin; /* S1_BODY_FILE from the upload store: unpinned once sent */
};

enum s1_dispatch {
    S1_DISPATCH_DONE,    /* the response is queued */
    S1_DISPATCH_PENDING, /* answered later (s1_conn_resume); the conn reads no next request */
};

/* The request handler, as conn calls it (handler.h implements it). All on the conn's thread. */
struct s1_conn_handler {
    /* Which route a request is for (for metrics labels), from its head. */
    enum metrics_route (*route)(const char *buf, const struct http_request *req);
    /* One complete request (a PUT to /files/: its head only, body_len 0). */
    enum s1_dispatch (*dispatch)(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *body,
                                 size_t body_len);
    /* The body of the conn's PUT is all received; the answer comes later (s1_conn_resume). */
    void (*upload_received)(struct s1_conn *c);
    /* The conn is being freed with an answer still pending: forget it. */
    void (*abandon)(struct s1_conn *c);
};

/* What a thread gives its connections. Filled by the owner before any conn; owner only. */
struct s1_conn_home {
    struct event_base *base;
    const struct s1_config *cfg;
    struct metrics *metrics;          /* the thread's */
    struct files *files;              /* the files streamed responses are read from */
    struct committer *commit;         /* uploads' bodies; NULL with --read-only */
    struct connlimit *conns_per_ip;   /* --max-conns-per-ip, or NULL */
    const struct timeval *header_tv;  /* common timeouts of base */
    const struct timeval *idle_tv;
    const struct timeval *linger_tv;
    const struct s1_conn_handler *handler;
    void *handler_arg;                /* the handler's own per-thread state */
    void (*closed)(struct s1_conn_home *home); /* after a conn was freed */
    TAILQ_HEAD(s1_conn_list, s1_conn) conns;
    unsigned nconns;
    bool draining;                    /* new responses close their connection */
};

struct s1_conn {
    struct s1_conn_home *home;
    TAILQ_ENTRY(s1_conn) link;
    int fd;
    uint8_t peer[RATELIMIT_ADDR_LEN]; /* the client's address key (per-client limits) */
    enum s1_conn_state state;
    struct event rd_ev;
    struct event wr_ev;
    struct event tmo_ev;
    bool reading;        /* rd_ev is added */
    bool timer_is_header; /* tmo_ev is the header timer of the request being received */

    /* input: in[in_start..in_end) not yet consumed */
    char *in;
    size_t in_start;
    size_t in_end;
    size_t in_cap;
    struct http_parser parser;
    bool head_done;         /* parser finished the current head; waiting for its body */
    bool sent_continue;

    /* output: NULL until a response cannot be written at once */
    struct evbuffer *out;
    unsigned zero_writes;   /* consecutive flushes that wrote nothing */
    uint64_t send_deadline_ns; /* the output queued now must be taken by then (0: none) */
    /* a S1_BODY_STREAM being sent: the next chunk is read once the output has drained */
    int st_fd;              /* -1 when none */
    struct respbuf *st_buf;
    uint64_t st_off;        /* where the next chunk starts in the file */
    uint64_t st_left;       /* body bytes not read yet */

    /* the request being answered */
    enum metrics_route route;
    bool head_only;         /* HEAD: headers without the body */
    bool keep_alive;
    bool http10;            /* HTTP/1.0: keep-alive must be announced */
    bool req_inflight;      /* counted in server1_inflight_requests */
    bool more_input;        /* more requests are already buffered: batch the writes */
    bool auth_pending;
    uint64_t auth_handle;
    char name[FILES_NAME_MAX + 1]; /* decoded file name, kept while auth is in flight */
    size_t name_len;
    bool name_ok;           /* the name passed files_name_decode (else 404 after auth) */
    char user[ACCOUNT_USER_MAX + 1]; /* PUT/DELETE: who asked, kept while auth is in flight */
    struct credcache_key cred_key; /* GET with --auth-cache: what to put in on success */
    uint64_t cred_epoch;           /* the cache's epoch when the VERIFY was sent */
    bool cred_cacheable;           /* cred_key is set: a success may be cached */

    /* PUT body being streamed to disk */
    bool body_unread;       /* a PUT body follows and is not accepted yet: an answer closes */
    bool expect_continue;   /* ... and its client waits for 100 Continue */
    bool uploading;         /* up is this request's PUT body (until handed to a job) */
    bool up_open;           /* counted in the committer's open uploads (until submitted) */
    uint64_t up_deadline_ns; /* the whole body must be here by then */
    struct commit_body up;
    uint64_t up_left;       /* body bytes still to receive */
    struct commit_job *job; /* submitted to the committer; its answer is pending */

    bool close_after;  /* close once the output is flushed */
    bool linger_after; /* ... after a lingering close (the peer may still be sending) */
    bool peer_eof;
    bool reset;        /* close with a reset: what is still unsent is dropped */
    bool dead;         /* free at the end of the current entry point */
};

/*
 * Takes an accepted, non-blocking socket from the client with address key peer (counted in
 * home->conns_per_ip, if on, until the conn is freed).
 */
void s1_conn_new(struct s1_conn_home *home, int fd, const uint8_t peer[RATELIMIT_ADDR_LEN]);
/* Frees it now; only for the worker's own loops (drain, shutdown), never inside conn code. */
void s1_conn_free(struct s1_conn *c);
/* Worker starts draining: idle connections close, busy ones close after their response. */
void s1_conn_drain(struct s1_conn *c);

/* For the handler: queue the response to the current request. */
void s1_conn_respond(struct s1_conn *c, int status, const char *content_type, const char *extra,
                     struct s1_body *body);
/* A short text/plain response; body is a static string. */
void s1_conn_respond_text(struct s1_conn *c, int status, const char *extra, const char *body);
/*
 * For the handler, once a PUT's credentials, name and quota are accepted: gets the body's place
 * ready (memory or a temp file) and starts receiving it, sending 100 Continue if it was asked
 * for. False after answering (503 or 507) when there is no room for it; then call
 * s1_conn_resume either way.
 */
bool s1_conn_upload_accept(struct s1_conn *c);
/* For the handler's async callbacks: after responding, continue with the next request. */
void s1_conn_resume(struct s1_conn *c);

#endif /* S1_CONN_H */
