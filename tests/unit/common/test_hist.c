/*
 * test_hist.c - common/hist: percentiles against a sorted reference on random data (within
 * 1%), merge equals one histogram of all values, exact min/max, mean, and edge values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"

#define N_VALUES 200000

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Log-uniform over [1, 2^40): every octave of a latency range in ns. */
static uint64_t rnd_latency(void)
{
    unsigned bits = (unsigned)(rnd() % 40);
    return (rnd() & ((1ull << bits) - 1)) | (1ull << bits);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of rank ceil(p/100 * n) in sorted v[0..n). */
static uint64_t ref_percentile(const uint64_t *v, size_t n, double p)
{
    double r = p / 100.0 * (double)n;
    size_t rank = (size_t)r;
    if ((double)rank < r)
        rank++;
    if (rank == 0)
        rank = 1;
    return v[rank - 1];
}

static void check_close(uint64_t got, uint64_t want, double p)
{
    double err = want == 0 ? (double)got : ((double)got - (double)want) / (double)want;
    if (err < 0)
        err = -err;
    if (err > 0.01)
        fail_msg("p%g: got %llu, want %llu (error %.4f)", p, (unsigned long long)got,
                 (unsigned long long)want, err);
}

static void test_hist_percentiles_random(void **state)
{
    static const double ps[] = {0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    uint64_t *v = malloc(N_VALUES * sizeof(*v));
    struct hist *h = malloc(sizeof(*h));

    (void)state;
    hist_init(h);
    for (size_t i = 0; i < N_VALUES; i++) {
        v[i] = rnd_latency();
        hist_record(h, v[i]);
    }
    qsort(v, N_VALUES, sizeof(*v), cmp_u64);
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        check_close(hist_percentile(h, ps[i]), ref_percentile(v, N_VALUES, ps[i]), ps[i]);
    assert_int_equal(hist_count(h), N_VALUES);
    free(v);
    free(h);
}

static void test_hist_percentiles_narrow(void **state)
{
    /* a realistic, narrow latency distribution: 50..150 us with a tail */
    uint64_t *v = malloc(N_VALUES * sizeof(*v));
    struct hist *h = malloc(sizeof(*h));

    (void)state;
    hist_init(h);
    for (size_t i = 0; i < N_VALUES; i++) {
        v[i] = 50000 + rnd() % 100000 + (i % 1000 == 0 ? rnd() % 10000000 : 0);
        hist_record(h, v[i]);
    }
    qsort(v, N_VALUES, sizeof(*v), cmp_u64);
    for (double p = 1; p < 100; p += 1.5)
        check_close(hist_percentile(h, p), ref_percentile(v, N_VALUES, p), p);
    check_close(hist_percentile(h, 99.9), ref_percentile(v, N_VALUES, 99.9), 99.9);
    free(v);
    free(h);
}

static void test_hist_merge_equals_single(void **state)
{
    struct hist *a = malloc(sizeof(*a));
    struct hist *b = malloc(sizeof(*b));
    struct hist *all = malloc(sizeof(*all));

    (void)state;
    hist_init(a);
    hist_init(b);
    hist_init(all);
    for (int i = 0; i < 50000; i++) {
        uint64_t x = rnd_latency();
        hist_record(i % 3 == 0 ? a : b, x);
        hist_record(all, x);
    }
    hist_merge(a, b);
    assert_int_equal(a->count, all->count);
    assert_int_equal(a->min, all->min);
    assert_int_equal(a->max, all->max);
    assert_memory_equal(a->counts, all->counts, sizeof(a->counts));
    assert_true(a->sum == all->sum || (a->sum - all->sum) / all->sum < 1e-12);
    for (double p = 0; p <= 100; p += 12.5)
        assert_int_equal(hist_percentile(a, p), hist_percentile(all, p));

    /* merging an empty histogram changes nothing, merging into one copies */
    hist_init(b);
    hist_merge(a, b);
    assert_int_equal(a->count, all->count);
    hist_merge(b, all);
    assert_int_equal(b->min, all->min);
    assert_int_equal(b->max, all->max);
    free(a);
    free(b);
    free(all);
}

static void test_hist_min_max_mean(void **state)
{
    struct hist *h = malloc(sizeof(*h));
    uint64_t sum = 0;

    (void)state;
    hist_init(h);
    assert_int_equal(hist_percentile(h, 50), 0);
    assert_true(hist_mean(h) == 0.0);
    for (uint64_t v = 1000; v <= 2000000; v += 997) {
        hist_record(h, v);
        sum += v;
    }
    assert_int_equal(h->min, 1000);
    assert_int_equal(hist_percentile(h, 0), 1000);
    assert_int_equal(hist_percentile(h, 100), h->max);
    assert_int_equal(h->max, 1000 + 997 * ((2000000 - 1000) / 997));
    {
        double mean = (double)sum / (double)h->count;
        double err = (hist_mean(h) - mean) / mean;
        assert_true(err < 1e-12 && err > -1e-12);
    }
    free(h);
}

static void test_hist_edges(void **state)
{
    struct hist *h = malloc(sizeof(*h));

    (void)state;
    hist_init(h);
    hist_record(h, 0);
    assert_int_equal(hist_percentile(h, 50), 0);
    hist_record(h, 1);
    hist_record(h, UINT64_MAX);
    assert_int_equal(h->min, 0);
    assert_int_equal(h->max, UINT64_MAX);
    assert_int_equal(hist_percentile(h, 100), UINT64_MAX);
    assert_int_equal(hist_percentile(h, 0), 0);
    assert_int_equal(hist_percentile(h, 34), 1);
    /* the top value lies in the last bucket; the middle of it is clamped to max */
    assert_int_equal(hist_bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
    assert_int_equal(hist_bucket_high(HIST_BUCKETS - 1), UINT64_MAX);
    assert_true(hist_percentile(h, 99) >= (UINT64_MAX / 128) * 127);
    /* out-of-range percentiles are clamped */
    assert_int_equal(hist_percentile(h, -5), 0);
    assert_int_equal(hist_percentile(h, 500), UINT64_MAX);
    free(h);
}

static void test_hist_buckets(void **state)
{
    (void)state;
    /* exact below 128, contiguous and within 1/64 of the lower bound above */
    for (uint64_t v = 0; v < 128; v++) {
        assert_int_equal(hist_bucket_of(v), v);
        assert_int_equal(hist_bucket_low((unsigned)v), v);
    }
    for (unsigned b = 0; b + 1 < HIST_BUCKETS; b++) {
        uint64_t lo = hist_bucket_low(b);
        uint64_t hi = hist_bucket_high(b);
        assert_true(lo <= hi);
        assert_int_equal(hist_bucket_low(b + 1), hi + 1);
        assert_int_equal(hist_bucket_of(lo), b);
        assert_int_equal(hist_bucket_of(hi), b);
        if (lo >= 128)
            assert_true((double)(hi - lo + 1) / (double)lo <= 1.0 / 64 + 1e-12);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t v = rnd() >> (rnd() % 64);
        unsigned b = hist_bucket_of(v);
        assert_true(hist_bucket_low(b) <= v && v <= hist_bucket_high(b));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hist_percentiles_random),
        cmocka_unit_test(test_hist_percentiles_narrow),
        cmocka_unit_test(test_hist_merge_equals_single),
        cmocka_unit_test(test_hist_min_max_mean),
        cmocka_unit_test(test_hist_edges),
        cmocka_unit_test(test_hist_buckets),
    };
    return cmocka_run_group_tests_name("hist", tests, NULL, NULL);
}
