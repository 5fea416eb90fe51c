/*
 * window.c - see window.h.
 */
#include "window.h"

#include <math.h>

#define LG_WINDOW_SPARE 1.05  /* a window this much above the goal needs no extension */
#define LG_WINDOW_AIM 1.1     /* an extension aims this much above the goal */
#define LG_WINDOW_CAP_TOL 1e-3 /* seconds: a window this close to the cap reached it */

void lg_window_init(struct lg_window *w, uint64_t end_ns)
{
    atomic_init(&w->end, end_ns & ~LG_WINDOW_SEALED);
}

uint64_t lg_window_end(const struct lg_window *w)
{
    return atomic_load_explicit(&w->end, memory_order_acquire) & ~LG_WINDOW_SEALED;
}

uint64_t lg_window_end_at(struct lg_window *w, uint64_t now_ns)
{
    uint64_t e = atomic_load_explicit(&w->end, memory_order_acquire);

    /* a failed exchange reloads e: an extension that came first is then seen */
    while (!(e & LG_WINDOW_SEALED) && now_ns >= e &&
           !atomic_compare_exchange_weak_explicit(&w->end, &e, e | LG_WINDOW_SEALED,
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
    return e & ~LG_WINDOW_SEALED;
}

bool lg_window_extend(struct lg_window *w, uint64_t end_ns)
{
    uint64_t e = atomic_load_explicit(&w->end, memory_order_acquire);

    end_ns &= ~LG_WINDOW_SEALED;
    while (!(e & LG_WINDOW_SEALED) && end_ns > e) {
        if (atomic_compare_exchange_weak_explicit(&w->end, &e, end_ns, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
    return false;
}

double lg_window_goal_s(uint64_t done, double r_s, double z_s, double elapsed_s)
{
    double cycles = LG_WINDOW_CYCLES * (r_s + z_s);
    double count;

    if (done == 0)
        return INFINITY;
    count = LG_WINDOW_OK * (elapsed_s > 0 ? elapsed_s : 0) / (double)done;
    return cycles > count ? cycles : count;
}

double lg_window_next_s(double window_s, double max_s, uint64_t done, double r_s, double z_s,
                        double elapsed_s)
{
    double goal = lg_window_goal_s(done, r_s, z_s, elapsed_s);
    double next;

    if (window_s >= max_s)
        return window_s;
    if (!isfinite(goal))
        next = 2 * window_s; /* nothing completed yet: R is at least that long */
    else if (window_s >= LG_WINDOW_SPARE * goal)
        return window_s;
    else
        next = LG_WINDOW_AIM * goal;
    return next < max_s ? next : max_s;
}

enum lg_window_rule lg_window_rule_of(double window_s, double max_s, uint64_t done, double r_s,
                                      double z_s)
{
    if (done >= LG_WINDOW_OK && window_s >= LG_WINDOW_CYCLES * (r_s + z_s))
        return LG_WINDOW_MET;
    if (max_s <= 0)
        return LG_WINDOW_OFF;
    return window_s >= max_s - LG_WINDOW_CAP_TOL ? LG_WINDOW_CAPPED : LG_WINDOW_SHORT;
}

const char *lg_window_rule_name(enum lg_window_rule r)
{
    switch (r) {
    case LG_WINDOW_MET:
        return "met";
    case LG_WINDOW_CAPPED:
        return "capped";
    case LG_WINDOW_SHORT:
        return "short";
    case LG_WINDOW_OFF:
        break;
    }
    return "off";
}
