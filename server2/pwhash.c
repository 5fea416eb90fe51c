/*
 * pwhash.c - see pwhash.h.
 */
#include "pwhash.h"

#include <pthread.h>
#include <sodium.h>
#include <string.h>

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
    if (crypto_pwhash_str(out, pass, len, ops, mem) != 0) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

bool pwhash_verify(const char *stored, const char *pass, size_t len)
{
    if (strnlen(stored, PWHASH_STR_MAX) >= PWHASH_STR_MAX)
        return false;
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
