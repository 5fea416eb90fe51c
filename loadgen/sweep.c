/*
 * sweep.c - see sweep.h.
 */
#include "sweep.h"

int lg_sweep_nstar(const struct lg_sweep_pt *pts, size_t n)
{
    double xmax = 0;
    int best = -1;

    for (size_t i = 0; i < n; i++)
        if (pts[i].x > xmax)
            xmax = pts[i].x;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].x >= (1.0 - LG_SWEEP_TOLERANCE) * xmax && (best < 0 || pts[i].n < pts[best].n))
            best = (int)i;
    }
    return best;
}

void lg_autosweep_init(struct lg_autosweep *s, const struct lg_sweep_plan *plan)
{
    s->plan = *plan;
    if (s->plan.max_users < 1)
        s->plan.max_users = 1;
    if (s->plan.step < 2)
        s->plan.step = 2;
    if (s->plan.stalls < 1)
        s->plan.stalls = 1;
    s->growing = true;
    s->refine_left = s->plan.refine;
    s->n = 0;
}

void lg_autosweep_add(struct lg_autosweep *s, unsigned n, double x)
{
    if (s->n < LG_AUTOSWEEP_MAX) {
        s->pts[s->n].n = n;
        s->pts[s->n].x = x;
        s->n++;
    }
}

static bool measured(const struct lg_autosweep *s, unsigned n)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pts[i].n == n)
            return true;
    return false;
}

/* Trailing growth steps that did not beat the best throughput before them by > 5%. */
static unsigned stalls(const struct lg_autosweep *s)
{
    double best = s->pts[0].x;
    unsigned n = 0;

    for (size_t i = 1; i < s->n; i++) {
        if (s->pts[i].x > (1.0 + LG_SWEEP_TOLERANCE) * best)
            n = 0;
        else
            n++;
        if (s->pts[i].x > best)
            best = s->pts[i].x;
    }
    return n;
}

unsigned lg_autosweep_next(struct lg_autosweep *s)
{
    int star;
    unsigned below = 0;
    unsigned mid;

    if (s->n == 0)
        return 1;
    if (s->n >= LG_AUTOSWEEP_MAX)
        return 0;
    if (s->growing) {
        const struct lg_sweep_pt *last = &s->pts[s->n - 1];
        if (stalls(s) < s->plan.stalls && last->n < s->plan.max_users)
            return last->n < s->plan.max_users / s->plan.step ? last->n * s->plan.step
                                                               : s->plan.max_users;
        s->growing = false;
    }
    if (s->refine_left == 0)
        return 0;
    star = lg_sweep_nstar(s->pts, s->n);
    for (size_t i = 0; i < s->n; i++)
        if (s->pts[i].n < s->pts[star].n && s->pts[i].n > below)
            below = s->pts[i].n;
    if (below == 0 || s->pts[star].n - below < 2)
        return 0;
    mid = below + (s->pts[star].n - below) / 2;
    if (measured(s, mid))
        return 0;
    s->refine_left--;
    return mid;
}
