/*
 * credcache.c - see credcache.h.
 */
#include "credcache.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"

static unsigned char pair_key[crypto_shorthash_siphashx24_KEYBYTES];
static unsigned char user_key[crypto_shorthash_siphash24_KEYBYTES];

int credcache_global_init(void)
{
    if (sodium_init() < 0)
        return -1;
    randombytes_buf(pair_key, sizeof(pair_key));
    randombytes_buf(user_key, sizeof(user_key));
    return 0;
}

bool credcache_init(struct credcache *c, size_t entries, uint64_t ttl_ns)
{
    uint32_t sets = 1;

    memset(c, 0, sizeof(*c));
    if (entries > CREDCACHE_MAX_ENTRIES)
        entries = CREDCACHE_MAX_ENTRIES;
    while ((size_t)sets * CREDCACHE_WAYS < entries)
        sets *= 2;
    c->e = calloc((size_t)sets * CREDCACHE_WAYS, sizeof(*c->e));
    if (c->e == NULL)
        return false;
    c->nsets = sets;
    c->ttl_ns = ttl_ns;
    return true;
}

void credcache_release(struct credcache *c)
{
    if (c->e != NULL)
        sodium_memzero(c->e, (size_t)c->nsets * CREDCACHE_WAYS * sizeof(*c->e));
    free(c->e);
    c->e = NULL;
}

static uint64_t user_tag(const char *user, size_t len)
{
    uint64_t t;
    crypto_shorthash_siphash24((unsigned char *)&t, (const unsigned char *)user, len, user_key);
    return t;
}

void credcache_key(const char *user, size_t user_len, const char *pass, size_t pass_len,
                   struct credcache_key *out)
{
    /* length-prefixed, so ("ab", "c") and ("a", "bc") differ */
    unsigned char buf[1 + ACCOUNT_USER_MAX + ACCOUNT_PASS_MAX];
    size_t n = 0;

    if (user_len > ACCOUNT_USER_MAX)
        user_len = ACCOUNT_USER_MAX; /* (longer names never get 200: not cached) */
    if (pass_len > ACCOUNT_PASS_MAX)
        pass_len = ACCOUNT_PASS_MAX;
    buf[n++] = (unsigned char)user_len;
    memcpy(buf + n, user, user_len);
    n += user_len;
    memcpy(buf + n, pass, pass_len);
    n += pass_len;
    crypto_shorthash_siphashx24((unsigned char *)out->k, buf, n, pair_key);
    out->user = user_tag(user, user_len);
    sodium_memzero(buf, n);
}

static struct credcache_entry *set_of(const struct credcache *c, uint64_t user)
{
    return &c->e[(size_t)(user & (c->nsets - 1)) * CREDCACHE_WAYS];
}

static bool same(const struct credcache_entry *e, const struct credcache_key *k)
{
    return e->k[0] == k->k[0] && e->k[1] == k->k[1] && e->user == k->user;
}

bool credcache_hit(struct credcache *c, const struct credcache_key *k, uint64_t now_ns)
{
    struct credcache_entry *set = set_of(c, k->user);

    for (int i = 0; i < CREDCACHE_WAYS; i++) {
        struct credcache_entry *e = &set[i];
        if (e->expires_ns == 0 || !same(e, k))
            continue;
        if (now_ns >= e->expires_ns) {
            e->expires_ns = 0; /* expired: gone */
            c->used--;
            break;
        }
        c->st.hits++;
        return true;
    }
    c->st.misses++;
    return false;
}

void credcache_put(struct credcache *c, const struct credcache_key *k, uint64_t epoch,
                   uint64_t now_ns)
{
    struct credcache_entry *set = set_of(c, k->user);
    struct credcache_entry *victim = NULL;
    struct credcache_entry *own_oldest = NULL;
    unsigned own = 0;

    if (epoch != c->epoch)
        return; /* an account changed, or a connection dropped, while this was asked */
    for (int i = 0; i < CREDCACHE_WAYS; i++) {
        struct credcache_entry *e = &set[i];
        if (e->expires_ns != 0 && now_ns >= e->expires_ns) {
            e->expires_ns = 0;
            c->used--;
        }
        if (e->expires_ns != 0 && same(e, k)) {
            e->expires_ns = now_ns + c->ttl_ns;
            return;
        }
        if (e->expires_ns != 0 && e->user == k->user) {
            own++;
            if (own_oldest == NULL || e->expires_ns < own_oldest->expires_ns)
                own_oldest = e;
        }
        if (victim == NULL || e->expires_ns < victim->expires_ns)
            victim = e; /* empty (0) first, else the one that expires first */
    }
    if (own >= CREDCACHE_PER_USER)
        victim = own_oldest; /* a user replaces its own, never more of the others' */
    if (victim->expires_ns != 0)
        c->st.evictions++;
    else
        c->used++;
    victim->k[0] = k->k[0];
    victim->k[1] = k->k[1];
    victim->user = k->user;
    victim->expires_ns = now_ns + c->ttl_ns;
    c->st.inserts++;
}

size_t credcache_drop_user(struct credcache *c, const char *user, size_t user_len)
{
    uint64_t tag = user_tag(user, user_len > ACCOUNT_USER_MAX ? ACCOUNT_USER_MAX : user_len);
    struct credcache_entry *set = set_of(c, tag);
    size_t n = 0;

    c->epoch++;
    for (int i = 0; i < CREDCACHE_WAYS; i++) {
        if (set[i].expires_ns != 0 && set[i].user == tag) {
            set[i].expires_ns = 0;
            n++;
        }
    }
    c->st.drops += n;
    c->used -= n;
    return n;
}

void credcache_clear(struct credcache *c)
{
    c->epoch++;
    c->st.clears++;
    c->used = 0;
    memset(c->e, 0, (size_t)c->nsets * CREDCACHE_WAYS * sizeof(*c->e));
}

size_t credcache_count(const struct credcache *c, uint64_t now_ns)
{
    size_t n = 0;
    for (size_t i = 0; i < (size_t)c->nsets * CREDCACHE_WAYS; i++)
        n += c->e[i].expires_ns != 0 && now_ns < c->e[i].expires_ns;
    return n;
}

struct credcache_shared *credcache_shared_new(size_t entries, uint64_t ttl_ns)
{
    struct credcache_shared *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (!credcache_init(&s->c, entries, ttl_ns)) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void credcache_shared_free(struct credcache_shared *s)
{
    if (s == NULL)
        return;
    credcache_release(&s->c);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

bool credcache_shared_hit(struct credcache_shared *s, const struct credcache_key *k,
                          uint64_t now_ns)
{
    bool hit;

    pthread_mutex_lock(&s->lock);
    hit = credcache_hit(&s->c, k, now_ns);
    pthread_mutex_unlock(&s->lock);
    return hit;
}

void credcache_shared_put(struct credcache_shared *s, const struct credcache_key *k,
                          uint64_t now_ns)
{
    pthread_mutex_lock(&s->lock);
    credcache_put(&s->c, k, s->c.epoch, now_ns);
    pthread_mutex_unlock(&s->lock);
}

void credcache_shared_drop_user(struct credcache_shared *s, const char *user, size_t user_len)
{
    pthread_mutex_lock(&s->lock);
    (void)credcache_drop_user(&s->c, user, user_len);
    pthread_mutex_unlock(&s->lock);
}
