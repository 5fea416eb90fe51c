/*
 * minrate.c - see minrate.h.
 */
#include "minrate.h"

#include <string.h>

#define RING (MINRATE_STEPS + 1)

static uint64_t step_ns(const struct minrate_cfg *cfg)
{
    uint64_t q = cfg->window_ns / MINRATE_STEPS;
    return q > 0 ? q : 1;
}

/* The first step boundary that is judged: the first at or after the grace, at least 1. */
static uint64_t first_judged(const struct minrate_cfg *cfg)
{
    uint64_t q = step_ns(cfg);
    uint64_t k = (cfg->grace_ns + q - 1) / q;
    return k > 0 ? k : 1;
}

/* Moves the ring on to the step now_ns falls in, emptying the steps passed over. */
static void advance(struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns)
{
    uint64_t k = now_ns > m->start_ns ? (now_ns - m->start_ns) / step_ns(cfg) : 0;

    if (k <= m->step)
        return;
    if (k - m->step >= RING) {
        memset(m->bytes, 0, sizeof(m->bytes));
    } else {
        for (uint64_t i = m->step + 1; i <= k; i++)
            m->bytes[i % RING] = 0;
    }
    m->step = k;
}

void minrate_start(struct minrate *m, uint64_t now_ns)
{
    memset(m, 0, sizeof(*m));
    m->start_ns = now_ns;
}

void minrate_add(struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns, uint64_t n)
{
    if (cfg->window_ns == 0)
        return;
    advance(m, cfg, now_ns);
    m->bytes[m->step % RING] += n;
}

bool minrate_too_slow(struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns)
{
    uint64_t span, moved = 0;
    double need;

    if (cfg->window_ns == 0)
        return false;
    advance(m, cfg, now_ns);
    if (m->step < first_judged(cfg))
        return false;
    /* the steps completed before now: m->step - span .. m->step - 1 */
    span = m->step < MINRATE_STEPS ? m->step : MINRATE_STEPS;
    for (uint64_t i = 1; i <= span; i++)
        moved += m->bytes[(m->step - i) % RING];
    need = (double)cfg->rate * (double)(span * step_ns(cfg)) / 1e9;
    return (double)moved < need;
}

uint64_t minrate_next_ns(const struct minrate *m, const struct minrate_cfg *cfg, uint64_t now_ns)
{
    uint64_t q = step_ns(cfg);
    uint64_t k;

    if (cfg->window_ns == 0)
        return 0;
    k = (now_ns > m->start_ns ? (now_ns - m->start_ns) / q : 0) + 1;
    if (k < first_judged(cfg))
        k = first_judged(cfg);
    return m->start_ns + k * q;
}
