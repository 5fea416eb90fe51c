/*
 * workq.c - see workq.h. Two growable rings of job copies; their length is bounded by the I/O
 * loop's per-connection in-flight limit times the connection limit, and the slow one's by
 * --max-queue.
 */
#include "workq.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static void wipe_passwords(struct s2_job *j)
{
    sodium_memzero(j->pass, sizeof(j->pass));
    sodium_memzero(j->new_pass, sizeof(j->new_pass));
}

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

static void ring_take(struct s2_jobring *r, struct s2_job *out, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        struct s2_job *j = &r->jobs[(r->head + i) % r->cap];
        out[i] = *j;
        wipe_passwords(j);
    }
    r->head = (r->head + k) % r->cap;
    r->len -= k;
}

void s2_workq_init(struct s2_workq *q)
{
    memset(q, 0, sizeof(*q));
    ring_init(&q->fast);
    ring_init(&q->slow);
}

void s2_workq_release(struct s2_workq *q)
{
    ring_release(&q->fast);
    ring_release(&q->slow);
}

void s2_workq_set_max_slow(struct s2_workq *q, size_t max)
{
    q->max_slow = max;
}

void s2_workq_push(struct s2_workq *q, const struct s2_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].flags & (S2_JOB_CHEAP | S2_JOB_REJECTED)) {
            ring_push(&q->fast, &jobs[i]);
        } else if (q->max_slow == 0 || q->slow.len < q->max_slow) {
            ring_push(&q->slow, &jobs[i]);
        } else {
            struct s2_job j = jobs[i];
            j.flags |= S2_JOB_REJECTED;
            wipe_passwords(&j);
            ring_push(&q->fast, &j);
            sodium_memzero(&j, sizeof(j));
            q->rejected++;
        }
    }
    q->len += n;
}

size_t s2_workq_pop(struct s2_workq *q, struct s2_job *out, size_t max)
{
    struct s2_jobring *r = q->fast.len > 0 ? &q->fast : &q->slow;
    size_t k = r->len < max ? r->len : max;

    ring_take(r, out, k);
    q->len -= k;
    return k;
}
