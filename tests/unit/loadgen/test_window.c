/*
 * test_window.c - loadgen/window: the rule that sizes a point's window (20 (R + Z) and 200
 * completions, up to --window-max), its outcome, and the shared end: extended until a thread
 * reaches it, then sealed, with every thread ending at the same end.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../../common/clock.h"
#include "../../../loadgen/window.h"

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-6 * (fabs(want) > 1 ? fabs(want) : 1)) {
        print_error("got %.9g, want %.9g\n", got, want);
        fail();
    }
}

static void test_window_goal(void **state)
{
    (void)state;
    /* nothing completed: no goal can be met */
    assert_true(isinf(lg_window_goal_s(0, 0, 0, 5)));
    /* 10000 completions of 1 ms in 2 s: 20 cycles = 20 ms, 200 completions = 40 ms */
    assert_near(lg_window_goal_s(10000, 0.001, 0, 2), 0.04);
    /* R = 0.5 s, 8 s: 20 cycles = 10 s; 200 of 64 completions = 25 s */
    assert_near(lg_window_goal_s(64, 0.5, 0, 8), 25);
    /* think time counts in the cycle: 20 x (10 ms + 990 ms) = 20 s */
    assert_near(lg_window_goal_s(100000, 0.010, 0.990, 5), 20);
    /* errors only (R 0): the count alone */
    assert_near(lg_window_goal_s(50, 0, 0, 1), 4);
}

static void test_window_next(void **state)
{
    (void)state;
    /* met with 5% to spare: the window stays */
    assert_near(lg_window_next_s(1.5, 3, 10000, 0.001, 0, 1.3), 1.5);
    /* the full run's mp-noprefetch-mysql get-100MB point at N = 8: 56 completions of 1,018 ms
     * in 8 s; the rule wants max(20.4 s, 28.6 s): 1.1 x that, within a cap of 40 s */
    assert_near(lg_window_next_s(8, 40, 56, 1.018, 0, 8), 1.1 * 200 * 8 / 56.0);
    /* ... and with the default cap, twice --duration */
    assert_near(lg_window_next_s(8, 16, 56, 1.018, 0, 8), 16);
    /* just short of the goal (within the 5% spare): extended to 1.1 goals */
    assert_near(lg_window_next_s(1.0, 10, 400, 0.0499, 0, 1.0), 1.1 * 20 * 0.0499);
    assert_near(lg_window_next_s(1.04, 10, 400, 0.05, 0, 1.0), 1.1);
    assert_near(lg_window_next_s(1.06, 10, 400, 0.05, 0, 1.0), 1.06);
    /* nothing completed yet: twice the window, at most the cap */
    assert_near(lg_window_next_s(2, 10, 0, 0, 0, 1.8), 4);
    assert_near(lg_window_next_s(6, 10, 0, 0, 0, 5.8), 10);
    /* at the cap (or a cap of 0, or one below the window): nothing to do */
    assert_near(lg_window_next_s(10, 10, 3, 1, 0, 9.8), 10);
    assert_near(lg_window_next_s(2, 0, 3, 1, 0, 1.8), 2);
}

static void test_window_rule_of(void **state)
{
    (void)state;
    assert_int_equal(lg_window_rule_of(2, 4, 200, 0.1, 0), LG_WINDOW_MET);
    assert_int_equal(lg_window_rule_of(2, 0, 5000, 0.001, 0), LG_WINDOW_MET); /* not sized */
    assert_int_equal(lg_window_rule_of(2, 4, 199, 0.01, 0), LG_WINDOW_SHORT);
    assert_int_equal(lg_window_rule_of(4, 4, 100, 0.5, 0), LG_WINDOW_CAPPED);
    assert_int_equal(lg_window_rule_of(3.9995, 4, 100, 0.5, 0), LG_WINDOW_CAPPED);
    assert_int_equal(lg_window_rule_of(8, 0, 56, 1.018, 0), LG_WINDOW_OFF);
    /* 20 cycles of R + Z, not of R */
    assert_int_equal(lg_window_rule_of(10, 20, 500, 0.1, 0.4), LG_WINDOW_MET);
    assert_int_equal(lg_window_rule_of(9.9, 20, 500, 0.1, 0.4), LG_WINDOW_SHORT);
    assert_string_equal(lg_window_rule_name(LG_WINDOW_MET), "met");
    assert_string_equal(lg_window_rule_name(LG_WINDOW_CAPPED), "capped");
    assert_string_equal(lg_window_rule_name(LG_WINDOW_SHORT), "short");
    assert_string_equal(lg_window_rule_name(LG_WINDOW_OFF), "off");
}

static void test_window_seal(void **state)
{
    struct lg_window w;

    (void)state;
    lg_window_init(&w, 1000);
    assert_int_equal(lg_window_end_at(&w, 999), 1000); /* not reached: not sealed */
    assert_true(lg_window_extend(&w, 2000));
    assert_false(lg_window_extend(&w, 1500)); /* never earlier */
    assert_int_equal(lg_window_end(&w), 2000);
    assert_int_equal(lg_window_end_at(&w, 2000), 2000); /* reached: sealed */
    assert_false(lg_window_extend(&w, 3000));
    assert_int_equal(lg_window_end(&w), 2000);
    assert_int_equal(lg_window_end_at(&w, 5000), 2000);
    /* an end "at infinity" (bounded by request counts) is never reached */
    lg_window_init(&w, UINT64_MAX);
    assert_int_equal(lg_window_end_at(&w, UINT64_MAX >> 2), UINT64_MAX >> 1);
    assert_false(lg_window_extend(&w, UINT64_MAX));
}

#define T_THREADS 4

struct t_ender {
    pthread_t tid;
    struct lg_window *w;
    uint64_t stopped_at; /* the end this thread saw when it stopped */
};

static void *t_end_loop(void *arg)
{
    struct t_ender *t = arg;

    for (;;) {
        uint64_t now = clock_now_ns();
        uint64_t end = lg_window_end_at(t->w, now);
        if (now >= end) {
            t->stopped_at = end;
            return NULL;
        }
    }
}

/* Threads that stop at the end while the run extends it: all stop at one end, the last. */
static void test_window_threads_agree(void **state)
{
    struct lg_window w;
    struct t_ender t[T_THREADS];
    uint64_t start = clock_now_ns();
    uint64_t last = start + 200000000ull;
    unsigned extended = 0;

    (void)state;
    lg_window_init(&w, last);
    for (unsigned i = 0; i < T_THREADS; i++) {
        t[i].w = &w;
        assert_int_equal(pthread_create(&t[i].tid, NULL, t_end_loop, &t[i]), 0);
    }
    /* extend by 5 ms while it is open, up to 50 extensions or until one fails */
    while (extended < 50 && lg_window_extend(&w, last + 5000000ull)) {
        last += 5000000ull;
        extended++;
        while (clock_now_ns() + 2000000ull < last)
            ;
    }
    for (unsigned i = 0; i < T_THREADS; i++) {
        assert_int_equal(pthread_join(t[i].tid, NULL), 0);
        assert_int_equal(t[i].stopped_at, lg_window_end(&w));
    }
    assert_int_equal(lg_window_end(&w), last);
    assert_true(extended >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_goal),
        cmocka_unit_test(test_window_next),
        cmocka_unit_test(test_window_rule_of),
        cmocka_unit_test(test_window_seal),
        cmocka_unit_test(test_window_threads_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
