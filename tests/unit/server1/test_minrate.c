/*
 * test_minrate.c - cmocka tests for server1/minrate: nothing is judged before the grace, a
 * transfer at the rate passes every step, a trickle fails at the first step after the grace,
 * a fast start is no credit for a stall a window later, steps passed over are emptied, the
 * times of the judgements, and a window of 0 turns the rule off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../../server1/minrate.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (1000 * SEC) /* an arbitrary start */

/* 1000 bytes/s over 4 s (steps of 1 s) after a grace of 2 s */
static const struct minrate_cfg rule = {.rate = 1000, .grace_ns = 2 * SEC, .window_ns = 4 * SEC};

static void test_minrate_grace(void **state)
{
    struct minrate m;
    (void)state;

    minrate_start(&m, T0);
    /* nothing moved, but nothing is judged before the grace */
    assert_false(minrate_too_slow(&m, &rule, T0));
    assert_false(minrate_too_slow(&m, &rule, T0 + SEC));
    assert_false(minrate_too_slow(&m, &rule, T0 + 2 * SEC - 1));
    /* the first judgement: steps 0 and 1 (2 s) must hold 2000 bytes */
    assert_true(minrate_too_slow(&m, &rule, T0 + 2 * SEC));
}

static void test_minrate_trickle(void **state)
{
    struct minrate m;
    (void)state;

    /* one byte every 500 ms: caught at the first judgement */
    minrate_start(&m, T0);
    for (uint64_t t = 0; t < 2 * SEC; t += 500 * MS)
        minrate_add(&m, &rule, T0 + t, 1);
    assert_true(minrate_too_slow(&m, &rule, T0 + 2 * SEC + 10 * MS));
}

static void test_minrate_steady(void **state)
{
    struct minrate m;
    (void)state;

    /* exactly the rate, in 100 ms pieces, for 20 s: never too slow */
    minrate_start(&m, T0);
    for (uint64_t t = 0; t < 20 * SEC; t += 100 * MS) {
        minrate_add(&m, &rule, T0 + t, 100);
        assert_false(minrate_too_slow(&m, &rule, T0 + t + MS));
    }
    /* a little less than the rate: caught */
    minrate_start(&m, T0);
    for (uint64_t t = 0; t < 3 * SEC; t += 100 * MS)
        minrate_add(&m, &rule, T0 + t, 99);
    assert_true(minrate_too_slow(&m, &rule, T0 + 3 * SEC));
}

static void test_minrate_no_credit(void **state)
{
    struct minrate m;
    (void)state;

    /* 1 MB in the first 100 ms, then nothing: fine while the burst is in the window (the last
     * four steps), too slow once it has slid out */
    minrate_start(&m, T0);
    minrate_add(&m, &rule, T0 + 50 * MS, 1000000);
    assert_false(minrate_too_slow(&m, &rule, T0 + 2 * SEC));
    assert_false(minrate_too_slow(&m, &rule, T0 + 4 * SEC));
    assert_true(minrate_too_slow(&m, &rule, T0 + 5 * SEC));
    /* since the start, the average is still far above the rate: a rule by the average (as
     * Apache's or Kestrel's) would let it trickle for 1000 s */
}

static void test_minrate_gap(void **state)
{
    struct minrate m;
    (void)state;

    /* steps passed over without bytes are emptied, also after a gap longer than the ring */
    minrate_start(&m, T0);
    minrate_add(&m, &rule, T0, 1000000);
    minrate_add(&m, &rule, T0 + 30 * SEC, 4000);
    /* at 31 s the window (27..31 s) holds the 4000 bytes of step 30 only: just enough */
    assert_false(minrate_too_slow(&m, &rule, T0 + 31 * SEC));
    assert_false(minrate_too_slow(&m, &rule, T0 + 34 * SEC));
    /* at 35 s the window (31..35 s) is empty */
    assert_true(minrate_too_slow(&m, &rule, T0 + 35 * SEC));
}

static void test_minrate_next(void **state)
{
    struct minrate m;
    (void)state;

    minrate_start(&m, T0);
    /* the first judgement is at the grace, then every step */
    assert_int_equal(minrate_next_ns(&m, &rule, T0), T0 + 2 * SEC);
    assert_int_equal(minrate_next_ns(&m, &rule, T0 + 1500 * MS), T0 + 2 * SEC);
    assert_int_equal(minrate_next_ns(&m, &rule, T0 + 2 * SEC), T0 + 3 * SEC);
    assert_int_equal(minrate_next_ns(&m, &rule, T0 + 3500 * MS), T0 + 4 * SEC);
    /* a grace that is not a whole number of steps: the first boundary after it */
    {
        struct minrate_cfg r = rule;
        r.grace_ns = 2500 * MS;
        assert_int_equal(minrate_next_ns(&m, &r, T0), T0 + 3 * SEC);
        assert_false(minrate_too_slow(&m, &r, T0 + 2900 * MS));
        assert_true(minrate_too_slow(&m, &r, T0 + 3 * SEC));
    }
    /* no grace: the first boundary */
    {
        struct minrate_cfg r = rule;
        r.grace_ns = 0;
        assert_int_equal(minrate_next_ns(&m, &r, T0), T0 + SEC);
        assert_true(minrate_too_slow(&m, &r, T0 + SEC));
    }
}

static void test_minrate_off(void **state)
{
    struct minrate_cfg off = rule;
    struct minrate m;
    (void)state;

    off.window_ns = 0;
    minrate_start(&m, T0);
    assert_false(minrate_too_slow(&m, &off, T0 + 3600 * SEC));
    assert_int_equal(minrate_next_ns(&m, &off, T0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minrate_grace),
        cmocka_unit_test(test_minrate_trickle),
        cmocka_unit_test(test_minrate_steady),
        cmocka_unit_test(test_minrate_no_credit),
        cmocka_unit_test(test_minrate_gap),
        cmocka_unit_test(test_minrate_next),
        cmocka_unit_test(test_minrate_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
