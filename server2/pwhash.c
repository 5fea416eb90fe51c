/*
 * pwhash.c - see pwhash.h.
 *
 * Two implementations of the same function, argon2id, picked by the memory a hash needs:
 * - at most SMALL_MEMORY (the "min" cost, 8 KiB): libargon2, the reference implementation,
 *   with its memory from malloc. libsodium maps and unmaps a fresh region for every hash or
 *   verification; at this size that is most of the work (measured on a 2-vCPU VM: 25.5 us per
 *   verification in libsodium, 14.8 us in libargon2, and in server2 under load half of its CPU
 *   went to mmap, munmap, page faults and the TLB shootdowns of munmap across threads);
 * - above it: libsodium (crypto_pwhash_str), whose AVX2 code is twice as fast at 64 MiB
 *   (77 ms against 153 ms) and for which a mapping per call costs nothing in comparison.
 * Both write and read the same standard string, $argon2id$v=19$m=M,t=T,p=1$SALT$HASH (base64
 * without padding), so either verifies what the other made. A stored string the small path
 * does not recognise (another form, a large memory cost) goes to libsodium, which refuses what
 * is malformed.
 */
#include "pwhash.h"

#include <argon2.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_MEMORY (1024u * 1024u) /* bytes; libargon2 up to this */
#define SALT_BYTES 16                /* crypto_pwhash_SALTBYTES */
#define HASH_BYTES 32                /* what crypto_pwhash_str stores */
#define B64_MAX 96                   /* base64 of 64 bytes, with room */
#define PREFIX "$argon2id$v=19$m="

_Static_assert(PWHASH_STR_MAX == crypto_pwhash_STRBYTES, "PWHASH_STR_MAX is out of date");

static const char *const cost_names[] = {"min", "interactive", "moderate"};

int pwhash_cost_parse(const char *s, enum pwhash_cost *out)
{
    for (size_t i = 0; i < sizeof(cost_names) / sizeof(cost_names[0]); i++) {
        if (strcmp(s, cost_names[i]) == 0) {
            *out = (enum pwhash_cost)i;
            return 0;
        }
    }
    return -1;
}

const char *pwhash_cost_name(enum pwhash_cost cost)
{
    return (unsigned)cost < sizeof(cost_names) / sizeof(cost_names[0]) ? cost_names[cost] : "?";
}

/* Raw argon2id (libargon2, one lane) into out[outlen]; 0 or -1. */
static int small_argon2id(uint32_t t, uint32_t m_kib, const char *pass, size_t len,
                          const uint8_t *salt, size_t saltlen, uint8_t *out, size_t outlen)
{
    argon2_context c = {
        .out = out,
        .outlen = (uint32_t)outlen,
        .pwd = (uint8_t *)(uintptr_t)pass, /* (read only: no ARGON2_FLAG_CLEAR_PASSWORD) */
        .pwdlen = (uint32_t)len,
        .salt = (uint8_t *)(uintptr_t)salt,
        .saltlen = (uint32_t)saltlen,
        .t_cost = t,
        .m_cost = m_kib,
        .lanes = 1,
        .threads = 1,
        .version = ARGON2_VERSION_13,
    };
    return argon2_ctx(&c, Argon2_id) == ARGON2_OK ? 0 : -1;
}

/* Hashes with libargon2 and writes the standard string, as crypto_pwhash_str would. */
static int small_hash(uint32_t t, uint32_t m_kib, const char *pass, size_t len, char *out)
{
    uint8_t salt[SALT_BYTES];
    uint8_t hash[HASH_BYTES];
    char salt64[B64_MAX];
    char hash64[B64_MAX];
    int n;
    int rc = -1;

    randombytes_buf(salt, sizeof(salt));
    if (small_argon2id(t, m_kib, pass, len, salt, sizeof(salt), hash, sizeof(hash)) == 0) {
        sodium_bin2base64(salt64, sizeof(salt64), salt, sizeof(salt),
                          sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
        sodium_bin2base64(hash64, sizeof(hash64), hash, sizeof(hash),
                          sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
        n = snprintf(out, PWHASH_STR_MAX, PREFIX "%u,t=%u,p=1$%s$%s", m_kib, t, salt64, hash64);
        rc = n > 0 && n < PWHASH_STR_MAX ? 0 : -1;
    }
    sodium_memzero(hash, sizeof(hash));
    if (rc < 0)
        out[0] = '\0';
    return rc;
}

/* A decimal number without sign or leading zero, at most max; advances *p. */
static bool parse_u32(const char **p, uint32_t max, uint32_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    if (*s < '1' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return false;
        s++;
    }
    *p = s;
    *out = (uint32_t)v;
    return true;
}

/* base64 (no padding) up to the next `end` character into out; its length, or -1. */
static long parse_b64(const char **p, char end, uint8_t *out, size_t cap)
{
    const char *stop = end ? strchr(*p, end) : *p + strlen(*p);
    size_t bin_len = 0;

    if (stop == NULL || stop == *p ||
        sodium_base642bin(out, cap, *p, (size_t)(stop - *p), NULL, &bin_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0)
        return -1;
    *p = stop;
    return (long)bin_len;
}

/*
 * The small path's verification: 1 = match, 0 = no match, -1 = not a string it takes (the
 * caller asks libsodium).
 */
static int small_verify(const char *stored, const char *pass, size_t len)
{
    const char *p = stored;
    uint32_t m_kib;
    uint32_t t;
    uint32_t lanes;
    uint8_t salt[64];
    uint8_t want[64];
    uint8_t got[64];
    long saltlen;
    long hashlen;
    int rc;

    if (strncmp(p, PREFIX, sizeof(PREFIX) - 1) != 0)
        return -1;
    p += sizeof(PREFIX) - 1;
    if (!parse_u32(&p, SMALL_MEMORY / 1024, &m_kib) || strncmp(p, ",t=", 3) != 0)
        return -1;
    p += 3;
    if (!parse_u32(&p, 1u << 16, &t) || strncmp(p, ",p=", 3) != 0)
        return -1;
    p += 3;
    if (!parse_u32(&p, 1, &lanes) || *p != '$')
        return -1;
    p++;
    saltlen = parse_b64(&p, '$', salt, sizeof(salt));
    if (saltlen < 8 || *p != '$')
        return -1;
    p++;
    hashlen = parse_b64(&p, '\0', want, sizeof(want));
    if (hashlen < 16 || m_kib < 8)
        return -1;
    if (small_argon2id(t, m_kib, pass, len, salt, (size_t)saltlen, got, (size_t)hashlen) < 0)
        return -1;
    rc = sodium_memcmp(got, want, (size_t)hashlen) == 0 ? 1 : 0;
    sodium_memzero(got, sizeof(got));
    return rc;
}

int pwhash_hash(enum pwhash_cost cost, const char *pass, size_t len, char *out)
{
    unsigned long long ops;
    size_t mem;

    switch (cost) {
    case PWHASH_MIN:
        ops = crypto_pwhash_OPSLIMIT_MIN;
        mem = crypto_pwhash_MEMLIMIT_MIN;
        break;
    case PWHASH_MODERATE:
        ops = crypto_pwhash_OPSLIMIT_MODERATE;
        mem = crypto_pwhash_MEMLIMIT_MODERATE;
        break;
    case PWHASH_INTERACTIVE:
    default:
        ops = crypto_pwhash_OPSLIMIT_INTERACTIVE;
        mem = crypto_pwhash_MEMLIMIT_INTERACTIVE;
        break;
    }
    if (mem <= SMALL_MEMORY)
        return small_hash((uint32_t)ops, (uint32_t)(mem / 1024), pass, len, out);
    if (crypto_pwhash_str(out, pass, len, ops, mem) != 0) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

bool pwhash_verify(const char *stored, const char *pass, size_t len)
{
    int rc;

    if (strnlen(stored, PWHASH_STR_MAX) >= PWHASH_STR_MAX)
        return false;
    rc = small_verify(stored, pass, len);
    if (rc >= 0)
        return rc == 1;
    return crypto_pwhash_str_verify(stored, pass, len) == 0;
}

static pthread_mutex_t dummy_mu = PTHREAD_MUTEX_INITIALIZER;
static char dummy[3][PWHASH_STR_MAX]; /* one per cost; "" = not made yet */

const char *pwhash_dummy(enum pwhash_cost cost)
{
    unsigned char secret[32];
    const char *out = NULL;

    if ((unsigned)cost >= sizeof(dummy) / sizeof(dummy[0]))
        cost = PWHASH_INTERACTIVE;
    pthread_mutex_lock(&dummy_mu);
    if (dummy[cost][0] == '\0') {
        randombytes_buf(secret, sizeof(secret));
        (void)pwhash_hash(cost, (const char *)secret, sizeof(secret), dummy[cost]);
        sodium_memzero(secret, sizeof(secret));
    }
    if (dummy[cost][0] != '\0')
        out = dummy[cost];
    pthread_mutex_unlock(&dummy_mu);
    return out;
}
