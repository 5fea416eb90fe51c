/*
 * tls.h - HTTPS for server1 with OpenSSL: the server context made once at start from
 * --tls-cert and --tls-key (checked there: readable, PEM, the key matches, the certificate
 * valid now), and the TLS transport (transport.h) a connection accepted on --tls-port uses.
 *
 * The profile is Mozilla's "intermediate" one: TLS 1.2 and 1.3 only; for 1.2 the ECDHE and
 * DHE suites with AES-GCM or ChaCha20-Poly1305, the client's order (no server preference);
 * 1.3's default suites; groups X25519, P-256, P-384. ALPN selects http/1.1, and a client
 * offering only other protocols gets none (the handshake goes on, as nginx does). No
 * renegotiation, no compression. Sessions resume by tickets (keys made by OpenSSL at start and
 * never rotated until a restart) and by a server-side cache of S1_TLS_SESSION_CACHE entries,
 * for S1_TLS_SESSION_TIMEOUT_S.
 * kTLS is asked for: when the kernel takes over encryption of the sending side, the
 * connection's output goes out with writev and sendfile as on a plain connection.
 *
 * DESIGN: main makes the one SSL_CTX before the workers start and frees it after they are
 * joined; the workers share it read-only (SSL_new, the session cache and ticket keys are
 * locked inside OpenSSL). Each connection's SSL is its conn's, touched by its thread only.
 * Without kTLS, file segments cannot be sendfile()d: the conn's output then holds only memory
 * (files are read into it in pieces, body.h), written as TLS records of at most 16 KiB.
 */
#ifndef S1_TLS_H
#define S1_TLS_H

#include "transport.h"

#define S1_TLS_ERR_LEN 512
#define S1_TLS_SESSION_CACHE 20480 /* sessions the server-side cache holds */
#define S1_TLS_SESSION_TIMEOUT_S 300 /* a session or ticket is resumed this long (nginx's 5m) */

struct ssl_ctx_st;

/*
 * The server context from the PEM files cert_file (the leaf first, then its chain) and
 * key_file. NULL with one line in err (S1_TLS_ERR_LEN) naming the file at fault: unreadable,
 * no certificate or key in it, a key that does not match, a certificate expired or not yet
 * valid. Key material is never printed. Free with s1_tls_ctx_free (NULL is fine).
 */
struct ssl_ctx_st *s1_tls_ctx_new(const char *cert_file, const char *key_file, char *err);
void s1_tls_ctx_free(struct ssl_ctx_st *ctx);

/*
 * Makes t the TLS transport of the accepted socket fd (server side; the handshake runs within
 * its first reads). Handshakes are counted in metrics. 0, or -1 (out of memory: t unchanged,
 * the caller closes fd).
 */
int s1_tls_attach(struct s1_transport *t, struct ssl_ctx_st *ctx, int fd,
                  struct metrics *metrics);

#endif /* S1_TLS_H */
