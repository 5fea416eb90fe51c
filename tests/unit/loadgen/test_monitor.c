/*
 * test_monitor.c - loadgen/monitor: the Redis INFO commandstats parser, and a real sampling
 * thread watching this process (loadgen's own group) while the test burns CPU: samples are
 * taken, the window is measured and the CPU is seen. No load-dependent thresholds: the tests
 * wait for the monitor to seal its window, however late a busy machine lets it run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../loadgen/config.h"
#include "../../../loadgen/monitor.h"
#include "../../../loadgen/window.h"
#include "clock.h"
#include "procstat.h"

static void test_monitor_cmdstats(void **state)
{
    static const char info[] =
        "# Commandstats\r\n"
        "cmdstat_set:calls=100,usec=250,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n"
        "cmdstat_info:calls=7,usec=700,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"
        "cmdstat_get:calls=40,usec=20,usec_per_call=0.50,rejected_calls=3,failed_calls=0\r\n";
    uint64_t calls = 0;
    uint64_t usec = 0;

    (void)state;
    /* INFO's own calls are left out: the monitor is not the load */
    assert_int_equal(lg_monitor_parse_cmdstats(info, &calls, &usec), 2);
    assert_int_equal(calls, 140);
    assert_int_equal(usec, 270);
    assert_int_equal(lg_monitor_parse_cmdstats("# Commandstats\r\n", &calls, &usec), 0);
    assert_int_equal(calls, 0);
    assert_int_equal(lg_monitor_parse_cmdstats("cmdstat_set:usec=1\r\n", &calls, &usec), -1);
    assert_int_equal(lg_monitor_parse_cmdstats("cmdstat_set:calls=x,usec=1\r\n", &calls, &usec),
                     -1);
}

static void test_monitor_task_ctxt_self(void **state)
{
    static char buf[8192];
    uint64_t vol = 0;
    uint64_t invol = 0;

    (void)state;
    usleep(1000); /* at least one voluntary switch */
    assert_true(procstat_task_ctxt(getpid(), buf, sizeof(buf), &vol, &invol) >= 1);
    assert_true(vol + invol > 0);
    assert_int_equal(procstat_task_ctxt(999999999, buf, sizeof(buf), &vol, &invol), -1);
}

/* True once the monitor has sealed win (it took its sample at or after the end). */
static bool sealed(struct lg_window *w)
{
    return (atomic_load(&w->end) & LG_WINDOW_SEALED) != 0;
}

/* Sleeps until win is sealed, for at most 30 s; false if it never is. */
static bool until_sealed(struct lg_window *w)
{
    uint64_t give_up = clock_now_ns() + 30000000000ull;

    while (!sealed(w) && clock_now_ns() < give_up)
        usleep(10000);
    return sealed(w);
}

/* The CPU time of the calling thread, in ns. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_monitor_samples_self(void **state)
{
    static struct lg_config cfg;
    struct lg_monitor *m;
    struct lg_monitor_result r;
    struct lg_window win;
    uint64_t start;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.sample_ms = 20;
    m = lg_monitor_new(&cfg);
    start = clock_now_ns();
    lg_window_init(&win, UINT64_MAX);
    assert_int_equal(lg_monitor_start(m, start, &win), 0);
    /* 300 ms of this thread's CPU burnt, however long a busy machine makes that take; then
     * the monitor is stopped (its last sample) */
    while (thread_cpu_ns() < 300000000ull || clock_now_ns() < start + 300000000ull)
        ;
    lg_monitor_stop(m, &r);
    assert_true(r.nsamples >= 2); /* the first, and one at the end at least */
    assert_true(r.window_s > 0);
    assert_true(r.window_s <= (double)(clock_now_ns() - start) / 1e9);
    assert_int_equal(r.nprocs, 1);
    assert_string_equal(r.procs[0].name, "loadgen");
    assert_true(r.procs[0].is_loadgen);
    assert_int_equal(r.procs[0].nproc, 1);
    assert_true(r.procs[0].nthreads >= 2); /* this thread and the monitor */
    assert_true(r.procs[0].cpu_cores > 0);
    assert_true(r.procs[0].rss_max_bytes > 0);
    assert_true(r.machine_cpu > 0 && r.machine_cpu <= 1.0);
    assert_int_equal(r.ncpu, cfg.ncores);

    /* a monitor can be started again for the next point; stopping early still samples */
    start = clock_now_ns();
    lg_window_init(&win, UINT64_MAX);
    assert_int_equal(lg_monitor_start(m, start, &win), 0);
    usleep(50000);
    lg_monitor_stop(m, &r);
    assert_true(r.nsamples >= 2);
    lg_monitor_free(m);
}

/*
 * A window extended before its end: the monitor samples to the new end, then seals it there.
 * The extension must come before the first end (150 ms): a try in which this thread ran too
 * late for that (a busy machine) is made again.
 */
static void test_monitor_window_extended(void **state)
{
    static struct lg_config cfg;
    struct lg_monitor *m;
    struct lg_monitor_result r;
    struct lg_window win;
    uint64_t start;
    bool extended = false;

    (void)state;
    lg_config_defaults(&cfg);
    cfg.sample_ms = 20;
    cfg.thread_hz = 0;
    m = lg_monitor_new(&cfg);
    for (int tries = 0; tries < 20 && !extended; tries++) {
        start = clock_now_ns();
        lg_window_init(&win, start + 150000000ull);
        assert_int_equal(lg_monitor_start(m, start, &win), 0);
        extended = lg_window_extend(&win, start + 400000000ull);
        assert_true(until_sealed(&win));
        lg_monitor_stop(m, &r);
    }
    assert_true(extended);
    assert_int_equal(lg_window_end(&win), start + 400000000ull); /* sealed at the new end */
    assert_false(lg_window_extend(&win, start + 800000000ull));  /* and no more */
    assert_true(r.window_s > 0);
    assert_true(r.window_s <= (double)(clock_now_ns() - start) / 1e9);
    lg_monitor_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monitor_cmdstats),
        cmocka_unit_test(test_monitor_task_ctxt_self),
        cmocka_unit_test(test_monitor_samples_self),
        cmocka_unit_test(test_monitor_window_extended),
    };
    return cmocka_run_group_tests_name("lg_monitor", tests, NULL, NULL);
}
