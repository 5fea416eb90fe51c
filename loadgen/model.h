/*
 * model.h - the queueing model of a closed-loop sweep, solved by exact MVA (mva.h), and its
 * predictions checked against the measured points. Two networks:
 *
 * The layered model, when the run sampled the stack's worker threads (swstation.h): the
 * software stations are the upper layer, the machine's CPU the lower one (the method of layers,
 * Rolia and Sevcik 1995, with two layers). Upper layer, solved by exact MVA: each station p
 * (a pool of k threads: a k-server centre; a lone thread: a single server) with the time its
 * threads are busy per request, h_p = busy threads / X = run_p + b_p (running or waiting for a
 * core; blocked on a round trip, the disk, a lock, the group commit's window), and a delay
 * centre Z + the fixed latency (below). Each request's time is counted once: a station's h
 * includes the CPU its threads used and everything they waited for (the database behind
 * server2's workers, the disk behind server1's), so neither the CPU nor the disks nor Redis is
 * a station of this layer. Lower layer: the CPU, m cores shared by every thread; it stretches
 * run_p = r_p s(U): r_p = run_p / s(U) at the point it was measured, s(U) = 1 + C(m, mU) /
 * (m (1 - U)) the residence of an m-server queue per unit of demand (Erlang C). A thread waits
 * for a core behind every runnable thread, the stack's or not: U = X D_cpu / m + U_other, with
 * D_cpu the CPU of loadgen and the watched processes per request and U_other the rest of the
 * machine's CPU at the point (the kernel's softirq work, which no process is charged with:
 * the loopback copies of large responses; kworkers; other programs on a shared machine). U at
 * the point is the machine's measured utilisation; U_other is taken not to grow with X (other
 * work is no demand of the stack). The wait for a core follows the predicted X, not the
 * measured one: X is the fixed point of the upper layer's solution (found by bisection), for
 * both demand sets.
 * Overlap: at N = 1 the stations are often busier than the request's response time (a loop
 * finishing its turn after handing the request on, kernel work after a send): only a share
 * phi of h_p lies on the request's path. phi (<= 1) is the share that gives R back at the base
 * point (then the fixed latency is 0); the rest keeps the threads busy beside the request and
 * leaves them less capacity: the path is served at demand phi h_p / (1 - X (1 - phi) h_p / k),
 * which saturates the station at X = k / h_p whatever phi is.
 * A batch station (server1's committer, swstation.h) is a batch centre of MVA (mva.h): a
 * request waits for the cycle running, if any, then for its own, which takes every request
 * waiting; a cycle lasts b h_p, b the requests per cycle at the point. How many cycles ran is
 * not recorded; b comes from the station's CPU per request: a cycle's CPU (one flush, the
 * wake-ups) is taken not to depend on how many requests it holds, and at the base point each
 * cycle holds one, so b(N) = (CPU per request at the base point) / (CPU per request at N), at
 * least 1. Where the work per request dominates (large uploads) the CPU per request does not
 * fall, b stays near 1 and the station is the single-server queue it then is.
 * A flat product-form network of threads is an approximation: a pool is one k-server queue
 * although each thread serves its own connections, a request's visits to a station are merged
 * into one, and the batch centre's residence is an approximate MVA step.
 *
 * The hardware model, for runs without thread samples (and with --hardware-model). Stations,
 * from a point's own resources:
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
 * each point's own demands D_i(N) = U_i(N) / X(N) or busy / X (what explains the curve:
 * batching lowers the demand per request as N grows). The predicted knee applies the measured
 * N*'s rule (sweep.h) to the predicted X at the measured N. For planning (--predict-only), demands between and
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
#define LG_MODEL_MAX_SW 8                            /* software stations in the model */
#define LG_MODEL_CURVE_FULL 64 /* planning curve: every N up to here, then a few (see below) */
/* The layered model solves about 35 MVA networks per point (a fixed point), 800 at the base
 * point: it is solved for N up to this; larger points get no prediction. */
#define LG_MODEL_LAYERED_MAX_N 4096

/* A software station of one point (not nested: see swstation.h). */
struct lg_model_sw {
    char name[24];
    unsigned k;     /* threads */
    bool pinned;    /* a queue per thread (swstation.h), else one k-server queue */
    double run;     /* mean threads running or waiting for a core */
    double blocked; /* mean threads blocked other than waiting for work */
    bool batch;     /* a batch station (swstation.h): a lone thread serving in cycles */
    double cpu;     /* cores its threads used; 0 or NAN: unknown */
};

/* One measured point as the model sees it. */
struct lg_model_obs {
    unsigned n;      /* users */
    double x;        /* throughput, requests/s */
    double r_s;      /* mean response time */
    double cpu_util; /* the machine's CPU, 0..1 of all cores; NAN: not sampled */
    unsigned nq;
    char qname[LG_MODEL_MAX_QUEUES][LG_RES_NAME]; /* "disk:vda", "redis" */
    double qutil[LG_MODEL_MAX_QUEUES];
    double cpu_watched; /* cores used by loadgen and the watched processes; NAN: unknown */
    unsigned nsw;       /* 0: no thread samples */
    struct lg_model_sw sw[LG_MODEL_MAX_SW];
};

struct lg_model_in {
    unsigned ncpu; /* the machine's online cores */
    double z_s;    /* think time */
    const struct lg_model_obs *pts;
    unsigned npts;
    bool hardware_only; /* the hardware model even when there are software stations */
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
    bool layered;   /* the layered model (software stations), else the hardware model */
    int base;       /* index of the base point */
    double fixed_s; /* delay that is no station's demand */
    double per_job; /* c: cores one request keeps busy at once (hardware model) */
    double phi;     /* layered: the share of the stations' busy time on a request's path */
    unsigned ncpu;
    unsigned nsw;   /* layered: the stations, their threads (the most of any point) */
    struct lg_model_sw sw[LG_MODEL_MAX_SW]; /* run and blocked: at the base point */
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

/*
 * A predicted curve for N = 1..nmax (planning a sweep from a short run): every N up to
 * LG_MODEL_CURVE_FULL, beyond it only N = 2^j and 3 2^(j-1), nmax and the N the knee's search
 * visits (x NAN elsewhere). X(N) grows with N in these networks, so the curve's maximum is at
 * nmax and the knee (smallest N with X within 5% of it) is found by bisection.
 */
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
