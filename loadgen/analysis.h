/*
 * analysis.h - turns a run's raw points into the figures the reports print: throughput X,
 * response time R (mean and percentiles), errors, Little's-law check with the window's rule
 * (window.h: the window it asks for, and whether it held), the resources with their
 * utilization U and demand D = U / X, the bottleneck (largest D), the asymptotic bounds, and
 * the CPU used outside the watched processes and whether the stack is the bottleneck at all
 * (attrib.h), for the sweep N*, R at N*, X max, the textbook law N*_law = (D + Z) / D_max, and the
 * queueing model of the sweep (model.h: exact MVA, its predicted X, R and knee beside the
 * measured ones, from the demands of N = 1 and from each point's own).
 * D (the demand of one request with no queueing) is R measured at N = 1 when the run has that
 * point (always so for --sweep auto), otherwise the smallest measured R, an overestimate.
 * D_max for N*_law is taken at the point of maximum throughput, where demands are measured
 * at the highest utilization. N*_law assumes one server, demands that do not change with N and
 * no latency outside the resources: it misses the knee by far on a 2-core machine whose
 * servers batch (docs/design/model.md). Pure computation over struct lg_run; no I/O.
 */
#ifndef LG_ANALYSIS_H
#define LG_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "laws.h"
#include "model.h"
#include "run.h"
#include "window.h"

#define LG_ANA_RES (2 + LG_MON_GROUPS + LG_MON_DISKS)

struct lg_figures {
    uint64_t ok;
    uint64_t errors;
    double x; /* successful requests per second */
    double r_mean_s;
    double p50_s, p90_s, p99_s, p999_s, max_s;
    double body_Bps;
};

struct lg_point_analysis {
    struct lg_figures f[LG_REQ_TYPES + 1]; /* per type, [LG_REQ_ALL] = all */
    double little_n;   /* X * (R + Z) (open loop: X * R, the mean number in the system) */
    double little_rel; /* (X * (R + Z) - N) / N; closed loop only */
    double window_goal_s;                /* the window the rule asks for (window.h), from the
                                          * point's own R and X; INFINITY with no success */
    enum lg_window_rule window_rule;     /* how the window came out against it */
    struct lg_resource res[LG_ANA_RES];
    unsigned nres;
    int bottleneck; /* index in res, -1 when nothing was sampled */
    double dmax_s;
    int top_proc;       /* index in mon.procs of the watched group using the most CPU */
    bool lg_bottleneck; /* the load generator limits this point (see lg_analyze) */
    double outside_cores; /* busy cores outside the watched processes (attrib.h) */
    double outside_share; /* their share of the busy cores */
    bool not_stack;       /* the busiest resource is the CPU, mostly used outside (attrib.h) */
    struct lg_bounds bounds;
};

struct lg_run_analysis {
    struct lg_point_analysis *pts; /* one per run point */
    unsigned npts;
    bool closed_loop;
    double z_s;
    double d_s;           /* D used for bounds and N*_law */
    const char *d_source; /* "R(1)" or "min R" */
    int nstar;            /* index of N*, -1 when no point */
    int xmax;             /* index of the maximum throughput */
    double knee_law;      /* (D + Z) / D_max at xmax */
    struct lg_model_out model; /* closed loop only (model.ok false otherwise) */
};

/*
 * Computes everything. The load generator is flagged as the limit of a point when its own CPU
 * is the bottleneck, or when the machine's CPU is and loadgen uses more than half of the busy
 * CPU (more than every other process together).
 */
void lg_analyze(const struct lg_run *run, struct lg_run_analysis *a);
void lg_analysis_release(struct lg_run_analysis *a);
/* The figures of one request type (or LG_REQ_ALL) of a point. */
void lg_figures_of(const struct lg_stats *s, double window_s, struct lg_figures *f);

#endif /* LG_ANALYSIS_H */
