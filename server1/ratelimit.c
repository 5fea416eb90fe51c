/*
 * ratelimit.c - see ratelimit.h. The bucket of a key is its GCRA time `tat`: with interval
 * T = period/count and tolerance tau = period - T, an event at `now` conforms (has a token) if
 * tat <= now + tau, and then moves tat to max(tat, now) + T. A fresh key (tat <= now) holds
 * count tokens; count events in a burst use them all, and one returns every T.
 */
#include "ratelimit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "opts.h"

#define RATELIMIT_SPINS 64 /* spins on a set's lock before yielding the CPU */

/* ---- rates ---- */

/* ---- token buckets ---- */

static uint64_t fingerprint(const struct ratelimit *rl, const void *key, size_t len)
{
    unsigned char h[crypto_shorthash_BYTES];
    uint64_t fp;

    crypto_shorthash(h, key, len, rl->hash_key);
    memcpy(&fp, h, sizeof(fp));
    return fp != 0 ? fp : 1; /* 0 marks a free slot */
}

struct ratelimit *ratelimit_new(const struct opts_rate *r, size_t entries)
{
    struct ratelimit *rl;
    size_t nsets = 1;
    size_t want = (entries + RATELIMIT_WAYS - 1) / RATELIMIT_WAYS;

    if (r->count == 0 || r->period_us == 0 || sodium_init() < 0) {
        errno = EINVAL;
        return NULL;
    }
    while (nsets < want)
        nsets <<= 1;
    rl = calloc(1, sizeof(*rl));
    if (rl == NULL)
        return NULL;
    rl->sets = aligned_alloc(64, nsets * sizeof(*rl->sets));
    if (rl->sets == NULL) {
        free(rl);
        return NULL;
    }
    memset(rl->sets, 0, nsets * sizeof(*rl->sets));
    rl->mask = nsets - 1;
    rl->interval_ns = r->period_us * 1000 / r->count;
    if (rl->interval_ns == 0)
        rl->interval_ns = 1;
    rl->tolerance_ns = r->period_us * 1000 - rl->interval_ns;
    randombytes_buf(rl->hash_key, sizeof(rl->hash_key));
    atomic_init(&rl->evictions, 0);
    return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
    if (rl == NULL)
        return;
    free(rl->sets);
    free(rl);
}

/* The wait before key (time tat) has a token at now: 0 if it has one. */
static uint64_t wait_ns(const struct ratelimit *rl, uint64_t tat, uint64_t now_ns)
{
    uint64_t allowed = now_ns + rl->tolerance_ns;
    return tat > allowed ? tat - allowed : 0;
}

uint64_t ratelimit_check(struct ratelimit *rl, const void *key, size_t len, uint64_t now_ns)
{
    uint64_t fp = fingerprint(rl, key, len);
    struct ratelimit_set *set = &rl->sets[fp & rl->mask];
    uint64_t tat = 0;
    uint64_t s1;
    uint64_t s2 = 0;

    do {
        s1 = atomic_load_explicit(&set->seq, memory_order_acquire);
        if (s1 & 1) {
            sched_yield(); /* a writer is inside: its few stores are done in a moment */
            continue;
        }
        tat = 0;
        for (int i = 0; i < RATELIMIT_WAYS; i++) {
            if (atomic_load_explicit(&set->slot[i].fp, memory_order_relaxed) == fp) {
                tat = atomic_load_explicit(&set->slot[i].tat, memory_order_relaxed);
                break;
            }
        }
        atomic_thread_fence(memory_order_acquire);
        s2 = atomic_load_explicit(&set->seq, memory_order_relaxed);
    } while ((s1 & 1) || s1 != s2);
    return wait_ns(rl, tat, now_ns);
}

static uint64_t set_lock(struct ratelimit_set *set)
{
    unsigned spins = 0;

    for (;;) {
        uint64_t s = atomic_load_explicit(&set->seq, memory_order_relaxed);
        if (!(s & 1) && atomic_compare_exchange_weak_explicit(&set->seq, &s, s + 1,
                                                              memory_order_acquire,
                                                              memory_order_relaxed))
            return s + 1;
        if (++spins >= RATELIMIT_SPINS) {
            spins = 0;
            sched_yield(); /* the holder may have been preempted */
        }
    }
}

static void set_unlock(struct ratelimit_set *set, uint64_t seq)
{
    atomic_store_explicit(&set->seq, seq + 1, memory_order_release);
}

uint64_t ratelimit_take(struct ratelimit *rl, const void *key, size_t len, uint64_t now_ns)
{
    uint64_t fp = fingerprint(rl, key, len);
    struct ratelimit_set *set = &rl->sets[fp & rl->mask];
    struct ratelimit_slot *use = NULL;
    struct ratelimit_slot *victim = NULL;
    uint64_t victim_tat = UINT64_MAX;
    uint64_t tat;
    uint64_t wait;
    uint64_t seq = set_lock(set);

    for (int i = 0; i < RATELIMIT_WAYS; i++) {
        struct ratelimit_slot *sl = &set->slot[i];
        uint64_t f = atomic_load_explicit(&sl->fp, memory_order_relaxed);
        uint64_t t = atomic_load_explicit(&sl->tat, memory_order_relaxed);
        if (f == fp) {
            use = sl;
            break;
        }
        /* a free slot or a full bucket (t <= now) is worth nothing: take the first */
        if (f == 0 || t <= now_ns)
            t = 0;
        if (t < victim_tat) {
            victim = sl;
            victim_tat = t;
        }
    }
    if (use == NULL) {
        use = victim;
        if (victim_tat != 0)
            atomic_fetch_add_explicit(&rl->evictions, 1, memory_order_relaxed);
        atomic_store_explicit(&use->fp, fp, memory_order_relaxed);
        atomic_store_explicit(&use->tat, now_ns, memory_order_relaxed);
    }
    tat = atomic_load_explicit(&use->tat, memory_order_relaxed);
    wait = wait_ns(rl, tat, now_ns);
    if (wait == 0)
        atomic_store_explicit(&use->tat, (tat > now_ns ? tat : now_ns) + rl->interval_ns,
                              memory_order_relaxed);
    set_unlock(set, seq);
    return wait;
}

void ratelimit_refund(struct ratelimit *rl, const void *key, size_t len)
{
    uint64_t fp = fingerprint(rl, key, len);
    struct ratelimit_set *set = &rl->sets[fp & rl->mask];
    uint64_t seq = set_lock(set);

    for (int i = 0; i < RATELIMIT_WAYS; i++) {
        struct ratelimit_slot *sl = &set->slot[i];
        if (atomic_load_explicit(&sl->fp, memory_order_relaxed) == fp) {
            /* a time before now is a full bucket: ratelimit_take starts from now then */
            uint64_t t = atomic_load_explicit(&sl->tat, memory_order_relaxed);
            atomic_store_explicit(&sl->tat, t > rl->interval_ns ? t - rl->interval_ns : 0,
                                  memory_order_relaxed);
            break;
        }
    }
    set_unlock(set, seq);
}

uint64_t ratelimit_retry_after_s(uint64_t wait)
{
    uint64_t s = (wait + 999999999ull) / 1000000000ull;
    return s > 0 ? s : 1;
}

/* ---- connections per address ---- */

struct connlimit_slot {
    uint8_t key[RATELIMIT_ADDR_LEN];
    uint32_t count; /* 0 = free */
};

/* lock protects slots: taken on accept and close only; no other lock is taken inside */
struct connlimit {
    pthread_mutex_t lock;
    struct connlimit_slot *slots; /* open addressing, linear probing; count 0 = free */
    size_t mask;                  /* capacity - 1 */
    unsigned per_addr;
    unsigned char hash_key[16];
};

struct connlimit *connlimit_new(unsigned per_addr, unsigned max_conns)
{
    struct connlimit *cl;
    size_t cap = 16;

    if (sodium_init() < 0) {
        errno = EINVAL;
        return NULL;
    }
    while (cap < 2 * (size_t)max_conns)
        cap <<= 1;
    cl = calloc(1, sizeof(*cl));
    if (cl == NULL)
        return NULL;
    cl->slots = calloc(cap, sizeof(*cl->slots));
    if (cl->slots == NULL) {
        free(cl);
        return NULL;
    }
    pthread_mutex_init(&cl->lock, NULL);
    cl->mask = cap - 1;
    cl->per_addr = per_addr;
    randombytes_buf(cl->hash_key, sizeof(cl->hash_key));
    return cl;
}

void connlimit_free(struct connlimit *cl)
{
    if (cl == NULL)
        return;
    pthread_mutex_destroy(&cl->lock);
    free(cl->slots);
    free(cl);
}

static size_t home(const struct connlimit *cl, const uint8_t *key)
{
    unsigned char h[crypto_shorthash_BYTES];
    uint64_t v;

    crypto_shorthash(h, key, RATELIMIT_ADDR_LEN, cl->hash_key);
    memcpy(&v, h, sizeof(v));
    return (size_t)v & cl->mask;
}

/* The slot of key, or the free slot where it would go (NULL if the table is full). Locked. */
static struct connlimit_slot *probe(struct connlimit *cl, const uint8_t *key)
{
    size_t i = home(cl, key);

    for (size_t n = 0; n <= cl->mask; n++, i = (i + 1) & cl->mask) {
        struct connlimit_slot *sl = &cl->slots[i];
        if (sl->count == 0 || memcmp(sl->key, key, RATELIMIT_ADDR_LEN) == 0)
            return sl;
    }
    return NULL;
}

bool connlimit_acquire(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN])
{
    struct connlimit_slot *sl;
    bool ok = false;

    pthread_mutex_lock(&cl->lock);
    sl = probe(cl, key);
    if (sl != NULL && sl->count < cl->per_addr) {
        if (sl->count == 0)
            memcpy(sl->key, key, RATELIMIT_ADDR_LEN);
        sl->count++;
        ok = true;
    }
    pthread_mutex_unlock(&cl->lock);
    return ok;
}

/* Empties slot i, moving later members of its probe run back so that every key stays
 * reachable from its home without tombstones (backward-shift deletion). Locked. */
static void remove_at(struct connlimit *cl, size_t i)
{
    size_t j = i;

    for (;;) {
        size_t h;
        j = (j + 1) & cl->mask;
        if (cl->slots[j].count == 0)
            break;
        h = home(cl, cl->slots[j].key);
        /* the entry at j may move to i only if its home is not cyclically in (i, j] */
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        cl->slots[i] = cl->slots[j];
        i = j;
    }
    cl->slots[i].count = 0;
}

void connlimit_release(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN])
{
    struct connlimit_slot *sl;

    pthread_mutex_lock(&cl->lock);
    sl = probe(cl, key);
    if (sl != NULL && sl->count > 0 && --sl->count == 0)
        remove_at(cl, (size_t)(sl - cl->slots));
    pthread_mutex_unlock(&cl->lock);
}

unsigned connlimit_count(struct connlimit *cl, const uint8_t key[RATELIMIT_ADDR_LEN])
{
    struct connlimit_slot *sl;
    unsigned n;

    pthread_mutex_lock(&cl->lock);
    sl = probe(cl, key);
    n = sl != NULL ? sl->count : 0;
    pthread_mutex_unlock(&cl->lock);
    return n;
}
