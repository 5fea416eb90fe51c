/*
 * linkseal.h - encryption of the server1 <-> server2 link after its handshake
 * (docs/protocol.md, "Sealed frames"). Once both sides hold both handshake nonces, each
 * derives two session keys from the link key, one per direction; every later frame travels as
 * one sealed record: a 2-byte length in clear, then the frame encrypted and authenticated with
 * ChaCha20-Poly1305 (IETF) under the sender's key, the length as associated data and the
 * record's number in its direction (0, 1, 2, ...) as nonce. A record altered, replayed,
 * reordered, cut short or sealed with the other direction's key does not open. The receiver
 * reads no more than LINKSEAL_RECORD_MAX bytes of a record before it is authenticated.
 * A struct linkseal belongs to one connection (one thread); the functions are otherwise pure.
 * Keys are never logged.
 */
#ifndef LINKSEAL_H
#define LINKSEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "linkauth.h"

#define LINKSEAL_KEY_SIZE 32  /* crypto_aead_chacha20poly1305_ietf_KEYBYTES */
#define LINKSEAL_LEN_SIZE 2   /* the record's length field, big-endian, in clear */
#define LINKSEAL_TAG_SIZE 16  /* crypto_aead_chacha20poly1305_ietf_ABYTES */
#define LINKSEAL_OVERHEAD (LINKSEAL_LEN_SIZE + LINKSEAL_TAG_SIZE) /* 18 bytes per frame */
/* the length field counts the sealed bytes after it: one whole frame plus the tag */
#define LINKSEAL_BODY_MIN (FRAME_HEADER_SIZE + LINKSEAL_TAG_SIZE) /* 36 */
#define LINKSEAL_BODY_MAX (FRAME_MAX_SIZE + LINKSEAL_TAG_SIZE)    /* 676 */
#define LINKSEAL_RECORD_MAX (LINKSEAL_LEN_SIZE + LINKSEAL_BODY_MAX) /* 678 */

/* One direction of a connection: its key and the number of the next record. */
struct linkseal_dir {
    uint8_t key[LINKSEAL_KEY_SIZE]; /* never logged */
    uint64_t seq;                   /* records sealed (tx) or opened (rx) so far */
};

/* Both directions of one connection, from the point of view of one side. */
struct linkseal {
    struct linkseal_dir tx; /* what this side sends */
    struct linkseal_dir rx; /* what this side receives */
};

enum linkseal_result {
    LINKSEAL_BAD = -1, /* the length is out of bounds or the record does not open: close */
    LINKSEAL_MORE = 0, /* incomplete: wait for more bytes */
    LINKSEAL_DONE = 1, /* one record opened */
};

/*
 * Whether a link with this key is sealed: every key but the all-zero one of
 * --insecure-no-secret (linkauth_insecure_key), whose link stays in clear.
 */
bool linkseal_enabled(const uint8_t key[LINKAUTH_KEY_SIZE]);

/*
 * Derives the session keys of one connection: for each direction, BLAKE2b-256 keyed with the
 * link key over a label ("seal c2s" for server1 -> server2, "seal s2c" back) || nonce_c ||
 * nonce_s. self says which side s is for (its tx is its own direction). Counters start at 0.
 */
void linkseal_init(struct linkseal *s, const uint8_t key[LINKAUTH_KEY_SIZE],
                   enum linkauth_role self, const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                   const uint8_t nonce_s[LINKAUTH_NONCE_SIZE]);

/* Forgets the keys (sodium_memzero). */
void linkseal_clear(struct linkseal *s);

/*
 * Seals in place the frame of frame_len bytes at rec + LINKSEAL_LEN_SIZE (rec must have room
 * for frame_len + LINKSEAL_OVERHEAD bytes): writes the length field, encrypts, appends the
 * tag. Returns the record's size, or 0 if frame_len is not FRAME_HEADER_SIZE..FRAME_MAX_SIZE
 * or the direction has sealed 2^64 - 1 records (nothing is written then).
 */
size_t linkseal_seal(struct linkseal_dir *tx, uint8_t *rec, size_t frame_len);

/*
 * Opens the first record in buf[0..len): on LINKSEAL_DONE the frame is in
 * frame[0..*frame_len) (frame may be buf + LINKSEAL_LEN_SIZE: opened in place; else it needs
 * FRAME_MAX_SIZE bytes) and *used is the record's size. LINKSEAL_MORE: fewer bytes than the
 * record needs (never more than LINKSEAL_RECORD_MAX). LINKSEAL_BAD: a length out of bounds
 * or a record that does not open; *why then holds a short static reason and rx is unchanged.
 */
enum linkseal_result linkseal_open(struct linkseal_dir *rx, uint8_t *buf, size_t len,
                                   uint8_t *frame, size_t *frame_len, size_t *used,
                                   const char **why);

#endif /* LINKSEAL_H */
