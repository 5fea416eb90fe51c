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
 * the server, not to a context.
 * kTLS is asked for: when the kernel takes over encryption of the sending side, the
 * connection's output goes out with writev and sendfile as on a plain connection.
 *
 * DESIGN: main makes the struct s1_tls before the workers start and frees it after they are
 * joined; the workers share its SSL_CTX read-only (SSL_new and the session cache are locked
 * inside OpenSSL). The ticket keys have a lock: the workers' handshakes copy a key under the
 * read lock, main rotates under the write lock (s1_tls_tick). Each connection's SSL is its
 * conn's, touched by its thread only.
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
 * (0: never). Free with s1_tls_free once
 * no thread uses it (NULL is fine).
 */
struct s1_tls *s1_tls_new(const char *cert_file, const char *key_file, uint64_t rotate_ns,
                          char *err);
void s1_tls_free(struct s1_tls *tls);

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
