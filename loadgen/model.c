/*
 * model.c - see model.h.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"
#include "xalloc.h"

/* The demands of one point: CPU in core-seconds, queues in seconds, per request. */
struct dem {
    double cpu_s;
    unsigned nq;
    char name[LG_MODEL_MAX_QUEUES][LG_RES_NAME];
    double q_s[LG_MODEL_MAX_QUEUES];
};

static bool usable(const struct lg_model_obs *p)
{
    return p->n > 0 && p->x > 0 && isfinite(p->x) && isfinite(p->r_s) && p->r_s >= 0 &&
           isfinite(p->cpu_util) && p->cpu_util >= 0;
}

static void demands(const struct lg_model_obs *p, unsigned ncpu, struct dem *d)
{
    memset(d, 0, sizeof(*d));
    d->cpu_s = ncpu * p->cpu_util / p->x;
    for (unsigned i = 0; i < p->nq && i < LG_MODEL_MAX_QUEUES; i++) {
        if (!isfinite(p->qutil[i]) || p->qutil[i] < 0)
            continue;
        snprintf(d->name[d->nq], LG_RES_NAME, "%s", p->qname[i]);
        d->q_s[d->nq++] = p->qutil[i] / p->x;
    }
}

static size_t stations(const struct dem *d, unsigned ncpu, double per_job,
                       struct lg_mva_station *st)
{
    size_t n = 0;

    st[n++] = (struct lg_mva_station){
        .kind = LG_MVA_MULTI, .demand_s = d->cpu_s, .servers = ncpu, .per_job = per_job};
    for (unsigned i = 0; i < d->nq; i++)
        if (d->q_s[i] > 0)
            st[n++] = (struct lg_mva_station){.kind = LG_MVA_QUEUE, .demand_s = d->q_s[i]};
    return n;
}

/* X and the residence (fixed delay excluded) at population n; -1 if the network is invalid. */
static int solve_at(const struct dem *d, unsigned ncpu, double per_job, double delay_s,
                    unsigned n, double *x, double *r)
{
    struct lg_mva_station st[LG_MVA_MAX_STATIONS];
    struct lg_mva_point *c = xcalloc(n, sizeof(*c));
    size_t nst = stations(d, ncpu, per_job, st);
    int rc = lg_mva_solve(st, nst, delay_s, n, c, NULL);

    if (rc == 0) {
        *x = c[n - 1].x;
        *r = c[n - 1].r_s;
    }
    free(c);
    return rc;
}

static int base_point(const struct lg_model_in *in)
{
    int best = -1;

    for (unsigned i = 0; i < in->npts; i++)
        if (usable(&in->pts[i]) && (best < 0 || in->pts[i].n < in->pts[best].n))
            best = (int)i;
    return best;
}

static void predict(const struct lg_model_in *in, const struct lg_model_out *out,
                    const struct dem *d, unsigned i, struct lg_model_pred *pr)
{
    const struct lg_model_obs *p = &in->pts[i];
    double x, r;

    pr->x = pr->r_s = pr->err = NAN;
    if (solve_at(d, out->ncpu, out->per_job, in->z_s + out->fixed_s, p->n, &x, &r) < 0)
        return;
    pr->x = x;
    pr->r_s = r + out->fixed_s;
    pr->err = x / p->x - 1;
}

/* Index of the knee among the points with a prediction (the 5% rule of sweep.h), or -1. */
static int knee_of(const struct lg_model_in *in, const struct lg_model_pred *pr)
{
    struct lg_sweep_pt *sp = xcalloc(in->npts + 1, sizeof(*sp));
    int *idx = xcalloc(in->npts + 1, sizeof(*idx));
    size_t n = 0;
    int k;

    for (unsigned i = 0; i < in->npts; i++) {
        if (!isfinite(pr[i].x))
            continue;
        sp[n].n = in->pts[i].n;
        sp[n].x = pr[i].x;
        idx[n++] = (int)i;
    }
    k = lg_sweep_nstar(sp, n);
    k = k >= 0 ? idx[k] : -1;
    free(sp);
    free(idx);
    return k;
}

static int measured_nstar(const struct lg_model_in *in)
{
    struct lg_sweep_pt *sp = xcalloc(in->npts + 1, sizeof(*sp));
    int k;

    for (unsigned i = 0; i < in->npts; i++) {
        sp[i].n = in->pts[i].n;
        sp[i].x = in->pts[i].x;
    }
    k = lg_sweep_nstar(sp, in->npts);
    free(sp);
    return k;
}

void lg_model_fit(const struct lg_model_in *in, struct lg_model_out *out)
{
    const struct lg_model_obs *b;
    struct dem db, di;
    double x, r;

    memset(out, 0, sizeof(*out));
    out->base = out->knee_n1 = out->knee_pern = out->nstar = -1;
    out->n1 = xcalloc(in->npts + 1, sizeof(*out->n1));
    out->pern = xcalloc(in->npts + 1, sizeof(*out->pern));
    for (unsigned i = 0; i < in->npts; i++) {
        out->n1[i].x = out->n1[i].r_s = out->n1[i].err = NAN;
        out->pern[i] = out->n1[i];
    }
    out->nstar = measured_nstar(in);
    if (in->ncpu == 0 || in->ncpu > LG_MVA_MAX_SERVERS) {
        snprintf(out->why, sizeof(out->why), "the machine's core count is unknown");
        return;
    }
    out->ncpu = in->ncpu;
    out->base = base_point(in);
    if (out->base < 0) {
        snprintf(out->why, sizeof(out->why), "no point with throughput and CPU samples");
        return;
    }
    b = &in->pts[out->base];
    demands(b, in->ncpu, &db);
    out->per_job = b->r_s > 0 ? db.cpu_s / b->r_s : 1;
    out->per_job = fmin(fmax(out->per_job, 1), in->ncpu);
    if (solve_at(&db, in->ncpu, out->per_job, in->z_s, b->n, &x, &r) < 0) {
        snprintf(out->why, sizeof(out->why), "no demand and no think time at N = %u", b->n);
        return;
    }
    out->fixed_s = fmax(0, b->r_s - r);
    out->ok = true;
    for (unsigned i = 0; i < in->npts; i++) {
        if (!usable(&in->pts[i]))
            continue;
        demands(&in->pts[i], in->ncpu, &di);
        predict(in, out, &db, i, &out->n1[i]);
        predict(in, out, &di, i, &out->pern[i]);
        if (!isfinite(out->pern[i].x) || !isfinite(out->n1[i].x))
            continue;
        out->npred++;
        out->within_n1 += fabs(out->n1[i].err) <= LG_MODEL_WITHIN;
        out->within_pern += fabs(out->pern[i].err) <= LG_MODEL_WITHIN;
    }
    out->knee_n1 = knee_of(in, out->n1);
    out->knee_pern = knee_of(in, out->pern);
}

void lg_model_release(struct lg_model_out *out)
{
    free(out->n1);
    free(out->pern);
    out->n1 = out->pern = NULL;
}

bool lg_model_knee_ok(unsigned knee, unsigned nstar)
{
    return knee > 0 && nstar > 0 && fabs((double)knee / nstar - 1) <= LG_MODEL_KNEE_WITHIN;
}

/* ---- planning curve ----------------------------------------------------------------------- */

/* The point paired with the base for the fit: N = 4, else the smallest N above the base. */
static int second_point(const struct lg_model_in *in, int base)
{
    int best = -1;
    unsigned nb = in->pts[base].n;

    for (unsigned i = 0; i < in->npts; i++) {
        const struct lg_model_obs *p = &in->pts[i];
        if ((int)i == base || !usable(p) || p->n <= nb)
            continue;
        if (p->n == 4)
            return (int)i;
        if (best < 0 || p->n < in->pts[best].n)
            best = (int)i;
    }
    return best;
}

/*
 * D(n) = a + b / n through (n1, d1) and (n2, d2). When a < 0 (the demand falls faster than
 * 1 / n between the points), beyond n2 all of it is taken as shared: D(n) = d2 n2 / n.
 */
static double fit_d(double d1, unsigned n1, double d2, unsigned n2, unsigned n)
{
    double b, a, v;

    if (n1 == n2)
        return d1;
    b = (d1 - d2) / (1.0 / n1 - 1.0 / n2);
    a = d1 - b / n1;
    if (a < 0 && n > n2)
        return d2 * n2 / n;
    v = a + b / n;
    return v > 0 ? v : 0;
}

static int q_index(const struct dem *d, const char *name)
{
    for (unsigned i = 0; i < d->nq; i++)
        if (strcmp(d->name[i], name) == 0)
            return (int)i;
    return -1;
}

static double q_of(const struct dem *d, const char *name)
{
    int i = q_index(d, name);

    return i >= 0 ? d->q_s[i] : 0;
}

/* The demands at n, fitted between the base point's (d1, n1) and the second's (d2, n2). */
static void fitted(const struct dem *d1, unsigned n1, const struct dem *d2, unsigned n2,
                   unsigned n, struct dem *out)
{
    memset(out, 0, sizeof(*out));
    out->cpu_s = fit_d(d1->cpu_s, n1, d2->cpu_s, n2, n);
    for (unsigned i = 0; i < d1->nq; i++) {
        snprintf(out->name[out->nq], LG_RES_NAME, "%s", d1->name[i]);
        out->q_s[out->nq++] = fit_d(d1->q_s[i], n1, q_of(d2, d1->name[i]), n2, n);
    }
    for (unsigned i = 0; i < d2->nq && out->nq < LG_MODEL_MAX_QUEUES; i++) {
        if (q_index(out, d2->name[i]) >= 0)
            continue;
        snprintf(out->name[out->nq], LG_RES_NAME, "%s", d2->name[i]);
        out->q_s[out->nq++] = fit_d(0, n1, d2->q_s[i], n2, n);
    }
}

static unsigned curve_knee(const struct lg_mva_point *c, unsigned n)
{
    struct lg_sweep_pt *sp = xcalloc(n, sizeof(*sp));
    int k;

    for (unsigned i = 0; i < n; i++) {
        sp[i].n = i + 1;
        sp[i].x = c[i].x;
    }
    k = lg_sweep_nstar(sp, n);
    free(sp);
    return k >= 0 ? (unsigned)k + 1 : 0;
}

int lg_model_predict(const struct lg_model_in *in, const struct lg_model_out *fit, unsigned nmax,
                     struct lg_model_curve *c, const char **why)
{
    struct lg_mva_station st[LG_MVA_MAX_STATIONS];
    struct dem d1, d2, dn;
    const struct lg_model_obs *b;
    int s;
    size_t nst;

    memset(c, 0, sizeof(*c));
    if (!fit->ok) {
        *why = fit->why;
        return -1;
    }
    if (nmax < 1 || nmax > LG_MODEL_PREDICT_MAX) {
        *why = "the largest N must be 1..10000";
        return -1;
    }
    b = &in->pts[fit->base];
    s = second_point(in, fit->base);
    demands(b, fit->ncpu, &d1);
    if (s >= 0)
        demands(&in->pts[s], fit->ncpu, &d2);
    else
        d2 = d1;
    c->nmax = nmax;
    c->fit_n[0] = b->n;
    c->fit_n[1] = s >= 0 ? in->pts[s].n : b->n;
    c->fit = xcalloc(nmax, sizeof(*c->fit));
    c->n1 = xcalloc(nmax, sizeof(*c->n1));
    nst = stations(&d1, fit->ncpu, fit->per_job, st);
    if (lg_mva_solve(st, nst, in->z_s + fit->fixed_s, nmax, c->n1, NULL) < 0) {
        lg_model_curve_release(c);
        *why = "no demand and no think time";
        return -1;
    }
    for (unsigned n = 1; n <= nmax; n++) {
        double x = NAN, r = NAN;
        c->n1[n - 1].r_s += fit->fixed_s;
        fitted(&d1, c->fit_n[0], &d2, c->fit_n[1], n, &dn);
        if (solve_at(&dn, fit->ncpu, fit->per_job, in->z_s + fit->fixed_s, n, &x, &r) == 0)
            r += fit->fixed_s;
        c->fit[n - 1].x = x;
        c->fit[n - 1].r_s = r;
    }
    c->knee_fit = curve_knee(c->fit, nmax);
    c->knee_n1 = curve_knee(c->n1, nmax);
    return 0;
}

void lg_model_curve_release(struct lg_model_curve *c)
{
    free(c->fit);
    free(c->n1);
    c->fit = c->n1 = NULL;
}
