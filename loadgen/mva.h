/*
 * mva.h - exact mean value analysis (MVA) of a closed, single-class, product-form queueing
 * network (Reiser and Lavenberg 1980; Lazowska et al. 1984, ch. 6 and 8; Bolch et al. 1998,
 * sec. 8.2.1): delay centres, single-server queueing centres, and multi-server centres with
 * m servers of which one request can keep c busy at once (service rate min(j c, m) / D with j
 * requests present; c = 1 is the classic m-server queue, c = m one server m times as fast).
 * Multi-server centres are solved exactly through their marginal queue-length probabilities;
 * the probability of an empty centre comes from the network without that centre,
 * p(0 | n) = p(0 | n - 1) X(n) / X_without(n), a product of ratios with no subtraction, so it
 * stays accurate as the centre's utilisation approaches 1.
 * A batch centre (a group commit: one server that takes every request waiting when it starts
 * a cycle and answers them together at its end) is not product form; it is solved
 * approximately inside the same recursion. With D its busy time per request and b the mean
 * requests per cycle, a cycle lasts C = b D. A request that finds a cycle running waits the
 * rest of it, then its own cycle; one that finds the server idle waits one cycle. By the
 * arrival theorem the server is busy with probability U(n - 1) = min(1, X(n - 1) D), and the
 * rest of a running cycle is taken as a whole cycle, as MVA takes the rest of a service: so
 * R(n) = C (1 + U(n - 1)). Requests queued beyond what the running cycle and the next one
 * take, Q(n - 1) - U(n - 1) b - (b - 1) when positive, each add D. With b = 1 (no batching)
 * this is the single-server queue, R = D (1 + Q(n - 1)); X never exceeds 1 / D.
 * Pure computation, no I/O.
 */
#ifndef LG_MVA_H
#define LG_MVA_H

#include <stddef.h>

#define LG_MVA_MAX_STATIONS 16
#define LG_MVA_MAX_MULTI 4 /* multi-server centres in one network (the cost doubles with each) */
#define LG_MVA_MAX_SERVERS 1024
#define LG_MVA_MAX_N 100000 /* population */

enum lg_mva_kind {
    LG_MVA_DELAY, /* no queueing: residence = D (think time, fixed latencies) */
    LG_MVA_QUEUE, /* one server */
    LG_MVA_MULTI, /* servers servers, per_job of them usable by one request */
    LG_MVA_BATCH, /* one server serving the requests waiting in cycles of batch of them */
};

struct lg_mva_station {
    enum lg_mva_kind kind;
    double demand_s; /* D: seconds of one server per request (visits x service time) */
    unsigned servers; /* m, LG_MVA_MULTI only */
    double per_job;   /* c, 1 <= c <= m, LG_MVA_MULTI only */
    double batch;     /* b >= 1: requests per cycle, LG_MVA_BATCH only */
};

/* The network's figures at one population. */
struct lg_mva_point {
    double x;   /* throughput, requests/s */
    double r_s; /* response time: the sum of the residences, think time excluded */
};

/*
 * Solves the network of nst stations with think time z_s for populations 1..n: curve[i] is
 * population i + 1 (n entries). q, when not NULL, receives the mean number of requests at each
 * station at population n (nst entries). Returns 0, or -1 when the input is invalid: a negative
 * or non-finite demand or think time, no demand and no think time at all, more than the
 * limits above, a multi-server centre with servers < 1 or per_job outside [1, servers], a
 * batch centre with batch < 1 or not finite.
 */
int lg_mva_solve(const struct lg_mva_station *st, size_t nst, double z_s, unsigned n,
                 struct lg_mva_point *curve, double *q);

#endif /* LG_MVA_H */
