/*
 * test_workq.c - a worker's queue of jobs read and not yet worked: in order, at most the
 * batch asked for, growing past its first ring, wiping its copies of the passwords; cache hits
 * and rejected jobs before the others; --max-queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../server2/workq.h"

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
    size_t n;
    size_t total = 0;

    (void)state;
    s2_workq_init(&q);
    fill(in, 600, 1);
    for (size_t i = 0; i < 600; i++)
        memcpy(in[i].new_pass, "fresh", 6);
    s2_workq_push(&q, in, 600); /* grows past the initial ring */
    n = s2_workq_pop(&q, out, 64);
    assert_int_equal(n, 64);
    assert_int_equal(out[0].id, 1);
    assert_int_equal(out[63].id, 64);
    assert_string_equal(out[63].new_pass, "fresh");
    n = s2_workq_pop(&q, out, 10);
    assert_int_equal(n, 10);
    assert_int_equal(out[0].id, 65);
    total = 74;
    while ((n = s2_workq_pop(&q, out, 64)) > 0) {
        assert_int_equal(out[0].id, total + 1); /* in order */
        total += n;
    }
    assert_int_equal(total, 600);
    assert_int_equal(q.len, 0);
    /* the queue's copies of the passwords are gone */
    for (size_t i = 0; i < q.slow.cap; i++)
        assert_int_equal(q.slow.jobs[i].new_pass[0], '\0');
    s2_workq_release(&q);
}

/* Cheap jobs (cache hits) and rejected ones are taken before any queued slow job; beyond
 * max_slow a job is rejected, its password wiped, and it takes the fast lane too. */
static void test_s2_workq_lanes(void **state)
{
    struct s2_workq q;
    struct s2_job in[10];
    struct s2_job out[16];
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
    n = s2_workq_pop(&q, out, 16);
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
    n = s2_workq_pop(&q, out, 2);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].id, 1);
    s2_workq_push(&q, in, 1);
    assert_int_equal(q.rejected, 4);
    in[0].flags = S2_JOB_CHEAP;
    s2_workq_push(&q, in, 1); /* a cheap one overtakes the slow ones */
    n = s2_workq_pop(&q, out, 1);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].flags, S2_JOB_CHEAP);
    n = s2_workq_pop(&q, out, 16);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].id, 3);
    s2_workq_release(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s2_workq_batches),
        cmocka_unit_test(test_s2_workq_lanes),
    };
    return cmocka_run_group_tests_name("s2_workq", tests, NULL, NULL);
}
