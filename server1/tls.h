/*
 * tls.h - HTTPS for server1 with OpenSSL: the server context made once at start from
 * --tls-cert and --tls-key (checked there: readable, PEM, the key matches, the certificate
 * valid now), and the TLS transport (transport.h) a connection accepted on --tls-port uses.
 *
 * The profile is Mozilla's "intermediate" one: TLS 1.2 and 1.3 only; for 1.2 the ECDHE and
 * DHE suites with AES-GCM or ChaCha20-Poly1305, the client's order (no server preference);
 * 1.3's default suites; groups X25519, P-256, P-384. ALPN selects http/1.1, and a client
 * offering only other protocols gets none (the handshake goes on, as nginx does). No
 * renegotiation, no compression. Sessions resume by tickets and by a server-side cache of
 * S1_TLS_SESSION_CACHE entries (one per context: a reload starts an empty one), for
 * S1_TLS_SESSION_TIMEOUT_S.
 * Session tickets are sealed (AES-256-CBC, HMAC-SHA256) with keys server1 keeps, not OpenSSL:
 * a ring of S1_TLS_TICKET_KEYS keys from RAND_bytes, a new one every --tls-ticket-rotate. A
 * ticket is made with the newest key and opened with any key in the ring (one made with an
 * older key is renewed); beyond the ring it is not opened and the client gets a full
 * handshake. A key dropped from the ring is wiped; keys are never logged. The ring belongs to
 * the server, not to a context, so a reload keeps tickets issued before it usable.
 * SIGHUP (main) makes a new context from the same files with the same checks as at start:
 * new connections get it, those open keep theirs (an SSL holds a reference to its context);
 * if the files fail a check, the old context stays in use.
 * kTLS is asked for: when the kernel takes over encryption of the sending side, the
 * connection's output goes out with writev and sendfile as on a plain connection.
 *
 * DESIGN: main makes the struct s1_tls before the workers start and frees it after they are
 * joined. Its current SSL_CTX is read by the workers under a read lock held around SSL_new
 * only (s1_tls_attach) and swapped by main under the write lock (s1_tls_reload): once main
 * holds it, no worker is between reading the old pointer and taking its reference, so main
 * drops its own reference at once; the last SSL using the old context frees it. The ticket
 * keys have a lock of their own: the workers' handshakes copy a key under the read lock,
 * main rotates under the write lock (s1_tls_tick). The session cache is locked inside
 * OpenSSL. Each connection's SSL is its conn's, touched by its thread only.
 * Without kTLS, file segments cannot be sendfile()d: the conn's output then holds only memory
 * (files are read into it in pieces, body.h), written as TLS records of at most 16 KiB.
 */
#ifndef S1_TLS_H
#define S1_TLS_H

#include <stdint.h>

#include "transport.h"

#define S1_TLS_ERR_LEN 512
#define S1_TLS_SESSION_CACHE 20480 /* sessions the server-side cache holds */
#define S1_TLS_SESSION_TIMEOUT_S 300 /* a session or ticket is resumed this long (nginx's 5m) */
#define S1_TLS_TICKET_KEYS 3 /* ticket keys in the ring: the newest and two before it */
#define S1_TLS_INFO_LEN 512 /* s1_tls_describe's text */

struct ssl_ctx_st;
struct s1_tls; /* the server's TLS state: the context in use, the ticket keys */

/*
 * The server context from the PEM files cert_file (the leaf first, then its chain) and
 * key_file. NULL with one line in err (S1_TLS_ERR_LEN) naming the file at fault: unreadable,
 * no certificate or key in it, a key that does not match, a certificate expired or not yet
 * valid. Key material is never printed. Free with s1_tls_ctx_free (NULL is fine).
 */
struct ssl_ctx_st *s1_tls_ctx_new(const char *cert_file, const char *key_file, char *err);
void s1_tls_ctx_free(struct ssl_ctx_st *ctx);

/*
 * The server's TLS state: a context from cert_file and key_file (s1_tls_ctx_new's checks; NULL
 * with the reason in err) and a first ticket key; a new key every rotate_ns from s1_tls_tick
 * (0: never). The paths are kept (not copied) for s1_tls_reload. Free with s1_tls_free once
 * no thread uses it (NULL is fine).
 */
struct s1_tls *s1_tls_new(const char *cert_file, const char *key_file, uint64_t rotate_ns,
                          char *err);
void s1_tls_free(struct s1_tls *tls);

/*
 * SIGHUP (one thread, main): a new context from the same files, with the same checks. 0: new
 * connections use it, and info (S1_TLS_INFO_LEN) is s1_tls_describe's text. -1: nothing
 * changed, the reason naming the file in err.
 */
int s1_tls_reload(struct s1_tls *tls, char *info, char *err);

/* "SUBJECT, not after DATE" of the certificate in use into info (S1_TLS_INFO_LEN). */
void s1_tls_describe(struct s1_tls *tls, char *info);

/*
 * One thread (main), often (every 500 ms): makes a new ticket key when rotate_ns has passed
 * since the last one (now_ns: clock_now_ns), dropping and wiping the oldest beyond
 * S1_TLS_TICKET_KEYS. 1 if it rotated, 0 if not yet, -1 if RAND_bytes failed (the ring kept).
 */
int s1_tls_tick(struct s1_tls *tls, uint64_t now_ns);

/*
 * Makes t the TLS transport of the accepted socket fd (server side; the handshake runs within
 * its first reads). Handshakes are counted in metrics. 0, or -1 (out of memory: t unchanged,
 * the caller closes fd).
 */
int s1_tls_attach(struct s1_transport *t, struct s1_tls *tls, int fd, struct metrics *metrics);

#endif /* S1_TLS_H */
