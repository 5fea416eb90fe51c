/*
 * test_s2_workq.c - threads mode's queues: a worker takes a fair share of what is queued (at
 * most its batch), cache hits and rejected jobs before the others, --max-queue, close drains before it reports closed, a timed wait times out, replies
 * wake the I/O side through the eventfd, and a producer/consumer pair loses nothing.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../server2/workq.h"

static void fill(struct s2_job *jobs, size_t n, uint32_t first_id)
{
    memset(jobs, 0, n * sizeof(*jobs));
    for (size_t i = 0; i < n; i++)
        jobs[i].id = first_id + (uint32_t)i;
}

static void test_s2_workq_batches(void **state)
{
    struct s2_workq q;
    struct s2_job in[600];
    struct s2_job out[64];
    bool closed;
    size_t n;

    (void)state;
    s2_workq_init(&q);
    fill(in, 600, 1);
    s2_workq_push(&q, in, 600); /* grows past the initial ring */
    n = s2_workq_pop(&q, out, 64, -1, &closed);
    assert_int_equal(n, 64);
    assert_false(closed);
    assert_int_equal(out[0].id, 1);
    assert_int_equal(out[63].id, 64);
    n = s2_workq_pop(&q, out, 10, 0, &closed);
    assert_int_equal(n, 10);
    assert_int_equal(out[0].id, 65);
    s2_workq_close(&q);
    size_t total = 74;
    while ((n = s2_workq_pop(&q, out, 64, -1, &closed)) > 0)
        total += n;
    assert_true(closed);
    assert_int_equal(total, 600);
    s2_workq_release(&q);
}

static void test_s2_workq_fair_share(void **state)
{
    struct s2_workq q;
    struct s2_job in[100];
    struct s2_job out[64];
    bool closed;

    (void)state;
    s2_workq_init(&q);
    s2_workq_set_workers(&q, 4);
    fill(in, 100, 1);
    s2_workq_push(&q, in, 100);
    /* no worker is idle, but three others will want work: a quarter, not the batch of 64 */
    assert_int_equal(s2_workq_pop(&q, out, 64, 0, &closed), 25);
    assert_int_equal(s2_workq_pop(&q, out, 64, 0, &closed), 19); /* ceil(75 / 4) */
    assert_int_equal(s2_workq_pop(&q, out, 10, 0, &closed), 10); /* and never above max */
    s2_workq_release(&q);
}

/* Cheap jobs (cache hits) and rejected ones are taken before any queued slow job; beyond
 * max_slow a job is rejected, its password wiped, and it takes the fast lane too. */
static void test_s2_workq_lanes(void **state)
{
    struct s2_workq q;
    struct s2_job in[10];
    struct s2_job out[16];
    bool closed;
    size_t n;

    (void)state;
    s2_workq_init(&q);
    s2_workq_set_max_slow(&q, 4);
    fill(in, 10, 1);
    for (size_t i = 0; i < 10; i++)
        memcpy(in[i].pass, "secret", 7);
    in[6].flags = S2_JOB_CHEAP;
    in[9].flags = S2_JOB_CHEAP;
    s2_workq_push(&q, in, 6);      /* 1-4 queued slow, 5 and 6 over the limit: rejected */
    s2_workq_push(&q, in + 6, 4);  /* 7 cheap, 8 and 9 rejected, 10 cheap */
    assert_int_equal(q.rejected, 4);
    n = s2_workq_pop(&q, out, 16, 0, &closed);
    assert_int_equal(n, 6);
    assert_int_equal(out[0].id, 5);
    assert_int_equal(out[0].flags, S2_JOB_REJECTED);
    assert_int_equal(out[0].pass[0], '\0'); /* wiped */
    assert_int_equal(out[1].id, 6);
    assert_int_equal(out[2].id, 7);
    assert_int_equal(out[2].flags, S2_JOB_CHEAP);
    assert_string_equal(out[2].pass, "secret");
    assert_int_equal(out[3].id, 8);
    assert_int_equal(out[4].id, 9);
    assert_int_equal(out[5].id, 10);
    /* then the slow ones, in order, and room for slow jobs again */
    n = s2_workq_pop(&q, out, 2, 0, &closed);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].id, 1);
    s2_workq_push(&q, in, 1);
    assert_int_equal(q.rejected, 4);
    in[0].flags = S2_JOB_CHEAP;
    s2_workq_push(&q, in, 1); /* a cheap one overtakes the slow ones */
    n = s2_workq_pop(&q, out, 1, 0, &closed);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].flags, S2_JOB_CHEAP);
    n = s2_workq_pop(&q, out, 16, 0, &closed);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].id, 3);
    s2_workq_release(&q);
}

static void test_s2_workq_timeout(void **state)
{
    struct s2_workq q;
    struct s2_job out[4];
    bool closed = true;

    (void)state;
    s2_workq_init(&q);
    assert_int_equal(s2_workq_pop(&q, out, 4, 20, &closed), 0);
    assert_false(closed);
    s2_workq_release(&q);
}

static void test_s2_doneq(void **state)
{
    struct s2_doneq q;
    struct s2_reply r[300];
    struct s2_reply *buf = calloc(4, sizeof(*buf));
    size_t cap = 4;
    struct pollfd pfd;

    (void)state;
    assert_int_equal(s2_doneq_init(&q), 0);
    pfd.fd = q.efd;
    pfd.events = POLLIN;
    assert_int_equal(poll(&pfd, 1, 0), 0);
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 300; i++)
        r[i].id = (uint32_t)i;
    s2_doneq_push(&q, r, 100);
    s2_doneq_push(&q, r + 100, 200);
    assert_int_equal(poll(&pfd, 1, 0), 1);
    s2_doneq_clear_signal(&q);
    assert_int_equal(poll(&pfd, 1, 0), 0);
    assert_int_equal(s2_doneq_take(&q, &buf, &cap), 300);
    assert_true(cap >= 300);
    assert_int_equal(buf[299].id, 299);
    assert_int_equal(s2_doneq_take(&q, &buf, &cap), 0);
    free(buf);
    s2_doneq_release(&q);
}

#define PRODUCED 20000

struct consumer {
    struct s2_workq *q;
    uint64_t sum;
    size_t count;
    size_t max_batch;
};

static void *consume(void *p)
{
    struct consumer *c = p;
    struct s2_job out[32];
    bool closed;
    size_t n;

    while ((n = s2_workq_pop(c->q, out, 32, -1, &closed)) > 0) {
        for (size_t i = 0; i < n; i++)
            c->sum += out[i].id;
        c->count += n;
        if (n > c->max_batch)
            c->max_batch = n;
    }
    return NULL;
}

static void test_s2_workq_threads(void **state)
{
    struct s2_workq q;
    struct consumer c[2] = {{.q = &q}, {.q = &q}};
    pthread_t t[2];
    struct s2_job jobs[7];
    uint64_t want = 0;

    (void)state;
    s2_workq_init(&q);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, consume, &c[i]), 0);
    for (uint32_t id = 1; id <= PRODUCED; id += 7) {
        size_t n = PRODUCED - id + 1 < 7 ? PRODUCED - id + 1 : 7;
        fill(jobs, n, id);
        s2_workq_push(&q, jobs, n);
    }
    for (uint64_t id = 1; id <= PRODUCED; id++)
        want += id;
    s2_workq_close(&q);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(c[0].count + c[1].count, PRODUCED);
    assert_int_equal(c[0].sum + c[1].sum, want);
    assert_true(c[0].max_batch <= 32 && c[1].max_batch <= 32);
    s2_workq_release(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s2_workq_batches),
        cmocka_unit_test(test_s2_workq_fair_share),
        cmocka_unit_test(test_s2_workq_lanes),
        cmocka_unit_test(test_s2_workq_timeout),
        cmocka_unit_test(test_s2_doneq),
        cmocka_unit_test(test_s2_workq_threads),
    };
    return cmocka_run_group_tests_name("s2_workq", tests, NULL, NULL);
}
