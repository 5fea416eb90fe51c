/*
 * minrate.h - the slowest transfer allowed: a body being received or a response being sent
 * must move --min-rate bytes per second over every --min-rate-window, once --min-rate-grace
 * has passed since it started. This is the rule of Kestrel's MinRequestBodyDataRate and
 * MinResponseDataRate (a rate, after a grace period) and of Apache mod_reqtimeout's MinRate,
 * but judged over a sliding window rather than since the start: a fast start buys no time for
 * a trickle afterwards, so what a transfer holds (a share of the upload budgets, a response
 * buffer, a pinned segment) is given back within the grace and a window once it slows down.
 *
 * DESIGN: pure (the caller passes the time), one per transfer, owned by the thread of its
 * connection. The window slides in steps of a quarter of it, counted from the start: bytes
 * are added to the step they arrive in, and at each step boundary from the grace on, the last
 * MINRATE_STEPS steps (all of them since the start, if fewer) must hold --min-rate bytes per
 * second of their span. A transfer whose rate falls to nothing is therefore caught at the
 * first boundary after the grace, or one step later than a full window after its last burst.
 */
#ifndef S1_MINRATE_H
#define S1_MINRATE_H

#include <stdbool.h>
#include <stdint.h>

#define MINRATE_STEPS 4 /* steps per window */

/* The rule: immutable after start-up. */
struct minrate_cfg {
    uint64_t rate;      /* --min-rate: bytes per second */
    uint64_t grace_ns;  /* --min-rate-grace: no judgement before this */
    uint64_t window_ns; /* --min-rate-window; 0: the rule is off */
};

/* One transfer. */
struct minrate {
    uint64_t start_ns;
    uint64_t step;                     /* the step bytes are counted in now (0: the first) */
    uint64_t bytes[MINRATE_STEPS + 1]; /* ring: bytes of steps step-4 .. step, by step % 5 */
};

/* The transfer starts at now_ns, with nothing moved yet. */
void minrate_start(struct minrate *m, uint64_t now_ns);
/* n bytes moved at now_ns (now_ns never before an earlier call's). */
void minrate_add(struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns, uint64_t n);
/*
 * Whether the transfer is slower than the rule allows, judged at the last step boundary
 * before now_ns (false before the first boundary at or after the grace, and when the rule is
 * off).
 */
bool minrate_too_slow(struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns);
/* When the next judgement after now_ns falls (CLOCK_MONOTONIC ns); 0 when the rule is off. */
uint64_t minrate_next_ns(const struct minrate *m, const struct minrate_cfg *cfg,
                         uint64_t now_ns);

#endif /* S1_MINRATE_H */
