/*
 * laws.c - see laws.h.
 */
#include "laws.h"

#include <math.h>

double lg_little_n(double x, double r_s, double z_s)
{
    return x * (r_s + z_s);
}

double lg_little_rel_diff(double n, double x, double r_s, double z_s)
{
    if (n <= 0)
        return 0;
    return (lg_little_n(x, r_s, z_s) - n) / n;
}

double lg_demand(double util, double x)
{
    return x > 0 ? util / x : 0;
}

void lg_demands(struct lg_resource *res, size_t n, double x)
{
    for (size_t i = 0; i < n; i++)
        res[i].demand_s = lg_demand(res[i].util, x);
}

int lg_bottleneck(const struct lg_resource *res, size_t n)
{
    int best = -1;

    for (size_t i = 0; i < n; i++) {
        if (best < 0 || res[i].demand_s > res[best].demand_s ||
            (res[i].demand_s == res[best].demand_s && res[i].util > res[best].util))
            best = (int)i;
    }
    return best;
}

void lg_bounds(double n, double d_s, double z_s, double dmax_s, struct lg_bounds *out)
{
    double x1 = d_s + z_s > 0 ? n / (d_s + z_s) : INFINITY;
    double x2 = dmax_s > 0 ? 1.0 / dmax_s : INFINITY;
    double r2 = n * dmax_s - z_s;

    out->x_upper = x1 < x2 ? x1 : x2;
    out->r_lower_s = d_s > r2 ? d_s : r2;
}

double lg_knee(double d_s, double z_s, double dmax_s)
{
    return dmax_s > 0 ? (d_s + z_s) / dmax_s : 0;
}
