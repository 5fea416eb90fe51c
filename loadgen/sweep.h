/*
 * sweep.h - which numbers of users to measure, and N*. Pure functions over (N, X) points.
 * N* is the smallest measured N whose throughput is within 5% of the maximum throughput of the
 * sweep (X(N) >= 0.95 * max X): beyond it, more users only add waiting time.
 * --sweep auto multiplies N by a step (--sweep-step, 2 by default) from 1 until throughput stops
 * growing: until some steps in a row (--sweep-stalls, 2 by default, so that one noisy point on a
 * shared machine does not end the sweep) each fail to raise the best throughput so far by more
 * than 5%, or N reaches --max-users. It then bisects the interval (largest measured N below N*,
 * N*] a number of times (--sweep-refine, 2 by default), so N* is known to within a quarter of
 * the step below it. A short sweep that still passes the knee: step 4, 1 stall, no bisection
 * (N = 1, 4, 16, 64, ...: it stops one step after X stops growing).
 */
#ifndef LG_SWEEP_H
#define LG_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#define LG_SWEEP_TOLERANCE 0.05 /* "within 5%" for N* and for "still growing" */
#define LG_SWEEP_STEP 2         /* default factor between successive N */
#define LG_SWEEP_STEP_MAX 16
#define LG_SWEEP_REFINE 2 /* default bisection steps after the growth phase */
#define LG_SWEEP_REFINE_MAX 8
#define LG_SWEEP_STALLS 2 /* default steps without growth that end the growth phase */
#define LG_SWEEP_STALLS_MAX 8
#define LG_AUTOSWEEP_MAX 64 /* points an auto sweep can hold */

struct lg_sweep_pt {
    unsigned n; /* users */
    double x;   /* throughput, requests/s */
};

/* Index in pts of N* (ties on N: the first), or -1 when n == 0. Points may be in any order. */
int lg_sweep_nstar(const struct lg_sweep_pt *pts, size_t n);

/* How an auto sweep proceeds (the defaults: LG_SWEEP_STEP, LG_SWEEP_STALLS, LG_SWEEP_REFINE). */
struct lg_sweep_plan {
    unsigned max_users;
    unsigned step;   /* N is multiplied by it, >= 2 */
    unsigned stalls; /* steps in a row without growth that end the growth phase, >= 1 */
    unsigned refine; /* bisections below N* afterwards */
};

struct lg_autosweep {
    struct lg_sweep_plan plan;
    bool growing; /* still in the growth phase */
    unsigned refine_left;
    struct lg_sweep_pt pts[LG_AUTOSWEEP_MAX];
    size_t n;
};

void lg_autosweep_init(struct lg_autosweep *s, const struct lg_sweep_plan *plan);
/* Records the throughput measured at n users. */
void lg_autosweep_add(struct lg_autosweep *s, unsigned n, double x);
/* The next N to measure, or 0 when the sweep is complete. */
unsigned lg_autosweep_next(struct lg_autosweep *s);

#endif /* LG_SWEEP_H */
