/*
 * tls.h - https:// for the load generator, with OpenSSL: one client context per run (TLS 1.2
 * or 1.3, ALPN http/1.1, the server's certificate verified against --cacert or the system
 * store unless --insecure, the host checked against the certificate's names or IP addresses)
 * and the per-connection steps the event loop drives: handshake, read, write, close. Every
 * step is non-blocking; WANT_READ and WANT_WRITE come back as "again" and say which readiness
 * to wait for. With --tls-resume on, each connection slot keeps the last session the server
 * gave it (a TLS 1.3 ticket, or a TLS 1.2 ticket or session ID) and offers it on reconnect.
 * DESIGN: each worker thread makes its own context (the run makes one first, only to report a
 * bad --cacert before any point) and uses it alone, so threads share no OpenSSL object: a
 * shared context's certificate store fills caches lazily under locks every handshake would
 * take. The context keeps no session cache of its own; sessions live only in the connection
 * slots of that thread. lg_tls_stats is per worker, merged by the run after pthread_join.
 */
#ifndef LG_TLS_H
#define LG_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hist.h"

#define LG_TLS_ERR_LEN 512

struct ssl_ctx_st;
struct ssl_session_st;
struct ssl_st;

/* The TLS side of one connection slot (embedded in struct lg_conn, owned by its worker). */
struct lg_tls_conn {
    struct ssl_ctx_st *ctx;      /* the worker thread's context */
    struct ssl_st *ssl;          /* the session on the socket, NULL when closed */
    struct ssl_session_st *sess; /* the last session the server gave (--tls-resume on) */
    const char *host;            /* the target's host (SNI, log lines) */
    bool host_is_ip;   /* host is an IP literal: no SNI */
    bool want_write;   /* the last step waits for writability */
    bool fatal;        /* an error: no close_notify, the session is not offered again */
    uint64_t start_ns; /* when the handshake began */
};

/* What the TLS handshakes of one worker (or, merged, of one point) did. */
struct lg_tls_stats {
    uint64_t full;       /* handshakes that did not resume a session */
    uint64_t resumed;    /* handshakes that resumed the session offered */
    uint64_t failed;     /* handshakes that failed (also counted as connect errors) */
    struct hist hs_ns;   /* time from the TCP connection to the end of the handshake, ns */
    const char *version; /* of the first handshake, e.g. "TLSv1.3" (static), NULL: none */
    const char *cipher;  /* its cipher suite (static), NULL: none */
};

/* Options of the client context. */
struct lg_tls_opts {
    const char *host; /* checked against the certificate; SNI unless an IP literal */
    bool host_is_ip;   /* host is an IP literal: no SNI */
    const char *cacert; /* PEM file of trusted CAs; NULL or "": the system store */
    bool insecure;      /* no verification at all */
    bool resume;        /* keep and offer sessions */
};

/*
 * Makes the client context. Returns NULL with a one-line reason in err (an unreadable or
 * empty --cacert, an OpenSSL failure). Free with lg_tls_ctx_free (NULL is fine).
 */
struct ssl_ctx_st *lg_tls_ctx_new(const struct lg_tls_opts *o, char *err);
void lg_tls_ctx_free(struct ssl_ctx_st *ctx);

/* Attaches a new TLS session to the freshly connected socket fd at now. 0, or -1. */
int lg_tls_start(struct lg_tls_conn *c, int fd, uint64_t now);
/*
 * One handshake step. 1: done; 0: again (c->want_write says whether to wait for writability
 * as well); -1: failed (the reason logged: the first failure of the process at error level).
 */
int lg_tls_handshake(struct lg_tls_conn *c);
/* True when the finished handshake resumed the offered session. */
bool lg_tls_resumed(const struct lg_tls_conn *c);
/* Like recv(2): > 0 bytes, 0 at the end of the stream, -1 with errno (EAGAIN: wait). */
ssize_t lg_tls_read(struct lg_tls_conn *c, void *buf, size_t len);
/* Like send(2): > 0 bytes written (possibly fewer than len), -1 with errno (EAGAIN: wait). */
ssize_t lg_tls_write(struct lg_tls_conn *c, const void *buf, size_t len);
/* Ends the TLS session (close_notify when it is healthy, so its session stays resumable). */
void lg_tls_close(struct lg_tls_conn *c);
/* Frees the kept session (at the end of the slot's life). */
void lg_tls_forget(struct lg_tls_conn *c);

void lg_tls_stats_init(struct lg_tls_stats *s);
void lg_tls_stats_merge(struct lg_tls_stats *dst, const struct lg_tls_stats *src);
/* Counts c's finished handshake, taken at now (its start is c->start_ns); notes it. */
void lg_tls_stats_record(struct lg_tls_stats *s, const struct lg_tls_conn *c, uint64_t now);
/* Keeps c's protocol version and cipher if s has none yet. */
void lg_tls_stats_note(struct lg_tls_stats *s, const struct lg_tls_conn *c);

#endif /* LG_TLS_H */
