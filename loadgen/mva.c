/*
 * mva.c - see mva.h. For a multi-server centre k with rate alpha(j) = min(j c, m) / D:
 *   R_k(n) = sum_{j>=1} j D / alpha(j) p_k(j-1 | n-1)
 *          = D / m (1 + Q_k(n-1)) + D sum_{j=1}^{J-1} (1/c - j/m) p_k(j-1 | n-1),
 * J the first j with j c >= m (beyond it every server is busy and the rate is m / D), and
 *   p_k(j | n) = X(n) D / (j c) p_k(j-1 | n-1), 1 <= j < J,
 *   p_k(0 | n) = G_without_k(n) / G(n) = p_k(0 | n-1) X(n) / X_without_k(n),
 * where X_without_k is the throughput of the same network without centre k (solved first, by
 * this same function): only J marginal probabilities are kept, all computed by products.
 * A batch centre's residence (mva.h) needs X(n - 1) and Q(n - 1), both at hand in the
 * recursion.
 */
#include "mva.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct multi {
    size_t k;     /* station index */
    unsigned lim; /* J */
    double *p;    /* p(0..J-1 | n) */
    double *xw;   /* X of the network without this centre, per population; NULL: infinite */
};

static unsigned first_full(const struct lg_mva_station *s)
{
    unsigned j = 1;

    while ((double)j * s->per_job < (double)s->servers * (1 - 1e-12))
        j++;
    return j;
}

static int solve(const struct lg_mva_station *st, size_t nst, double z, unsigned n, double *x,
                 double *rsum, double *q);

/* A batch centre's residence at population n from X(n - 1) and its Q(n - 1) (mva.h). */
static double batch_residence(const struct lg_mva_station *s, double xprev, double qprev)
{
    double d = s->demand_s;
    double b = s->batch;
    double u = isfinite(xprev) ? fmin(1, xprev * d) : 1;
    double beyond = qprev - u * b - (b - 1);

    return b * d * (1 + u) + (beyond > 0 ? beyond * d : 0);
}

/* X per population of the network without station k, or NULL when it has nothing to hold a
 * request (no demand, no think time): then station k always holds every request. */
static double *without(const struct lg_mva_station *st, size_t nst, double z, unsigned n, size_t k)
{
    struct lg_mva_station rest[LG_MVA_MAX_STATIONS];
    double total = z;
    double *xw;
    size_t m = 0;

    for (size_t i = 0; i < nst; i++) {
        if (i == k)
            continue;
        rest[m++] = st[i];
        total += st[i].demand_s;
    }
    if (total <= 0)
        return NULL;
    xw = xcalloc(n, sizeof(*xw));
    solve(rest, m, z, n, xw, NULL, NULL);
    return xw;
}

/* The recursion; inputs already checked. x[i] (and rsum[i]) for population i + 1. */
static int solve(const struct lg_mva_station *st, size_t nst, double z, unsigned n, double *x,
                 double *rsum, double *q)
{
    struct multi mu[LG_MVA_MAX_MULTI];
    double qn[LG_MVA_MAX_STATIONS] = {0};
    double res[LG_MVA_MAX_STATIONS];
    double xprev = 0; /* X(pop - 1) */
    size_t nmu = 0;

    for (size_t k = 0; k < nst; k++) {
        struct multi *m;
        if (st[k].kind != LG_MVA_MULTI)
            continue;
        m = &mu[nmu++];
        m->k = k;
        m->lim = first_full(&st[k]);
        m->p = xcalloc(m->lim, sizeof(*m->p));
        m->p[0] = 1;
        m->xw = without(st, nst, z, n, k);
    }
    for (unsigned pop = 1; pop <= n; pop++) {
        double r = 0;
        double xp;
        size_t im = 0;

        for (size_t k = 0; k < nst; k++) {
            const struct lg_mva_station *s = &st[k];
            if (s->kind == LG_MVA_DELAY) {
                res[k] = s->demand_s;
            } else if (s->kind == LG_MVA_QUEUE) {
                res[k] = s->demand_s * (1 + qn[k]);
            } else if (s->kind == LG_MVA_BATCH) {
                res[k] = batch_residence(s, xprev, qn[k]);
            } else {
                const struct multi *m = &mu[im++];
                double extra = 0;
                for (unsigned j = 1; j < m->lim; j++)
                    extra += (1 / s->per_job - (double)j / s->servers) * m->p[j - 1];
                res[k] = s->demand_s / s->servers * (1 + qn[k]) + s->demand_s * extra;
            }
            r += res[k];
        }
        xp = z + r > 0 ? pop / (z + r) : INFINITY;
        x[pop - 1] = xp;
        xprev = xp;
        if (rsum != NULL)
            rsum[pop - 1] = r;
        for (size_t k = 0; k < nst; k++)
            qn[k] = isfinite(xp) ? xp * res[k] : 0;
        for (size_t i = 0; i < nmu; i++) {
            struct multi *m = &mu[i];
            const struct lg_mva_station *s = &st[m->k];
            for (unsigned j = m->lim - 1; j >= 1; j--)
                m->p[j] = xp * s->demand_s / (j * s->per_job) * m->p[j - 1];
            m->p[0] = m->xw == NULL ? 0 : m->p[0] * xp / m->xw[pop - 1];
        }
    }
    if (q != NULL)
        memcpy(q, qn, nst * sizeof(*q));
    for (size_t i = 0; i < nmu; i++) {
        free(mu[i].p);
        free(mu[i].xw);
    }
    return 0;
}

static bool valid(const struct lg_mva_station *st, size_t nst, double z, unsigned n)
{
    double total = z;
    unsigned nmulti = 0;

    if (nst > LG_MVA_MAX_STATIONS || n > LG_MVA_MAX_N || !isfinite(z) || z < 0 ||
        (nst > 0 && st == NULL))
        return false;
    for (size_t k = 0; k < nst; k++) {
        const struct lg_mva_station *s = &st[k];
        if (!isfinite(s->demand_s) || s->demand_s < 0)
            return false;
        if (s->kind == LG_MVA_MULTI) {
            if (++nmulti > LG_MVA_MAX_MULTI || s->servers < 1 ||
                s->servers > LG_MVA_MAX_SERVERS || !(s->per_job >= 1) ||
                s->per_job > s->servers)
                return false;
        } else if (s->kind == LG_MVA_BATCH) {
            if (!isfinite(s->batch) || !(s->batch >= 1))
                return false;
        } else if (s->kind != LG_MVA_DELAY && s->kind != LG_MVA_QUEUE) {
            return false;
        }
        total += s->demand_s;
    }
    return total > 0;
}

int lg_mva_solve(const struct lg_mva_station *st, size_t nst, double z_s, unsigned n,
                 struct lg_mva_point *curve, double *q)
{
    double *x;
    double *r;

    if (!valid(st, nst, z_s, n) || (n > 0 && curve == NULL))
        return -1;
    if (n == 0) {
        if (q != NULL)
            memset(q, 0, nst * sizeof(*q));
        return 0;
    }
    x = xcalloc(n, sizeof(*x));
    r = xcalloc(n, sizeof(*r));
    solve(st, nst, z_s, n, x, r, q);
    for (unsigned i = 0; i < n; i++) {
        curve[i].x = x[i];
        curve[i].r_s = r[i];
    }
    free(x);
    free(r);
    return 0;
}
