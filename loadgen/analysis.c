/*
 * analysis.c - see analysis.h.
 */
#include "analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "sweep.h"
#include "xalloc.h"

void lg_figures_of(const struct lg_stats *s, double window_s, struct lg_figures *f)
{
    memset(f, 0, sizeof(*f));
    f->ok = s->ok;
    f->errors = lg_stats_errors(s);
    if (window_s > 0) {
        f->x = (double)s->ok / window_s;
        f->body_Bps = (double)s->body_bytes / window_s;
    }
    f->r_mean_s = hist_mean(&s->lat) / 1e9;
    f->p50_s = (double)hist_percentile(&s->lat, 50) / 1e9;
    f->p90_s = (double)hist_percentile(&s->lat, 90) / 1e9;
    f->p99_s = (double)hist_percentile(&s->lat, 99) / 1e9;
    f->p999_s = (double)hist_percentile(&s->lat, 99.9) / 1e9;
    f->max_s = (double)(s->lat.count ? s->lat.max : 0) / 1e9;
}

static void add_res(struct lg_point_analysis *pa, const char *name, double util, bool lg)
{
    struct lg_resource *r;

    if (pa->nres >= LG_ANA_RES)
        return;
    r = &pa->res[pa->nres++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->util = util;
    r->is_loadgen = lg;
}

static void resources(const struct lg_point *p, struct lg_point_analysis *pa)
{
    const struct lg_monitor_result *m = &p->mon;
    char name[LG_RES_NAME];
    double top = 0;

    pa->top_proc = -1;
    if (m->nsamples < 2 || m->window_s <= 0)
        return;
    add_res(pa, "cpu", m->machine_cpu, false);
    for (unsigned i = 0; i < m->nprocs; i++) {
        const struct lg_proc_usage *u = &m->procs[i];
        if (u->nproc == 0)
            continue;
        snprintf(name, sizeof(name), "cpu:%s", u->name);
        add_res(pa, name, u->cpu_cores / u->capacity, u->is_loadgen);
        if (u->cpu_cores > top) {
            top = u->cpu_cores;
            pa->top_proc = (int)i;
        }
    }
    for (unsigned i = 0; i < m->ndisks; i++) {
        snprintf(name, sizeof(name), "disk:%s", m->disks[i].name);
        add_res(pa, name, m->disks[i].util, false);
    }
    if (m->redis_ok)
        add_res(pa, "redis", m->redis_util, false);
}

static double loadgen_cores(const struct lg_monitor_result *m)
{
    for (unsigned i = 0; i < m->nprocs; i++)
        if (m->procs[i].is_loadgen)
            return m->procs[i].cpu_cores;
    return 0;
}

/* The software stations of a point the model uses: the sampled ones that are not nested. */
static void model_sw(const struct lg_monitor_result *m, struct lg_model_obs *o)
{
    o->cpu_watched = NAN;
    if (m->nsamples >= 2 && m->window_s > 0) {
        o->cpu_watched = 0;
        for (unsigned i = 0; i < m->nprocs; i++)
            o->cpu_watched += m->procs[i].cpu_cores;
    }
    for (unsigned i = 0; i < m->sw.nst && o->nsw < LG_MODEL_MAX_SW; i++) {
        const struct lg_sw_station *s = &m->sw.st[i];
        struct lg_model_sw *w;
        if (s->nested)
            continue;
        w = &o->sw[o->nsw++];
        snprintf(w->name, sizeof(w->name), "%s", s->name);
        w->k = s->threads;
        w->pinned = s->pinned;
        w->batch = lg_sw_is_batch(s->name);
        w->run = s->run;
        w->blocked = s->blocked;
        w->cpu = s->cpu_cores;
    }
}

/* The model's view of point i: N, X, R, the machine's CPU, the disks, Redis, the stations. */
static void model_obs(const struct lg_run *run, const struct lg_run_analysis *a, unsigned i,
                      struct lg_model_obs *o)
{
    const struct lg_point_analysis *pa = &a->pts[i];

    memset(o, 0, sizeof(*o));
    model_sw(&run->points[i].mon, o);
    o->n = run->points[i].users;
    o->x = pa->f[LG_REQ_ALL].x;
    o->r_s = pa->f[LG_REQ_ALL].r_mean_s;
    o->cpu_util = NAN;
    for (unsigned r = 0; r < pa->nres; r++) {
        const struct lg_resource *res = &pa->res[r];
        if (strcmp(res->name, "cpu") == 0) {
            o->cpu_util = res->util;
        } else if ((strncmp(res->name, "disk:", 5) == 0 || strcmp(res->name, "redis") == 0) &&
                   o->nq < LG_MODEL_MAX_QUEUES) {
            snprintf(o->qname[o->nq], LG_RES_NAME, "%s", res->name);
            o->qutil[o->nq++] = res->util;
        }
    }
}

/* The sweep's queueing model (closed loop: an open loop has no population to solve for). */
static void model(const struct lg_run *run, struct lg_run_analysis *a)
{
    struct lg_model_obs *obs = xcalloc(run->npoints + 1, sizeof(*obs));
    struct lg_model_in in = {.z_s = a->z_s, .pts = obs, .npts = run->npoints};

    for (unsigned i = 0; i < run->npoints; i++) {
        model_obs(run, a, i, &obs[i]);
        if (in.ncpu == 0 && run->points[i].mon.nsamples >= 2)
            in.ncpu = run->points[i].mon.ncpu;
    }
    if (a->closed_loop) {
        lg_model_fit(&in, &a->model);
    } else {
        memset(&a->model, 0, sizeof(a->model));
        snprintf(a->model.why, sizeof(a->model.why), "open loop");
        a->model.base = a->model.knee_n1 = a->model.knee_pern = a->model.nstar = -1;
    }
    free(obs);
}

void lg_analyze(const struct lg_run *run, struct lg_run_analysis *a)
{
    const struct lg_config *cfg = run->cfg;
    struct lg_sweep_pt *sp = xcalloc(run->npoints + 1, sizeof(*sp));
    double xmax = -1;
    double rmin = INFINITY;
    bool have_r1 = false;

    memset(a, 0, sizeof(*a));
    a->npts = run->npoints;
    a->pts = xcalloc(run->npoints + 1, sizeof(*a->pts));
    a->closed_loop = cfg->rate <= 0;
    a->z_s = (double)cfg->think_us / 1e6;
    a->xmax = -1;
    a->nstar = -1;

    for (unsigned i = 0; i < run->npoints; i++) {
        const struct lg_point *p = &run->points[i];
        struct lg_point_analysis *pa = &a->pts[i];
        const struct lg_figures *all;

        for (int t = 0; t <= LG_REQ_ALL; t++)
            lg_figures_of(&p->st[t], p->window_s, &pa->f[t]);
        all = &pa->f[LG_REQ_ALL];
        if (a->closed_loop) {
            pa->little_n = lg_little_n(all->x, all->r_mean_s, a->z_s);
            pa->little_rel = lg_little_rel_diff(p->users, all->x, all->r_mean_s, a->z_s);
        } else {
            pa->little_n = lg_little_n(all->x, all->r_mean_s, 0);
        }
        pa->window_goal_s =
            lg_window_goal_s(all->ok + all->errors, all->r_mean_s, a->z_s, p->window_s);
        pa->window_rule = lg_window_rule_of(p->window_s, p->window_max_s, all->ok + all->errors,
                                            all->r_mean_s, a->z_s);
        resources(p, pa);
        lg_demands(pa->res, pa->nres, all->x);
        pa->bottleneck = lg_bottleneck(pa->res, pa->nres);
        if (pa->bottleneck >= 0) {
            const struct lg_resource *b = &pa->res[pa->bottleneck];
            pa->dmax_s = b->demand_s;
            pa->lg_bottleneck =
                b->is_loadgen || (strcmp(b->name, "cpu") == 0 &&
                                  loadgen_cores(&p->mon) * 2 > p->mon.machine_cpu * p->mon.ncpu);
        }
        lg_attrib_outside(&p->mon, &pa->outside_cores, &pa->outside_share);
        pa->not_stack = pa->bottleneck >= 0 &&
                        lg_attrib_not_stack(pa->res[pa->bottleneck].name, pa->outside_share);
        sp[i].n = p->users;
        sp[i].x = all->x;
        if (all->x > xmax) {
            xmax = all->x;
            a->xmax = (int)i;
        }
        if (all->ok > 0 && all->r_mean_s < rmin)
            rmin = all->r_mean_s;
        if (p->users == 1 && all->ok > 0 && !have_r1) {
            have_r1 = true;
            a->d_s = all->r_mean_s;
        }
    }
    if (have_r1) {
        a->d_source = "R(1)";
    } else {
        a->d_source = "min R";
        a->d_s = isfinite(rmin) ? rmin : 0;
    }
    for (unsigned i = 0; i < run->npoints; i++) {
        struct lg_point_analysis *pa = &a->pts[i];
        if (a->closed_loop) {
            lg_bounds(run->points[i].users, a->d_s, a->z_s, pa->dmax_s, &pa->bounds);
        } else {
            /* the bounds are laws of a closed system: nothing to say about an open one */
            pa->bounds.x_upper = NAN;
            pa->bounds.r_lower_s = NAN;
        }
    }
    if (a->closed_loop)
        a->nstar = lg_sweep_nstar(sp, run->npoints);
    if (a->xmax >= 0)
        a->knee_law = lg_knee(a->d_s, a->z_s, a->pts[a->xmax].dmax_s);
    free(sp);
    model(run, a);
}

void lg_analysis_release(struct lg_run_analysis *a)
{
    lg_model_release(&a->model);
    free(a->pts);
    a->pts = NULL;
}
