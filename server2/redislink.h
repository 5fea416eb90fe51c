/*
 * redislink.h - one blocking connection to a Redis node or a Sentinel: TCP, a unix socket, or
 * TLS (rediss://). hiredis formats the commands and parses the replies (its redisReader); the
 * bytes go through this module, because Debian 12's hiredis (0.14) has no TLS of its own and
 * no way to plug a transport under its context. The calls mirror hiredis's blocking API
 * (redisCommand, redisAppendCommand, redisGetReply...), err and errstr included, so callers
 * read like hiredis callers.
 * DESIGN: blocking sockets with SO_RCVTIMEO/SO_SNDTIMEO as hiredis does (a read or write past
 * io_ms fails the link: err REDIS_ERR_IO, "Resource temporarily unavailable"), a connect
 * bounded by poll. Appended commands collect in one output buffer, written whole before the
 * first reply is read: a batch is one write. With TLS the server's certificate is verified
 * against the context's CAs and its names or IP addresses must match the host connected to;
 * a client certificate is offered when the context has one (Redis's tls-auth-clients).
 * Thread-safety: a link is used by one thread at a time; a TLS context is shared read-only.
 */
#ifndef REDISLINK_H
#define REDISLINK_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#define REDISLINK_ERRSTR_LEN 128
#define REDISLINK_TLS_ERR_LEN 256

struct ssl_ctx_st;
struct ssl_st;

struct redislink {
    int err; /* 0, or REDIS_ERR_IO / _EOF / _PROTOCOL / _OOM / _OTHER: the link is unusable */
    char errstr[REDISLINK_ERRSTR_LEN];
    int fd;
    struct ssl_st *ssl;   /* NULL without TLS */
    redisReader *reader;
    char *obuf;           /* appended commands not yet written */
    size_t olen, ocap;
};

/*
 * The client context for rediss:// (TLS 1.2 or 1.3): CAs from ca_file (NULL: the system's),
 * and a client certificate and key if cert_file is given. NULL with a reason in err.
 */
struct ssl_ctx_st *redislink_tls_context(const char *ca_file, const char *cert_file,
                                         const char *key_file, char *err);
void redislink_tls_context_free(struct ssl_ctx_st *ctx);

/*
 * Connects to host:port (or the unix socket path when it is not NULL), within connect_ms, reads
 * and writes then bounded by io_ms; with tls, the TLS handshake and the server's certificate
 * checked for host. NULL with a reason in err (REDISLINK_ERRSTR_LEN).
 */
struct redislink *redislink_connect(const char *host, int port, const char *path,
                                    unsigned connect_ms, unsigned io_ms, struct ssl_ctx_st *tls,
                                    char *err);
void redislink_free(struct redislink *l);

/* As hiredis's: a reply (freeReplyObject), or NULL with l->err and l->errstr set. */
redisReply *redislink_command(struct redislink *l, const char *fmt, ...);
redisReply *redislink_command_argv(struct redislink *l, int argc, const char **argv,
                                   const size_t *lens);
/* Appends a command to the output buffer; REDIS_OK, or REDIS_ERR (out of memory). */
int redislink_append(struct redislink *l, const char *fmt, ...);
int redislink_append_argv(struct redislink *l, int argc, const char **argv, const size_t *lens);
/* Writes what is appended, then the next reply into *reply; REDIS_OK or REDIS_ERR. */
int redislink_get_reply(struct redislink *l, void **reply);

/*
 * For a subscriber polling the socket: one read into the parser (REDIS_ERR on a failure, EOF
 * included), then the replies complete in it, one per call (*reply NULL when none). Whether
 * bytes already read from the socket wait in the TLS layer (poll would not see them).
 */
int redislink_read(struct redislink *l);
int redislink_buffered_reply(struct redislink *l, void **reply);
bool redislink_pending(const struct redislink *l);

#endif
