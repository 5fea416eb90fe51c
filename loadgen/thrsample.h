/*
 * thrsample.h - the thread sampler of the resource monitor: during a point's window, a thread
 * that reads the wait channel (/proc/PID/task/TID/wchan, one pread on a file kept open) of
 * every thread of the watched processes that swstation.h has a rule for, --thread-hz times a
 * second (and /proc/PID/task/TID/syscall when the rule needs it), and their time on a core and
 * waiting for one (/proc/PID/task/TID/schedstat; utime + stime of its stat where that is
 * missing) when the window opens and closes and every 250 ms between; the tallies become
 * software stations (lg_sw_group). The thread lists are re-read every 250 ms (processes named
 * by --watch-comm every second), so threads that start or end in the window count while they
 * exist. At most LG_THR_MAX threads per window; more are counted as left out. The sampler's
 * own CPU time is measured (CLOCK_THREAD_CPUTIME_ID) and reported with the result: what the
 * sampling costs. A stop is noticed at the next sample (1 / --thread-hz at most).
 * DESIGN: lg_thrsample_start() spawns the thread, which owns every sampling state; the
 * starting thread only sets the atomic stop flag and joins it in lg_thrsample_stop().
 */
#ifndef LG_THRSAMPLE_H
#define LG_THRSAMPLE_H

#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "swstation.h"
#include "window.h"

#define LG_THR_MAX 64 /* threads sampled in one window */

struct lg_thr_result {
    struct lg_sw_station st[LG_SW_MAX_STATIONS];
    unsigned nst;
    uint64_t ticks;       /* samples taken */
    double window_s;      /* from the first sample to the last */
    double hz;            /* samples per second achieved */
    double cost_cores;    /* the sampler's own CPU over the window (1.0 = one core) */
    unsigned threads;     /* threads sampled */
    unsigned left_out;    /* threads beyond LG_THR_MAX, not sampled */
    unsigned st_left_out; /* stations beyond LG_SW_MAX_STATIONS */
};

struct lg_thrsample;

/* A sampler of the threads of the processes cfg watches (--watch, --watch-comm) and loadgen. */
struct lg_thrsample *lg_thrsample_new(const struct lg_config *cfg);
/*
 * Samples from first_ns to the window's end (CLOCK_MONOTONIC; it may move later meanwhile) or
 * until stopped. win must outlive lg_thrsample_stop(). 0, or -1.
 */
int lg_thrsample_start(struct lg_thrsample *s, uint64_t first_ns, struct lg_window *win);
/* Stops and joins the thread, then fills *out (zeroed when it never started). */
void lg_thrsample_stop(struct lg_thrsample *s, struct lg_thr_result *out);
void lg_thrsample_free(struct lg_thrsample *s);

#endif /* LG_THRSAMPLE_H */
