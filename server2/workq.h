/*
 * workq.h - the two queues of threads mode. s2_workq carries jobs from the I/O thread to the
 * worker threads (mutex + condition variable); a worker takes a fair share of what is queued,
 * at most its batch size, so that idle workers get work too. s2_doneq carries replies back
 * and wakes the I/O thread through an eventfd that its event loop watches; the eventfd is only
 * written when the queue goes from empty to non-empty.
 */
#ifndef S2_WORKQ_H
#define S2_WORKQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "job.h"

/* A growable ring of job copies. */
struct s2_jobring {
    struct s2_job *jobs;
    size_t cap;
    size_t head;
    size_t len;
};

struct s2_workq {
    pthread_mutex_t mu; /* protects every field below */
    pthread_cond_t cv;  /* jobs arrived or the queue closed */
    struct s2_jobring fast; /* S2_JOB_CHEAP and S2_JOB_REJECTED jobs: taken first */
    struct s2_jobring slow; /* the others: they may need argon2 */
    size_t len;             /* fast.len + slow.len */
    size_t max_slow;        /* --max-queue: slow jobs beyond are rejected (0: no limit) */
    uint64_t rejected;      /* jobs rejected so far */
    unsigned idle; /* workers waiting on cv */
    unsigned workers; /* workers that pop, 0 = unknown (see s2_workq_pop) */
    bool closed;
};

void s2_workq_init(struct s2_workq *q);
void s2_workq_release(struct s2_workq *q);
/* Tells the queue how many workers pop from it, for their fair share. */
void s2_workq_set_workers(struct s2_workq *q, unsigned workers);
/* At most max slow jobs queued (0: no limit); beyond, a job is pushed S2_JOB_REJECTED. */
void s2_workq_set_max_slow(struct s2_workq *q, size_t max);
/*
 * Appends n jobs (copied) and wakes workers: S2_JOB_CHEAP ones to the fast lane, the others to
 * the slow lane unless it holds max_slow already; those are marked S2_JOB_REJECTED (their
 * password wiped) and go to the fast lane, to be answered UNAVAILABLE at once.
 */
void s2_workq_push(struct s2_workq *q, const struct s2_job *jobs, size_t n);
/*
 * Waits up to timeout_ms (-1 = no limit) for jobs, then moves up to max of them into out, all
 * from the fast lane if it holds any, else from the slow one: ceil(queued / workers), or ceil(queued / (other idle workers + 1)) if the number of workers
 * is unknown, so a burst is spread over all the workers, busy ones included: a worker that
 * took more than its share would make them wait behind its hashing while others sit idle.
 * Returns how many; 0 means the wait timed out, or the queue is closed and empty (*closed).
 */
size_t s2_workq_pop(struct s2_workq *q, struct s2_job *out, size_t max, int timeout_ms,
                    bool *closed);
/* No more pushes; workers drain what is left, then pop returns 0 with *closed. */
void s2_workq_close(struct s2_workq *q);

struct s2_doneq {
    pthread_mutex_t mu; /* protects items, len, cap */
    struct s2_reply *items;
    size_t len;
    size_t cap;
    int efd; /* eventfd, readable while replies may be waiting; read it before taking */
};

/* 0, or -1 if the eventfd cannot be made (errno set). */
int s2_doneq_init(struct s2_doneq *q);
void s2_doneq_release(struct s2_doneq *q);
void s2_doneq_push(struct s2_doneq *q, const struct s2_reply *r, size_t n);
/*
 * Swaps the queued replies into the caller's buffer (*buf, *cap; both may be replaced, the
 * caller's old buffer becomes the queue's) and returns how many there are.
 */
size_t s2_doneq_take(struct s2_doneq *q, struct s2_reply **buf, size_t *cap);
/* Resets the eventfd's counter (call when it is readable). */
void s2_doneq_clear_signal(struct s2_doneq *q);

#endif /* S2_WORKQ_H */
