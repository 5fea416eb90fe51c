/*
 * window.h - a point's measured window: how long it must be, and its end, shared by the
 * threads of the point.
 *
 * The rule: a window holds at least LG_WINDOW_CYCLES cycles of one user (R + Z, R the mean
 * response time of the successes) and at least LG_WINDOW_OK completions (successes and
 * errors). Each user has a request cut by each edge of the window, so Little's
 * law N = X (R + Z) computed from the window is off by up to about (R + Z) / window: 5% at
 * 20 cycles. --duration is the shortest window, --window-max the longest.
 *
 * R is not known before the window: the window measures it. The run (run.c) looks at the
 * completions counted so far shortly before the window's end (LG_WINDOW_GUARD_NS) and, when
 * the rule does not hold yet, moves the end to where it will (lg_window_next_s), up to
 * --window-max; it looks again before the new end. The warm-up is no guide: it starts cold, and
 * at 100 MB per request a short one completes nothing.
 *
 * DESIGN: the end is one atomic word. The run extends it with a compare-and-swap while no
 * thread has reached it; the first thread (worker, monitor or thread sampler) to find the time
 * past it seals it (LG_WINDOW_SEALED), and a sealed end never moves. So a completion is counted
 * or not against the one end every thread ends at, and an extension that comes too late (the
 * run's thread delayed past the end) fails instead of splitting the point. Pure functions
 * otherwise; thread-safe.
 */
#ifndef LG_WINDOW_H
#define LG_WINDOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LG_WINDOW_CYCLES 20 /* the window holds this many R + Z at least */
#define LG_WINDOW_OK 200    /* ... and this many completions */
#define LG_WINDOW_GUARD_NS (200ull * 1000000) /* the run decides this long before the end */
#define LG_WINDOW_SEALED (1ull << 63)

struct lg_window {
    atomic_uint_least64_t end; /* CLOCK_MONOTONIC ns, | LG_WINDOW_SEALED once reached */
};

/* How a point's window came out against the rule (reports: window_rule). */
enum lg_window_rule {
    LG_WINDOW_OFF = 0,    /* not met, and not sized: --window-max 0, --start-at,
                           * --requests-per-user */
    LG_WINDOW_MET = 1,    /* 20 (R + Z) and 200 completions at least */
    LG_WINDOW_CAPPED = 2, /* not met: the window reached --window-max */
    LG_WINDOW_SHORT = 3,  /* not met below the cap: interrupted, or the estimate fell short */
};

void lg_window_init(struct lg_window *w, uint64_t end_ns);
/* The end as it stands (it may still grow): for deadlines. */
uint64_t lg_window_end(const struct lg_window *w);
/* The end as seen at now, sealing it when now has reached it: for "is the window over?". */
uint64_t lg_window_end_at(struct lg_window *w, uint64_t now_ns);
/* Moves the end to end_ns (later than the present one); false once sealed. */
bool lg_window_extend(struct lg_window *w, uint64_t end_ns);

/*
 * The window the rule asks for, in seconds, from done completions (r_s: the mean response
 * time of the successes among them, 0 if none) counted over the first elapsed_s of the window:
 * max(LG_WINDOW_CYCLES (R + Z), LG_WINDOW_OK elapsed_s / done). INFINITY when done is 0.
 */
double lg_window_goal_s(uint64_t done, double r_s, double z_s, double elapsed_s);
/*
 * Where a window of window_s (of which elapsed_s have passed) should end, in seconds from its
 * start: window_s itself when it already holds the goal with 5% to spare or has reached max_s,
 * else 1.1 goals (twice window_s while nothing has completed), at most max_s.
 */
double lg_window_next_s(double window_s, double max_s, uint64_t done, double r_s, double z_s,
                        double elapsed_s);
/* The rule's outcome for a finished window; max_s 0: the window was not sized. */
enum lg_window_rule lg_window_rule_of(double window_s, double max_s, uint64_t done, double r_s,
                                      double z_s);
const char *lg_window_rule_name(enum lg_window_rule r);

#endif /* LG_WINDOW_H */
