/*
 * run.h - one invocation of loadgen: optionally create the --prepare-users accounts, then
 * measure one point per N (a single N, an explicit --sweep list, or --sweep auto), each with
 * its own workers and resource monitor, showing live progress on a terminal. SIGINT/SIGTERM
 * end the current point early and keep what was measured. With --start-at, each point waits
 * for its scheduled wall-clock start (lg_config_point_start_ms) after the accounts are made.
 * A point's window lasts --duration, and longer, up to --window-max, until it holds the
 * window rule (window.h): the run looks at the completions counted so far just before the end
 * and moves the end where the rule will hold.
 * DESIGN: runs in the main thread. SIGINT and SIGTERM must be blocked in every thread before
 * lg_run_execute() is called (main does it first thing); they are read here via a signalfd.
 */
#ifndef LG_RUN_H
#define LG_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "monitor.h"
#include "stats.h"
#include "tls.h"
#include "workload.h"

#define LG_HOST_LABEL_MAX 12 /* a host's name in a merged run's resource names */

/* Raw results of one point, merged over its workers. */
struct lg_point {
    unsigned users;
    unsigned threads;
    double window_s;                      /* the measured window (X = ok / window) */
    double window_max_s;                  /* its cap (--window-max); 0: the window was not sized */
    double window_start_ms;               /* the window in wall-clock epoch ms (0: unknown) */
    double window_end_ms;
    struct lg_stats st[LG_REQ_TYPES + 1]; /* per type, [LG_REQ_ALL] = all types */
    uint64_t unsent;                      /* open loop: arrivals never sent (backlog at end) */
    uint64_t abandoned;                   /* in flight at the end, not counted */
    bool interrupted;
    struct lg_tls_stats tls; /* https://: the handshakes of the window */
    struct lg_monitor_result mon;
};

/* One input of a merged run (loadgen merge): where its figures came from. */
struct lg_run_input {
    char dir[512];
    char run_id[LG_RUN_ID_LEN + 1];
    char hostname[256];
    char label[LG_HOST_LABEL_MAX + 1]; /* "" when every input ran on one host */
    char url[512];
    unsigned ncpu;
};

struct lg_run {
    const struct lg_config *cfg;
    char run_id[LG_RUN_ID_LEN + 1];
    time_t started;
    struct lg_point *points;
    unsigned npoints;
    bool interrupted;
    uint64_t prepared; /* accounts created by --prepare-users */
    double prepare_s;
    const struct lg_run_input *inputs; /* a merged run's inputs, else NULL */
    unsigned ninputs;
};

/*
 * Runs every point. Returns 0 when at least the run could proceed (points may be partial if
 * interrupted, see run->interrupted), -1 on a fatal error (already logged).
 */
int lg_run_execute(struct lg_run *run, const struct lg_config *cfg);
void lg_run_release(struct lg_run *run);

#endif /* LG_RUN_H */
