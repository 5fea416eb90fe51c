/*
 * workq.c - see workq.h. The job queue is two growable rings of job copies; their length is
 * bounded by the I/O loop's per-connection in-flight limit times the connection limit, and the
 * slow one's by --max-queue.
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

static void ring_init(struct s2_jobring *r)
{
    r->cap = 256;
    r->jobs = xcalloc(r->cap, sizeof(*r->jobs));
    r->head = r->len = 0;
}

static void ring_release(struct s2_jobring *r)
{
    sodium_memzero(r->jobs, r->cap * sizeof(*r->jobs));
    free(r->jobs);
}

static void ring_push(struct s2_jobring *r, const struct s2_job *j)
{
    if (r->len == r->cap) {
        size_t cap = r->cap * 2;
        struct s2_job *jobs = xcalloc(cap, sizeof(*jobs));
        for (size_t i = 0; i < r->len; i++)
            jobs[i] = r->jobs[(r->head + i) % r->cap];
        sodium_memzero(r->jobs, r->cap * sizeof(*r->jobs));
        free(r->jobs);
        r->jobs = jobs;
        r->cap = cap;
        r->head = 0;
    }
    r->jobs[(r->head + r->len) % r->cap] = *j;
    r->len++;
}

/* Moves the first k jobs into out, wiping their passwords in the ring. */
static void ring_take(struct s2_jobring *r, struct s2_job *out, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        struct s2_job *j = &r->jobs[(r->head + i) % r->cap];
        out[i] = *j;
        sodium_memzero(j->pass, sizeof(j->pass));
    }
    r->head = (r->head + k) % r->cap;
    r->len -= k;
}

void s2_workq_init(struct s2_workq *q)
{
    pthread_condattr_t ca;

    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    ring_init(&q->fast);
    ring_init(&q->slow);
}

void s2_workq_release(struct s2_workq *q)
{
    ring_release(&q->fast);
    ring_release(&q->slow);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

void s2_workq_set_workers(struct s2_workq *q, unsigned workers)
{
    pthread_mutex_lock(&q->mu);
    q->workers = workers;
    pthread_mutex_unlock(&q->mu);
}

void s2_workq_set_max_slow(struct s2_workq *q, size_t max)
{
    pthread_mutex_lock(&q->mu);
    q->max_slow = max;
    pthread_mutex_unlock(&q->mu);
}

void s2_workq_push(struct s2_workq *q, const struct s2_job *jobs, size_t n)
{
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].flags & (S2_JOB_CHEAP | S2_JOB_REJECTED)) {
            ring_push(&q->fast, &jobs[i]);
        } else if (q->max_slow == 0 || q->slow.len < q->max_slow) {
            ring_push(&q->slow, &jobs[i]);
        } else {
            struct s2_job j = jobs[i];
            j.flags |= S2_JOB_REJECTED;
            sodium_memzero(j.pass, sizeof(j.pass));
            ring_push(&q->fast, &j);
            sodium_memzero(&j, sizeof(j));
            q->rejected++;
        }
    }
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
    struct s2_jobring *r;
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
    r = q->fast.len > 0 ? &q->fast : &q->slow;
    share = q->workers > q->idle + 1 ? q->workers : q->idle + 1;
    k = (r->len + share - 1) / share; /* ceil(len / share) */
    if (k > max)
        k = max;
    if (k == 0)
        k = 1;
    ring_take(r, out, k);
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
