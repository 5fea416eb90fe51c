/*
 * linkauth.h - authentication of the server1 <-> server2 link with a shared secret
 * (docs/protocol.md, "Handshake"). Both sides read the same secret file at start and derive
 * one key from it; in the handshake each side proves it holds the key by a MAC over both
 * sides' fresh nonces, so a recorded handshake cannot be replayed. What follows the handshake
 * is encrypted with keys derived from the same key and nonces (linkseal.h). Thread-safe after
 * linkauth_load_key; the key is never logged.
 */
#ifndef LINKAUTH_H
#define LINKAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LINKAUTH_KEY_SIZE 32   /* crypto_auth_KEYBYTES */
#define LINKAUTH_NONCE_SIZE 32
#define LINKAUTH_MAC_SIZE 32   /* crypto_auth_BYTES: HMAC-SHA-512 truncated to 256 bits */
#define LINKAUTH_SECRET_MIN 32 /* bytes of random data in the secret file, at least */
#define LINKAUTH_SECRET_MAX 4096
#define LINKAUTH_ERR_LEN 320

/* Which side computes the MAC; the two MACs of one handshake differ by this label. */
enum linkauth_role {
    LINKAUTH_SERVER1, /* "server1": the client's proof, in AUTH */
    LINKAUTH_SERVER2, /* "server2": the server's proof, in HELLO_ACK */
};

/*
 * Reads the secret file at path and derives the key (BLAKE2b-256 of the file's bytes, keyed
 * by nothing; crypto_generichash). Refuses, with one line in err: a file that is not a regular
 * file, that group or others may read or write (mode & 077), shorter than LINKAUTH_SECRET_MIN
 * or longer than LINKAUTH_SECRET_MAX bytes. Returns 0 or -1. Initialises libsodium.
 */
int linkauth_load_key(const char *path, uint8_t key[LINKAUTH_KEY_SIZE], char *err);

/* The key of --insecure-no-secret: all zero, so the handshake keeps its shape. */
void linkauth_insecure_key(uint8_t key[LINKAUTH_KEY_SIZE]);

/* A fresh random nonce (randombytes_buf). */
void linkauth_nonce(uint8_t nonce[LINKAUTH_NONCE_SIZE]);

/* mac = crypto_auth(key, label || nonce_c || nonce_s), label "server1" or "server2". */
void linkauth_mac(const uint8_t key[LINKAUTH_KEY_SIZE], enum linkauth_role role,
                  const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                  const uint8_t nonce_s[LINKAUTH_NONCE_SIZE], uint8_t mac[LINKAUTH_MAC_SIZE]);

/* Constant-time check of a received MAC (crypto_auth_verify). */
bool linkauth_check(const uint8_t key[LINKAUTH_KEY_SIZE], enum linkauth_role role,
                    const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                    const uint8_t nonce_s[LINKAUTH_NONCE_SIZE],
                    const uint8_t mac[LINKAUTH_MAC_SIZE]);

#endif /* LINKAUTH_H */
