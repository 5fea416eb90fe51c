/*
 * sweep.h - which numbers of users to measure, and N*. Pure functions over (N, X) points.
 * N* is the smallest measured N whose throughput is within 5% of the maximum throughput of the
 * sweep (X(N) >= 0.95 * max X): beyond it, more users only add waiting time.
 * --sweep auto doubles N from 1 until throughput stops growing: until two successive doublings
 * each fail to raise the best throughput so far by more than 5% (two, so that one noisy point
 * on a shared machine does not end the sweep), or N reaches --max-users. It then bisects the
 * interval (largest measured N below N*, N*] twice, so N* is known to within a quarter of the
 * doubling step below it.
 */
#ifndef LG_SWEEP_H
#define LG_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#define LG_SWEEP_TOLERANCE 0.05 /* "within 5%" for N* and for "still growing" */
#define LG_SWEEP_REFINE 2       /* bisection steps after the doubling */
#define LG_SWEEP_STALLS 2       /* doublings without growth that end the doubling */
#define LG_AUTOSWEEP_MAX 64     /* points an auto sweep can hold */

struct lg_sweep_pt {
    unsigned n; /* users */
    double x;   /* throughput, requests/s */
};

/* Index in pts of N* (ties on N: the first), or -1 when n == 0. Points may be in any order. */
int lg_sweep_nstar(const struct lg_sweep_pt *pts, size_t n);

struct lg_autosweep {
    unsigned max_users;
    bool doubling; /* still in the doubling phase */
    unsigned refine_left;
    struct lg_sweep_pt pts[LG_AUTOSWEEP_MAX];
    size_t n;
};

void lg_autosweep_init(struct lg_autosweep *s, unsigned max_users);
/* Records the throughput measured at n users. */
void lg_autosweep_add(struct lg_autosweep *s, unsigned n, double x);
/* The next N to measure, or 0 when the sweep is complete. */
unsigned lg_autosweep_next(struct lg_autosweep *s);

#endif /* LG_SWEEP_H */
