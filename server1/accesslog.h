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
 * DESIGN: main opens the file (accesslog_open) before the workers start; each worker owns one
 * struct accesslog_thread: its own descriptor of the file (a dup, O_APPEND), its own buffer,
 * its own time cache and request ids. A line is formatted straight into the buffer, which is
 * written with one write() when it could not take another line of the longest kind, at most
 * every ACCESSLOG_FLUSH_MS from the worker's timer, and at exit: lines of different threads
 * never share a write, and a write of whole lines to an O_APPEND file is not interleaved with
 * another. To a pipe (-, stdout) a write is atomic only up to PIPE_BUF: there the buffer goes
 * in writes of whole lines of at most PIPE_BUF bytes (a longer line alone in its write). SIGUSR1 (main: accesslog_reopen) opens the path again and hands each worker a new
 * descriptor through next_fd (atomic exchange); the worker, at its next flush, writes what it
 * buffered to the old descriptor, closes it and goes on with the new one: every line lands in
 * exactly one of the two files, whole. A failed write is counted (*write_errors, /metrics),
 * logged once per process, and its lines dropped; serving goes on.
 */
#ifndef S1_ACCESSLOG_H
#define S1_ACCESSLOG_H

#include <stdatomic.h>
#include <stdbool.h>
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

/* The file, shared by every thread: immutable after accesslog_open but for the fields noted. */
struct accesslog {
    enum accesslog_format format;
    const char *path;              /* NULL: stdout */
    uint32_t boot;                 /* random: request ids of this run differ from others' */
    unsigned nthreads;
    struct accesslog_thread *threads; /* [nthreads] */
    _Atomic bool warned;           /* shared: a failed write was logged (once per process) */
};

/* A worker's part. Owner only, but next_fd (main stores, owner takes). */
struct accesslog_thread {
    struct accesslog *log;
    unsigned index;                /* the worker's: part of its request ids */
    int fd;                        /* its own descriptor of the file */
    bool not_file;                 /* fd is a pipe or terminal (stdout): PIPE_BUF writes */
    _Atomic int next_fd;           /* shared: a reopened file's descriptor, or -1 */
    _Atomic uint64_t *write_errors; /* a counter of its metrics, or NULL */
    char *buf;                     /* ACCESSLOG_BUF_SIZE */
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
 * Opens path (NULL or "-": stdout) for appending (created 0644 if missing), one descriptor per
 * thread. Returns -1 with a reason in err (nothing left open).
 */
int accesslog_open(struct accesslog *l, const char *path, enum accesslog_format format,
                   unsigned nthreads, char *err);
/*
 * main, on SIGUSR1: opens the path again and hands every thread its new descriptor (taken at
 * its next flush). Stdout: nothing to do (0). Returns -1 with a reason in err if the file cannot
 * be opened (the old one stays in use).
 */
int accesslog_reopen(struct accesslog *l, char *err);
/* After the threads stopped (their last flush done): closes and frees everything. NULL ok. */
void accesslog_close(struct accesslog *l);

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
/* Writes what is buffered (and takes a reopened file's descriptor, if one waits). */
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
