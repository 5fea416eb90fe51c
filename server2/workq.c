/*
 * workq.c - see workq.h. The job queue is a growable ring of job copies; its length is bounded
 * by the I/O loop's per-connection in-flight limit times the connection limit.
 */
#include "workq.h"

#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "xalloc.h"

void s2_workq_init(struct s2_workq *q)
{
    pthread_condattr_t ca;

    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    q->cap = 256;
    q->ring = xcalloc(q->cap, sizeof(*q->ring));
}

void s2_workq_release(struct s2_workq *q)
{
    sodium_memzero(q->ring, q->cap * sizeof(*q->ring));
    free(q->ring);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

static void grow(struct s2_workq *q, size_t need)
{
    size_t cap = q->cap;
    struct s2_job *ring;

    while (cap < need)
        cap *= 2;
    ring = xcalloc(cap, sizeof(*ring));
    for (size_t i = 0; i < q->len; i++)
        ring[i] = q->ring[(q->head + i) % q->cap];
    sodium_memzero(q->ring, q->cap * sizeof(*q->ring));
    free(q->ring);
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
}

void s2_workq_set_workers(struct s2_workq *q, unsigned workers)
{
    pthread_mutex_lock(&q->mu);
    q->workers = workers;
    pthread_mutex_unlock(&q->mu);
}

void s2_workq_push(struct s2_workq *q, const struct s2_job *jobs, size_t n)
{
    pthread_mutex_lock(&q->mu);
    if (q->len + n > q->cap)
        grow(q, q->len + n);
    for (size_t i = 0; i < n; i++)
        q->ring[(q->head + q->len + i) % q->cap] = jobs[i];
    q->len += n;
    if (q->idle > 0) {
        if (n > 1)
            pthread_cond_broadcast(&q->cv);
        else
            pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

size_t s2_workq_pop(struct s2_workq *q, struct s2_job *out, size_t max, int timeout_ms,
                    bool *closed)
{
    struct timespec deadline;
    size_t share;
    size_t k;

    *closed = false;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->mu);
    while (q->len == 0 && !q->closed) {
        int rc;
        q->idle++;
        if (timeout_ms < 0)
            rc = pthread_cond_wait(&q->cv, &q->mu);
        else
            rc = pthread_cond_timedwait(&q->cv, &q->mu, &deadline);
        q->idle--;
        if (rc == ETIMEDOUT && q->len == 0) {
            pthread_mutex_unlock(&q->mu);
            return 0;
        }
    }
    if (q->len == 0) {
        *closed = true;
        pthread_mutex_unlock(&q->mu);
        return 0;
    }
    share = q->workers > q->idle + 1 ? q->workers : q->idle + 1;
    k = (q->len + share - 1) / share; /* ceil(len / share) */
    if (k > max)
        k = max;
    if (k == 0)
        k = 1;
    for (size_t i = 0; i < k; i++) {
        struct s2_job *j = &q->ring[(q->head + i) % q->cap];
        out[i] = *j;
        sodium_memzero(j->pass, sizeof(j->pass));
    }
    q->head = (q->head + k) % q->cap;
    q->len -= k;
    if (q->len > 0 && q->idle > 0)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return k;
}

void s2_workq_close(struct s2_workq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int s2_doneq_init(struct s2_doneq *q)
{
    memset(q, 0, sizeof(*q));
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0)
        return -1;
    pthread_mutex_init(&q->mu, NULL);
    q->cap = 256;
    q->items = xcalloc(q->cap, sizeof(*q->items));
    return 0;
}

void s2_doneq_release(struct s2_doneq *q)
{
    if (q->efd >= 0)
        close(q->efd);
    q->efd = -1;
    free(q->items);
    q->items = NULL;
    pthread_mutex_destroy(&q->mu);
}

void s2_doneq_push(struct s2_doneq *q, const struct s2_reply *r, size_t n)
{
    bool was_empty;

    pthread_mutex_lock(&q->mu);
    if (q->len + n > q->cap) {
        size_t cap = q->cap ? q->cap : 64;
        while (q->len + n > cap)
            cap *= 2;
        q->items = xrealloc(q->items, cap * sizeof(*q->items));
        q->cap = cap;
    }
    memcpy(q->items + q->len, r, n * sizeof(*r));
    was_empty = q->len == 0;
    q->len += n;
    pthread_mutex_unlock(&q->mu);
    if (was_empty) {
        uint64_t one = 1;
        /* EAGAIN only if the counter is huge: the loop will wake anyway. */
        if (write(q->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            abort();
    }
}

size_t s2_doneq_take(struct s2_doneq *q, struct s2_reply **buf, size_t *cap)
{
    struct s2_reply *mine = *buf;
    size_t mycap = *cap;
    size_t n;

    pthread_mutex_lock(&q->mu);
    n = q->len;
    *buf = q->items;
    *cap = q->cap;
    q->items = mine;
    q->cap = mycap;
    q->len = 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void s2_doneq_clear_signal(struct s2_doneq *q)
{
    uint64_t v;
    if (read(q->efd, &v, sizeof(v)) < 0) {
        /* EAGAIN: already cleared */
    }
}
