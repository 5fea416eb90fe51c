/*
 * invalbus.c - see invalbus.h.
 */
#include "invalbus.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

size_t invalbus_size(unsigned n)
{
    return sizeof(struct invalbus) + (size_t)n * sizeof(struct invalbus_member);
}

int invalbus_init(struct invalbus *b, unsigned n, bool process_shared)
{
    pthread_mutexattr_t ma;

    memset(b, 0, invalbus_size(n));
    b->n = n;
    for (unsigned i = 0; i < n; i++)
        b->m[i].efd = -1;
    for (unsigned i = 0; i < n; i++) {
        b->m[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (b->m[i].efd < 0) {
            int e = errno;
            for (unsigned k = 0; k < i; k++)
                close(b->m[k].efd);
            errno = e;
            return -1;
        }
    }
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
    pthread_mutex_destroy(&b->mu);
}

static void bus_lock(struct invalbus *b)
{
    if (pthread_mutex_lock(&b->mu) == EOWNERDEAD)
        pthread_mutex_consistent(&b->mu); /* its holder died between plain stores */
}

static void wake(const struct invalbus *b, unsigned i)
{
    uint64_t one = 1;
    ssize_t r = write(b->m[i].efd, &one, sizeof(one));
    (void)r; /* EAGAIN: the counter is full, the member is woken anyway */
}

static void wake_others(const struct invalbus *b, unsigned me)
{
    for (unsigned i = 0; i < b->n; i++)
        if (i != me && atomic_load(&b->m[i].present))
            wake(b, i);
}

void invalbus_join(struct invalbus *b, unsigned me, uint64_t *cursor)
{
    bus_lock(b);
    *cursor = b->seq;
    atomic_store(&b->m[me].applied, b->seq);
    atomic_store(&b->m[me].present, 1);
    pthread_mutex_unlock(&b->mu);
}

void invalbus_leave(struct invalbus *b, unsigned me)
{
    atomic_store(&b->m[me].present, 0);
    wake_others(b, me); /* whoever waited for us may answer now */
}

int invalbus_fd(const struct invalbus *b, unsigned me)
{
    return b->m[me].efd;
}

void invalbus_clear_wake(struct invalbus *b, unsigned me)
{
    uint64_t v;
    ssize_t r = read(b->m[me].efd, &v, sizeof(v));
    (void)r;
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
    memcpy(e->user, user, len);
    pthread_mutex_unlock(&b->mu);
    wake_others(b, me);
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
    if (atomic_exchange(&b->m[me].applied, applied) != applied)
        wake_others(b, me);
}

bool invalbus_done(struct invalbus *b, uint64_t seq)
{
    for (unsigned i = 0; i < b->n; i++)
        if (atomic_load(&b->m[i].present) && atomic_load(&b->m[i].applied) < seq)
            return false;
    return true;
}
