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

#define LG_FIXPOINT_STEPS 40 /* bisection steps of the layered model (X to 1e-10, phi to 1e-7) */

/*
 * The demands of one point. Hardware: CPU in core-seconds, queues in seconds, per request.
 * Software: per station, the seconds its threads run (or wait for a core) and are blocked per
 * request, summed over its threads, and the running time without the wait for a core.
 */
struct dem {
    double cpu_s;
    unsigned nq;
    char name[LG_MODEL_MAX_QUEUES][LG_RES_NAME];
    double q_s[LG_MODEL_MAX_QUEUES];
    unsigned nsw;
    char swname[LG_MODEL_MAX_SW][sizeof(((struct lg_model_sw *)0)->name)];
    unsigned k[LG_MODEL_MAX_SW];
    bool pinned[LG_MODEL_MAX_SW];
    double run_s[LG_MODEL_MAX_SW]; /* as measured */
    double r0_s[LG_MODEL_MAX_SW];  /* run_s / s(U) at the point */
    double blk_s[LG_MODEL_MAX_SW];
    bool batch[LG_MODEL_MAX_SW];
    double bcpu_s[LG_MODEL_MAX_SW]; /* batch stations: CPU per request; NAN: unknown */
    double bsize[LG_MODEL_MAX_SW];  /* batch stations: requests per cycle (1 unless set) */
    double wcpu_s; /* CPU of loadgen and the watched processes per request; 0: unknown */
    double u_other; /* the machine's CPU beyond that, 0..1 of all cores (model.h) */
};

enum net_kind {
    NET_HW,        /* the hardware model */
    NET_MEASURED,  /* layered, as measured at the point (the base point's fixed delay, phi) */
    NET_STRETCHED, /* layered, the wait for a core modelled at the predicted X */
};

struct net {
    enum net_kind kind;
    const struct dem *d;
    unsigned ncpu;
    double per_job;    /* hardware: c */
    double phi;        /* layered: the share of a station's busy time on a request's path */
    const unsigned *k; /* layered: threads per station (d's when NULL) */
};

static int sw_index(const struct dem *d, const char *name);

static bool usable(const struct lg_model_obs *p)
{
    return p->n > 0 && p->x > 0 && isfinite(p->x) && isfinite(p->r_s) && p->r_s >= 0 &&
           isfinite(p->cpu_util) && p->cpu_util >= 0;
}

/*
 * The residence per unit of demand of an m-server queue at utilisation u (M/M/m): 1 + C / (m
 * (1 - u)), C the Erlang C probability of waiting, from the Erlang B recursion (stable for
 * any m). INFINITY at u >= 1.
 */
static double stretch(unsigned m, double u)
{
    double a = m * u;
    double b = 1;
    double c;

    if (!(u > 0))
        return 1;
    if (u >= 1)
        return INFINITY;
    for (unsigned j = 1; j <= m; j++)
        b = a * b / (j + a * b);
    c = b / (1 - u * (1 - b));
    return 1 + c / (m * (1 - u));
}

static void demands(const struct lg_model_obs *p, unsigned ncpu, struct dem *d)
{
    double u;
    double s;

    memset(d, 0, sizeof(*d));
    d->cpu_s = ncpu * p->cpu_util / p->x;
    for (unsigned i = 0; i < p->nq && i < LG_MODEL_MAX_QUEUES; i++) {
        if (!isfinite(p->qutil[i]) || p->qutil[i] < 0)
            continue;
        snprintf(d->name[d->nq], LG_RES_NAME, "%s", p->qname[i]);
        d->q_s[d->nq++] = p->qutil[i] / p->x;
    }
    d->wcpu_s = isfinite(p->cpu_watched) && p->cpu_watched > 0 ? p->cpu_watched / p->x : 0;
    u = d->wcpu_s * p->x / ncpu;
    d->u_other = d->wcpu_s > 0 ? fmax(0, p->cpu_util - u) : 0;
    u = fmin(u + d->u_other, 0.99); /* at 100% the stretch says nothing */
    s = stretch(ncpu, u);
    for (unsigned i = 0; i < p->nsw && i < LG_MODEL_MAX_SW; i++) {
        const struct lg_model_sw *w = &p->sw[i];
        if (!isfinite(w->run) || !isfinite(w->blocked) || w->run < 0 || w->blocked < 0)
            continue;
        snprintf(d->swname[d->nsw], sizeof(d->swname[d->nsw]), "%s", w->name);
        d->k[d->nsw] = w->k > 0 ? w->k : 1;
        d->pinned[d->nsw] = w->pinned;
        d->run_s[d->nsw] = w->run / p->x;
        d->r0_s[d->nsw] = w->run / p->x / s;
        d->blk_s[d->nsw] = w->blocked / p->x;
        d->batch[d->nsw] = w->batch && d->k[d->nsw] == 1;
        d->bcpu_s[d->nsw] = isfinite(w->cpu) && w->cpu > 0 ? w->cpu / p->x : NAN;
        d->bsize[d->nsw] = 1;
        d->nsw++;
    }
}

static size_t hw_stations(const struct dem *d, unsigned ncpu, double per_job,
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

/*
 * The upper layer at throughput x: station p's threads are held h_p = run_p + b_p per request
 * (run_p = s(x D_cpu / m + U_other) r_p when the wait for a core is modelled). phi h_p of it
 * lies on the request's path; the rest keeps the threads busy beside it, so the path part is
 * served by what that leaves: demand phi h_p / (1 - x (1 - phi) h_p / k), which saturates the
 * station at x = k / h_p whatever phi is. A pinned pool is k single servers, each with 1/k of
 * the demand (a request visits one of them); a shared one a k-server centre, or, beyond
 * LG_MVA_MAX_MULTI of them or when the k queues would not fit, one server k times as fast.
 * Returns the number of stations, or -1 when x is beyond a station's capacity or the CPU's
 * (s infinite).
 */
static int sw_stations(const struct net *nt, double x, struct lg_mva_station *st)
{
    const struct dem *d = nt->d;
    unsigned nmulti = 0;
    double s = 1;
    int n = 0;

    if (nt->kind == NET_STRETCHED && d->wcpu_s > 0)
        s = stretch(nt->ncpu, x * d->wcpu_s / nt->ncpu + d->u_other);
    if (!isfinite(s))
        return -1;
    for (unsigned i = 0; i < d->nsw; i++) {
        unsigned k = nt->k != NULL ? nt->k[i] : d->k[i];
        double run = nt->kind == NET_STRETCHED ? s * d->r0_s[i] : d->run_s[i];
        double h = run + d->blk_s[i];
        double left = 1 - x * (1 - nt->phi) * h / k;
        if (!(h > 0))
            continue;
        if (!(left > 0))
            return -1;
        h = nt->phi * h / left;
        if (d->batch[i]) {
            st[n++] = (struct lg_mva_station){
                .kind = LG_MVA_BATCH, .demand_s = h, .batch = d->bsize[i]};
        } else if (k > 1 && d->pinned[i] && n + k + (d->nsw - i - 1) <= LG_MVA_MAX_STATIONS) {
            for (unsigned j = 0; j < k; j++)
                st[n++] = (struct lg_mva_station){.kind = LG_MVA_QUEUE, .demand_s = h / k};
        } else if (k > 1 && nmulti < LG_MVA_MAX_MULTI) {
            st[n++] = (struct lg_mva_station){
                .kind = LG_MVA_MULTI, .demand_s = h, .servers = k, .per_job = 1};
            nmulti++;
        } else {
            st[n++] = (struct lg_mva_station){.kind = LG_MVA_QUEUE, .demand_s = h / k};
        }
    }
    return n;
}

/*
 * The requests per cycle of d's batch stations: the CPU per request of the same station in
 * base (where a cycle holds one request) over d's, at least 1 (model.h).
 */
static void batch_sizes(const struct dem *base, struct dem *d)
{
    for (unsigned i = 0; i < d->nsw; i++) {
        int j;
        d->bsize[i] = 1;
        if (!d->batch[i] || (j = sw_index(base, d->swname[i])) < 0)
            continue;
        if (base->bcpu_s[j] > 0 && d->bcpu_s[i] > 0)
            d->bsize[i] = fmax(1, base->bcpu_s[j] / d->bcpu_s[i]);
    }
}

/* X and the residence at population n of the network at assumed throughput xa; -1 if invalid. */
static int mva_at(const struct net *nt, double xa, double delay_s, unsigned n, double *x,
                  double *r)
{
    struct lg_mva_station st[LG_MVA_MAX_STATIONS];
    struct lg_mva_point *c;
    int nst = nt->kind == NET_HW ? (int)hw_stations(nt->d, nt->ncpu, nt->per_job, st)
                                 : sw_stations(nt, xa, st);
    int rc;

    if (nst < 0)
        return -1;
    c = xcalloc(n, sizeof(*c));
    rc = lg_mva_solve(st, (size_t)nst, delay_s, n, c, NULL);
    if (rc == 0) {
        *x = c[n - 1].x;
        *r = c[n - 1].r_s;
    }
    free(c);
    return rc;
}

/*
 * X and the residence (fixed delay excluded) at population n; -1 if the network is invalid.
 * The layered model's demands grow with X (the wait for a core, the busy time beside the
 * path), and MVA's X falls as they grow: the fixed point X = MVA(X) is unique, found by
 * bisection between 0 and X at no load.
 */
static int solve_at(const struct net *nt, double delay_s, unsigned n, double *x, double *r)
{
    double lo = 0, hi, xs, rs;

    if (nt->kind != NET_HW && n > LG_MODEL_LAYERED_MAX_N)
        return -1;
    if (mva_at(nt, 0, delay_s, n, &hi, &rs) < 0)
        return -1;
    if (nt->kind == NET_HW || (nt->kind == NET_MEASURED && nt->phi >= 1)) {
        *x = hi;
        *r = rs;
        return 0;
    }
    for (int i = 0; i < LG_FIXPOINT_STEPS && hi - lo > 1e-10 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (mva_at(nt, mid, delay_s, n, &xs, &rs) == 0 && xs > mid)
            lo = mid;
        else
            hi = mid;
    }
    return mva_at(nt, lo, delay_s, n, x, r);
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
                    const struct net *nt, unsigned i, struct lg_model_pred *pr)
{
    const struct lg_model_obs *p = &in->pts[i];
    double x, r;

    pr->x = pr->r_s = pr->err = NAN;
    if (solve_at(nt, in->z_s + out->fixed_s, p->n, &x, &r) < 0)
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

/* The stations of the layered model: the base point's, with the most threads any point had. */
static void sw_of(const struct lg_model_in *in, const struct lg_model_obs *b,
                  struct lg_model_out *out)
{
    out->nsw = 0;
    for (unsigned i = 0; i < b->nsw && i < LG_MODEL_MAX_SW; i++) {
        struct lg_model_sw *s = &out->sw[out->nsw++];
        *s = b->sw[i];
        for (unsigned p = 0; p < in->npts; p++)
            for (unsigned j = 0; j < in->pts[p].nsw; j++)
                if (strcmp(in->pts[p].sw[j].name, s->name) == 0 && in->pts[p].sw[j].k > s->k)
                    s->k = in->pts[p].sw[j].k;
        if (s->k == 0)
            s->k = 1;
    }
}

/* The threads of each station of d as the model uses them for every N. */
static void kmax_of(const struct lg_model_out *out, const struct dem *d, unsigned *k)
{
    for (unsigned i = 0; i < d->nsw; i++) {
        k[i] = d->k[i];
        for (unsigned j = 0; j < out->nsw; j++)
            if (strcmp(out->sw[j].name, d->swname[i]) == 0)
                k[i] = out->sw[j].k;
    }
}

/*
 * The stations' busy time at the base point is more than its response time: threads are busy
 * beside the request (a loop finishing its turn while the next process works on the request,
 * kernel work after a send). phi, the share on the path, is the one whose residence gives R
 * back (residence grows with phi: bisection).
 */
static double path_share(const struct net *base, double z_s, const struct lg_model_obs *b)
{
    struct net nt = *base;
    double lo = 0, hi = 1, x, r;

    for (int i = 0; i < LG_FIXPOINT_STEPS && hi - lo > 1e-7; i++) {
        nt.phi = (lo + hi) / 2;
        if (solve_at(&nt, z_s, b->n, &x, &r) == 0 && r < b->r_s)
            lo = nt.phi;
        else
            hi = nt.phi;
    }
    return (lo + hi) / 2;
}

void lg_model_fit(const struct lg_model_in *in, struct lg_model_out *out)
{
    const struct lg_model_obs *b;
    struct dem db, di;
    unsigned kmax[LG_MODEL_MAX_SW];
    struct net nb, ni;
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
    /* a base point beyond the layered model's limit: the hardware model */
    out->layered = !in->hardware_only && db.nsw > 0 && b->n <= LG_MODEL_LAYERED_MAX_N;
    if (out->layered)
        sw_of(in, b, out);
    kmax_of(out, &db, kmax);
    nb = (struct net){.kind = out->layered ? NET_MEASURED : NET_HW, .d = &db, .ncpu = in->ncpu,
                      .per_job = out->per_job, .phi = 1};
    if (solve_at(&nb, in->z_s, b->n, &x, &r) < 0) {
        snprintf(out->why, sizeof(out->why), "no demand and no think time at N = %u", b->n);
        return;
    }
    out->phi = 1;
    out->fixed_s = fmax(0, b->r_s - r);
    if (out->layered && r > b->r_s)
        out->phi = path_share(&nb, in->z_s, b);
    nb.phi = out->phi;
    out->ok = true;
    if (out->layered) {
        nb.kind = NET_STRETCHED;
        nb.k = kmax;
    }
    for (unsigned i = 0; i < in->npts; i++) {
        if (!usable(&in->pts[i]))
            continue;
        demands(&in->pts[i], in->ncpu, &di);
        ni = (struct net){.kind = out->layered ? NET_STRETCHED : NET_HW, .d = &di,
                          .ncpu = in->ncpu, .per_job = out->per_job, .phi = out->phi};
        if (out->layered && di.nsw == 0)
            continue; /* no thread samples at this point */
        batch_sizes(&db, &di);
        predict(in, out, &nb, i, &out->n1[i]);
        predict(in, out, &ni, i, &out->pern[i]);
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

static int sw_index(const struct dem *d, const char *name)
{
    for (unsigned i = 0; i < d->nsw; i++)
        if (strcmp(d->swname[i], name) == 0)
            return (int)i;
    return -1;
}

/*
 * The demands at n, fitted between the base point's (d1, n1) and the second's (d2, n2). The
 * layered model's stations are the base point's; one the second point lacks has no demand there.
 */
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
    out->wcpu_s = fit_d(d1->wcpu_s, n1, d2->wcpu_s, n2, n);
    out->u_other = d1->u_other;
    for (unsigned i = 0; i < d1->nsw; i++) {
        int j = sw_index(d2, d1->swname[i]);
        snprintf(out->swname[out->nsw], sizeof(out->swname[out->nsw]), "%s", d1->swname[i]);
        out->k[out->nsw] = d1->k[i];
        out->pinned[out->nsw] = d1->pinned[i];
        out->r0_s[out->nsw] = fit_d(d1->r0_s[i], n1, j >= 0 ? d2->r0_s[j] : 0, n2, n);
        out->blk_s[out->nsw] = fit_d(d1->blk_s[i], n1, j >= 0 ? d2->blk_s[j] : 0, n2, n);
        out->run_s[out->nsw] = out->r0_s[out->nsw];
        out->batch[out->nsw] = d1->batch[i];
        out->bcpu_s[out->nsw] = j >= 0 ? fit_d(d1->bcpu_s[i], n1, d2->bcpu_s[j], n2, n) : NAN;
        out->bsize[out->nsw] = 1;
        out->nsw++;
    }
}

/* What a curve is computed from. */
struct curve_ctx {
    const struct lg_model_in *in;
    const struct lg_model_out *fit;
    struct dem d1, d2;
    unsigned kmax[LG_MODEL_MAX_SW];
    unsigned n1, n2;
};

/* The point of one curve at population n (fitted demands or the base point's). */
static void curve_at(const struct curve_ctx *cx, bool fitted_d, unsigned n, struct lg_mva_point *pt)
{
    const struct lg_model_out *f = cx->fit;
    struct dem dn;
    struct net nt = {.kind = f->layered ? NET_STRETCHED : NET_HW, .d = &cx->d1, .ncpu = f->ncpu,
                     .per_job = f->per_job, .phi = f->phi, .k = f->layered ? cx->kmax : NULL};
    double x = NAN, r = NAN;

    if (fitted_d) {
        fitted(&cx->d1, cx->n1, &cx->d2, cx->n2, n, &dn);
        batch_sizes(&cx->d1, &dn);
        nt.d = &dn;
    }
    if (solve_at(&nt, cx->in->z_s + f->fixed_s, n, &x, &r) == 0)
        r += f->fixed_s;
    pt->x = x;
    pt->r_s = r;
}

static bool curve_row(unsigned n, unsigned nmax)
{
    unsigned p = 1;

    if (n <= LG_MODEL_CURVE_FULL || n == nmax)
        return true;
    while (p * 2 <= n)
        p *= 2;
    return n == p || n == p + p / 2;
}

/* Fills the rows of one curve and finds its knee (0 when there is none). */
static unsigned curve(const struct curve_ctx *cx, bool fitted_d, unsigned nmax,
                      struct lg_mva_point *c)
{
    double xmax = 0;
    unsigned lo = 0, hi = 0;

    for (unsigned n = 1; n <= nmax; n++) {
        c[n - 1].x = c[n - 1].r_s = NAN;
        if (!curve_row(n, nmax))
            continue;
        curve_at(cx, fitted_d, n, &c[n - 1]);
        if (c[n - 1].x > xmax)
            xmax = c[n - 1].x;
    }
    for (unsigned n = 1; n <= nmax && hi == 0; n++) {
        if (!isfinite(c[n - 1].x))
            continue;
        if (c[n - 1].x >= (1.0 - LG_SWEEP_TOLERANCE) * xmax && xmax > 0)
            hi = n;
        else
            lo = n;
    }
    while (hi > 0 && hi - lo > 1) { /* the rows skip some N: bisect between them */
        unsigned mid = lo + (hi - lo) / 2;
        curve_at(cx, fitted_d, mid, &c[mid - 1]);
        if (c[mid - 1].x >= (1.0 - LG_SWEEP_TOLERANCE) * xmax)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int lg_model_predict(const struct lg_model_in *in, const struct lg_model_out *fit, unsigned nmax,
                     struct lg_model_curve *c, const char **why)
{
    struct curve_ctx *cx;
    const struct lg_model_obs *b;
    double x, r;
    int s;

    memset(c, 0, sizeof(*c));
    if (!fit->ok) {
        *why = fit->why;
        return -1;
    }
    if (nmax < 1 || nmax > LG_MODEL_PREDICT_MAX) {
        *why = "the largest N must be 1..10000";
        return -1;
    }
    cx = xcalloc(1, sizeof(*cx));
    cx->in = in;
    cx->fit = fit;
    b = &in->pts[fit->base];
    s = second_point(in, fit->base);
    demands(b, fit->ncpu, &cx->d1);
    if (s >= 0)
        demands(&in->pts[s], fit->ncpu, &cx->d2);
    else
        cx->d2 = cx->d1;
    kmax_of(fit, &cx->d1, cx->kmax);
    cx->n1 = b->n;
    cx->n2 = s >= 0 ? in->pts[s].n : b->n;
    {
        struct net nt = {.kind = fit->layered ? NET_STRETCHED : NET_HW, .d = &cx->d1,
                         .ncpu = fit->ncpu, .per_job = fit->per_job, .phi = fit->phi,
                         .k = cx->kmax};
        if (solve_at(&nt, in->z_s + fit->fixed_s, 1, &x, &r) < 0) {
            free(cx);
            *why = "no demand and no think time";
            return -1;
        }
    }
    c->nmax = nmax;
    c->fit_n[0] = cx->n1;
    c->fit_n[1] = cx->n2;
    c->fit = xcalloc(nmax, sizeof(*c->fit));
    c->n1 = xcalloc(nmax, sizeof(*c->n1));
    c->knee_fit = curve(cx, true, nmax, c->fit);
    c->knee_n1 = curve(cx, false, nmax, c->n1);
    free(cx);
    return 0;
}

void lg_model_curve_release(struct lg_model_curve *c)
{
    free(c->fit);
    free(c->n1);
    c->fit = c->n1 = NULL;
}
