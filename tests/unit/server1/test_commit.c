/*
 * test_commit.c - cmocka tests for the committer's batching rule (server1/commit):
 * commit_should_wait waits for company only with group commit on, jobs queued, uploads still
 * being received and the --commit-window not over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../../server1/commit.h"

static void test_commit_should_wait_group(void **state)
{
    (void)state;
    /* others are still uploading and the window is open: wait */
    assert_true(commit_should_wait(true, 1, 3, 100, 200));
    assert_true(commit_should_wait(true, 40, 1, 199, 200));
}

static void test_commit_should_wait_alone(void **state)
{
    (void)state;
    /* nobody else is uploading: commit at once (low latency at low load) */
    assert_false(commit_should_wait(true, 1, 0, 100, 200));
    assert_false(commit_should_wait(true, 64, 0, 100, 200));
}

static void test_commit_should_wait_window_over(void **state)
{
    (void)state;
    assert_false(commit_should_wait(true, 1, 5, 200, 200));
    assert_false(commit_should_wait(true, 1, 5, 300, 200));
    /* a zero window: the deadline is now */
    assert_false(commit_should_wait(true, 1, 5, 100, 100));
}

static void test_commit_should_wait_off(void **state)
{
    (void)state;
    /* --group-commit off: one flush per request, never wait */
    assert_false(commit_should_wait(false, 1, 5, 100, 200));
    /* nothing queued: nothing to wait for */
    assert_false(commit_should_wait(true, 0, 5, 100, 200));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_should_wait_group),
        cmocka_unit_test(test_commit_should_wait_alone),
        cmocka_unit_test(test_commit_should_wait_window_over),
        cmocka_unit_test(test_commit_should_wait_off),
    };
    return cmocka_run_group_tests_name("commit", tests, NULL, NULL);
}
