/*
 * model.h - the queueing model of a closed-loop sweep, solved by exact MVA (mva.h), and its
 * predictions checked against the measured points. Stations, from a point's own resources:
 *   - the machine's CPU: one multi-server centre, m = the machine's cores, demand = busy
 *     core-seconds per request (m U_cpu / X; every process, loadgen's included, and the kernel
 *     run on those cores; the per-process CPU figures are parts of it and are not added again);
 *     one request may keep c cores busy at once (loadgen reads a response while server1 writes
 *     it), c = D_cpu / R at the base point, within [1, m];
 *   - each disk and Redis's command time: a single-server queueing centre, D = U / X;
 *   - a delay centre: the think time Z plus the fixed latency that is service demand nowhere
 *     (loopback round trips, waits for a flush): R minus the model's residence at the base
 *     point, never negative.
 * The base point is N = 1 (the smallest N when the sweep has no N = 1). Two demand sets:
 * "n1", the base point's demands for every N (what one can know before the sweep), and "per-N",
 * each point's own demands D_i(N) = U_i(N) / X(N) (what explains the curve: batching lowers the
 * demand per request as N grows). The predicted knee applies the measured N*'s rule (sweep.h)
 * to the predicted X at the measured N. For planning (--predict-only), demands between and
 * beyond two short points are D(N) = a + b / N: a fixed part and a part shared by a batch.
 * Pure computation, no I/O.
 */
#ifndef LG_MODEL_H
#define LG_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "laws.h"
#include "mva.h"

#define LG_MODEL_MAX_QUEUES (LG_MVA_MAX_STATIONS - 2) /* disks + redis; more are left out */
#define LG_MODEL_WITHIN 0.10                         /* "the prediction is right": |error| <= 10% */
#define LG_MODEL_KNEE_WITHIN 0.25                    /* "the knee is right": within 25% of N* */
#define LG_MODEL_PREDICT_MAX 10000                   /* --predict-only: largest N */

/* One measured point as the model sees it. */
struct lg_model_obs {
    unsigned n;      /* users */
    double x;        /* throughput, requests/s */
    double r_s;      /* mean response time */
    double cpu_util; /* the machine's CPU, 0..1 of all cores; NAN: not sampled */
    unsigned nq;
    char qname[LG_MODEL_MAX_QUEUES][LG_RES_NAME]; /* "disk:vda", "redis" */
    double qutil[LG_MODEL_MAX_QUEUES];
};

struct lg_model_in {
    unsigned ncpu; /* the machine's online cores */
    double z_s;    /* think time */
    const struct lg_model_obs *pts;
    unsigned npts;
};

/* A prediction at one measured point; NAN when the point cannot be modelled. */
struct lg_model_pred {
    double x;
    double r_s;
    double err; /* X_pred / X_measured - 1 */
};

struct lg_model_out {
    bool ok;
    char why[96];   /* when !ok: why there is no model */
    int base;       /* index of the base point */
    double fixed_s; /* delay that is no station's demand */
    double per_job; /* c: cores one request keeps busy at once */
    unsigned ncpu;
    struct lg_model_pred *n1;   /* one per point: base demands */
    struct lg_model_pred *pern; /* one per point: its own demands */
    int knee_n1, knee_pern;     /* index of the predicted knee among the points, -1 if none */
    int nstar;                  /* the measured N*, index */
    unsigned npred;             /* points with a prediction */
    unsigned within_n1, within_pern; /* of those, |error| <= LG_MODEL_WITHIN */
};

/* Builds and solves the model of a sweep (closed loop). Fills *out; release it after. */
void lg_model_fit(const struct lg_model_in *in, struct lg_model_out *out);
void lg_model_release(struct lg_model_out *out);
/* |knee / nstar - 1| <= LG_MODEL_KNEE_WITHIN (false when either is missing). */
bool lg_model_knee_ok(unsigned knee, unsigned nstar);

/* A predicted curve for N = 1..nmax (planning a sweep from a short run). */
struct lg_model_curve {
    unsigned nmax;
    unsigned fit_n[2]; /* the two points D(N) = a + b / N goes through (equal: one point) */
    struct lg_mva_point *fit; /* nmax entries: fitted demands, R including the fixed delay */
    struct lg_mva_point *n1;  /* nmax entries: the base point's demands */
    unsigned knee_fit, knee_n1; /* 5% rule over 1..nmax */
};

/*
 * The curve from the base point and the second point (N = 4 when measured, else the next N
 * above the base). Returns 0, or -1 with *why set (no model, nmax out of range).
 */
int lg_model_predict(const struct lg_model_in *in, const struct lg_model_out *fit, unsigned nmax,
                     struct lg_model_curve *c, const char **why);
void lg_model_curve_release(struct lg_model_curve *c);

#endif /* LG_MODEL_H */
