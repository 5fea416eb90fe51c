/*
 * frame.h - the server1 <-> server2 wire format, version 2: binary, length-prefixed frames
 * carrying a 64-bit request id and a time budget, pipelined on persistent connections that
 * start with a mutual challenge-response handshake. The full description, with the limits and
 * the rules for bad input, is in common/PROTOCOL.md. Pure functions, thread-safe.
 */
#ifndef FRAME_H
#define FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "account.h"
#include "linkauth.h"

#define FRAME_VERSION 2
#define FRAME_MAGIC 0x41555448u /* "AUTH", first four payload bytes of HELLO */
#define FRAME_HEADER_SIZE 20
#define FRAME_MAX_PAYLOAD 512 /* hard limit on the payload of any frame */
#define FRAME_MAX_SIZE (FRAME_HEADER_SIZE + FRAME_MAX_PAYLOAD)
#define FRAME_NONCE_SIZE LINKAUTH_NONCE_SIZE
#define FRAME_MAC_SIZE LINKAUTH_MAC_SIZE
#define FRAME_HELLO_PAYLOAD (4 + 2 + FRAME_NONCE_SIZE)                  /* 38 */
#define FRAME_HELLO_ACK_PAYLOAD (2 + FRAME_NONCE_SIZE + FRAME_MAC_SIZE) /* 66 */
#define FRAME_AUTH_PAYLOAD FRAME_MAC_SIZE                               /* 32 */

enum frame_type {
    FRAME_HELLO = 1,     /* client -> server, first frame: magic, version, client nonce */
    FRAME_HELLO_ACK = 2, /* server -> client: version, server nonce, server's MAC */
    FRAME_CREATE = 3,    /* client -> server: create account (user, password) */
    FRAME_VERIFY = 4,    /* client -> server: check credentials (user, password) */
    FRAME_REPLY = 5,     /* server -> client: status of the request with the same id, + echo */
    FRAME_PING = 6,      /* client -> server: liveness; answered by a REPLY */
    FRAME_AUTH = 7,      /* client -> server, second frame: client's MAC */
};

enum frame_status {
    FRAME_ST_OK = 0,          /* created / credentials valid / pong / hello accepted */
    FRAME_ST_EXISTS = 1,      /* CREATE: the username is taken */
    FRAME_ST_DENIED = 2,      /* VERIFY: no such user or wrong password */
    FRAME_ST_INVALID = 3,     /* username or password breaks the rules in account.h */
    FRAME_ST_UNAVAILABLE = 4, /* the database is unreachable; retry later */
    FRAME_ST_INTERNAL = 5,    /* any other server-side failure */
    FRAME_ST_BAD_VERSION = 6, /* HELLO_ACK: version not supported; the server closes */
    FRAME_ST_EXPIRED = 7,     /* the request's deadline passed before it was worked on */
};

struct frame {
    uint8_t type;       /* enum frame_type */
    uint8_t status;     /* enum frame_status; 0 in requests */
    uint64_t id;        /* request id chosen by the client, echoed in the REPLY */
    uint32_t budget_ms; /* requests: how long the client still waits, 0 = no limit */
    uint16_t version;   /* HELLO and HELLO_ACK only */
    uint8_t req_type;   /* REPLY only: the type of the request it answers */
    uint8_t user_len;   /* CREATE, VERIFY, and REPLY (echo) */
    uint16_t pass_len;  /* CREATE and VERIFY only */
    char user[ACCOUNT_USER_MAX + 1]; /* NUL-terminated copy */
    char pass[ACCOUNT_PASS_MAX + 1]; /* NUL-terminated copy; never log it */
    uint8_t nonce[FRAME_NONCE_SIZE]; /* HELLO: client's; HELLO_ACK: server's */
    uint8_t mac[FRAME_MAC_SIZE];     /* HELLO_ACK: server's proof; AUTH: client's proof */
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
size_t frame_encode_cred(enum frame_type type, uint64_t id, uint32_t budget_ms, const char *user,
                         size_t user_len, const char *pass, size_t pass_len, void *buf,
                         size_t cap);

const char *frame_status_name(enum frame_status st);

#endif /* FRAME_H */
