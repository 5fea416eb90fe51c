/*
 * route_admin.h - the operator's routes: GET /healthz (200 once server2 answers a PING, else 503
 * + Retry-After) and GET /metrics (every thread's counters and the committer's, in the
 * Prometheus text format).
 *
 * DESIGN: on the conn's thread; /metrics reads the other threads' counters as metrics.h allows
 * (relaxed atomics), /healthz's PING is answered through the thread's server2 client.
 */
#ifndef S1_ROUTE_ADMIN_H
#define S1_ROUTE_ADMIN_H

#include "conn.h"

/* GET or HEAD /healthz. */
enum s1_dispatch route_admin_healthz(struct s1_conn *c);
/* GET or HEAD /metrics: answered at once. */
void route_admin_metrics(struct s1_conn *c);

#endif /* S1_ROUTE_ADMIN_H */
