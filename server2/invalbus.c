/*
 * invalbus.c - see invalbus.h.
 */
#include "invalbus.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SILENT_NS ((uint64_t)INVALBUS_SILENT_MS * 1000000ull)

size_t invalbus_size(unsigned n)
{
    return sizeof(struct invalbus) + (size_t)n * sizeof(struct invalbus_member);
}

int invalbus_init(struct invalbus *b, unsigned n, bool process_shared)
{
    pthread_mutexattr_t ma;
    uint8_t id[INVALBUS_PEER_ID_LEN / 2];

    memset(b, 0, invalbus_size(n));
    b->n = n;
    for (unsigned i = 0; i < n; i++)
        b->m[i].efd = -1;
    b->feed_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->feed_efd < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        b->m[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (b->m[i].efd < 0) {
            int e = errno;
            for (unsigned k = 0; k < i; k++)
                close(b->m[k].efd);
            close(b->feed_efd);
            errno = e;
            return -1;
        }
    }
    randombytes_buf(id, sizeof(id));
    sodium_bin2hex(b->peer_id, sizeof(b->peer_id), id, sizeof(id));
    pthread_mutexattr_init(&ma);
    /* robust: a process killed while holding it must not block the others forever */
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    if (process_shared)
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&b->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    return 0;
}

void invalbus_release(struct invalbus *b)
{
    for (unsigned i = 0; i < b->n; i++)
        if (b->m[i].efd >= 0)
            close(b->m[i].efd);
    if (b->feed_efd >= 0)
        close(b->feed_efd);
    pthread_mutex_destroy(&b->mu);
}

static void bus_lock(struct invalbus *b)
{
    if (pthread_mutex_lock(&b->mu) == EOWNERDEAD)
        pthread_mutex_consistent(&b->mu); /* its holder died between plain stores */
}

static void wake_fd(int fd)
{
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof(one));
    (void)r; /* EAGAIN: the counter is full, the reader is woken anyway */
}

static void wake_others(const struct invalbus *b, unsigned me)
{
    for (unsigned i = 0; i < b->n; i++)
        if (i != me && atomic_load(&b->m[i].present))
            wake_fd(b->m[i].efd);
}

static void drain_fd(int fd)
{
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof(v));
    (void)r;
}

void invalbus_join(struct invalbus *b, unsigned me, uint64_t *cursor)
{
    bus_lock(b);
    *cursor = b->seq;
    atomic_store(&b->m[me].applied, b->seq);
    atomic_store(&b->m[me].lease_sent_ns, 0);
    atomic_store(&b->m[me].present, 1);
    pthread_mutex_unlock(&b->mu);
}

void invalbus_leave(struct invalbus *b, unsigned me)
{
    atomic_store(&b->m[me].present, 0);
    wake_others(b, me); /* whoever waited for us may answer now */
    wake_fd(b->feed_efd);
}

int invalbus_fd(const struct invalbus *b, unsigned me)
{
    return b->m[me].efd;
}

void invalbus_clear_wake(struct invalbus *b, unsigned me)
{
    drain_fd(b->m[me].efd);
}

uint64_t invalbus_publish(struct invalbus *b, unsigned me, const char *user, size_t len)
{
    struct invalbus_entry *e;
    uint64_t seq;

    if (len > ACCOUNT_USER_MAX)
        len = ACCOUNT_USER_MAX;
    bus_lock(b);
    seq = ++b->seq;
    e = &b->ring[seq % INVALBUS_RING];
    e->seq = seq;
    e->len = (uint8_t)len;
    if (len > 0)
        memcpy(e->user, user, len);
    pthread_mutex_unlock(&b->mu);
    wake_others(b, me);
    return seq;
}

uint64_t invalbus_seq(struct invalbus *b)
{
    uint64_t seq;

    bus_lock(b);
    seq = b->seq;
    pthread_mutex_unlock(&b->mu);
    return seq;
}

int invalbus_next(struct invalbus *b, uint64_t *cursor, char *user, uint8_t *len)
{
    int rc = 0;

    bus_lock(b);
    if (b->seq - *cursor > INVALBUS_RING) {
        *cursor = b->seq;
        rc = -1;
    } else if (b->seq > *cursor) {
        const struct invalbus_entry *e = &b->ring[(*cursor + 1) % INVALBUS_RING];
        *cursor += 1;
        *len = e->len;
        memcpy(user, e->user, e->len);
        rc = 1;
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void invalbus_set_applied(struct invalbus *b, unsigned me, uint64_t applied)
{
    if (atomic_exchange(&b->m[me].applied, applied) != applied) {
        wake_others(b, me);
        wake_fd(b->feed_efd);
    }
}

bool invalbus_done(struct invalbus *b, uint64_t seq, uint64_t now_ns)
{
    for (unsigned i = 0; i < b->n; i++) {
        uint64_t sent;
        if (!atomic_load(&b->m[i].present) || atomic_load(&b->m[i].applied) >= seq)
            continue;
        sent = atomic_load(&b->m[i].lease_sent_ns);
        if (sent == 0 || (now_ns > sent && now_ns - sent >= SILENT_NS))
            continue; /* none of its connections holds a lease: nobody caches through it */
        return false;
    }
    return true;
}

bool invalbus_any_present(const struct invalbus *b)
{
    for (unsigned i = 0; i < b->n; i++)
        if (atomic_load(&b->m[i].present))
            return true;
    return false;
}

void invalbus_lease_sent(struct invalbus *b, unsigned me, uint64_t now_ns)
{
    atomic_store(&b->m[me].lease_sent_ns, now_ns ? now_ns : 1);
}

bool invalbus_may_lease(struct invalbus *b, uint64_t now_ns)
{
    return now_ns < atomic_load(&b->grant_until_ns);
}

void invalbus_set_grant(struct invalbus *b, uint64_t until_ns)
{
    atomic_store(&b->grant_until_ns, until_ns);
}

void invalbus_want(struct invalbus *b, uint64_t seq)
{
    uint64_t cur = atomic_load(&b->feed_wanted);

    while (cur < seq && !atomic_compare_exchange_weak(&b->feed_wanted, &cur, seq))
        ;
    wake_fd(b->feed_efd);
}

uint64_t invalbus_wanted(struct invalbus *b)
{
    return atomic_load(&b->feed_wanted);
}

void invalbus_set_feed_done(struct invalbus *b, uint64_t done)
{
    uint64_t cur = atomic_load(&b->feed_done);

    while (cur < done && !atomic_compare_exchange_weak(&b->feed_done, &cur, done))
        ;
    if (cur < done)
        wake_others(b, INVALBUS_FEED);
}

uint64_t invalbus_feed_done(struct invalbus *b)
{
    return atomic_load(&b->feed_done);
}

int invalbus_feed_fd(const struct invalbus *b)
{
    return b->feed_efd;
}

void invalbus_clear_feed_wake(struct invalbus *b)
{
    drain_fd(b->feed_efd);
}
