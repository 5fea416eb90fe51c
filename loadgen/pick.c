/*
 * pick.c - see pick.h. H(x) is the integral of h(x) = x^-s, (x^(1-s) - 1) / (1 - s) (log x at
 * s = 1), written with log1p/expm1 helpers so that s near 1 loses no precision.
 */
#include "pick.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

/* log1p(x) / x, its series near 0 */
static double helper1(double x)
{
    if (fabs(x) > 1e-8)
        return log1p(x) / x;
    return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x) / x, its series near 0 */
static double helper2(double x)
{
    if (fabs(x) > 1e-8)
        return expm1(x) / x;
    return 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

static double h_integral(double x, double s)
{
    double log_x = log(x);
    return helper2((1 - s) * log_x) * log_x;
}

static double h(double x, double s)
{
    return exp(-s * log(x));
}

static double h_integral_inverse(double x, double s)
{
    double t = x * (1 - s);
    if (t < -1)
        t = -1; /* rounding could take it below: the result is then the upper bound anyway */
    return exp(helper1(t) * x);
}

int lg_pick_parse(const char *arg, enum lg_pick_kind *kind, double *s, char *err)
{
    char *end;

    if (strcmp(arg, "uniform") == 0) {
        *kind = LG_PICK_UNIFORM;
        *s = 0;
        return 0;
    }
    if (strncmp(arg, "zipf:", 5) == 0) {
        double v = strtod(arg + 5, &end);
        if (end != arg + 5 && *end == '\0' && isfinite(v) && v >= LG_ZIPF_S_MIN &&
            v <= LG_ZIPF_S_MAX) {
            *kind = LG_PICK_ZIPF;
            *s = v;
            return 0;
        }
    }
    snprintf(err, LG_PICK_ERR_LEN, "--pick '%.64s': uniform or zipf:S (S from %g to %g, e.g. "
             "zipf:0.99)", arg, LG_ZIPF_S_MIN, LG_ZIPF_S_MAX);
    return -1;
}

void lg_pick_init(struct lg_pick *p, enum lg_pick_kind kind, double s, uint64_t n)
{
    memset(p, 0, sizeof(*p));
    p->kind = kind;
    p->s = s;
    p->n = n;
    if (kind == LG_PICK_ZIPF) {
        p->h_x1 = h_integral(1.5, s) - 1;
        p->h_n = h_integral((double)n + 0.5, s);
        p->squeeze = 2 - h_integral_inverse(h_integral(2.5, s) - h(2, s), s);
    }
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void lg_pick_spread(struct lg_pick *p, uint64_t seed)
{
    uint64_t h = lg_rng_seed(seed, 0x6e616d6573); /* "names": a stream of its own */
    uint64_t a = (uint64_t)((double)p->n * 0.6180339887498949);

    a += h % (p->n / 1000 + 1); /* the seed moves the step a little, and the offset anywhere */
    while (gcd(a, p->n) != 1)
        a++;
    p->spread = true;
    p->mul = a % p->n;
    p->add = lg_rng_next(&h) % p->n;
    if (p->n == 1)
        p->mul = 1;
}

/* Index k's place under the permutation. */
static uint64_t spread(const struct lg_pick *p, uint64_t k)
{
    return p->spread ? (uint64_t)(((unsigned __int128)k * p->mul + p->add) % p->n) : k;
}

uint64_t lg_pick_draw(const struct lg_pick *p, uint64_t *rng)
{
    if (p->kind == LG_PICK_UNIFORM) /* the high 64 bits of r * n: uniform in [0, n) */
        return spread(p, (uint64_t)(((unsigned __int128)lg_rng_next(rng) * p->n) >> 64));
    for (;;) {
        double u = p->h_n + lg_rng_unit(rng) * (p->h_x1 - p->h_n);
        double x = h_integral_inverse(u, p->s);
        double kd = x + 0.5;
        uint64_t k = kd < 1 ? 1 : kd >= (double)p->n ? p->n : (uint64_t)kd;

        if ((double)k - x <= p->squeeze ||
            u >= h_integral((double)k + 0.5, p->s) - h((double)k, p->s))
            return spread(p, k - 1);
    }
}
