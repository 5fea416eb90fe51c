/*
 * test_mva.c - loadgen/mva against published worked examples (inputs and outputs as printed,
 * compared to 3 significant figures) and against exact results computed here independently:
 * the finite-source multi-server queue M/M/m//N (a birth-death chain), normalising constants by
 * convolution in log space for a network with a multi-server centre near saturation at N = 300,
 * X = 1 / D for one queue without think time, the asymptotic bounds, and invalid input.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/mva.h"

#define Q1(d) {.kind = LG_MVA_QUEUE, .demand_s = (d)}
#define MS(d, m, c) {.kind = LG_MVA_MULTI, .demand_s = (d), .servers = (m), .per_job = (c)}
#define DL(d) {.kind = LG_MVA_DELAY, .demand_s = (d)}
#define BT(d, b) {.kind = LG_MVA_BATCH, .demand_s = (d), .batch = (b)}

/* got agrees with the published value to 3 significant figures (half a unit of the third). */
static int sig3(double published, double got)
{
    double unit = pow(10, floor(log10(fabs(published))) - 2);

    return fabs(got - published) <= 0.5 * unit + 1e-12;
}

#define assert_sig3(pub, got)                                                                      \
    do {                                                                                           \
        if (!sig3((pub), (got)))                                                                   \
            fail_msg("published %g, computed %.6g", (double)(pub), (double)(got));                 \
    } while (0)

#define assert_rel(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol) * fabs(b_)))                                                  \
            fail_msg("%.12g != %.12g (rel. tol. %g)", a_, b_, (double)(tol));                      \
    } while (0)

/* X and R of the network at population n, and the queue lengths there. */
static void at(const struct lg_mva_station *st, size_t nst, double z, unsigned n, double *x,
               double *r, double *q)
{
    struct lg_mva_point *c = calloc(n, sizeof(*c));

    assert_non_null(c);
    assert_int_equal(lg_mva_solve(st, nst, z, n, c, q), 0);
    *x = c[n - 1].x;
    *r = c[n - 1].r_s;
    free(c);
}

/*
 * R. Jain, The Art of Computer Systems Performance Analysis, Wiley 1991, Example 34.2 and
 * Table 34.1 ("MVA Results for Example 34.2"): a timesharing system, CPU S = 0.125 s, 16
 * visits; disk A 0.3 s, 10 visits; disk B 0.2 s, 5 visits; think time Z = 4 s; N = 1..20.
 * The table gives the system response time, the throughput and the queue lengths.
 */
static void test_mva_jain_34_2(void **state)
{
    static const struct {
        unsigned n;
        double r, x, qcpu, qa, qb;
    } t[] = {
        {1, 6.000, 0.100, 0.200, 0.300, 0.100},      {2, 7.400, 0.175, 0.421, 0.684, 0.193},
        {3, 9.088, 0.229, 0.651, 1.158, 0.273},      {4, 11.051, 0.266, 0.878, 1.721, 0.338},
        {5, 13.256, 0.290, 1.088, 2.365, 0.388},     {17, 47.045, 0.333, 1.974, 13.195, 0.499},
        {18, 50.032, 0.333, 1.981, 14.187, 0.499},   {19, 53.022, 0.333, 1.987, 15.181, 0.500},
        {20, 56.016, 0.333, 1.991, 16.177, 0.500},
    };
    const struct lg_mva_station st[] = {Q1(0.125 * 16), Q1(0.3 * 10), Q1(0.2 * 5)};
    double x, r, q[3];

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        at(st, 3, 4, t[i].n, &x, &r, q);
        assert_sig3(t[i].r, r);
        assert_sig3(t[i].x, x);
        assert_sig3(t[i].qcpu, q[0]);
        assert_sig3(t[i].qa, q[1]);
        assert_sig3(t[i].qb, q[2]);
    }
}

/*
 * G. Bolch, S. Greiner, H. de Meer, K. S. Trivedi, Queueing Networks and Markov Chains, Wiley
 * 1998, Example 8.3 (p. 331): four single-server stations, S = 0.02, 0.2, 0.4, 0.6 s, visits
 * 1, 0.4, 0.2, 0.1, K = 6 jobs, no think time. Printed: throughputs 9.920, 3.968, 1.984, 0.992;
 * utilisations 0.198, 0.794, 0.794, 0.595; queue lengths 0.244, 2.261, 2.261, 1.234.
 */
static void test_mva_bolch_8_3(void **state)
{
    static const double s[] = {0.02, 0.2, 0.4, 0.6}, v[] = {1, 0.4, 0.2, 0.1};
    static const double xs[] = {9.920, 3.968, 1.984, 0.992};
    static const double us[] = {0.198, 0.794, 0.794, 0.595};
    static const double qs[] = {0.244, 2.261, 2.261, 1.234};
    struct lg_mva_station st[4];
    double x, r, q[4];

    (void)state;
    for (int i = 0; i < 4; i++)
        st[i] = (struct lg_mva_station)Q1(s[i] * v[i]);
    at(st, 4, 0, 6, &x, &r, q);
    for (int i = 0; i < 4; i++) {
        assert_sig3(xs[i], x * v[i]);
        assert_sig3(us[i], x * v[i] * s[i]);
        assert_sig3(qs[i], q[i]);
    }
    assert_rel(x * r, 6, 1e-12); /* Little's law with Z = 0 */
}

/*
 * Bolch et al. 1998, Example 8.4 (p. 333): a two-server station S = 0.5 s, visits 1; two
 * single servers S = 0.6 and 0.8 s, visits 0.5 each; a delay S = 1 s, visits 1; K = 3. Printed:
 * queue lengths 0.624, 0.473, 0.686, 1.217; throughputs 1.218, 0.609, 0.609, 1.218. The delay
 * is given here once as a delay station and once as the think time Z: the same network.
 */
static void test_mva_bolch_8_4_multiserver(void **state)
{
    const struct lg_mva_station st[] = {MS(0.5, 2, 1), Q1(0.6 * 0.5), Q1(0.8 * 0.5), DL(1)};
    double x, r, q[4], xz, rz, qz[3];

    (void)state;
    at(st, 4, 0, 3, &x, &r, q);
    assert_sig3(0.624, q[0]);
    assert_sig3(0.473, q[1]);
    assert_sig3(0.686, q[2]);
    assert_sig3(1.217, q[3]);
    assert_sig3(1.218, x);
    assert_sig3(0.609, x * 0.5);
    at(st, 3, 1, 3, &xz, &rz, qz);
    assert_rel(xz, x, 1e-12);
    assert_rel(rz + 1, r, 1e-12);
    for (int i = 0; i < 3; i++)
        assert_rel(qz[i], q[i], 1e-12);
}

/*
 * E. D. Lazowska, J. Zahorjan, G. S. Graham, K. C. Sevcik, Quantitative System Performance,
 * Prentice Hall 1984, ch. 6, p. 117: CPU 121 visits x 5 ms, disks 70 x 30 ms and 50 x 27 ms,
 * Z = 15 s, N = 3. Queue lengths 0.0976, 0.3947, 0.2350 (as transcribed, to 4 decimals, in the
 * regression tests of the Carleton LQNS solver, libmva/regression/test0).
 */
static void test_mva_lazowska_ch6(void **state)
{
    const struct lg_mva_station st[] = {Q1(121 * 0.005), Q1(70 * 0.03), Q1(50 * 0.027)};
    double x, r, q[3];

    (void)state;
    at(st, 3, 15, 3, &x, &r, q);
    assert_sig3(0.0976, q[0]);
    assert_sig3(0.3947, q[1]);
    assert_sig3(0.2350, q[2]);
    assert_rel(x * (r + 15), 3, 1e-12);
}

/*
 * M/M/m//N with think time Z and a server rate min(j c, m) / D when j requests are at the
 * station: a birth-death chain, solved here directly (in log space against overflow).
 */
static double repairman_x(unsigned m, double c, double d, double z, unsigned n)
{
    double *lp = calloc(n + 1, sizeof(*lp));
    double top = 0, sum = 0, x = 0;

    assert_non_null(lp);
    for (unsigned j = 1; j <= n; j++) {
        double rate = fmin(j * c, m) / d;
        lp[j] = lp[j - 1] + log((n - j + 1) / z) - log(rate);
        if (lp[j] > top)
            top = lp[j];
    }
    for (unsigned j = 0; j <= n; j++)
        sum += exp(lp[j] - top);
    for (unsigned j = 1; j <= n; j++)
        x += exp(lp[j] - top) / sum * fmin(j * c, m) / d;
    free(lp);
    return x;
}

static void test_mva_machine_repairman(void **state)
{
    static const struct {
        unsigned m;
        double c, d, z;
        unsigned n;
    } t[] = {
        {1, 1, 1, 5, 10},       {2, 1, 1, 5, 10},      {2, 1, 0.4, 0.05, 300}, {4, 1, 1, 0.5, 50},
        {8, 1, 2, 3, 100},      {2, 1.3, 0.4, 1, 20},  {2, 2, 1, 2, 30},       {16, 3, 1, 10, 500},
        {2, 1, 1e-4, 1e-3, 64}, {3, 1.5, 1, 0.01, 400},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const struct lg_mva_station st[] = {MS(t[i].d, t[i].m, t[i].c)};
        struct lg_mva_point *c = calloc(t[i].n, sizeof(*c));
        assert_non_null(c);
        assert_int_equal(lg_mva_solve(st, 1, t[i].z, t[i].n, c, NULL), 0);
        for (unsigned k = 1; k <= t[i].n; k++) {
            assert_rel(c[k - 1].x, repairman_x(t[i].m, t[i].c, t[i].d, t[i].z, k), 1e-9);
            assert_rel(c[k - 1].x * (c[k - 1].r_s + t[i].z), k, 1e-9);
        }
        free(c);
    }
}

/* log(exp(a) + exp(b)) */
static double lse(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    return fmax(a, b) + log1p(exp(-fabs(a - b)));
}

/*
 * Exact throughput by convolution of the normalising constants G(n), in log space: an m-server
 * centre (c = 1), a single server and a delay. X(N) = G(N - 1) / G(N).
 */
static double convolution_x(double dm, unsigned m, double dq, double z, unsigned n)
{
    double *g = calloc(n + 1, sizeof(*g)), *h = calloc(n + 1, sizeof(*h));
    double *fm = calloc(n + 1, sizeof(*fm));
    double x;

    assert_non_null(g);
    assert_non_null(h);
    assert_non_null(fm);
    for (unsigned j = 1; j <= n; j++)
        fm[j] = fm[j - 1] + log(dm) - log(j < m ? j : m);
    /* the delay: Z^j / j!, convolved with the single server: dq^j */
    for (unsigned k = 0; k <= n; k++) {
        g[k] = -INFINITY;
        for (unsigned j = 0; j <= k; j++)
            g[k] = lse(g[k], j * log(z) - lgamma(j + 1) + (k - j) * log(dq));
    }
    for (unsigned k = 0; k <= n; k++) {
        h[k] = -INFINITY;
        for (unsigned j = 0; j <= k; j++)
            h[k] = lse(h[k], fm[j] + g[k - j]);
    }
    x = exp(h[n - 1] - h[n]);
    free(g);
    free(h);
    free(fm);
    return x;
}

/*
 * The multi-server centre near saturation (U = 0.999 and above) with another queue and a
 * think time, up to N = 300: where computing p(0) as 1 minus the others goes wrong.
 */
static void test_mva_multiserver_near_saturation(void **state)
{
    static const struct {
        double dm;
        unsigned m;
        double dq, z;
        unsigned n;
    } t[] = {{1, 2, 0.2, 1, 300}, {1, 4, 0.01, 0.5, 300}, {0.3, 2, 0.25, 0.01, 200},
             {2, 8, 0.05, 20, 300}};

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const struct lg_mva_station st[] = {MS(t[i].dm, t[i].m, 1), Q1(t[i].dq)};
        double x, r, q[2];
        at(st, 2, t[i].z, t[i].n, &x, &r, q);
        assert_rel(x, convolution_x(t[i].dm, t[i].m, t[i].dq, t[i].z, t[i].n), 1e-8);
        assert_true(q[0] >= 0 && q[1] >= 0);
        assert_rel(q[0] + q[1] + x * t[i].z, t[i].n, 1e-9);
    }
    /* and the utilisation there really is close to 1 for the first case */
    {
        const struct lg_mva_station st[] = {MS(1, 2, 1), Q1(0.2)};
        double x, r, q[2];
        at(st, 2, 1, 300, &x, &r, q);
        assert_true(x * 1 / 2 > 0.999);
    }
}

static void test_mva_single_queue_no_think(void **state)
{
    const struct lg_mva_station st[] = {Q1(0.004)};
    struct lg_mva_point c[50];

    (void)state;
    assert_int_equal(lg_mva_solve(st, 1, 0, 50, c, NULL), 0);
    for (int i = 0; i < 50; i++) {
        assert_rel(c[i].x, 250, 1e-12);
        assert_rel(c[i].r_s, (i + 1) * 0.004, 1e-12);
    }
}

/* X(N) <= min(N / (D + Z), min over stations of servers / D_k), R(N) >= D. */
static void test_mva_bounds(void **state)
{
    const struct lg_mva_station st[] = {MS(0.002, 2, 1), Q1(0.0007), Q1(0.0003), DL(0.0005)};
    const double dsum = 0.002 + 0.0007 + 0.0003 + 0.0005;
    struct lg_mva_point c[200];

    (void)state;
    for (double z = 0; z <= 0.01; z += 0.005) {
        assert_int_equal(lg_mva_solve(st, 4, z, 200, c, NULL), 0);
        for (unsigned n = 1; n <= 200; n++) {
            double bound = fmin(n / (dsum + z), fmin(2 / 0.002, 1 / 0.0007));
            assert_true(c[n - 1].x <= bound * (1 + 1e-12));
            assert_true(c[n - 1].r_s >= dsum * (1 - 1e-12));
            if (n > 1)
                assert_true(c[n - 1].x >= c[n - 2].x * (1 - 1e-12)); /* X grows with N */
        }
        /* at N = 1 nobody waits: R = D exactly */
        assert_rel(c[0].r_s, dsum, 1e-12);
        /* and far beyond the knee X is at the bottleneck's 1000/s */
        assert_rel(c[199].x, 1000, 1e-3);
    }
}

/*
 * Two multi-server centres, each p(0) from a network that holds the other: a 3-server centre
 * never queues with at most 3 requests, so it must give what a delay of the same D gives.
 */
static void test_mva_two_multiservers(void **state)
{
    const struct lg_mva_station two[] = {MS(1, 2, 1), MS(0.5, 3, 1)};
    const struct lg_mva_station one[] = {MS(1, 2, 1), DL(0.5)};
    double x, r, q[2], x1, r1, q1[2];

    (void)state;
    at(two, 2, 0.5, 3, &x, &r, q);
    at(one, 2, 0.5, 3, &x1, &r1, q1);
    assert_rel(x, x1, 1e-12);
    assert_rel(r, r1, 1e-12);
    assert_rel(q[0], q1[0], 1e-12);
    assert_rel(q[1], q1[1], 1e-12);
}

/*
 * A batch centre by hand (mva.h): D = 1 ms per request, b = 4 per cycle (C = 4 ms), Z = 10 ms.
 * n = 1: R = C = 4 ms, X = 1 / 14 ms. n = 2: U(1) = X(1) D = 1/14, Q(1) = X(1) R(1) = 4/14 <
 * U b + b - 1: R = 4 (1 + 1/14) = 4.285714 ms, X = 2 / 14.285714 ms = 140/s. n = 3: U(2) =
 * 0.14, Q(2) = 140 x 4.285714 ms = 0.6: R = 4 x 1.14 = 4.56 ms, X = 3 / 14.56 ms.
 */
static void test_mva_batch_by_hand(void **state)
{
    const struct lg_mva_station st[] = {BT(0.001, 4)};
    struct lg_mva_point c[3];
    double q;

    (void)state;
    assert_int_equal(lg_mva_solve(st, 1, 0.010, 3, c, &q), 0);
    assert_rel(c[0].r_s, 0.004, 1e-12);
    assert_rel(c[0].x, 1 / 0.014, 1e-12);
    assert_rel(c[1].r_s, 0.004 * (1 + 1.0 / 14), 1e-12);
    assert_rel(c[1].x, 140, 1e-12);
    assert_rel(c[2].r_s, 0.00456, 1e-12);
    assert_rel(c[2].x, 3 / 0.01456, 1e-12);
    assert_rel(q, c[2].x * 0.00456, 1e-12);
}

/*
 * With one request per cycle a batch centre is the single-server queue, in any network (the
 * Lazowska et al. one above); with several, a request waits at most the running cycle and its
 * own while the queue is short, and X never exceeds 1 / D: with no think time and a queue of
 * n - 1 ahead, R = C (1 + U) + (n - 1 - U b - (b - 1)) D = n D, X = 1 / D, once n > 2 b.
 */
static void test_mva_batch_bounds(void **state)
{
    const struct lg_mva_station bq[] = {BT(121 * 0.005, 1), Q1(70 * 0.03), Q1(50 * 0.027)};
    const struct lg_mva_station qq[] = {Q1(121 * 0.005), Q1(70 * 0.03), Q1(50 * 0.027)};
    const struct lg_mva_station b4[] = {BT(0.001, 4)};
    struct lg_mva_point c1[40], c2[40];

    (void)state;
    assert_int_equal(lg_mva_solve(bq, 3, 15, 40, c1, NULL), 0);
    assert_int_equal(lg_mva_solve(qq, 3, 15, 40, c2, NULL), 0);
    for (int i = 0; i < 40; i++) {
        assert_rel(c1[i].x, c2[i].x, 1e-12);
        assert_rel(c1[i].r_s, c2[i].r_s, 1e-12);
    }
    assert_int_equal(lg_mva_solve(b4, 1, 0, 40, c1, NULL), 0);
    for (int i = 0; i < 40; i++)
        assert_true(c1[i].x <= 1000 * (1 + 1e-12));
    assert_rel(c1[0].x, 250, 1e-12);     /* one request: one cycle */
    assert_rel(c1[1].r_s, 0.005, 1e-12); /* U(1) = 1/4: 4 ms (1 + 1/4) */
    assert_rel(c1[39].x, 1000, 1e-9);
}

static void test_mva_invalid(void **state)
{
    struct lg_mva_point c[4];
    const struct lg_mva_station neg[] = {Q1(-1)};
    const struct lg_mva_station nan_d[] = {Q1(NAN)};
    const struct lg_mva_station zero[] = {Q1(0)};
    const struct lg_mva_station bad_c[] = {MS(1, 2, 3)};
    const struct lg_mva_station bad_c0[] = {MS(1, 2, 0.5)};
    const struct lg_mva_station no_srv[] = {MS(1, 0, 1)};
    const struct lg_mva_station five[] = {MS(1, 2, 1), MS(1, 2, 1), MS(1, 2, 1), MS(1, 2, 1),
                                          MS(1, 2, 1)};
    const struct lg_mva_station ok[] = {Q1(1)};
    struct lg_mva_station kind[] = {Q1(1)};
    const struct lg_mva_station small_b[] = {BT(1, 0.5)};
    const struct lg_mva_station nan_b[] = {BT(1, NAN)};

    (void)state;
    kind[0].kind = (enum lg_mva_kind)7;
    assert_int_equal(lg_mva_solve(neg, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(nan_d, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(zero, 1, 0, 4, c, NULL), -1); /* nothing to spend time in */
    assert_int_equal(lg_mva_solve(bad_c, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(bad_c0, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(no_srv, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(five, 5, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(kind, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(small_b, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(nan_b, 1, 0, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(ok, 1, -1, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(ok, 1, INFINITY, 4, c, NULL), -1);
    assert_int_equal(lg_mva_solve(ok, 1, 0, LG_MVA_MAX_N + 1, c, NULL), -1);
    assert_int_equal(lg_mva_solve(ok, 1, 0, 4, NULL, NULL), -1);
    assert_int_equal(lg_mva_solve(ok, LG_MVA_MAX_STATIONS + 1, 0, 4, c, NULL), -1);
    /* zero demand with a think time is a valid (if dull) network: X = N / Z */
    assert_int_equal(lg_mva_solve(zero, 1, 2, 4, c, NULL), 0);
    assert_rel(c[3].x, 2, 1e-12);
    assert_int_equal(lg_mva_solve(ok, 1, 0, 0, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mva_jain_34_2),
        cmocka_unit_test(test_mva_bolch_8_3),
        cmocka_unit_test(test_mva_bolch_8_4_multiserver),
        cmocka_unit_test(test_mva_lazowska_ch6),
        cmocka_unit_test(test_mva_machine_repairman),
        cmocka_unit_test(test_mva_multiserver_near_saturation),
        cmocka_unit_test(test_mva_single_queue_no_think),
        cmocka_unit_test(test_mva_bounds),
        cmocka_unit_test(test_mva_two_multiservers),
        cmocka_unit_test(test_mva_batch_by_hand),
        cmocka_unit_test(test_mva_batch_bounds),
        cmocka_unit_test(test_mva_invalid),
    };
    return cmocka_run_group_tests_name("mva", tests, NULL, NULL);
}
