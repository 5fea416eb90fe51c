/*
 * authcache.c - see authcache.h. Each stripe is a fixed array of entries, a chained hash index
 * (bucket heads and `next` links are entry indices) and a CLOCK hand; free entries are linked
 * through `next` too. The stripe is chosen by the first key bytes, the bucket by later ones.
 */
#include "authcache.h"

#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "pwhash.h"
#include "xalloc.h"

#define NONE UINT32_MAX
#define MAX_STRIPES 64

struct ac_entry {
    uint8_t key[AUTHCACHE_KEY_BYTES];
    uint64_t user_tag;
    uint64_t expires_ns;
    uint32_t next; /* next in bucket chain, or in the free list */
    uint8_t used;
    uint8_t ref; /* CLOCK reference bit: set on hit, cleared by the passing hand */
    char hash[PWHASH_STR_MAX];
};

struct ac_stripe {
    pthread_mutex_t mu; /* protects every field below and the entries */
    struct ac_entry *e;
    uint32_t *buckets;
    uint32_t cap;
    uint32_t nbuckets; /* power of two */
    uint32_t count;
    uint32_t hand;
    uint32_t free_head;
    struct authcache_stats st;
} __attribute__((aligned(64)));

struct authcache {
    uint8_t secret[crypto_generichash_KEYBYTES]; /* immutable after authcache_new */
    uint64_t ttl_ns;
    uint32_t nstripes; /* power of two */
    struct ac_stripe *stripes;
};

static uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static struct ac_stripe *stripe_of(struct authcache *c, const struct authcache_key *k)
{
    return &c->stripes[load32(k->b) & (c->nstripes - 1)];
}

static uint32_t *bucket_of(struct ac_stripe *s, const uint8_t *key)
{
    return &s->buckets[load32(key + 4) & (s->nbuckets - 1)];
}

struct authcache *authcache_new(size_t capacity, uint64_t ttl_ns)
{
    struct authcache *c;
    uint32_t n = 1;

    if (capacity < 1 || capacity > AUTHCACHE_MAX_ENTRIES)
        return NULL;
    /* About 64 entries per stripe at least, at most MAX_STRIPES stripes. */
    while (n < MAX_STRIPES && (size_t)n * 2 * 64 <= capacity)
        n *= 2;
    c = xcalloc(1, sizeof(*c));
    randombytes_buf(c->secret, sizeof(c->secret));
    c->ttl_ns = ttl_ns;
    c->nstripes = n;
    c->stripes = xmemalign(64, sizeof(struct ac_stripe) * n);
    for (uint32_t i = 0; i < n; i++) {
        struct ac_stripe *s = &c->stripes[i];
        memset(s, 0, sizeof(*s));
        pthread_mutex_init(&s->mu, NULL);
        s->cap = (uint32_t)(capacity / n + (i < capacity % n ? 1 : 0));
        s->nbuckets = 1;
        while (s->nbuckets < s->cap)
            s->nbuckets *= 2;
        s->e = xcalloc(s->cap, sizeof(*s->e));
        s->buckets = xmalloc(sizeof(*s->buckets) * s->nbuckets);
        for (uint32_t b = 0; b < s->nbuckets; b++)
            s->buckets[b] = NONE;
        for (uint32_t j = 0; j < s->cap; j++)
            s->e[j].next = j + 1 < s->cap ? j + 1 : NONE;
        s->free_head = 0;
    }
    return c;
}

void authcache_free(struct authcache *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->nstripes; i++) {
        struct ac_stripe *s = &c->stripes[i];
        pthread_mutex_destroy(&s->mu);
        sodium_memzero(s->e, sizeof(*s->e) * s->cap);
        free(s->e);
        free(s->buckets);
    }
    free(c->stripes);
    sodium_memzero(c->secret, sizeof(c->secret));
    free(c);
}

static uint64_t user_tag(const struct authcache *c, const char *user, size_t user_len)
{
    uint8_t out[8];
    uint8_t dom = 'U';
    crypto_generichash_state st;
    uint64_t v;

    crypto_generichash_init(&st, c->secret, sizeof(c->secret), sizeof(out));
    crypto_generichash_update(&st, &dom, 1);
    crypto_generichash_update(&st, (const uint8_t *)user, user_len);
    crypto_generichash_final(&st, out, sizeof(out));
    memcpy(&v, out, sizeof(v));
    return v;
}

void authcache_key(const struct authcache *c, const char *user, size_t user_len, const char *pass,
                   size_t pass_len, struct authcache_key *out)
{
    crypto_generichash_state st;
    uint8_t hdr[4];

    /* 'K', user length (2 bytes), then user and password: unambiguous for any split. */
    hdr[0] = 'K';
    hdr[1] = (uint8_t)(user_len >> 8);
    hdr[2] = (uint8_t)user_len;
    hdr[3] = 0;
    crypto_generichash_init(&st, c->secret, sizeof(c->secret), AUTHCACHE_KEY_BYTES);
    crypto_generichash_update(&st, hdr, sizeof(hdr));
    crypto_generichash_update(&st, (const uint8_t *)user, user_len);
    crypto_generichash_update(&st, (const uint8_t *)pass, pass_len);
    crypto_generichash_final(&st, out->b, AUTHCACHE_KEY_BYTES);
    sodium_memzero(&st, sizeof(st));
    out->user_tag = user_tag(c, user, user_len);
}

/* Index of the entry with this key, or NONE; *link is the pointer that refers to it. */
static uint32_t find(struct ac_stripe *s, const uint8_t *key, uint32_t **link)
{
    uint32_t *l = bucket_of(s, key);
    while (*l != NONE) {
        struct ac_entry *e = &s->e[*l];
        if (memcmp(e->key, key, AUTHCACHE_KEY_BYTES) == 0) {
            *link = l;
            return *l;
        }
        l = &e->next;
    }
    return NONE;
}

/* Unlinks entry i (found through *link) and puts it on the free list. */
static void drop(struct ac_stripe *s, uint32_t *link, uint32_t i)
{
    struct ac_entry *e = &s->e[i];
    *link = e->next;
    sodium_memzero(e, sizeof(*e));
    e->next = s->free_head;
    s->free_head = i;
    s->count--;
}

static void drop_index(struct ac_stripe *s, uint32_t i)
{
    uint32_t *link = NULL;
    if (find(s, s->e[i].key, &link) == i)
        drop(s, link, i);
}

/* A free entry index, evicting with the CLOCK hand if the stripe is full. */
static uint32_t take_slot(struct ac_stripe *s, uint64_t now_ns)
{
    uint32_t i;

    if (s->free_head == NONE) {
        for (;;) {
            struct ac_entry *e = &s->e[s->hand];
            i = s->hand;
            s->hand = s->hand + 1 < s->cap ? s->hand + 1 : 0;
            if (e->used && e->ref && e->expires_ns > now_ns) {
                e->ref = 0;
                continue;
            }
            drop_index(s, i);
            s->st.evictions++;
            break;
        }
    }
    i = s->free_head;
    s->free_head = s->e[i].next;
    return i;
}

bool authcache_check(struct authcache *c, const struct authcache_key *k, const char *stored_hash,
                     uint64_t now_ns)
{
    struct ac_stripe *s = stripe_of(c, k);
    uint32_t *link = NULL;
    uint32_t i;
    bool hit = false;

    pthread_mutex_lock(&s->mu);
    i = find(s, k->b, &link);
    if (i != NONE) {
        struct ac_entry *e = &s->e[i];
        if (e->expires_ns > now_ns && strcmp(e->hash, stored_hash) == 0) {
            e->ref = 1;
            hit = true;
        } else {
            drop(s, link, i);
            s->st.invalidations++;
        }
    }
    if (hit)
        s->st.hits++;
    else
        s->st.misses++;
    pthread_mutex_unlock(&s->mu);
    return hit;
}

bool authcache_contains(struct authcache *c, const struct authcache_key *k, uint64_t now_ns)
{
    struct ac_stripe *s = stripe_of(c, k);
    uint32_t *link = NULL;
    uint32_t i;
    bool found;

    pthread_mutex_lock(&s->mu);
    i = find(s, k->b, &link);
    found = i != NONE && s->e[i].expires_ns > now_ns;
    pthread_mutex_unlock(&s->mu);
    return found;
}

void authcache_put(struct authcache *c, const struct authcache_key *k, const char *stored_hash,
                   uint64_t now_ns)
{
    struct ac_stripe *s = stripe_of(c, k);
    size_t hlen = strlen(stored_hash);
    uint64_t expires = c->ttl_ns ? now_ns + c->ttl_ns : UINT64_MAX;
    uint32_t *link = NULL;
    uint32_t i;
    struct ac_entry *e;

    if (hlen >= PWHASH_STR_MAX)
        return;
    pthread_mutex_lock(&s->mu);
    i = find(s, k->b, &link);
    if (i == NONE) {
        uint32_t *head;
        i = take_slot(s, now_ns);
        e = &s->e[i];
        memcpy(e->key, k->b, AUTHCACHE_KEY_BYTES);
        head = bucket_of(s, k->b);
        e->next = *head;
        *head = i;
        e->used = 1;
        e->ref = 0;
        s->count++;
        s->st.inserts++;
    }
    e = &s->e[i];
    e->user_tag = k->user_tag;
    e->expires_ns = expires;
    memcpy(e->hash, stored_hash, hlen + 1);
    pthread_mutex_unlock(&s->mu);
}

void authcache_remove(struct authcache *c, const struct authcache_key *k)
{
    struct ac_stripe *s = stripe_of(c, k);
    uint32_t *link = NULL;
    uint32_t i;

    pthread_mutex_lock(&s->mu);
    i = find(s, k->b, &link);
    if (i != NONE) {
        drop(s, link, i);
        s->st.invalidations++;
    }
    pthread_mutex_unlock(&s->mu);
}

size_t authcache_invalidate_user(struct authcache *c, const char *user, size_t user_len)
{
    uint64_t tag = user_tag(c, user, user_len);
    size_t n = 0;

    for (uint32_t si = 0; si < c->nstripes; si++) {
        struct ac_stripe *s = &c->stripes[si];
        pthread_mutex_lock(&s->mu);
        for (uint32_t i = 0; i < s->cap; i++) {
            if (s->e[i].used && s->e[i].user_tag == tag) {
                drop_index(s, i);
                s->st.invalidations++;
                n++;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    return n;
}

void authcache_get_stats(struct authcache *c, struct authcache_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t si = 0; si < c->nstripes; si++) {
        struct ac_stripe *s = &c->stripes[si];
        pthread_mutex_lock(&s->mu);
        out->hits += s->st.hits;
        out->misses += s->st.misses;
        out->inserts += s->st.inserts;
        out->evictions += s->st.evictions;
        out->invalidations += s->st.invalidations;
        out->entries += s->count;
        pthread_mutex_unlock(&s->mu);
    }
}
