/*
 * test_sweep.c - loadgen/sweep: N* selection and the auto-sweep's choice of the next N, on
 * synthetic throughput curves (pure functions, no server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../../loadgen/sweep.h"

static void test_sweep_nstar_knee(void **state)
{
    const struct lg_sweep_pt pts[] = {
        {1, 1000}, {2, 2000}, {4, 4000}, {8, 7700}, {16, 8000}, {32, 7900},
    };
    (void)state;
    /* 7700 >= 0.95 * 8000 = 7600: N = 8 is the smallest within 5% */
    assert_int_equal(lg_sweep_nstar(pts, 6), 3);
}

static void test_sweep_nstar_any_order(void **state)
{
    const struct lg_sweep_pt pts[] = {
        {32, 7900}, {4, 4000}, {16, 8000}, {1, 1000}, {8, 7500}, {2, 2000},
    };
    (void)state;
    /* 7500 < 7600: N* is 16, wherever it sits in the array */
    assert_int_equal(lg_sweep_nstar(pts, 6), 2);
    assert_int_equal(lg_sweep_nstar(pts, 0), -1);
}

static void test_sweep_nstar_flat_and_zero(void **state)
{
    const struct lg_sweep_pt flat[] = {{1, 500}, {2, 510}, {4, 505}};
    const struct lg_sweep_pt zero[] = {{1, 0}, {2, 0}};
    (void)state;
    assert_int_equal(lg_sweep_nstar(flat, 3), 0);
    assert_int_equal(lg_sweep_nstar(zero, 2), 0); /* nothing worked: the smallest N */
}

typedef double (*curve_fn)(unsigned n);

static double saturates_at_12(unsigned n)
{
    return (n < 12 ? n : 12) * 1000.0;
}

static double linear(unsigned n)
{
    return n * 1000.0;
}

static double flat(unsigned n)
{
    (void)n;
    return 5000.0;
}

static double noisy_peak(unsigned n)
{
    /* grows until 8, then declines: more users only add contention */
    return n <= 8 ? n * 1000.0 : 8000.0 - (n - 8) * 50.0;
}

/* Runs an auto sweep planned so against curve f; returns the number of points, the Ns in out. */
static size_t run_plan(curve_fn f, const struct lg_sweep_plan *plan, unsigned *out, size_t cap)
{
    struct lg_autosweep s;
    size_t n = 0;

    lg_autosweep_init(&s, plan);
    for (unsigned next = lg_autosweep_next(&s); next != 0; next = lg_autosweep_next(&s)) {
        assert_true(n < cap);
        out[n++] = next;
        lg_autosweep_add(&s, next, f(next));
    }
    return n;
}

/* The same with the default plan (doubling, 2 stalls, 2 bisections). */
static size_t run_sweep(curve_fn f, unsigned max_users, unsigned *out, size_t cap)
{
    const struct lg_sweep_plan plan = {max_users, LG_SWEEP_STEP, LG_SWEEP_STALLS, LG_SWEEP_REFINE};

    return run_plan(f, &plan, out, cap);
}

/* The short plan (step 4, 1 stall, no bisection) stops one step after X stops growing. */
static void test_autosweep_short_plan(void **state)
{
    const struct lg_sweep_plan plan = {256, 4, 1, 0};
    const struct lg_sweep_plan capped = {32, 4, 1, 0};
    unsigned ns[16];
    size_t n;
    (void)state;
    /* 1 (1000), 4 (4000), 16 (12000), 64 (12000: no growth, the end) */
    n = run_plan(saturates_at_12, &plan, ns, 16);
    assert_int_equal(n, 4);
    assert_int_equal(ns[0], 1);
    assert_int_equal(ns[1], 4);
    assert_int_equal(ns[2], 16);
    assert_int_equal(ns[3], 64);
    /* still growing at 16: the bound ends it, at 32 (not 64) */
    n = run_plan(linear, &capped, ns, 16);
    assert_int_equal(n, 4);
    assert_int_equal(ns[3], 32);
    /* flat from the start: 1, then 4 does not grow: done */
    n = run_plan(flat, &plan, ns, 16);
    assert_int_equal(n, 2);
}

static void test_autosweep_saturating(void **state)
{
    const unsigned want[] = {1, 2, 4, 8, 16, 32, 64, 12, 10};
    unsigned got[64];
    size_t n = run_sweep(saturates_at_12, 1024, got, 64);

    (void)state;
    /* 32 and 64 do not grow: doubling stops; N* = 16, bisect (8, 16]: 12, then (8, 12]: 10 */
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_autosweep_bounded_by_max(void **state)
{
    const unsigned want[] = {1, 2, 4, 8, 16, 20, 18, 19};
    unsigned got[64];
    size_t n = run_sweep(linear, 20, got, 64);

    (void)state;
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_autosweep_flat(void **state)
{
    unsigned got[64];
    size_t n = run_sweep(flat, 1024, got, 64);

    (void)state;
    /* no growth at 2 nor 4: N* = 1, nothing below it to refine */
    assert_int_equal(n, 3);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 2);
    assert_int_equal(got[2], 4);
}

static void test_autosweep_declining(void **state)
{
    unsigned got[64];
    size_t n = run_sweep(noisy_peak, 1024, got, 64);

    (void)state;
    /* 1 2 4 8 16 32 (7600, 6800: no growth), N* = 8 (8000); bisect (4, 8]: 6, then 7 */
    assert_int_equal(n, 8);
    assert_int_equal(got[4], 16);
    assert_int_equal(got[5], 32);
    assert_int_equal(got[6], 6);
    assert_int_equal(got[7], 7);
}

static double one_noisy_dip(unsigned n)
{
    /* a dip at 4 (another tenant of the machine?) must not end the sweep */
    if (n == 4)
        return 900;
    if (n <= 8)
        return n * 500.0;
    return n == 16 ? 4100 : 4000;
}

static void test_autosweep_survives_one_dip(void **state)
{
    const unsigned want[] = {1, 2, 4, 8, 16, 32, 6, 7};
    unsigned got[64];
    size_t n = run_sweep(one_noisy_dip, 1024, got, 64);

    (void)state;
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_autosweep_max_one(void **state)
{
    unsigned got[64];
    size_t n = run_sweep(linear, 1, got, 64);

    (void)state;
    assert_int_equal(n, 1);
    assert_int_equal(got[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_nstar_knee),
        cmocka_unit_test(test_sweep_nstar_any_order),
        cmocka_unit_test(test_sweep_nstar_flat_and_zero),
        cmocka_unit_test(test_autosweep_saturating),
        cmocka_unit_test(test_autosweep_bounded_by_max),
        cmocka_unit_test(test_autosweep_flat),
        cmocka_unit_test(test_autosweep_declining),
        cmocka_unit_test(test_autosweep_survives_one_dip),
        cmocka_unit_test(test_autosweep_max_one),
        cmocka_unit_test(test_autosweep_short_plan),
    };
    return cmocka_run_group_tests_name("lg_sweep", tests, NULL, NULL);
}
