/*
 * laws.h - operational laws on a point's own measurements (pure functions):
 * Little's law N = X * (R + Z) as a check of the measurement itself; the utilization law
 * D_i = U_i / X for the service demand of each resource; the bottleneck (largest D_i); the
 * asymptotic bounds X <= min(N / (D + Z), 1 / D_max) and R >= max(D, N * D_max - Z); and the
 * predicted knee N*_pred = (D + Z) / D_max. Times in seconds, throughput in requests/s.
 * D is the total demand of one request with no queueing; loadgen uses R measured at N = 1.
 */
#ifndef LG_LAWS_H
#define LG_LAWS_H

#include <stdbool.h>
#include <stddef.h>

#define LG_RES_NAME 48

struct lg_resource {
    char name[LG_RES_NAME]; /* "cpu" (the machine), "cpu:server1", "disk:sda", "redis" */
    double util;            /* U, 0..1 of the resource's capacity */
    double demand_s;        /* D = U / X, seconds of the resource per request */
    bool is_loadgen;        /* the load generator's own CPU */
};

struct lg_bounds {
    double x_upper; /* requests/s; INFINITY when nothing bounds it */
    double r_lower_s;
};

/* X * (R + Z): the number of users Little's law says were in the loop. */
double lg_little_n(double x, double r_s, double z_s);
/* (X * (R + Z) - N) / N; a large magnitude means the measurement is wrong. 0 when N is 0. */
double lg_little_rel_diff(double n, double x, double r_s, double z_s);
/* U / X, 0 when X is 0. */
double lg_demand(double util, double x);
/* Fills every res[i].demand_s from its util and x. */
void lg_demands(struct lg_resource *res, size_t n, double x);
/* Index of the largest demand (the largest utilization when every demand is 0), -1 if n == 0. */
int lg_bottleneck(const struct lg_resource *res, size_t n);
void lg_bounds(double n, double d_s, double z_s, double dmax_s, struct lg_bounds *out);
/* (D + Z) / D_max; 0 when D_max is 0. */
double lg_knee(double d_s, double z_s, double dmax_s);

#endif /* LG_LAWS_H */
