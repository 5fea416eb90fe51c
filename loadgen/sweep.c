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

void lg_autosweep_init(struct lg_autosweep *s, unsigned max_users)
{
    s->max_users = max_users > 0 ? max_users : 1;
    s->doubling = true;
    s->refine_left = LG_SWEEP_REFINE;
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

/* Trailing doubling steps that did not beat the best throughput before them by > 5%. */
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
    if (s->doubling) {
        const struct lg_sweep_pt *last = &s->pts[s->n - 1];
        if (stalls(s) < LG_SWEEP_STALLS && last->n < s->max_users)
            return last->n * 2 < s->max_users ? last->n * 2 : s->max_users;
        s->doubling = false;
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
