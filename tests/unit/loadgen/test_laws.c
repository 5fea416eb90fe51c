/*
 * test_laws.c - loadgen/laws and loadgen/analysis on given numbers: Little's-law check, the
 * utilization law, the choice of the bottleneck, the asymptotic bounds, the predicted knee, and
 * the analysis of a synthetic run (D = R(1), the loadgen-is-the-bottleneck flag).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../loadgen/analysis.h"
#include "../../../loadgen/laws.h"

#define assert_near(a, b)                                                                          \
    assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * (fabs((double)(b)) + 1))

static void test_laws_little(void **state)
{
    (void)state;
    /* 1000 req/s, 10 ms each, no think time: 10 users in the loop */
    assert_near(lg_little_n(1000, 0.010, 0), 10);
    assert_near(lg_little_rel_diff(10, 1000, 0.010, 0), 0);
    /* with think time: X (R + Z) = 500 * (0.01 + 0.03) = 20 */
    assert_near(lg_little_n(500, 0.010, 0.030), 20);
    assert_near(lg_little_rel_diff(20, 500, 0.010, 0.030), 0);
    /* a loadgen that drops 10% of its completions would see this */
    assert_near(lg_little_rel_diff(10, 900, 0.010, 0), -0.1);
    assert_near(lg_little_rel_diff(0, 900, 0.010, 0), 0);
}

static void test_laws_utilization(void **state)
{
    struct lg_resource r[2] = {{.name = "cpu", .util = 0.8}, {.name = "disk:sda", .util = 0.2}};

    (void)state;
    /* U = X D: 80% busy at 4000 req/s is 0.2 ms per request */
    assert_near(lg_demand(0.8, 4000), 0.0002);
    assert_near(lg_demand(0.5, 0), 0);
    lg_demands(r, 2, 4000);
    assert_near(r[0].demand_s, 0.0002);
    assert_near(r[1].demand_s, 0.00005);
}

static void test_laws_bottleneck(void **state)
{
    struct lg_resource r[4] = {
        {.name = "cpu", .util = 0.6},
        {.name = "cpu:redis", .util = 0.95},
        {.name = "disk:sda", .util = 0.1},
        {.name = "cpu:loadgen", .util = 0.3, .is_loadgen = true},
    };

    (void)state;
    assert_int_equal(lg_bottleneck(r, 0), -1);
    lg_demands(r, 4, 10000);
    assert_int_equal(lg_bottleneck(r, 4), 1);
    r[3].util = 0.99;
    lg_demands(r, 4, 10000);
    assert_int_equal(lg_bottleneck(r, 4), 3);
    /* with no throughput every demand is 0: the most utilized resource is named */
    lg_demands(r, 4, 0);
    assert_int_equal(lg_bottleneck(r, 4), 3);
}

static void test_laws_bounds(void **state)
{
    struct lg_bounds b;

    (void)state;
    /* D = 10 ms, D_max = 4 ms, Z = 0 */
    lg_bounds(1, 0.010, 0, 0.004, &b);
    assert_near(b.x_upper, 100);
    assert_near(b.r_lower_s, 0.010);
    lg_bounds(10, 0.010, 0, 0.004, &b);
    assert_near(b.x_upper, 250);
    assert_near(b.r_lower_s, 0.040);
    /* think time shifts both asymptotes */
    lg_bounds(10, 0.010, 0.100, 0.004, &b);
    assert_near(b.x_upper, 10 / 0.110);
    assert_near(b.r_lower_s, 0.010);
    lg_bounds(100, 0.010, 0.100, 0.004, &b);
    assert_near(b.x_upper, 250);
    assert_near(b.r_lower_s, 0.300);
    /* nothing measured: only the population bound */
    lg_bounds(4, 0.010, 0, 0, &b);
    assert_near(b.x_upper, 400);
    lg_bounds(4, 0, 0, 0, &b);
    assert_true(isinf(b.x_upper));
}

static void test_laws_knee(void **state)
{
    (void)state;
    assert_near(lg_knee(0.010, 0, 0.004), 2.5);
    assert_near(lg_knee(0.010, 0.030, 0.004), 10);
    assert_near(lg_knee(0.010, 0, 0), 0);
}

/* A point with n users, x req/s at r seconds, and CPU figures for the machine and 2 groups. */
static void fake_point(struct lg_point *p, unsigned n, double x, double r, double machine,
                       double lg_cores, double srv_cores)
{
    uint64_t ok = (uint64_t)(x * 10);

    memset(p, 0, sizeof(*p));
    p->users = n;
    p->threads = 2;
    p->window_s = 10;
    for (int t = 0; t <= LG_REQ_ALL; t++)
        lg_stats_init(&p->st[t]);
    for (uint64_t i = 0; i < ok; i++) {
        hist_record(&p->st[LG_REQ_GET].lat, (uint64_t)(r * 1e9));
        hist_record(&p->st[LG_REQ_ALL].lat, (uint64_t)(r * 1e9));
    }
    p->st[LG_REQ_GET].ok = ok;
    p->st[LG_REQ_ALL].ok = ok;
    p->mon.nsamples = 50;
    p->mon.window_s = 10;
    p->mon.ncpu = 2;
    p->mon.machine_cpu = machine;
    p->mon.nprocs = 2;
    strcpy(p->mon.procs[0].name, "loadgen");
    p->mon.procs[0].is_loadgen = true;
    p->mon.procs[0].nproc = 1;
    p->mon.procs[0].cpu_cores = lg_cores;
    p->mon.procs[0].capacity = 2;
    strcpy(p->mon.procs[1].name, "server1");
    p->mon.procs[1].nproc = 1;
    p->mon.procs[1].cpu_cores = srv_cores;
    p->mon.procs[1].capacity = 2;
}

static void test_analysis_run(void **state)
{
    struct lg_config cfg;
    struct lg_run run;
    struct lg_run_analysis a;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.weight[LG_REQ_GET] = 1;
    memset(&run, 0, sizeof(run));
    run.cfg = &cfg;
    run.npoints = 3;
    run.points = calloc(3, sizeof(*run.points));
    fake_point(&run.points[0], 1, 1000, 0.001, 0.30, 0.2, 0.4);
    fake_point(&run.points[1], 4, 3000, 0.00133, 0.90, 0.6, 1.2);
    fake_point(&run.points[2], 8, 3100, 0.00258, 1.00, 1.1, 0.9); /* loadgen: > half of 2 cores */

    lg_analyze(&run, &a);
    assert_string_equal(a.d_source, "R(1)");
    assert_true(fabs(a.d_s - 0.001) < 0.00001);
    assert_true(a.closed_loop);
    assert_int_equal(a.xmax, 2);
    assert_int_equal(a.nstar, 1); /* 3000 >= 0.95 * 3100 */
    /* resources: cpu, cpu:loadgen, cpu:server1; the machine's CPU has the largest demand */
    assert_int_equal(a.pts[1].nres, 3);
    assert_string_equal(a.pts[1].res[a.pts[1].bottleneck].name, "cpu");
    assert_true(fabs(a.pts[1].dmax_s - 0.90 / 3000) < 1e-9);
    assert_false(a.pts[1].lg_bottleneck); /* server1 is the largest CPU user */
    assert_true(a.pts[2].lg_bottleneck);  /* loadgen uses 1.1 of the 2 busy cores */
    /* Little: 3000 req/s * 1.33 ms = 4 users */
    assert_true(fabs(a.pts[1].little_rel) < 0.01);
    /* N*_law = D / D_max at X max = 0.001 / (1.0 / 3100) */
    assert_true(fabs(a.knee_law - 3.1) < 0.01);
    /* bounds at N = 4: X <= min(4 / 0.001, 1 / D_max) */
    assert_true(fabs(a.pts[1].bounds.x_upper - 3000 / 0.90) < 0.01);
    lg_analysis_release(&a);

    /* loadgen is the largest watched user but others (unwatched) use most of the CPU */
    fake_point(&run.points[2], 8, 3100, 0.00258, 1.00, 0.6, 0.3);
    lg_analyze(&run, &a);
    assert_string_equal(a.pts[2].res[a.pts[2].bottleneck].name, "cpu");
    assert_false(a.pts[2].lg_bottleneck);
    lg_analysis_release(&a);
    /* loadgen's own CPU saturated (capacity 1 core) is the bottleneck whatever the machine */
    run.points[2].mon.procs[0].capacity = 1;
    run.points[2].mon.procs[0].cpu_cores = 0.99;
    run.points[2].mon.machine_cpu = 0.6;
    lg_analyze(&run, &a);
    assert_string_equal(a.pts[2].res[a.pts[2].bottleneck].name, "cpu:loadgen");
    assert_true(a.pts[2].lg_bottleneck);
    lg_analysis_release(&a);
    free(run.points);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_laws_little),     cmocka_unit_test(test_laws_utilization),
        cmocka_unit_test(test_laws_bottleneck), cmocka_unit_test(test_laws_bounds),
        cmocka_unit_test(test_laws_knee),       cmocka_unit_test(test_analysis_run),
    };
    return cmocka_run_group_tests_name("lg_laws", tests, NULL, NULL);
}
