/*
 * frame.h - the server1 <-> server2 wire format, version 6: binary, length-prefixed frames
 * carrying a 64-bit request id and a time budget, pipelined on persistent connections that
 * start with a mutual challenge-response handshake; server2 may also send an unsolicited
 * INVALIDATE, which server1 acknowledges, and LEASE, the time for which server1 may answer
 * from credentials it cached. After the handshake each frame travels sealed (linkseal.h); this
 * codec sees the frames only. The full description, with the limits and the rules for bad
 * input, is in docs/protocol.md. Pure functions, thread-safe.
 */
#ifndef FRAME_H
#define FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "account.h"
#include "linkauth.h"

#define FRAME_VERSION 6
#define FRAME_MAGIC 0x41555448u /* "AUTH", first four payload bytes of HELLO */
#define FRAME_HEADER_SIZE 20
#define FRAME_MAX_PAYLOAD 640 /* hard limit on the payload of any frame */
#define FRAME_MAX_SIZE (FRAME_HEADER_SIZE + FRAME_MAX_PAYLOAD)
#define FRAME_NONCE_SIZE LINKAUTH_NONCE_SIZE
#define FRAME_MAC_SIZE LINKAUTH_MAC_SIZE
#define FRAME_HELLO_PAYLOAD (4 + 2 + FRAME_NONCE_SIZE)                  /* 38 */
#define FRAME_HELLO_ACK_PAYLOAD (2 + FRAME_NONCE_SIZE + FRAME_MAC_SIZE) /* 66 */
#define FRAME_AUTH_PAYLOAD FRAME_MAC_SIZE                               /* 32 */
#define FRAME_TOKEN_SIZE 16 /* a CREATE's creation token: random, the same when sent again */
#define FRAME_LEASE_PAYLOAD 4
#define FRAME_LEASE_MAX_MS 60000 /* the longest lease a LEASE may grant */

enum frame_type {
    FRAME_HELLO = 1,     /* client -> server, first frame: magic, version, client nonce */
    FRAME_HELLO_ACK = 2, /* server -> client: version, server nonce, server's MAC */
    FRAME_CREATE = 3,    /* client -> server: create account (token, user, password) */
    FRAME_VERIFY = 4,    /* client -> server: check credentials (user, password) */
    FRAME_REPLY = 5,     /* server -> client: status of the request with the same id, + echo */
    FRAME_PING = 6,      /* client -> server: liveness; answered by a REPLY */
    FRAME_AUTH = 7,      /* client -> server, second frame: client's MAC */
    FRAME_SETPASS = 8,   /* client -> server: change password (user, password, new password) */
    FRAME_DELETE = 9,    /* client -> server: delete account (user, password) */
    FRAME_INVALIDATE = 10,     /* server -> client, unsolicited: forget what you cached of user */
    FRAME_INVALIDATE_ACK = 11, /* client -> server: done, same id; empty payload */
    FRAME_LEASE = 12,          /* server -> client, unsolicited: cached credentials may be used
                                * for lease_ms from now (docs/protocol.md, "Leases"); id 0 */
};

/* Whether t is a request server2 answers with a REPLY (what a REPLY may echo). */
static inline int frame_is_request(unsigned t)
{
    return t == FRAME_CREATE || t == FRAME_VERIFY || t == FRAME_PING || t == FRAME_SETPASS ||
           t == FRAME_DELETE;
}

/* Whether t carries (user, password): CREATE, VERIFY, SETPASS, DELETE. */
static inline int frame_has_cred(unsigned t)
{
    return t == FRAME_CREATE || t == FRAME_VERIFY || t == FRAME_SETPASS || t == FRAME_DELETE;
}

enum frame_status {
    FRAME_ST_OK = 0,          /* created / credentials valid / pong / hello accepted */
    FRAME_ST_EXISTS = 1,      /* CREATE: the username is taken */
    FRAME_ST_DENIED = 2,      /* VERIFY: no such user or wrong password */
    FRAME_ST_INVALID = 3,     /* username or password breaks the rules in account.h */
    FRAME_ST_UNAVAILABLE = 4, /* the database is unreachable; retry later */
    FRAME_ST_INTERNAL = 5,    /* any other server-side failure */
    FRAME_ST_BAD_VERSION = 6, /* HELLO_ACK: version not supported; the server closes */
    FRAME_ST_EXPIRED = 7,     /* the request's deadline passed before it was worked on */
    FRAME_ST_LIMITED = 8,     /* VERIFY, SETPASS, DELETE: the user's failed logins are over the
                               * limit; the REPLY's budget_ms says when to try again */
};

struct frame {
    uint8_t type;       /* enum frame_type */
    uint8_t status;     /* enum frame_status; 0 in requests */
    uint64_t id;        /* request id chosen by the client, echoed in the REPLY */
    uint32_t budget_ms; /* requests: how long the client still waits, 0 = no limit; a LIMITED
                         * REPLY: the milliseconds until the user may try again */
    uint16_t version;   /* HELLO and HELLO_ACK only */
    uint8_t req_type;   /* REPLY only: the type of the request it answers */
    uint8_t user_len;   /* requests with credentials, REPLY (echo), INVALIDATE */
    uint16_t pass_len;  /* requests with credentials */
    uint16_t new_len;   /* SETPASS only */
    uint32_t lease_ms;  /* LEASE only: 0..FRAME_LEASE_MAX_MS */
    char user[ACCOUNT_USER_MAX + 1]; /* NUL-terminated copy */
    char pass[ACCOUNT_PASS_MAX + 1]; /* NUL-terminated copy; never log it */
    char new_pass[ACCOUNT_PASS_MAX + 1]; /* SETPASS: NUL-terminated copy; never log it */
    uint8_t nonce[FRAME_NONCE_SIZE]; /* HELLO: client's; HELLO_ACK: server's */
    uint8_t mac[FRAME_MAC_SIZE];     /* HELLO_ACK: server's proof; AUTH: client's proof */
    uint8_t token[FRAME_TOKEN_SIZE]; /* CREATE: the creation token */
};

enum frame_result {
    FRAME_BAD = -1,  /* malformed: the connection must be closed */
    FRAME_MORE = 0,  /* incomplete: wait for more bytes */
    FRAME_DONE = 1,  /* one frame decoded */
};

/*
 * Decodes the first frame in buf[0..len). On FRAME_DONE fills *f and sets *used to the number
 * of bytes it took. On FRAME_BAD writes a short reason (a static string) to *why.
 */
enum frame_result frame_decode(const void *buf, size_t len, struct frame *f, size_t *used,
                               const char **why);

/*
 * Encodes f into buf (cap bytes, FRAME_MAX_SIZE is always enough). Returns the number of bytes
 * written, or 0 if f is invalid (unknown type, oversize user or password, a REPLY echoing a
 * type that is not a request) or cap is too small.
 */
size_t frame_encode(const struct frame *f, void *buf, size_t cap);

/* Convenience encoders for the frames the programs send; return the encoded size or 0. */
size_t frame_encode_reply(uint64_t id, enum frame_status st, uint8_t req_type, const char *user,
                          size_t user_len, void *buf, size_t cap);
/* A REPLY whose budget_ms is retry_ms (a LIMITED answer). */
size_t frame_encode_reply_retry(uint64_t id, enum frame_status st, uint8_t req_type,
                                const char *user, size_t user_len, uint32_t retry_ms, void *buf,
                                size_t cap);
/* VERIFY or DELETE (user, password); any other type gives 0. */
size_t frame_encode_cred(enum frame_type type, uint64_t id, uint32_t budget_ms, const char *user,
                         size_t user_len, const char *pass, size_t pass_len, void *buf,
                         size_t cap);
/* CREATE: its creation token (FRAME_TOKEN_SIZE bytes), user, password. */
size_t frame_encode_create(uint64_t id, uint32_t budget_ms, const uint8_t *token,
                           const char *user, size_t user_len, const char *pass, size_t pass_len,
                           void *buf, size_t cap);
/* SETPASS: user, current password, new password. */
size_t frame_encode_setpass(uint64_t id, uint32_t budget_ms, const char *user, size_t user_len,
                            const char *pass, size_t pass_len, const char *new_pass,
                            size_t new_len, void *buf, size_t cap);
/* INVALIDATE (id = the invalidation's sequence number, never 0) and its ACK. */
size_t frame_encode_invalidate(uint64_t id, const char *user, size_t user_len, void *buf,
                               size_t cap);
size_t frame_encode_invalidate_ack(uint64_t id, void *buf, size_t cap);
/* LEASE for lease_ms (at most FRAME_LEASE_MAX_MS). */
size_t frame_encode_lease(uint32_t lease_ms, void *buf, size_t cap);

const char *frame_status_name(enum frame_status st);

#endif /* FRAME_H */
