/*
 * transport.h - how a connection's bytes move: recv, writev, the output buffer's writes,
 * shutdown and close behind one ops table, so conn.c has one I/O path whatever the socket
 * speaks. The plain transport (transport.c) is the syscalls themselves (recv, writev,
 * evbuffer_write_atmost with sendfile, shutdown, close); the TLS one is in tls.c.
 *
 * DESIGN: a struct s1_transport lives inside its conn and is touched only by the conn's
 * thread. Every call is non-blocking and answers like the syscall it stands for: bytes, 0 at
 * the end of the stream (recv), or -1 with errno (EAGAIN: wait). A TLS read may need the
 * socket writable and a TLS write readable (a handshake step): after an EAGAIN, want_write or
 * want_read says which readiness the conn must wait for besides the obvious one.
 */
#ifndef S1_TRANSPORT_H
#define S1_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct evbuffer;
struct metrics;
struct ssl_st;
struct s1_transport;

struct s1_transport_ops {
    /* Like recv(2): bytes read, 0 at the end of the stream, -1 with errno. */
    ssize_t (*recv)(struct s1_transport *t, void *buf, size_t len);
    /* Like writev(2) (cnt <= 2): bytes written, -1 with errno. */
    ssize_t (*writev)(struct s1_transport *t, const struct iovec *iov, int cnt);
    /* Like evbuffer_write_atmost: writes (and drains) about budget bytes of out, -1 + errno. */
    int (*write_out)(struct s1_transport *t, struct evbuffer *out, size_t budget);
    /* True when bytes already taken off the socket wait to be read (no event will say so).
     * With TLS they may be the start of a record not all here yet: a recv then answers EAGAIN
     * and the socket's readiness tells when the rest comes (conn.c reads while this holds). */
    bool (*pending)(const struct s1_transport *t);
    /* Ends the sending side (a lingering close): 0, or -1 with errno. */
    int (*shutdown)(struct s1_transport *t);
    /* Ends the connection and closes the socket (once; t is not used after). */
    void (*close)(struct s1_transport *t);
};

/* One connection's transport (embedded in the conn; owner thread only). */
struct s1_transport {
    const struct s1_transport_ops *ops;
    int fd;
    bool sendfile;   /* the output may hold sendfile segments (plain, or kTLS send) */
    bool want_write; /* the last recv's EAGAIN waits for writability */
    bool want_read;  /* the last write's EAGAIN waits for readability */
    size_t retry_len; /* TLS: bytes of a refused write that must be offered again, at least,
                         from the first byte not reported written (0: none) */
    /* TLS only */
    struct ssl_st *ssl;       /* the session, NULL once freed */
    struct metrics *metrics;  /* the thread's: handshakes counted there */
    bool handshake_done;      /* the handshake finished (counted) */
    bool ktls_send;           /* the kernel encrypts what is written (kTLS TX) */
    bool fatal;               /* a TLS error, or the peer's close_notify came: close without
                                 sending one */
};

/* The plain transport over fd: today's syscalls. */
void s1_transport_plain(struct s1_transport *t, int fd);

#endif /* S1_TRANSPORT_H */
