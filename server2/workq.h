/*
 * workq.h - the jobs a worker (loopworker.h) has read and not yet worked, in two lanes: a VERIFY
 * the auth cache holds, or a job already rejected, goes ahead of work that may need argon2.
 * Owned by one thread: no lock.
 */
#ifndef S2_WORKQ_H
#define S2_WORKQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* A growable ring of job copies. */
struct s2_jobring {
    struct s2_job *jobs;
    size_t cap;
    size_t head;
    size_t len;
};

struct s2_workq {
    struct s2_jobring fast; /* S2_JOB_CHEAP and S2_JOB_REJECTED jobs: taken first */
    struct s2_jobring slow; /* the others: they may need argon2 */
    size_t len;             /* fast.len + slow.len */
    size_t max_slow;        /* --max-queue: slow jobs beyond are rejected (0: no limit) */
    uint64_t rejected;      /* jobs rejected so far */
};

void s2_workq_init(struct s2_workq *q);
void s2_workq_release(struct s2_workq *q);
/* At most max slow jobs queued (0: no limit); beyond, a job is pushed S2_JOB_REJECTED. */
void s2_workq_set_max_slow(struct s2_workq *q, size_t max);
/*
 * Appends n jobs (copied): S2_JOB_CHEAP ones to the fast lane, the others to the slow lane
 * unless it holds max_slow already; those are marked S2_JOB_REJECTED (their passwords wiped)
 * and go to the fast lane, to be answered UNAVAILABLE at once.
 */
void s2_workq_push(struct s2_workq *q, const struct s2_job *jobs, size_t n);
/* Moves up to max jobs into out, all from the fast lane if it holds any, else from the slow
 * one, oldest first; the queue's copies of the passwords are wiped. Returns how many. */
size_t s2_workq_pop(struct s2_workq *q, struct s2_job *out, size_t max);

#endif /* S2_WORKQ_H */
