/*
 * test_pick.c - loadgen/pick: --pick parsed (uniform, zipf:S, the errors); the Zipf sampler
 * (rejection-inversion) against the law's own probabilities: over N = 1000 with s = 1.0 and
 * s = 1.2, and N = 10 with s = 0.5, 200 000 draws each, the top ranks' frequencies within a
 * few percent of theory and a chi-square bounded; uniform likewise; draws in range for N = 1
 * and N = 10^15; the same seed, the same draws; --spread's permutation.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/pick.h"
#include "../../../loadgen/rng.h"

#define DRAWS 200000

static void test_pick_parse(void **state)
{
    char err[LG_PICK_ERR_LEN];
    enum lg_pick_kind k;
    double s;

    (void)state;
    assert_int_equal(lg_pick_parse("uniform", &k, &s, err), 0);
    assert_int_equal(k, LG_PICK_UNIFORM);
    assert_int_equal(lg_pick_parse("zipf:0.99", &k, &s, err), 0);
    assert_int_equal(k, LG_PICK_ZIPF);
    assert_true(s == 0.99);
    assert_int_equal(lg_pick_parse("zipf:1", &k, &s, err), 0);
    assert_true(s == 1.0);
    static const char *const bad[] = {"", "zipf", "zipf:", "zipf:0", "zipf:-1", "zipf:11",
                                      "zipf:1x", "zipf:nan", "zipf:inf", "Uniform", "zipf 1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(lg_pick_parse(bad[i], &k, &s, err), -1);
        assert_non_null(strstr(err, "uniform or zipf:S"));
    }
}

/*
 * Draws DRAWS indices of p into counts (p->n of them); returns the chi-square against the
 * probabilities prob.
 */
static double chi_square(const struct lg_pick *p, uint64_t seed, const double *prob,
                         unsigned *counts)
{
    uint64_t rng = lg_rng_seed(seed, 0);
    double chi = 0;

    memset(counts, 0, p->n * sizeof(*counts));
    for (unsigned i = 0; i < DRAWS; i++) {
        uint64_t k = lg_pick_draw(p, &rng);
        assert_true(k < p->n);
        counts[k]++;
    }
    for (uint64_t k = 0; k < p->n; k++) {
        double e = prob[k] * DRAWS;
        chi += (counts[k] - e) * (counts[k] - e) / e;
    }
    return chi;
}

/* The Zipf law over n ranks: prob[k] = (k + 1)^-s / H(n, s). */
static void zipf_probs(double *prob, unsigned n, double s)
{
    double hsum = 0;

    for (unsigned k = 0; k < n; k++)
        hsum += pow(k + 1, -s);
    for (unsigned k = 0; k < n; k++)
        prob[k] = pow(k + 1, -s) / hsum;
}

/*
 * The chi-square of n - 1 degrees of freedom stays below its mean plus 5 standard deviations
 * (a false alarm once in millions of seeds), and each of the top 5 ranks is within 3% of its
 * share.
 */
static void check_law(enum lg_pick_kind kind, double s, unsigned n)
{
    struct lg_pick p;
    double *prob = malloc(n * sizeof(*prob));
    unsigned *counts = malloc(n * sizeof(*counts));
    double dof = n - 1;
    double chi;

    if (kind == LG_PICK_ZIPF) {
        zipf_probs(prob, n, s);
    } else {
        for (unsigned k = 0; k < n; k++)
            prob[k] = 1.0 / n;
    }
    lg_pick_init(&p, kind, s, n);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        chi = chi_square(&p, seed, prob, counts);
        print_message("%s s=%g n=%u seed %llu: chi-square %.1f (dof %.0f); rank 1 %u of %.0f\n",
                      kind == LG_PICK_ZIPF ? "zipf" : "uniform", s, n, (unsigned long long)seed,
                      chi, dof, counts[0], prob[0] * DRAWS);
        assert_true(chi < dof + 5 * sqrt(2 * dof));
        for (unsigned k = 0; k < 5 && k < n; k++) {
            if (prob[k] * DRAWS >= 2000) /* 3% is > 1.3 standard deviations only there */
                assert_true(fabs(counts[k] - prob[k] * DRAWS) < 0.03 * prob[k] * DRAWS);
        }
    }
    free(prob);
    free(counts);
}

static void test_pick_zipf_law(void **state)
{
    (void)state;
    check_law(LG_PICK_ZIPF, 1.0, 1000);
    check_law(LG_PICK_ZIPF, 1.2, 1000);
    check_law(LG_PICK_ZIPF, 0.99, 1000);
    check_law(LG_PICK_ZIPF, 0.5, 10);
    check_law(LG_PICK_ZIPF, 2.0, 50);
}

static void test_pick_uniform_law(void **state)
{
    (void)state;
    check_law(LG_PICK_UNIFORM, 0, 1000);
    check_law(LG_PICK_UNIFORM, 0, 7);
}

static void test_pick_bounds_and_seed(void **state)
{
    struct lg_pick z;
    struct lg_pick u;
    uint64_t a = lg_rng_seed(42, 3);
    uint64_t b = lg_rng_seed(42, 3);
    uint64_t c = lg_rng_seed(43, 3);
    unsigned same_c = 0;
    uint64_t top = 0;

    (void)state;
    lg_pick_init(&z, LG_PICK_ZIPF, 1.0, 1);
    lg_pick_init(&u, LG_PICK_UNIFORM, 0, 1);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(lg_pick_draw(&z, &a), 0);
        assert_int_equal(lg_pick_draw(&u, &a), 0);
    }
    /* 10^15 names: in range, and both ends of the range reached in proportion */
    lg_pick_init(&z, LG_PICK_ZIPF, 0.8, 1000000000000000ull);
    for (int i = 0; i < 10000; i++) {
        uint64_t k = lg_pick_draw(&z, &b);
        assert_true(k < 1000000000000000ull);
        top += k == 0;
    }
    assert_true(top > 0);
    /* the same seed gives the same draws, another seed others */
    a = lg_rng_seed(7, 1);
    b = lg_rng_seed(7, 1);
    c = lg_rng_seed(8, 1);
    lg_pick_init(&z, LG_PICK_ZIPF, 1.1, 100000);
    lg_pick_init(&u, LG_PICK_UNIFORM, 0, 100000);
    for (int i = 0; i < 1000; i++) {
        uint64_t x = lg_pick_draw(i % 2 ? &z : &u, &a);
        assert_int_equal(x, lg_pick_draw(i % 2 ? &z : &u, &b));
        same_c += x == lg_pick_draw(i % 2 ? &z : &u, &c);
    }
    assert_true(same_c < 200); /* only the hottest ranks coincide, and not that often */
}

/*
 * --spread: a bijection of [0, n) for every n up to 300 and seeds 1-3; with the same RNG each
 * draw is the image (mul * k + add) mod n of the draw without it (so the law is kept, moved);
 * over the numbered tree (10^8 names) the 10 hottest ranks are in 10 different top-level
 * directories, and the 100 hottest in at least 60 of the 100.
 */
static void test_pick_spread(void **state)
{
    static unsigned char hit[300];
    struct lg_pick p;
    struct lg_pick q;
    uint64_t a = lg_rng_seed(5, 0);
    uint64_t b = lg_rng_seed(5, 0);
    unsigned top[100] = {0};
    unsigned dirs = 0;

    (void)state;
    for (uint64_t n = 1; n <= 300; n++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            uint64_t r = lg_rng_seed(seed, 9);
            lg_pick_init(&p, LG_PICK_ZIPF, 1.0, n);
            lg_pick_spread(&p, seed);
            memset(hit, 0, sizeof(hit));
            /* every index is the image of exactly one rank */
            for (uint64_t k = 0; k < n; k++) {
                uint64_t i = (uint64_t)(((unsigned __int128)k * p.mul + p.add) % n);
                assert_int_equal(hit[i], 0);
                hit[i] = 1;
            }
            assert_true(lg_pick_draw(&p, &r) < n);
        }
    }
    lg_pick_init(&p, LG_PICK_ZIPF, 0.99, 100000000);
    lg_pick_init(&q, LG_PICK_ZIPF, 0.99, 100000000);
    lg_pick_spread(&q, 5);
    for (int i = 0; i < 10000; i++) {
        uint64_t k = lg_pick_draw(&p, &a);
        assert_int_equal(lg_pick_draw(&q, &b),
                         (uint64_t)(((unsigned __int128)k * q.mul + q.add) % q.n));
    }
    for (uint64_t k = 0; k < 100; k++) {
        uint64_t i = (uint64_t)(((unsigned __int128)k * q.mul + q.add) % q.n);
        top[i / 1000000]++;
        if (k == 9) {
            for (int d = 0; d < 100; d++)
                dirs += top[d] > 0;
            assert_int_equal(dirs, 10);
        }
    }
    dirs = 0;
    for (int d = 0; d < 100; d++)
        dirs += top[d] > 0;
    print_message("the 100 hottest of 10^8 names fall in %u of the 100 top directories\n", dirs);
    assert_true(dirs >= 60);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_parse),
        cmocka_unit_test(test_pick_zipf_law),
        cmocka_unit_test(test_pick_uniform_law),
        cmocka_unit_test(test_pick_bounds_and_seed),
        cmocka_unit_test(test_pick_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
