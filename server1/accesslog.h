/*
 * accesslog.h - the access log (--access-log PATH|-, --access-log-format common|combined|json):
 * one line per response, written once the response is complete or its connection dropped,
 * with the body bytes actually sent (nginx's $body_bytes_sent); and audit events (failed
 * logins, sign-ups, password changes, account deletions, rate-limit refusals) as lines of
 * their own in the same file. The formats (docs/operate.md, "Access log"):
 *   common:   ADDR - USER [TIME] "METHOD TARGET PROTOCOL" STATUS BYTES MS ID
 *   combined: ADDR - USER [TIME] "METHOD TARGET PROTOCOL" STATUS BYTES "REFERER" "UA" MS ID
 *   json:     {"time":..., "addr":..., "user":..., "method":..., ..., "request_id":...}
 * and an event: ADDR - USER [TIME] "AUDIT EVENT" DETAIL ID, or {"event":..., ...}. Text from
 * the client is escaped as nginx escapes it: in CLF '"', '\' and bytes < 0x20 or >= 0x7f as
 * \xHH; in JSON as JSON strings, bytes >= 0x7f as \u00HH (so the line is valid UTF-8 always).
 * A password is never an input here.
 *
 * DESIGN: main opens the file (accesslog_open), which starts the writer thread, before the
 * workers start. Each worker owns one struct accesslog_thread: its buffer, its time cache and
 * its request ids; a line is formatted straight into the buffer. When the buffer could not take
 * another line of the longest kind, from the worker's 100 ms timer (ACCESSLOG_FLUSH_MS), and at
 * its exit, the worker hands the buffer to the writer (accesslog_flush: a queue under lock, a
 * fresh buffer from the pool) and goes on: a write() to the file never stalls a worker's loop
 * (measured: 1 ms for a write of 45 KB on ext4, at times 23 ms, which the worker spent not
 * serving). The writer writes each buffer with one write() to a descriptor opened O_APPEND:
 * lines are never split or interleaved (to a pipe, stdout, writes of whole lines of at most
 * PIPE_BUF). SIGUSR1 (main: accesslog_reopen) opens the path again and hands the new descriptor
 * to the writer, which writes what it was handed until then to the old file, closes it and goes
 * on with the new one: every line lands in exactly one of the two files, whole. If the disk is
 * ACCESSLOG_QUEUE_MAX buffers behind, a worker drops its buffer rather than wait; that and a
 * failed write are counted (*write_errors, /metrics) and logged once; serving goes on.
 * Lock: lock protects the queue, the pool, next_fd, stopping and idle; it is held for list
 * operations only, never across a write.
 */
#ifndef S1_ACCESSLOG_H
#define S1_ACCESSLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http_parser.h"

#define ACCESSLOG_ERR_LEN 256
#define ACCESSLOG_ADDR_MAX 46     /* INET6_ADDRSTRLEN: an address as text, NUL included */
#define ACCESSLOG_METHOD_MAX 16   /* bytes of the method kept (longer: cut) */
#define ACCESSLOG_TARGET_MAX 2048 /* bytes of the request target kept (longer: cut) */
#define ACCESSLOG_FIELD_MAX 512   /* bytes of Referer and User-Agent kept (longer: cut) */
#define ACCESSLOG_USER_MAX 64     /* bytes of a user name kept (ACCOUNT_USER_MAX) */
#define ACCESSLOG_DETAIL_MAX 64   /* bytes of an event's detail kept */
/* the longest line: every kept byte escaped to 6 (JSON's \u00HH), plus the rest */
#define ACCESSLOG_LINE_MAX                                                                     \
    (6 * (ACCESSLOG_METHOD_MAX + ACCESSLOG_TARGET_MAX + 2 * ACCESSLOG_FIELD_MAX +              \
          ACCESSLOG_USER_MAX + ACCESSLOG_DETAIL_MAX) +                                         \
     512)
#define ACCESSLOG_BUF_SIZE (64 * 1024) /* a thread's buffer */
#define ACCESSLOG_FLUSH_MS 100         /* a line waits in a buffer at most about this long */

enum accesslog_format {
    ACCESSLOG_COMMON,   /* CLF + duration and request id */
    ACCESSLOG_COMBINED, /* nginx's combined + duration and request id (the default) */
    ACCESSLOG_JSON,     /* one JSON object a line */
};

/* What one request's line says: filled from its head, completed when it is answered. */
struct accesslog_entry {
    struct accesslog_entry *next; /* the conn's queue of responses not yet complete */
    uint64_t start_ns;            /* CLOCK_MONOTONIC: its head was parsed (or it was answered) */
    uint64_t id;                  /* request id (accesslog_next_id) */
    uint64_t body_off;            /* the conn's output offset where its body begins */
    uint64_t end_off;             /* ... and where its response ends */
    uint64_t body_len;            /* body bytes the response promised */
    int status;                   /* 0 until answered */
    bool has_head;                /* false: answered before a head was parsed (400, 408) */
    bool has_referer;             /* the head had a Referer (as "-" when not) */
    bool has_ua;                  /* ... a User-Agent */
    int version_minor;            /* HTTP/1.x */
    uint16_t method_len;
    uint16_t target_len;
    uint16_t referer_len;
    uint16_t ua_len;
    uint16_t user_len;            /* 0: no verified user ("-") */
    char method[ACCESSLOG_METHOD_MAX];
    char target[ACCESSLOG_TARGET_MAX];
    char referer[ACCESSLOG_FIELD_MAX];
    char ua[ACCESSLOG_FIELD_MAX];
    char user[ACCESSLOG_USER_MAX];
};

#define ACCESSLOG_QUEUE_MAX 256 /* buffers waiting for the writer (16 MiB); beyond, dropped */

struct accesslog_buf;

/* The file, shared by every thread: immutable after accesslog_open but for the fields noted. */
struct accesslog {
    enum accesslog_format format;
    const char *path;              /* NULL: stdout */
    uint32_t boot;                 /* random: request ids of this run differ from others' */
    unsigned nthreads;
    struct accesslog_thread *threads; /* [nthreads] */
    _Atomic bool warned;           /* shared: a failed write was logged (once per process) */
    /* shared: atomically added to by the writer and the workers; set before the workers start
     * (a counter of the first worker's metrics, which its owner never writes), or NULL */
    _Atomic uint64_t *write_errors;
    int fd;                        /* the file at open; the writer's afterwards */
    pthread_t writer;
    bool started;                  /* writer runs */
    pthread_mutex_t lock;          /* protects what follows; never held across I/O */
    pthread_cond_t wake;           /* the writer waits on it for work */
    pthread_cond_t drained;        /* accesslog_drain waits on it for an idle writer */
    struct accesslog_buf *queue;   /* handed buffers, oldest first */
    struct accesslog_buf *queue_tail;
    unsigned queued;               /* buffers handed and not yet written (queue + the writer's
                                      batch): at most ACCESSLOG_QUEUE_MAX */
    struct accesslog_buf *pool;    /* written buffers, for the workers to take */
    int next_fd;                   /* a reopened file for the writer, or -1 */
    bool stopping;                 /* accesslog_close: write what is left and end */
    bool idle;                     /* the writer waits with nothing to do */
};

/* A worker's part. Owner only. */
struct accesslog_thread {
    struct accesslog *log;
    unsigned index;                /* the worker's: part of its request ids */
    struct accesslog_buf *cur;     /* the buffer being filled */
    char *buf;                     /* ... its ACCESSLOG_BUF_SIZE bytes */
    size_t len;
    uint64_t next_seq;
    char id_prefix[24];            /* "BOOT-INDEX-" of its request ids */
    size_t id_prefix_len;
    int64_t time_s;                /* the wall second the texts below are of */
    int64_t wall_minus_mono_ns;    /* CLOCK_REALTIME - CLOCK_MONOTONIC, taken at time_s */
    char clf_time[32];             /* "27/Nov/2026:04:30:00 +0000" */
    char iso_time[24];             /* "2026-11-27T04:30:00" */
    char iso_zone[8];              /* "+00:00" */
};

/*
 * Opens path (NULL or "-": stdout) for appending (created 0644 if missing), with a buffer per
 * thread, and starts the writer thread. Returns -1 with a reason in err (nothing left open).
 */
int accesslog_open(struct accesslog *l, const char *path, enum accesslog_format format,
                   unsigned nthreads, char *err);
/*
 * main, on SIGUSR1: opens the path again and hands the new descriptor to the writer (taken
 * once it has written what it was handed). Stdout: nothing to do (0). Returns -1 with a reason
 * in err if the file cannot be opened (the old one stays in use).
 */
int accesslog_reopen(struct accesslog *l, char *err);
/*
 * After the workers stopped (their last flush done): the writer writes what it was handed and
 * ends; closes and frees everything. NULL ok.
 */
void accesslog_close(struct accesslog *l);
/* Waits until the writer has written every buffer handed so far (and taken a reopened file). */
void accesslog_drain(struct accesslog *l);

/* The thread's next request id. */
uint64_t accesslog_next_id(struct accesslog_thread *t);
/* Request id id of t as text ("3f2a9c10-2-17") into out (>= 48 bytes); returns its length. */
size_t accesslog_id_text(const struct accesslog_thread *t, uint64_t id, char *out);
/*
 * A response complete (or cut short after body_sent bytes): its line, at now_ns (monotonic; the
 * wall time of the line is derived from it, the offset between the clocks taken once a second).
 */
void accesslog_request(struct accesslog_thread *t, const char *addr,
                       const struct accesslog_entry *e, uint64_t body_sent, uint64_t now_ns);
/*
 * An audit event (a static name: "login_failed", ...) from addr for user (user_len bytes as
 * given, NULL: none), with an optional static detail, tied to request id.
 */
void accesslog_event(struct accesslog_thread *t, const char *addr, const char *event,
                     const char *user, size_t user_len, const char *detail, uint64_t id);
/* Hands what is buffered to the writer (a worker, at its timer, when full, and at exit). */
void accesslog_flush(struct accesslog_thread *t);

/* Fills e from a parsed head in buf (Referer and User-Agent only if headers) at now_ns. */
void accesslog_entry_head(struct accesslog_entry *e, const char *buf,
                          const struct http_request *req, bool headers, uint64_t now_ns);
/* Fills e for an answer without a parsed head. */
void accesslog_entry_blank(struct accesslog_entry *e, uint64_t now_ns);
/* The verified user of e (bytes kept up to ACCESSLOG_USER_MAX). */
void accesslog_entry_user(struct accesslog_entry *e, const char *user, size_t len);

/* An address as text into out (ACCESSLOG_ADDR_MAX): IPv4-mapped IPv6 as IPv4; "-" if none. */
void accesslog_addr_text(const struct sockaddr *sa, socklen_t len, char *out);

/* Pure formatting, for the tests too. */
struct accesslog_line {
    enum accesslog_format format;
    const char *time;     /* CLF: "27/Nov/2026:04:30:00 +0000"; JSON: RFC 3339 with ms */
    const char *addr;
    const char *id;
    uint64_t bytes;       /* body bytes sent */
    uint64_t duration_ns;
};
/* A request's line, '\n' included, into out (ACCESSLOG_LINE_MAX bytes); returns its length. */
size_t accesslog_format_request(const struct accesslog_line *l, const struct accesslog_entry *e,
                                char *out);
/* An event's line, '\n' included, into out (ACCESSLOG_LINE_MAX bytes); returns its length. */
size_t accesslog_format_event(const struct accesslog_line *l, const char *event,
                              const char *user, size_t user_len, const char *detail, char *out);
/* n bytes of s escaped as in CLF (out: 4 n bytes) or JSON (6 n); returns the length written. */
size_t accesslog_escape_clf(const char *s, size_t n, char *out);
size_t accesslog_escape_json(const char *s, size_t n, char *out);

#endif /* S1_ACCESSLOG_H */
