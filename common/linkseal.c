/*
 * linkseal.c - see linkseal.h.
 */
#include "linkseal.h"

#include <sodium.h>
#include <string.h>

_Static_assert(crypto_aead_chacha20poly1305_ietf_KEYBYTES == LINKSEAL_KEY_SIZE, "key size");
_Static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == LINKSEAL_TAG_SIZE, "tag size");
_Static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12, "nonce size");
_Static_assert(LINKSEAL_BODY_MAX <= 0xffff, "the length fits its field");

#define LABEL_LEN 8

bool linkseal_enabled(const uint8_t key[LINKAUTH_KEY_SIZE])
{
    return !sodium_is_zero(key, LINKAUTH_KEY_SIZE);
}

static void derive(uint8_t out[LINKSEAL_KEY_SIZE], const uint8_t key[LINKAUTH_KEY_SIZE],
                   const char label[LABEL_LEN], const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                   const uint8_t nonce_s[LINKAUTH_NONCE_SIZE])
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, key, LINKAUTH_KEY_SIZE, LINKSEAL_KEY_SIZE);
    crypto_generichash_update(&st, (const uint8_t *)label, LABEL_LEN);
    crypto_generichash_update(&st, nonce_c, LINKAUTH_NONCE_SIZE);
    crypto_generichash_update(&st, nonce_s, LINKAUTH_NONCE_SIZE);
    crypto_generichash_final(&st, out, LINKSEAL_KEY_SIZE);
    sodium_memzero(&st, sizeof(st));
}

void linkseal_init(struct linkseal *s, const uint8_t key[LINKAUTH_KEY_SIZE],
                   enum linkauth_role self, const uint8_t nonce_c[LINKAUTH_NONCE_SIZE],
                   const uint8_t nonce_s[LINKAUTH_NONCE_SIZE])
{
    struct linkseal_dir *c2s = self == LINKAUTH_SERVER1 ? &s->tx : &s->rx;
    struct linkseal_dir *s2c = self == LINKAUTH_SERVER1 ? &s->rx : &s->tx;

    derive(c2s->key, key, "seal c2s", nonce_c, nonce_s);
    derive(s2c->key, key, "seal s2c", nonce_c, nonce_s);
    s->tx.seq = 0;
    s->rx.seq = 0;
}

void linkseal_clear(struct linkseal *s)
{
    sodium_memzero(s, sizeof(*s));
}

/* The record's nonce: 4 zero bytes, then its number in its direction, little-endian. */
static void make_nonce(uint8_t nonce[12], uint64_t seq)
{
    memset(nonce, 0, 4);
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (uint8_t)(seq >> (8 * i));
}

size_t linkseal_seal(struct linkseal_dir *tx, uint8_t *rec, size_t frame_len)
{
    uint8_t nonce[12];
    unsigned long long clen = 0;
    size_t body = frame_len + LINKSEAL_TAG_SIZE;

    if (frame_len < FRAME_HEADER_SIZE || frame_len > FRAME_MAX_SIZE || tx->seq == UINT64_MAX)
        return 0;
    rec[0] = (uint8_t)(body >> 8);
    rec[1] = (uint8_t)body;
    make_nonce(nonce, tx->seq);
    crypto_aead_chacha20poly1305_ietf_encrypt(rec + LINKSEAL_LEN_SIZE, &clen,
                                              rec + LINKSEAL_LEN_SIZE, frame_len, rec,
                                              LINKSEAL_LEN_SIZE, NULL, nonce, tx->key);
    tx->seq++;
    return LINKSEAL_LEN_SIZE + (size_t)clen;
}

enum linkseal_result linkseal_open(struct linkseal_dir *rx, uint8_t *buf, size_t len,
                                   uint8_t *frame, size_t *frame_len, size_t *used,
                                   const char **why)
{
    uint8_t nonce[12];
    unsigned long long mlen = 0;
    size_t body;

    if (len < LINKSEAL_LEN_SIZE)
        return LINKSEAL_MORE;
    body = (size_t)buf[0] << 8 | buf[1];
    if (body < LINKSEAL_BODY_MIN || body > LINKSEAL_BODY_MAX) {
        if (why != NULL)
            *why = "sealed record length out of bounds";
        return LINKSEAL_BAD;
    }
    if (len < LINKSEAL_LEN_SIZE + body)
        return LINKSEAL_MORE;
    if (rx->seq == UINT64_MAX) {
        if (why != NULL)
            *why = "sealed record counter exhausted";
        return LINKSEAL_BAD;
    }
    make_nonce(nonce, rx->seq);
    if (crypto_aead_chacha20poly1305_ietf_decrypt(frame, &mlen, NULL, buf + LINKSEAL_LEN_SIZE,
                                                  body, buf, LINKSEAL_LEN_SIZE, nonce,
                                                  rx->key) != 0) {
        if (why != NULL)
            *why = "a sealed record does not open (altered, replayed, reordered or forged)";
        return LINKSEAL_BAD;
    }
    rx->seq++;
    *frame_len = (size_t)mlen;
    *used = LINKSEAL_LEN_SIZE + body;
    return LINKSEAL_DONE;
}
